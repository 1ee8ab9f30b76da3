//! `plexus serve` in both protocol eras, to its clients and its backends: the four cells
//! (a backend of the `initialize` era or of the stateless era, behind a gateway whose client
//! speaks either), over stdio and over Streamable HTTP. In each cell a call, a backend's
//! question to the client (forwarded as a request to a client of the `initialize` era, asked in
//! an `input_required` result of a stateless one), a list change (`notifications/tools/list_changed`,
//! on a stateless client's `subscriptions/listen`), a resource update, progress, and a call the
//! client gives up (the backend hears of it: `notifications/cancelled` in the `initialize` era,
//! its stream closed in the stateless one). Then the stateless era's wire shapes, raw.

mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::time::{Duration, Instant};

use plexus::Client;
use plexus::client::{EraChoice, ServerNotification};
use plexus::config::ServerConfig;
use plexus::protocol::ProtocolVersion;
use serde_json::{Value, json};
use support::Workspace;
use support::gateway::{Answerer, RawGateway, args, client_in, names, serve_http, stdio_entry};
use support::remote::Remote;

/// A backend of each era on 127.0.0.1, each logging its events, in a workspace of their own:
/// `old` speaks the `initialize` era only, `new` the stateless era (as `plexus serve` probes it).
struct Backends {
    /// `old` and `new`, serving while the test runs.
    _servers: (Remote, Remote),
    logs: tempfile::TempDir,
    ws: Workspace,
}

impl Backends {
    fn start() -> Backends {
        let logs = tempfile::tempdir().unwrap();
        let log = |name: &str| logs.path().join(format!("{name}.log")).to_str().unwrap().to_owned();
        let old = Remote::http(&["--era", "legacy", "--event-log", &log("old")]);
        let new = Remote::http(&["--event-log", &log("new")]);
        let ws = Workspace::new();
        ws.write_servers(
            ws.user_file(),
            &json!({"old": {"type": "http", "url": old.url()}, "new": {"type": "http", "url": new.url()}}),
        );
        Backends {
            _servers: (old, new),
            logs,
            ws,
        }
    }

    /// The events `backend` logged so far.
    fn events(&self, backend: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.logs.path().join(format!("{backend}.log"))).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// How many events `backend` logged so far that `matches`.
    fn count(&self, backend: &str, matches: impl Fn(&Value) -> bool) -> usize {
        self.events(backend).iter().filter(|event| matches(event)).count()
    }

    /// Waits (at most 20 s) until `backend` logged more than `before` events that `matches`.
    async fn wait_for_event(&self, backend: &str, what: &str, before: usize, matches: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.count(backend, &matches) <= before {
            assert!(
                Instant::now() < deadline,
                "{backend} logged no {what}: {:?}",
                self.events(backend)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A runtime for a test that also runs [`Remote`] backends (which have their own).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The era a client chooses: the `initialize` handshake, or the stateless era with no fall back
/// (a gateway that did not speak it would fail the connect).
fn era(stateless: bool) -> EraChoice {
    if stateless {
        EraChoice::Stateless(ProtocolVersion::V2026_07_28)
    } else {
        EraChoice::Initialize
    }
}

/// Waits (at most 30 s) for a notification that `matches`.
async fn wait_for(
    notifications: &mut tokio::sync::broadcast::Receiver<ServerNotification>,
    matches: impl Fn(&ServerNotification) -> bool,
) -> ServerNotification {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match notifications.recv().await {
                Ok(notification) if matches(&notification) => return notification,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("the gateway's notifications ended: {e}"),
            }
        }
    })
    .await
    .expect("the notification came")
}

/// Every cell of one client of the gateway (of the era `stateless` says) with both backends.
async fn both_backends(backends: &Backends, client: &Client, ada: &Answerer, stateless: bool) {
    let expected = if stateless { "2026-07-28" } else { "2025-11-25" };
    assert_eq!(client.server().protocol_version.as_str(), expected);
    assert_eq!(client.server().server_info.name, "plexus-gateway");
    let mut notifications = client.subscribe();
    for (backend, backend_stateless) in [("old", false), ("new", true)] {
        let tool = |name: &str| format!("mcp__{backend}__{name}");
        // A call.
        let echoed = client
            .call_tool(&tool("echo"), args(json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(echoed.content[0].as_text(), Some("hi"), "{backend}");
        // Progress on the call's own stream.
        let (callback, mut reports) = plexus::client::progress_channel(16);
        let slow = client
            .call_tool_with(
                &tool("slow"),
                args(json!({"ms": 200, "steps": 2})),
                plexus::client::RequestOptions::default().progress(callback),
            )
            .await
            .unwrap();
        assert_eq!(slow.content[0].as_text(), Some("slow: done after 200 ms"), "{backend}");
        let first = reports.recv().await.expect("progress came");
        assert!((first.progress - 1.0).abs() < f64::EPSILON, "{backend}: {first:?}");
        // The backend asks the client: a stateless backend twice (two rounds of its own).
        let before = ada.asked().len();
        let question = format!("Who calls {backend}?");
        let answered = client
            .call_tool(&tool("elicit"), args(json!({"message": question, "rounds": 2})))
            .await
            .unwrap();
        assert_eq!(answered.is_error, Some(false), "{backend}: {answered:?}");
        assert_eq!(
            answered.content[0].as_text(),
            Some(r#"{"action":"accept","content":{"name":"Ada"}}"#),
            "{backend}"
        );
        let asked = if backend_stateless { 2 } else { 1 };
        assert_eq!(ada.asked()[before..], vec![question; asked], "{backend}");
        // A list change reaches the client, and the new tool is listed.
        client.call_tool(&tool("trigger-list-changed"), None).await.unwrap();
        wait_for(&mut notifications, |n| {
            matches!(n, ServerNotification::ToolsListChanged)
        })
        .await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !names(&client.list_tools().await.unwrap()).contains(&tool("dynamic-1").as_str()) {
            assert!(Instant::now() < deadline, "{backend}: no dynamic-1 listed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // A resource update reaches the subscribed client under the gateway's URI.
        let uri = format!("plexus://{backend}/test://static/hello.txt");
        client.subscribe_resource(&uri).await.unwrap();
        let sent = client
            .call_tool(
                &tool("update-resource"),
                args(json!({"uri": "test://static/hello.txt"})),
            )
            .await
            .unwrap();
        assert!(
            sent.content[0]
                .as_text()
                .unwrap()
                .starts_with("sent notifications/resources/updated"),
            "{backend}: {sent:?}"
        );
        let updated = wait_for(&mut notifications, |n| {
            matches!(n, ServerNotification::ResourceUpdated(_))
        })
        .await;
        let ServerNotification::ResourceUpdated(updated) = updated else {
            unreachable!()
        };
        assert_eq!(updated.uri, uri, "{backend}");
        client.unsubscribe_resource(&uri).await.unwrap();
        // A call the client gives up is cancelled on the backend: it is told, or its stream
        // closes.
        let cancelled = |event: &Value| {
            if backend_stateless {
                event["event"] == "stream-closed"
            } else {
                event["event"] == "notification" && event["method"] == "notifications/cancelled"
            }
        };
        let before = backends.count(backend, cancelled);
        let options = plexus::client::RequestOptions::with_timeout(Duration::from_millis(500));
        let error = client.call_tool_with(&tool("hang"), None, options).await.unwrap_err();
        assert!(error.to_string().contains("timed out"), "{backend}: {error}");
        backends
            .wait_for_event(backend, "cancellation", before, cancelled)
            .await;
    }
}

/// The four cells through `plexus serve` over stdio, for a client of the era `stateless` says.
fn over_stdio(stateless: bool) {
    let backends = Backends::start();
    runtime().block_on(async {
        let ada = Answerer::new("Ada");
        let client = client_in(&stdio_entry(&backends.ws, &[]), Some(ada.clone()), era(stateless)).await;
        both_backends(&backends, &client, &ada, stateless).await;
        client.close().await.unwrap();
    });
}

/// The four cells through `plexus serve --http`, for a client of the era `stateless` says.
fn over_http(stateless: bool) {
    let backends = Backends::start();
    let (gateway, address) = serve_http(&backends.ws, "127.0.0.1", &[], &[]);
    runtime().block_on(async {
        let ada = Answerer::new("Ada");
        let config = ServerConfig::from_json(&json!({"type": "http", "url": format!("http://{address}/mcp")}))
            .unwrap()
            .0;
        let client = client_in(&config, Some(ada.clone()), era(stateless)).await;
        both_backends(&backends, &client, &ada, stateless).await;
        client.close().await.unwrap();
    });
    drop(gateway);
}

#[test]
fn an_initialize_era_client_over_stdio_uses_backends_of_both_eras() {
    over_stdio(false);
}

#[test]
fn a_stateless_client_over_stdio_uses_backends_of_both_eras() {
    over_stdio(true);
}

#[test]
fn an_initialize_era_client_over_http_uses_backends_of_both_eras() {
    over_http(false);
}

#[test]
fn a_stateless_client_over_http_uses_backends_of_both_eras() {
    over_http(true);
}

/// The envelope of a stateless request declaring `capabilities`.
fn envelope(capabilities: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    })
}

/// A stateless request `method` with `params` and the envelope (elicitation declared).
fn stateless_request(id: impl Into<Value>, method: &str, mut params: Value) -> Value {
    params["_meta"] = envelope(&json!({"elicitation": {}}));
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// The `server/discover` result the gateway gives when every backend is the demo server.
fn discovered() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "capabilities": {
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": true},
            "logging": {},
            "completions": {},
        },
        "instructions": "The tools, prompts and resources of every MCP server plexus is configured with. Tools are \
                         named mcp__<server>__<tool>; resources plexus://<server>/<uri>.",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {
            "name": "plexus-gateway", "title": "plexus gateway", "version": support::version()}},
    })
}

/// Whether `state` looks like a request state of the gateway: 128 random bits in hex.
fn is_request_state(state: &Value) -> bool {
    state
        .as_str()
        .is_some_and(|state| state.len() == 32 && state.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn over_stdio_the_stateless_era_has_its_wire_shapes() {
    let ws = support::gateway::workspace(&json!({"demo": support::demo(&[])}));
    let mut gateway = RawGateway::start(&ws);
    // A request with the envelope makes the connection stateless. A call: resultType first.
    gateway.send(&stateless_request(
        1,
        "tools/call",
        json!({"name": "mcp__demo__echo", "arguments": {"text": "hi"}}),
    ));
    let answer = gateway.next(|m| m["id"] == 1);
    assert_eq!(
        answer["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}], "isError": false})
    );
    // server/discover (the backend is up by now: its capabilities count).
    gateway.send(&stateless_request("d", "server/discover", json!({})));
    let answer = gateway.next(|m| m["id"] == "d");
    assert_eq!(answer["result"], discovered(), "{answer}");
    // A list says how it may be cached.
    gateway.send(&stateless_request(2, "prompts/list", json!({})));
    let answer = gateway.next(|m| m["id"] == 2);
    assert_eq!(
        (
            &answer["result"]["resultType"],
            &answer["result"]["ttlMs"],
            &answer["result"]["cacheScope"]
        ),
        (&json!("complete"), &json!(0), &json!("private")),
        "{answer}"
    );
    // The backend's question comes in the call's result; the retry brings the answer.
    let call = json!({"name": "mcp__demo__elicit", "arguments": {"message": "Who?"}});
    gateway.send(&stateless_request(3, "tools/call", call.clone()));
    let asked = gateway.next(|m| m["id"] == 3);
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert!(is_request_state(&result["requestState"]), "{asked}");
    assert_eq!(
        result["inputRequests"]["input-1"]["method"], "elicitation/create",
        "{asked}"
    );
    assert_eq!(
        result["inputRequests"]["input-1"]["params"]["message"], "Who?",
        "{asked}"
    );
    let state = result["requestState"].clone();
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let mut retry = call.clone();
    retry["inputResponses"] = json!({"input-1": answer});
    retry["requestState"] = state.clone();
    gateway.send(&stateless_request(4, "tools/call", retry.clone()));
    let done = gateway.next(|m| m["id"] == 4);
    assert_eq!(
        done["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": answer.to_string()}], "isError": false})
    );
    // A state is good for one retry.
    gateway.send(&stateless_request(5, "tools/call", retry));
    let refused = gateway.next(|m| m["id"] == 5);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid tools/call params: requestState is unknown or has expired"),
        "{refused}"
    );
    // A request without the envelope is refused, and so is initialize, as a server of both eras
    // refuses it after the probe.
    gateway.send(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}));
    let refused = gateway.next(|m| m["id"] == 6);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    gateway.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    let refused = gateway.next(|m| m["id"] == 7);
    assert_eq!(
        refused["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}),
        "{refused}"
    );
    drop(gateway.stdin);
    assert!(gateway.child.wait().unwrap().success());
}

#[test]
fn over_stdio_a_listen_hears_of_changes_and_ends_with_the_input() {
    let ws = support::gateway::workspace(&json!({"demo": support::demo(&[])}));
    let mut gateway = RawGateway::start(&ws);
    // The list the client has (a list waits for the backends starting with the gateway).
    gateway.send(&stateless_request(1, "tools/list", json!({})));
    gateway.next(|m| m["id"] == 1);
    // A listen is acknowledged, hears of a list change, and ends with notifications/cancelled.
    gateway.send(&stateless_request(
        "listen",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "logs": true}}),
    ));
    let acknowledged = gateway.next(|m| m["method"] == "notifications/subscriptions/acknowledged");
    assert_eq!(
        acknowledged["params"],
        json!({"notifications": {"toolsListChanged": true}, "_meta": {"io.modelcontextprotocol/subscriptionId": "listen"}})
    );
    gateway.send(&stateless_request(
        8,
        "tools/call",
        json!({"name": "mcp__demo__trigger-list-changed"}),
    ));
    let changed = gateway.next(|m| m["method"] == "notifications/tools/list_changed");
    assert_eq!(
        changed["params"],
        json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "listen"}})
    );
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen"}}));
    // A client that closes its input with a listen open: the gateway ends at once all the same.
    gateway.send(&stateless_request(
        "again",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    ));
    gateway.next(|m| m["method"] == "notifications/subscriptions/acknowledged");
    drop(gateway.stdin);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = gateway.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the gateway waited for its listen");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
}

/// One raw HTTP/1.1 POST of `body` to the gateway at `address` (a connection of its own) with
/// the stateless era's headers for `method` (and `Mcp-Name: name`) and `extra` headers; the
/// whole answer.
fn post(address: &str, method: &str, name: Option<&str>, extra: &str, body: &Value) -> String {
    let body = body.to_string();
    let name = name.map(|name| format!("Mcp-Name: {name}\r\n")).unwrap_or_default();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}{extra}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// The JSON-RPC message of an answer: its JSON body, or its event stream's last `data:`.
fn message_of(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let data = body.lines().filter_map(|line| line.strip_prefix("data: ")).next_back();
    let text = data.unwrap_or_else(|| body.trim());
    // A chunked JSON body: its one chunk.
    let text = text.lines().find(|line| line.starts_with('{')).unwrap_or(text);
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

#[test]
fn over_http_the_stateless_era_needs_no_session_and_has_its_wire_shapes() {
    let ws = support::gateway::workspace(&json!({"demo": support::demo(&[])}));
    let (gateway, address) = serve_http(&ws, "127.0.0.1", &[], &[]);
    // A call: its answer is an event stream, and no session is opened.
    let call = json!({"name": "mcp__demo__elicit", "arguments": {"message": "Who?"}});
    let asked = post(
        &address,
        "tools/call",
        Some("mcp__demo__elicit"),
        "",
        &stateless_request(2, "tools/call", call.clone()),
    );
    assert!(asked.starts_with("HTTP/1.1 200"), "{asked}");
    assert!(asked.contains("content-type: text/event-stream"), "{asked}");
    assert!(!asked.to_ascii_lowercase().contains("mcp-session-id"), "{asked}");
    let result = message_of(&asked)["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert!(is_request_state(&result["requestState"]), "{asked}");
    assert_eq!(
        result["inputRequests"]["input-1"]["params"]["requestedSchema"]["properties"]["name"]["type"], "string",
        "{asked}"
    );
    // The retry, a POST of its own on a connection of its own, finds the held call.
    let mut retry = call.clone();
    retry["inputResponses"] = json!({"input-1": {"action": "decline"}});
    retry["requestState"] = result["requestState"].clone();
    let done = post(
        &address,
        "tools/call",
        Some("mcp__demo__elicit"),
        "",
        &stateless_request(3, "tools/call", retry),
    );
    assert_eq!(
        message_of(&done)["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"action\":\"decline\"}"}], "isError": false}),
        "{done}"
    );
    // server/discover: JSON (the backend is up by now: its capabilities count).
    let discover = post(
        &address,
        "server/discover",
        None,
        "",
        &stateless_request(1, "server/discover", json!({})),
    );
    assert!(discover.starts_with("HTTP/1.1 200"), "{discover}");
    assert!(!discover.to_ascii_lowercase().contains("mcp-session-id"), "{discover}");
    assert_eq!(message_of(&discover)["result"], discovered(), "{discover}");
    // Headers that disagree with the body are refused before anything runs.
    let wrong = post(
        &address,
        "tools/call",
        Some("mcp__demo__echo"),
        "",
        &stateless_request(4, "tools/call", call),
    );
    assert!(wrong.starts_with("HTTP/1.1 400"), "{wrong}");
    assert_eq!(
        message_of(&wrong)["error"],
        json!({"code": -32020, "message": "Header mismatch: Mcp-Name is \"mcp__demo__echo\" but params.name is \"mcp__demo__elicit\""})
    );
    let older = post(&address, "tools/list", None, "", &{
        let mut request = stateless_request(5, "tools/list", json!({}));
        request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2027-01-01");
        request
    });
    assert!(older.starts_with("HTTP/1.1 400"), "{older}");
    assert_eq!(message_of(&older)["error"]["code"], -32020, "{older}");
    // A method of the initialize era only is not found.
    let ping = post(&address, "ping", None, "", &stateless_request(6, "ping", json!({})));
    assert!(ping.starts_with("HTTP/1.1 404"), "{ping}");
    // GET opens no stream in the stateless era.
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "GET /mcp HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("allow: post"), "{answer}");
    drop(gateway);
}

#[test]
fn over_http_a_listen_is_a_stream_of_its_own_notifications() {
    let ws = support::gateway::workspace(&json!({"demo": support::demo(&[])}));
    let (gateway, address) = serve_http(&ws, "127.0.0.1", &[], &[]);
    // A listen is an event stream that stays open: its acknowledgement first.
    let mut listen = std::net::TcpStream::connect(&address).unwrap();
    let body = stateless_request(
        "l",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
    .to_string();
    write!(
        listen,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Keep-alive comments come every 15 s: each read waits 1 s, the whole wait 30 s.
    listen.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut lines = BufReader::new(listen);
    let mut seen = String::new();
    let mut next_data = || {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut line = String::new();
            match lines.read_line(&mut line) {
                Ok(0) => panic!("the listen's stream ended: {seen}"),
                Ok(_) => seen.push_str(&line),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => panic!("{e}: {seen}"),
            }
            if let Some(data) = line.strip_prefix("data: ") {
                return serde_json::from_str::<Value>(data.trim()).unwrap();
            }
            assert!(Instant::now() < deadline, "no message in time: {seen}");
        }
    };
    let acknowledged = next_data();
    assert_eq!(
        acknowledged,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "notifications": {"toolsListChanged": true}, "_meta": {"io.modelcontextprotocol/subscriptionId": "l"}}})
    );
    // The list a client has (a list waits for the backends starting with the gateway: what
    // changes before is in it), then a change of it.
    let listed = post(
        &address,
        "tools/list",
        None,
        "",
        &stateless_request(6, "tools/list", json!({})),
    );
    assert!(listed.contains("mcp__demo__trigger-list-changed"), "{listed}");
    post(
        &address,
        "tools/call",
        Some("mcp__demo__trigger-list-changed"),
        "",
        &stateless_request(7, "tools/call", json!({"name": "mcp__demo__trigger-list-changed"})),
    );
    assert_eq!(
        next_data(),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {
            "_meta": {"io.modelcontextprotocol/subscriptionId": "l"}}})
    );
    drop(gateway);
}

#[test]
fn over_http_a_calls_param_headers_must_carry_its_arguments() {
    // The backend's `headers_echo` mirrors region, priority and verbose into Mcp-Param headers.
    let backend = Remote::http(&["--header-tools"]);
    let ws = support::gateway::workspace(&json!({"remote": {"type": "http", "url": backend.url()}}));
    let (gateway, address) = serve_http(&ws, "127.0.0.1", &[], &[]);
    let call =
        json!({"name": "mcp__remote__headers_echo", "arguments": {"region": "eu-west", "priority": 2, "query": "q"}});
    let post_call = |id: u64, headers: &str| {
        post(
            &address,
            "tools/call",
            Some("mcp__remote__headers_echo"),
            headers,
            &stateless_request(id, "tools/call", call.clone()),
        )
    };
    // Headers that carry the arguments: the call goes on, and the gateway's own request to the
    // backend carries them as the backend names the tool.
    let done = post_call(1, "Mcp-Param-Region: eu-west\r\nMcp-Param-Priority: 2\r\n");
    let echoed: Value =
        serde_json::from_str(message_of(&done)["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (
            &echoed["mcp-name"],
            &echoed["mcp-param-region"],
            &echoed["mcp-param-priority"]
        ),
        (&json!("headers_echo"), &json!("eu-west"), &json!("2")),
        "{done}"
    );
    // One that disagrees, one missing, one for a parameter not annotated: refused.
    for (headers, message) in [
        (
            "Mcp-Param-Region: us-east\r\nMcp-Param-Priority: 2\r\n",
            "Header mismatch: Mcp-Param-Region is \"us-east\" but arguments.region is \"eu-west\"",
        ),
        (
            "Mcp-Param-Region: eu-west\r\n",
            "Header mismatch: Mcp-Param-Priority is missing (arguments.priority is \"2\")",
        ),
        (
            "Mcp-Param-Region: eu-west\r\nMcp-Param-Priority: 2\r\nMcp-Param-Query: q\r\n",
            "Header mismatch: mcp-param-query was sent but the tool has no parameter annotated x-mcp-header \"query\"",
        ),
    ] {
        let refused = post_call(2, headers);
        assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
        assert_eq!(
            message_of(&refused)["error"],
            json!({"code": -32020, "message": message}),
            "{headers}"
        );
    }
    // plexus's own client of the stateless era sends them as the gateway lists the tool.
    runtime().block_on(async {
        let config = ServerConfig::from_json(&json!({"type": "http", "url": format!("http://{address}/mcp")}))
            .unwrap()
            .0;
        let client = client_in(&config, None, era(true)).await;
        let result = client
            .call_tool(
                "mcp__remote__headers_echo",
                args(json!({"region": "Zürich", "verbose": true})),
            )
            .await
            .unwrap();
        let echoed: Value = serde_json::from_str(result.content[0].as_text().unwrap()).unwrap();
        assert_eq!(echoed["mcp-param-verbose"], "true", "{echoed}");
        assert_eq!(echoed["mcp-param-region"], "=?base64?WsO8cmljaA==?=", "{echoed}");
        client.close().await.unwrap();
    });
    drop(gateway);
}
