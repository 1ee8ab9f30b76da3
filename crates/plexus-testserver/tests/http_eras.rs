//! `plexus-testserver http` in both protocol eras, on the wire: a POST whose
//! `MCP-Protocol-Version` names no `initialize`-era version is a stateless 2026-07-28 request
//! (its envelope and `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` headers checked against the body,
//! errors with the status their code calls for, no session); anything else takes the session
//! path. `--era legacy` answers a stateless `server/discover` as `--probe-answer` says, `--era
//! modern` refuses the session era with -32022.

mod common;
mod wire;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use base64::Engine as _;
use common::wait_for_event;
use serde_json::{Value, json};
use wire::{ACCEPT_BOTH, JSON_BODY, Remote, Response, Session, initialize_request, request};

const VERSION: &str = "2026-07-28";

/// `params` with the 2026-07-28 envelope in `_meta`, at `version`.
fn enveloped(version: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        // A client that can answer an elicitation (the server asks only a client that declares it).
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "http-eras-test", "version": "1"},
    });
    params
}

/// A stateless request at 2026-07-28.
fn modern(id: i64, method: &str, params: Value) -> Value {
    request(id, method, enveloped(VERSION, params))
}

/// The headers a correct client sends with `message` (`Mcp-Name` from `name`), plus `extra`.
fn headers_for<'a>(message: &'a Value, name: Option<&'a str>, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ACCEPT_BOTH,
        JSON_BODY,
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", message["method"].as_str().unwrap()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers.extend_from_slice(extra);
    headers
}

/// POSTs `message` with exactly `headers` on a new connection.
fn post_with(remote: &Remote, headers: &[(&str, &str)], message: &Value) -> Response {
    remote
        .connect()
        .exchange("POST", &remote.path, headers, &serde_json::to_vec(message).unwrap())
}

/// POSTs `message` with the headers a correct client sends, plus `extra`.
fn post(remote: &Remote, message: &Value, name: Option<&str>, extra: &[(&str, &str)]) -> Response {
    post_with(remote, &headers_for(message, name, extra), message)
}

/// The JSON-RPC messages of an SSE body, in order.
fn sse_messages(response: &Response) -> Vec<Value> {
    assert_eq!(
        response.header("content-type"),
        Some("text/event-stream"),
        "{response:?}"
    );
    response
        .text()
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            assert!(block.starts_with("event: message\n"), "{block:?}");
            let data: Vec<&str> = block.lines().filter_map(|line| line.strip_prefix("data: ")).collect();
            serde_json::from_str(&data.join("\n")).unwrap()
        })
        .collect()
}

/// The response message of a 200 answer: the last event of its stream, or its JSON body.
fn answer(response: &Response) -> Value {
    assert_eq!(response.status(), 200, "{}", response.text());
    assert_eq!(
        response.header("mcp-session-id"),
        None,
        "a stateless answer has no session"
    );
    if response.header("content-type") == Some("application/json") {
        return response.json();
    }
    sse_messages(response).pop().expect("a response event")
}

/// The result of a 200 answer to request `id`.
fn result(response: &Response, id: i64) -> Value {
    let message = answer(response);
    assert_eq!(message["id"], id, "{message}");
    assert!(message.get("error").is_none(), "{message}");
    message["result"].clone()
}

/// The error of an answer with `status` to request `id` (a JSON body).
fn error(response: &Response, status: u16, id: Option<i64>) -> Value {
    assert_eq!(
        (response.status(), response.header("content-type")),
        (status, Some("application/json")),
        "{}",
        response.text()
    );
    let message = response.json();
    assert_eq!(message["id"], id.map_or(Value::Null, Value::from), "{message}");
    message["error"].clone()
}

/// -32020 with a message naming `what`.
fn assert_mismatch(response: &Response, id: i64, what: &[&str]) {
    let error = error(response, 400, Some(id));
    assert_eq!(error["code"], -32020, "{error}");
    let message = error["message"].as_str().unwrap();
    for what in what {
        assert!(message.contains(what), "{message:?} does not name {what:?}");
    }
}

fn base64_header(text: &str) -> String {
    format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(text))
}

#[test]
fn a_dual_server_answers_a_stateless_discover_without_a_session() {
    let remote = Remote::start("http", &[]);
    let discover = modern(1, "server/discover", json!({}));
    let response = post(&remote, &discover, None, &[]);
    let events = sse_messages(&response);
    assert_eq!(events.len(), 1, "{events:?}");
    let discovered = result(&response, 1);
    assert_eq!(discovered["resultType"], "complete");
    assert_eq!(discovered["supportedVersions"], json!([VERSION]));
    assert_eq!(discovered["capabilities"]["tools"], json!({"listChanged": true}));
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "plexus-testserver"
    );
    // A session id sent is ignored.
    let response = post(&remote, &discover, None, &[("Mcp-Session-Id", "no-such-session")]);
    assert_eq!(result(&response, 1)["resultType"], "complete");

    let json = Remote::start("http", &["--json-response"]);
    let response = post(&json, &discover, None, &[]);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(result(&response, 1)["supportedVersions"], json!([VERSION]));
}

#[test]
fn tools_are_listed_and_called_with_their_headers() {
    let remote = Remote::start("http", &["--header-tools"]);
    let tools = result(&post(&remote, &modern(1, "tools/list", json!({})), None, &[]), 1);
    assert_eq!(
        (tools["resultType"].as_str(), tools["ttlMs"].as_u64()),
        (Some("complete"), Some(0))
    );
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 22, "{names:?}");
    assert_eq!(
        names[20..],
        ["headers_echo", "bad_header_tool"],
        "the invalid tool is listed too"
    );

    let sum = modern(2, "tools/call", json!({"name": "add", "arguments": {"a": 2, "b": 3}}));
    let sum = result(&post(&remote, &sum, Some("add"), &[]), 2);
    assert_eq!(
        (sum["resultType"].as_str(), &sum["structuredContent"]),
        (Some("complete"), &json!({"sum": 5}))
    );

    let call = modern(
        3,
        "tools/call",
        json!({"name": "headers_echo", "arguments": {"region": "us-west1", "priority": 3, "verbose": null, "query": "q"}}),
    );
    let extra = [
        ("Mcp-Param-Region", "us-west1"),
        ("Mcp-Param-Priority", "3"),
        ("Mcp-Session-Id", "ignored"),
    ];
    let echoed = result(&post(&remote, &call, Some("headers_echo"), &extra), 3);
    let echoed: Value = serde_json::from_str(echoed["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        echoed,
        json!({
            "mcp-protocol-version": VERSION,
            "mcp-method": "tools/call",
            "mcp-name": "headers_echo",
            "mcp-param-region": "us-west1",
            "mcp-param-priority": "3",
            "mcp-session-id": "ignored",
        })
    );
    // Values that are not header-safe travel Base64-encoded, compared once decoded.
    let greeting = base64_header("Hello, 世界");
    let call = modern(
        4,
        "tools/call",
        json!({"name": "headers_echo", "arguments": {"region": "Hello, 世界", "verbose": false}}),
    );
    let extra = [("Mcp-Param-Region", greeting.as_str()), ("mcp-param-verbose", "false")];
    let echoed = result(&post(&remote, &call, Some("headers_echo"), &extra), 4);
    assert!(
        echoed["content"][0]["text"].as_str().unwrap().contains(&greeting),
        "{echoed}"
    );
}

#[test]
fn headers_that_disagree_with_the_body_get_400_and_32020() {
    let remote = Remote::start("http", &["--header-tools", "--tool-named", "héllo tool"]);
    // MCP-Protocol-Version and the envelope's version differ.
    let other_meta = request(1, "tools/list", enveloped("2025-11-25", json!({})));
    assert_mismatch(
        &post(&remote, &other_meta, None, &[]),
        1,
        &["\"2026-07-28\"", "\"2025-11-25\""],
    );
    // Mcp-Method missing, or not the body's method.
    let list = modern(2, "tools/list", json!({}));
    let without_method = [ACCEPT_BOTH, JSON_BODY, ("MCP-Protocol-Version", VERSION)];
    assert_mismatch(
        &post_with(&remote, &without_method, &list),
        2,
        &["Mcp-Method is missing"],
    );
    let wrong_method = [
        ACCEPT_BOTH,
        JSON_BODY,
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", "prompts/list"),
    ];
    assert_mismatch(
        &post_with(&remote, &wrong_method, &list),
        2,
        &["\"prompts/list\"", "\"tools/list\""],
    );
    // Mcp-Name missing or wrong; Base64 accepted.
    let echo = modern(3, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}));
    assert_mismatch(&post(&remote, &echo, None, &[]), 3, &["Mcp-Name is missing"]);
    assert_mismatch(&post(&remote, &echo, Some("add"), &[]), 3, &["\"add\"", "\"echo\""]);
    let encoded = base64_header("echo");
    assert_eq!(
        result(&post(&remote, &echo, Some(&encoded), &[]), 3)["content"][0]["text"],
        "hi"
    );
    let odd = modern(4, "tools/call", json!({"name": "héllo tool", "arguments": {}}));
    let encoded = base64_header("héllo tool");
    assert_eq!(
        result(&post(&remote, &odd, Some(&encoded), &[]), 4)["resultType"],
        "complete"
    );
    let read = modern(5, "resources/read", json!({"uri": "test://static/hello.txt"}));
    assert_mismatch(
        &post(&remote, &read, Some("test://static/other"), &[]),
        5,
        &["params.uri"],
    );
    assert_eq!(
        result(&post(&remote, &read, Some("test://static/hello.txt"), &[]), 5)["contents"][0]["text"],
        "Hello from plexus-testserver!\n"
    );
    let prompt = modern(6, "prompts/get", json!({"name": "simple"}));
    assert_mismatch(&post(&remote, &prompt, Some("greeting"), &[]), 6, &["params.name"]);

    // Mcp-Param-*: wrong, missing, sent for a null or absent argument, or for no annotation.
    let call = |arguments: Value| modern(7, "tools/call", json!({"name": "headers_echo", "arguments": arguments}));
    let post_call =
        |arguments: Value, extra: &[(&str, &str)]| post(&remote, &call(arguments), Some("headers_echo"), extra);
    let region = json!({"region": "eu"});
    assert_mismatch(
        &post_call(region.clone(), &[("Mcp-Param-Region", "us")]),
        7,
        &["Mcp-Param-Region", "\"us\"", "\"eu\""],
    );
    assert_mismatch(&post_call(region.clone(), &[]), 7, &["Mcp-Param-Region is missing"]);
    assert_mismatch(
        &post_call(json!({"region": null}), &[("Mcp-Param-Region", "null")]),
        7,
        &["Mcp-Param-Region", "absent or null"],
    );
    assert_mismatch(
        &post_call(json!({}), &[("Mcp-Param-Priority", "1")]),
        7,
        &["Mcp-Param-Priority", "absent or null"],
    );
    assert_mismatch(
        &post_call(json!({"query": "x"}), &[("Mcp-Param-Query", "x")]),
        7,
        &["mcp-param-query", "no parameter annotated"],
    );
    assert_mismatch(
        &post_call(json!({"priority": 5}), &[("Mcp-Param-Priority", "=?base64?NQ?=")]),
        7,
        &["does not decode"],
    );
    assert_eq!(
        result(&post_call(region, &[("Mcp-Param-Region", "eu")]), 7)["resultType"],
        "complete"
    );
}

#[test]
fn versions_methods_and_verbs_the_stateless_era_lacks_are_refused() {
    let remote = Remote::start("http", &[]);
    let list = request(1, "tools/list", enveloped("2026-01-01", json!({})));
    let headers = [
        ACCEPT_BOTH,
        JSON_BODY,
        ("MCP-Protocol-Version", "2026-01-01"),
        ("Mcp-Method", "tools/list"),
    ];
    let refused = error(&post_with(&remote, &headers, &list), 400, Some(1));
    assert_eq!(refused["code"], -32022);
    assert_eq!(
        refused["data"],
        json!({"supported": [VERSION], "requested": "2026-01-01"})
    );

    let unknown = error(
        &post(&remote, &modern(2, "no/such", json!({})), None, &[]),
        404,
        Some(2),
    );
    assert_eq!(unknown["code"], -32601);
    let ping = error(&post(&remote, &modern(3, "ping", json!({})), None, &[]), 404, Some(3));
    assert_eq!(ping["code"], -32601);
    // Without the envelope: -32602.
    let bare = request(4, "tools/list", json!({}));
    assert_eq!(error(&post(&remote, &bare, None, &[]), 400, Some(4))["code"], -32602);
    // A tool's JSON-RPC error is not a request error: 200.
    let fail = modern(5, "tools/call", json!({"name": "fail"}));
    let response = post(&remote, &fail, Some("fail"), &[]);
    assert_eq!(
        (response.status(), response.json()["error"]["code"].as_i64()),
        (200, Some(-32603))
    );

    for verb in ["GET", "DELETE"] {
        let response = remote.connect().exchange(
            verb,
            &remote.path,
            &[("Accept", "text/event-stream"), ("MCP-Protocol-Version", VERSION)],
            b"",
        );
        assert_eq!(
            (response.status(), response.header("allow")),
            (405, Some("POST")),
            "{verb}"
        );
    }
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let response = post(&remote, &cancelled, None, &[]);
    assert_eq!((response.status(), response.body.len()), (202, 0));

    // The session era still works on the same server.
    let session = Session::start(&remote);
    let tools = session.call(&request(9, "tools/list", json!({})));
    assert_eq!(tools["result"].get("resultType"), None, "{tools}");
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 20);
}

#[test]
fn a_stateless_stream_carries_progress_then_the_result() {
    let remote = Remote::start("http", &[]);
    let mut params = json!({"name": "slow", "arguments": {"ms": 30, "steps": 3}});
    let slow = {
        let mut message = modern(1, "tools/call", params.take());
        message["params"]["_meta"]["progressToken"] = json!("p");
        message
    };
    let response = post(&remote, &slow, Some("slow"), &[]);
    assert_eq!(response.status(), 200);
    let events = sse_messages(&response);
    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{events:?}");
    assert_eq!(progress[0]["params"]["progressToken"], "p");
    let last = events.last().unwrap();
    assert_eq!(
        (last["id"].as_i64(), last["result"]["resultType"].as_str()),
        (Some(1), Some("complete"))
    );
}

#[test]
fn elicitation_is_a_multi_round_trip_over_http() {
    let remote = Remote::start("http", &[]);
    let ask = modern(
        1,
        "tools/call",
        json!({"name": "elicit", "arguments": {"message": "Who are you?"}}),
    );
    let asked = result(&post(&remote, &ask, Some("elicit"), &[]), 1);
    assert_eq!(asked["resultType"], "input_required");
    assert_eq!(asked["inputRequests"]["input"]["method"], "elicitation/create");
    assert_eq!(asked["inputRequests"]["input"]["params"]["message"], "Who are you?");
    let state = asked["requestState"].as_str().unwrap().to_owned();

    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let retry = modern(
        2,
        "tools/call",
        json!({"name": "elicit", "arguments": {"message": "Who are you?"}, "inputResponses": {"input": answer}, "requestState": state}),
    );
    let done = result(&post(&remote, &retry, Some("elicit"), &[]), 2);
    assert_eq!(done["resultType"], "complete");
    let text: Value = serde_json::from_str(done["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, answer);
    // The state is used up: the same retry again is refused.
    let refused = error(&post(&remote, &retry, Some("elicit"), &[]), 400, Some(2));
    assert_eq!(refused["code"], -32602);
}

#[test]
fn a_modern_only_server_refuses_the_session_era_and_can_refuse_the_first_request() {
    let remote = Remote::start("http", &["--era", "modern"]);
    let init = serde_json::to_vec(&initialize_request(1, json!({}))).unwrap();
    let response = remote
        .connect()
        .exchange("POST", &remote.path, &[ACCEPT_BOTH, JSON_BODY], &init);
    let refused = error(&response, 400, Some(1));
    assert_eq!(refused["code"], -32022);
    assert_eq!(
        refused["data"],
        json!({"supported": [VERSION], "requested": "2025-11-25"})
    );
    let list = modern(2, "tools/list", json!({}));
    let refused = error(&post_with(&remote, &[ACCEPT_BOTH, JSON_BODY], &list), 400, Some(2));
    assert_eq!(refused["data"], json!({"supported": [VERSION], "requested": ""}));
    assert_eq!(result(&post(&remote, &list, None, &[]), 2)["resultType"], "complete");

    let remote = Remote::start("http", &["--reject-first-modern-request"]);
    let discover = modern(3, "server/discover", json!({}));
    let refused = error(&post(&remote, &discover, None, &[]), 400, Some(3));
    assert_eq!(
        (refused["code"].as_i64(), &refused["data"]),
        (Some(-32022), &json!({"supported": [VERSION], "requested": VERSION}))
    );
    assert_eq!(
        result(&post(&remote, &discover, None, &[]), 3)["resultType"],
        "complete"
    );
}

/// POSTs a stateless `server/discover` on a raw socket that gives up reading after `wait`: what
/// came back (`Ok(0)` when the server closed the connection).
fn probe_raw(remote: &Remote, wait: Duration) -> (std::io::Result<usize>, Vec<u8>) {
    let body = serde_json::to_vec(&modern(1, "server/discover", json!({}))).unwrap();
    let mut stream = TcpStream::connect(remote.addr).unwrap();
    stream.set_read_timeout(Some(wait)).unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: {VERSION}\r\nMcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n",
        remote.path,
        remote.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body).unwrap();
    let mut buf = vec![0u8; 4096];
    let read = stream.read(&mut buf);
    buf.truncate(*read.as_ref().unwrap_or(&0));
    (read, buf)
}

#[test]
fn a_legacy_only_server_answers_the_stateless_probe_as_asked() {
    let discover = modern(1, "server/discover", json!({}));
    let remote = Remote::start("http", &["--era", "legacy"]);
    let not_found = error(&post(&remote, &discover, None, &[]), 200, Some(1));
    assert_eq!(not_found["code"], -32601);
    // Other stateless requests take the session path: no session id, 400.
    let list = post(&remote, &modern(2, "tools/list", json!({})), None, &[]);
    assert_eq!(list.status(), 400);
    assert_eq!(
        list.json()["error"]["message"],
        "Bad Request: the Mcp-Session-Id header is required after initialize"
    );
    let session = Session::start(&remote);
    assert_eq!(
        session.call(&request(3, "tools/list", json!({})))["result"]["tools"]
            .as_array()
            .unwrap()
            .len(),
        20
    );
    // There, a version of no era is the session path's refusal.
    let mut headers = session.headers();
    headers[3] = ("MCP-Protocol-Version", "1999-01-01");
    let refused = error(&post_with(&remote, &headers, &request(4, "ping", json!({}))), 400, None);
    assert_eq!(
        refused,
        json!({"code": -32600, "message": "Bad Request: unsupported MCP-Protocol-Version \"1999-01-01\" (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"})
    );

    let remote = Remote::start("http", &["--era", "legacy", "--probe-answer", "invalid-params"]);
    assert_eq!(
        error(&post(&remote, &discover, None, &[]), 400, Some(1))["code"],
        -32602
    );

    let remote = Remote::start("http", &["--era", "legacy", "--probe-answer", "empty400"]);
    let response = post(&remote, &discover, None, &[]);
    assert_eq!((response.status(), response.body.len()), (400, 0));

    let remote = Remote::start("http", &["--era", "legacy", "--probe-answer", "silence"]);
    let (read, bytes) = probe_raw(&remote, Duration::from_millis(500));
    let kind = read.expect_err("no answer").kind();
    assert!(
        matches!(kind, std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        "{kind:?}: {bytes:?}"
    );
    Session::start(&remote);

    let mut remote = Remote::start("http", &["--era", "legacy", "--probe-answer", "exit"]);
    let (read, bytes) = probe_raw(&remote, common::HANG_GUARD);
    assert!(matches!(read, Ok(0) | Err(_)) && bytes.is_empty(), "{read:?} {bytes:?}");
    Session::start(&remote);
    assert!(remote.try_status().is_none(), "the process lives on");
}

#[test]
fn the_event_log_records_what_a_stateless_client_sent() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let remote = Remote::start("http", &["--header-tools", "--event-log", log.to_str().unwrap()]);
    let call = modern(
        1,
        "tools/call",
        json!({"name": "headers_echo", "arguments": {"region": "eu"}}),
    );
    post(
        &remote,
        &call,
        Some("headers_echo"),
        &[("Mcp-Param-Region", "eu"), ("Mcp-Session-Id", "s")],
    );
    let all = wait_for_event(&log, |e| e["event"] == "modern-request");
    let recorded = all.iter().find(|e| e["event"] == "modern-request").unwrap();
    assert_eq!(
        recorded,
        &json!({
            "event": "modern-request",
            "http_method": "POST",
            "method": "tools/call",
            "id": 1,
            "headers": {
                "mcp-protocol-version": VERSION,
                "mcp-method": "tools/call",
                "mcp-name": "headers_echo",
                "mcp-param-region": "eu",
                "mcp-session-id": "s",
            },
        })
    );
    remote
        .connect()
        .exchange("GET", &remote.path, &[("MCP-Protocol-Version", VERSION)], b"");
    let all = wait_for_event(&log, |e| e["event"] == "modern-request" && e["http_method"] == "GET");
    let get = all.iter().find(|e| e["http_method"] == "GET").unwrap();
    assert_eq!(
        get,
        &json!({"event": "modern-request", "http_method": "GET", "method": null, "id": null, "headers": {"mcp-protocol-version": VERSION}})
    );
}

#[test]
fn a_stateless_call_that_waits_streams_at_once_and_a_crash_follows_its_answer() {
    let mut remote = Remote::start("http", &["--crash-after", "1"]);
    // A call that never answers: the stream opens at once and stays open until the client goes.
    let hang = modern(1, "tools/call", json!({"name": "hang"}));
    let mut conn = remote.connect();
    conn.send(
        "POST",
        &remote.path,
        &headers_for(&hang, Some("hang"), &[]),
        &serde_json::to_vec(&hang).unwrap(),
    );
    let head = conn.head();
    assert_eq!(
        (head.status, head.header("content-type")),
        (200, Some("text/event-stream"))
    );
    conn.close();
    // `--crash-after 1`: the first answered call is read in full, then the process exits.
    let add = modern(2, "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 1}}));
    let sum = result(&post(&remote, &add, Some("add"), &[]), 2);
    assert_eq!(sum["structuredContent"], json!({"sum": 2}));
    assert_eq!(remote.wait().code(), Some(1));
}
