//! An entry's `protocolVersion` and `probeTimeout` through the Hub, against the test server's era
//! modes over stdio: no version or `auto` probes, waiting `probeTimeout` (a server that exits on
//! the probe is started again for the `initialize` era),
//! a stateless revision pins that era, an unknown revision is refused before any process starts;
//! a probe's verdict is remembered in the plexus home and corrected when the server changes.

use plexus::Hub;
use plexus::protocol::ProtocolVersion;
use plexus::transport::error_chain;
use plexus_testserver::child_test::testserver_binary;
use serde_json::{Value, json};
use support::hub_with_entry;

mod support;

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
    hub_with_entry(dir, entry).await
}

fn starts(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(r#""event":"start""#))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_without_a_version_or_with_auto_speaks_the_stateless_era_to_a_server_that_answers_the_probe() {
    for extra in [json!({}), json!({"protocolVersion": "auto"})] {
        let dir = tempfile::tempdir().unwrap();
        let hub = start_hub(&dir, &[], extra.clone()).await;
        let client = hub.pool().ensure_connected("demo").await.unwrap();
        assert_eq!(
            client.server().protocol_version,
            ProtocolVersion::V2026_07_28,
            "{extra}"
        );
        assert_eq!(client.server().era_source, plexus::client::EraSource::Probe, "{extra}");
        let echoed = hub.call("mcp__demo__echo", json!({"text": "modern"})).await.unwrap();
        assert_eq!(echoed.content[0].as_text(), Some("modern"));
        hub.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entrys_probe_timeout_is_how_long_a_silent_server_is_waited_for() {
    // A server of the `initialize` era that never answers the probe. Waited for a second (the
    // default), it gets the handshake within its 3 s connect timeout.
    let args = ["--era", "legacy", "--probe-answer", "silence"];
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(&dir, &args, json!({"timeout": 3000})).await;
    let client = hub.pool().ensure_connected("demo").await.unwrap();
    assert_eq!(client.server().protocol_version, ProtocolVersion::LATEST);
    assert_eq!(client.server().era_source, plexus::client::EraSource::Probe);
    hub.shutdown().await;
    // Waited for a minute, the probe outlasts the connect.
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(&dir, &args, json!({"timeout": 3000, "probeTimeout": 60000})).await;
    let error = hub.pool().ensure_connected("demo").await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        "server \"demo\": could not connect to stdio: the connect did not finish within its timeout of 3000 ms \
         (the entry's `timeout`, else MCP_TIMEOUT, else 30 s)"
    );
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

/// Writes `dir/server.sh`, which runs the test server over stdio with `args` and an event log
/// `dir/events.jsonl`; an entry that runs the script stays the same entry whatever it runs.
fn write_script(dir: &tempfile::TempDir, args: &str) -> std::path::PathBuf {
    let script = dir.path().join("server.sh");
    let log = dir.path().join("events.jsonl");
    std::fs::write(
        &script,
        format!(
            "exec '{}' stdio {args} --event-log '{}'\n",
            testserver_binary().display(),
            log.display()
        ),
    )
    .unwrap();
    script
}

/// A Hub over the entry `sh dir/server.sh` with `protocolVersion: auto`; its server's era and
/// where that came from.
async fn era_of_script(dir: &tempfile::TempDir) -> (ProtocolVersion, plexus::client::EraSource) {
    let script = dir.path().join("server.sh");
    let hub = hub_with_entry(
        dir,
        json!({"command": "sh", "args": [script], "protocolVersion": "auto"}),
    )
    .await;
    let echoed = hub.call("mcp__demo__echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("hi"));
    let client = hub.pool().ensure_connected("demo").await.unwrap();
    let era = (client.server().protocol_version, client.server().era_source);
    hub.shutdown().await;
    era
}

/// How many `server/discover` requests the script's servers received so far.
fn discovers(dir: &tempfile::TempDir) -> usize {
    std::fs::read_to_string(dir.path().join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "request" && event["method"] == "server/discover")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remembered_verdict_costs_no_probe_and_a_wrong_one_is_corrected_on_the_spot() {
    use plexus::client::EraSource;
    let dir = tempfile::tempdir().unwrap();
    write_script(&dir, "--era legacy");
    assert_eq!(era_of_script(&dir).await, (ProtocolVersion::LATEST, EraSource::Probe));
    assert_eq!(discovers(&dir), 1);
    assert!(dir.path().join("home").join(plexus::ERA_VERDICTS_FILE).exists());
    // The next start of the same entry: the handshake at once.
    assert_eq!(era_of_script(&dir).await, (ProtocolVersion::LATEST, EraSource::Cache));
    assert_eq!(discovers(&dir), 1, "no probe for a remembered verdict");
    // The server was upgraded: it refuses the handshake, is probed, and the verdict changes.
    write_script(&dir, "--era modern");
    assert_eq!(
        era_of_script(&dir).await,
        (ProtocolVersion::V2026_07_28, EraSource::Probe)
    );
    assert_eq!(
        era_of_script(&dir).await,
        (ProtocolVersion::V2026_07_28, EraSource::Cache)
    );
    // And downgraded again: the discover is refused, the handshake follows at once.
    write_script(&dir, "--era legacy --probe-answer invalid-params");
    assert_eq!(era_of_script(&dir).await, (ProtocolVersion::LATEST, EraSource::Probe));
    assert_eq!(era_of_script(&dir).await, (ProtocolVersion::LATEST, EraSource::Cache));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_both_eras_that_answers_the_probe_late_is_spoken_to_in_the_stateless_era() {
    use plexus::client::EraSource;
    let dir = tempfile::tempdir().unwrap();
    // The server starts after the probe timed out (1 s): it reads the probe first, so it serves
    // the stateless era on this connection and refuses the handshake that follows.
    let script = dir.path().join("server.sh");
    std::fs::write(
        &script,
        format!("sleep 1.5; exec '{}' stdio\n", testserver_binary().display()),
    )
    .unwrap();
    let hub = hub_with_entry(
        &dir,
        json!({"command": "sh", "args": [script], "protocolVersion": "auto"}),
    )
    .await;
    let echoed = hub.call("mcp__demo__echo", json!({"text": "late"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("late"));
    let client = hub.pool().ensure_connected("demo").await.unwrap();
    assert_eq!(
        (client.server().protocol_version, client.server().era_source),
        (ProtocolVersion::V2026_07_28, EraSource::Probe)
    );
    hub.shutdown().await;
}
