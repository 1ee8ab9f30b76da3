//! The state one transport's sender, receiver and background tasks share: the HTTP client, the
//! session, the receive queue, the terminal error and the failure count.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use http::{HeaderMap, HeaderName, HeaderValue};
use plexus_jsonrpc::{Message, RequestId, Response};
use plexus_net::Credentials;
use plexus_net::http::{HttpClient, HttpSettings, Target};
use plexus_net::redact::redact_url;
use plexus_transport::{Received, TransportError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::EventStreamState;
use crate::config::{HttpConfig, ReconnectPolicy};
use crate::request::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID, RequestTemplates, USER_AGENT, header_pairs};
use crate::stream::PostStreams;
use plexus_transport::CloseReason;

/// What the body readers and the event stream put in the receive queue.
pub(crate) type Inbound = Result<Received, TransportError>;

/// The shared state of one transport.
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) url: Url,
    /// The URL for logs and errors, without credentials or query.
    pub(crate) description: String,
    /// The HTTP client (plexus-net's, with this server's proxy and TLS settings).
    pub(crate) client: HttpClient,
    /// The endpoint, checked once, and its origin's connections.
    pub(crate) target: Target,
    /// The configured headers and the auth provider.
    pub(crate) credentials: Credentials,
    /// The headers a request without an auth provider starts with, made once: the configured
    /// ones (without the names the transport writes itself) and the protocol's `Accept` and
    /// `Content-Type`, for a POST and for a GET.
    pub(crate) headers: RequestTemplates,
    pub(crate) request_timeout: std::time::Duration,
    pub(crate) max_message_size: usize,
    pub(crate) reconnect: ReconnectPolicy,
    session: Mutex<Session>,
    /// Set while an `initialize` response is awaited, so that other responses skip the lock.
    awaiting_initialize: AtomicBool,
    inbox: mpsc::Sender<Inbound>,
    terminal: Mutex<Option<TransportError>>,
    closed: AtomicBool,
    reader_waker: Mutex<Option<Waker>>,
    pub(crate) cancel: CancellationToken,
    /// Watched, so that `notifications/initialized` can wait for the stream to be open.
    event_stream: tokio::sync::watch::Sender<EventStreamState>,
    event_stream_started: AtomicBool,
    /// Whether the session-ending `DELETE` was sent (or is no longer needed).
    pub(crate) session_ended: AtomicBool,
    pub(crate) requests_in_flight: AtomicUsize,
    pub(crate) running_tasks: AtomicUsize,
    /// The response streams being read, so that a cancelled request's stream is dropped.
    pub(crate) post_streams: PostStreams,
}

/// The part of an `initialize` result the transport reads.
#[derive(serde::Deserialize)]
struct InitializeResult {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
}

#[derive(Debug, Default)]
struct Session {
    id: Option<String>,
    protocol_version: Option<String>,
    /// The two as header values, made once.
    headers: Vec<(HeaderName, HeaderValue)>,
    initialize_id: Option<RequestId>,
}

impl Session {
    fn update_headers(&mut self) {
        self.headers.clear();
        let mut push = |name: HeaderName, value: &Option<String>| {
            if let Some(value) = value.as_deref().and_then(|v| HeaderValue::try_from(v).ok()) {
                self.headers.push((name, value));
            }
        };
        push(MCP_SESSION_ID, &self.id);
        push(MCP_PROTOCOL_VERSION, &self.protocol_version);
    }
}

impl Inner {
    /// Checks the configuration and builds the client; no network yet.
    pub(crate) fn new(config: HttpConfig) -> Result<(Arc<Inner>, mpsc::Receiver<Inbound>), TransportError> {
        let url = Url::parse(&config.endpoint.url)
            .map_err(|e| plexus_net::connect_error(&config.endpoint.url, plexus_net::ConnectProblem::InvalidUrl(e)))?;
        // An http(s) URL always has a host: the parser refuses one without.
        plexus_net::require_scheme(
            &config.endpoint.url,
            url.scheme(),
            &["http", "https"],
            "Streamable HTTP",
        )?;
        let credentials = Credentials::new(config.endpoint.headers, config.endpoint.auth)
            .map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
        let headers = RequestTemplates::new(&header_pairs(credentials.configured()));
        let settings = HttpSettings::new(USER_AGENT)
            .connect_timeout(config.endpoint.connect_timeout)
            .max_connections(config.max_connections)
            .max_idle_connections(config.max_idle_connections)
            .idle_timeout(config.idle_timeout)
            .proxy(config.endpoint.proxy)
            .tls(config.endpoint.tls);
        let client = HttpClient::new(settings).map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
        let target = client
            .target(&url)
            .map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
        let cancel = CancellationToken::new();
        let (inbox, receiver) = mpsc::channel(config.receive_queue_capacity.max(1));
        let inner = Inner {
            name: config.endpoint.name,
            description: redact_url(url.as_str()),
            url,
            client,
            target,
            credentials,
            headers,
            request_timeout: config.request_timeout,
            max_message_size: config.endpoint.max_message_size,
            reconnect: config.reconnect,
            session: Mutex::new(Session::default()),
            awaiting_initialize: AtomicBool::new(false),
            inbox,
            terminal: Mutex::new(None),
            closed: AtomicBool::new(false),
            reader_waker: Mutex::new(None),
            cancel,
            event_stream: tokio::sync::watch::Sender::new(EventStreamState::NotStarted),
            event_stream_started: AtomicBool::new(false),
            session_ended: AtomicBool::new(false),
            requests_in_flight: AtomicUsize::new(0),
            running_tasks: AtomicUsize::new(0),
            post_streams: PostStreams::default(),
        };
        Ok((Arc::new(inner), receiver))
    }

    // ----- the session -----

    /// The session id, if the server gave one.
    pub(crate) fn session_id(&self) -> Option<String> {
        lock(&self.session).id.clone()
    }

    /// Whether the server gave a session id.
    pub(crate) fn has_session(&self) -> bool {
        lock(&self.session).id.is_some()
    }

    /// The negotiated protocol version, once the `initialize` response went by.
    pub(crate) fn protocol_version(&self) -> Option<String> {
        lock(&self.session).protocol_version.clone()
    }

    /// Adds the `Mcp-Session-Id` and `MCP-Protocol-Version` headers the session has; true when
    /// there is a session id.
    pub(crate) fn add_session_headers(&self, headers: &mut HeaderMap) -> bool {
        let session = lock(&self.session);
        for (name, value) in &session.headers {
            headers.insert(name, value.clone());
        }
        session.id.is_some()
    }

    /// Notes that `id` is an `initialize` request: its response's `protocolVersion` will be read.
    pub(crate) fn expect_initialize(&self, id: &RequestId) {
        lock(&self.session).initialize_id = Some(id.clone());
        self.awaiting_initialize.store(true, Ordering::Release);
    }

    /// Keeps the session id from the `initialize` response (replacing any earlier one).
    pub(crate) fn set_session_id(&self, id: Option<String>) {
        let mut session = lock(&self.session);
        session.id = id;
        session.update_headers();
    }

    /// Looks at a response on its way to the session: the `initialize` response carries the
    /// negotiated protocol version, which every later request sends as `MCP-Protocol-Version`.
    pub(crate) fn observe(&self, response: &Response) {
        if !self.awaiting_initialize.load(Ordering::Acquire) {
            return;
        }
        let mut session = lock(&self.session);
        if response.id.is_none() || response.id != session.initialize_id {
            return;
        }
        session.initialize_id = None;
        self.awaiting_initialize.store(false, Ordering::Release);
        let Ok(result) = &response.outcome else { return };
        match serde_json::from_str::<InitializeResult>(result.get()) {
            Ok(parsed) => match plexus_net::headers::check_header("MCP-Protocol-Version", &parsed.protocol_version) {
                Ok(()) => {
                    session.protocol_version = Some(parsed.protocol_version);
                    session.update_headers();
                }
                Err(_) => tracing::warn!(
                    server = %self.name,
                    "the server's protocolVersion {:?} cannot be sent as a header; it is not sent",
                    parsed.protocol_version
                ),
            },
            Err(e) => tracing::warn!(server = %self.name, "the initialize result has no usable protocolVersion: {e}"),
        }
    }

    // ----- the receive queue -----

    /// Puts a message (or a non-terminal error) in the receive queue, waiting for room. False when
    /// the reader is gone.
    pub(crate) async fn deliver(&self, item: Inbound) -> bool {
        if let Ok(Received {
            message: Message::Response(response),
            ..
        }) = &item
        {
            self.observe(response);
        }
        self.inbox.send(item).await.is_ok()
    }

    /// Fails request `id` through the receiver with [`TransportError::ResponseLost`], so that its
    /// caller does not wait for a response that will never come (a response stream that cannot
    /// be resumed).
    pub(crate) async fn fail_request(&self, id: &RequestId, why: &str) -> bool {
        tracing::debug!(server = %self.name, "request {id}: {why}");
        let lost = TransportError::ResponseLost {
            id: id.clone(),
            reason: why.to_owned(),
        };
        self.deliver(Err(lost)).await
    }

    // ----- the end -----

    /// Ends the transport with `error` (the first end wins): background work stops and the
    /// reader gets the error at once. True when this call ended it.
    pub(crate) fn close_with(&self, error: TransportError) -> bool {
        {
            let mut terminal = lock(&self.terminal);
            if terminal.is_some() {
                return false;
            }
            tracing::debug!(server = %self.name, "the transport closes: {error}");
            if matches!(error, TransportError::SessionExpired { .. }) {
                // The server forgot the session: there is nothing to DELETE.
                self.session_ended.store(true, Ordering::SeqCst);
            }
            *terminal = Some(error);
            self.closed.store(true, Ordering::SeqCst);
        }
        self.cancel.cancel();
        if let Some(waker) = lock(&self.reader_waker).take() {
            waker.wake();
        }
        true
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The error that ended the transport, if it has ended.
    pub(crate) fn terminal(&self) -> Option<TransportError> {
        if !self.is_closed() {
            return None;
        }
        lock(&self.terminal).clone()
    }

    /// Fails with the terminal error when the transport has ended.
    pub(crate) fn check_open(&self) -> Result<(), TransportError> {
        match self.terminal() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Registers the reader to be woken when the transport ends; true if it already has.
    pub(crate) fn register_reader(&self, waker: &Waker) -> bool {
        {
            let mut slot = lock(&self.reader_waker);
            if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                *slot = Some(waker.clone());
            }
        }
        self.is_closed()
    }

    // ----- background tasks -----

    /// Runs `task` in the background until it ends or the transport closes.
    pub(crate) fn spawn(self: &Arc<Self>, task: impl Future<Output = ()> + Send + 'static) {
        let guard = Counted::new(self, |inner| &inner.running_tasks);
        let cancel = self.cancel.clone();
        tokio::spawn(async move {
            let _guard = guard;
            cancel.run_until_cancelled(task).await;
        });
    }

    /// Marks the standalone event stream as started; true the first time.
    pub(crate) fn claim_event_stream(&self) -> bool {
        !self.event_stream_started.swap(true, Ordering::SeqCst)
    }

    pub(crate) fn set_event_stream(&self, state: EventStreamState) {
        self.event_stream.send_replace(state);
    }

    pub(crate) fn event_stream(&self) -> EventStreamState {
        self.event_stream.borrow().clone()
    }

    /// Waits until the first attempt to open the event stream has an answer (open, none, or
    /// failed), or until `deadline`.
    pub(crate) async fn event_stream_answered(&self, deadline: tokio::time::Instant) {
        let mut states = self.event_stream.subscribe();
        let answered = states.wait_for(|s| !matches!(s, EventStreamState::NotStarted | EventStreamState::Connecting));
        let _ = tokio::time::timeout_at(deadline, answered).await;
    }
}

/// Counts something while it lives (a request in flight, a running task).
pub(crate) struct Counted {
    inner: Arc<Inner>,
    counter: fn(&Inner) -> &AtomicUsize,
}

impl Counted {
    pub(crate) fn new(inner: &Arc<Inner>, counter: fn(&Inner) -> &AtomicUsize) -> Self {
        counter(inner).fetch_add(1, Ordering::Relaxed);
        Counted {
            inner: Arc::clone(inner),
            counter,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        (self.counter)(&self.inner).fetch_sub(1, Ordering::Relaxed);
    }
}

/// Locks a mutex whose data stays consistent between statements, so a poisoned lock is usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reason of the `Closed` error after an explicit close.
pub(crate) fn closed_by_client() -> TransportError {
    TransportError::closed(CloseReason::ByClient)
}
