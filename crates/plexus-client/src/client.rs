//! The session handle: connect (initialize and negotiate), typed calls, close.

use std::sync::Arc;
use std::time::Duration;

use plexus_jsonrpc::RawValue;
use plexus_protocol::version::ProtocolVersion;
use plexus_protocol::{
    CallToolResult, CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, LoggingLevel, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, ServerCapabilities, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams, methods,
};
use plexus_transport::Transport;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

use crate::ClientError;
use crate::era::{EraChoice, EraSource};
use crate::handler::{ClientHandler, NoHandler};
use crate::notifications::ServerNotification;
use crate::request::{RequestOptions, request};
use crate::rounds::Answered;
use crate::session::Shared;
use crate::wire::StatelessWire;

/// The default timeout of a request other than `initialize` and `tools/call`: 60 s, or
/// `PLEXUS_REQUEST_TIMEOUT` (ms).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The default timeout of `tools/call`: 60 s, or `MCP_TOOL_TIMEOUT` (ms).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default timeout of `initialize` (the connect timeout): 30 s, or `MCP_TIMEOUT` (ms).
pub const DEFAULT_INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);
/// A paginated list stops with an error after this many pages.
pub const MAX_LIST_PAGES: usize = 1000;
/// By default, a paginated list stops with an error when its pages add up to more than this many
/// bytes of JSON (64 MiB): what one list may hold in memory ([`ClientOptions::max_list_bytes`]).
pub const MAX_LIST_BYTES: usize = 64 * 1024 * 1024;

/// How a session is set up.
#[derive(Clone)]
pub struct ClientOptions {
    /// The server's name, used in logs and errors.
    pub name: String,
    /// What the client says it is in `initialize`.
    pub client_info: Implementation,
    /// The protocol version offered (the newest by default).
    pub protocol_version: ProtocolVersion,
    /// The timeout of `initialize`.
    pub initialize_timeout: Duration,
    /// The default timeout of every other request.
    pub request_timeout: Duration,
    /// The default timeout of `tools/call` (`MCP_TOOL_TIMEOUT`).
    pub tool_timeout: Duration,
    /// Answers the server's requests; its capabilities are declared in `initialize`.
    pub handler: Arc<dyn ClientHandler>,
    /// The most bytes of JSON the pages of one paginated list may add up to (default
    /// [`MAX_LIST_BYTES`]).
    pub max_list_bytes: usize,
    /// Told how every request of the session ended (a connection pool counts terminal I/O
    /// failures with it); none by default.
    pub observer: Option<Arc<dyn RequestObserver>>,
    /// Which protocol era to speak, or how to choose it (default: a `server/discover` probe,
    /// [`EraChoice::PROBE`]).
    pub era: EraChoice,
}

/// Watches how a session's requests end, for whoever owns the connection's life (a pool that
/// closes a connection after repeated I/O failures). Called in the caller's task as each request
/// ends, so it must be quick and must not block.
pub trait RequestObserver: Send + Sync + 'static {
    /// The request `method` of the session with server `server` ended: with a reply (`Ok`, a
    /// JSON-RPC error reply included, as [`ClientError::Rpc`]) or with an error.
    fn request_ended(&self, server: &str, method: &str, outcome: Result<(), &ClientError>);
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("name", &self.name)
            .field("client_info", &self.client_info)
            .field("protocol_version", &self.protocol_version)
            .field("initialize_timeout", &self.initialize_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("tool_timeout", &self.tool_timeout)
            .field("max_list_bytes", &self.max_list_bytes)
            .field("observer", &self.observer.is_some())
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl ClientOptions {
    /// Defaults for a server called `name`: plexus's client info, the newest protocol version,
    /// 30 s to initialize, 60 s per request, no server-request handler.
    pub fn new(name: impl Into<String>) -> Self {
        ClientOptions {
            name: name.into(),
            client_info: Implementation::new("plexus", env!("CARGO_PKG_VERSION")),
            protocol_version: ProtocolVersion::LATEST,
            initialize_timeout: DEFAULT_INITIALIZE_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            handler: Arc::new(NoHandler),
            max_list_bytes: MAX_LIST_BYTES,
            observer: None,
            era: EraChoice::default(),
        }
    }

    /// Like [`new`](Self::new), reading from the environment `MCP_TIMEOUT` (the connect and
    /// initialize timeout, ms), `MCP_TOOL_TIMEOUT` (the `tools/call` timeout, ms) and
    /// `PLEXUS_REQUEST_TIMEOUT` (every other request's, ms). Values that are not positive integers
    /// are ignored with a warning.
    pub fn from_env(name: impl Into<String>) -> Self {
        Self::from_lookup(name, |var| std::env::var(var).ok())
    }

    /// Like [`from_env`](Self::from_env), looking the variables up with `lookup` (a host's own
    /// environment).
    pub fn from_lookup(name: impl Into<String>, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut options = Self::new(name);
        let millis = |var: &str| env_millis(var, lookup(var));
        if let Some(t) = millis("MCP_TIMEOUT") {
            options.initialize_timeout = t;
        }
        if let Some(t) = millis("PLEXUS_REQUEST_TIMEOUT") {
            options.request_timeout = t;
        }
        if let Some(t) = millis("MCP_TOOL_TIMEOUT") {
            options.tool_timeout = t;
        }
        options
    }

    /// Sets the handler of server requests.
    #[must_use]
    pub fn handler(mut self, handler: Arc<dyn ClientHandler>) -> Self {
        self.handler = handler;
        self
    }
}

fn env_millis(var: &str, value: Option<String>) -> Option<Duration> {
    let value = value?;
    match value.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Some(Duration::from_millis(ms)),
        _ => {
            tracing::warn!("ignoring {var}={value:?}: expected a positive number of milliseconds");
            None
        }
    }
}

/// What the server said about itself in `initialize`.
#[derive(Debug, Clone)]
pub struct ServerDetails {
    /// The negotiated protocol version.
    pub protocol_version: ProtocolVersion,
    /// The server's name and version.
    pub server_info: Implementation,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server's instructions for the model, if any.
    pub instructions: Option<String>,
    /// How the era (and with it the version) was chosen.
    pub era_source: EraSource,
}

/// One MCP session. Cheap to clone; every clone is the same session. Dropping the last clone
/// ends the session and its transport (for a child process, with the same shutdown as
/// [`close`](Self::close), in the background).
#[derive(Clone)]
pub struct Client {
    pub(crate) shared: Arc<Shared>,
    /// Ends the session's background work (its subscriptions) when the last handle goes.
    _background: Arc<Background>,
    details: Arc<ServerDetails>,
    pub(crate) request_timeout: Duration,
    tool_timeout: Duration,
    pub(crate) max_list_bytes: usize,
}

/// A session's background work that needs the session (its subscriptions), ended when the last
/// [`Client`] handle is dropped: the session itself ends then too.
struct Background {
    shared: std::sync::Weak<Shared>,
}

impl Background {
    fn start(shared: &Arc<Shared>, details: &ServerDetails) -> Background {
        crate::listen::Listening::start(shared, &details.capabilities);
        Background {
            shared: Arc::downgrade(shared),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade()
            && let Some(wire) = shared.stateless()
        {
            wire.listening().stop();
        }
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.shared.name)
            .field("details", &self.details)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts a session: sends `initialize` (offering `options.protocol_version`), checks the
    /// server's version, and sends `notifications/initialized`. On any failure the transport is
    /// closed before the error is returned.
    pub async fn connect(transport: Box<dyn Transport>, options: ClientOptions) -> Result<Client, ClientError> {
        #[cfg(feature = "otel")]
        let peer = transport.peer();
        let (sender, receiver) = transport.split();
        let shared = Shared::new(
            options.name.clone(),
            sender,
            Arc::clone(&options.handler),
            options.observer.clone(),
        );
        #[cfg(feature = "otel")]
        shared.telemetry.set_peer(peer);
        shared.start_reader(receiver);
        let started = crate::era::start(&shared, &options).await;
        #[cfg(feature = "otel")]
        if let Ok(details) = &started {
            shared.telemetry.set_version(details.protocol_version.as_str());
        }
        match started {
            Ok(details) => Ok(Client {
                _background: Arc::new(Background::start(&shared, &details)),
                shared,
                details: Arc::new(details),
                request_timeout: options.request_timeout,
                tool_timeout: options.tool_timeout,
                max_list_bytes: options.max_list_bytes,
            }),
            Err(error) => {
                if let Err(close_error) = shared.sender.close().await {
                    tracing::debug!(server = %options.name, "closing after a failed initialize: {close_error}");
                }
                shared.fail_all(&error);
                Err(error)
            }
        }
    }

    /// Whether `other` is a handle of this same session.
    pub fn is_same_session(&self, other: &Client) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The server's name as configured.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// What the server said in `initialize`.
    pub fn server(&self) -> &ServerDetails {
        &self.details
    }

    /// Sends a request with any method and params and returns the raw result.
    pub async fn request_raw<P: Serialize + ?Sized>(
        &self,
        method: &'static str,
        params: Option<&P>,
        options: &RequestOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        match method {
            methods::TOOLS_CALL => match self.tools_call_raw(params, options).await? {
                Answered::Complete(raw) => Ok(raw),
                Answered::Task(seed) => {
                    let timeout = options.timeout.unwrap_or(self.request_timeout);
                    crate::tasks::follow_extension(&self.shared, &seed, options, timeout, self.request_timeout).await
                }
            },
            methods::PROMPTS_GET | methods::RESOURCES_READ => {
                crate::rounds::request_with_input(&self.shared, method, params, options, self.request_timeout)
                    .await
                    .map(Answered::into_raw)
            }
            _ => request(&self.shared, method, params, options, self.request_timeout, true).await,
        }
    }

    /// A `tools/call`, with its `input_required` rounds, and once more after the tools are listed
    /// again when the server refused its headers.
    async fn tools_call_raw<P: Serialize + ?Sized>(
        &self,
        params: Option<&P>,
        options: &RequestOptions,
    ) -> Result<Answered, ClientError> {
        let method = methods::TOOLS_CALL;
        let called =
            crate::rounds::request_with_input(&self.shared, method, params, options, self.request_timeout).await;
        match called {
            // The server refused the call's headers (-32020), so the tool did not run: its
            // `x-mcp-header` annotations may have changed since the listing, or it was
            // never listed. List again, then call once more.
            Err(ClientError::Rpc { error, .. })
                if error.code == plexus_protocol::errors::HEADER_MISMATCH
                    && self.shared.stateless().is_some_and(StatelessWire::carries_headers)
                    && self.tools_listing().await.is_ok() =>
            {
                tracing::debug!(server = %self.shared.name, "a tool call's headers were refused ({}): listed the tools again", error.message);
                crate::rounds::request_with_input(&self.shared, method, params, options, self.request_timeout).await
            }
            other => other,
        }
    }

    /// Sends a request and decodes its result.
    pub async fn request<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: Option<&P>,
        options: &RequestOptions,
    ) -> Result<R, ClientError> {
        let raw = self.request_raw(method, params, options).await?;
        decode_result(method, &raw)
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &'static str, params: &serde_json::Value) -> Result<(), ClientError> {
        self.shared.notify_raw(method, params).await
    }

    /// `ping` (in the stateless era, which has none, `server/discover`).
    pub async fn ping(&self) -> Result<(), ClientError> {
        // The stateless revision has no `ping`: `server/discover` is its cheapest request.
        let method = if self.shared.stateless().is_some() {
            methods::SERVER_DISCOVER
        } else {
            methods::PING
        };
        self.request::<(), serde_json::Value>(method, None, &RequestOptions::default())
            .await
            .map(drop)
    }

    /// One page of `tools/list`. A tool whose definition does not decode, and over Streamable
    /// HTTP in the stateless era a tool whose `x-mcp-header` annotations are invalid, is left out
    /// (see [`rejected_tools`](Self::rejected_tools)).
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let raw = self
            .request_raw(
                methods::TOOLS_LIST,
                Some(&PaginatedRequestParams::page(cursor)),
                &RequestOptions::default(),
            )
            .await?;
        let (mut page, left_out) = crate::listing::decode_page::<ListToolsResult>(&raw)?;
        self.shared.record_undecodable_tools(left_out, false);
        if let Some(wire) = self.shared.stateless() {
            wire.check_tools(&self.shared.name, &mut page.tools, false);
        }
        Ok(page)
    }

    /// The tools the last listing left out, and why: a tool whose definition does not decode (a
    /// member missing, a schema nested deeper than the decoder's limit), in either era; and over
    /// Streamable HTTP in the stateless era, a tool whose input schema has an invalid
    /// `x-mcp-header` annotation, which cannot be called with the headers the revision requires.
    pub fn rejected_tools(&self) -> Vec<crate::RejectedTool> {
        let mut rejected = crate::session::lock(&self.shared.undecodable_tools).clone();
        if let Some(wire) = self.shared.stateless() {
            rejected.extend(wire.rejected());
        }
        rejected
    }

    /// Calls a tool with the tool-call timeout.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, RequestOptions::default()).await
    }

    /// Calls a tool with explicit options (progress, timeout).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_borrowed(name, arguments.as_ref(), options).await
    }

    /// Calls a tool with arguments the caller keeps: anything that serializes as a JSON object,
    /// such as a `Map` or the [`RawValue`] text of an object as a client sent it (passed on as
    /// it is, without a parse; a line break in its whitespace becomes a space on the wire).
    /// Nothing checks that it is an object: the server answers a call with other arguments as
    /// invalid.
    pub async fn call_tool_ref<A: Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: &A,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_borrowed(name, Some(arguments), options).await
    }

    async fn call_tool_borrowed<A: Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: Option<&A>,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let raw = self.call_tool_raw(name, arguments, options).await?;
        decode_result(methods::TOOLS_CALL, &raw)
    }

    /// [`call_tool_ref`](Self::call_tool_ref), its result as the server wrote it: for a host
    /// that passes results on and decodes only those it must change (decode one with
    /// [`decode_result`]).
    pub async fn call_tool_raw_ref<A: Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: &A,
        options: RequestOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        self.call_tool_raw(name, Some(arguments), options).await
    }

    async fn call_tool_raw<A: Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: Option<&A>,
        mut options: RequestOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        /// `CallToolRequestParams` with borrowed fields (what a call sends).
        #[derive(Serialize)]
        struct Params<'a, A: ?Sized> {
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            arguments: Option<&'a A>,
        }
        options.timeout.get_or_insert(self.tool_timeout);
        let params = Params { name, arguments };
        self.request_raw(methods::TOOLS_CALL, Some(&params), &options).await
    }

    /// Calls a tool that must run as a task (`execution.taskSupport: "required"`) and waits for
    /// the task's result (see the crate's tasks: each change of the task reaches the progress
    /// callback and restarts the timeout, up to its cap; a task given up on is cancelled). In the
    /// `initialize` era (2025-11-25) the call asks for a task; in the stateless era the server
    /// decides, as with every call. A server that declares no task-augmented `tools/call` gets
    /// no call: [`ClientError::TasksUnsupported`].
    pub async fn call_tool_as_task_ref<A: Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: &A,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let raw = self.call_tool_as_task_raw_ref(name, arguments, options).await?;
        decode_result(methods::TOOLS_CALL, &raw)
    }

    /// [`call_tool_as_task_ref`](Self::call_tool_as_task_ref), the task's result as the server
    /// wrote it (see [`call_tool_raw_ref`](Self::call_tool_raw_ref)).
    pub async fn call_tool_as_task_raw_ref<A: Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: &A,
        mut options: RequestOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let unsupported = || ClientError::TasksUnsupported { tool: name.to_owned() };
        let capabilities = &self.details.capabilities;
        if self.shared.stateless().is_some() {
            if capabilities.extension(plexus_protocol::TASKS_EXTENSION).is_none() {
                return Err(unsupported());
            }
            return self.call_tool_raw(name, Some(arguments), options).await;
        }
        if !(self.details.protocol_version.has_tasks() && capabilities.has_tool_call_tasks()) {
            return Err(unsupported());
        }
        options.timeout.get_or_insert(self.tool_timeout);
        crate::tasks::call_experimental(&self.shared, name, Some(arguments), &options, self.request_timeout).await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.request(
            methods::RESOURCES_READ,
            Some(&ReadResourceRequestParams::new(uri)),
            &RequestOptions::default(),
        )
        .await
    }

    /// Subscribes to the resource `uri`'s updates (`notifications/resources/updated`, through
    /// [`subscribe`](Self::subscribe)): `resources/subscribe` in the initialize era; in the
    /// stateless era the session's `subscriptions/listen` asks for it from now on, and this
    /// returns once the server acknowledged (an error when it does not grant the resource).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        if self.shared.stateless().is_some() {
            let granted = crate::listen::Listening::change_resources(
                &self.shared,
                |uris| {
                    uris.insert(uri.to_owned());
                },
                self.request_timeout,
            )
            .await?;
            if !granted
                .resource_subscriptions
                .unwrap_or_default()
                .iter()
                .any(|u| u == uri)
            {
                return Err(ClientError::Rpc {
                    method: methods::SUBSCRIPTIONS_LISTEN.to_owned(),
                    error: plexus_jsonrpc::ErrorObject::new(
                        plexus_jsonrpc::ErrorCode::INVALID_PARAMS,
                        format!("the server did not grant the subscription to {uri}"),
                    ),
                });
            }
            return Ok(());
        }
        self.request::<_, serde_json::Value>(
            methods::RESOURCES_SUBSCRIBE,
            Some(&SubscribeRequestParams::new(uri)),
            &RequestOptions::default(),
        )
        .await
        .map(drop)
    }

    /// Ends the subscription to the resource `uri`'s updates: `resources/unsubscribe` in the
    /// initialize era; in the stateless era the session listens again without it.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        if self.shared.stateless().is_some() {
            return crate::listen::Listening::change_resources(
                &self.shared,
                |uris| {
                    uris.remove(uri);
                },
                self.request_timeout,
            )
            .await
            .map(drop);
        }
        self.request::<_, serde_json::Value>(
            methods::RESOURCES_UNSUBSCRIBE,
            Some(&UnsubscribeRequestParams::new(uri)),
            &RequestOptions::default(),
        )
        .await
        .map(drop)
    }

    /// In the stateless era, the change notifications the server acknowledged to the session's
    /// `subscriptions/listen` (`None` before it did, or in the initialize era, where the
    /// server's capabilities say what it announces).
    pub fn change_notifications(&self) -> Option<plexus_protocol::SubscriptionFilter> {
        self.shared.stateless()?.listening().current()
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, ClientError> {
        self.request(
            methods::PROMPTS_GET,
            Some(&GetPromptRequestParams::new(name, arguments)),
            &RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete`.
    pub async fn complete(&self, params: &CompleteRequestParams) -> Result<CompleteResult, ClientError> {
        self.request(methods::COMPLETION_COMPLETE, Some(params), &RequestOptions::default())
            .await
    }

    /// `logging/setLevel`.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        self.request::<_, serde_json::Value>(
            methods::LOGGING_SET_LEVEL,
            Some(&SetLevelRequestParams::new(level)),
            &RequestOptions::default(),
        )
        .await
        .map(drop)
    }

    /// Subscribes to the server's notifications (from now on; a subscriber that falls more than
    /// 128 behind misses the oldest and is told so by the receiver).
    pub fn subscribe(&self) -> broadcast::Receiver<ServerNotification> {
        self.shared.notifications.subscribe()
    }

    /// Runs `callback` once when the session closes, with the reason (at once if it has).
    pub fn on_close(&self, callback: impl FnOnce(&ClientError) + Send + 'static) {
        self.shared.on_close(Box::new(callback));
    }

    /// Why the session is closed, or `None` while it is open.
    pub fn closed_reason(&self) -> Option<ClientError> {
        self.shared.closed_reason()
    }

    /// Whether the session is closed.
    pub fn is_closed(&self) -> bool {
        self.closed_reason().is_some()
    }

    /// Waits until the session is closed (by [`close`](Self::close) or because the transport went away).
    pub async fn closed(&self) {
        self.shared.wait_closed().await;
    }

    /// Tells the server to stop working on every pending request (`notifications/cancelled`
    /// with `reason`; `initialize` is never cancelled), each send bounded to 1 s; returns how many
    /// were cancelled. The requests stay pending until their replies, timeouts or the
    /// [`close`](Self::close) that usually follows (a host interrupted by the user).
    pub async fn cancel_pending(&self, reason: &str) -> usize {
        let ids = self.shared.cancellable_ids();
        self.tell_cancelled(&ids, reason).await;
        ids.len()
    }

    /// Cancels every pending request (but `initialize`) and every task a call waits for: each
    /// caller gets [`ClientError::Cancelled`] with `reason` at once, then the server is told
    /// (`notifications/cancelled`, or `tasks/cancel` for a task; each send bounded to 1 s);
    /// returns how many were cancelled. The session stays open.
    pub async fn cancel_all(&self, reason: &str) -> usize {
        let ids = self.shared.cancel_pending_requests(reason);
        self.tell_cancelled(&ids, reason).await;
        // The tasks the session's calls wait for, between polls, have no request pending.
        let tasks = crate::tasks::cancel_followed(&self.shared, reason, Duration::from_secs(1)).await;
        ids.len() + tasks
    }

    /// Sends the server `notifications/cancelled` for each of `ids`, each send bounded to 1 s.
    async fn tell_cancelled(&self, ids: &[i64], reason: &str) {
        for &id in ids {
            let send = crate::request::send_cancelled(&self.shared, id, reason);
            if let Ok(Err(e)) = tokio::time::timeout(Duration::from_secs(1), send).await {
                tracing::debug!(server = %self.shared.name, "could not cancel request {id}: {e}");
            }
        }
    }

    /// Closes the session: pending requests fail with [`ClientError::SessionClosed`], then the
    /// transport shuts down (bounded; see the transport's documentation).
    pub async fn close(&self) -> Result<(), ClientError> {
        self.shared.fail_all(&ClientError::SessionClosed);
        self.shared.sender.close().await.map_err(ClientError::from)
    }

    /// [`close`](Self::close) without waiting, for an owner being dropped: pending requests
    /// fail with [`ClientError::SessionClosed`] and the transport begins its shutdown at once
    /// (a stdio server's runs on a thread of its own; see
    /// [`TransportSender::close_now`](plexus_transport::TransportSender::close_now)).
    pub fn close_now(&self) {
        self.shared.fail_all(&ClientError::SessionClosed);
        self.shared.sender.close_now();
    }
}

/// A request's raw result (of `method`) decoded as `R`; [`ClientError::InvalidResult`] naming
/// the method when it does not fit.
pub fn decode_result<R: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<R, ClientError> {
    serde_json::from_str(raw.get()).map_err(|e| ClientError::InvalidResult {
        method: method.to_owned(),
        source: Arc::new(e),
    })
}

/// The `initialize` handshake; `source` says how its era was chosen.
pub(crate) async fn initialize(
    shared: &Arc<Shared>,
    options: &ClientOptions,
    source: EraSource,
) -> Result<ServerDetails, ClientError> {
    let params = InitializeRequestParams::new(
        options.protocol_version,
        options.handler.capabilities(),
        options.client_info.clone(),
    );
    let timeout = RequestOptions::with_timeout(options.initialize_timeout);
    // `initialize` is never cancelled (the spec forbids it): on timeout the transport is closed.
    let raw = request(
        shared,
        methods::INITIALIZE,
        Some(&params),
        &timeout,
        options.initialize_timeout,
        false,
    )
    .await?;
    let result: InitializeResult = decode_result(methods::INITIALIZE, &raw)?;
    let protocol_version = ProtocolVersion::negotiate(&result.protocol_version)?;
    shared.notify_raw(methods::INITIALIZED, &serde_json::json!({})).await?;
    Ok(ServerDetails {
        protocol_version,
        server_info: result.server_info,
        capabilities: result.capabilities,
        instructions: result.instructions,
        era_source: source,
    })
}
