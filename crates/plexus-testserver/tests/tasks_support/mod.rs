//! What the task tests share: an `initialize`-era client that answers the task's question, raw
//! requests through it, the stateless envelope and HTTP requests, and checks of a task's shape.
#![allow(dead_code, unreachable_pub)] // the support code of one test binary, shared by its tests.
#![allow(clippy::needless_pass_by_value)] // `json!(..)` arguments by value keep the tests readable.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plexus_client::{Client, ClientError, ClientHandler, RequestOptions, ServerRequestContext};
use plexus_jsonrpc::ErrorObject;
use plexus_protocol::{ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability};
use plexus_testserver::EventLogFile;
use serde_json::{Value, json};

use crate::{common, support, wire};

/// How long a test waits for what must happen (a hang guard, not a timing check).
pub const HANG_GUARD: Duration = common::HANG_GUARD;
/// The `_meta` key naming a message's task.
pub const RELATED: &str = "io.modelcontextprotocol/related-task";
/// The tasks extension of the stateless era.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Answers the task's question with `angle` (accepting), or declines; remembers the questions.
pub struct Angler {
    pub angle: Option<&'static str>,
    pub asked: Mutex<Vec<Value>>,
}

#[plexus_client::async_trait]
impl ClientHandler for Angler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        _context: ServerRequestContext,
    ) -> Result<ElicitResult, ErrorObject> {
        self.asked.lock().unwrap().push(serde_json::to_value(&params).unwrap());
        Ok(match self.angle {
            Some(angle) => serde_json::from_value(json!({"action": "accept", "content": {"angle": angle}})).unwrap(),
            None => ElicitResult::decline(),
        })
    }
}

/// An `initialize`-era session (2025-11-25) with `plexus-testserver stdio ARGS`, whose client
/// answers questions as `angle` says.
pub async fn era_a(args: &[&str], angle: Option<&'static str>) -> (Client, Arc<Angler>) {
    let handler = Arc::new(Angler {
        angle,
        asked: Mutex::new(Vec::new()),
    });
    let options = support::handshake_options("tasks").handler(handler.clone());
    let client = support::connect_with(support::config(args), options).await.unwrap();
    (client, handler)
}

/// A request through the client, raw.
pub async fn call(client: &Client, method: &'static str, params: Value) -> Result<Value, ClientError> {
    client
        .request::<Value, Value>(method, Some(&params), &RequestOptions::default())
        .await
}

/// The JSON-RPC error a request must fail with.
pub fn rpc_error(outcome: Result<Value, ClientError>) -> ErrorObject {
    match outcome {
        Err(ClientError::Rpc { error, .. }) => error,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

/// Calls `research` with `arguments` as a task (era A); the created task.
pub async fn start(client: &Client, arguments: Value, task: Value) -> Value {
    let created = call(
        client,
        "tools/call",
        json!({"name": "research", "arguments": arguments, "task": task}),
    )
    .await
    .unwrap();
    created["task"].clone()
}

/// Polls `tasks/get` (era A) every `pollInterval` until the task has `status`.
pub async fn poll_until(client: &Client, id: &str, status: &str) -> Value {
    let start = Instant::now();
    loop {
        let task = call(client, "tasks/get", json!({"taskId": id})).await.unwrap();
        if task["status"] == status {
            return task;
        }
        assert!(start.elapsed() < HANG_GUARD, "still {task} after {HANG_GUARD:?}");
        tokio::time::sleep(Duration::from_millis(task["pollInterval"].as_u64().unwrap())).await;
    }
}

/// Whether `text` is an ISO 8601 UTC time to the millisecond.
pub fn is_timestamp(text: &Value) -> bool {
    let shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    let text = text.as_str().unwrap_or_default();
    text.len() == shape.len()
        && text
            .chars()
            .zip(shape.chars())
            .all(|(c, s)| if s == 'd' { c.is_ascii_digit() } else { c == s })
}

/// Checks a task's fields: exactly `keys`, a 32-hex-digit id, timestamps, and `expected`.
pub fn assert_task(task: &Value, keys: &[&str], expected: &Value) {
    let mut found: Vec<&str> = task.as_object().unwrap().keys().map(String::as_str).collect();
    found.sort_unstable();
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    assert_eq!(found, keys, "{task}");
    let id = task["taskId"].as_str().unwrap();
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{id}"
    );
    assert!(
        is_timestamp(&task["createdAt"]) && is_timestamp(&task["lastUpdatedAt"]),
        "{task}"
    );
    for (key, value) in expected.as_object().unwrap() {
        assert_eq!(&task[key], value, "{key} of {task}");
    }
}

/// The fields of a task in the `initialize` era.
pub const ERA_A_KEYS: &[&str] = &[
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttl",
    "pollInterval",
];

/// The `task-status` events of task `id`, in order.
pub fn statuses(log: &EventLogFile, id: &str) -> Vec<String> {
    log.matching(&json!({"event": "task-status", "id": id}))
        .iter()
        .map(|event| event["status"].as_str().unwrap().to_owned())
        .collect()
}

/// `params` with the stateless envelope, declaring elicitation and (`tasks`) the extension.
pub fn envelope(mut params: Value, tasks: bool) -> Value {
    let mut capabilities = json!({"elicitation": {}});
    if tasks {
        capabilities["extensions"] = json!({EXTENSION: {}});
    }
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
    });
    params
}

/// The fields of a task the stateless era creates (and polls, before it ends).
pub const ERA_B_KEYS: &[&str] = &[
    "resultType",
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttlMs",
    "pollIntervalMs",
];

/// Polls `tasks/get` (era B, stdio) until the task has `status`.
pub fn poll_b(server: &mut common::Server, id: &Value, status: &str) -> Value {
    let start = Instant::now();
    loop {
        let task = server.result("tasks/get", envelope(json!({"taskId": id}), true));
        if task["status"] == status {
            return task;
        }
        assert!(start.elapsed() < HANG_GUARD, "still {task}");
        std::thread::sleep(Duration::from_millis(task["pollIntervalMs"].as_u64().unwrap()));
    }
}

/// `plexus-testserver stdio --tasks --task-poll-ms 20` in the stateless era (after a discover,
/// which must declare the extension).
pub fn era_b(log: &EventLogFile) -> common::Server {
    let mut server = common::Server::start(&["--tasks", "--task-poll-ms", "20", &log.arg()]);
    let discovered = server.result("server/discover", envelope(json!({}), true));
    assert_eq!(discovered["capabilities"]["extensions"], json!({EXTENSION: {}}));
    assert!(discovered["capabilities"].get("tasks").is_none());
    server
}

/// Calls `research` with `arguments` in the stateless era, declaring the extension.
pub fn call_b(server: &mut common::Server, arguments: &Value) -> Value {
    server.result(
        "tools/call",
        envelope(json!({"name": "research", "arguments": arguments}), true),
    )
}

/// A stateless POST of `method` with `params` (enveloped) and `Mcp-Name: name`.
pub fn post_b(remote: &wire::Remote, id: i64, method: &str, params: Value, name: Option<&str>) -> wire::Response {
    post_message(remote, &wire::request(id, method, envelope(params, true)), name)
}

/// A stateless POST of `message` with the headers its method calls for and `Mcp-Name: name`.
pub fn post_message(remote: &wire::Remote, message: &Value, name: Option<&str>) -> wire::Response {
    let method = message["method"].as_str().unwrap();
    let mut headers = vec![
        wire::ACCEPT_BOTH,
        wire::JSON_BODY,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    remote
        .connect()
        .exchange("POST", &remote.path, &headers, &serde_json::to_vec(message).unwrap())
}

/// The response message of an HTTP answer: its JSON body, or the last event of its stream.
pub fn message_of(response: &wire::Response) -> Value {
    if response.header("content-type") == Some("application/json") {
        return response.json();
    }
    let text = response.text();
    let data = text.lines().filter_map(|line| line.strip_prefix("data: ")).next_back();
    serde_json::from_str(data.expect("an event")).unwrap()
}
