//! `plexus-testserver sse`: the legacy HTTP+SSE transport (2024-11-05) on the wire — the endpoint
//! event, POSTed messages answered 202 with everything arriving as `message` events, and its
//! faults.

mod common;
mod wire;

use common::{wait_for_event, wait_until};
use serde_json::{Value, json};
use wire::{Conn, Events, JSON_BODY, Remote, initialize_request, notification, request, tool_call};

/// A legacy session: the open event stream and the POST endpoint it named.
struct Legacy {
    stream: Conn,
    head: wire::Head,
    endpoint: String,
}

impl Legacy {
    fn open(remote: &Remote) -> Legacy {
        let mut stream = remote.connect();
        stream.send("GET", &remote.path, &[("Accept", "text/event-stream")], b"");
        let head = stream.head();
        assert_eq!(
            (head.status, head.header("content-type")),
            (200, Some("text/event-stream"))
        );
        let mut legacy = Legacy {
            stream,
            head,
            endpoint: String::new(),
        };
        let endpoint = legacy.events().expect();
        assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
        assert_eq!(endpoint.id, None, "legacy events have no ids");
        legacy.endpoint = endpoint.data;
        legacy
    }

    fn events(&mut self) -> Events<'_> {
        self.stream.events(&self.head)
    }

    fn session_id(&self) -> &str {
        self.endpoint.rsplit_once("sessionId=").unwrap().1
    }

    /// POSTs to the endpoint (its path and query, when it is absolute).
    fn post(&self, remote: &Remote, message: &Value) -> wire::Response {
        let target = self
            .endpoint
            .find("/messages")
            .map_or(self.endpoint.as_str(), |at| &self.endpoint[at..]);
        remote
            .connect()
            .exchange("POST", target, &[JSON_BODY], &serde_json::to_vec(message).unwrap())
    }

    fn next_message(&mut self) -> Value {
        let event = self.events().expect();
        assert_eq!(event.event.as_deref(), Some("message"), "{event:?}");
        event.json()
    }
}

#[test]
fn the_stream_names_the_endpoint_and_carries_every_answer() {
    let remote = Remote::start("sse", &[]);
    assert_eq!(remote.url, format!("http://127.0.0.1:{}/sse", remote.addr.port()));
    let mut legacy = Legacy::open(&remote);
    let id = legacy.session_id().to_owned();
    assert_eq!(legacy.endpoint, format!("/messages?sessionId={id}"));
    assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    let accepted = legacy.post(&remote, &initialize_request(1, json!({})));
    assert_eq!((accepted.status(), accepted.body.len()), (202, 0));
    let init = legacy.next_message();
    assert_eq!(
        (init["id"].clone(), init["result"]["protocolVersion"].clone()),
        (json!(1), json!("2025-11-25"))
    );
    assert_eq!(
        legacy
            .post(&remote, &notification("notifications/initialized", json!({})))
            .status(),
        202
    );
    legacy.post(&remote, &tool_call(2, "trigger-list-changed", json!({})));
    assert_eq!(legacy.next_message()["method"], "notifications/tools/list_changed");
    assert_eq!(legacy.next_message()["id"], 2);
    legacy.post(&remote, &tool_call(3, "echo", json!({"text": "hi"})));
    assert_eq!(legacy.next_message()["result"]["content"][0]["text"], "hi");
}

#[test]
fn a_post_to_the_stream_url_is_not_allowed_so_that_clients_fall_back() {
    let remote = Remote::start("sse", &[]);
    let body = serde_json::to_vec(&initialize_request(1, json!({}))).unwrap();
    let response = remote.connect().exchange(
        "POST",
        "/sse",
        &[("Accept", "application/json, text/event-stream"), JSON_BODY],
        &body,
    );
    assert_eq!((response.status(), response.header("allow")), (405, Some("GET")));
    assert_eq!(
        response.text(),
        "plexus-testserver: this is a legacy HTTP+SSE server: GET this URL for the event stream, then POST to its endpoint\n"
    );
}

#[test]
fn posts_need_a_known_session() {
    let remote = Remote::start("sse", &[]);
    let ping = serde_json::to_vec(&request(1, "ping", json!({}))).unwrap();
    let response = remote.connect().exchange("POST", "/messages", &[JSON_BODY], &ping);
    assert_eq!(
        (response.status(), response.text()),
        (
            400,
            "plexus-testserver: the sessionId query parameter is required\n".to_owned()
        )
    );
    let response = remote
        .connect()
        .exchange("POST", "/messages?sessionId=nope", &[JSON_BODY], &ping);
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.json(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "Session not found: nope"}})
    );
}

#[test]
fn the_endpoint_can_be_absolute_or_name_another_origin() {
    let remote = Remote::start("sse", &["--endpoint-absolute"]);
    let mut legacy = Legacy::open(&remote);
    let id = legacy.session_id().to_owned();
    assert_eq!(
        legacy.endpoint,
        format!("http://{}/messages?sessionId={id}", remote.addr)
    );
    assert_eq!(legacy.post(&remote, &initialize_request(1, json!({}))).status(), 202);
    assert_eq!(legacy.next_message()["id"], 1);

    let remote = Remote::start("sse", &["--endpoint-origin", "http://evil.example:1"]);
    let legacy = Legacy::open(&remote);
    let id = legacy.session_id().to_owned();
    assert_eq!(
        legacy.endpoint,
        format!("http://evil.example:1/messages?sessionId={id}")
    );
}

#[test]
fn closing_the_stream_ends_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let remote = Remote::start("sse", &["--event-log", log.to_str().unwrap()]);
    let legacy = Legacy::open(&remote);
    let id = legacy.session_id().to_owned();
    wait_for_event(&log, |e| {
        *e == json!({"event": "session-start", "session": id, "transport": "sse"})
    });
    let Legacy { stream, .. } = legacy;
    let endpoint = format!("/messages?sessionId={id}");
    stream.close();
    wait_for_event(&log, |e| {
        *e == json!({"event": "session-end", "session": id, "reason": "closed"})
    });
    let ping = serde_json::to_vec(&request(1, "ping", json!({}))).unwrap();
    let response = remote.connect().exchange("POST", &endpoint, &[JSON_BODY], &ping);
    assert_eq!(response.status(), 404);
}

#[test]
fn drop_sse_after_ends_the_stream_and_the_session() {
    let remote = Remote::start("sse", &["--drop-sse-after", "2"]);
    let mut legacy = Legacy::open(&remote);
    legacy.post(&remote, &initialize_request(1, json!({})));
    assert_eq!(legacy.next_message()["id"], 1);
    assert_eq!(legacy.events().next_event(), None, "the stream ends after two events");
    let endpoint = legacy.endpoint.clone();
    wait_until("the dropped session is forgotten", || {
        let ping = serde_json::to_vec(&request(2, "ping", json!({}))).unwrap();
        remote
            .connect()
            .exchange("POST", &endpoint, &[JSON_BODY], &ping)
            .status()
            == 404
    });
}

#[test]
fn an_expired_session_answers_404() {
    let remote = Remote::start("sse", &["--expire-session-after", "1"]);
    let mut legacy = Legacy::open(&remote);
    assert_eq!(legacy.post(&remote, &initialize_request(1, json!({}))).status(), 202);
    assert_eq!(legacy.next_message()["id"], 1);
    let response = legacy.post(&remote, &request(2, "ping", json!({})));
    assert_eq!(response.status(), 404);
    assert_eq!(response.json()["error"]["code"], -32001);
    assert_eq!(legacy.events().next_event(), None, "the expired session's stream ends");
}

#[test]
fn fail_status_hits_the_message_posts() {
    let remote = Remote::start("sse", &["--fail-status", "503"]);
    let legacy = Legacy::open(&remote);
    let response = legacy.post(&remote, &initialize_request(1, json!({})));
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.text(),
        "plexus-testserver: failing request 1 with status 503 as asked (--fail-status, --fail-after)\n"
    );
}
