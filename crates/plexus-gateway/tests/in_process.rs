//! The gateway as a library, in the test's own process: a Hub over the test server (Streamable
//! HTTP on 127.0.0.1, in-process too) served over a duplex pipe, driven line by line as an MCP
//! client would, with no binary spawned; and a backend of its own, in process, whose prompt and
//! resource reads ask the client first, for a client of the stateless era.

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

fn is_a_tower_service<S: tower_service::Service<hyper::Request<hyper::body::Incoming>> + Clone + Send>(_: &S) {}

/// A host's own HTTP server (hyper) with the gateway mounted at `/tools/mcp` and a page of its
/// own at `/`; its address.
async fn host_server(service: plexus_gateway::HttpService) -> std::net::SocketAddr {
    use hyper::service::Service as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let routes = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let service = service.clone();
                    async move {
                        if request.uri().path() == "/tools/mcp" {
                            let response = service.call(request).await?;
                            Ok::<_, std::convert::Infallible>(response.map(http_body_util::Either::Left))
                        } else {
                            let page = http_body_util::Full::new(bytes::Bytes::from_static(b"the host's own page"));
                            Ok(hyper::Response::new(http_body_util::Either::Right(page)))
                        }
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), routes)
                    .await;
            });
        }
    });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_mounts_the_gateway_in_its_own_http_server_at_a_path_of_its_own() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let backends = Backends::new();
    let hub = Arc::new(hub(&dir, server.url(), &backends).await);
    let gateway = Gateway::new(Arc::clone(&hub), backends, GatewayOptions::default());
    let mount = plexus_gateway::MountOptions::default().allow_hosts(["127.0.0.1"]);
    let service = gateway.http_service(mount);
    // What a tower stack (axum's `route_service`) takes, too.
    is_a_tower_service(&service);
    let address = host_server(service).await;

    // plexus's own Streamable HTTP client, as any MCP client would connect.
    let url = format!("http://{address}/tools/mcp");
    let entry = plexus::config::ServerConfig::from_json(&json!({"type": "http", "url": url}))
        .unwrap()
        .0;
    let client = tokio::time::timeout(
        GUARD,
        plexus::connect("mounted", &entry, plexus::ClientOptions::new("mounted")),
    )
    .await
    .expect("connected in time")
    .unwrap();
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "mcp__demo__echo"), "{tools:?}");
    let called = client
        .call_tool("mcp__demo__echo", json!({"text": "mounted"}).as_object().cloned())
        .await
        .unwrap();
    assert_eq!(called.content[0].as_text(), Some("mounted"));
    client.close().await.unwrap();

    // The host's other routes are its own; a Host or Origin it did not allow is refused.
    let page = raw_request(address, "GET /", "Host: 127.0.0.1\r\n").await;
    assert!(
        page.starts_with("HTTP/1.1 200") && page.ends_with("the host's own page"),
        "{page}"
    );
    let rebound = raw_request(address, "POST /tools/mcp", "Host: evil.example\r\n").await;
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    let foreign = raw_request(
        address,
        "POST /tools/mcp",
        "Host: 127.0.0.1\r\nOrigin: http://evil.example\r\n",
    )
    .await;
    assert!(foreign.starts_with("HTTP/1.1 403"), "{foreign}");
    // The allowed host on any port gets in.
    let allowed = raw_request(
        address,
        "POST /tools/mcp",
        &format!("Host: 127.0.0.1:{}\r\n", address.port()),
    )
    .await;
    assert!(allowed.starts_with("HTTP/1.1 200"), "{allowed}");
    drop(gateway);
    hub.shutdown().await;
    server.shutdown().await;
}

/// One request written as a hostile client writes it (headers of its choosing), and the whole
/// answer: an `initialize` for a `POST`.
async fn raw_request(address: std::net::SocketAddr, request_line: &str, headers: &str) -> String {
    use tokio::io::AsyncReadExt as _;
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let body = if request_line.starts_with("POST") { body } else { "" };
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "{request_line} HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(GUARD, stream.read_to_string(&mut answer))
        .await
        .expect("answered in time")
        .unwrap();
    answer
}

/// A backend of the `initialize` era, in process, whose `prompts/get` (of `ask`) and
/// `resources/read` (of `mem://answer`) ask the client for a name (`elicitation/create`) before
/// they answer with it.
async fn asking_backend(pipe: plexus::in_process::DuplexStream) {
    let (input, mut output) = tokio::io::split(pipe);
    let mut lines = BufReader::new(input).lines();
    // The request waiting for the client's answer: its id and method.
    let mut waiting: Option<(Value, String)> = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap();
        let id = message["id"].clone();
        let result = |result: Value| Some(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        let reply = match message["method"].as_str() {
            Some("initialize") => result(json!({"protocolVersion": "2025-11-25",
                "capabilities": {"prompts": {}, "resources": {}}, "serverInfo": {"name": "asking", "version": "1"}})),
            Some("tools/list") => result(json!({"tools": []})),
            Some("prompts/list") => result(json!({"prompts": [{"name": "ask"}]})),
            Some("resources/list") => result(json!({"resources": [{"uri": "mem://answer", "name": "answer"}]})),
            Some("resources/templates/list") => result(json!({"resourceTemplates": []})),
            Some(method @ ("prompts/get" | "resources/read")) => {
                waiting = Some((id, method.to_owned()));
                Some(json!({"jsonrpc": "2.0", "id": "q", "method": "elicitation/create", "params": {
                    "message": "Who asks?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}))
            }
            // Notifications.
            Some(_) if id.is_null() => None,
            Some(other) => Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no {other}")}})),
            // The client's answer.
            None => waiting.take().map(|(asked, method)| {
                let name = message["result"]["content"]["name"].as_str().unwrap_or("nobody").to_owned();
                let result = if method == "prompts/get" {
                    json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("Hello, {name}")}}]})
                } else {
                    json!({"contents": [{"uri": "mem://answer", "mimeType": "text/plain", "text": name}]})
                };
                json!({"jsonrpc": "2.0", "id": asked, "result": result})
            }),
        };
        if let Some(reply) = reply {
            let mut line = reply.to_string();
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

/// A gateway over a Hub whose one server, `mem`, is `backend` in process (no config file, no
/// environment; the home under `dir`).
async fn in_process_gateway(
    dir: &tempfile::TempDir,
    backend: impl plexus::in_process::InProcessServer,
) -> (Arc<Hub>, Gateway) {
    let backends = Backends::new();
    let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
        .with_managed_file(None)
        .with_env(plexus::config::Environment::from_fn(|_| None));
    let options = backends
        .hub_options(HubOptions::new(discovery))
        .in_process("mem", backend);
    let hub = Arc::new(Hub::start(options).await.unwrap());
    let gateway = Gateway::new(Arc::clone(&hub), backends, GatewayOptions::default());
    (hub, gateway)
}

/// A stateless request `method` with `params` and the envelope (elicitation declared).
fn stateless(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_clients_prompt_and_resource_reads_take_the_backends_question_in_their_result() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, gateway) = in_process_gateway(&dir, asking_backend).await;
    let (client_input, gateway_input) = tokio::io::duplex(64 * 1024);
    let (gateway_output, client_output) = tokio::io::duplex(64 * 1024);
    let mut client = Client {
        input: client_input,
        output: BufReader::new(client_output).lines(),
    };
    let serving = gateway.serve_io(Box::pin(gateway_input), Box::pin(gateway_output));
    let driving = async {
        let asks = [
            ("prompts/get", json!({"name": "mcp__mem__ask"})),
            ("resources/read", json!({"uri": "plexus://mem/mem://answer"})),
        ];
        let mut id = 0;
        let mut results = Vec::new();
        for (method, params) in asks {
            id += 1;
            client.send(&stateless(id, method, params.clone())).await;
            let asked = client.answer(id).await;
            let input = &asked["result"];
            assert_eq!(input["resultType"], "input_required", "{asked}");
            assert_eq!(
                input["inputRequests"]["input-1"],
                json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Who asks?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
                "{asked}"
            );
            let mut retry = params;
            retry["requestState"] = input["requestState"].clone();
            retry["inputResponses"] = json!({"input-1": {"action": "accept", "content": {"name": "Ada"}}});
            id += 1;
            client.send(&stateless(id, method, retry)).await;
            results.push(client.answer(id).await["result"].clone());
        }
        assert_eq!(
            results,
            [
                json!({"resultType": "complete",
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Hello, Ada"}}]}),
                json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "contents": [{"uri": "plexus://mem/mem://answer", "mimeType": "text/plain", "text": "Ada"}]}),
            ]
        );
        drop(client.input);
    };
    let (served, ()) = tokio::join!(serving, driving);
    served.unwrap();
    drop(gateway);
    hub.shutdown().await;
}

/// The `content` of the text result `say` of [`texting_backend`], as it writes it: spacing,
/// an escape and a number in forms of its own, and members of later revisions.
const SAID: &str = r#"[{"type":"text", "text":"caf\u00e9", "annotations":{"priority":5e-1}, "later":[1]}]"#;

/// A backend of the `initialize` era, in process, with two tools: `say` answers [`SAID`] (and a
/// result `_meta`), `measure` the same text with `structuredContent`.
async fn texting_backend(pipe: plexus::in_process::DuplexStream) {
    let (input, mut output) = tokio::io::split(pipe);
    let mut lines = BufReader::new(input).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap();
        let id = message["id"].to_string();
        let result = match message["method"].as_str() {
            Some("initialize") => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "texting", "version": "1"}})
            .to_string(),
            Some("tools/list") => json!({"tools": [
                {"name": "say", "inputSchema": {"type": "object"}},
                {"name": "measure", "inputSchema": {"type": "object"}}]})
            .to_string(),
            Some("tools/call") if message["params"]["name"] == "say" => {
                format!(r#"{{"content":{SAID},"_meta":{{"trace":"t1"}}}}"#)
            }
            Some("tools/call") => format!(r#"{{"content":{SAID},"structuredContent":{{"cm":5e-1}},"isError":true}}"#),
            _ => continue,
        };
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n");
        if output.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The answer lines of a session of `gateway`'s whose client sends `calls`, by their ids.
async fn answer_lines(gateway: &Gateway, calls: &[Value]) -> std::collections::BTreeMap<i64, String> {
    let (mut client_input, gateway_input) = tokio::io::duplex(64 * 1024);
    let (gateway_output, client_output) = tokio::io::duplex(64 * 1024);
    let mut output = BufReader::new(client_output).lines();
    let serving = gateway.serve_io(Box::pin(gateway_input), Box::pin(gateway_output));
    let driving = async {
        for call in calls {
            client_input.write_all(format!("{call}\n").as_bytes()).await.unwrap();
        }
        let mut answers = std::collections::BTreeMap::new();
        while answers.len() < calls.len() {
            let line = tokio::time::timeout(GUARD, output.next_line())
                .await
                .expect("the gateway answered in time")
                .unwrap()
                .expect("the gateway answered");
            let id = serde_json::from_str::<Value>(&line).unwrap()["id"].as_i64().unwrap();
            answers.insert(id, line);
        }
        drop(client_input);
        answers
    };
    let (served, answers) = tokio::join!(serving, driving);
    served.unwrap();
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_result_goes_on_as_the_backend_wrote_it_and_others_are_processed() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, gateway) = in_process_gateway(&dir, texting_backend).await;
    let answers = answer_lines(
        &gateway,
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "mcp__mem__say"}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "mcp__mem__measure"}}),
        ],
    )
    .await;
    // Byte for byte: the backend's content, without its result's `_meta`.
    assert_eq!(
        answers[&1],
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":{SAID},"isError":false}}}}"#)
    );
    // Structured content is processed: decoded and written again, the same in meaning.
    let measured: Value = serde_json::from_str(&answers[&2]).unwrap();
    assert_eq!(
        measured["result"],
        json!({"content": [{"type": "text", "text": "café", "annotations": {"priority": 0.5}, "later": [1]}],
            "structuredContent": {"cm": 0.5}, "isError": true})
    );
    // A client of the stateless era gets the same content, marked complete.
    let answers = answer_lines(
        &gateway,
        &[stateless(3, "tools/call", json!({"name": "mcp__mem__say"}))],
    )
    .await;
    assert_eq!(
        answers[&3],
        format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"resultType":"complete","content":{SAID},"isError":false}}}}"#)
    );
    drop(gateway);
    hub.shutdown().await;
}
