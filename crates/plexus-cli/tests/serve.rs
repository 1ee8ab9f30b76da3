//! `plexus serve`, driven by plexus's own client over stdio and Streamable HTTP on 127.0.0.1:
//! the tool pool as one server's tools, calls with progress, resources whose URIs round-trip,
//! prompts, list changes when a backend's list changes and when a backend dies and comes back,
//! a failing backend, elicitation forwarded to the gateway's client, and the HTTP side's checks.

mod support;

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::time::Duration;

use plexus::Client;
use plexus::client::{ClientHandler, ServerNotification, ServerRequestContext};
use plexus::config::ServerConfig;
use plexus::jsonrpc::ErrorObject;
use plexus::protocol::{ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitValue, JsonObject};
use serde_json::{Value, json};
use support::gateway::{
    HttpGateway, RawGateway, args, client_of as connect, names, serve_http, stdio_entry, workspace,
};
use support::remote::Remote;
use support::{Workspace, demo};

/// Answers every form with the name "Ada", and consents to every URL-mode elicitation,
/// recording the URLs it was shown.
#[derive(Default)]
struct Ada {
    shown: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl ClientHandler for Ada {
    fn capabilities(&self) -> ClientCapabilities {
        support::elicitation_capabilities(true)
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        _context: ServerRequestContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let result = match params {
            ElicitRequestParams::Url(url) => {
                self.shown.lock().unwrap().push(url.url);
                ElicitResult::accept(None)
            }
            _ => ElicitResult::accept(Some(BTreeMap::from([(
                "name".to_owned(),
                ElicitValue::String("Ada".to_owned()),
            )]))),
        };
        Ok(result)
    }
}

/// Waits (at most 30 s) for a notification that `matches`.
async fn wait_for(
    notifications: &mut tokio::sync::broadcast::Receiver<ServerNotification>,
    matches: fn(&ServerNotification) -> bool,
) {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match notifications.recv().await {
                Ok(notification) if matches(&notification) => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("the gateway's notifications ended: {e}"),
            }
        }
    })
    .await
    .expect("the notification came");
}

/// A runtime for a test that also runs a [`Remote`] (which has its own).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_gateway_serves_every_backend_over_stdio() {
    let remote = Remote::http(&[]);
    runtime().block_on(every_backend_over_stdio(&remote));
}

async fn every_backend_over_stdio(remote: &Remote) {
    let ws = workspace(&json!({
        "demo": demo(&[]),
        "remote": {"type": "http", "url": remote.url()},
        "gone": {"command": "plexus-no-such-command"},
    }));
    let client = connect(&stdio_entry(&ws, &[]), Some(Arc::new(Ada::default()))).await;
    assert_eq!(client.server().server_info.name, "plexus-gateway");
    let tools = client.list_tools().await.unwrap();
    let listed = names(&tools);
    assert!(
        listed.contains(&"mcp__demo__add") && listed.contains(&"mcp__remote__add"),
        "{listed:?}"
    );
    assert!(!listed.iter().any(|name| name.starts_with("mcp__gone__")), "{listed:?}");
    let add = tools.iter().find(|tool| tool.name == "mcp__remote__add").unwrap();
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));

    let sum = client
        .call_tool("mcp__remote__add", args(json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(sum.content[0].as_text(), Some("5"));
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    an_image_comes_through_whole(&client).await;
    let (callback, mut reports) = plexus::client::progress_channel(16);
    let slow = client
        .call_tool_with(
            "mcp__demo__slow",
            args(json!({"ms": 400, "steps": 2})),
            plexus::client::RequestOptions::default().progress(callback),
        )
        .await
        .unwrap();
    assert!(!slow.is_error());
    assert!((reports.recv().await.unwrap().progress - 1.0).abs() < f64::EPSILON);
    // The backend's elicitation reaches this client's handler through the gateway.
    let elicited = client
        .call_tool("mcp__demo__elicit", args(json!({"message": "Who?"})))
        .await
        .unwrap();
    assert!(
        elicited.content[0].as_text().unwrap().contains("\"Ada\""),
        "{elicited:?}"
    );
    // A tool of a server that could not start is a tool error that says why (as tested below).
    assert!(client.call_tool("mcp__gone__x", None).await.unwrap().is_error());

    let resources = client.list_resources().await.unwrap();
    let hello = resources
        .iter()
        .find(|resource| resource.uri == "plexus://remote/test://static/hello.txt")
        .unwrap_or_else(|| panic!("{resources:?}"));
    let read = client.read_resource(&hello.uri).await.unwrap();
    assert_eq!(serde_json::to_value(&read.contents).unwrap()[0]["uri"], hello.uri);
    let templates = client.list_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "plexus://demo/test://items/{id}")
    );
    let prompts = client.list_prompts().await.unwrap();
    assert!(prompts.iter().any(|prompt| prompt.name == "mcp__remote__greeting"));
    let greeting = client
        .get_prompt(
            "mcp__demo__greeting",
            Some(BTreeMap::from([("name".to_owned(), "Ada".to_owned())])),
        )
        .await
        .unwrap();
    assert!(serde_json::to_string(&greeting.messages).unwrap().contains("Ada"));

    // A backend's list change reaches the client, and the new tool is there.
    let mut notifications = client.subscribe();
    client.call_tool("mcp__demo__trigger-list-changed", None).await.unwrap();
    wait_for(&mut notifications, |n| {
        matches!(n, ServerNotification::ToolsListChanged)
    })
    .await;
    assert!(names(&client.list_tools().await.unwrap()).contains(&"mcp__demo__dynamic-1"));

    // A backend that dies leaves the list, and comes back when the pool reconnects it.
    let _ = client.call_tool("mcp__demo__crash", None).await;
    wait_for(&mut notifications, |n| {
        matches!(n, ServerNotification::ToolsListChanged)
    })
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let tools = client.list_tools().await.unwrap();
        if names(&tools).contains(&"mcp__demo__add") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the demo server did not come back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The other backend kept working throughout.
    let sum = client
        .call_tool("mcp__remote__add", args(json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    assert_eq!(sum.content[0].as_text(), Some("2"));
    client.close().await.unwrap();
}

/// Image content is processed off the gateway's one thread, and comes through as the demo
/// server sent it (a 1×1 PNG needs no resizing).
async fn an_image_comes_through_whole(gateway: &Client) {
    let direct = connect(&ServerConfig::from_json(&demo(&[])).unwrap().0, None).await;
    let expected = direct.call_tool("image", None).await.unwrap();
    direct.close().await.unwrap();
    let image = gateway.call_tool("mcp__demo__image", None).await.unwrap();
    assert_eq!(image.content, expected.content);
    assert!(
        matches!(&image.content[0], plexus::protocol::ContentBlock::Image(block) if block.mime_type == "image/png"),
        "{image:?}"
    );
}

#[test]
fn a_call_the_client_gives_up_is_cancelled_on_the_backend() {
    // A backend of the `initialize` era hears notifications/cancelled; one of the stateless era
    // (the test server's default) has the call's stream closed.
    for legacy in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.log");
        let era: &[&str] = if legacy { &["--era", "legacy"] } else { &[] };
        let remote = Remote::http(&[&["--event-log", log.to_str().unwrap()][..], era].concat());
        let ws = workspace(&json!({"remote": {"type": "http", "url": remote.url()}}));
        runtime().block_on(async {
            let client = connect(&stdio_entry(&ws, &[]), None).await;
            let options = plexus::client::RequestOptions::with_timeout(Duration::from_millis(500));
            let error = client
                .call_tool_with("mcp__remote__hang", None, options)
                .await
                .unwrap_err();
            assert!(error.to_string().contains("timed out"), "{error}");
            // The cancellation reaches the backend through the gateway.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            loop {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let cancelled = text
                    .lines()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .any(|event| {
                        if legacy {
                            event["event"] == "notification" && event["method"] == "notifications/cancelled"
                        } else {
                            event["event"] == "stream-closed"
                        }
                    });
                if cancelled {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the backend (legacy: {legacy}) was not told: {text}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // And the gateway goes on.
            let sum = client
                .call_tool("mcp__remote__add", args(json!({"a": 1, "b": 2})))
                .await
                .unwrap();
            assert_eq!(sum.content[0].as_text(), Some("3"));
            client.close().await.unwrap();
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_reaches_the_client_and_so_does_its_completion() {
    let ws = workspace(&json!({"demo": demo(&[])}));
    let ada = Arc::new(Ada::default());
    let client = connect(&stdio_entry(&ws, &[]), Some(ada.clone())).await;
    let mut notifications = client.subscribe();
    let result = client
        .call_tool("mcp__demo__url-elicit", args(json!({"rounds": 2})))
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("url-elicit: done after 2 URL elicitations"),
        "{result:?}"
    );
    // Each round's completion is passed on, with the backend's elicitation id. (The test server
    // completes at once, so the forwarded request itself is cancelled on the client, and may be
    // before its handler sees it.)
    for round in 1..=2 {
        let id = format!("url-elicit-{round}");
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match notifications.recv().await.unwrap() {
                    ServerNotification::ElicitationComplete(params) if params.elicitation_id == id => return,
                    _ => {}
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no completion for {id}"));
    }
    for shown in ada.shown.lock().unwrap().iter() {
        assert!(shown.starts_with("https://auth.example.test/step/"), "{shown}");
    }
    client.close().await.unwrap();
}

#[test]
fn the_clients_progress_and_cancellation_of_a_forwarded_request_reach_the_backend() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.log");
    let ws = workspace(&json!({"demo": demo(&["--event-log", log.to_str().unwrap()])}));
    let mut gateway = RawGateway::start(&ws);
    gateway.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}}, "clientInfo": {"name": "raw", "version": "1"}}}));
    gateway.next(|m| m["id"] == 1);
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "mcp__demo__sample", "arguments": {"prompt": "hi"}}});

    // Progress on the forwarded request goes to the backend under the token it chose.
    gateway.send(&call(2));
    let asked = gateway.next(|m| m["method"] == "sampling/createMessage");
    let token = asked["params"]["_meta"]["progressToken"].as_str().unwrap().to_owned();
    assert!(token.starts_with("plexus-progress-"), "{asked}");
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1, "total": 2}}));
    gateway.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "raw-model"}}));
    let answer = gateway.next(|m| m["id"] == 2);
    assert_eq!(answer["result"]["content"][0]["text"], "sampled", "{answer}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events = std::fs::read_to_string(&log).unwrap_or_default();
        let progressed = events.lines().any(|line| {
            let event: Value = serde_json::from_str(line).unwrap_or_default();
            event["method"] == "notifications/progress" && event["params"]["progressToken"] == "sample-progress"
        });
        if progressed {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no progress reached the backend: {events}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // The client cancelling the forwarded request ends it as an error on the backend.
    gateway.send(&call(3));
    let asked = gateway.next(|m| m["method"] == "sampling/createMessage");
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": asked["id"], "reason": "the user said no"}}));
    let answer = gateway.next(|m| m["id"] == 3);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("cancelled the request: the user said no"), "{text}");
    drop(gateway.stdin);
    assert!(gateway.child.wait().unwrap().success());
}

#[test]
fn a_calls_arguments_reach_the_backend_as_the_client_wrote_them() {
    let ws = workspace(&json!({"demo": demo(&[])}));
    let mut gateway = RawGateway::start(&ws);
    gateway.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    gateway.next(|m| m["id"] == 0);
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Odd spacing (a tab among it), escapes and a key the tool does not know: the gateway
    // passes the arguments on unparsed, and the backend reads them as the client meant them.
    gateway.send_line(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"mcp__demo__echo\",\
         \"arguments\": {  \"text\" :\t\"a\\\"b\\nc\\u00e9\" , \"extra\": [1, {\"x\": null}]  }}}",
    );
    let echoed = gateway.next(|m| m["id"] == 1);
    assert_eq!(echoed["result"]["content"][0]["text"], "a\"b\nc\u{e9}", "{echoed}");
    // `null` is no arguments; anything else that is not an object is refused, naming what it is.
    gateway.send_line(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__demo__image","arguments":null}}"#,
    );
    let image = gateway.next(|m| m["id"] == 2);
    assert_eq!(image["result"]["isError"], false, "{image}");
    for (id, arguments, kind) in [(3, "[1]", "an array"), (4, r#""x""#, "a string"), (5, "7", "a number")] {
        gateway.send_line(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"mcp__demo__echo","arguments":{arguments}}}}}"#
        ));
        let refused = gateway.next(|m| m["id"] == id);
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(
            refused["error"]["message"],
            format!("invalid tools/call params: arguments must be an object, not {kind}")
        );
    }
    drop(gateway.stdin);
    assert!(gateway.child.wait().unwrap().success());
}

/// Starts `plexus serve --http` on a free port of 127.0.0.1 and returns it with its URL.
fn http_gateway(ws: &Workspace, env: &[(&str, &str)], extra: &[&str]) -> (HttpGateway, String) {
    http_gateway_on(ws, "127.0.0.1", env, extra)
}

/// Starts `plexus serve --http HOST:PORT` on a free port and returns it with its URL.
fn http_gateway_on(ws: &Workspace, host: &str, env: &[(&str, &str)], extra: &[&str]) -> (HttpGateway, String) {
    let (gateway, address) = serve_http(ws, host, env, extra);
    (gateway, format!("http://{address}/mcp"))
}

/// One raw HTTP/1.1 `ping`; the whole answer.
fn raw_post(url: &str, headers: &str) -> String {
    raw_request(url, headers, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
}

/// One raw HTTP/1.1 POST of `body`; the whole answer.
fn raw_request(url: &str, headers: &str, body: &str) -> String {
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// Opens a session over raw HTTP; its id.
fn raw_session(url: &str, host: &str) -> String {
    let answer = raw_request(
        url,
        host,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: "))
        .unwrap_or_else(|| panic!("no session id in {answer}"))
        .trim()
        .to_owned()
}

#[test]
fn an_unused_http_session_ends_and_one_with_an_open_stream_stays() {
    let ws = workspace(&json!({"demo": demo(&[])}));
    let (child, url) = http_gateway(&ws, &[], &["--session-idle", "1"]);
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let host = format!("Host: {address}\r\n");
    let (unused, streaming) = (raw_session(&url, &host), raw_session(&url, &host));
    let ping = |session: &str| raw_post(&url, &format!("{host}Mcp-Session-Id: {session}\r\n"));
    assert!(ping(&unused).starts_with("HTTP/1.1 200"), "{}", ping(&unused));
    // The second session's own event stream stays open meanwhile.
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "GET /mcp HTTP/1.1\r\n{host}Accept: text/event-stream\r\nMcp-Session-Id: {streaming}\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    std::thread::sleep(Duration::from_millis(2500));
    let gone = ping(&unused);
    assert!(gone.starts_with("HTTP/1.1 404"), "{gone}");
    assert!(gone.contains("initialize again"), "{gone}");
    assert!(ping(&streaming).starts_with("HTTP/1.1 200"), "{}", ping(&streaming));
    drop(stream);
    drop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_streamable_http_and_checks_who_asks() {
    let ws = workspace(&json!({"demo": demo(&[])}));
    let (child, url) = http_gateway(&ws, &[], &[]);
    let config = ServerConfig::from_json(&json!({"type": "http", "url": url})).unwrap().0;
    let client = connect(&config, None).await;
    assert!(names(&client.list_tools().await.unwrap()).contains(&"mcp__demo__echo"));
    let (callback, mut reports) = plexus::client::progress_channel(16);
    let slow = client
        .call_tool_with(
            "mcp__demo__slow",
            args(json!({"ms": 300, "steps": 3})),
            plexus::client::RequestOptions::default().progress(callback),
        )
        .await
        .unwrap();
    assert_eq!(slow.content[0].as_text(), Some("slow: done after 300 ms"));
    assert!((reports.recv().await.unwrap().progress - 1.0).abs() < f64::EPSILON);
    let read = client
        .read_resource("plexus://demo/test://static/hello.txt")
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents).unwrap()[0]["text"],
        "Hello from plexus-testserver!\n"
    );
    client.close().await.unwrap();

    // DNS rebinding: another Host is refused, and so is a foreign Origin.
    let host = "Host: evil.example\r\n";
    assert!(
        raw_post(&url, host).starts_with("HTTP/1.1 403"),
        "{}",
        raw_post(&url, host)
    );
    let origin = format!(
        "Host: {}\r\nOrigin: https://evil.example\r\n",
        url.trim_start_matches("http://").trim_end_matches("/mcp")
    );
    assert!(raw_post(&url, &origin).starts_with("HTTP/1.1 403"));
    // Without a session, only initialize is taken.
    let plain = format!(
        "Host: {}\r\n",
        url.trim_start_matches("http://").trim_end_matches("/mcp")
    );
    assert!(raw_post(&url, &plain).starts_with("HTTP/1.1 400"));
    // A pretty-printed body: the line breaks in its arguments must not reach the stdio
    // backend's stdin, where a line is a message.
    let session = raw_session(&url, &plain);
    let answer = raw_request(
        &url,
        &format!("{plain}Mcp-Session-Id: {session}\r\n"),
        "{\n \"jsonrpc\": \"2.0\",\n \"id\": 7,\n \"method\": \"tools/call\",\n \"params\": {\n  \"name\": \"mcp__demo__echo\",\n  \"arguments\": {\n   \"text\":\r\n \"two\\nlines\"\n  }\n }\n}",
    );
    assert!(answer.contains(r#"{"type":"text","text":"two\nlines"}"#), "{answer}");
    drop(child);

    // With a token, a request without it is refused.
    let (child, url) = http_gateway(&ws, &[("PLEXUS_GATEWAY_TOKEN", "s3cret-token")], &[]);
    let plain = format!(
        "Host: {}\r\n",
        url.trim_start_matches("http://").trim_end_matches("/mcp")
    );
    assert!(raw_post(&url, &plain).starts_with("HTTP/1.1 401"));
    let config = ServerConfig::from_json(
        &json!({"type": "http", "url": url, "headers": {"Authorization": "Bearer s3cret-token"}}),
    )
    .unwrap()
    .0;
    let client = connect(&config, None).await;
    assert!(!client.list_tools().await.unwrap().is_empty());
    client.close().await.unwrap();
    drop(child);
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let ws = Workspace::new();
    let out = ws.run(&["serve", "--http", "0.0.0.0:0"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("is not a loopback address"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_only_tool_is_served_as_a_plain_one_and_refused_when_its_server_runs_no_tasks() {
    let ws = workspace(&json!({"demo": demo(&["--task-required-tool"])}));
    let client = connect(&stdio_entry(&ws, &[]), None).await;
    let tools = client.list_tools().await.unwrap();
    let execution = |name: &str| {
        let tool = tools
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", names(&tools)));
        serde_json::to_value(&tool.execution).unwrap()
    };
    // The gateway runs a task-only tool as a task itself, so its clients call it as any other:
    // `taskSupport` is left out (and with it an `execution` that held nothing else).
    assert_eq!(execution("mcp__demo__task-required"), Value::Null);
    assert_eq!(execution("mcp__demo__echo"), Value::Null);
    // This server declares no tasks: the call is refused as the spec has a server refuse a call
    // made without a task (-32601).
    let error = client.call_tool("mcp__demo__task-required", None).await.unwrap_err();
    let plexus::client::ClientError::Rpc { error, .. } = error else {
        panic!("not a JSON-RPC error: {error}")
    };
    assert_eq!(error.code, plexus::jsonrpc::ErrorCode::METHOD_NOT_FOUND, "{error:?}");
    assert_eq!(
        error.message,
        "calling task-required of server \"demo\": the tool must be called as a task (execution.taskSupport is \
         \"required\"), and the server declares no task support for tools/call"
    );
    client.close().await.unwrap();
}

/// The next `count` messages that `matches`, in the order they came (others are skipped).
fn next_messages(gateway: &RawGateway, count: usize, matches: impl Fn(&Value) -> bool) -> Vec<Value> {
    (0..count).map(|_| gateway.next(&matches)).collect()
}

/// Initializes a raw gateway session with the capabilities of `capabilities`.
fn raw_initialize(gateway: &mut RawGateway, capabilities: &Value) -> Value {
    gateway.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    let answer = gateway.next(|m| m["id"] == "init");
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    answer
}

#[test]
fn a_backend_that_cannot_serve_is_reported_to_the_client_and_its_tools_say_why() {
    let remote = Remote::http(&["--require-header", "X-Api-Key: sesame"]);
    let ws = workspace(&json!({
        "demo": demo(&[]),
        "gone": {"command": "plexus-no-such-command"},
        "api": {"type": "http", "url": remote.url()},
    }));
    // A project server not approved yet.
    ws.write_servers(ws.project_file(), &json!({"proj": demo(&[])}));
    let mut gateway = RawGateway::start(&ws);
    raw_initialize(&mut gateway, &json!({}));
    // At start: a log message for each server that could not be used, the server its logger.
    let is_report = |m: &Value| m["method"] == "notifications/message" && m["params"]["logger"] != "demo";
    let mut reports = next_messages(&gateway, 2, is_report);
    reports.sort_by_key(|m| m["params"]["logger"].as_str().unwrap().to_owned());
    let said = |m: &Value| m["params"]["data"].as_str().unwrap().to_owned();
    let (api, gone) = (&reports[0], &reports[1]);
    assert_eq!(
        (&api["params"]["logger"], &api["params"]["level"]),
        (&json!("api"), &json!("warning")),
        "{api}"
    );
    assert!(
        said(api).starts_with("server \"api\" is unavailable: the server needs authentication: "),
        "{api}"
    );
    assert_eq!(
        (&gone["params"]["logger"], &gone["params"]["level"]),
        (&json!("gone"), &json!("error")),
        "{gone}"
    );
    assert!(
        said(gone).starts_with("server \"gone\" is unavailable: ") && said(gone).contains("plexus-no-such-command"),
        "{gone}"
    );
    // A call of a tool such a server would hold gets its reason, as a tool error.
    let call =
        |id: u64, name: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name}});
    for (id, name, report) in [(1, "mcp__gone__anything", gone), (2, "mcp__api__search", api)] {
        gateway.send(&call(id, name));
        let answer = gateway.next(|m| m["id"] == id);
        assert_eq!(
            answer["result"],
            json!({"content": [{"type": "text", "text": said(report)}], "isError": true})
        );
    }
    // So is one of a server that is not started, which is not reported otherwise.
    gateway.send(&call(5, "mcp__proj__echo"));
    let answer = gateway.next(|m| m["id"] == 5);
    let why = "server \"proj\" is not started: pending approval (a project server runs only once approved)";
    assert_eq!(
        answer["result"],
        json!({"content": [{"type": "text", "text": why}], "isError": true})
    );
    // A name no server could hold is still an unknown tool.
    gateway.send(&call(3, "mcp__nobody__x"));
    let answer = gateway.next(|m| m["id"] == 3);
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": "invalid tools/call params: no tool is named \"mcp__nobody__x\""})
    );
    // Later: a backend that dies is reported too (and comes back on its own).
    gateway.send(&call(4, "mcp__demo__crash"));
    let died = gateway.next(|m| m["method"] == "notifications/message" && m["params"]["logger"] == "demo");
    assert_eq!(died["params"]["level"], "error", "{died}");
    assert!(said(&died).starts_with("server \"demo\" is unavailable: "), "{died}");
    drop(gateway.stdin);
    assert!(gateway.child.wait().unwrap().success());
}

/// `completion/complete` params for `argument` = `value` of `reference`.
fn completion(reference: &Value, argument: &str, value: &str) -> plexus::protocol::CompleteRequestParams {
    serde_json::from_value(json!({"ref": reference, "argument": {"name": argument, "value": value}})).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_and_resource_subscriptions_reach_the_server_that_owns_them() {
    let ws = workspace(&json!({"demo": demo(&[])}));
    let client = connect(&stdio_entry(&ws, &[]), None).await;
    // Offered because the backend offers them.
    let capabilities = &client.server().capabilities;
    assert_eq!(capabilities.completions, Some(JsonObject::new()));
    assert_eq!(capabilities.resources.as_ref().and_then(|r| r.subscribe), Some(true));
    // By the prompt's name and the template's URI as the gateway lists them.
    let prompt = json!({"type": "ref/prompt", "name": "mcp__demo__code-review"});
    let languages = client.complete(&completion(&prompt, "language", "r")).await.unwrap();
    assert_eq!(languages.completion.values, ["rust"]);
    let template = json!({"type": "ref/resource", "uri": "plexus://demo/test://items/{id}"});
    let ids = client.complete(&completion(&template, "id", "1")).await.unwrap();
    assert_eq!(
        (ids.completion.values, ids.completion.total),
        (vec!["1".to_owned(), "10".to_owned()], Some(2))
    );
    let unknown = json!({"type": "ref/prompt", "name": "mcp__demo__nope"});
    let error = client.complete(&completion(&unknown, "x", "")).await.unwrap_err();
    let plexus::client::ClientError::Rpc { error, .. } = error else {
        panic!("not a JSON-RPC error: {error}")
    };
    assert_eq!(
        (error.code, error.message.as_str()),
        (
            plexus::jsonrpc::ErrorCode::INVALID_PARAMS,
            "invalid completion/complete params: no prompt is named \"mcp__demo__nope\""
        )
    );

    // A subscription reaches the backend, and its updates come back under the gateway's URI.
    let mut notifications = client.subscribe();
    let uri = "plexus://demo/test://static/hello.txt";
    client.subscribe_resource(uri).await.unwrap();
    let update = || {
        client.call_tool(
            "mcp__demo__update-resource",
            args(json!({"uri": "test://static/hello.txt"})),
        )
    };
    let sent = update().await.unwrap();
    // The backend speaks the stateless era: the gateway listens for the resource on its behalf.
    assert_eq!(
        sent.content[0].as_text(),
        Some("sent notifications/resources/updated for test://static/hello.txt to 1 subscriptions")
    );
    let updated = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let ServerNotification::ResourceUpdated(params) = notifications.recv().await.unwrap() {
                return params;
            }
        }
    })
    .await
    .expect("the update came");
    assert_eq!(updated.uri, uri);
    // And so does the unsubscription.
    client.unsubscribe_resource(uri).await.unwrap();
    let sent = update().await.unwrap();
    assert_eq!(
        sent.content[0].as_text(),
        Some("no subscription listens to test://static/hello.txt; nothing sent")
    );
    client.close().await.unwrap();

    // Without a backend that offers them, they are not offered.
    let ws = workspace(&json!({"gone": {"command": "plexus-no-such-command"}}));
    let client = connect(&stdio_entry(&ws, &[]), None).await;
    let capabilities = &client.server().capabilities;
    assert_eq!(capabilities.completions, None);
    assert_eq!(capabilities.resources.as_ref().map(|r| r.subscribe), Some(None));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_gateway_listens_on_a_host_name() {
    let ws = workspace(&json!({"demo": demo(&[])}));
    let (child, url) = http_gateway_on(&ws, "localhost", &[], &[]);
    assert!(url.starts_with("http://localhost:"), "{url}");
    // Its clients say `Host: localhost:PORT`, which names this machine.
    let config = ServerConfig::from_json(&json!({"type": "http", "url": url})).unwrap().0;
    let client = connect(&config, None).await;
    assert!(names(&client.list_tools().await.unwrap()).contains(&"mcp__demo__echo"));
    client.close().await.unwrap();
    drop(child);
    // An address without a port is refused before anything starts, saying what it takes.
    let out = ws.run(&["serve", "--http", "localhost"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains(
            "invalid value 'localhost' for '--http <HOST:PORT>': expected HOST:PORT (such as localhost:8931 or \
             127.0.0.1:8931), not \"localhost\""
        ),
        "{out:?}"
    );
}
