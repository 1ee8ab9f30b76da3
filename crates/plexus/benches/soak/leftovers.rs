//! Whether the server still runs calls that the client gave up on, seen from outside: the test
//! server runs at most [`SERVER_LIMIT`] requests at once and refuses the next with an error at
//! once. [`SERVER_LIMIT`] + 1 `slow` calls sent together are all held but one when nothing else
//! runs on the server; each call the client timed out or cancelled without the server stopping
//! it (a `notifications/cancelled` lost or ignored) would still be running there (a `slow` call
//! lasts 10 minutes) and make one more of them refused.
//!
//! The probe runs before the phase of timed-out calls (a calibration: exactly one refused,
//! which shows the limit is what this module says and that the probe can see a refusal) and
//! after it (exactly one refused again: none of the timed-out calls is left on the server). The
//! probe's own calls time out and are cancelled like the phase's, so the second probe checks
//! the first one's too.

use std::sync::Arc;
use std::time::Duration;

use plexus::Hub;
use plexus::tools::CallOptions;
use plexus::transport::error_chain;

use crate::calls::{SLOW, SLOW_TOOL};

/// The most requests the test server runs at once (its `MAX_IN_FLIGHT`).
pub(crate) const SERVER_LIMIT: usize = 4096;
/// How long each probe call waits: generously longer than the server takes to read the
/// probe's requests and refuse the one it has no room for.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What one probe saw.
#[derive(Debug)]
pub(crate) struct Probe {
    /// Calls the server held until they timed out.
    pub(crate) held: usize,
    /// Calls the server refused (no room).
    pub(crate) refused: usize,
}

/// Sends [`SERVER_LIMIT`] + 1 `slow` calls at once, each with a [`PROBE_TIMEOUT`], and counts
/// how they ended; an ending other than a timeout or the server's error is an error.
pub(crate) async fn probe(hub: &Arc<Hub>) -> Result<Probe, String> {
    let calls: Vec<_> = (0..=SERVER_LIMIT)
        .map(|_| {
            let hub = Arc::clone(hub);
            tokio::spawn(async move {
                let options = CallOptions {
                    timeout: Some(PROBE_TIMEOUT),
                    ..CallOptions::default()
                };
                hub.call_with(SLOW_TOOL, &SLOW, &options).await
            })
        })
        .collect();
    let mut seen = Probe { held: 0, refused: 0 };
    for call in calls {
        match call.await.map_err(|e| format!("a probe call panicked: {e}"))? {
            Err(error) if error.is_timeout() => seen.held += 1,
            Err(error) if error.rpc_error().is_some() => seen.refused += 1,
            Err(error) => return Err(format!("a probe call failed: {}", error_chain(&error))),
            Ok(result) => return Err(format!("a probe call of `slow` returned early: {result:?}")),
        }
    }
    Ok(seen)
}
