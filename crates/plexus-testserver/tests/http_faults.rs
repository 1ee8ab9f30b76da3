//! `plexus-testserver http` fault switches, each observed on the wire: failing statuses, resets,
//! session expiry, dropped and resumed streams, `retry:`, slow headers, oversize events, required
//! headers, refused initialize (and the legacy fallback at the same URL), crashes.

mod common;
mod wire;

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wire::{ACCEPT_BOTH, Event, JSON_BODY, Remote, Session, initialize_request, post, request, tool_call};

fn jsonrpc_error(code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
}

fn init_body() -> Vec<u8> {
    serde_json::to_vec(&initialize_request(1, json!({}))).unwrap()
}

#[test]
fn fail_status_answers_every_post_with_that_status() {
    let remote = Remote::start("http", &["--fail-status", "503"]);
    for n in 1..=2 {
        let response = remote
            .connect()
            .exchange("POST", "/mcp", &[ACCEPT_BOTH, JSON_BODY], &init_body());
        assert_eq!(response.status(), 503);
        assert_eq!(response.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(
            response.text(),
            format!("plexus-testserver: failing request {n} with status 503 as asked (--fail-status, --fail-after)\n")
        );
    }
}

#[test]
fn fail_after_serves_the_first_posts_then_fails() {
    let remote = Remote::start("http", &["--fail-after", "2"]);
    let session = Session::start(&remote);
    let response = session.post(&request(2, "ping", json!({})));
    assert_eq!(
        (response.status(), response.text()),
        (
            500,
            "plexus-testserver: failing request 3 with status 500 as asked (--fail-status, --fail-after)\n".to_owned()
        )
    );
    assert_eq!(session.post(&request(3, "ping", json!({}))).status(), 500);

    let remote = Remote::start(
        "http",
        &["--fail-after", "2", "--fail-status", "502", "--fault-times", "1"],
    );
    let session = Session::start(&remote);
    assert_eq!(session.post(&request(2, "ping", json!({}))).status(), 502);
    assert_eq!(session.call(&request(3, "ping", json!({})))["result"], json!({}));
}

#[test]
fn reset_after_drops_the_connection_with_a_reset() {
    let remote = Remote::start("http", &["--reset-after", "2", "--fault-times", "1"]);
    let session = Session::start(&remote);
    let mut conn = remote.connect();
    conn.send(
        "POST",
        "/mcp",
        &session.headers(),
        &serde_json::to_vec(&request(2, "ping", json!({}))).unwrap(),
    );
    assert_eq!(conn.read_error().kind(), ErrorKind::ConnectionReset);
    // Only one request was to be hit: the session goes on.
    assert_eq!(session.call(&request(3, "ping", json!({})))["result"], json!({}));
}

#[test]
fn an_expired_session_answers_404_and_ends_its_streams() {
    let remote = Remote::start("http", &["--expire-session-after", "3"]);
    let session = Session::start(&remote);
    // Request 2 runs while request 4 finds the session expired.
    let (mut conn, head) = session.open(&tool_call(2, "slow", json!({"ms": 600_000})));
    let mut slow = conn.events(&head);
    assert_eq!(slow.expect().id.as_deref(), Some("2-0"));
    assert_eq!(session.call(&request(3, "ping", json!({})))["result"], json!({}));
    let response = session.post(&request(4, "ping", json!({})));
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.json(),
        jsonrpc_error(-32001, &format!("Session not found: {}", session.id))
    );
    assert_eq!(slow.next_event(), None, "the call in flight ends without a response");
    let (_, head) = session.get(&[]);
    assert_eq!(head.status, 404);
    // A new session works, for three requests again.
    let again = Session::start(&remote);
    assert_ne!(again.id, session.id);
    assert_eq!(again.call(&request(2, "ping", json!({})))["result"], json!({}));
}

#[test]
fn a_dropped_stream_resumes_from_the_last_event_id() {
    let remote = Remote::start("http", &["--drop-sse-after", "2"]);
    let session = Session::start(&remote);
    let call = request(
        5,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 30, "steps": 3}, "_meta": {"progressToken": 1}}),
    );
    let first = session.events_of(&call);
    let ids: Vec<_> = first.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(ids, ["2-0", "2-1"]);
    assert_eq!(first[1].json()["params"]["progress"], 1);
    let (mut conn, head) = session.get(&[("Last-Event-ID", "2-1")]);
    assert_eq!(head.status, 200);
    let rest = conn.events(&head).rest();
    let ids: Vec<_> = rest.iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(ids, ["2-2", "2-3", "2-4"]);
    assert_eq!(rest[2].json()["result"]["content"][0]["text"], "slow: done after 30 ms");

    // A response that is ready at once is held back as well.
    let echo = session.events_of(&tool_call(6, "echo", json!({"text": "hi"})));
    assert_eq!(echo.len(), 1, "{echo:?}");
    let (mut conn, head) = session.get(&[("Last-Event-ID", "3-0")]);
    let rest = conn.events(&head).rest();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].json()["result"]["content"][0]["text"], "hi");
}

#[test]
fn without_resumption_the_dropped_events_are_lost() {
    let remote = Remote::start("http", &["--drop-sse-after", "1", "--no-resume"]);
    let session = Session::start(&remote);
    let events = session.events_of(&tool_call(2, "echo", json!({"text": "lost"})));
    assert_eq!(events.len(), 1);
    let (mut conn, head) = session.get(&[("Last-Event-ID", "2-0")]);
    assert_eq!(head.status, 400);
    assert_eq!(
        serde_json::from_slice::<Value>(&conn.body(&head)).unwrap(),
        jsonrpc_error(
            -32600,
            "Bad Request: this server does not resume streams (--no-resume); Last-Event-ID \"2-0\" refused"
        )
    );
}

#[test]
fn sse_retry_closes_after_the_priming_event_and_the_response_comes_on_resume() {
    let remote = Remote::start("http", &["--sse-retry-ms", "500"]);
    let session = Session::start(&remote);
    let events = session.events_of(&tool_call(2, "echo", json!({"text": "later"})));
    assert_eq!(
        events,
        [Event {
            id: Some("2-0".into()),
            retry: Some(500),
            ..Event::default()
        }]
    );
    let (mut conn, head) = session.get(&[("Last-Event-ID", "2-0")]);
    let rest = conn.events(&head).rest();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].id.as_deref(), Some("2-1"));
    assert_eq!(rest[0].json()["result"]["content"][0]["text"], "later");
    // The standalone stream's priming event carries the retry too, and stays open.
    let (mut conn, head) = session.get(&[]);
    assert_eq!(conn.events(&head).expect().retry, Some(500));
}

#[test]
fn slow_headers_delay_every_response() {
    let remote = Remote::start("http", &["--slow-headers-ms", "300"]);
    let mut conn = remote.connect();
    let started = Instant::now();
    let head = post(&mut conn, "/mcp", None, &initialize_request(1, json!({})));
    // A lower bound only: the server cannot answer sooner than it waits.
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(head.status, 200);
}

#[test]
fn an_oversize_event_comes_first_on_request_streams() {
    let remote = Remote::start("http", &["--oversize-event", "100000"]);
    let session = Session::start(&remote);
    let events = session.events_of(&tool_call(2, "echo", json!({"text": "after"})));
    assert_eq!(events.len(), 3);
    assert_eq!(events[1].data.len(), 100_000);
    assert_eq!(events[1].json()["method"], "notifications/message");
    assert_eq!(events[2].json()["result"]["content"][0]["text"], "after");
}

#[test]
fn a_required_header_is_checked_on_every_request() {
    let remote = Remote::start("http", &["--require-header", "Authorization: Bearer s3cret"]);
    let unauthorized = "plexus-testserver: the request lacks the header \"authorization\" with the required value (--require-header)\n";
    for headers in [
        vec![ACCEPT_BOTH, JSON_BODY],
        vec![ACCEPT_BOTH, JSON_BODY, ("Authorization", "Bearer wrong")],
    ] {
        let response = remote.connect().exchange("POST", "/mcp", &headers, &init_body());
        assert_eq!(response.status(), 401);
        assert_eq!(
            response.header("www-authenticate"),
            Some("Bearer realm=\"plexus-testserver\"")
        );
        assert_eq!(response.text(), unauthorized);
    }
    let response = remote
        .connect()
        .exchange("GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    assert_eq!(response.status(), 401);
    let mut conn = remote.connect();
    conn.send(
        "POST",
        "/mcp",
        &[ACCEPT_BOTH, JSON_BODY, ("Authorization", "Bearer s3cret")],
        &init_body(),
    );
    assert_eq!(conn.head().status, 200);
}

#[test]
fn a_refused_initialize_gets_the_status_asked_for() {
    let remote = Remote::start("http", &["--http-status-on-initialize", "404"]);
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[ACCEPT_BOTH, JSON_BODY], &init_body());
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.text(),
        "plexus-testserver: this server does not take initialize by POST here (--http-status-on-initialize, --legacy-sse-at-same-url)\n"
    );
}

#[test]
fn the_legacy_fallback_works_at_the_same_url() {
    let remote = Remote::start("http", &["--legacy-sse-at-same-url"]);
    let response = remote
        .connect()
        .exchange("POST", "/mcp", &[ACCEPT_BOTH, JSON_BODY], &init_body());
    assert_eq!((response.status(), response.header("allow")), (405, Some("GET")));
    let mut stream = remote.connect();
    stream.send("GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    let head = stream.head();
    assert_eq!(head.status, 200);
    let mut events = stream.events(&head);
    let endpoint = events.expect();
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(endpoint.data.starts_with("/messages?sessionId="), "{endpoint:?}");
    let response = remote
        .connect()
        .exchange("POST", &endpoint.data, &[JSON_BODY], &init_body());
    assert_eq!(response.status(), 202);
    let message = events.expect();
    assert_eq!(message.event.as_deref(), Some("message"));
    assert_eq!(message.json()["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn once_a_crash_is_due_no_request_is_answered() {
    let mut remote = Remote::start("http", &["--crash-after", "1"]);
    let session = Session::start(&remote);
    // Opened first, so that the request below reaches the server before it exits.
    let mut conn = remote.connect();
    let response = session.call(&tool_call(2, "echo", json!({"text": "last words"})));
    assert_eq!(response["result"]["content"][0]["text"], "last words");
    // The process lives on while that answer drains; a request sent meanwhile gets nothing, as
    // from a server that died with its answer.
    conn.send(
        "POST",
        "/mcp",
        &session.headers(),
        &serde_json::to_vec(&request(3, "ping", json!({}))).unwrap(),
    );
    assert!(conn.ended_unanswered(), "a crashing server answered");
    assert_eq!(remote.wait().code(), Some(1));
}

#[test]
fn crash_after_answers_then_exits() {
    let mut remote = Remote::start("http", &["--crash-after", "1"]);
    let session = Session::start(&remote);
    let response = session.call(&tool_call(2, "echo", json!({"text": "last words"})));
    assert_eq!(response["result"]["content"][0]["text"], "last words");
    assert_eq!(remote.wait().code(), Some(1));
    assert_eq!(
        remote.stderr_text(),
        "plexus-testserver: crashing after 1 tool calls as asked (--crash-after)\n"
    );
}
