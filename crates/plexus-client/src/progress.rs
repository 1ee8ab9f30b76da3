//! Progress of one request: the caller's sink and the time of the last report (for
//! reset-on-progress timeouts).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use plexus_protocol::ProgressNotificationParams;
use tokio::sync::mpsc;

use crate::session::lock;

/// Receives the progress notifications of one request, in the session's reader (keep it quick).
pub type ProgressCallback = Arc<dyn Fn(ProgressNotificationParams) + Send + Sync>;

/// A bounded channel of progress reports and the callback that feeds it; reports that find the
/// channel full are dropped (progress is advisory; the latest report supersedes older ones).
///
/// ```
/// let (callback, mut reports) = plexus_client::progress_channel(16);
/// # let _ = (callback, &mut reports);
/// ```
pub fn progress_channel(capacity: usize) -> (ProgressCallback, mpsc::Receiver<ProgressNotificationParams>) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let callback: ProgressCallback = Arc::new(move |params| {
        let _ = tx.try_send(params);
    });
    (callback, rx)
}

pub(crate) struct ProgressState {
    callback: Option<ProgressCallback>,
    /// When the last report came, its progress and its total.
    last: Mutex<Option<(Instant, f64, Option<f64>)>>,
}

impl ProgressState {
    pub(crate) fn new(callback: Option<ProgressCallback>) -> Self {
        ProgressState {
            callback,
            last: Mutex::new(None),
        }
    }

    pub(crate) fn record(&self, params: ProgressNotificationParams, at: Instant) {
        *lock(&self.last) = Some((at, params.progress, params.total));
        if let Some(callback) = &self.callback {
            callback(params);
        }
    }

    pub(crate) fn last(&self) -> Option<Instant> {
        lock(&self.last).map(|(at, _, _)| at)
    }

    /// The progress and the total of the last report.
    pub(crate) fn last_progress(&self) -> Option<(f64, Option<f64>)> {
        lock(&self.last).map(|(_, progress, total)| (progress, total))
    }
}
