//! The gateway's MCP server side, whatever carries it: one [`Session`] per client, the
//! requests it answers from the Hub (tools, prompts, resources, ping, logging level), the
//! notifications and responses it takes, and the server-to-client requests of the backends,
//! forwarded to the client whose call is running on that backend.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use plexus::jsonrpc::{ErrorCode, ErrorObject, Message, RawValue, Request, RequestId, Response};
use plexus::protocol::{ClientCapabilities, ContentBlock, LoggingLevel, ProgressNotificationParams};
use plexus::tools::{CallError, CallOptions};
use plexus::{Hub, HubError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use super::uri;

/// Where messages to a client go: one JSON-RPC message per item, without a line end.
pub(crate) type Sink = mpsc::Sender<Vec<u8>>;

/// How many messages may wait for a slow client before the sender waits.
pub(crate) const SINK_CAPACITY: usize = 256;

/// The versions the gateway speaks to its clients, newest first.
const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// How long a forwarded request (an elicitation a person answers) may wait for the client.
const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// The most requests of one client answered at once.
const MAX_IN_FLIGHT: usize = 256;

/// The most client progress notifications on their way to backends at once; more are dropped
/// (progress is advisory).
const MAX_PROGRESS_SENDS: usize = 64;

/// How long list requests wait for the servers still connecting when the gateway starts.
pub(crate) const READY_BUDGET: Duration = Duration::from_secs(60);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A client's answer to a request the gateway sent it.
type Answer = Result<Box<RawValue>, ErrorObject>;

/// One client of the gateway.
pub(crate) struct Session {
    /// Its stream for what no request carries (list changes, logs): stdout for stdio, the GET
    /// stream over HTTP (none while it is not open).
    out: Mutex<Option<Sink>>,
    /// What it declared in `initialize`.
    capabilities: Mutex<Option<ClientCapabilities>>,
    /// The lowest log level it wants (`logging/setLevel`).
    log_level: Mutex<Option<LoggingLevel>>,
    /// Its requests being answered, to abort on `notifications/cancelled`.
    in_flight: Mutex<HashMap<RequestId, tokio::task::AbortHandle>>,
    /// Requests sent to it for a backend, waiting for its response.
    asked: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    /// The progress tokens of those requests, as the client knows them (one per request, made
    /// by the gateway), with the backend and the token it chose.
    progress: Mutex<HashMap<String, (String, Value)>>,
    next_id: AtomicU64,
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
        })
    }

    /// Opens (or replaces) the session's own stream.
    pub(crate) fn set_out(&self, out: Option<Sink>) {
        *lock(&self.out) = out;
    }

    /// Sends on the session's own stream, if open; a full stream drops the message (list
    /// changes and logs are advisory).
    fn notify(&self, line: Vec<u8>) {
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

/// A call running on a backend server, where that server's requests go.
struct Running {
    /// The tool's qualified name (its server is looked up when a server asks, which is rare).
    tool: String,
    session: Weak<Session>,
    sink: Sink,
}

/// The gateway: the Hub, its sessions, and the calls running on each backend.
pub(crate) struct Gateway {
    hub: Arc<Hub>,
    sessions: Mutex<Vec<Weak<Session>>>,
    running: Mutex<Vec<Running>>,
    /// Set once the servers that were starting have connected or failed.
    ready: watch::Receiver<bool>,
    /// Bounds the clients' progress notifications being passed on to backends.
    progress_sends: Arc<tokio::sync::Semaphore>,
}

/// A notification line.
fn notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut line = Vec::with_capacity(64);
    let _ = plexus::jsonrpc::encode_notification(&mut line, method, params);
    trim(line)
}

fn trim(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    line
}

/// An error response line.
fn error_response(id: RequestId, error: ErrorObject) -> Vec<u8> {
    let mut line = Vec::with_capacity(128);
    Message::Response(Response::error(Some(id), error)).encode_line(&mut line);
    trim(line)
}

/// The response line of a request's `result`, encoded straight from it (no value tree or raw
/// copy in between: a tool's result is encoded once, as it goes out).
fn success_response<R: Serialize + ?Sized>(id: &RequestId, result: &R) -> Result<Vec<u8>, ErrorObject> {
    let mut line = Vec::with_capacity(256);
    plexus::jsonrpc::encode_response(&mut line, id, result)
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot encode the result: {e}")))?;
    Ok(trim(line))
}

/// A `tools/call` result as the gateway serves it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallResult {
    content: Vec<ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    is_error: bool,
}

/// The `tools/call` params the gateway reads, the arguments borrowed from the request; the rest
/// (`task`, other `_meta` keys) is not passed on.
#[derive(Deserialize)]
struct CallParams<'a> {
    name: Option<String>,
    /// Passed on to the backend as the client wrote it (`null` reads as none).
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: Option<CallMeta>,
}

/// The `_meta` of `tools/call` params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallMeta {
    progress_token: Option<Value>,
}

/// `{}`: what a call without arguments passes on (some servers check `arguments` against the
/// tool's schema even when it is absent).
fn no_arguments() -> &'static RawValue {
    serde_json::from_str("{}").expect("`{}` is JSON")
}

fn invalid_params(method: &str, reason: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("invalid {method} params: {reason}"))
}

fn params_of(request: &Request) -> Result<Map<String, Value>, ErrorObject> {
    match request
        .params
        .as_deref()
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    {
        None => Ok(Map::new()),
        Some(Ok(Value::Object(map))) => Ok(map),
        Some(Ok(other)) => Err(invalid_params(
            &request.method,
            format!("expected an object, not {}", plexus::jsonrpc::value_kind(&other)),
        )),
        Some(Err(e)) => Err(invalid_params(&request.method, e)),
    }
}

/// The session's text of a server's error (which names the server already).
fn tool_failure(text: String) -> CallResult {
    CallResult {
        content: vec![ContentBlock::text(text)],
        structured_content: None,
        is_error: true,
    }
}

impl Gateway {
    /// A gateway over `hub`; list requests wait (at most [`READY_BUDGET`]) for `ready`.
    pub(crate) fn new(hub: Arc<Hub>, ready: watch::Receiver<bool>) -> Arc<Gateway> {
        Arc::new(Gateway {
            hub,
            sessions: Mutex::new(Vec::new()),
            running: Mutex::new(Vec::new()),
            ready,
            progress_sends: Arc::new(tokio::sync::Semaphore::new(MAX_PROGRESS_SENDS)),
        })
    }

    /// The Hub.
    pub(crate) fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Registers a new client.
    pub(crate) fn add_session(&self, session: &Arc<Session>) {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|weak| weak.strong_count() > 0);
        sessions.push(Arc::downgrade(session));
    }

    /// Sends `method` (a list change) to every client that has its own stream open.
    pub(crate) fn broadcast(&self, method: &str) {
        let line = notification(method, None);
        for session in lock(&self.sessions).iter().filter_map(Weak::upgrade) {
            session.notify(line.clone());
        }
    }

    /// Forwards a backend's log message to every client whose level lets it through, with the
    /// server's name as its logger.
    pub(crate) fn forward_log(&self, server: &str, mut params: plexus::protocol::LoggingMessageNotificationParams) {
        params.logger = Some(match params.logger.take() {
            Some(logger) => format!("{server}/{logger}"),
            None => server.to_owned(),
        });
        let Ok(value) = serde_json::to_value(&params) else {
            return;
        };
        let line = notification("notifications/message", Some(&value));
        for session in lock(&self.sessions).iter().filter_map(Weak::upgrade) {
            let wanted = lock(&session.log_level).is_none_or(|level| params.level >= level);
            if wanted {
                session.notify(line.clone());
            }
        }
    }

    /// Handles one message from `session`'s client; what a request produces goes to `sink`.
    pub(crate) fn handle(self: &Arc<Self>, session: &Arc<Session>, message: Message, sink: Sink) {
        match message {
            Message::Request(request) => {
                let id = request.id.clone();
                // Held across the spawn: the task's own removal waits for its insertion.
                let mut in_flight = lock(&session.in_flight);
                if in_flight.len() >= MAX_IN_FLIGHT {
                    let busy = ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("{MAX_IN_FLIGHT} requests are already being answered; try again later"),
                    );
                    let _ = sink.try_send(error_response(id, busy));
                    return;
                }
                let (gateway, session_ref) = (Arc::clone(self), Arc::clone(session));
                // Boxed: the answer's future (some KB) is written once, into its box; unboxed,
                // tokio moves it by value about ten times on its way into the task and out.
                let task = tokio::spawn(Box::pin(async move {
                    let outcome = gateway.answer(&session_ref, &request, &sink).await;
                    lock(&session_ref.in_flight).remove(&request.id);
                    let line = outcome.unwrap_or_else(|error| error_response(request.id.clone(), error));
                    let _ = sink.send(line).await;
                }));
                in_flight.insert(id, task.abort_handle());
            }
            Message::Notification(note) => {
                let params = note
                    .params
                    .as_deref()
                    .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
                match (note.method.as_ref(), params) {
                    ("notifications/cancelled", Some(params)) => Gateway::cancelled(session, &params),
                    ("notifications/progress", Some(params)) => self.progressed(session, params),
                    _ => {}
                }
            }
            Message::Response(answer) => {
                if let Some(id) = answer.id
                    && let Some(waiting) = lock(&session.asked).remove(&id)
                {
                    let _ = waiting.send(answer.outcome);
                }
            }
        }
    }

    /// The client cancelled one of its requests (dropping the call cancels it on the backend
    /// too), or one the gateway sent it for a backend (which gets an error as the answer).
    fn cancelled(session: &Session, params: &Value) {
        let Ok(id) = serde_json::from_value::<RequestId>(params["requestId"].clone()) else {
            return;
        };
        if let Some(task) = lock(&session.in_flight).remove(&id) {
            task.abort();
        } else if let Some(waiting) = lock(&session.asked).remove(&id) {
            let reason = params["reason"].as_str().unwrap_or("no reason given");
            let _ = waiting.send(Err(ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the gateway's client cancelled the request: {reason}"),
            )));
        }
    }

    /// The client's progress on a request the gateway sent it for a backend goes to that
    /// backend, with the token the backend chose (dropped while [`MAX_PROGRESS_SENDS`] are
    /// still on their way).
    fn progressed(&self, session: &Session, mut params: Value) {
        let Some((server, token)) = params["progressToken"]
            .as_str()
            .and_then(|token| lock(&session.progress).get(token).cloned())
        else {
            return;
        };
        let Some(client) = self.hub.pool().client(&server) else {
            return;
        };
        let Ok(permit) = Arc::clone(&self.progress_sends).try_acquire_owned() else {
            return;
        };
        params["progressToken"] = token;
        tokio::spawn(async move {
            let _ = client.notify("notifications/progress", &params).await;
            drop(permit);
        });
    }

    /// Waits (bounded) for the servers that were starting.
    async fn wait_ready(&self) {
        if *self.ready.borrow() {
            return;
        }
        let mut ready = self.ready.clone();
        let _ = tokio::time::timeout(READY_BUDGET, ready.wait_for(|ready| *ready)).await;
    }

    /// The response line to `request`, or the error to answer it with.
    async fn answer(
        self: &Arc<Self>,
        session: &Arc<Session>,
        request: &Request,
        sink: &Sink,
    ) -> Result<Vec<u8>, ErrorObject> {
        let method = request.method.as_ref();
        if method == "tools/call" {
            let result = self.call(session, request, sink).await?;
            return success_response(&request.id, &result);
        }
        let params = params_of(request)?;
        let result = match method {
            "initialize" => Gateway::initialize(session, &params)?,
            "ping" => json!({}),
            "logging/setLevel" => {
                let level = serde_json::from_value(params["level"].clone()).map_err(|e| invalid_params(method, e))?;
                *lock(&session.log_level) = Some(level);
                json!({})
            }
            "tools/list" => {
                self.wait_ready().await;
                // Boxed, as are the other lists: a `tools/call`'s task stays small.
                let pool = Box::pin(self.hub.tool_pool()).await;
                let tools: Vec<Value> = pool.entries.iter().map(|entry| tool_json(entry)).collect();
                json!({"tools": tools})
            }
            "prompts/list" | "prompts/get" | "resources/list" | "resources/templates/list" | "resources/read" => {
                self.wait_ready().await;
                Box::pin(self.content(method, &params)).await?
            }
            other => {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("the plexus gateway does not serve {other}"),
                ));
            }
        };
        success_response(&request.id, &result)
    }

    /// The prompts and resources requests.
    async fn content(&self, method: &str, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        Ok(match method {
            "prompts/list" => {
                let prompts: Vec<Value> = self
                    .hub
                    .prompts()
                    .await
                    .entries
                    .into_iter()
                    .map(|entry| {
                        let mut prompt = serde_json::to_value(&entry.prompt).unwrap_or_default();
                        prompt["name"] = json!(entry.name);
                        prompt
                    })
                    .collect();
                json!({"prompts": prompts})
            }
            "prompts/get" => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params(method, "no name"))?;
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => std::collections::BTreeMap::default(),
                    Some(arguments) => {
                        serde_json::from_value(arguments.clone()).map_err(|e| invalid_params(method, e))?
                    }
                };
                let result = self.hub.get_prompt(name, arguments).await.map_err(hub_error)?;
                serde_json::to_value(&result).unwrap_or_default()
            }
            "resources/list" => {
                let resources: Vec<Value> = self
                    .hub
                    .resources()
                    .await
                    .entries
                    .into_iter()
                    .map(|entry| {
                        let mut resource = serde_json::to_value(&entry.resource).unwrap_or_default();
                        resource["uri"] = json!(uri::to_gateway(&entry.server, &entry.resource.uri));
                        resource
                    })
                    .collect();
                json!({"resources": resources})
            }
            "resources/templates/list" => {
                let templates: Vec<Value> = self
                    .hub
                    .resource_templates()
                    .await
                    .entries
                    .into_iter()
                    .map(|entry| {
                        let mut template = serde_json::to_value(&entry.template).unwrap_or_default();
                        template["uriTemplate"] = json!(uri::to_gateway(&entry.server, &entry.template.uri_template));
                        template
                    })
                    .collect();
                json!({"resourceTemplates": templates})
            }
            "resources/read" => {
                let given = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params(method, "no uri"))?;
                let (server, original) = uri::from_gateway(given).ok_or_else(|| {
                    ErrorObject::new(
                        ErrorCode::RESOURCE_NOT_FOUND,
                        format!("{given:?} is not a resource of this gateway (plexus://SERVER/URI)"),
                    )
                })?;
                let result = self
                    .hub
                    .read_resource(&format!("@{server}:{original}"))
                    .await
                    .map_err(hub_error)?;
                let mut value = serde_json::to_value(&result).unwrap_or_default();
                for content in value["contents"].as_array_mut().into_iter().flatten() {
                    if let Some(inner) = content["uri"].as_str().map(str::to_owned) {
                        content["uri"] = json!(uri::to_gateway(server, &inner));
                    }
                }
                value
            }
            _ => unreachable!("only the content methods come here"),
        })
    }

    fn initialize(session: &Session, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = VERSIONS
            .iter()
            .find(|v| **v == requested)
            .copied()
            .unwrap_or(VERSIONS[0]);
        let capabilities: ClientCapabilities = params
            .get("capabilities")
            .map(|c| serde_json::from_value(c.clone()))
            .transpose()
            .map_err(|e| invalid_params("initialize", e))?
            .unwrap_or_default();
        *lock(&session.capabilities) = Some(capabilities);
        Ok(json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"listChanged": true},
                "logging": {},
            },
            "serverInfo": {"name": "plexus-gateway", "title": "plexus gateway", "version": env!("CARGO_PKG_VERSION")},
            "instructions": "The tools, prompts and resources of every MCP server plexus is configured with. Tools \
                are named mcp__<server>__<tool>; resources plexus://<server>/<uri>.",
        }))
    }

    /// `tools/call` through the Hub's call chain, the client's progress token honoured.
    async fn call(
        self: &Arc<Self>,
        session: &Arc<Session>,
        request: &Request,
        sink: &Sink,
    ) -> Result<CallResult, ErrorObject> {
        let params: CallParams = match request.params.as_deref() {
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| invalid_params("tools/call", e))?,
            None => return Err(invalid_params("tools/call", "no name")),
        };
        let name = params.name.ok_or_else(|| invalid_params("tools/call", "no name"))?;
        // Taken as they came: the arguments go on to the backend as their text, unparsed (the
        // request's parse checked that they are JSON; a raw value starts at its first token).
        let arguments = match params.arguments {
            None => no_arguments(),
            Some(object) if object.get().starts_with('{') => object,
            Some(other) => {
                let kind = serde_json::from_str::<Value>(other.get())
                    .map_or("invalid JSON", |value| plexus::jsonrpc::value_kind(&value));
                return Err(invalid_params(
                    "tools/call",
                    format!("arguments must be an object, not {kind}"),
                ));
            }
        };
        let token = params.meta.and_then(|meta| meta.progress_token);
        let mut options = CallOptions::default();
        if let Some(token) = token.filter(|token| token.is_string() || token.is_i64() || token.is_u64()) {
            let progress_sink = sink.clone();
            options.on_progress = Some(Arc::new(move |report: ProgressNotificationParams| {
                let mut params = json!({"progressToken": token, "progress": report.progress});
                if let Some(total) = report.total {
                    params["total"] = json!(total);
                }
                if let Some(message) = report.message {
                    params["message"] = json!(message);
                }
                let _ = progress_sink.try_send(notification("notifications/progress", Some(&params)));
            }));
        }
        self.wait_ready().await;
        // The backend's own requests while this call runs come back to this client.
        let _running = self.start_running(name.clone(), session, sink);
        match self.hub.call_with(&name, arguments, &options).await {
            Ok(processed) => Ok(CallResult {
                content: processed.content,
                structured_content: processed.structured_content,
                is_error: processed.is_error,
            }),
            Err(HubError::UnknownTool { .. }) => {
                Err(invalid_params("tools/call", format!("no tool is named {name:?}")))
            }
            // The gateway runs no tasks (it declares no `tasks` capability): a call of a tool
            // that requires one gets what the spec has a server answer a call made without one.
            Err(HubError::Call(error)) if matches!(*error, CallError::TaskRequired { .. }) => {
                Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, error.to_string()))
            }
            Err(HubError::Call(error)) => Ok(tool_failure(error.to_string())),
            Err(other) => Ok(tool_failure(other.to_string())),
        }
    }

    fn start_running(self: &Arc<Self>, tool: String, session: &Arc<Session>, sink: &Sink) -> RunningGuard {
        lock(&self.running).push(Running {
            tool,
            session: Arc::downgrade(session),
            sink: sink.clone(),
        });
        RunningGuard {
            gateway: Arc::downgrade(self),
            sink: sink.clone(),
        }
    }

    /// The client that hears from `server`: the one whose call runs on it (newest first), else
    /// the newest client with its own stream open; with the stream its messages go to.
    fn client_for(&self, server: &str) -> Option<(Arc<Session>, Sink)> {
        let running = {
            let running = lock(&self.running);
            running
                .iter()
                .rev()
                .find(|call| {
                    self.hub
                        .tool_origin(&call.tool)
                        .is_some_and(|origin| origin.server == server)
                })
                .and_then(|call| Some((call.session.upgrade()?, call.sink.clone())))
        };
        running.or_else(|| {
            let session = lock(&self.sessions).iter().rev().find_map(Weak::upgrade)?;
            let sink = lock(&session.out).clone()?;
            Some((session, sink))
        })
    }

    /// Passes a backend's `notifications/elicitation/complete` on to the client that was shown
    /// the URL (the one [`ask`](Self::ask) chose), if it declared URL-mode elicitation.
    pub(crate) fn forward_completion(&self, server: &str, params: &Value) {
        let Some((session, sink)) = self.client_for(server) else {
            return;
        };
        if lock(&session.capabilities)
            .as_ref()
            .is_some_and(super::forward::supports_url)
        {
            let _ = sink.try_send(notification("notifications/elicitation/complete", Some(params)));
        }
    }

    /// Sends `method` with `params` to the client whose call runs on `server` (else the newest
    /// client), if it declared `capability`, and waits for its answer.
    pub(crate) async fn ask(
        &self,
        server: &str,
        method: &str,
        capability: fn(&ClientCapabilities) -> bool,
        params: &Value,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let target = self.client_for(server);
        let unsupported = || {
            ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("the gateway's client does not support {method}"),
            )
        };
        let Some((session, sink)) = target else {
            return Err(unsupported());
        };
        if !lock(&session.capabilities).as_ref().is_some_and(capability) {
            return Err(unsupported());
        }
        let number = session.next_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("plexus-{number}"));
        // The backend's progress token becomes one of the gateway's: tokens of two backends
        // may be the same.
        let mut params = params.clone();
        let progress = params.pointer_mut("/_meta/progressToken").map(|token| {
            let ours = format!("plexus-progress-{number}");
            let theirs = std::mem::replace(token, json!(ours));
            lock(&session.progress).insert(ours.clone(), (server.to_owned(), theirs));
            ours
        });
        let (answer, answered) = oneshot::channel();
        lock(&session.asked).insert(id.clone(), answer);
        // If the backend gives up first (it cancelled, or timed out), the client is told too.
        let mut pending = Asked {
            session: &session,
            sink: &sink,
            id: Some(id.clone()),
            progress,
        };
        let went_away = || ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the gateway's client went away");
        let mut line = Vec::with_capacity(128);
        let _ = plexus::jsonrpc::encode_request(&mut line, &id, method, Some(&params));
        if sink.send(trim(line)).await.is_err() {
            return Err(went_away());
        }
        let outcome = match tokio::time::timeout(ASK_TIMEOUT, answered).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(went_away()),
            Err(_) => {
                return Err(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!(
                        "the gateway's client did not answer {method} within {} s",
                        ASK_TIMEOUT.as_secs()
                    ),
                ));
            }
        };
        pending.id = None;
        outcome
    }
}

/// A request sent to a client for a backend: dropping it forgets its progress token and, unless
/// it was answered, the request too, sending the client `notifications/cancelled`.
struct Asked<'a> {
    session: &'a Session,
    sink: &'a Sink,
    id: Option<RequestId>,
    progress: Option<String>,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        if let Some(token) = self.progress.take() {
            lock(&self.session.progress).remove(&token);
        }
        let Some(id) = self.id.take() else { return };
        if lock(&self.session.asked).remove(&id).is_some() {
            let params = json!({"requestId": id, "reason": "the server no longer waits for the answer"});
            let _ = self
                .sink
                .try_send(notification("notifications/cancelled", Some(&params)));
        }
    }
}

/// Takes a running call off the list when it ends.
struct RunningGuard {
    gateway: Weak<Gateway>,
    sink: Sink,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Some(gateway) = self.gateway.upgrade() {
            let mut running = lock(&gateway.running);
            if let Some(at) = running.iter().rposition(|call| call.sink.same_channel(&self.sink)) {
                running.remove(at);
            }
        }
    }
}

/// A Hub error as a JSON-RPC error for the client.
#[allow(clippy::needless_pass_by_value)] // taken as `map_err` hands it over.
fn hub_error(error: HubError) -> ErrorObject {
    let code = match &error {
        HubError::UnknownPrompt { .. } | HubError::BadReference { .. } | HubError::UnknownTool { .. } => {
            ErrorCode::INVALID_PARAMS
        }
        _ => ErrorCode::INTERNAL_ERROR,
    };
    ErrorObject::new(code, error.to_string())
}

/// A tool of the pool as `tools/list` serves it: the qualified name, the truncated
/// description, the annotations with the spec's defaults applied, the schemas and the
/// `execution` object as sent.
fn tool_json(entry: &plexus::tools::ToolEntry) -> Value {
    let mut tool = json!({
        "name": entry.name,
        "title": entry.title,
        "description": entry.description,
        "inputSchema": entry.input_schema,
        "annotations": {
            "title": entry.title,
            "readOnlyHint": entry.read_only,
            "destructiveHint": entry.destructive,
            "idempotentHint": entry.idempotent,
            "openWorldHint": entry.open_world,
        },
    });
    if let Some(output) = &entry.output_schema {
        tool["outputSchema"] = output.clone();
    }
    if let Some(execution) = entry.execution.as_ref().and_then(|e| serde_json::to_value(e).ok()) {
        tool["execution"] = execution;
    }
    tool
}
