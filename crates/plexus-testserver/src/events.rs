//! The event log: one JSON line per observed event, appended and flushed as it happens, so that a
//! test can see what the server saw (notifications, signals, exits) without a protocol of its own.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

/// Where events go; a disabled log costs one branch per event.
#[derive(Debug)]
pub(crate) struct EventLog {
    file: Option<Mutex<File>>,
    started: Instant,
    /// A failed write is reported on stderr once, not for every event.
    write_failed: AtomicBool,
}

impl EventLog {
    /// A log that records nothing.
    pub(crate) fn disabled() -> Self {
        EventLog {
            file: None,
            started: Instant::now(),
            write_failed: AtomicBool::new(false),
        }
    }

    /// Opens `path` for appending (creating it), or a disabled log for `None`.
    pub(crate) fn open(path: Option<&Path>) -> io::Result<Self> {
        let mut log = Self::disabled();
        if let Some(path) = path {
            log.file = Some(Mutex::new(OpenOptions::new().create(true).append(true).open(path)?));
        }
        Ok(log)
    }

    /// Whether events are recorded (callers skip building an event's value when not).
    pub(crate) fn enabled(&self) -> bool {
        self.file.is_some()
    }

    /// Milliseconds since the log was created (the server's start), on the monotonic clock.
    pub(crate) fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Appends `event` as one line, written with a single call so that lines never interleave.
    pub(crate) fn record(&self, event: &Value) {
        let Some(file) = &self.file else { return };
        let mut line = event.to_string().into_bytes();
        line.push(b'\n');
        let mut file = file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = file.write_all(&line).and_then(|()| file.flush()) {
            if !self.write_failed.swap(true, Ordering::Relaxed) {
                eprintln!("plexus-testserver: cannot write to the event log: {e}");
            }
        }
    }

    /// Records `{"event":"exit","code":code}`.
    pub(crate) fn exit(&self, code: i32) {
        self.record(&json!({"event": "exit", "code": code}));
    }
}

/// A test's event log file (`--event-log`): a fresh path in the temporary directory, removed
/// when dropped, and the events read back from it.
#[derive(Debug)]
pub struct EventLogFile(std::path::PathBuf);

impl EventLogFile {
    /// A fresh log for the test `tag` (unique within this process).
    pub fn new(tag: &str) -> EventLogFile {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("plexus-events-{}-{n}-{tag}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        EventLogFile(path)
    }

    /// `--event-log=PATH`, for the server's arguments.
    pub fn arg(&self) -> String {
        format!("--event-log={}", self.0.display())
    }

    /// The events logged so far that have every field of `fields` (a JSON object) with that
    /// value.
    pub fn matching(&self, fields: &Value) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.0).unwrap_or_default();
        let wanted = fields.as_object().cloned().unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|event| wanted.iter().all(|(k, v)| &event[k] == v))
            .collect()
    }
}

impl Drop for EventLogFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
