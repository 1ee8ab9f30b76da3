//! The gateway as a library, in the test's own process: a Hub over the test server (Streamable
//! HTTP on 127.0.0.1, in-process too) served over a duplex pipe, driven line by line as an MCP
//! client would, with no binary spawned.

use std::sync::Arc;
use std::time::Duration;

use plexus::config::DiscoveryOptions;
use plexus::{Hub, HubOptions};
use plexus_gateway::{Backends, Gateway, GatewayOptions};
use plexus_testserver::RemoteServer;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// Long enough for anything on a busy machine; never the point of a test.
const GUARD: Duration = Duration::from_secs(30);

/// A Hub over one explicit config file whose server `demo` is at `url`.
async fn hub(dir: &tempfile::TempDir, url: &str, backends: &Backends) -> Hub {
    let config = dir.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"demo": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();
    let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
        .with_explicit_files(vec![config], true)
        .with_managed_file(None);
    Hub::start(backends.hub_options(HubOptions::new(discovery)))
        .await
        .unwrap()
}

/// The client's side of the pipe: lines out, messages in.
struct Client {
    input: tokio::io::DuplexStream,
    output: tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
}

impl Client {
    async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.input.write_all(line.as_bytes()).await.unwrap();
    }

    /// The answer to request `id` (other messages are skipped).
    async fn answer(&mut self, id: i64) -> Value {
        tokio::time::timeout(GUARD, async {
            loop {
                let line = self.output.next_line().await.unwrap().expect("the gateway answered");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["id"] == id {
                    return message;
                }
            }
        })
        .await
        .expect("the gateway answered in time")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_serves_its_hub_over_a_pipe_of_its_own() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let backends = Backends::new();
    let hub = Arc::new(hub(&dir, server.url(), &backends).await);
    let gateway = Gateway::new(Arc::clone(&hub), backends, GatewayOptions::default());
    let (client_input, gateway_input) = tokio::io::duplex(64 * 1024);
    let (gateway_output, client_output) = tokio::io::duplex(64 * 1024);
    let mut client = Client {
        input: client_input,
        output: BufReader::new(client_output).lines(),
    };
    let serving = gateway.serve_io(Box::pin(gateway_input), Box::pin(gateway_output));
    let driving = async {
        client
            .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "in-process", "version": "1"}}}))
            .await;
        let initialized = client.answer(1).await;
        assert_eq!(initialized["result"]["protocolVersion"], "2025-11-25", "{initialized}");
        assert!(
            initialized["result"]["capabilities"]["tools"].is_object(),
            "{initialized}"
        );
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
            .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .await;
        let listed = client.answer(2).await;
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .collect();
        assert!(names.contains(&"mcp__demo__echo"), "{names:?}");
        client
            .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "mcp__demo__echo", "arguments": {"text": "in process"}}}))
            .await;
        let called = client.answer(3).await;
        assert_eq!(called["result"]["content"][0]["text"], "in process", "{called}");
        assert_eq!(called["result"]["isError"], false, "{called}");
        // A line that is not JSON-RPC gets a parse error, and the session goes on.
        client.input.write_all(b"not json\n").await.unwrap();
        client.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})).await;
        assert_eq!(client.answer(4).await["result"], json!({}));
        // End of input ends the session.
        drop(client.input);
    };
    let (served, ()) = tokio::join!(serving, driving);
    served.unwrap();
    drop(gateway);
    hub.shutdown().await;
    server.shutdown().await;
}
