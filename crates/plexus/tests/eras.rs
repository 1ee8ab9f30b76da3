//! An entry's `protocolVersion` through the Hub, against the test server's era modes over stdio:
//! `auto` probes (a server that exits on the probe is started again for the `initialize` era),
//! a stateless revision pins that era, an unknown revision is refused before any process starts.

use std::collections::HashMap;
use std::time::Duration;

use plexus::config::{DiscoveryOptions, Environment};
use plexus::protocol::ProtocolVersion;
use plexus::transport::error_chain;
use plexus::{Hub, HubOptions};
use plexus_testserver::child_test::testserver_binary;
use serde_json::{Value, json};

/// A Hub over one stdio entry of the test server with `args` and `extra` entry fields.
async fn start_hub(dir: &tempfile::TempDir, args: &[&str], extra: Value) -> Hub {
    let mut entry = json!({"command": testserver_binary(), "args": ["stdio"]});
    entry["args"]
        .as_array_mut()
        .unwrap()
        .extend(args.iter().map(|a| json!(a)));
    entry
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"demo": entry}}).to_string()).unwrap();
    let vars: HashMap<String, String> = HashMap::new();
    let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
        .with_explicit_files(vec![config], true)
        .with_managed_file(None)
        .with_env(Environment::from_fn(move |name| vars.get(name).cloned()));
    let hub = Hub::start(HubOptions::new(discovery)).await.unwrap();
    let _ = hub.wait_ready(Duration::from_secs(30)).await;
    hub
}

fn starts(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(r#""event":"start""#))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_speaks_the_stateless_era_to_a_server_that_answers_the_probe() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(&dir, &[], json!({"protocolVersion": "auto"})).await;
    let client = hub.pool().ensure_connected("demo").await.unwrap();
    assert_eq!(client.server().protocol_version, ProtocolVersion::V2026_07_28);
    let echoed = hub.call("mcp__demo__echo", json!({"text": "modern"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("modern"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_starts_a_server_that_exits_on_the_probe_again_for_the_initialize_era() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let args = [
        "--era",
        "legacy",
        "--probe-answer",
        "exit",
        "--event-log",
        log.to_str().unwrap(),
    ];
    let hub = start_hub(&dir, &args, json!({"protocolVersion": "auto"})).await;
    let echoed = hub.call("mcp__demo__echo", json!({"text": "legacy"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("legacy"));
    let client = hub.pool().ensure_connected("demo").await.unwrap();
    assert_eq!(client.server().protocol_version, ProtocolVersion::LATEST);
    assert_eq!(client.server().era_source, plexus::client::EraSource::Probe);
    assert_eq!(starts(&log), 2, "started once for the probe, once for the handshake");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_revision_is_spoken_without_a_probe_and_an_unknown_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let args = ["--era", "modern", "--event-log", log.to_str().unwrap()];
    let hub = start_hub(&dir, &args, json!({"protocolVersion": "2026-07-28"})).await;
    let echoed = hub.call("mcp__demo__echo", json!({"text": "pinned"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("pinned"));
    hub.shutdown().await;
    let methods: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "request")
        .map(|event| event["method"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(methods.first().map(String::as_str), Some("server/discover"));

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let hub = start_hub(
        &dir,
        &["--event-log", log.to_str().unwrap()],
        json!({"protocolVersion": "2099-01-01"}),
    )
    .await;
    let error = hub.pool().ensure_connected("demo").await.unwrap_err();
    assert!(
        error_chain(&error).contains("server \"demo\": its protocolVersion is no revision plexus speaks"),
        "{}",
        error_chain(&error)
    );
    assert_eq!(starts(&log), 0, "no process was started");
    hub.shutdown().await;
}
