//! Streamable HTTP in the stateless 2026-07-28 era (SEP-2575, SEP-2243): a POST whose
//! `MCP-Protocol-Version` header names no version of the `initialize` era is one self-contained
//! request, routed as the Python SDK's server routes it.
//!
//! - No session: no `Mcp-Session-Id` is issued or needed (one sent is ignored). Each POST is
//!   handled by a [`Session`] of its own, already routed to the modern era; the request states of
//!   `input_required` results are the server's, so a retry on any connection finds its state.
//! - The envelope is checked as on stdio ([`EraOptions::route_stateless`]), and the headers against
//!   the body: `MCP-Protocol-Version` (a version not served: -32022; not the envelope's: -32020),
//!   `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-{Name}` headers of a tool's `x-mcp-header`
//!   parameters (-32020), values decoded from `=?base64?…?=` first.
//! - An error known before anything else is sent is a JSON body whose status says its code (see
//!   [`status_of`]); otherwise the answer is an SSE stream of the request's progress and log
//!   notifications, then its response (`--json-response`: one JSON body, the notifications
//!   dropped). The client closing the stream cancels the request's work.
//! - GET and DELETE with a stateless header get 405 (`Allow: POST`); a notification gets 202.
//! - Every POST with a stateless header (in any era) and every GET or DELETE with one is
//!   recorded as a `modern-request` event with its `mcp-*` headers, and those headers reach the
//!   tool a `tools/call` calls (`headers_echo`).

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use plexus_jsonrpc::{ErrorCode, ErrorObject, Message, RequestId};
use plexus_protocol::http_headers::{
    MCP_METHOD_HEADER, MCP_NAME_HEADER, ParamHeaders, decode_received, expect_received, name_param,
};
use plexus_protocol::methods::SUBSCRIPTIONS_LISTEN;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::connection::Connection;
use super::http::{self, Body, MCP_PROTOCOL_VERSION};
use super::legacy::message_event;
use super::{App, WeakApp, until_stopped};
use crate::era::{EraOptions, HEADER_MISMATCH, ProbeAnswer, Routing, UNSUPPORTED_PROTOCOL_VERSION};
use crate::listen::{self, ListenStream, ListenTick};
use crate::server::{Emitted, OUTBOX_CAPACITY, Output, SUPPORTED_PROTOCOL_VERSIONS, Server, Session, lock};

/// How long a legacy-only server keeps a probe it does not answer (`--probe-answer silence`).
const SILENCE_LIMIT: Duration = Duration::from_secs(60);

/// How many SSE events of one request wait for the client before its work waits too.
const FRAME_CAPACITY: usize = 64;

/// The lowercase prefix of every MCP header, as a tool and the event log see them.
const MCP_HEADER_PREFIX: &str = "mcp-";

/// The stateless side of the Streamable HTTP transport.
pub(crate) struct Stateless {
    json_response: bool,
    /// `--drop-sse-after`: a `tools/call`'s stream ends after this many events, before its
    /// response (the stateless revision resumes no stream), once the faults are armed.
    drop_sse_after: Option<u64>,
    /// A stateless request was refused under `--reject-first-modern-request` (once per server).
    rejected_once: Mutex<bool>,
}

/// Whether a request carries an `MCP-Protocol-Version` header naming no version of the
/// `initialize` era (an unreadable value included): it is of the stateless era.
pub(crate) fn is_stateless(headers: &HeaderMap) -> bool {
    headers.get(MCP_PROTOCOL_VERSION).is_some_and(|value| {
        !value
            .to_str()
            .is_ok_and(|value| SUPPORTED_PROTOCOL_VERSIONS.contains(&value))
    })
}

/// The `mcp-*` headers of a request, by lowercase name, values as sent (repeated ones joined
/// with `, `).
pub(crate) fn mcp_headers(headers: &HeaderMap) -> Map<String, Value> {
    let mut found = Map::new();
    for (name, value) in headers {
        if !name.as_str().starts_with(MCP_HEADER_PREFIX) {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes());
        match found.get_mut(name.as_str()) {
            Some(Value::String(previous)) => {
                previous.push_str(", ");
                previous.push_str(&value);
            }
            _ => {
                found.insert(name.as_str().to_owned(), Value::String(value.into_owned()));
            }
        }
    }
    found
}

/// Records `{"event":"modern-request","http_method":…,"method":…,"id":…,"headers":{mcp-*}}`
/// (`method` and `id`: the JSON-RPC message's, when there is one).
pub(crate) fn record(app: &App, http_method: &str, message: Option<&Message>, headers: &Map<String, Value>) {
    if !app.events().enabled() {
        return;
    }
    let (method, id) = match message {
        Some(Message::Request(request)) => (Some(&*request.method), Some(&request.id)),
        Some(Message::Notification(notification)) => (Some(&*notification.method), None),
        Some(Message::Response(_)) | None => (None, None),
    };
    app.events().record(&json!({
        "event": "modern-request",
        "http_method": http_method,
        "method": method,
        "id": id,
        "headers": headers,
    }));
}

/// The HTTP status of a stateless request's JSON-RPC error answer: 400 for what is wrong with
/// the request (-32700, -32600, -32602, -32020, -32021, -32022), 404 for an unknown method
/// (-32601), 200 for the rest.
pub(crate) fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST
        | ErrorCode::INVALID_PARAMS
        | HEADER_MISMATCH
        | plexus_protocol::errors::MISSING_REQUIRED_CLIENT_CAPABILITY
        | UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// A JSON body holding the error response to `id`, with `status`.
fn error_body(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response<Body> {
    let mut line = Vec::with_capacity(128 + error.message.len());
    Message::Response(plexus_jsonrpc::Response::error(id, error)).encode_line(&mut line);
    http::json(status, line)
}

/// A JSON body holding the error response to `id`, with the status its code calls for.
pub(crate) fn error_response(id: Option<RequestId>, error: ErrorObject) -> Response<Body> {
    error_body(status_of(error.code), id, error)
}

/// -32020 saying `message`.
fn mismatch(message: &str) -> ErrorObject {
    ErrorObject::new(HEADER_MISMATCH, format!("Header mismatch: {message}"))
}

/// Checks that header `name` was sent and decodes to `expected` (what the body says as `what`);
/// -32020 saying which and how otherwise.
fn expect_header(headers: &HeaderMap, name: &str, expected: &str, what: &str) -> Result<(), ErrorObject> {
    let value = headers.get(name).map(HeaderValue::as_bytes);
    expect_received(name, value, expected, what).map_err(|why| mismatch(&why))
}

/// The decoded value of header `name`, if sent; -32020 when it is not visible ASCII or its
/// `=?base64?…?=` does not decode.
fn decoded<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<Cow<'h, str>>, ErrorObject> {
    decode_received(name, headers.get(name).map(HeaderValue::as_bytes)).map_err(|why| mismatch(&why))
}

/// The error code of a JSON-RPC response line, if it is an error.
fn error_code(line: &[u8]) -> Option<ErrorCode> {
    #[derive(Deserialize)]
    struct Answer {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: ErrorCode,
    }
    serde_json::from_slice::<Answer>(line)
        .ok()?
        .error
        .map(|Code { code }| code)
}

/// A JSON body holding the response `line`, with the status its error's code calls for (200 for
/// a result).
fn response_body(line: Vec<u8>) -> Response<Body> {
    http::json(error_code(&line).map_or(StatusCode::OK, status_of), line)
}

/// Aborts the work of a stateless request's session (its tool call's task) when dropped: the
/// request is answered, or its client went away. A request whose stream ended before its
/// response (the client closed it: the stateless era's cancellation; or the server stopped) is
/// recorded as `{"event":"stream-closed","id":…}`.
struct EndWork {
    session: Arc<Session>,
    /// The request, until it is answered (or needs no answer on its stream: a subscription's
    /// end has its own event).
    unanswered: Option<RequestId>,
}

impl EndWork {
    fn new(session: Arc<Session>, id: RequestId) -> Self {
        EndWork {
            session,
            unanswered: Some(id),
        }
    }

    /// The request's response went out.
    fn answered(&mut self) {
        self.unanswered = None;
    }
}

impl Drop for EndWork {
    fn drop(&mut self) {
        self.session.abort_all();
        if let Some(id) = self.unanswered.take() {
            self.session.record(json!({"event": "stream-closed", "id": id}));
        }
    }
}

impl Stateless {
    /// The stateless side of a server that answers with one JSON body when `json_response`
    /// (`--json-response`), else with an SSE stream.
    pub(crate) fn new(json_response: bool, drop_sse_after: Option<u64>) -> Self {
        Stateless {
            json_response,
            drop_sse_after,
            rejected_once: Mutex::new(false),
        }
    }

    /// A GET or DELETE with a stateless header: the stateless era has no stream to open and no
    /// session to end (405, `Allow: POST`).
    pub(crate) fn refuse_method(app: &App, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        record(app, request.method().as_str(), None, &mcp_headers(request.headers()));
        http::method_not_allowed(
            "POST",
            format!(
                "{} is not part of the stateless protocol (MCP-Protocol-Version {:?}): POST each request",
                request.method(),
                String::from_utf8_lossy(
                    request
                        .headers()
                        .get(MCP_PROTOCOL_VERSION)
                        .map_or(&b""[..], HeaderValue::as_bytes)
                )
            ),
        )
    }

    /// A POST with a stateless header to a server that speaks the stateless era.
    pub(crate) async fn post(&self, app: &Arc<App>, headers: &HeaderMap, message: Message) -> Response<Body> {
        let mcp = mcp_headers(headers);
        record(app, "POST", Some(&message), &mcp);
        let request = match message {
            Message::Request(request) => request,
            // `notifications/cancelled` included: closing a request's stream is what cancels it.
            Message::Notification(_) => return http::empty(StatusCode::ACCEPTED),
            Message::Response(response) => {
                let error = ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "a stateless server sends no requests, so it awaits no responses",
                );
                return error_response(response.id, error);
            }
        };
        let params = request.params.as_deref().map_or("{}", serde_json::value::RawValue::get);
        if let Err(error) = self.check(app.server(), &request.method, params, headers) {
            return error_response(Some(request.id), error);
        }
        self.run(app, request, mcp).await
    }

    /// Checks a stateless request's version, envelope and headers against its body.
    fn check(&self, server: &Server, method: &str, params: &str, headers: &HeaderMap) -> Result<(), ErrorObject> {
        let era = &server.era;
        let version = decoded(headers, MCP_PROTOCOL_VERSION.as_str())?.unwrap_or_default();
        if version != era.modern_version {
            return Err(era.unsupported(&version));
        }
        let mut rejected_once = lock(&self.rejected_once);
        if let Routing::Answer(Err(error)) = era.route_stateless(&mut rejected_once, method, params, &version) {
            return Err(error);
        }
        drop(rejected_once);
        expect_header(headers, MCP_METHOD_HEADER, method, "the body's method")?;
        let Some(member) = name_param(method) else {
            return check_param_headers(&ParamHeaders::default(), &Map::new(), headers);
        };
        let params: Value = serde_json::from_str(params)
            .map_err(|e| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("invalid params for {method}: {e}")))?;
        let named = params.get(member).and_then(Value::as_str).unwrap_or_default();
        expect_header(headers, MCP_NAME_HEADER, named, &format!("params.{member}"))?;
        let empty = Map::new();
        let arguments = params.get("arguments").and_then(Value::as_object).unwrap_or(&empty);
        let annotated = match method {
            "tools/call" => param_headers(server, named),
            _ => ParamHeaders::default(),
        };
        check_param_headers(&annotated, arguments, headers)
    }

    /// Handles a checked stateless request on a session of its own and answers it.
    async fn run(&self, app: &Arc<App>, request: plexus_jsonrpc::Request, mcp: Map<String, Value>) -> Response<Body> {
        let (outbox, emitted) = mpsc::channel(OUTBOX_CAPACITY);
        let listen = (request.method == SUBSCRIPTIONS_LISTEN).then(|| request.id.clone());
        let calls = request.method == "tools/call";
        let session = Session::stateless(Arc::clone(app.server()), outbox, mcp);
        let mut work = EndWork::new(Arc::clone(&session), request.id.clone());
        if listen.is_some() {
            work.answered();
        }
        let mut outputs = Vec::new();
        session.handle(Message::Request(request), &mut outputs);
        // An error answered at once is a JSON body with the status its code calls for.
        let failed = outputs
            .iter()
            .any(|output| matches!(output, Output::Response(line) if error_code(line).is_some()));
        // A subscription lives on a stream, `--json-response` or not.
        if failed || (self.json_response && listen.is_none()) {
            return json_answer(app, outputs, emitted, work).await;
        }
        let drop_after = self
            .drop_sse_after
            .filter(|_| listen.is_none() && calls && app.faults_armed());
        if let Some(events) = drop_after {
            app.events()
                .record(&json!({"event": "fault", "fault": "drop-sse", "stateless": true, "after": events}));
        }
        let listening = listen.map(|id| ListenStream::new(&session, id));
        let (frames, body) = mpsc::channel(FRAME_CAPACITY);
        let limit = StreamLimit { events: drop_after };
        tokio::spawn(stream(
            Arc::downgrade(app),
            work,
            outputs,
            emitted,
            frames,
            listening,
            limit,
        ));
        http::event_stream(Body::Frames(body))
    }
}

/// The response of a stateless request as one JSON body: the first response among `ready` and
/// then the request's later outputs; the other messages have nowhere to go without a stream.
async fn json_answer(
    app: &Arc<App>,
    ready: Vec<Output>,
    mut emitted: mpsc::Receiver<Emitted>,
    mut work: EndWork,
) -> Response<Body> {
    let mut stopping = app.stopping();
    let mut ready = ready.into_iter();
    loop {
        let output = match ready.next() {
            Some(output) => output,
            None => tokio::select! {
                emitted = emitted.recv() => match emitted {
                    Some(Emitted { output, .. }) => output,
                    None => {
                        work.answered();
                        return http::empty(StatusCode::ACCEPTED);
                    }
                },
                () = until_stopped(&mut stopping) => {
                    return http::text(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
                }
            },
        };
        match output {
            Output::Response(line) | Output::Drip { line, .. } => {
                work.answered();
                crash_after(app, ready, || true);
                return response_body(line);
            }
            Output::Exit { code, reason } => app.crash_when_drained(|| true, code, reason),
            Output::Message(_) | Output::SessionNotification(_) | Output::Raw(_) => {}
        }
    }
}

/// Crashes after a response when an output after it says so (`--crash-after`), once `drained`.
fn crash_after(
    app: &Arc<App>,
    rest: impl Iterator<Item = Output>,
    drained: impl Fn() -> bool + Send + Clone + 'static,
) {
    for output in rest {
        if let Output::Exit { code, reason } = output {
            app.crash_when_drained(drained.clone(), code, reason);
        }
    }
}

/// Writes a stateless request's outputs as SSE events (`frames`), those ready now first, until
/// its response, the client going away (which ends the request's work) or the server stopping.
/// A crash after the response (`--crash-after`) waits until the client has read it. The stream
/// of a `subscriptions/listen` (`listening`) also sends keep-alives, and ends when the server
/// ends the subscription.
async fn stream(
    app: WeakApp,
    mut work: EndWork,
    ready: Vec<Output>,
    mut emitted: mpsc::Receiver<Emitted>,
    frames: mpsc::Sender<Bytes>,
    mut listening: Option<ListenStream>,
    limit: StreamLimit,
) {
    let mut sent = 0_u64;
    let Some(mut stopping) = app.upgrade().map(|app| app.stopping()) else {
        return;
    };
    let drained = {
        let frames = frames.downgrade();
        move || {
            frames
                .upgrade()
                .is_none_or(|frames| frames.capacity() == frames.max_capacity())
        }
    };
    let mut ready = ready.into_iter();
    loop {
        let output = match ready.next() {
            Some(output) => output,
            None => tokio::select! {
                emitted = emitted.recv() => match emitted {
                    Some(Emitted { output, .. }) => output,
                    None => return,
                },
                () = frames.closed() => return,
                () = until_stopped(&mut stopping) => return,
                tick = listen::tick(&mut listening) => match tick {
                    ListenTick::KeepAlive => {
                        if frames.send(listen::KEEP_ALIVE_FRAME).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    ListenTick::End(Some(output)) => output,
                    ListenTick::End(None) => return,
                },
            },
        };
        let (line, last) = match output {
            Output::Response(line) | Output::Drip { line, .. } => (line, true),
            Output::Message(line) | Output::Raw(line) => (line, false),
            // Not a subscription's: session notifications have nowhere to go.
            Output::SessionNotification(_) => continue,
            Output::Exit { code, reason } => {
                if let Some(app) = app.upgrade() {
                    app.crash_when_drained(drained.clone(), code, reason);
                }
                continue;
            }
        };
        if limit.events.is_some_and(|events| sent >= events) {
            // `--drop-sse-after`: the stream ends here, before the response.
            return;
        }
        if frames.send(message_event(&line)).await.is_err() {
            return;
        }
        sent += 1;
        if last {
            work.answered();
            if let Some(app) = app.upgrade() {
                let later = std::iter::from_fn(|| emitted.try_recv().ok().map(|emitted| emitted.output));
                crash_after(&app, ready.chain(later), drained);
            }
            return;
        }
    }
}

/// How much of a request's stream is written (`--drop-sse-after`).
struct StreamLimit {
    /// The events after which the stream ends, before its response.
    events: Option<u64>,
}

/// The `x-mcp-header` parameters of the listed tool `name` (none for an unknown tool, or one
/// whose annotations are invalid: a client of the stateless era does not call it over HTTP).
fn param_headers(server: &Server, name: &str) -> ParamHeaders {
    server
        .builtin_tools
        .iter()
        .find(|tool| tool["name"] == name)
        .and_then(|tool| ParamHeaders::from_input_schema(&tool["inputSchema"]).ok())
        .unwrap_or_default()
}

/// Checks the `Mcp-Param-{Name}` headers of a call with `arguments` of a tool whose annotated
/// parameters are `annotated`: each argument present and not null has its header, carrying its
/// value; no other `Mcp-Param-*` header is sent (-32020 naming the header otherwise).
fn check_param_headers(
    annotated: &ParamHeaders,
    arguments: &Map<String, Value>,
    headers: &HeaderMap,
) -> Result<(), ErrorObject> {
    annotated
        .check_received(arguments, headers.keys().map(HeaderName::as_str), |name| {
            headers.get(name).map(HeaderValue::as_bytes)
        })
        .map_err(|why| mismatch(&why))
}

/// A legacy-only server's answer (`--era legacy`, `--probe-answer`) to a `server/discover`
/// with a stateless header, `id`: -32601 with 200 (a sessionless server that processed it),
/// -32602 with 400, an empty 400, no answer (held 60 s at most, then the connection closes),
/// or the connection dropped unanswered (`exit`; the process lives on).
pub(crate) async fn probe_answer(app: &App, connection: &Connection, id: RequestId) -> Response<Body> {
    let era: &EraOptions = &app.server().era;
    if era.probe_answer == ProbeAnswer::Empty400 {
        return http::empty(StatusCode::BAD_REQUEST);
    }
    match era.probe_routing() {
        Routing::Answer(Err(error)) => {
            let status = if error.code == ErrorCode::INVALID_PARAMS {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            error_body(status, Some(id), error)
        }
        Routing::Exit => {
            app.events().record(&json!({"event": "fault", "fault": "probe-exit"}));
            connection.mark_reset();
            match connection.close().await {}
        }
        _ => {
            let mut stopping = app.stopping();
            tokio::select! {
                () = tokio::time::sleep(SILENCE_LIMIT) => {}
                () = until_stopped(&mut stopping) => {}
            }
            match connection.close().await {}
        }
    }
}
