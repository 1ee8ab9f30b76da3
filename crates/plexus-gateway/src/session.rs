//! One client of the gateway, whatever carries it, and the lines that go to clients.
//!
//! A client of the `initialize` era has one session for its whole life (a stdio connection, an
//! HTTP session). In the stateless era a session is what one request needs: the stdio
//! connection's (which never gets a notification of its own), a request's that may ask its
//! client for input ([`Asker`]), or a `subscriptions/listen`'s ([`Listen`]), which alone hears
//! of changes.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use plexus::jsonrpc::{ErrorCode, ErrorObject, Message, RawValue, RequestId, Response};
use plexus::protocol::envelope::set_subscription_id;
use plexus::protocol::{ClientCapabilities, Era, JsonObject, LoggingLevel, SubscriptionFilter, methods};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::rounds::Asker;

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
    /// The era it speaks: [`UNDECIDED`], [`INITIALIZE`] or [`STATELESS`] (a stdio connection's
    /// first requests decide; see [`crate::era`]).
    era: AtomicU8,
    /// A stateless request's: where its backends' questions go (its rounds).
    asker: Option<Asker>,
    /// A `subscriptions/listen`'s: the subscription and what it was granted.
    pub(super) listen: Option<Listen>,
    /// The ids of its requests that are listens: never answered unless the gateway ends them,
    /// they end when its input does.
    listens: Mutex<Vec<RequestId>>,
    /// Its transport, id, version and clock, for telemetry.
    #[cfg(feature = "otel")]
    pub(crate) telemetry: crate::telemetry::SessionTelemetry,
}

#[cfg(feature = "otel")]
impl Drop for Session {
    fn drop(&mut self) {
        self.telemetry.ended(self.era());
    }
}

/// [`Session::era`] not decided yet.
const UNDECIDED: u8 = 0;
/// [`Session::era`]: the `initialize` era.
const INITIALIZE: u8 = 1;
/// [`Session::era`]: the stateless era.
const STATELESS: u8 = 2;

/// A live `subscriptions/listen`: its id (which every notification it carries names) and the
/// notifications the gateway granted it.
pub(crate) struct Listen {
    /// The listen request's id.
    pub(super) id: RequestId,
    /// What the gateway sends it.
    pub(super) granted: SubscriptionFilter,
}

impl Listen {
    /// Whether it asked for `method` (a list change; resource updates reach only the listens
    /// subscribed to the resource).
    fn wants(&self, method: &str) -> bool {
        let asked = match method {
            methods::TOOLS_LIST_CHANGED => self.granted.tools_list_changed,
            methods::PROMPTS_LIST_CHANGED => self.granted.prompts_list_changed,
            methods::RESOURCES_LIST_CHANGED => self.granted.resources_list_changed,
            methods::RESOURCES_UPDATED => Some(true),
            _ => None,
        };
        asked == Some(true)
    }

    /// The notification `method` with `params` on this subscription: its `_meta` names it.
    pub(super) fn line(&self, method: &str, params: Option<&Value>) -> Vec<u8> {
        let mut object = match params {
            Some(Value::Object(object)) => object.clone(),
            _ => JsonObject::new(),
        };
        let mut meta = JsonObject::new();
        // A request id always encodes.
        let _ = set_subscription_id(&mut meta, &self.id);
        object.insert("_meta".to_owned(), Value::Object(meta));
        notification(method, Some(&Value::Object(object)))
    }
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
            era: AtomicU8::new(UNDECIDED),
            asker: None,
            listen: None,
            listens: Mutex::new(Vec::new()),
            #[cfg(feature = "otel")]
            telemetry: crate::telemetry::SessionTelemetry::new(),
        })
    }

    /// A session of the `initialize` era from the start (an HTTP session opened by `initialize`).
    pub(crate) fn initialize_era(out: Option<Sink>) -> Arc<Session> {
        let session = Session::new(out);
        session.set_era(Era::Initialize);
        session
    }

    /// The session of one stateless HTTP request, which nothing but that request uses.
    pub(crate) fn stateless_request() -> Arc<Session> {
        let session = Session::new(None);
        session.set_era(Era::Stateless);
        session
    }

    /// The session of a stateless request whose backend may ask its client for input: its
    /// questions go to `asker`, and the client declared `capabilities` (in the request's
    /// envelope, and anew in each retry's).
    pub(super) fn asking(capabilities: ClientCapabilities, asker: Asker) -> Arc<Session> {
        let mut session = Session::new(None);
        let inner = Arc::get_mut(&mut session).expect("a new session has one owner");
        inner.asker = Some(asker);
        *lock(&inner.capabilities) = Some(capabilities);
        session.set_era(Era::Stateless);
        session
    }

    /// The session of `subscriptions/listen` `listen`, whose notifications go to `out` (the
    /// listen request's stream) once it is [initialized](Self::set_initialized).
    pub(super) fn listening(out: Sink, listen: Listen) -> Arc<Session> {
        let mut session = Session::new(Some(out));
        let inner = Arc::get_mut(&mut session).expect("a new session has one owner");
        inner.listen = Some(listen);
        session.set_era(Era::Stateless);
        session
    }

    /// The era it speaks, once decided.
    pub(crate) fn era(&self) -> Option<Era> {
        match self.era.load(Ordering::Acquire) {
            INITIALIZE => Some(Era::Initialize),
            STATELESS => Some(Era::Stateless),
            _ => None,
        }
    }

    /// Decides the era it speaks (a stdio connection's first requests do).
    pub(crate) fn set_era(&self, era: Era) {
        let value = match era {
            Era::Initialize => INITIALIZE,
            Era::Stateless => STATELESS,
        };
        self.era.store(value, Ordering::Release);
    }

    /// Whether it speaks the stateless era: the gateway sends it no request (a backend's
    /// questions reach a stateless request's client in its result, see [`crate::rounds`]).
    pub(super) fn is_stateless(&self) -> bool {
        self.era() == Some(Era::Stateless)
    }

    /// A stateless request's way to ask its client for input.
    pub(super) fn asker(&self) -> Option<&Asker> {
        self.asker.as_ref()
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

    /// Sends the change notification `method` (whose line for the clients of the `initialize`
    /// era is `line`, its params `params`): as it is to such a client, tagged with the
    /// subscription to a listen that asked for it, and to no other client of the stateless era.
    pub(super) fn notify_change(&self, method: &str, params: Option<&Value>, line: &[u8]) {
        match &self.listen {
            Some(listen) if listen.wants(method) => self.notify(listen.line(method, params)),
            Some(_) => {}
            None => self.notify(line.to_vec()),
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

    /// Notes that its request `id` is a listen, until the guard is dropped.
    pub(super) fn listening_on(&self, id: &RequestId) -> OpenListen<'_> {
        lock(&self.listens).push(id.clone());
        OpenListen {
            session: self,
            id: id.clone(),
        }
    }

    /// Ends its listens (its input ended: it hears nothing any more).
    pub(super) fn end_listens(&self) {
        let ended = std::mem::take(&mut *lock(&self.listens));
        let mut in_flight = lock(&self.in_flight);
        for id in ended {
            if let Some(task) = in_flight.remove(&id) {
                task.abort();
            }
        }
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

/// A request of a session that is a listen, while it is (see [`Session::listening_on`]).
pub(super) struct OpenListen<'a> {
    session: &'a Session,
    id: RequestId,
}

impl Drop for OpenListen<'_> {
    fn drop(&mut self) {
        lock(&self.session.listens).retain(|id| *id != self.id);
    }
}

/// 128 random bits in hex: an id nobody can guess (HTTP session ids, request states); `None`
/// when the system has no randomness to give.
pub(crate) fn random_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().fold(String::with_capacity(32), |mut id, byte| {
        let _ = write!(id, "{byte:02x}");
        id
    }))
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
