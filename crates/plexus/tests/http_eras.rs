//! Both protocol eras over Streamable HTTP, through the Hub and the client, against the test
//! server's era modes (run in this process on 127.0.0.1): the probe's verdicts (a stateless
//! server, a server of the `initialize` era whatever it answers the probe, -32022 naming a
//! version we share), the revision's headers (`MCP-Protocol-Version` equal to the envelope's,
//! `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), a tool with an invalid `x-mcp-header` annotation
//! left out and reported, multi-round-trip requests, and cancellation by closing the stream.

use std::sync::Arc;
use std::time::Duration;

use plexus::client::{EraChoice, EraSource};
use plexus::protocol::ProtocolVersion;
use plexus::{Client, ClientOptions, Hub};
use plexus_testserver::RemoteServer;
use serde_json::{Value, json};
use support::hub_with_entry;

mod support;

/// Starts `plexus-testserver http ARGS…` in this process.
async fn serve(args: &[&str]) -> RemoteServer {
    RemoteServer::from_args("http", args).await.unwrap()
}

/// A Hub over one `http` entry for `url` with `extra` entry fields.
async fn start_hub(dir: &tempfile::TempDir, url: &str, extra: Value) -> Hub {
    let mut entry = json!({"type": "http", "url": url});
    entry
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    hub_with_entry(dir, entry).await
}

/// A client of `url` choosing its era as `era` says.
async fn client(url: &str, era: EraChoice) -> Client {
    let mut options = ClientOptions::new("demo");
    options.era = era;
    let transport =
        plexus::http::HttpTransport::new(plexus::http::HttpConfig::new(plexus::net::RemoteEndpoint::new(url))).unwrap();
    Client::connect(Box::new(transport), options).await.unwrap()
}

/// The text of a call's first content block.
fn text_of(result: &plexus::protocol::CallToolResult) -> String {
    result.content[0].as_text().unwrap().to_owned()
}

/// The text of a Hub call's first content block.
fn hub_text(result: &plexus::tools::ProcessedResult) -> String {
    result.content[0].as_text().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_speaks_the_stateless_era_over_http_with_the_revisions_headers() {
    let server = serve(&["--header-tools"]).await;
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(&dir, server.url(), json!({"protocolVersion": "auto"})).await;
    let client = hub.pool().ensure_connected("demo").await.unwrap();
    assert_eq!(client.server().protocol_version, ProtocolVersion::V2026_07_28);
    assert_eq!(client.server().era_source, EraSource::Probe);
    let echoed = hub.call("mcp__demo__echo", json!({"text": "modern"})).await.unwrap();
    assert_eq!(hub_text(&echoed), "modern");
    // The annotated arguments present and not null go as Mcp-Param-* headers, encoded.
    let seen = hub
        .call(
            "mcp__demo__headers_echo",
            json!({"region": " eu-west", "priority": 7, "verbose": null, "query": "q"}),
        )
        .await
        .unwrap();
    let headers: Value = serde_json::from_str(&hub_text(&seen)).unwrap();
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-name"], "headers_echo");
    assert_eq!(headers["mcp-param-region"], "=?base64?IGV1LXdlc3Q=?=");
    assert_eq!(headers["mcp-param-priority"], "7");
    assert!(headers.get("mcp-param-verbose").is_none(), "{headers}");
    assert!(headers.get("mcp-session-id").is_none(), "{headers}");
    // The tool whose annotation is invalid is left out, and said why.
    let names: Vec<String> = hub.tool_pool().await.entries.iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"mcp__demo__headers_echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"mcp__demo__bad_header_tool".to_owned()), "{names:?}");
    let rejected = client.rejected_tools();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0].tool, "bad_header_tool");
    assert!(rejected[0].to_string().contains("My Region"), "{}", rejected[0]);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_the_initialize_era_is_spoken_to_with_the_handshake_whatever_it_answers_the_probe() {
    for answer in ["method-not-found", "invalid-params", "empty400", "silence"] {
        let server = serve(&["--era", "legacy", "--probe-answer", answer]).await;
        let client = client(
            server.url(),
            EraChoice::Probe {
                probe_timeout: Duration::from_millis(300),
            },
        )
        .await;
        assert_eq!(client.server().protocol_version, ProtocolVersion::LATEST, "{answer}");
        assert_eq!(client.server().era_source, EraSource::Probe, "{answer}");
        let echoed = client
            .call_tool("echo", json!({"text": answer}).as_object().cloned())
            .await
            .unwrap();
        assert_eq!(text_of(&echoed), answer);
        client.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_named_by_minus_32022_is_tried_again_and_a_modern_server_never_sees_initialize() {
    // The first request is refused with -32022 naming the version it carried: asked again.
    for era in [EraChoice::PROBE, EraChoice::Stateless(ProtocolVersion::V2026_07_28)] {
        let server = serve(&["--era", "modern", "--reject-first-modern-request"]).await;
        let client = client(server.url(), era).await;
        assert_eq!(
            client.server().protocol_version,
            ProtocolVersion::V2026_07_28,
            "{era:?}"
        );
        let echoed = client
            .call_tool("echo", json!({"text": "again"}).as_object().cloned())
            .await
            .unwrap();
        assert_eq!(text_of(&echoed), "again");
        client.close().await.unwrap();
    }
}

/// Answers every elicitation with the test server's form filled in.
struct Accepting;

#[plexus::client::async_trait]
impl plexus::client::ClientHandler for Accepting {
    fn capabilities(&self) -> plexus::protocol::ClientCapabilities {
        plexus::protocol::ClientCapabilities {
            elicitation: Some(plexus::protocol::ElicitationCapability::default()),
            ..plexus::protocol::ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        _params: plexus::protocol::ElicitRequestParams,
        _context: plexus::client::ServerRequestContext,
    ) -> Result<plexus::protocol::ElicitResult, plexus::jsonrpc::ErrorObject> {
        Ok(serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada", "confirm": true}})).unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_call_over_http_is_answered_and_sent_again() {
    let server = serve(&[]).await;
    let mut options = ClientOptions::new("demo");
    options.era = EraChoice::Stateless(ProtocolVersion::V2026_07_28);
    let options = options.handler(Arc::new(Accepting));
    let transport = plexus::http::HttpTransport::new(plexus::http::HttpConfig::new(plexus::net::RemoteEndpoint::new(
        server.url(),
    )))
    .unwrap();
    let client = Client::connect(Box::new(transport), options).await.unwrap();
    let result = client
        .call_tool("elicit", json!({"message": "ok?", "rounds": 2}).as_object().cloned())
        .await
        .unwrap();
    assert!(!result.is_error(), "{result:?}");
    assert!(text_of(&result).contains("Ada"), "{}", text_of(&result));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_call_is_cancelled_by_closing_its_stream_not_by_a_notification() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let server = serve(&["--event-log", log.to_str().unwrap()]).await;
    let client = client(server.url(), EraChoice::Stateless(ProtocolVersion::V2026_07_28)).await;
    let cancel = plexus::CancelHandle::new();
    let options = plexus::client::RequestOptions::default().cancel_with(cancel.clone());
    let call = client.call_tool_with("slow", json!({"ms": 20_000}).as_object().cloned(), options);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel("enough");
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert!(
        matches!(result, Err(plexus::ClientError::Cancelled { ref reason }) if reason == "enough"),
        "{result:?}"
    );
    // The session goes on, and the server saw no notifications/cancelled.
    let echoed = client
        .call_tool("echo", json!({"text": "after"}).as_object().cloned())
        .await
        .unwrap();
    assert_eq!(text_of(&echoed), "after");
    client.close().await.unwrap();
    let methods: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "modern-request")
        .filter_map(|event| event["method"].as_str().map(str::to_owned))
        // The session's subscription goes its own way.
        .filter(|method| method != "subscriptions/listen")
        .collect();
    assert_eq!(methods, ["server/discover", "tools/call", "tools/call"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_headers_are_refused_lists_the_tools_again_and_is_sent_once_more() {
    let server = serve(&["--header-tools"]).await;
    // No listing yet: the client does not know that `region` goes in a header, and the server
    // refuses the call (-32020) before running it.
    let client = client(server.url(), EraChoice::Stateless(ProtocolVersion::V2026_07_28)).await;
    let seen = client
        .call_tool("headers_echo", json!({"region": "eu"}).as_object().cloned())
        .await
        .unwrap();
    let headers: Value = serde_json::from_str(&text_of(&seen)).unwrap();
    assert_eq!(headers["mcp-param-region"], "eu");
    client.close().await.unwrap();
}
