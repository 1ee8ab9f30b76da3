//! `plexus-testserver http`: Streamable HTTP (2025-11-25) seen on the wire — the URL line,
//! sessions, header checks, SSE and JSON answers, routing, the GET stream, resumption, DELETE and
//! the event log.

mod common;
mod wire;

use std::process::{Command, Stdio};
use std::time::Instant;

use common::{BIN, HANG_GUARD, events, wait_for_event};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use wire::{
    ACCEPT_BOTH, Conn, Event, JSON_BODY, Remote, Session, initialize_request, notification, post, request, tool_call,
};

fn jsonrpc_error(code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
}

fn priming(id: &str) -> Event {
    Event {
        id: Some(id.to_owned()),
        data: String::new(),
        ..Event::default()
    }
}

fn is_hex_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn prints_its_url_and_answers_initialize_with_an_event_stream() {
    let remote = Remote::start("http", &[]);
    assert_eq!(remote.url, format!("http://127.0.0.1:{}/mcp", remote.addr.port()));
    let mut conn = remote.connect();
    let head = post(&mut conn, "/mcp", None, &initialize_request(7, json!({})));
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("cache-control"), Some("no-cache"));
    let session = head.header("mcp-session-id").unwrap().to_owned();
    assert!(is_hex_id(&session), "{session}");
    let events = conn.events(&head).rest();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0], priming("1-0"));
    assert_eq!(
        (events[1].id.as_deref(), events[1].event.as_deref()),
        (Some("1-1"), Some("message"))
    );
    let response = events[1].json();
    assert_eq!(response["id"], 7);
    assert_eq!(response["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(response["result"]["serverInfo"]["name"], "plexus-testserver");
    // The connection is kept alive: the next request goes on the same one.
    let head = post(
        &mut conn,
        "/mcp",
        Some(&session),
        &notification("notifications/initialized", json!({})),
    );
    assert_eq!(
        (head.status, head.header("mcp-session-id")),
        (202, Some(session.as_str()))
    );
    assert_eq!(conn.body(&head), b"");
    let head = post(&mut conn, "/mcp", Some(&session), &request(8, "ping", json!({})));
    let events = conn.events(&head).rest();
    assert_eq!(events[0], priming("2-0"));
    assert_eq!(events[1].json(), json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
}

#[test]
fn a_custom_path_is_served_and_no_other() {
    let remote = Remote::start("http", &["--path", "/custom/mcp"]);
    assert!(remote.url.ends_with("/custom/mcp"), "{}", remote.url);
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[ACCEPT_BOTH, JSON_BODY], b"{}");
    assert_eq!(
        (response.status(), response.text()),
        (404, "plexus-testserver: nothing is served at /mcp\n".to_owned())
    );
    let response = remote.connect().exchange("PUT", "/custom/mcp", &[], b"");
    assert_eq!(response.status(), 405);
    assert_eq!(response.header("allow"), Some("GET, POST, DELETE"));
    let session = Session::start(&remote);
    assert_eq!(session.call(&request(1, "ping", json!({})))["result"], json!({}));
}

#[test]
fn requests_need_accept_content_type_session_and_a_supported_version() {
    let remote = Remote::start("http", &[]);
    let init = serde_json::to_vec(&initialize_request(1, json!({}))).unwrap();
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[("Accept", "application/json"), JSON_BODY], &init);
    assert_eq!(response.status(), 406);
    assert_eq!(
        response.json(),
        jsonrpc_error(
            -32600,
            "Not Acceptable: the Accept header must list both application/json and text/event-stream"
        )
    );
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[ACCEPT_BOTH, ("Content-Type", "text/plain")], &init);
    assert_eq!(response.status(), 415);
    assert_eq!(
        response.json(),
        jsonrpc_error(-32600, "Unsupported Media Type: the body must be application/json")
    );

    let session = Session::start(&remote);
    let ping = serde_json::to_vec(&request(2, "ping", json!({}))).unwrap();
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[ACCEPT_BOTH, JSON_BODY], &ping);
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json(),
        jsonrpc_error(
            -32600,
            "Bad Request: the Mcp-Session-Id header is required after initialize"
        )
    );
    let response = remote.connect().exchange(
        "POST",
        "/mcp",
        &[ACCEPT_BOTH, JSON_BODY, ("Mcp-Session-Id", "nope")],
        &ping,
    );
    assert_eq!(response.status(), 404);
    assert_eq!(response.json(), jsonrpc_error(-32001, "Session not found: nope"));
    let with_version = |version| {
        remote.connect().exchange(
            "POST",
            "/mcp",
            &[
                ACCEPT_BOTH,
                JSON_BODY,
                ("Mcp-Session-Id", &session.id),
                ("MCP-Protocol-Version", version),
            ],
            &ping,
        )
    };
    // A version of no `initialize` era makes the POST a stateless one (as the Python SDK routes
    // it): the session id is ignored, and the version is refused with the structured -32022.
    let response = with_version("1999-01-01");
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json(),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"], "requested": "1999-01-01"}}})
    );
    assert_eq!(with_version("2025-06-18").status(), 200);

    let response = remote
        .connect()
        .exchange("POST", "/mcp", &session.headers(), b"{not json");
    assert_eq!(response.status(), 400);
    assert_eq!(response.json()["error"]["code"], -32700);
    let response = remote.connect().exchange("POST", "/mcp", &session.headers(), b"[]");
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json(),
        jsonrpc_error(
            -32600,
            "the message is a JSON array (a JSON-RPC batch); MCP does not allow batching"
        )
    );
    let response = session.post(&initialize_request(3, json!({})));
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json(),
        jsonrpc_error(
            -32600,
            &format!(
                "Bad Request: initialize starts a new session and must not carry an Mcp-Session-Id (it carried {:?})",
                session.id
            )
        )
    );
}

#[test]
fn json_response_mode_answers_each_request_with_one_body() {
    let remote = Remote::start("http", &["--json-response"]);
    let init = serde_json::to_vec(&initialize_request(1, json!({}))).unwrap();
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[ACCEPT_BOTH, JSON_BODY], &init);
    assert_eq!(response.status(), 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.json()["result"]["protocolVersion"], "2025-11-25");
    let session = Session {
        remote: &remote,
        id: response.header("mcp-session-id").unwrap().to_owned(),
    };
    let response = session.post(&tool_call(2, "slow", json!({"ms": 20, "steps": 2})));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        response.json()["result"]["content"][0]["text"],
        "slow: done after 20 ms"
    );
    // What relates to a request but is not its response goes to the GET stream.
    let response = session.post(&tool_call(3, "log", json!({"level": "info", "message": "hello"})));
    assert_eq!(
        response.json()["result"]["content"][0]["text"],
        "sent notifications/message"
    );
    let (mut conn, head) = session.get(&[]);
    let mut events = conn.events(&head);
    let log = events.expect();
    assert_eq!(log.id.as_deref(), Some("0-0"));
    assert_eq!(log.json()["params"]["data"], "hello");
    assert_eq!(events.expect(), priming("0-1"));
}

#[test]
fn progress_and_the_response_share_the_request_stream() {
    let remote = Remote::start("http", &[]);
    let session = Session::start(&remote);
    let call = request(
        5,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 30, "steps": 3}, "_meta": {"progressToken": "p"}}),
    );
    let events = session.events_of(&call);
    let ids: Vec<_> = events.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(ids, ["2-0", "2-1", "2-2", "2-3", "2-4"]);
    for (step, event) in events[1..4].iter().enumerate() {
        let progress = event.json();
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(progress["params"]["progressToken"], "p");
        assert_eq!(progress["params"]["progress"], step + 1);
    }
    assert_eq!(
        events[4].json()["result"]["content"][0]["text"],
        "slow: done after 30 ms"
    );
}

#[test]
fn server_requests_travel_on_the_request_stream_and_answers_come_by_post() {
    let remote = Remote::start("http", &[]);
    let session = Session::start_with(&remote, json!({"elicitation": {}}));
    let (mut conn, head) = session.open(&tool_call(9, "elicit", json!({"message": "who?"})));
    let mut events = conn.events(&head);
    assert_eq!(events.expect(), priming("2-0"));
    let ask = events.expect().json();
    assert_eq!(
        (ask["method"].as_str(), ask["id"].as_str()),
        (Some("elicitation/create"), Some("s-1"))
    );
    assert_eq!(ask["params"]["message"], "who?");
    let answer = json!({"jsonrpc": "2.0", "id": "s-1", "result": {"action": "accept", "content": {"name": "Ada"}}});
    let accepted = session.post(&answer);
    assert_eq!((accepted.status(), accepted.body.len()), (202, 0));
    let result = events.expect().json();
    assert_eq!(result["id"], 9);
    assert_eq!(
        result["result"]["content"][0]["text"],
        r#"{"action":"accept","content":{"name":"Ada"}}"#
    );
    assert_eq!(events.next_event(), None);
}

#[test]
fn session_notifications_go_to_the_get_stream_and_wait_for_it() {
    let remote = Remote::start("http", &[]);
    let session = Session::start(&remote);
    // Sent before any GET: it waits for one.
    let events = session.events_of(&tool_call(2, "trigger-list-changed", json!({})));
    assert_eq!(events.len(), 2, "only the priming event and the response: {events:?}");
    let (mut conn, head) = session.get(&[]);
    assert_eq!(
        (head.status, head.header("content-type")),
        (200, Some("text/event-stream"))
    );
    let mut stream = conn.events(&head);
    let waiting = stream.expect();
    assert_eq!(waiting.id.as_deref(), Some("0-0"));
    assert_eq!(
        waiting.json(),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    assert_eq!(stream.expect(), priming("0-1"));
    session.call(&tool_call(3, "trigger-list-changed", json!({})));
    let live = stream.expect();
    assert_eq!(live.id.as_deref(), Some("0-2"));
    assert_eq!(live.json()["method"], "notifications/tools/list_changed");
}

#[test]
fn without_a_get_stream_session_notifications_stay_with_their_request() {
    let remote = Remote::start("http", &["--no-get-stream"]);
    let session = Session::start(&remote);
    let (mut conn, head) = session.get(&[]);
    assert_eq!((head.status, head.header("allow")), (405, Some("POST, DELETE")));
    assert_eq!(
        String::from_utf8(conn.body(&head)).unwrap(),
        "plexus-testserver: this server offers no standalone SSE stream (--no-get-stream)\n"
    );
    let events = session.events_of(&tool_call(2, "trigger-list-changed", json!({})));
    let methods: Vec<_> = events[1..].iter().map(|e| e.json()["method"].clone()).collect();
    assert_eq!(methods, [json!("notifications/tools/list_changed"), Value::Null]);
}

#[test]
fn a_get_with_last_event_id_replays_what_followed_on_that_stream() {
    let remote = Remote::start("http", &[]);
    let session = Session::start(&remote);
    let (mut conn, head) = session.get(&[]);
    let mut stream = conn.events(&head);
    assert_eq!(stream.expect(), priming("0-0"));
    session.call(&tool_call(2, "trigger-list-changed", json!({})));
    assert_eq!(stream.expect().id.as_deref(), Some("0-1"));
    drop(conn);
    session.call(&tool_call(3, "trigger-list-changed", json!({})));
    session.call(&tool_call(4, "trigger-list-changed", json!({})));
    let (mut conn, head) = session.get(&[("Last-Event-ID", "0-1")]);
    assert_eq!(head.status, 200);
    let mut resumed = conn.events(&head);
    let ids = [resumed.expect().id, resumed.expect().id];
    assert_eq!(ids, [Some("0-2".to_owned()), Some("0-3".to_owned())]);
    // A finished POST stream replays too, up to its end.
    let (mut conn, head) = session.get(&[("Last-Event-ID", "3-0")]);
    let replayed = conn.events(&head).rest();
    assert_eq!(replayed.len(), 1);
    assert_eq!(replayed[0].json()["id"], 3);

    for (id, why) in [
        (
            "9-0",
            "Bad Request: Last-Event-ID \"9-0\" names no stream of this session",
        ),
        (
            "0-99",
            "Bad Request: Last-Event-ID \"0-99\" names an event not sent yet",
        ),
        (
            "x",
            "Bad Request: Last-Event-ID \"x\" is not an event id of this server",
        ),
    ] {
        let (mut conn, head) = session.get(&[("Last-Event-ID", id)]);
        assert_eq!(head.status, 400);
        assert_eq!(
            serde_json::from_slice::<Value>(&conn.body(&head)).unwrap(),
            jsonrpc_error(-32600, why)
        );
    }
}

#[test]
fn delete_ends_the_session_unless_forbidden() {
    let remote = Remote::start("http", &[]);
    let session = Session::start(&remote);
    let delete = |conn: &mut Conn| conn.exchange("DELETE", "/mcp", &[("Mcp-Session-Id", &session.id)], b"");
    let response = delete(&mut remote.connect());
    assert_eq!((response.status(), response.body.len()), (200, 0));
    let response = session.post(&request(2, "ping", json!({})));
    assert_eq!(response.status(), 404);
    assert_eq!(delete(&mut remote.connect()).status(), 404);
    assert_eq!(remote.connect().exchange("DELETE", "/mcp", &[], b"").status(), 400);

    let remote = Remote::start("http", &["--no-delete"]);
    let session = Session::start(&remote);
    let response = remote
        .connect()
        .exchange("DELETE", "/mcp", &[("Mcp-Session-Id", &session.id)], b"");
    assert_eq!((response.status(), response.header("allow")), (405, Some("GET, POST")));
}

#[test]
fn cancellation_ends_the_request_stream_without_a_response() {
    let remote = Remote::start("http", &[]);
    let session = Session::start(&remote);
    let (mut conn, head) = session.open(&tool_call(4, "slow", json!({"ms": 600_000})));
    let mut events = conn.events(&head);
    assert_eq!(events.expect(), priming("2-0"));
    let accepted = session.post(&notification("notifications/cancelled", json!({"requestId": 4})));
    assert_eq!(accepted.status(), 202);
    assert_eq!(events.next_event(), None);
}

#[test]
fn oversized_bodies_and_foreign_origins_are_refused() {
    let remote = Remote::start("http", &["--max-body-bytes", "1000"]);
    let body = serde_json::to_vec(&tool_call(1, "echo", json!({"text": "x".repeat(2000)}))).unwrap();
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[ACCEPT_BOTH, JSON_BODY], &body);
    assert_eq!(response.status(), 413);
    assert_eq!(
        response.json(),
        jsonrpc_error(
            -32600,
            "Payload Too Large: the request body exceeds the limit of 1000 bytes (--max-body-bytes)"
        )
    );
    let init = serde_json::to_vec(&initialize_request(1, json!({}))).unwrap();
    let response = remote.connect().exchange(
        "POST",
        "/mcp",
        &[ACCEPT_BOTH, JSON_BODY, ("Origin", "http://evil.example")],
        &init,
    );
    assert_eq!(response.status(), 403);
    assert_eq!(
        response.json(),
        jsonrpc_error(
            -32600,
            "Forbidden: the Origin \"http://evil.example\" is not this machine (127.0.0.1, localhost, [::1])"
        )
    );
}

#[test]
fn the_event_log_records_http_requests_and_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let remote = Remote::start("http", &["--event-log", log.to_str().unwrap()]);
    let session = Session::start(&remote);
    let mut headers = session.headers();
    headers.push(("Authorization", "Bearer secret"));
    headers.push(("X-Custom", "yes"));
    let ping = serde_json::to_vec(&request(2, "ping", json!({}))).unwrap();
    assert_eq!(remote.connect().exchange("POST", "/mcp", &headers, &ping).status(), 200);
    let all = wait_for_event(&log, |e| e["event"] == "http" && e["headers"]["x-custom"] == "yes");
    assert_eq!(all[0]["event"], "start");
    assert_eq!(all[1], json!({"event": "listening", "url": remote.url}));
    let ping_event = all.iter().find(|e| e["headers"]["x-custom"] == "yes").unwrap();
    assert_eq!(
        (ping_event["method"].as_str(), ping_event["path"].as_str()),
        (Some("POST"), Some("/mcp"))
    );
    let headers = &ping_event["headers"];
    assert_eq!(headers["mcp-session-id"], session.id);
    assert_eq!(headers["mcp-protocol-version"], "2025-11-25");
    assert_eq!(headers["authorization"], "<redacted>");
    assert!(all.contains(&json!({"event": "session-start", "session": session.id, "transport": "http"})));
    assert!(
        events(&log)
            .iter()
            .any(|e| e["event"] == "request" && e["method"] == "ping" && e["session"] == session.id)
    );
}

#[test]
fn a_taken_port_is_a_clear_start_up_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let mut child = Command::new(BIN)
        .args(["http", "--port", &port])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + HANG_GUARD;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(output.stdout, b"");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!("plexus-testserver: cannot listen on 127.0.0.1:{port}: Address already in use (os error 98)\n")
    );
}

#[test]
fn sigterm_ends_the_server_unless_signals_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let mut remote = Remote::start("http", &["--event-log", log.to_str().unwrap()]);
    kill(Pid::from_raw(remote.pid()), Signal::SIGTERM).unwrap();
    assert_eq!(remote.wait().code(), Some(0));
    let all = events(&log);
    assert_eq!(all[all.len() - 2]["signal"], "SIGTERM");
    assert_eq!(all[all.len() - 1], json!({"event": "exit", "code": 0}));

    let log = dir.path().join("ignoring.jsonl");
    let remote = Remote::start("http", &["--ignore-signals", "--event-log", log.to_str().unwrap()]);
    kill(Pid::from_raw(remote.pid()), Signal::SIGTERM).unwrap();
    wait_for_event(&log, |e| e["event"] == "signal");
    let session = Session::start(&remote);
    assert_eq!(session.call(&request(1, "ping", json!({})))["result"], json!({}));
}
