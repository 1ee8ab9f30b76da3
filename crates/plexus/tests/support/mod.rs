//! What the facade's remote tests share: the in-process test server, entries as users write
//! them, and the `echo` tool.
#![allow(dead_code, unreachable_pub)] // each test binary uses a part.

use std::time::Duration;

use plexus::ClientError;
use plexus::config::ServerConfig;
use plexus_testserver::RemoteServer;
use serde_json::{Value, json};

/// Long enough for anything on a busy machine; never the point of a test.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// Starts `plexus-testserver MODE ARGS…` in-process on an ephemeral port.
pub async fn test_server(mode: &str, args: &[&str]) -> RemoteServer {
    RemoteServer::from_args(mode, args).await.unwrap()
}

/// A config entry as a user writes it.
pub fn entry(value: &Value) -> ServerConfig {
    ServerConfig::from_json(value)
        .map(|(config, _warnings)| config)
        .unwrap()
}

/// Calls the `echo` tool and returns its text.
pub async fn echo(client: &plexus::Client, text: &str) -> Result<String, ClientError> {
    let result = client
        .call_tool("echo", json!({ "text": text }).as_object().cloned())
        .await?;
    Ok(serde_json::to_value(&result.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned())
}

/// A Hub whose one server `demo` is `entry`, with the plexus home `dir/home`, an empty
/// environment, and its servers settled (or 30 s passed).
pub async fn hub_with_entry(dir: &tempfile::TempDir, entry: Value) -> plexus::Hub {
    use plexus::config::{DiscoveryOptions, Environment};
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"demo": entry}}).to_string()).unwrap();
    let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
        .with_explicit_files(vec![config], true)
        .with_managed_file(None)
        .with_env(Environment::from_fn(|_| None));
    let hub = plexus::Hub::start(plexus::HubOptions::new(discovery)).await.unwrap();
    let _ = hub.wait_ready(HANG_GUARD).await;
    hub
}
