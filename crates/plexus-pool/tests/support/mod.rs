//! What the pool's tests share: the test server (as a child process and in-process), entries,
//! event logs, and a pool with the facade's default connector.
#![allow(dead_code, unreachable_pub)] // each test binary uses a part.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use plexus::DefaultConnector;
use plexus::config::ServerConfig;
use plexus_pool::{Pool, PoolEvent, PoolSettings, ServerSpec, ServerState, ServerStatus};
use plexus_testserver::RemoteServer;
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// Long enough for anything on a busy machine; never the point of a test.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The `plexus-testserver` binary (see [`plexus_testserver::child_test::testserver_binary`]).
pub fn testserver() -> &'static Path {
    plexus_testserver::child_test::testserver_binary()
}

/// A config entry as a user writes it.
pub fn entry(value: &Value) -> ServerConfig {
    ServerConfig::from_json(value)
        .map(|(config, _warnings)| config)
        .unwrap()
}

/// `plexus-testserver stdio ARGS…` as server `name`.
pub fn stdio(name: &str, args: &[&str]) -> ServerSpec {
    let mut all = vec!["stdio"];
    all.extend_from_slice(args);
    ServerSpec::new(name, entry(&json!({"command": testserver(), "args": all})), None)
}

/// A remote entry of `kind` for `url`.
pub fn remote(name: &str, kind: &str, url: &str) -> ServerSpec {
    ServerSpec::new(name, entry(&json!({"type": kind, "url": url})), None)
}

/// Starts `plexus-testserver MODE ARGS…` in-process on an ephemeral port.
pub async fn test_server(mode: &str, args: &[&str]) -> RemoteServer {
    RemoteServer::from_args(mode, args).await.unwrap()
}

/// A pool with the facade's default connector (no plexus home).
pub fn pool(settings: PoolSettings) -> Pool {
    Pool::new(Arc::new(DefaultConnector::new()), settings)
}

/// The events of an event log, in order.
pub fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// How many events of `kind` (and, for `request`, of `method`) the log holds.
pub fn count(log: &Path, kind: &str, method: Option<&str>) -> usize {
    events(log)
        .iter()
        .filter(|e| e["event"] == kind && method.is_none_or(|m| e["method"] == m))
        .count()
}

/// Waits (within the hang guard) for the first event that `wanted` picks.
pub async fn next_event<T>(
    events: &mut broadcast::Receiver<PoolEvent>,
    mut wanted: impl FnMut(&PoolEvent) -> Option<T>,
) -> T {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let event = events.recv().await.unwrap();
            if let Some(found) = wanted(&event) {
                return found;
            }
        }
    })
    .await
    .expect("the event did not come")
}

/// Waits (within the hang guard) until `check` holds, polling.
pub async fn until(mut check: impl FnMut() -> bool) {
    tokio::time::timeout(HANG_GUARD, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the condition did not come true");
}

/// Calls `tool` of `client` with `arguments`.
pub async fn call(
    client: &plexus::Client,
    tool: &str,
    arguments: Value,
) -> Result<plexus::protocol::CallToolResult, plexus::ClientError> {
    client.call_tool(tool, arguments.as_object().cloned()).await
}

/// Calls the `echo` tool and returns its text.
pub async fn echo(client: &plexus::Client, text: &str) -> String {
    let result = call(client, "echo", json!({ "text": text })).await.unwrap();
    serde_json::to_value(&result.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The state of the next change of a server to `status`.
pub async fn next_state(events: &mut broadcast::Receiver<PoolEvent>, status: ServerStatus) -> ServerState {
    next_event(events, |event| match event {
        PoolEvent::StateChanged { state, .. } if state.status == status => Some((**state).clone()),
        _ => None,
    })
    .await
}
