//! The client chooses each server's protocol era (plexus-client's `EraChoice::Probe`) against
//! this server's era modes over real pipes: a modern or dual server gets the stateless era and
//! every request carries the envelope; a legacy server that answers the probe with an error, or
//! not at all, gets the `initialize` handshake on the same connection; -32022 naming a version
//! we speak is a retry, never a fall back; a server that exits on the probe is said as such.

mod support;

use std::time::{Duration, Instant};

use plexus_client::{ClientError, ClientOptions, EraChoice, EraSource};
use plexus_protocol::ProtocolVersion;
use serde_json::json;
use support::{HANG_GUARD, args, config, connect_with, events, first_text, temp_dir};

fn probing(timeout: Duration) -> ClientOptions {
    let mut options = ClientOptions::new("testserver");
    options.era = EraChoice::Probe { probe_timeout: timeout };
    options
}

async fn connect(server_args: &[&str], options: ClientOptions) -> Result<plexus_client::Client, ClientError> {
    tokio::time::timeout(HANG_GUARD, connect_with(config(server_args), options))
        .await
        .expect("hang guard")
}

#[tokio::test]
async fn a_dual_server_is_spoken_to_in_the_stateless_era_with_the_envelope_on_every_request() {
    let dir = temp_dir();
    let log = dir.path().join("events.jsonl");
    let log_arg = log.to_str().unwrap();
    let client = connect(&["--event-log", log_arg], probing(Duration::from_secs(5)))
        .await
        .unwrap();
    let details = client.server();
    assert_eq!(details.protocol_version, ProtocolVersion::V2026_07_28);
    assert_eq!(details.era_source, EraSource::Probe);
    assert_eq!(details.server_info.name, "plexus-testserver");
    assert!(details.capabilities.tools.is_some());

    assert_eq!(client.list_tools().await.unwrap().len(), 20);
    let sum = client.call_tool("add", args(json!({"a": 2, "b": 5}))).await.unwrap();
    assert_eq!(first_text(&sum), "7");
    client.close().await.unwrap();

    let requests: Vec<_> = events(&log).into_iter().filter(|e| e["event"] == "request").collect();
    let methods: Vec<_> = requests
        .iter()
        .map(|e| e["method"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        methods,
        ["server/discover", "tools/list", "tools/call"],
        "no initialize"
    );
    for request in &requests {
        let meta = &request["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{request}"
        );
        assert!(
            meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
            "{request}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "plexus",
            "{request}"
        );
    }
    assert_eq!(requests[2]["params"]["arguments"], json!({"a": 2, "b": 5}));
}

#[tokio::test]
async fn a_legacy_server_that_answers_the_probe_with_an_error_gets_initialize_on_the_same_connection() {
    for answer in ["method-not-found", "invalid-params"] {
        let dir = temp_dir();
        let log = dir.path().join("events.jsonl");
        let server = [
            "--era",
            "legacy",
            "--probe-answer",
            answer,
            "--event-log",
            log.to_str().unwrap(),
        ];
        let client = connect(&server, probing(Duration::from_secs(5))).await.unwrap();
        assert_eq!(client.server().protocol_version, ProtocolVersion::LATEST, "{answer}");
        assert_eq!(client.server().era_source, EraSource::Probe);
        assert_eq!(client.list_tools().await.unwrap().len(), 20);
        client.close().await.unwrap();
        let starts = events(&log).into_iter().filter(|e| e["event"] == "start").count();
        assert_eq!(starts, 1, "{answer}: one process, the probe then initialize");
    }
}

#[tokio::test]
async fn a_silent_legacy_server_costs_at_most_the_probe_timeout() {
    let started = Instant::now();
    let client = connect(
        &["--era", "legacy", "--probe-answer", "silence"],
        probing(Duration::from_millis(300)),
    )
    .await
    .unwrap();
    assert_eq!(client.server().protocol_version, ProtocolVersion::LATEST);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(client.list_tools().await.unwrap().len(), 20);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_that_exits_on_the_probe_is_said_as_such() {
    let error = connect(
        &["--era", "legacy", "--probe-answer", "exit"],
        probing(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, ClientError::ProbeClosed { .. }), "{error:?}");
    assert!(
        plexus_transport::error_chain(&error).starts_with(
            "the server closed the connection on the server/discover probe: the connection is closed: the server \
             exited with status 1"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn unsupported_version_naming_one_we_speak_is_retried_never_a_fall_back() {
    let dir = temp_dir();
    let log = dir.path().join("events.jsonl");
    let server = [
        "--era",
        "modern",
        "--reject-first-modern-request",
        "--event-log",
        log.to_str().unwrap(),
    ];
    let client = connect(&server, probing(Duration::from_secs(5))).await.unwrap();
    assert_eq!(client.server().protocol_version, ProtocolVersion::V2026_07_28);
    client.close().await.unwrap();
    let requests: Vec<_> = events(&log).into_iter().filter(|e| e["event"] == "request").collect();
    let methods: Vec<_> = requests.iter().map(|e| e["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["server/discover", "server/discover"]);
    assert_ne!(requests[0]["id"], requests[1]["id"], "the retry is a new request");
}

#[tokio::test]
async fn a_pinned_era_sends_no_probe() {
    let mut options = ClientOptions::new("testserver");
    options.era = EraChoice::Stateless(ProtocolVersion::V2026_07_28);
    let client = connect(&["--era", "modern"], options).await.unwrap();
    assert_eq!(client.server().era_source, EraSource::Pinned);
    assert_eq!(client.server().protocol_version, ProtocolVersion::V2026_07_28);
    client.close().await.unwrap();

    // The initialize era pinned against a modern-only server: its -32022, no probe.
    let error = connect(&["--era", "modern"], ClientOptions::new("testserver"))
        .await
        .unwrap_err();
    let ClientError::Rpc { method, error } = &error else {
        panic!("{error:?}")
    };
    assert_eq!((method.as_str(), error.code.0), ("initialize", -32022));
}
