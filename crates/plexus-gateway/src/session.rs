//! One client of the gateway, whatever carries it, and the lines that go to clients.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use plexus::jsonrpc::{ErrorCode, ErrorObject, Message, RawValue, RequestId, Response};
use plexus::protocol::{ClientCapabilities, LoggingLevel};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Where messages to a client go: one JSON-RPC message per item, without a line end.
pub(crate) type Sink = mpsc::Sender<Vec<u8>>;

/// How many messages may wait for a slow client before the sender waits.
pub(crate) const SINK_CAPACITY: usize = 256;

/// Locks `mutex`, poisoned or not (no lock is held across a panic that leaves a value broken).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A client's answer to a request the gateway sent it.
pub(super) type Answer = Result<Box<RawValue>, ErrorObject>;

/// One client of the gateway.
pub(crate) struct Session {
    /// Its stream for what no request carries (list changes, logs): stdout for stdio, the GET
    /// stream over HTTP (none while it is not open).
    pub(super) out: Mutex<Option<Sink>>,
    /// What it declared in `initialize`.
    pub(super) capabilities: Mutex<Option<ClientCapabilities>>,
    /// The lowest log level it wants (`logging/setLevel`).
    pub(super) log_level: Mutex<Option<LoggingLevel>>,
    /// Its requests being answered, to abort on `notifications/cancelled`.
    pub(super) in_flight: Mutex<HashMap<RequestId, tokio::task::AbortHandle>>,
    /// Requests sent to it for a backend, waiting for its response.
    pub(super) asked: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    /// The progress tokens of those requests, as the client knows them (one per request, made
    /// by the gateway), with the backend and the token it chose.
    pub(super) progress: Mutex<HashMap<String, (String, Value)>>,
    /// The number of the next request sent to it.
    pub(super) next_id: AtomicU64,
    /// Whether it has initialized (said `notifications/initialized`, or asked for more than
    /// `initialize` and `ping`): until then it is sent no notification.
    initialized: AtomicBool,
    /// The backends it was told are down, with the number of that failure.
    pub(super) told_down: Mutex<HashMap<String, u64>>,
}

impl Session {
    /// A session whose own stream is `out`.
    pub(crate) fn new(out: Option<Sink>) -> Arc<Session> {
        Arc::new(Session {
            out: Mutex::new(out),
            capabilities: Mutex::new(None),
            log_level: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            progress: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            initialized: AtomicBool::new(false),
            told_down: Mutex::new(HashMap::new()),
        })
    }

    /// Whether it has initialized.
    pub(super) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// Notes that it has initialized; whether it had not before.
    pub(super) fn set_initialized(&self) -> bool {
        !self.initialized.swap(true, Ordering::AcqRel)
    }

    /// Opens (or replaces) the session's own stream.
    pub(crate) fn set_out(&self, out: Option<Sink>) {
        *lock(&self.out) = out;
    }

    /// Sends on the session's own stream, if open and the client has initialized; a full
    /// stream drops the message (list changes and logs are advisory).
    pub(super) fn notify(&self, line: Vec<u8>) {
        if !self.is_initialized() {
            return;
        }
        if let Some(sink) = lock(&self.out).as_ref() {
            let _ = sink.try_send(line);
        }
    }

    /// Whether nothing of the session is live: no request being answered, no request waiting
    /// for its client, and no open stream of its own.
    pub(crate) fn is_unused(&self) -> bool {
        lock(&self.in_flight).is_empty()
            && lock(&self.asked).is_empty()
            && lock(&self.out).as_ref().is_none_or(Sink::is_closed)
    }

    /// Whether none of its requests is being answered.
    pub(super) fn is_idle(&self) -> bool {
        lock(&self.in_flight).is_empty()
    }

    /// The client can answer no more requests (its input ended): those waiting fail at once.
    pub(super) fn asked_no_more(&self) {
        lock(&self.asked).clear();
    }

    /// Aborts whatever is still running for the session.
    pub(crate) fn close(&self) {
        for (_, task) in lock(&self.in_flight).drain() {
            task.abort();
        }
        lock(&self.asked).clear();
        lock(&self.progress).clear();
        lock(&self.out).take();
    }
}

/// A notification line.
pub(super) fn notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut line = Vec::with_capacity(64);
    let _ = plexus::jsonrpc::encode_notification(&mut line, method, params);
    trim(line)
}

/// `line` without its line end.
pub(super) fn trim(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    line
}

/// An error response line.
pub(super) fn error_response(id: RequestId, error: ErrorObject) -> Vec<u8> {
    let mut line = Vec::with_capacity(128);
    Message::Response(Response::error(Some(id), error)).encode_line(&mut line);
    trim(line)
}

/// The response line of a request's `result`, encoded straight from it (no value tree or raw
/// copy in between: a tool's result is encoded once, as it goes out).
pub(super) fn success_response<R: Serialize + ?Sized>(id: &RequestId, result: &R) -> Result<Vec<u8>, ErrorObject> {
    let mut line = Vec::with_capacity(256);
    plexus::jsonrpc::encode_response(&mut line, id, result)
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot encode the result: {e}")))?;
    Ok(trim(line))
}
