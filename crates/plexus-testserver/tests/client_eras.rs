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
    client.ping().await.unwrap();
    client.close().await.unwrap();

    let requests: Vec<_> = events(&log).into_iter().filter(|e| e["event"] == "request").collect();
    let methods: Vec<_> = requests
        .iter()
        .map(|e| e["method"].as_str().unwrap().to_owned())
        // The session's subscription to the server's changes goes its own way (its own tests).
        .filter(|method| method != "subscriptions/listen")
        .collect();
    assert_eq!(
        methods,
        ["server/discover", "tools/list", "tools/call", "server/discover"],
        "no initialize, and a ping is a discover"
    );
    for request in &requests {
        assert!(request["params"].is_object(), "{request}");
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
    let call = requests.iter().find(|e| e["method"] == "tools/call").unwrap();
    assert_eq!(call["params"]["arguments"], json!({"a": 2, "b": 5}));
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
async fn a_silent_legacy_server_gets_the_handshake_once_the_probe_times_out() {
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
    let error = connect(&["--era", "modern"], support::handshake_options("testserver"))
        .await
        .unwrap_err();
    let ClientError::Rpc { method, error } = &error else {
        panic!("{error:?}")
    };
    assert_eq!((method.as_str(), error.code.0), ("initialize", -32022));
}

/// Answers elicitations (as Ada) and roots; declares sampling but has no answer for it (so a
/// server asks, and the client's refusal is what the test sees).
struct Answering;

#[plexus_client::async_trait]
impl plexus_client::ClientHandler for Answering {
    fn capabilities(&self) -> plexus_protocol::ClientCapabilities {
        plexus_protocol::ClientCapabilities {
            elicitation: Some(plexus_protocol::ElicitationCapability::default()),
            roots: Some(plexus_protocol::RootsCapability::default()),
            sampling: Some(plexus_protocol::SamplingCapability::default()),
            ..plexus_protocol::ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        _params: plexus_protocol::ElicitRequestParams,
        _context: plexus_client::ServerRequestContext,
    ) -> Result<plexus_protocol::ElicitResult, plexus_jsonrpc::ErrorObject> {
        Ok(serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada", "confirm": true}})).unwrap())
    }

    async fn list_roots(
        &self,
        _context: plexus_client::ServerRequestContext,
    ) -> Result<plexus_protocol::ListRootsResult, plexus_jsonrpc::ErrorObject> {
        Ok(serde_json::from_value(json!({"roots": [{"uri": "file:///work", "name": "work"}]})).unwrap())
    }
}

#[tokio::test]
async fn input_required_is_answered_by_the_handler_and_retried_with_the_state_echoed() {
    let dir = temp_dir();
    let log = dir.path().join("events.jsonl");
    let mut options = probing(Duration::from_secs(5));
    options = options.handler(std::sync::Arc::new(Answering));
    let client = connect(&["--era", "modern", "--event-log", log.to_str().unwrap()], options)
        .await
        .unwrap();
    let elicited = client
        .call_tool("elicit", args(json!({"message": "Who are you?"})))
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&first_text(&elicited)).unwrap();
    assert_eq!(
        answer,
        json!({"action": "accept", "content": {"name": "Ada", "confirm": true}})
    );
    let roots = client.call_tool("roots", None).await.unwrap();
    assert_eq!(first_text(&roots), r#"[{"uri":"file:///work","name":"work"}]"#);

    // The handler cannot sample: the call fails naming the input request, and nothing is retried.
    let error = client
        .call_tool("sample", args(json!({"prompt": "hi"})))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::InputRequest { key, .. } if key == "input"),
        "{error:?}"
    );
    assert_eq!(
        plexus_transport::error_chain(&error),
        "tools/call: the client could not answer the server's input request \"input\": the client does not support \
         sampling/createMessage (method not found, code -32601)"
    );
    client.close().await.unwrap();

    let calls: Vec<_> = events(&log)
        .into_iter()
        .filter(|e| e["event"] == "request" && e["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 5, "elicit twice, roots twice, sample once: {calls:#?}");
    let (first, retry) = (&calls[0]["params"], &calls[1]["params"]);
    assert_ne!(calls[0]["id"], calls[1]["id"], "a retry is a new request");
    assert_eq!(first.get("requestState"), None);
    assert_eq!(first.get("inputResponses"), None);
    assert_eq!(retry["arguments"], json!({"message": "Who are you?"}));
    assert_eq!(retry["inputResponses"]["input"]["action"], "accept");
    // The state went back byte for byte (the server refuses any other, and checks it was issued).
    assert!(retry["requestState"].as_str().unwrap().contains("é \\u00e9"), "{retry}");
    // The roots call carries nothing of the elicitation's round.
    assert_eq!(calls[2]["params"].get("inputResponses"), None);
    assert_eq!(calls[2]["params"].get("requestState"), None);
}

#[tokio::test]
async fn rounds_go_on_while_the_server_asks_and_stop_at_the_limit() {
    let options = probing(Duration::from_secs(5)).handler(std::sync::Arc::new(Answering));
    let client = connect(&["--era", "modern"], options).await.unwrap();
    // Three rounds: asked, asked again on each retry, then answered.
    let elicited = client
        .call_tool("elicit", args(json!({"message": "Sure?", "rounds": 3})))
        .await
        .unwrap();
    assert!(first_text(&elicited).contains("Ada"), "{elicited:?}");
    // Past the client's limit: it gives up, saying so.
    let rounds = plexus_client::MAX_INPUT_ROUNDS + 1;
    let error = client
        .call_tool("elicit", args(json!({"message": "Sure?", "rounds": rounds})))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::InputRounds { limit, .. } if *limit == plexus_client::MAX_INPUT_ROUNDS),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "tools/call: the server still asked for input after {} rounds",
            plexus_client::MAX_INPUT_ROUNDS
        )
    );
    // Exactly at the limit it still completes.
    let at_limit = client
        .call_tool(
            "elicit",
            args(json!({"message": "Sure?", "rounds": plexus_client::MAX_INPUT_ROUNDS})),
        )
        .await
        .unwrap();
    assert!(first_text(&at_limit).contains("Ada"));
    client.close().await.unwrap();
}
