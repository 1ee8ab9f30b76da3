//! Streamable HTTP (2025-11-25): which era a POST speaks (a stateless one goes to [`modern`]),
//! sessions, POSTed messages answered by an SSE stream or one JSON
//! body, the standalone GET stream, resumption by `Last-Event-ID`, DELETE, and the session and
//! stream faults.
//!
//! Routing: the response to a request, and the messages its handling or its task emits (progress,
//! log messages, requests to the client), go on that request's stream (with `--json-response`: the
//! response is the body and the rest goes to the GET stream); session notifications
//! (`list_changed`, `resources/updated`) go to the GET stream, where they wait (bounded) until a
//! GET reads them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Request, Response, StatusCode};
use plexus_jsonrpc::{ErrorCode, ErrorObject, FrameError, Message, RequestId};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::connection::Connection;
use super::http::{
    self, Body, EVENT_STREAM, JSON, LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, Refusal, accepts, header_text,
};
use super::modern::{self, Stateless};
use super::stream::{EventStream, ResumeError, parse_event_id};
use super::{App, HttpOptions, MAX_SESSIONS, WeakApp, new_session_id};
use crate::era::EraSupport;
use crate::faults::oversize_line;
use crate::oauth::Authorized;
use crate::server::{Emitted, OUTBOX_CAPACITY, Output, SUPPORTED_PROTOCOL_VERSIONS, Session, frame_error_line, lock};

/// The most POST streams a session keeps (open, or finished and kept for replay).
const MAX_STREAMS_PER_SESSION: usize = 1024;

/// The Streamable HTTP switches of [`HttpOptions`].
#[allow(clippy::struct_excessive_bools)] // one flag per command-line switch.
struct Config {
    json_response: bool,
    no_get_stream: bool,
    no_delete: bool,
    no_resume: bool,
    sse_retry_ms: Option<u64>,
    drop_sse_after: Option<u64>,
    oversize_event: Option<usize>,
    expire_session_after: Option<u64>,
    /// The status initialize POSTs get instead of a session.
    refuse_initialize: Option<(u16, &'static str)>,
    /// `--close-after-request-ms` and the tools/call it starts at (`--close-from-call`).
    close_after_request: Option<(std::time::Duration, u64)>,
}

/// The Streamable HTTP transport: its sessions by id.
pub(crate) struct Streamable {
    config: Config,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// tools/call POSTs seen, over all sessions, for `--close-after-request-ms`.
    calls_seen: AtomicU64,
    /// Sessions ended by `--expire-session-after`, for `--fault-times`.
    expired: AtomicU64,
    /// The stateless era's requests.
    stateless: Stateless,
}

/// Where a request's response goes.
enum Route {
    Stream(Arc<EventStream>),
    Json(oneshot::Sender<Vec<u8>>),
}

struct Routing {
    closed: bool,
    next_stream: u64,
    standalone: Arc<EventStream>,
    /// POST streams by key, oldest first.
    streams: BTreeMap<u64, Arc<EventStream>>,
    /// Requests in flight.
    routes: HashMap<RequestId, Route>,
}

/// One Streamable HTTP session.
struct HttpSession {
    id: String,
    mcp: Arc<Session>,
    routing: Mutex<Routing>,
    requests_seen: AtomicU64,
    pump: Mutex<Option<AbortHandle>>,
    /// `--no-get-stream`: session notifications go with the request that caused them.
    no_get_stream: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: RequestId,
}

impl Streamable {
    pub(crate) fn new(options: &HttpOptions) -> Self {
        let refuse_initialize = match (options.http_status_on_initialize, options.legacy_sse_at_same_url) {
            (Some(code), legacy) => Some((code, if legacy { "GET" } else { "GET, DELETE" })),
            (None, true) => Some((405, "GET")),
            (None, false) => None,
        };
        Streamable {
            config: Config {
                json_response: options.json_response,
                no_get_stream: options.no_get_stream,
                no_delete: options.no_delete,
                no_resume: options.no_resume,
                sse_retry_ms: options.sse_retry_ms,
                drop_sse_after: options.sessions.drop_sse_after,
                oversize_event: options.oversize_event,
                expire_session_after: options.sessions.expire_session_after,
                refuse_initialize,
                close_after_request: options.close_after_request_ms.map(|ms| {
                    (
                        std::time::Duration::from_millis(ms),
                        options.close_from_call.unwrap_or(1),
                    )
                }),
            },
            sessions: Mutex::new(HashMap::new()),
            calls_seen: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            stateless: Stateless::new(options.json_response, options.sessions.drop_sse_after),
        }
    }

    /// POST: one JSON-RPC message.
    pub(crate) async fn post(
        &self,
        app: &Arc<App>,
        connection: &Connection,
        request: Request<Incoming>,
    ) -> Response<Body> {
        if let Some(response) = app.request_fault(connection, true).await {
            return response;
        }
        let headers = request.headers();
        if !accepts(headers, JSON) || !accepts(headers, EVENT_STREAM) {
            return http::jsonrpc_error(
                StatusCode::NOT_ACCEPTABLE,
                ErrorCode::INVALID_REQUEST,
                "Not Acceptable: the Accept header must list both application/json and text/event-stream",
            );
        }
        if !http::is_json(headers) {
            return http::jsonrpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::INVALID_REQUEST,
                "Unsupported Media Type: the body must be application/json",
            );
        }
        let session_id = header_text(headers, &MCP_SESSION_ID);
        let version = header_text(headers, &MCP_PROTOCOL_VERSION);
        let stateless_headers = modern::is_stateless(headers).then(|| headers.clone());
        let authorized = request.extensions().get::<Authorized>().cloned();
        let body = match http::read_body(request, app.remote().max_body_bytes).await {
            Ok(body) => body,
            Err(response) => return *response,
        };
        let message = match Message::from_slice(&body) {
            Ok(message) => message,
            Err(e) => return http::json(StatusCode::BAD_REQUEST, frame_error_line(&FrameError::Decode(e))),
        };
        if let Some(refusal) = app.oauth_refusal(authorized.as_ref(), &message) {
            return refusal;
        }
        if stateless_headers.is_some()
            && let Some(refusal) = self.refusal(app)
        {
            return refusal;
        }
        let message = match (app.server().era.support, stateless_headers) {
            (EraSupport::Legacy, Some(headers)) => {
                modern::record(app, "POST", Some(&message), &modern::mcp_headers(&headers));
                match message {
                    Message::Request(request) if request.method == "server/discover" => {
                        return modern::probe_answer(app, connection, request.id).await;
                    }
                    other => other,
                }
            }
            (_, Some(headers)) => return self.post_stateless(app, connection, &headers, message).await,
            (EraSupport::Modern, None) => return refuse_legacy(app, &message, version.as_deref()),
            (_, None) => message,
        };
        if let Message::Request(request) = message {
            if request.method == "initialize" {
                return self.initialize(app, session_id.as_deref(), request).await;
            }
            let session = match self.session_of(session_id.as_deref(), version.as_deref()) {
                Ok(session) => session,
                Err(response) => return *response,
            };
            if self.expire_if_due(app, &session) {
                return session_not_found(&session.id);
            }
            if request.method == "tools/call"
                && let Some(wait) = self.close_hits(app, &request.id)
            {
                // The call runs; its answer goes nowhere (no route), and the connection closes.
                let id = request.id.clone();
                session.handle(app, Message::Request(request), Some(&id));
                tokio::time::sleep(wait).await;
                match connection.close().await {}
            }
            return with_session(self.request(app, &session, request, false).await, &session.id);
        }
        let session = match self.session_of(session_id.as_deref(), version.as_deref()) {
            Ok(session) => session,
            Err(response) => return *response,
        };
        let cancelled = match &message {
            Message::Notification(notification) if notification.method == "notifications/cancelled" => notification
                .params
                .as_deref()
                .and_then(|params| serde_json::from_str::<CancelledParams>(params.get()).ok())
                .map(|params| params.request_id),
            _ => None,
        };
        session.handle(app, message, None);
        if let Some(id) = cancelled {
            session.cancel(&id);
        }
        with_session(http::empty(StatusCode::ACCEPTED), &session.id)
    }

    /// Under `--http-status-on-initialize` or `--legacy-sse-at-same-url`, the answer an old
    /// server gives a POST of `initialize` (or of the stateless era, which it does not know
    /// either): the status and a short text body.
    fn refusal(&self, app: &App) -> Option<Response<Body>> {
        let (code, allow) = self.config.refuse_initialize?;
        app.events()
            .record(&json!({"event": "fault", "fault": "refuse-initialize", "status": code}));
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::METHOD_NOT_ALLOWED);
        let response = http::text(
            status,
            "this server does not take initialize by POST here (--http-status-on-initialize, --legacy-sse-at-same-url)",
        );
        Some(if status == StatusCode::METHOD_NOT_ALLOWED {
            http::with_header(response, hyper::header::ALLOW, HeaderValue::from_static(allow))
        } else {
            response
        })
    }

    async fn initialize(
        &self,
        app: &Arc<App>,
        session_id: Option<&str>,
        request: plexus_jsonrpc::Request,
    ) -> Response<Body> {
        if let Some(refusal) = self.refusal(app) {
            return refusal;
        }
        if let Some(id) = session_id {
            return http::jsonrpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Bad Request: initialize starts a new session and must not carry an Mcp-Session-Id (it carried {id:?})"
                ),
            );
        }
        let session = match self.create_session(app) {
            Ok(session) => session,
            Err(response) => return *response,
        };
        session.requests_seen.store(1, Ordering::Relaxed);
        with_session(self.request(app, &session, request, true).await, &session.id)
    }

    /// Answers a request: an SSE stream, or (`--json-response`) one JSON body once the response
    /// is ready.
    async fn request(
        &self,
        app: &Arc<App>,
        session: &Arc<HttpSession>,
        request: plexus_jsonrpc::Request,
        initialize: bool,
    ) -> Response<Body> {
        let id = request.id.clone();
        if self.config.json_response {
            let (answer, answered) = oneshot::channel();
            if let Err(response) = session.add_json_route(&id, answer) {
                return *response;
            }
            session.handle(app, Message::Request(request), Some(&id));
            return match answered.await {
                Ok(line) => http::json(StatusCode::OK, line),
                Err(_) if lock(&session.routing).closed => session_not_found(&session.id),
                // Cancelled by the client: nothing to answer.
                Err(_) => http::empty(StatusCode::ACCEPTED),
            };
        }
        let stream = match session.add_stream_route(&id, !self.config.no_resume) {
            Ok(stream) => stream,
            Err(response) => return *response,
        };
        let faulty = !initialize && app.faults_armed();
        stream.push_priming(self.config.sse_retry_ms.filter(|_| faulty));
        if let Some(bytes) = self.config.oversize_event.filter(|_| faulty) {
            if let Some(line) = oversize_line(bytes) {
                stream.push(&line);
            }
        }
        session.handle(app, Message::Request(request), Some(&id));
        let (limit, stop_before_response) = match (self.config.sse_retry_ms, self.config.drop_sse_after) {
            _ if !faulty => (None, false),
            (Some(_), _) => (Some(1), true),
            (None, Some(events)) => {
                app.events().record(&json!({"event": "fault", "fault": "drop-sse", "session": session.id, "stream": stream.key(), "after": events}));
                (Some(events), true)
            }
            (None, None) => (None, false),
        };
        http::event_stream(Body::Events(stream.reader(limit, stop_before_response)))
    }

    /// The refusal of a GET or DELETE of the stateless era (405), unless the server speaks only
    /// the `initialize` era (which takes it as its own).
    pub(crate) fn refuse_stateless(app: &App, request: &Request<Incoming>) -> Option<Response<Body>> {
        let stateless = modern::is_stateless(request.headers()) && request.method() != hyper::Method::POST;
        if !stateless {
            return None;
        }
        if app.server().era.support == EraSupport::Legacy {
            modern::record(
                app,
                request.method().as_str(),
                None,
                &modern::mcp_headers(request.headers()),
            );
            return None;
        }
        Some(Stateless::refuse_method(app, request))
    }

    /// GET: the standalone stream, or a stream resumed by `Last-Event-ID`.
    pub(crate) fn get(&self, request: &Request<Incoming>) -> Response<Body> {
        let headers = request.headers();
        if !accepts(headers, EVENT_STREAM) {
            return http::jsonrpc_error(
                StatusCode::NOT_ACCEPTABLE,
                ErrorCode::INVALID_REQUEST,
                "Not Acceptable: the Accept header must list text/event-stream",
            );
        }
        let session_id = header_text(headers, &MCP_SESSION_ID);
        let version = header_text(headers, &MCP_PROTOCOL_VERSION);
        let session = match self.session_of(session_id.as_deref(), version.as_deref()) {
            Ok(session) => session,
            Err(response) => return *response,
        };
        let bad_request =
            |message: String| http::jsonrpc_error(StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST, message);
        let reader = if let Some(last) = headers.get(LAST_EVENT_ID) {
            let last = String::from_utf8_lossy(last.as_bytes());
            if self.config.no_resume {
                return bad_request(format!(
                    "Bad Request: this server does not resume streams (--no-resume); Last-Event-ID {last:?} refused"
                ));
            }
            let Some((key, seq)) = parse_event_id(&last) else {
                return bad_request(format!(
                    "Bad Request: Last-Event-ID {last:?} is not an event id of this server"
                ));
            };
            let stream = {
                let routing = lock(&session.routing);
                if key == 0 {
                    Some(Arc::clone(&routing.standalone))
                } else {
                    routing.streams.get(&key).cloned()
                }
            };
            let Some(stream) = stream else {
                return bad_request(format!(
                    "Bad Request: Last-Event-ID {last:?} names no stream of this session"
                ));
            };
            match stream.resume(seq) {
                Ok(reader) => reader,
                Err(ResumeError::NotSent) => {
                    return bad_request(format!(
                        "Bad Request: Last-Event-ID {last:?} names an event not sent yet"
                    ));
                }
                Err(ResumeError::Evicted) => {
                    return bad_request(format!(
                        "Bad Request: the events after Last-Event-ID {last:?} are no longer stored"
                    ));
                }
            }
        } else {
            if self.config.no_get_stream {
                return http::method_not_allowed(
                    "POST, DELETE",
                    "this server offers no standalone SSE stream (--no-get-stream)",
                );
            }
            let standalone = Arc::clone(&lock(&session.routing).standalone);
            standalone.push_priming(self.config.sse_retry_ms);
            standalone.reader(None, false)
        };
        with_session(http::event_stream(Body::Events(reader)), &session.id)
    }

    /// DELETE: ends the session.
    pub(crate) fn delete(&self, app: &Arc<App>, request: &Request<Incoming>) -> Response<Body> {
        if self.config.no_delete {
            return http::method_not_allowed(
                "GET, POST",
                "this server does not let clients end sessions (--no-delete)",
            );
        }
        let headers = request.headers();
        let session_id = header_text(headers, &MCP_SESSION_ID);
        let version = header_text(headers, &MCP_PROTOCOL_VERSION);
        let session = match self.session_of(session_id.as_deref(), version.as_deref()) {
            Ok(session) => session,
            Err(response) => return *response,
        };
        self.end_session(app, &session.id, "deleted");
        http::empty(StatusCode::OK)
    }

    /// Ends every session.
    pub(crate) fn close_all(&self, app: &App) {
        let ids: Vec<String> = lock(&self.sessions).keys().cloned().collect();
        for id in ids {
            self.end_session(app, &id, "shutdown");
        }
    }

    /// The session a request names, or the response that refuses it: 400 without a session id,
    /// 404 for an unknown one, 400 for an unsupported `MCP-Protocol-Version`.
    fn session_of(&self, id: Option<&str>, version: Option<&str>) -> Result<Arc<HttpSession>, Refusal> {
        let Some(id) = id else {
            return Err(Box::new(http::jsonrpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "Bad Request: the Mcp-Session-Id header is required after initialize",
            )));
        };
        let Some(session) = lock(&self.sessions).get(id).cloned() else {
            return Err(Box::new(session_not_found(id)));
        };
        if let Some(version) = version.filter(|version| !SUPPORTED_PROTOCOL_VERSIONS.contains(version)) {
            return Err(Box::new(http::jsonrpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Bad Request: unsupported MCP-Protocol-Version {version:?} (supported: {})",
                    SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                ),
            )));
        }
        Ok(session)
    }

    fn create_session(&self, app: &Arc<App>) -> Result<Arc<HttpSession>, Refusal> {
        let id = new_session_id()?;
        let (outbox, emitted) = mpsc::channel(OUTBOX_CAPACITY);
        let session = Arc::new(HttpSession {
            mcp: Session::new(Arc::clone(app.server()), outbox, Some(id.clone())),
            routing: Mutex::new(Routing {
                closed: false,
                next_stream: 1,
                standalone: EventStream::new(0, None, !self.config.no_resume),
                streams: BTreeMap::new(),
                routes: HashMap::new(),
            }),
            requests_seen: AtomicU64::new(0),
            pump: Mutex::new(None),
            no_get_stream: self.config.no_get_stream,
            id,
        });
        {
            let mut sessions = lock(&self.sessions);
            if sessions.len() >= MAX_SESSIONS {
                return Err(Box::new(http::jsonrpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::INTERNAL_ERROR,
                    format!("Service Unavailable: {MAX_SESSIONS} sessions are open; end one with DELETE"),
                )));
            }
            sessions.insert(session.id.clone(), Arc::clone(&session));
        }
        let pump = tokio::spawn(pump(Arc::downgrade(app), Arc::downgrade(&session), emitted));
        *lock(&session.pump) = Some(pump.abort_handle());
        app.events()
            .record(&json!({"event": "session-start", "session": session.id, "transport": "http"}));
        Ok(session)
    }

    /// A POST of the stateless era; a `tools/call` that `--close-after-request-ms` hits runs, and
    /// then the connection closes without its answer.
    async fn post_stateless(
        &self,
        app: &Arc<App>,
        connection: &Connection,
        headers: &hyper::HeaderMap,
        message: Message,
    ) -> Response<Body> {
        if let Message::Request(request) = &message
            && request.method == "tools/call"
            && let Some(wait) = self.close_hits(app, &request.id)
        {
            let answer = self.stateless.post(app, headers, message).await;
            tokio::time::sleep(wait).await;
            drop(answer);
            match connection.close().await {}
        }
        self.stateless.post(app, headers, message).await
    }

    /// Counts a tools/call against `--close-after-request-ms`: the wait before the close when it
    /// hits this one.
    fn close_hits(&self, app: &App, id: &RequestId) -> Option<std::time::Duration> {
        let (wait, from) = self.config.close_after_request?;
        let n = self.calls_seen.fetch_add(1, Ordering::Relaxed) + 1;
        if !app.is_hit(n, Some(from - 1)) {
            return None;
        }
        app.events()
            .record(&json!({"event": "fault", "fault": "close-after-request", "call": n, "id": id}));
        Some(wait)
    }

    /// Counts a request against `--expire-session-after` (once the faults are armed, see
    /// `--faults-after-calls`); when due, ends the session (at most `--fault-times` sessions).
    fn expire_if_due(&self, app: &App, session: &HttpSession) -> bool {
        if self.config.expire_session_after.is_none() || !app.faults_armed() {
            return false;
        }
        let seen = session.requests_seen.fetch_add(1, Ordering::Relaxed) + 1;
        let due = self.config.expire_session_after.is_some_and(|limit| seen > limit)
            && app
                .remote()
                .fault_times
                .is_none_or(|times| self.expired.fetch_add(1, Ordering::Relaxed) < times);
        if due {
            app.events().record(
                &json!({"event": "fault", "fault": "expire-session", "session": session.id, "after": seen - 1}),
            );
            self.end_session(app, &session.id, "expired");
        }
        due
    }

    fn end_session(&self, app: &App, id: &str, reason: &str) {
        let Some(session) = lock(&self.sessions).remove(id) else {
            return;
        };
        session.close();
        app.events()
            .record(&json!({"event": "session-end", "session": id, "reason": reason}));
    }
}

impl HttpSession {
    /// Handles one message; outputs ready now are routed at once, with `origin` the request
    /// being handled.
    fn handle(&self, app: &Arc<App>, message: Message, origin: Option<&RequestId>) {
        let mut outputs = Vec::new();
        self.mcp.handle(message, &mut outputs);
        for output in outputs {
            self.route(app, origin, output);
        }
    }

    /// Checks that request `id` can be routed: the session is open and `id` is not in flight.
    fn check_route(&self, routing: &Routing, id: &RequestId) -> Result<(), Refusal> {
        if routing.closed {
            return Err(Box::new(session_not_found(&self.id)));
        }
        if routing.routes.contains_key(id) {
            let error = ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!("request id {id} is already in flight in this session"),
            );
            let mut line = Vec::with_capacity(128);
            Message::Response(plexus_jsonrpc::Response::error(Some(id.clone()), error)).encode_line(&mut line);
            return Err(Box::new(http::json(StatusCode::OK, line)));
        }
        Ok(())
    }

    /// Routes request `id`'s response to `answer` (`--json-response`).
    fn add_json_route(&self, id: &RequestId, answer: oneshot::Sender<Vec<u8>>) -> Result<(), Refusal> {
        let mut routing = lock(&self.routing);
        self.check_route(&routing, id)?;
        routing.routes.insert(id.clone(), Route::Json(answer));
        Ok(())
    }

    /// Opens a POST stream (the next key) for request `id`, making room by forgetting the oldest
    /// finished stream when the session holds [`MAX_STREAMS_PER_SESSION`].
    fn add_stream_route(&self, id: &RequestId, keep_delivered: bool) -> Result<Arc<EventStream>, Refusal> {
        let mut routing = lock(&self.routing);
        self.check_route(&routing, id)?;
        if routing.streams.len() >= MAX_STREAMS_PER_SESSION {
            let oldest_finished = routing
                .streams
                .iter()
                .find(|(_, stream)| {
                    stream
                        .request()
                        .is_none_or(|request| !routing.routes.contains_key(request))
                })
                .map(|(key, _)| *key);
            let Some(oldest) = oldest_finished else {
                return Err(Box::new(http::jsonrpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::INTERNAL_ERROR,
                    format!("Service Unavailable: {MAX_STREAMS_PER_SESSION} requests are in flight in this session"),
                )));
            };
            routing.streams.remove(&oldest);
        }
        let key = routing.next_stream;
        routing.next_stream += 1;
        let stream = EventStream::new(key, Some(id.clone()), keep_delivered);
        routing.streams.insert(key, Arc::clone(&stream));
        routing.routes.insert(id.clone(), Route::Stream(Arc::clone(&stream)));
        Ok(stream)
    }

    /// Sends one output where it belongs (see the module docs).
    fn route(&self, app: &Arc<App>, origin: Option<&RequestId>, output: Output) {
        let mut routing = lock(&self.routing);
        if routing.closed {
            return;
        }
        let origin_stream = |routing: &Routing| match origin.and_then(|id| routing.routes.get(id)) {
            Some(Route::Stream(stream)) => Some(Arc::clone(stream)),
            _ => None,
        };
        match output {
            Output::Response(line) => routing.respond(origin, &line, None),
            Output::Drip { line, chunk, delay } => routing.respond(origin, &line, Some((chunk, delay))),
            Output::Message(line) | Output::Raw(line) => {
                origin_stream(&routing)
                    .unwrap_or_else(|| Arc::clone(&routing.standalone))
                    .push(&line);
            }
            Output::SessionNotification(line) => {
                if self.no_get_stream {
                    if let Some(stream) = origin_stream(&routing) {
                        stream.push(&line);
                    }
                } else {
                    routing.standalone.push(&line);
                }
            }
            Output::Exit { code, reason } => {
                // The stream the crash follows: the request's own (still routed, or finished).
                let stream = origin_stream(&routing).or_else(|| {
                    let origin = origin?;
                    routing
                        .streams
                        .values()
                        .rev()
                        .find(|stream| stream.request() == Some(origin))
                        .cloned()
                });
                drop(routing);
                app.crash_when_drained(
                    move || stream.as_ref().is_none_or(|stream| stream.drained()),
                    code,
                    reason,
                );
            }
        }
    }

    /// Ends the route of a cancelled request: its stream finishes without a response.
    fn cancel(&self, id: &RequestId) {
        let route = lock(&self.routing).routes.remove(id);
        if let Some(Route::Stream(stream)) = route {
            stream.finish();
        }
    }

    /// Ends the session: every stream finishes, requests waiting for a JSON body get 404, work in
    /// flight is aborted.
    fn close(&self) {
        {
            let mut routing = lock(&self.routing);
            routing.closed = true;
            routing.standalone.finish();
            for stream in routing.streams.values() {
                stream.finish();
            }
            routing.routes.clear();
        }
        self.mcp.abort_all();
        if let Some(pump) = lock(&self.pump).take() {
            pump.abort();
        }
    }
}

impl Routing {
    fn respond(&mut self, origin: Option<&RequestId>, line: &[u8], drip: Option<(usize, std::time::Duration)>) {
        match origin.and_then(|id| self.routes.remove(id)) {
            Some(Route::Stream(stream)) => stream.push_response(line, drip),
            Some(Route::Json(answer)) => drop(answer.send(line.to_vec())),
            // Cancelled, or the session ended: nobody waits for it.
            None => {}
        }
    }
}

/// Routes the outputs of a session's background tasks until the session ends.
async fn pump(app: WeakApp, session: std::sync::Weak<HttpSession>, mut emitted: mpsc::Receiver<Emitted>) {
    while let Some(Emitted { origin, output }) = emitted.recv().await {
        let (Some(app), Some(session)) = (app.upgrade(), session.upgrade()) else {
            return;
        };
        session.route(&app, origin.as_ref(), output);
    }
}

/// A modern-only server's answer to a POST of the `initialize` era (no stateless
/// `MCP-Protocol-Version` header, `version` being the header sent): 400 with -32022 naming the
/// version served and the one asked for.
fn refuse_legacy(app: &App, message: &Message, version: Option<&str>) -> Response<Body> {
    let (id, method, params) = match message {
        Message::Request(request) => (Some(request.id.clone()), &*request.method, request.params.as_deref()),
        Message::Notification(notification) => (None, &*notification.method, notification.params.as_deref()),
        Message::Response(response) => (response.id.clone(), "", None),
    };
    let params = params.map_or("{}", serde_json::value::RawValue::get);
    let error = app.server().era.refuse_legacy_request(method, params, version);
    modern::error_response(id, error)
}

/// 404 with a JSON-RPC error -32001: the session is unknown, ended or expired.
fn session_not_found(id: &str) -> Response<Body> {
    http::jsonrpc_error(
        StatusCode::NOT_FOUND,
        ErrorCode::SESSION_NOT_FOUND,
        format!("Session not found: {id}"),
    )
}

/// `response` with the `Mcp-Session-Id` header.
fn with_session(response: Response<Body>, id: &str) -> Response<Body> {
    match HeaderValue::from_str(id) {
        Ok(value) => http::with_header(response, MCP_SESSION_ID, value),
        Err(_) => response,
    }
}
