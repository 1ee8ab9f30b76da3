//! What every mode does as a process: the event log, the start-up faults and test aids
//! ([`ProcessOptions`]), and SIGINT/SIGTERM.

use std::io;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::ProcessOptions;
use crate::events::EventLog;
use crate::faults;

/// The exit status for a start-up failure (bad event log path, grandchild not spawned, port taken, …).
pub(crate) const SETUP_FAILURE: u8 = 2;

/// Builds the runtime a mode runs on, or says why not on stderr.
pub(crate) fn runtime(multi_threaded: bool) -> Result<tokio::runtime::Runtime, ExitCode> {
    let mut builder = if multi_threaded {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder.enable_all().build().map_err(|e| {
        eprintln!("plexus-testserver: cannot start the async runtime: {e}");
        ExitCode::from(SETUP_FAILURE)
    })
}

/// Opens the event log (recording `start`), then applies the start-up options in order:
/// `--exit-at-start`, the signal handlers, `--spawn-grandchild`, `--flood-stderr`. Must be called
/// within the runtime. On failure the reason is on stderr, `exit` is logged, and the exit code is
/// returned.
pub(crate) fn start(process: &ProcessOptions) -> Result<(Arc<EventLog>, Signals), ExitCode> {
    let events = match EventLog::open(process.event_log.as_deref()) {
        Ok(events) => Arc::new(events),
        Err(e) => {
            let path = process
                .event_log
                .as_deref()
                .unwrap_or_else(|| std::path::Path::new(""))
                .display();
            eprintln!("plexus-testserver: cannot open the event log {path}: {e}");
            return Err(ExitCode::from(SETUP_FAILURE));
        }
    };
    events.record(&json!({"event": "start", "pid": std::process::id()}));
    let setup = || {
        if let Some(code) = process.exit_at_start {
            eprintln!("plexus-testserver: exiting with status {code} at start as asked (--exit-at-start)");
            return Err(code);
        }
        let signals = Signals::install()
            .map_err(|e| setup_failure(&format!("cannot install the SIGINT and SIGTERM handlers: {e}")))?;
        if let Some(pidfile) = &process.spawn_grandchild {
            faults::spawn_grandchild(pidfile, false)
                .map_err(|e| setup_failure(&format!("cannot spawn the grandchild: {e}")))?;
        }
        if let Some(pidfile) = &process.spawn_escapee {
            faults::spawn_grandchild(pidfile, true)
                .map_err(|e| setup_failure(&format!("cannot spawn the escaping grandchild: {e}")))?;
        }
        if let Some(bytes) = process.flood_stderr {
            faults::flood_stderr(bytes).map_err(|e| setup_failure(&format!("cannot start the stderr flood: {e}")))?;
        }
        Ok(signals)
    };
    match setup() {
        Ok(signals) => Ok((events, signals)),
        Err(code) => {
            events.exit(code.into());
            Err(ExitCode::from(code))
        }
    }
}

/// Says `reason` on stderr and returns [`SETUP_FAILURE`].
pub(crate) fn setup_failure(reason: &str) -> u8 {
    eprintln!("plexus-testserver: {reason}");
    SETUP_FAILURE
}

/// SIGINT and SIGTERM, caught (so never fatal by themselves).
pub(crate) struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn install() -> io::Result<Self> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// The name of the next signal.
    pub(crate) async fn recv(&mut self) -> &'static str {
        let received = tokio::select! {
            received = self.interrupt.recv() => received.map(|()| "SIGINT"),
            received = self.terminate.recv() => received.map(|()| "SIGTERM"),
        };
        match received {
            Some(name) => name,
            // The runtime's signal driver is gone: no signal will come.
            None => std::future::pending().await,
        }
    }

    /// Waits for a signal that ends the process: every signal is logged, and with `ignore` none
    /// ends it.
    #[cfg(feature = "remote")]
    pub(crate) async fn until_fatal(&mut self, events: &EventLog, ignore: bool) {
        loop {
            let name = self.recv().await;
            events.record(&json!({"event": "signal", "signal": name, "ms": events.elapsed_ms()}));
            if !ignore {
                return;
            }
        }
    }
}
