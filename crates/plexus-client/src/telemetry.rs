//! OpenTelemetry in the MCP semantic conventions (feature `otel`): a span for every request a
//! session sends (kind `client`) or a server serves (kind `server`), named `{mcp.method.name}
//! {target}`, through `tracing` (exported by `tracing-opentelemetry`'s layer: its `otel.name`,
//! `otel.kind` and `otel.status_*` fields make the span's name, kind and status); the W3C trace
//! context of a client span in the request's `params._meta`; and the duration histograms
//! ([`install_metrics`]).
//!
//! The spans' attributes: `mcp.method.name`, `mcp.protocol.version`, `mcp.session.id` (an
//! `initialize`-era session's id, never one of the stateless era), `mcp.resource.uri`,
//! `jsonrpc.request.id`, `rpc.response.status_code` (a JSON-RPC error's code), `error.type`
//! (the JSON-RPC error's code; `tool_error` for a tool result with `isError`; otherwise the
//! kind of failure, see [`error_type`]), `gen_ai.tool.name`, `gen_ai.prompt.name`,
//! `gen_ai.operation.name` (`execute_tool` for `tools/call`), `network.transport` (`pipe`,
//! `tcp`), `network.protocol.name` (`http`, `websocket`), `server.address` and `server.port`.
//! The target of a span's name is the tool's or the prompt's name; a resource's URI is an
//! attribute only (the conventions keep it out of names by default).
//!
//! Nothing is computed for a request unless a `tracing` subscriber wants the span (target
//! [`SPAN_TARGET`], level `INFO`) or the histograms are installed.

mod context;
mod metrics;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanContext, TraceContextExt};
use plexus_jsonrpc::RequestId;
use plexus_protocol::methods;
use plexus_transport::Peer;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub(crate) use context::{ParamsFacts, meta_entries};
pub use context::{TRACEPARENT, TRACESTATE, format_traceparent, parse_traceparent};
pub use metrics::{
    CLIENT_OPERATION_DURATION, CLIENT_SESSION_DURATION, DURATION_BUCKETS, SERVER_OPERATION_DURATION,
    SERVER_SESSION_DURATION, install_metrics, remove_metrics,
};
use metrics::{Instruments, instruments};

use crate::ClientError;

/// The `tracing` target of the MCP spans (what an exporting layer's filter lets through).
pub const SPAN_TARGET: &str = "plexus::mcp";

/// The attribute names of the MCP semantic conventions.
pub mod attributes {
    /// The request's method.
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    /// The protocol version of the session.
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// The session's id (the `initialize` era's, over Streamable HTTP).
    pub const MCP_SESSION_ID: &str = "mcp.session.id";
    /// The resource's URI (`resources/read`, `resources/subscribe`, `resources/unsubscribe`).
    pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
    /// The request's JSON-RPC id, as a string.
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    /// The JSON-RPC error code of the response, as a string.
    pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
    /// The class of error the operation ended with.
    pub const ERROR_TYPE: &str = "error.type";
    /// The tool's name (`tools/call`).
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    /// The prompt's name (`prompts/get`).
    pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// `execute_tool` for `tools/call`.
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    /// `pipe` (stdio) or `tcp`.
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    /// `http` or `websocket`.
    pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
    /// The server's host name or address (client side).
    pub const SERVER_ADDRESS: &str = "server.address";
    /// The server's port (client side).
    pub const SERVER_PORT: &str = "server.port";
}

use attributes as attr;

/// `error.type` of a tool result with `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";
/// `gen_ai.operation.name` of `tools/call`.
pub const EXECUTE_TOOL: &str = "execute_tool";

/// What telemetry knows of the connection an operation goes over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    /// `mcp.protocol.version`, once negotiated.
    pub protocol_version: Option<&'static str>,
    /// `mcp.session.id`: an `initialize`-era session's id (never one of the stateless era).
    pub session_id: Option<String>,
    /// `network.transport`: `pipe` or `tcp`.
    pub network_transport: Option<&'static str>,
    /// `network.protocol.name`: `http` or `websocket`.
    pub network_protocol: Option<&'static str>,
    /// `server.address` and `server.port` (client side).
    pub server: Option<(String, u16)>,
}

impl Connection {
    /// What `peer` says: its transport, protocol, and (over TCP) the server's address and port.
    pub fn of_peer(peer: &Peer) -> Connection {
        let mut connection = Connection {
            network_transport: peer.network_transport(),
            ..Connection::default()
        };
        if let Peer::Tcp { protocol, host, port } = peer {
            connection.network_protocol = Some(protocol);
            connection.server = Some((host.clone(), *port));
        }
        connection
    }

    /// The attributes of the histograms that describe the connection.
    fn metric_attributes(&self, into: &mut Vec<KeyValue>) {
        if let Some(version) = self.protocol_version {
            into.push(KeyValue::new(attr::MCP_PROTOCOL_VERSION, version));
        }
        if let Some(transport) = self.network_transport {
            into.push(KeyValue::new(attr::NETWORK_TRANSPORT, transport));
        }
        if let Some(protocol) = self.network_protocol {
            into.push(KeyValue::new(attr::NETWORK_PROTOCOL_NAME, protocol));
        }
        if let Some((address, port)) = &self.server {
            into.push(KeyValue::new(attr::SERVER_ADDRESS, address.clone()));
            into.push(KeyValue::new(attr::SERVER_PORT, i64::from(*port)));
        }
    }
}

/// Which side of a request an operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

/// How an operation ended.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    /// With this result (JSON text): a `tools/call` result with `isError: true` is a
    /// `tool_error`.
    Result(&'a str),
    /// With a JSON-RPC error response.
    RpcError {
        /// Its code.
        code: i64,
        /// Its message (the span's status description).
        message: &'a str,
    },
    /// With this JSON-RPC response (a whole message, as a server writes it): its result or its
    /// error, read as [`Result`](Self::Result) or [`RpcError`](Self::RpcError).
    Response(&'a [u8]),
    /// Without a response: `kind` is the `error.type` (see [`error_type`]).
    Failed {
        /// The `error.type`.
        kind: &'a str,
        /// What happened (the span's status description).
        message: &'a str,
    },
}

/// One request in flight, client or server side: its span (when a subscriber wants it) and
/// what its duration is recorded with (when the histograms are installed). Ended with
/// [`finish`](Self::finish); dropped unfinished, it ends as `error.type` `cancelled`.
pub struct Operation {
    span: tracing::Span,
    side: Side,
    started: Instant,
    method: String,
    tool: Option<String>,
    prompt: Option<String>,
    connection: Connection,
    instruments: Option<Arc<Instruments>>,
    /// The caller's own `_meta.traceparent`: the request keeps it.
    explicit_parent: bool,
    finished: bool,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("side", &self.side)
            .field("method", &self.method)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

/// Creates the span of one operation; `$parent` is `parent: None` for a server span (its parent
/// comes from the request), nothing for a client span (the current span is its parent).
macro_rules! operation_span {
    ($name:literal, $kind:literal, [$($parent:tt)*], $span_name:expr, $method:expr, $id:expr, $facts:expr, $tool:expr, $prompt:expr, $connection:expr) => {
        tracing::info_span!(
            target: "plexus::mcp",
            $($parent)*
            $name,
            otel.name = %$span_name,
            otel.kind = $kind,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
            mcp.method.name = $method,
            mcp.protocol.version = $connection.protocol_version,
            mcp.session.id = $connection.session_id.as_deref(),
            mcp.resource.uri = $facts.uri.as_deref(),
            jsonrpc.request.id = %$id,
            rpc.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            gen_ai.tool.name = $tool,
            gen_ai.prompt.name = $prompt,
            gen_ai.operation.name = ($method == methods::TOOLS_CALL).then_some(EXECUTE_TOOL),
            network.transport = $connection.network_transport,
            network.protocol.name = $connection.network_protocol,
            server.address = $connection.server.as_ref().map(|(address, _)| address.as_str()),
            server.port = $connection.server.as_ref().map(|(_, port)| u64::from(*port)),
        )
    };
}

/// A request id as `jsonrpc.request.id` writes it (a string id without quotes).
struct IdText<'a>(&'a RequestId);

impl std::fmt::Display for IdText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => f.write_str(s),
        }
    }
}

impl Operation {
    /// The operation of request `id` (`method`, with `params` as JSON text) that this side
    /// sends; `None` when nothing wants it (no subscriber for its span, no histograms), and
    /// then nothing was computed (`params` and `connection` are not called).
    pub fn client<'p>(
        method: &str,
        id: &RequestId,
        params: impl FnOnce() -> Option<&'p str>,
        connection: impl FnOnce() -> Connection,
    ) -> Option<Operation> {
        Operation::start(Side::Client, method, id, params, connection)
    }

    /// The operation of request `id` (`method`, with `params` as JSON text) that this side
    /// serves: its span's parent is the trace context of the request's `params._meta`, when it
    /// has a valid one (else the span starts a trace). `None` when nothing wants it.
    pub fn server<'p>(
        method: &str,
        id: &RequestId,
        params: impl FnOnce() -> Option<&'p str>,
        connection: impl FnOnce() -> Connection,
    ) -> Option<Operation> {
        Operation::start(Side::Server, method, id, params, connection)
    }

    fn start<'p>(
        side: Side,
        method: &str,
        id: &RequestId,
        params: impl FnOnce() -> Option<&'p str>,
        connection: impl FnOnce() -> Connection,
    ) -> Option<Operation> {
        let traced = tracing::span_enabled!(target: "plexus::mcp", tracing::Level::INFO);
        let instruments = instruments();
        if !traced && instruments.is_none() {
            return None;
        }
        let facts = ParamsFacts::read(params());
        let connection = connection();
        let tool = (method == methods::TOOLS_CALL)
            .then_some(facts.name.as_deref())
            .flatten();
        let prompt = (method == methods::PROMPTS_GET)
            .then_some(facts.name.as_deref())
            .flatten();
        let name = match tool.or(prompt) {
            Some(target) => format!("{method} {target}"),
            None => method.to_owned(),
        };
        let id = IdText(id);
        let span = if !traced {
            tracing::Span::none()
        } else if side == Side::Client {
            operation_span!(
                "mcp.client",
                "client",
                [],
                name,
                method,
                id,
                facts,
                tool,
                prompt,
                connection
            )
        } else {
            let span = operation_span!("mcp.server", "server", [parent: None,], name, method, id, facts, tool, prompt, connection);
            if let Some(parent) = facts.parent() {
                let parent = opentelemetry::Context::new().with_remote_span_context(parent);
                let _ = span.set_parent(parent);
            }
            span
        };
        let explicit_parent = facts.meta.as_ref().is_some_and(|meta| meta.traceparent.is_some());
        Some(Operation {
            span,
            side,
            started: Instant::now(),
            method: method.to_owned(),
            tool: tool.map(str::to_owned),
            prompt: prompt.map(str::to_owned),
            connection,
            instruments,
            explicit_parent,
            finished: false,
        })
    }

    /// Its span (disabled when no subscriber wants it): what the work of a served request runs
    /// in, so that the requests it sends on are its children.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Its span's OpenTelemetry context (invalid when no OpenTelemetry layer records it).
    pub fn span_context(&self) -> SpanContext {
        self.span.context().span().span_context().clone()
    }

    /// The `_meta` entries that carry its span's trace context to the server (JSON text without
    /// braces), unless the caller's params name a `traceparent` of their own or there is no
    /// valid context.
    pub(crate) fn trace_meta(&self) -> Option<String> {
        if self.explicit_parent || self.span.is_disabled() {
            return None;
        }
        meta_entries(&self.span_context())
    }

    /// Ends the operation with `outcome`: the span's error attributes and status, and its
    /// duration in the operation histogram.
    pub fn finish(mut self, outcome: Outcome<'_>) {
        self.end(outcome);
    }

    fn end(&mut self, outcome: Outcome<'_>) {
        if let Outcome::Response(line) = outcome {
            return self.end_with_response(line);
        }
        self.finished = true;
        let elapsed = self.started.elapsed().as_secs_f64();
        let (error, code, message): (Option<Cow<'_, str>>, Option<String>, Option<&str>) = match outcome {
            Outcome::Result(result) if self.method == methods::TOOLS_CALL && is_tool_error(result) => {
                (Some(Cow::Borrowed(TOOL_ERROR)), None, None)
            }
            // A whole response was read as one of the others (`end_with_response`).
            Outcome::Result(_) | Outcome::Response(_) => (None, None, None),
            Outcome::RpcError { code, message } => {
                let code = code.to_string();
                (Some(Cow::Owned(code.clone())), Some(code), Some(message))
            }
            Outcome::Failed { kind, message } => (Some(Cow::Borrowed(kind)), None, Some(message)),
        };
        if let Some(error) = &error {
            self.span.record(attr::ERROR_TYPE, error.as_ref());
            if let Some(code) = &code {
                self.span.record(attr::RPC_RESPONSE_STATUS_CODE, code.as_str());
            }
            self.span.record("otel.status_code", "error");
            self.span
                .record("otel.status_description", message.unwrap_or(error.as_ref()));
        }
        let Some(instruments) = &self.instruments else {
            return;
        };
        let mut attributes = Vec::with_capacity(10);
        attributes.push(KeyValue::new(attr::MCP_METHOD_NAME, self.method.clone()));
        if let Some(error) = error {
            attributes.push(KeyValue::new(attr::ERROR_TYPE, error.into_owned()));
        }
        if let Some(code) = code {
            attributes.push(KeyValue::new(attr::RPC_RESPONSE_STATUS_CODE, code));
        }
        if let Some(tool) = &self.tool {
            attributes.push(KeyValue::new(attr::GEN_AI_TOOL_NAME, tool.clone()));
            attributes.push(KeyValue::new(attr::GEN_AI_OPERATION_NAME, EXECUTE_TOOL));
        }
        if let Some(prompt) = &self.prompt {
            attributes.push(KeyValue::new(attr::GEN_AI_PROMPT_NAME, prompt.clone()));
        }
        self.connection.metric_attributes(&mut attributes);
        let histogram = match self.side {
            Side::Client => &instruments.client_operation,
            Side::Server => &instruments.server_operation,
        };
        histogram.record(elapsed, &attributes);
    }
}

impl Operation {
    /// [`end`](Self::end) with a whole response message.
    fn end_with_response(&mut self, line: &[u8]) {
        #[derive(serde::Deserialize)]
        struct ErrorFacts<'a> {
            code: i64,
            #[serde(borrow)]
            message: Cow<'a, str>,
        }
        #[derive(serde::Deserialize)]
        struct ResponseFacts<'a> {
            #[serde(borrow, default)]
            result: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow, default)]
            error: Option<ErrorFacts<'a>>,
        }
        match serde_json::from_slice::<ResponseFacts<'_>>(line) {
            Ok(ResponseFacts { error: Some(error), .. }) => self.end(Outcome::RpcError {
                code: error.code,
                message: &error.message,
            }),
            Ok(ResponseFacts {
                result: Some(result), ..
            }) => self.end(Outcome::Result(result.get())),
            _ => self.end(Outcome::Result("{}")),
        }
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        if !self.finished {
            self.end(Outcome::Failed {
                kind: "cancelled",
                message: "the request was abandoned before its response",
            });
        }
    }
}

/// Whether a `tools/call` result (JSON text) says `isError: true`.
fn is_tool_error(result: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: Option<serde_json::Value>,
    }
    serde_json::from_str::<Flag>(result).is_ok_and(|flag| flag.is_error == Some(serde_json::Value::Bool(true)))
}

/// A session's life, for `mcp.{client,server}.session.duration`: recorded once, when it ends.
#[derive(Debug)]
pub struct SessionClock {
    started: Instant,
    recorded: std::sync::atomic::AtomicBool,
    server: bool,
}

impl SessionClock {
    /// The clock of a session that starts now, on the client side.
    pub fn client() -> SessionClock {
        SessionClock::new(false)
    }

    /// The clock of a session that starts now, on the server side.
    pub fn server() -> SessionClock {
        SessionClock::new(true)
    }

    fn new(server: bool) -> SessionClock {
        SessionClock {
            started: Instant::now(),
            recorded: std::sync::atomic::AtomicBool::new(false),
            server,
        }
    }

    /// Records the session's duration (once; later calls do nothing) with what `connection`
    /// says, and `error` as its `error.type` when it ended with one. Nothing is done while the
    /// histograms are not installed.
    pub fn end(&self, connection: impl FnOnce() -> Connection, error: Option<&str>) {
        if self.recorded.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let Some(instruments) = instruments() else {
            return;
        };
        let mut attributes = Vec::with_capacity(6);
        connection().metric_attributes(&mut attributes);
        if self.server {
            attributes.retain(|kv| kv.key.as_str() != attr::SERVER_ADDRESS && kv.key.as_str() != attr::SERVER_PORT);
        }
        if let Some(error) = error {
            attributes.push(KeyValue::new(attr::ERROR_TYPE, error.to_owned()));
        }
        let histogram = if self.server {
            &instruments.server_session
        } else {
            &instruments.client_session
        };
        histogram.record(self.started.elapsed().as_secs_f64(), &attributes);
    }
}

/// The `error.type` of a request that failed with `error`: the JSON-RPC error's code; else a
/// low-cardinality name of the failure: `timeout`, `cancelled`, `session_closed`,
/// `invalid_params`, `invalid_result`, `negotiation`, `pagination`, `unknown_result_type`,
/// `input_request`, `input_rounds`, `probe_closed`, `task`, `tasks_unsupported`, or the
/// transport's failure class (`terminal_io`, `closed`, `too_large`, `protocol`, `connect`,
/// `needs_auth`, `session_expired`).
pub fn error_type(error: &ClientError) -> Cow<'static, str> {
    use plexus_transport::ErrorClass;
    Cow::Borrowed(match error {
        ClientError::Rpc { error, .. } => return Cow::Owned(i64::from(error.code).to_string()),
        ClientError::Transport(error) => match error.class() {
            ErrorClass::TerminalIo => "terminal_io",
            ErrorClass::Closed => "closed",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Connect => "connect",
            ErrorClass::NeedsAuth => "needs_auth",
            ErrorClass::SessionExpired => "session_expired",
        },
        ClientError::Timeout { .. } => "timeout",
        ClientError::InvalidResult { .. } => "invalid_result",
        ClientError::Negotiation(_) => "negotiation",
        ClientError::Pagination { .. } => "pagination",
        ClientError::InvalidParams { .. } => "invalid_params",
        ClientError::SessionClosed => "session_closed",
        ClientError::UnknownResultType { .. } => "unknown_result_type",
        ClientError::InputRequest { .. } => "input_request",
        ClientError::InputRounds { .. } => "input_rounds",
        ClientError::ProbeClosed { .. } => "probe_closed",
        ClientError::Task { .. } => "task",
        ClientError::TasksUnsupported { .. } => "tasks_unsupported",
        ClientError::Cancelled { .. } => "cancelled",
    })
}

/// Ends `operation` with how a client request ended.
pub(crate) fn finish_client(operation: Operation, result: &Result<Box<plexus_jsonrpc::RawValue>, ClientError>) {
    match result {
        Ok(raw) => operation.finish(Outcome::Result(raw.get())),
        Err(ClientError::Rpc { error, .. }) => operation.finish(Outcome::RpcError {
            code: error.code.into(),
            message: &error.message,
        }),
        Err(error) => {
            let kind = error_type(error);
            let message = error.to_string();
            operation.finish(Outcome::Failed {
                kind: &kind,
                message: &message,
            });
        }
    }
}

/// What a session keeps for telemetry: its peer and protocol version once known, and its clock.
#[derive(Debug)]
pub(crate) struct SessionTelemetry {
    peer: std::sync::OnceLock<Peer>,
    version: std::sync::OnceLock<&'static str>,
    clock: SessionClock,
}

impl SessionTelemetry {
    pub(crate) fn new() -> SessionTelemetry {
        SessionTelemetry {
            peer: std::sync::OnceLock::new(),
            version: std::sync::OnceLock::new(),
            clock: SessionClock::client(),
        }
    }

    /// The transport's peer (set once, before the session's first request).
    pub(crate) fn set_peer(&self, peer: Peer) {
        let _ = self.peer.set(peer);
    }

    /// The negotiated protocol version.
    pub(crate) fn set_version(&self, version: &'static str) {
        let _ = self.version.set(version);
    }

    /// The connection of session `shared`: its peer, version, and in the `initialize` era the
    /// transport's session id.
    pub(crate) fn connection(&self, shared: &crate::session::Shared) -> Connection {
        let mut connection = self.peer.get().map(Connection::of_peer).unwrap_or_default();
        connection.protocol_version = self.version.get().copied();
        if shared.stateless().is_none() {
            connection.session_id = shared.sender.session_id();
        }
        connection
    }

    /// The session ended with `reason`: its duration is recorded (once).
    pub(crate) fn ended(&self, shared: &crate::session::Shared, reason: &ClientError) {
        let error = match reason {
            ClientError::SessionClosed => None,
            other => Some(error_type(other)),
        };
        self.clock.end(|| self.connection(shared), error.as_deref());
    }
}
