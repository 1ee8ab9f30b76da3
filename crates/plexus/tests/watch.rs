//! A Hub that follows its config files (`ConfigWatcher`), against real stdio test servers: edits
//! add, remove and restart servers without disturbing the others or their calls in flight; an
//! edit that does not load changes nothing; an entry made invalid keeps its server running.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use plexus::config::{DiscoveryOptions, Environment};
use plexus::pool::ServerStatus;
use plexus::{ConfigEvent, ConfigWatcher, Hub, HubOptions};
use plexus_testserver::child_test::testserver_binary;
use serde_json::{Value, json};
use support::HANG_GUARD;
use tokio::sync::broadcast;

/// A stdio test server's entry, logging its events to `log` when given.
fn server(log: Option<&Path>) -> Value {
    let mut args = vec![json!("stdio")];
    if let Some(log) = log {
        args.extend([json!("--event-log"), json!(log)]);
    }
    json!({"command": testserver_binary(), "args": args})
}

/// Writes `servers` as the config file `path`, as an editor that saves through a temporary
/// file does.
fn write_config(path: &Path, servers: &Value) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, json!({"mcpServers": servers}).to_string()).unwrap();
    std::fs::rename(&temporary, path).unwrap();
}

async fn start_hub(discovery: DiscoveryOptions) -> Arc<Hub> {
    let hub = Arc::new(Hub::start(HubOptions::new(discovery)).await.unwrap());
    let _ = hub.wait_ready(HANG_GUARD).await.unwrap();
    hub
}

fn explicit(dir: &Path, config: PathBuf) -> DiscoveryOptions {
    DiscoveryOptions::new(dir.join("home"), dir)
        .with_explicit_files(vec![config], true)
        .with_managed_file(None)
        .with_env(Environment::from_fn(|_| None))
}

/// The next event, within the hang guard.
async fn next(events: &mut broadcast::Receiver<ConfigEvent>) -> ConfigEvent {
    tokio::time::timeout(HANG_GUARD, events.recv())
        .await
        .expect("no config event")
        .unwrap()
}

async fn connected(hub: &Hub, server: &str) {
    tokio::time::timeout(HANG_GUARD, async {
        while hub.pool().state(server).map(|state| state.status) != Some(ServerStatus::Connected) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{server} did not connect"));
}

async fn echo(hub: &Hub, tool: &str) -> String {
    let result = hub.call(tool, json!({"text": "hi"})).await.unwrap();
    result.content[0].as_text().unwrap().to_owned()
}

/// The pids the test server logging to `log` started with.
fn starts(log: &Path) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "start")
        .filter_map(|event| event["pid"].as_u64())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_add_remove_and_restart_servers_without_disturbing_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("servers.json");
    let a_log = dir.path().join("a.jsonl");
    write_config(&config, &json!({"a": server(Some(&a_log)), "b": server(None)}));
    let hub = start_hub(explicit(dir.path(), config.clone())).await;
    let watcher = ConfigWatcher::start(&hub).unwrap();
    let mut events = watcher.subscribe();
    let a_started = starts(&a_log);
    assert_eq!(a_started.len(), 1);

    // A call in flight on `a` while `b` goes and `c` comes.
    let slow = tokio::spawn({
        let hub = Arc::clone(&hub);
        async move { hub.call("mcp__a__slow", json!({"ms": 1500})).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    write_config(&config, &json!({"a": server(Some(&a_log)), "c": server(None)}));
    let ConfigEvent::Applied(change) = next(&mut events).await else {
        panic!("the edit was rejected")
    };
    assert_eq!(change.added, ["c"]);
    assert_eq!(change.removed, ["b"]);
    assert!(change.restarted.is_empty(), "{change:?}");
    assert!(hub.pool().state("b").is_none());
    let result = tokio::time::timeout(HANG_GUARD, slow).await.unwrap().unwrap().unwrap();
    assert!(!result.is_error, "the call on `a` failed: {result:?}");
    connected(&hub, "c").await;
    assert_eq!(echo(&hub, "mcp__c__echo").await, "hi");
    assert!(hub.tool_pool().await.names().any(|name| name == "mcp__c__echo"));
    assert!(!hub.tool_pool().await.names().any(|name| name.starts_with("mcp__b__")));

    // A changed entry restarts that server alone.
    let mut changed = server(None);
    changed["env"] = json!({"EDITED": "1"});
    write_config(&config, &json!({"a": server(Some(&a_log)), "c": changed}));
    let ConfigEvent::Applied(change) = next(&mut events).await else {
        panic!("the edit was rejected")
    };
    assert!(change.added.is_empty() && change.removed.is_empty(), "{change:?}");
    assert_eq!(change.restarted, ["c"]);
    connected(&hub, "c").await;
    assert_eq!(echo(&hub, "mcp__c__echo").await, "hi");

    // An edit that does not parse changes nothing, and says where.
    std::fs::write(&config, "{\"mcpServers\": {\"a\": ").unwrap();
    match next(&mut events).await {
        ConfigEvent::Rejected { path, error } => {
            assert_eq!(path, config);
            assert!(error.to_string().contains("servers.json:1:21"), "{error}");
        }
        ConfigEvent::Applied(change) => panic!("a broken file was applied: {change:?}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(hub.pool().names(), ["a", "c"]);
    assert_eq!(echo(&hub, "mcp__a__echo").await, "hi");

    // An entry made invalid keeps its server on its last good entry.
    write_config(&config, &json!({"a": {"command": 5}, "c": changed}));
    let ConfigEvent::Applied(change) = next(&mut events).await else {
        panic!("the edit was rejected")
    };
    assert!(change.is_empty(), "{change:?}");
    assert_eq!(change.kept_last_good, ["a"]);
    assert_eq!(change.report.invalid_servers.len(), 1);
    assert_eq!(change.report.invalid_servers[0].name, "a");
    assert_eq!(echo(&hub, "mcp__a__echo").await, "hi");
    // `a` was never restarted: one start, the same process.
    assert_eq!(starts(&a_log), a_started);

    drop(watcher);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_created_later_in_a_new_directory_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    // The plexus home does not exist yet: the user file's directory appears later.
    let home = dir.path().join("home");
    let discovery = DiscoveryOptions::new(&home, &project)
        .with_managed_file(None)
        .with_env(Environment::from_fn(|_| None));
    let hub = start_hub(discovery).await;
    assert!(hub.pool().names().is_empty());
    let watcher = ConfigWatcher::start(&hub).unwrap();
    let mut events = watcher.subscribe();

    std::fs::create_dir_all(&home).unwrap();
    write_config(&home.join("settings.json"), &json!({"late": server(None)}));
    let change = loop {
        match next(&mut events).await {
            ConfigEvent::Applied(change) if !change.is_empty() => break change,
            ConfigEvent::Applied(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(change.added, ["late"]);
    connected(&hub, "late").await;
    assert_eq!(echo(&hub, "mcp__late__echo").await, "hi");
    drop(watcher);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipe_given_as_config_cannot_be_followed() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("servers.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let config = dir.path().join("servers.json");
    write_config(&config, &json!({}));
    let hub = start_hub(explicit(dir.path(), config)).await;
    // The Hub read a regular file; following a pipe named alongside is refused by name.
    let discovery = explicit(dir.path(), fifo.clone());
    let mut options = discovery;
    options.explicit_files.insert(0, dir.path().join("servers.json"));
    let piped = Arc::new(
        Hub::start_with_config(HubOptions::new(options), hub.config().as_ref().clone())
            .await
            .unwrap(),
    );
    let error = ConfigWatcher::start(&piped).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "cannot follow the config file {}: it is not a regular file (a pipe can be read only once)",
            fifo.display()
        )
    );
    piped.shutdown().await;
    hub.shutdown().await;
}
