//! The gateway's MCP server side, whatever carries it: the [`Gateway`] with its clients (one
//! [`Session`] each), the messages it takes from them, and the requests it answers itself
//! (initialize, ping, logging level) or sends on: tools ([`tools`](super::tools)), prompts and
//! resources ([`content`](super::content)); the backends' own requests go to the client
//! ([`forward`](super::forward)). Each request is answered in its era ([`era`](super::era)): a
//! request of the stateless era by [`stateless`](super::stateless), through the same answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use plexus::client::ClientError;
use plexus::jsonrpc::{ErrorCode, ErrorObject, Message, Request, RequestId};
use plexus::protocol::ClientCapabilities;
use plexus::protocol::methods;
use plexus::{Hub, HubError, ServerFailure};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::era::Route;
use crate::health::Health;
use crate::rounds::Holds;
use crate::session::{Session, Sink, error_response, lock, notification, success_response};
use crate::subscriptions::Subscriptions;
use crate::tools::Running;

/// The most requests of one client answered at once.
const MAX_IN_FLIGHT: usize = 256;

/// The most client progress notifications on their way to backends at once; more are dropped
/// (progress is advisory).
const MAX_PROGRESS_SENDS: usize = 64;

/// The longest wait of a request for the end of the grace period (`--ready-grace`, which a
/// `"required": true` server may stretch to its connect timeout).
const READY_BUDGET: Duration = Duration::from_secs(600);

/// The gateway: the Hub, its sessions, and the calls running on each backend.
pub(crate) struct Gateway {
    pub(super) hub: Arc<Hub>,
    /// Every client, newest last.
    pub(super) sessions: Mutex<Vec<Weak<Session>>>,
    /// The calls running on backends, newest last.
    pub(super) running: Mutex<Vec<Running>>,
    /// The tag of the next call (how a backend's request names the call it belongs to).
    pub(super) next_tag: std::sync::atomic::AtomicU64,
    /// The clients shown each URL elicitation still open, by its `elicitationId`.
    pub(super) shown_urls: Mutex<HashMap<String, (Weak<Session>, Sink)>>,
    /// Set once the grace period for the servers starting with the gateway has ended (each
    /// had connected or failed, or the time was up).
    ready: watch::Receiver<bool>,
    /// The backends that are down.
    pub(super) health: Health,
    /// The clients subscribed to each backend resource.
    pub(super) subscriptions: Subscriptions,
    /// Bounds the clients' progress notifications being passed on to backends.
    pub(super) progress_sends: Arc<tokio::sync::Semaphore>,
    /// The calls of stateless clients held while their clients answer a backend's questions.
    pub(super) holds: Holds,
    /// Whether tools are deferred: listed as the meta-tools of [`deferred`](crate::deferred).
    pub(super) deferred: bool,
}

/// What the gateway tells its clients of itself (`initialize`, `server/discover`).
pub(super) const INSTRUCTIONS: &str = "The tools, prompts and resources of every MCP server plexus is configured \
    with. Tools are named mcp__<server>__<tool>; resources plexus://<server>/<uri>.";

/// Who the gateway is, as its clients are told.
pub(super) fn server_info() -> Value {
    json!({"name": "plexus-gateway", "title": "plexus gateway", "version": env!("CARGO_PKG_VERSION")})
}

/// An invalid-params error naming the method.
pub(super) fn invalid_params(method: &str, reason: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("invalid {method} params: {reason}"))
}

/// A request's params as an object (none reads as empty).
pub(super) fn params_of(request: &Request) -> Result<Map<String, Value>, ErrorObject> {
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

impl Gateway {
    /// A gateway over `hub`; the lists wait for `ready` (the end of the grace period); with
    /// `deferred`, its tools are the meta-tools of [`deferred`](crate::deferred).
    pub(crate) fn new(hub: Arc<Hub>, ready: watch::Receiver<bool>, deferred: bool) -> Arc<Gateway> {
        Arc::new(Gateway {
            hub,
            sessions: Mutex::new(Vec::new()),
            running: Mutex::new(Vec::new()),
            next_tag: std::sync::atomic::AtomicU64::new(1),
            shown_urls: Mutex::new(HashMap::new()),
            ready,
            health: Health::default(),
            subscriptions: Subscriptions::default(),
            progress_sends: Arc::new(tokio::sync::Semaphore::new(MAX_PROGRESS_SENDS)),
            holds: Holds::default(),
            deferred,
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

    /// Every client still there.
    pub(super) fn live_sessions(&self) -> Vec<Arc<Session>> {
        lock(&self.sessions).iter().filter_map(Weak::upgrade).collect()
    }

    /// Sends `method` (a list change) to every client that has its own stream open (of the
    /// stateless era: every listen that asked for it).
    pub(crate) fn broadcast(&self, method: &str) {
        let line = notification(method, None);
        for session in self.live_sessions() {
            session.notify_change(method, None, &line);
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
        let line = notification(methods::LOGGING_MESSAGE, Some(&value));
        // A listen asks for no log messages.
        for session in self.live_sessions().into_iter().filter(|s| s.listen.is_none()) {
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
                // Decided here, in the order the requests came: the first one decides a
                // connection's era.
                let route = session.route(&request);
                self.handle_request(session, request, route, sink);
            }
            Message::Notification(note) => {
                let params = note
                    .params
                    .as_deref()
                    .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
                match (note.method.as_ref(), params) {
                    (methods::INITIALIZED, _) => self.initialized(session),
                    (methods::CANCELLED, Some(params)) => Gateway::cancelled(session, &params),
                    (methods::PROGRESS, Some(params)) => self.progressed(session, params),
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

    /// Answers `request` of `session`'s client as `route` says, on a task of its own; the
    /// answer goes to `sink`.
    pub(crate) fn handle_request(
        self: &Arc<Self>,
        session: &Arc<Session>,
        request: Request,
        route: Result<Route, ErrorObject>,
        sink: Sink,
    ) {
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
        #[cfg(feature = "otel")]
        let operation = crate::telemetry::serve(session, &request, &route);
        #[cfg(feature = "otel")]
        let span = operation
            .as_ref()
            .map_or_else(tracing::Span::none, |operation| operation.span().clone());
        // Boxed: the answer's future (some KB) is written once, into its box; unboxed,
        // tokio moves it by value about ten times on its way into the task and out.
        let answer = async move {
            let outcome = match route {
                Ok(Route::Initialize) => gateway.answer(&session_ref, &request, &sink).await,
                // Boxed apart: the `initialize` era's answer stays as small as it was.
                Ok(Route::Stateless(stateless)) => {
                    Box::pin(gateway.answer_stateless(&session_ref, &request, stateless, &sink)).await
                }
                Err(error) => Err(error),
            };
            lock(&session_ref.in_flight).remove(&request.id);
            #[cfg(feature = "otel")]
            if let Some(operation) = operation {
                use plexus::client::telemetry::Outcome;
                match &outcome {
                    Ok(line) => operation.finish(Outcome::Response(line)),
                    Err(error) => operation.finish(Outcome::RpcError {
                        code: error.code.into(),
                        message: &error.message,
                    }),
                }
            }
            let line = outcome.unwrap_or_else(|error| error_response(request.id.clone(), error));
            let _ = sink.send(line).await;
        };
        // The work runs in the request's server span: the backend requests it sends are its
        // children.
        #[cfg(feature = "otel")]
        let answer = tracing::Instrument::instrument(answer, span);
        let task = tokio::spawn(Box::pin(answer));
        in_flight.insert(id, task.abort_handle());
    }

    /// The result of a request both eras answer alike (the lists, a prompt, a resource, a
    /// completion); -32601 for a method the gateway does not serve.
    pub(super) async fn served(&self, method: &str, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        Ok(match method {
            methods::TOOLS_LIST if self.deferred => crate::deferred::tools_list(params)?,
            methods::TOOLS_LIST => {
                self.wait_ready().await;
                // Boxed, as are the other lists: a `tools/call`'s task stays small.
                let pool = Box::pin(self.hub.tool_pool()).await;
                crate::tools::tools_page(&pool.entries, params)?
            }
            methods::PROMPTS_LIST
            | methods::PROMPTS_GET
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ => {
                self.wait_ready().await;
                Box::pin(self.content(method, params)).await?
            }
            methods::COMPLETION_COMPLETE => {
                self.wait_ready().await;
                Box::pin(self.complete(params)).await?
            }
            other => {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("the plexus gateway does not serve {other}"),
                ));
            }
        })
    }

    /// The client (of the `initialize` era) has initialized: from now on it hears of list
    /// changes, logs and the backends that are down (those down already, at once).
    pub(super) fn initialized(&self, session: &Session) {
        // A client of the stateless era hears only what its requests ask for.
        if !session.is_stateless() && session.set_initialized() {
            self.tell_down(session);
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
            let _ = client.notify(methods::PROGRESS, &params).await;
            drop(permit);
        });
    }

    /// The session of `server`, connected on demand.
    pub(super) async fn backend(&self, server: &str) -> Result<plexus::Client, ErrorObject> {
        self.hub.pool().ensure_connected(server).await.map_err(|e| {
            hub_error(HubError::Server {
                server: server.to_owned(),
                source: Box::new(ServerFailure::Pool(e)),
            })
        })
    }

    /// `server`'s request failed with `error`.
    pub(super) fn server_failed(server: &str, error: ClientError) -> HubError {
        HubError::Server {
            server: server.to_owned(),
            source: Box::new(ServerFailure::Request(error)),
        }
    }

    /// Waits for the end of the grace period (bounded by [`READY_BUDGET`]).
    pub(super) async fn wait_ready(&self) {
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
        if !matches!(method, methods::INITIALIZE | methods::PING) {
            // A client that skipped `notifications/initialized` has initialized all the same.
            self.initialized(session);
        }
        if method == methods::TOOLS_CALL {
            let result = self.call(session, request, sink).await?;
            return success_response(&request.id, &result);
        }
        let params = params_of(request)?;
        let result = match method {
            methods::INITIALIZE => {
                // What the gateway offers depends on the servers that are up by then.
                self.wait_ready().await;
                self.initialize(session, &params)?
            }
            methods::PING => json!({}),
            methods::LOGGING_SET_LEVEL => {
                let level = serde_json::from_value(params["level"].clone()).map_err(|e| invalid_params(method, e))?;
                *lock(&session.log_level) = Some(level);
                json!({})
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                self.wait_ready().await;
                Box::pin(self.subscription(session, method, &params)).await?
            }
            other => Box::pin(self.served(other, &params)).await?,
        };
        success_response(&request.id, &result)
    }

    /// `initialize`: the version, and what the gateway offers (completions and resource
    /// subscriptions when one of the servers up does).
    fn initialize(&self, session: &Session, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = plexus::protocol::ProtocolVersion::answer(requested).as_str();
        #[cfg(feature = "otel")]
        session.telemetry.set_version(version);
        let capabilities: ClientCapabilities = params
            .get("capabilities")
            .map(|c| serde_json::from_value(c.clone()))
            .transpose()
            .map_err(|e| invalid_params(methods::INITIALIZE, e))?
            .unwrap_or_default();
        *lock(&session.capabilities) = Some(capabilities);
        Ok(json!({
            "protocolVersion": version,
            "capabilities": self.offers(),
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        }))
    }

    /// What the gateway offers its clients (`initialize`, `server/discover`): completions and
    /// resource subscriptions when one of the servers up does.
    pub(super) fn offers(&self) -> Value {
        let pool = self.hub.pool();
        let offered: Vec<plexus::protocol::ServerCapabilities> = pool
            .names()
            .iter()
            .filter_map(|server| pool.client(server))
            .map(|client| client.server().capabilities.clone())
            .collect();
        let mut resources = json!({"listChanged": true});
        if offered
            .iter()
            .any(|offers| offers.resources.as_ref().is_some_and(|r| r.subscribe == Some(true)))
        {
            resources["subscribe"] = json!(true);
        }
        let mut offers = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": resources,
            "logging": {},
        });
        if offered.iter().any(|offers| offers.completions.is_some()) {
            offers["completions"] = json!({});
        }
        offers
    }
}

/// A Hub error as a JSON-RPC error for the client: a server's own error keeps its code.
#[allow(clippy::needless_pass_by_value)] // taken as `map_err` hands it over.
pub(super) fn hub_error(error: HubError) -> ErrorObject {
    let code = match &error {
        HubError::UnknownPrompt { .. } | HubError::BadReference { .. } | HubError::UnknownTool { .. } => {
            ErrorCode::INVALID_PARAMS
        }
        HubError::Server { .. } => error.rpc_code().unwrap_or(ErrorCode::INTERNAL_ERROR),
        _ => ErrorCode::INTERNAL_ERROR,
    };
    ErrorObject::new(code, plexus::transport::error_chain(&error))
}
