//! The MCP logic: what the server offers ([`Server`]) and one session's state with the handling of
//! one decoded message ([`Session::handle`]), independent of how messages are framed or carried.
//!
//! Quick requests are answered inline into the caller's output list; work that waits (slow tools,
//! requests to the client) runs on a task of its own and sends its outputs through the session's
//! outbox, which the transport drains.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use plexus_jsonrpc::{
    ErrorCode, ErrorObject, FrameError, Message, Notification, RawValue, Request, RequestId, Response,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::ServerOptions;
use crate::catalog;
use crate::era::{self, EraOptions, Routing, SessionEra};
use crate::events::EventLog;
use crate::faults::GARBAGE_LINE;
use crate::listen::{Ending, Listeners};
use crate::mrtr::IssuedStates;

/// The protocol version the server prefers, and answers with when the client's is unknown.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every protocol version the server speaks, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = [LATEST_PROTOCOL_VERSION, "2025-06-18", "2025-03-26", "2024-11-05"];

/// The most requests (tool calls, `tasks/result`) running on tasks of their own at once; more are
/// refused with an error.
const MAX_IN_FLIGHT: usize = 4096;
/// The most requests to the client waiting for an answer at once.
const MAX_PENDING_CLIENT_REQUESTS: usize = 1024;
/// How many outputs of background tasks may wait for the transport.
pub(crate) const OUTBOX_CAPACITY: usize = 1024;

/// Something the session wants written to the client, in order. Every line ends with `\n`.
///
/// The kinds matter to transports that route messages (Streamable HTTP): a [`Response`] ends the
/// exchange of the request it answers, a [`Message`] belongs with the request being handled (or the
/// one whose task emits it), a [`SessionNotification`] belongs with none.
///
/// [`Response`]: Output::Response
/// [`Message`]: Output::Message
/// [`SessionNotification`]: Output::SessionNotification
#[derive(Debug)]
pub(crate) enum Output {
    /// A JSON-RPC request or notification related to a client request (progress, log messages,
    /// requests to the client).
    Message(Vec<u8>),
    /// The JSON-RPC response to a client request.
    Response(Vec<u8>),
    /// A notification about the session as a whole (`list_changed`, `resources/updated`).
    SessionNotification(Vec<u8>),
    /// Bytes that are no well-behaved protocol message (a fault).
    Raw(Vec<u8>),
    /// A response line to be written `chunk` bytes at a time, `delay` apart (the `drip` fault).
    Drip {
        line: Vec<u8>,
        chunk: usize,
        delay: Duration,
    },
    /// Exit the process with `code` once everything before this is written, saying `reason` on
    /// stderr (the `crash` fault and `--crash-after`).
    Exit { code: i32, reason: String },
}

/// MCP logging levels, least severe first (the protocol crate's type).
pub(crate) use plexus_protocol::LoggingLevel as LogLevel;

/// What the server offers; shared by all its sessions.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) options: ServerOptions,
    /// Which eras it speaks, and how.
    pub(crate) era: EraOptions,
    pub(crate) events: Arc<EventLog>,
    pub(crate) builtin_tools: Vec<Value>,
    /// The tools/call answers of every session, for `--faults-after-calls`.
    pub(crate) calls_answered: AtomicU64,
    resources: Vec<Value>,
    templates: Vec<Value>,
    prompts: Vec<Value>,
    /// The request states of `input_required` results not yet echoed (see `mrtr`): the server's,
    /// since a stateless client may retry on another connection (a new POST, over HTTP).
    pub(crate) request_states: Mutex<IssuedStates>,
    /// The live `subscriptions/listen` of the stateless HTTP requests, whichever client sent them.
    pub(crate) listeners: Arc<Listeners>,
    /// The tools `trigger-list-changed` added for the stateless HTTP requests (each POST is a
    /// session of its own, and the list is the server's).
    pub(crate) dynamic_tools: Arc<Mutex<Vec<Value>>>,
    /// The skills it serves (`--skills`).
    pub(crate) skills: Option<crate::skills::Skills>,
    /// The tasks it runs (`--tasks`): the server's, so that any stateless request finds them.
    pub(crate) tasks: Option<crate::tasks::Tasks>,
}

impl Server {
    pub(crate) fn new(options: ServerOptions, events: Arc<EventLog>) -> Self {
        let mut builtin_tools = catalog::builtin_tools();
        if options.hostile_text {
            builtin_tools.push(catalog::hostile_tool());
        }
        builtin_tools.extend(options.named_tools.iter().map(|name| catalog::dynamic_tool(name)));
        if options.task_required_tool {
            builtin_tools.push(catalog::task_required_tool());
        }
        if options.header_tools {
            builtin_tools.extend(catalog::header_tools());
        }
        if options.tasks {
            builtin_tools.push(crate::tasks::research_tool());
        }
        if options.misbehave_tool {
            builtin_tools.push(catalog::misbehave_tool());
        }
        if let Some(depth) = options.nested_schema_depth {
            builtin_tools.push(catalog::nested_tool(depth));
        }
        let era = EraOptions {
            support: options.era,
            probe_answer: options.probe_answer,
            modern_version: options.modern_version.clone(),
            reject_first_modern: options.reject_first_modern_request,
        };
        let skills = options.skills.then(|| crate::skills::Skills::new(options.tamper_skill));
        let tasks = options
            .tasks
            .then(|| crate::tasks::Tasks::new(options.task_poll_ms, Arc::clone(&events)));
        Server {
            options,
            era,
            skills,
            tasks,
            events,
            builtin_tools,
            calls_answered: AtomicU64::new(0),
            resources: catalog::resources(),
            templates: catalog::resource_templates(),
            prompts: catalog::prompts(),
            request_states: Mutex::new(IssuedStates::default()),
            listeners: Arc::new(Listeners::for_server()),
            dynamic_tools: Arc::default(),
        }
    }
}

/// What the client declared it can do, from its initialize request.
#[derive(Debug, Default, Clone, Copy)]
#[allow(clippy::struct_excessive_bools)] // one flag per capability, as the protocol has them.
pub(crate) struct ClientCapabilities {
    pub(crate) elicitation: bool,
    pub(crate) sampling: bool,
    pub(crate) roots: bool,
}

/// The mutable part of a session.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    pub(crate) protocol_version: Option<String>,
    pub(crate) client: ClientCapabilities,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) subscriptions: HashSet<String>,
    /// The -32042 answers `url-elicit` gave in a row.
    pub(crate) url_elicitations: u32,
    /// The era the session's first request decided.
    pub(crate) era: Option<SessionEra>,
    /// A modern request was rejected under `--reject-first-modern-request`.
    pub(crate) rejected_modern: bool,
}

/// A client response to a server-to-client request.
type ClientAnswer = Result<Box<RawValue>, ErrorObject>;

/// An output of a background task, with the client request whose task emitted it.
#[derive(Debug)]
pub(crate) struct Emitted {
    /// The request whose tool call emitted this; `None` outside a tool call's task (the remote
    /// modes route by it; stdio has one stream).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) origin: Option<RequestId>,
    pub(crate) output: Output,
}

tokio::task_local! {
    /// The client request a tool call's task works for, so that its outputs can be routed with it.
    static ORIGIN: RequestId;
}

/// One MCP session: one client, its negotiated state, its in-flight work and its outbox.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) server: Arc<Server>,
    /// How the event log names this session (its transport session id), if it has a name.
    label: Option<String>,
    pub(crate) outbox: mpsc::Sender<Emitted>,
    pub(crate) state: Mutex<SessionState>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<ClientAnswer>>>,
    in_flight: Mutex<HashMap<RequestId, AbortHandle>>,
    next_client_request: AtomicU64,
    tool_calls_answered: AtomicU64,
    /// The session speaks the stateless era (read on every response without the state's lock).
    pub(crate) modern: std::sync::atomic::AtomicBool,
    /// The transport routed the session's one request already (a stateless HTTP POST).
    pub(crate) routed: bool,
    /// The live subscriptions it sends changes to: the connection's own, or (a stateless HTTP
    /// request's) the server's.
    pub(crate) listeners: Arc<Listeners>,
    /// The `mcp-*` headers of the HTTP request this session serves (names lowercase, values as
    /// sent): what a tool call sees of its transport (`headers_echo`). Empty elsewhere.
    pub(crate) http_headers: Map<String, Value>,
    /// The tools `trigger-list-changed` added: the connection's own, or (a stateless HTTP
    /// request's) the server's.
    pub(crate) dynamic_tools: Arc<Mutex<Vec<Value>>>,
}

/// Why a server-to-client request got no usable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientRequestError {
    /// The client did not declare the capability the request needs.
    #[error("the client did not declare the {capability} capability")]
    NotDeclared { capability: &'static str },
    /// Too many requests to the client are waiting.
    #[error("{limit} requests to the client are already waiting for an answer")]
    TooMany { limit: usize },
    /// No answer in time.
    #[error("the client did not answer {method} within {ms} ms")]
    Timeout { method: &'static str, ms: u64 },
    /// The client answered with an error.
    #[error("the client answered {method} with an error: {error}")]
    Refused { method: &'static str, error: ErrorObject },
    /// The session ended first.
    #[error("the session closed before the client answered {method}")]
    Closed { method: &'static str },
}

/// Locks `mutex`, ignoring poisoning (a panicked holder leaves consistent maps behind).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Serializes `value` as a raw JSON result.
pub(crate) fn raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot serialize the result: {e}")))
}

/// Parses the params of `method`, naming the method in the error.
pub(crate) fn parse_params<'a, T: Deserialize<'a>>(method: &str, params: &'a str) -> Result<T, ErrorObject> {
    serde_json::from_str(params)
        .map_err(|e| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("invalid params for {method}: {e}")))
}

/// A notification line.
pub(crate) fn notification_line(method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut line = Vec::with_capacity(128);
    plexus_jsonrpc::encode_notification(&mut line, method, params).expect("a JSON value always serializes");
    line
}

/// The JSON-RPC error response (id `null`, ending with a newline) to a message that could not be
/// decoded: a parse error for bytes that are not JSON, an invalid request otherwise.
pub(crate) fn frame_error_line(error: &FrameError) -> Vec<u8> {
    let code = match error {
        FrameError::Decode(
            plexus_jsonrpc::DecodeError::InvalidJson { .. } | plexus_jsonrpc::DecodeError::InvalidUtf8 { .. },
        ) => ErrorCode::PARSE_ERROR,
        _ => ErrorCode::INVALID_REQUEST,
    };
    let mut line = Vec::with_capacity(160);
    Message::Response(Response::error(
        None,
        ErrorObject::new(code, plexus_jsonrpc::error_chain(error)),
    ))
    .encode_line(&mut line);
    line
}

fn raw_to_value(raw: Option<&RawValue>) -> Value {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

/// What `server` offers, in its initialize result (of a session at `legacy_version`) and its
/// `server/discover` result (`None`).
fn capabilities(server: &Server, legacy_version: Option<&str>) -> Value {
    let mut capabilities = json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {},
        "completions": {},
    });
    if server.skills.is_some() {
        capabilities["extensions"] = json!({plexus_protocol::skills::SKILLS_EXTENSION: {"directoryRead": true}});
    }
    if server.tasks.is_some() {
        crate::tasks::declare(&mut capabilities, legacy_version);
    }
    capabilities
}

/// The caching fields a modern result of `method` carries (none but for lists and reads).
fn cache_fields(method: &str) -> &'static str {
    match method {
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" | "resources/read" => {
            r#""ttlMs":0,"cacheScope":"public""#
        }
        _ => "",
    }
}

/// An empty result (`{}`).
pub(crate) fn empty() -> Result<Box<RawValue>, ErrorObject> {
    raw(&json!({}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    protocol_version: String,
    capabilities: Map<String, Value>,
    /// Required by the protocol; checked, not used.
    #[serde(rename = "clientInfo")]
    _client_info: ClientInfo,
}

#[derive(Deserialize)]
#[allow(dead_code)] // checked for presence; the server has no use for the values.
struct ClientInfo {
    name: String,
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledParams {
    request_id: RequestId,
}

impl Session {
    /// A session of `server` whose background outputs go to `outbox`; `label` names it in the
    /// event log.
    pub(crate) fn new(server: Arc<Server>, outbox: mpsc::Sender<Emitted>, label: Option<String>) -> Arc<Self> {
        Arc::new(Self::build(server, outbox, label, None, Map::new()))
    }

    /// The session of one stateless HTTP POST the transport already routed (checked its
    /// envelope and headers), whose `mcp-*` headers are `http_headers`.
    #[cfg(feature = "remote")]
    pub(crate) fn stateless(
        server: Arc<Server>,
        outbox: mpsc::Sender<Emitted>,
        http_headers: Map<String, Value>,
    ) -> Arc<Self> {
        Arc::new(Self::build(
            server,
            outbox,
            None,
            Some(SessionEra::Modern),
            http_headers,
        ))
    }

    /// A session whose era is `routed` already (a stateless request), or decided by its first
    /// request (`None`).
    fn build(
        server: Arc<Server>,
        outbox: mpsc::Sender<Emitted>,
        label: Option<String>,
        routed: Option<SessionEra>,
        http_headers: Map<String, Value>,
    ) -> Self {
        let (listeners, dynamic_tools) = match routed {
            Some(_) => (Arc::clone(&server.listeners), Arc::clone(&server.dynamic_tools)),
            None => (Arc::new(Listeners::for_connection()), Arc::default()),
        };
        Session {
            server,
            label,
            outbox,
            state: Mutex::new(SessionState {
                era: routed,
                ..SessionState::default()
            }),
            pending: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            next_client_request: AtomicU64::new(0),
            tool_calls_answered: AtomicU64::new(0),
            modern: std::sync::atomic::AtomicBool::new(routed == Some(SessionEra::Modern)),
            routed: routed.is_some(),
            listeners,
            http_headers,
            dynamic_tools,
        }
    }

    pub(crate) fn options(&self) -> &ServerOptions {
        &self.server.options
    }

    /// Records `event` in the event log, with the session's label when it has one.
    pub(crate) fn record(&self, mut event: Value) {
        if let (Some(label), Some(fields)) = (&self.label, event.as_object_mut()) {
            fields.insert("session".to_owned(), Value::String(label.clone()));
        }
        self.server.events.record(&event);
    }

    /// Ends all work in flight (tool calls, requests to the client): the session is over.
    #[cfg(feature = "remote")]
    pub(crate) fn abort_all(&self) {
        for (_, task) in lock(&self.in_flight).drain() {
            task.abort();
        }
        lock(&self.pending).clear();
    }

    /// Handles one decoded message: outputs that are ready now go to `out`, in order; later ones
    /// go through the outbox.
    pub(crate) fn handle(self: &Arc<Self>, message: Message, out: &mut Vec<Output>) {
        match message {
            Message::Request(request) => self.handle_request(request, out),
            Message::Notification(notification) => self.handle_notification(&notification),
            Message::Response(response) => self.handle_response(response),
        }
    }

    /// Answers a line that could not be decoded with a JSON-RPC error whose id is `null`.
    pub(crate) fn handle_frame_error(error: &FrameError, out: &mut Vec<Output>) {
        out.push(Output::Response(frame_error_line(error)));
    }

    fn handle_request(self: &Arc<Self>, request: Request, out: &mut Vec<Output>) {
        if self.server.events.enabled() {
            let params = raw_to_value(request.params.as_deref());
            // The W3C trace context a client carries in `_meta`, for the tests of propagation.
            if let Some(traceparent) = params.pointer("/_meta/traceparent") {
                let tracestate = params.pointer("/_meta/tracestate").cloned().unwrap_or(Value::Null);
                self.record(json!({"event": "trace-context", "id": request.id, "method": request.method, "traceparent": traceparent, "tracestate": tracestate}));
            }
            self.record(json!({"event": "request", "id": request.id, "method": request.method, "params": params}));
        }
        let params = request.params.as_deref().map_or("{}", RawValue::get);
        let method = &*request.method;
        let routing = if self.routed {
            Routing::Modern
        } else {
            self.route(method, params)
        };
        let modern = match routing {
            Routing::Legacy => false,
            Routing::Modern => true,
            Routing::Answer(outcome) => return self.respond(request.id, outcome, out),
            Routing::Ignore => return,
            Routing::Exit => {
                return out.push(Output::Exit {
                    code: 1,
                    reason: "exiting on a server/discover probe as asked (--probe-answer exit)".to_owned(),
                });
            }
        };
        let outcome = match method {
            "tools/call" if self.server.tasks.is_some() && crate::tasks::calls_research(params) => {
                return self.call_research(request.id, params, modern, out);
            }
            "tools/call" => return self.call_tool(request.id, params, out),
            task if task.starts_with("tasks/") && self.server.tasks.is_some() => {
                return self.task_request(request.id, task, params, modern, out);
            }
            "subscriptions/listen" if modern => return self.listen(request.id, params, out),
            "server/discover" if modern => raw(&self.server.era.discover(
                &capabilities(&self.server, None),
                &self.server_info(),
                catalog::INSTRUCTIONS,
            )),
            "initialize" => self.initialize(params, out),
            "ping" => empty(),
            "tools/list" => self.list_tools(params),
            "resources/list" => self.list(method, "resources", &self.server.resources, params),
            "resources/templates/list" => self.list(method, "resourceTemplates", &self.server.templates, params),
            "prompts/list" => self.list(method, "prompts", &self.server.prompts, params),
            "resources/read" => self.read_resource(params),
            "skills/list" => self.list_skills(),
            "skills/get" => self.get_skill(params),
            "resources/directory/read" => self.read_directory(params),
            "resources/subscribe" => self.subscribe(params, true),
            "resources/unsubscribe" => self.subscribe(params, false),
            "prompts/get" => Self::get_prompt(params),
            "completion/complete" => Self::complete(params),
            "logging/setLevel" => self.set_level(params),
            other => Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        };
        let outcome = match outcome {
            Ok(result) if modern && !cache_fields(method).is_empty() => {
                Ok(era::prepend_fields(&result, cache_fields(method)))
            }
            other => other,
        };
        match self.options().delays.iter().find(|(delayed, _)| delayed == method) {
            Some(&(_, ms)) => self.respond_later(request.id, outcome, Duration::from_millis(ms)),
            None => self.respond(request.id, outcome, out),
        }
    }

    /// Sends the response to `id` after `delay`, from a task of its own (`--delay`).
    fn respond_later(self: &Arc<Self>, id: RequestId, outcome: Result<Box<RawValue>, ErrorObject>, delay: Duration) {
        let session = Arc::clone(self);
        tokio::spawn(ORIGIN.scope(id.clone(), async move {
            tokio::time::sleep(delay).await;
            let mut outputs = Vec::with_capacity(2);
            session.respond(id, outcome, &mut outputs);
            for output in outputs {
                session.emit(output).await;
            }
        }));
    }

    /// How to treat a request of `method` with `params`, deciding the session's era if this is
    /// its first request.
    fn route(&self, method: &str, params: &str) -> Routing {
        let mut state = lock(&self.state);
        let SessionState {
            era, rejected_modern, ..
        } = &mut *state;
        let routing = self.server.era.route(era, rejected_modern, method, params);
        if *era == Some(SessionEra::Modern) {
            self.modern.store(true, Ordering::Relaxed);
        }
        routing
    }

    fn handle_notification(&self, notification: &Notification) {
        if self.server.events.enabled() {
            self.record(json!({"event": "notification", "method": notification.method, "params": raw_to_value(notification.params.as_deref())}));
        }
        if notification.method == "notifications/cancelled" {
            let params = notification.params.as_deref().map_or("{}", RawValue::get);
            if let Ok(CancelledParams { request_id }) = serde_json::from_str(params) {
                if let Some(task) = lock(&self.in_flight).remove(&request_id) {
                    task.abort();
                }
                self.end_listen(&request_id, Ending::Client);
            }
        }
    }

    fn handle_response(&self, response: Response) {
        if self.server.events.enabled() {
            let outcome = match &response.outcome {
                Ok(result) => json!({"result": raw_to_value(Some(result))}),
                Err(error) => json!({"error": {"code": error.code, "message": error.message}}),
            };
            self.record(json!({"event": "response", "id": response.id, "outcome": outcome}));
        }
        let waiter = response.id.as_ref().and_then(|id| lock(&self.pending).remove(id));
        match waiter {
            // The asker may have given up (timeout, cancellation) a moment ago.
            Some(waiter) => drop(waiter.send(response.outcome)),
            None => eprintln!(
                "plexus-testserver: a response for request id {} that is not waiting for one",
                response.id.map_or_else(|| "null".to_owned(), |id| id.to_string())
            ),
        }
    }

    /// Queues `outcome` as the response to `id` (after a garbage line with `--garbage-line`).
    pub(crate) fn respond(&self, id: RequestId, outcome: Result<Box<RawValue>, ErrorObject>, out: &mut Vec<Output>) {
        let outcome = match outcome {
            // A result that says its own type (`input_required`) keeps it.
            Ok(result) if self.is_modern() && !result.get().starts_with(r#"{"resultType""#) => {
                Ok(era::prepend_fields(&result, era::COMPLETE))
            }
            other => other,
        };
        if self.options().garbage_line {
            out.push(Output::Raw(GARBAGE_LINE.to_vec()));
        }
        let mut line = Vec::with_capacity(64 + outcome.as_ref().map_or(64, |r| r.get().len()));
        Message::Response(Response { id: Some(id), outcome }).encode_line(&mut line);
        out.push(Output::Response(line));
    }

    /// Like [`respond`](Self::respond) for a tools/call, then exits when `--crash-after` says so.
    pub(crate) fn respond_to_tool_call(
        &self,
        id: RequestId,
        outcome: Result<Box<RawValue>, ErrorObject>,
        out: &mut Vec<Output>,
    ) {
        self.respond(id, outcome, out);
        self.server.calls_answered.fetch_add(1, Ordering::Relaxed);
        let answered = self.tool_calls_answered.fetch_add(1, Ordering::Relaxed) + 1;
        if self.options().crash_after == Some(answered) {
            out.push(Output::Exit {
                code: 1,
                reason: format!("crashing after {answered} tool calls as asked (--crash-after)"),
            });
        }
    }

    /// Sends an output from a background task (in order with the task's other outputs), tagged
    /// with the request the task works for.
    pub(crate) async fn emit(&self, output: Output) {
        let origin = ORIGIN.try_with(Clone::clone).ok();
        // The receiver is gone only when the transport is shutting down: nothing left to tell.
        let _ = self.outbox.send(Emitted { origin, output }).await;
    }

    /// Runs the tools/call `id` on a task of its own; a `notifications/cancelled` for `id` aborts
    /// it (and no response is sent).
    pub(crate) fn spawn_tool_call<F>(self: &Arc<Self>, id: RequestId, work: F, out: &mut Vec<Output>)
    where
        F: Future<Output = Result<Box<RawValue>, ErrorObject>> + Send + 'static,
    {
        self.spawn_answer(id, work, true, out);
    }

    /// Like [`spawn_tool_call`](Self::spawn_tool_call) for a request that is no tool call
    /// (`tasks/result`): its answer does not count for `--crash-after`.
    pub(crate) fn spawn_request<F>(self: &Arc<Self>, id: RequestId, work: F, out: &mut Vec<Output>)
    where
        F: Future<Output = Result<Box<RawValue>, ErrorObject>> + Send + 'static,
    {
        self.spawn_answer(id, work, false, out);
    }

    fn spawn_answer<F>(self: &Arc<Self>, id: RequestId, work: F, tool_call: bool, out: &mut Vec<Output>)
    where
        F: Future<Output = Result<Box<RawValue>, ErrorObject>> + Send + 'static,
    {
        let respond =
            move |session: &Self, id: RequestId, outcome: Result<Box<RawValue>, ErrorObject>, out: &mut Vec<Output>| {
                if tool_call {
                    session.respond_to_tool_call(id, outcome, out);
                } else {
                    session.respond(id, outcome, out);
                }
            };
        let mut in_flight = lock(&self.in_flight);
        if in_flight.len() >= MAX_IN_FLIGHT {
            drop(in_flight);
            let error = ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("{MAX_IN_FLIGHT} requests are already running; try again later"),
            );
            return respond(self, id, Err(error), out);
        }
        let session = Arc::clone(self);
        let task_id = id.clone();
        let task = tokio::spawn(ORIGIN.scope(id.clone(), async move {
            let outcome = work.await;
            lock(&session.in_flight).remove(&task_id);
            let mut outputs = Vec::with_capacity(2);
            respond(&session, task_id, outcome, &mut outputs);
            for output in outputs {
                session.emit(output).await;
            }
        }));
        in_flight.insert(id, task.abort_handle());
    }

    /// Sends `method` to the client and waits (at most `--client-timeout-ms`) for its result,
    /// unless the client did not declare the capability that `method` needs.
    pub(crate) async fn ask_client(
        &self,
        method: &'static str,
        params: &Value,
    ) -> Result<Box<RawValue>, ClientRequestError> {
        let client = lock(&self.state).client;
        let (capability, declared) = match method {
            "elicitation/create" => ("elicitation", client.elicitation),
            "sampling/createMessage" => ("sampling", client.sampling),
            "roots/list" => ("roots", client.roots),
            _ => ("", true),
        };
        if !declared {
            return Err(ClientRequestError::NotDeclared { capability });
        }
        let id = RequestId::String(format!(
            "s-{}",
            self.next_client_request.fetch_add(1, Ordering::Relaxed) + 1
        ));
        let (answer_tx, answer_rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.len() >= MAX_PENDING_CLIENT_REQUESTS {
                return Err(ClientRequestError::TooMany {
                    limit: MAX_PENDING_CLIENT_REQUESTS,
                });
            }
            pending.insert(id.clone(), answer_tx);
        }
        // Forgets the request however this future ends (answer, timeout, cancellation).
        let _forget = PendingGuard { session: self, id: &id };
        let mut line = Vec::with_capacity(256);
        plexus_jsonrpc::encode_request(&mut line, &id, method, Some(params)).expect("a JSON value always serializes");
        self.emit(Output::Message(line)).await;
        let ms = self.options().client_timeout_ms;
        match tokio::time::timeout(Duration::from_millis(ms), answer_rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(ClientRequestError::Refused { method, error }),
            Ok(Err(_)) => Err(ClientRequestError::Closed { method }),
            Err(_) => Err(ClientRequestError::Timeout { method, ms }),
        }
    }

    fn initialize(&self, params: &str, out: &mut Vec<Output>) -> Result<Box<RawValue>, ErrorObject> {
        let params: InitializeParams = parse_params("initialize", params)?;
        let version = match &self.options().protocol_version {
            Some(forced) => forced.clone(),
            None if SUPPORTED_PROTOCOL_VERSIONS.contains(&params.protocol_version.as_str()) => params.protocol_version,
            None => LATEST_PROTOCOL_VERSION.to_owned(),
        };
        {
            let mut state = lock(&self.state);
            state.protocol_version = Some(version.clone());
            state.client = ClientCapabilities {
                elicitation: params.capabilities.contains_key("elicitation"),
                sampling: params.capabilities.contains_key("sampling"),
                roots: params.capabilities.contains_key("roots"),
            };
        }
        if self.options().notify_before_init {
            let message = json!({"level": "info", "logger": "plexus-testserver", "data": "this notification comes before the initialize result (--notify-before-init)"});
            out.push(Output::Message(notification_line(
                "notifications/message",
                Some(&message),
            )));
        }
        raw(&json!({
            "protocolVersion": version,
            "capabilities": capabilities(&self.server, Some(&version)),
            "serverInfo": self.server_info(),
            "instructions": catalog::INSTRUCTIONS,
        }))
    }

    /// The `serverInfo` of the initialize result (with escape sequences under `--hostile-text`).
    fn server_info(&self) -> Value {
        let hostile = if self.options().hostile_text {
            catalog::HOSTILE
        } else {
            ""
        };
        json!({
            "name": format!("plexus-testserver{hostile}"),
            "title": "plexus test server",
            "version": format!("{}{hostile}", env!("CARGO_PKG_VERSION")),
        })
    }
}

/// Removes a server-to-client request from the pending map when its asker stops waiting.
struct PendingGuard<'a> {
    session: &'a Session,
    id: &'a RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.session.pending).remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_order_by_severity() {
        let level: LogLevel = serde_json::from_str("\"warning\"").unwrap();
        assert!(LogLevel::Debug < level && level < LogLevel::Emergency);
        assert!(serde_json::from_str::<LogLevel>("\"loud\"").is_err());
    }
}
