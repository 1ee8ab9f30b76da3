//! The gateway's tools: `tools/list` entries from the tool pool, and `tools/call` through the
//! Hub's call chain, with the calls running on each backend kept for its requests.

use std::sync::{Arc, Weak};

use plexus::HubError;
use plexus::jsonrpc::{ErrorCode, ErrorObject, RawValue, Request};
use plexus::pool::ServerStatus;
use plexus::protocol::http_headers::ParamHeaders;
use plexus::protocol::{ContentBlock, ProgressNotificationParams, methods};
use plexus::tools::{AsSentResult, CallError, CallOptions, CallOutcome};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::gateway::{Gateway, invalid_params};
use crate::session::{Session, Sink, lock, notification};

/// A call running on a backend server, where that server's requests go.
pub(super) struct Running {
    /// What it runs on.
    pub(super) on: RunsOn,
    /// The client that called it.
    pub(super) session: Weak<Session>,
    /// Where its response goes (and its server's requests).
    pub(super) sink: Sink,
    /// The call's tag, which the backend's requests related to it carry back.
    pub(super) tag: u64,
}

/// What a running call runs on.
pub(super) enum RunsOn {
    /// The tool of this qualified name (its server is looked up when a server asks, which is
    /// rare).
    Tool(String),
    /// This server (a stateless client's `prompts/get` or `resources/read`).
    Server(String),
}

impl Running {
    /// Whether it runs on `server`.
    pub(super) fn runs_on(&self, hub: &plexus::Hub, server: &str) -> bool {
        match &self.on {
            RunsOn::Tool(tool) => hub.tool_origin(tool).is_some_and(|origin| origin.server == server),
            RunsOn::Server(on) => on == server,
        }
    }
}

/// A `tools/call` result as the gateway serves it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CallResult {
    /// `complete` in the stateless era (absent in the `initialize` era's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) result_type: Option<plexus::protocol::ResultType>,
    #[serde(flatten)]
    answer: Answer,
}

/// What a call answered: a result the gateway made or processed, or one it passes on as its
/// server wrote it.
#[derive(Serialize)]
#[serde(untagged)]
enum Answer {
    Made(MadeResult),
    AsSent(AsSentResult),
}

/// A result of blocks the gateway holds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MadeResult {
    content: Vec<ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    is_error: bool,
}

impl CallResult {
    /// A result of `content`, `structured` content and `is_error` (its era's `resultType` is
    /// added where it is answered).
    pub(super) fn new(content: Vec<ContentBlock>, structured: Option<Value>, is_error: bool) -> CallResult {
        CallResult {
            result_type: None,
            answer: Answer::Made(MadeResult {
                content,
                structured_content: structured,
                is_error,
            }),
        }
    }

    /// A backend's result as it came (text within the output limit, which needs no processing).
    fn as_sent(result: AsSentResult) -> CallResult {
        CallResult {
            result_type: None,
            answer: Answer::AsSent(result),
        }
    }
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

/// A call's `arguments` as they came (their text, unparsed: the request's parse checked that
/// they are JSON, and a raw value starts at its first token), `{}` when absent or `null`; -32602
/// naming `method` when they are not an object.
pub(super) fn object_arguments<'a>(arguments: Option<&'a RawValue>, method: &str) -> Result<&'a RawValue, ErrorObject> {
    match arguments {
        None => Ok(no_arguments()),
        Some(object) if object.get().starts_with('{') => Ok(object),
        Some(other) => {
            let kind = serde_json::from_str::<Value>(other.get())
                .map_or("invalid JSON", |value| plexus::jsonrpc::value_kind(&value));
            Err(invalid_params(
                method,
                format!("arguments must be an object, not {kind}"),
            ))
        }
    }
}

/// `{}`: what a call without arguments passes on (some servers check `arguments` against the
/// tool's schema even when it is absent).
fn no_arguments() -> &'static RawValue {
    serde_json::from_str("{}").expect("`{}` is JSON")
}

/// The most tools one `tools/list` page holds.
const PAGE_TOOLS: usize = 1000;
/// The most bytes of tools one page holds (a page has at least one tool): far below a client's
/// message limit (16 MiB by default), so that a pool of many tools is listed in pages a client
/// takes instead of one message it refuses.
const PAGE_BYTES: usize = 4 << 20;
/// What the gateway's `tools/list` cursors start with; the rest is the index of the page's first
/// tool in the pool.
const CURSOR_PREFIX: &str = "tools@";

/// One page of `tools/list` over `entries` (the pool's tools, in order), from the request's
/// `cursor`: at most [`PAGE_TOOLS`] tools and [`PAGE_BYTES`] bytes, with `nextCursor` when more
/// follow. A cursor the gateway did not give is -32602; one past the end (the pool shrank
/// meanwhile) gives an empty last page.
pub(super) fn tools_page(
    entries: &[Arc<plexus::tools::ToolEntry>],
    params: &serde_json::Map<String, Value>,
) -> Result<Value, ErrorObject> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(cursor) => cursor
            .as_str()
            .and_then(|cursor| cursor.strip_prefix(CURSOR_PREFIX))
            .and_then(|index| index.parse::<usize>().ok())
            .ok_or_else(|| {
                invalid_params(
                    methods::TOOLS_LIST,
                    format!("{cursor} is not a cursor this gateway gave"),
                )
            })?,
    };
    let mut tools = Vec::new();
    let mut bytes = 0;
    let mut next = start;
    for entry in entries.iter().skip(start).take(PAGE_TOOLS) {
        let tool = serde_json::to_value(served_tool(entry)).map_err(|e| {
            ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("tool {} could not be written: {e}", entry.name),
            )
        })?;
        let size = tool.to_string().len();
        if !tools.is_empty() && bytes + size > PAGE_BYTES {
            break;
        }
        bytes += size;
        tools.push(tool);
        next += 1;
    }
    let mut page = json!({ "tools": tools });
    if next < entries.len() {
        page["nextCursor"] = json!(format!("{CURSOR_PREFIX}{next}"));
    }
    Ok(page)
}

/// A pool entry as the gateway lists it. A tool that must run as a task is called as one by the
/// gateway, which follows the task and answers its client with the result (and the task's
/// progress); the gateway declares no tasks of its own, so the tool is listed without its
/// `execution.taskSupport` and called as any other.
pub(super) fn served_tool(entry: &plexus::tools::ToolEntry) -> plexus::protocol::Tool {
    let mut tool = entry.to_tool();
    if let Some(execution) = &mut tool.execution {
        execution.task_support = None;
        if execution.extra.is_empty() {
            tool.execution = None;
        }
    }
    tool
}

/// The session's text of a server's error (which names the server already).
fn tool_failure(text: String) -> CallResult {
    CallResult::new(vec![ContentBlock::text(text)], None, true)
}

impl Gateway {
    /// `tools/call` through the Hub's call chain, the client's progress token honoured; with
    /// [deferred](crate::GatewayOptions::deferred) tools, a meta-tool's answer.
    pub(super) async fn call(
        self: &Arc<Self>,
        session: &Arc<Session>,
        request: &Request,
        sink: &Sink,
    ) -> Result<CallResult, ErrorObject> {
        let params: CallParams = match request.params.as_deref() {
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| invalid_params(methods::TOOLS_CALL, e))?,
            None => return Err(invalid_params(methods::TOOLS_CALL, "no name")),
        };
        let name = params
            .name
            .ok_or_else(|| invalid_params(methods::TOOLS_CALL, "no name"))?;
        let arguments = object_arguments(params.arguments, methods::TOOLS_CALL)?;
        let token = params.meta.and_then(|meta| meta.progress_token);
        if self.deferred
            && let Some(meta) = crate::deferred::MetaTool::named(&name)
        {
            return Box::pin(self.meta_call(meta, session, arguments, token, sink)).await;
        }
        self.call_tool(session, &name, arguments, token, sink).await
    }

    /// Calls the pool's tool `name` with `arguments` (an object's text, passed on unparsed),
    /// progress going to the client under `token`, for `session`'s client whose messages go
    /// to `sink`: the one way a tool is called through the gateway.
    pub(super) async fn call_tool(
        self: &Arc<Self>,
        session: &Arc<Session>,
        name: &str,
        arguments: &RawValue,
        token: Option<Value>,
        sink: &Sink,
    ) -> Result<CallResult, ErrorObject> {
        let name = name.to_owned();
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
                let _ = progress_sink.try_send(notification(methods::PROGRESS, Some(&params)));
            }));
        }
        // The backend's own requests while this call runs come back to this client: those the
        // transport relates to the call, and its URL elicitations, by the call's tag.
        let running = self.start_running(RunsOn::Tool(name.clone()), session, sink);
        options.tag = Some(running.tag);
        let mut called = self.hub.call_as_sent(&name, arguments, &options).await;
        // A name no tool has may be one of a server still starting: the call waits for that
        // server alone (each within its connect timeout), not for the grace period, then is
        // tried once more. Boxed, as the rare path.
        if matches!(called, Err(HubError::UnknownTool { .. })) && Box::pin(self.settle_holders(&name)).await {
            called = Box::pin(self.hub.call_as_sent(&name, arguments, &options)).await;
        }
        match called {
            // Text that needs no processing goes on as the backend wrote it.
            Ok(CallOutcome::AsSent(result)) => Ok(CallResult::as_sent(result)),
            Ok(CallOutcome::Processed(processed)) => Ok(CallResult::new(
                processed.content,
                processed.structured_content,
                processed.is_error,
            )),
            Err(HubError::UnknownTool { .. }) => match self.why_unavailable(&name) {
                // A tool result rather than a JSON-RPC error: MCP clients hand a result's text to
                // the model, which can tell the user which server is down and why (and that
                // trying later may help), while most show a protocol error as a bare failure.
                Some(why) => Ok(tool_failure(why)),
                None => Err(invalid_params(
                    methods::TOOLS_CALL,
                    format!("no tool is named {name:?}"),
                )),
            },
            // The tool must run as a task and its server declares none: the gateway answers what
            // the spec has a server answer a call made without a task.
            Err(HubError::Call(error)) if matches!(*error, CallError::TaskRequired { .. }) => {
                Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, error.to_string()))
            }
            Err(HubError::Call(error)) => Ok(tool_failure(plexus_jsonrpc::error_chain(&error))),
            Err(other) => Ok(tool_failure(plexus_jsonrpc::error_chain(&other))),
        }
    }

    /// The parameters of the tool `name` whose arguments a stateless HTTP client mirrors into
    /// `Mcp-Param-{Name}` headers (its input schema's `x-mcp-header` annotations, as its server
    /// listed it); none for a tool the gateway does not know, or whose annotations are invalid
    /// (a client leaves such a tool out).
    pub(crate) async fn param_headers(&self, name: &str) -> ParamHeaders {
        let origin = match self.hub.tool_origin(name) {
            Some(origin) => Some(origin),
            // The tools are known by name once the grace period ends (its lists name them).
            None => {
                self.wait_ready().await;
                self.hub.tool_origin(name)
            }
        };
        let Some(origin) = origin else {
            return ParamHeaders::default();
        };
        let Ok(tools) = self.hub.pool().tools(&origin.server).await else {
            return ParamHeaders::default();
        };
        tools
            .iter()
            .find(|tool| tool.name == origin.tool)
            .and_then(|tool| ParamHeaders::from_schema_object(&tool.input_schema).ok())
            .unwrap_or_default()
    }

    /// Waits until the servers that could hold the tool `name` and are still starting have
    /// connected or failed (each within its connect timeout); whether a call of `name` is worth
    /// trying again: there were such servers, or one that could hold it is connected now. (A
    /// server can connect between the call's look-up, which knows only the servers connected
    /// then, and this one: its tools were never looked at.)
    async fn settle_holders(self: &Arc<Self>, name: &str) -> bool {
        let pool = self.hub.pool();
        let mut holders = false;
        let starting: Vec<String> = pool
            .states()
            .into_iter()
            .filter(|(server, _)| plexus::tools::naming::may_belong_to(server, name))
            .inspect(|(_, state)| holders |= state.status == ServerStatus::Connected)
            // A pending server with a reason waits for approval, not for its turn.
            .filter(|(_, state)| state.status.is_settling() && state.reason.is_none())
            .map(|(server, _)| server)
            .collect();
        for server in &starting {
            // Joins the connect under way; its failure is the server's state, told by the caller.
            let _ = pool.ensure_connected(server).await;
        }
        holders || !starting.is_empty()
    }

    /// Notes a call running on `on` for `session`, whose messages go to `sink`, until the guard
    /// is dropped.
    pub(super) fn start_running(self: &Arc<Self>, on: RunsOn, session: &Arc<Session>, sink: &Sink) -> RunningGuard {
        let tag = self.next_tag.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.running).push(Running {
            on,
            session: Arc::downgrade(session),
            sink: sink.clone(),
            tag,
        });
        RunningGuard {
            gateway: Arc::downgrade(self),
            tag,
        }
    }
}

/// Takes a running call off the list when it ends.
pub(super) struct RunningGuard {
    gateway: Weak<Gateway>,
    tag: u64,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Some(gateway) = self.gateway.upgrade() {
            let mut running = lock(&gateway.running);
            if let Some(at) = running.iter().rposition(|call| call.tag == self.tag) {
                running.remove(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use plexus::config::DiscoveryOptions;
    use plexus::{Hub, HubOptions};
    use plexus_testserver::RemoteServer;
    use serde_json::json;
    use tokio::sync::watch;

    use crate::gateway::Gateway;

    /// A server can connect between a call's look-up (which missed its tool: the server was
    /// still connecting) and the gateway's check of who could hold it; the call must be tried
    /// again then, not answered "no tool is named" (a pipelined `tools/call` once was).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connected_server_that_could_hold_the_tool_gets_the_call_tried_again() {
        let server = RemoteServer::from_args("http", &[]).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("servers.json");
        let servers = json!({"mcpServers": {"demo": {"type": "http", "url": server.url()}}});
        std::fs::write(&config, servers.to_string()).unwrap();
        let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
            .with_explicit_files(vec![config], true)
            .with_managed_file(None)
            .with_env(plexus::config::Environment::from_fn(|_| None));
        let hub = Arc::new(Hub::start(HubOptions::new(discovery)).await.unwrap());
        let readiness = hub.wait_ready(Duration::from_secs(30)).await.unwrap();
        assert_eq!(readiness.connected, ["demo"]);
        let (_ready, ready) = watch::channel(true);
        let gateway = Gateway::new(Arc::clone(&hub), ready, false);
        assert!(gateway.settle_holders("mcp__demo__echo").await);
        // No server could hold it: the unknown name is the answer at once.
        assert!(!gateway.settle_holders("mcp__other__echo").await);
        hub.shutdown().await;
    }
}
