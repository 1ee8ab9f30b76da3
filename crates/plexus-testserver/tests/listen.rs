//! `subscriptions/listen` in the stateless era, on the real binary: over stdio (raw JSON lines
//! on pipes) and Streamable HTTP (raw HTTP/1.1 on 127.0.0.1). The acknowledgement grants the
//! subset the server honours; changes reach every live subscription that asked for them, with
//! its id; a modern session gets nothing outside a subscription; the client, or the server
//! (`--end-listen-after-ms`, `--cancel-listen-after-ms`), ends one; subscriptions are bounded;
//! the event log tells what happened.
#![allow(clippy::needless_pass_by_value)] // `json!(..)` arguments by value keep the tests readable.

mod common;
mod wire;

use common::Server;
use plexus_testserver::EventLogFile;
use serde_json::{Value, json};
use wire::{ACCEPT_BOTH, Conn, Event, Head, JSON_BODY, Remote, Response, request};

const VERSION: &str = "2026-07-28";
const HELLO: &str = "test://static/hello.txt";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// `params` with the 2026-07-28 envelope in `_meta`.
fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "listen-test", "version": "1"},
    });
    params
}

/// A `subscriptions/listen` request `id` asking for `filter`, as a line's JSON.
fn listen_request(id: Value, filter: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": modern(json!({"notifications": filter}))})
}

/// The notification `method` of subscription `id`, with `params` besides `_meta`.
fn of_subscription(method: &str, id: Value, mut params: Value) -> Value {
    params["_meta"] = json!({SUBSCRIPTION_ID: id});
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// The acknowledgement of subscription `id` granting `granted`.
fn acknowledgement(id: Value, granted: Value) -> Value {
    of_subscription(
        "notifications/subscriptions/acknowledged",
        id,
        json!({"notifications": granted}),
    )
}

/// The listen's graceful end: its response.
fn completion(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id}}})
}

/// The text of a `tools/call` response.
fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {response}"))
}

/// A stdio server on its modern era (its first request is a listen or a modern call).
fn stdio(args: &[&str]) -> Server {
    Server::start(args)
}

/// Calls `name` with `arguments` in the modern era; the response, and the messages before it.
fn modern_call(server: &mut Server, name: &str, arguments: Value) -> (Value, Vec<Value>) {
    server.unsolicited.clear();
    let response = server.call("tools/call", modern(json!({"name": name, "arguments": arguments})));
    (response, std::mem::take(&mut server.unsolicited))
}

/// Sends a listen and returns the next message (its acknowledgement or its error).
fn stdio_listen(server: &mut Server, id: Value, filter: Value) -> Value {
    server.send(&listen_request(id, filter));
    server.recv()
}

#[test]
fn the_acknowledgement_grants_what_was_asked_for_and_is_known() {
    let log = EventLogFile::new("listen-ack");
    let mut server = stdio(&[&log.arg()]);
    let asked = json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": false,
        "resourceSubscriptions": [HELLO, "test://nope"],
    });
    let granted = json!({"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": [HELLO]});
    let ack = stdio_listen(&mut server, json!("listen-1"), asked.clone());
    assert_eq!(ack, acknowledgement(json!("listen-1"), granted.clone()));
    let logged = log.matching(&json!({"event": "listen"}));
    assert_eq!(
        logged,
        [json!({"event": "listen", "id": "listen-1", "asked": asked, "honoured": granted})]
    );

    // `--listen-honours tools`: only the tool list.
    let mut server = stdio(&["--listen-honours", "tools"]);
    let ack = stdio_listen(&mut server, json!(1), asked);
    assert_eq!(ack, acknowledgement(json!(1), json!({"toolsListChanged": true})));
    let mut server = stdio(&["--listen-honours=updates,prompts"]);
    let ack = stdio_listen(
        &mut server,
        json!(2),
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://nope"]}),
    );
    assert_eq!(ack, acknowledgement(json!(2), json!({"resourceSubscriptions": []})));

    // A filter that is not an object, or none at all: -32602.
    for filter in [json!(7), json!(null), json!([])] {
        let refused = stdio_listen(&mut server, json!(3), filter);
        assert_eq!(
            (&refused["id"], &refused["error"]["code"]),
            (&json!(3), &json!(-32602)),
            "{refused}"
        );
    }
    server.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen", "params": modern(json!({}))}));
    assert_eq!(server.recv()["error"]["code"], -32602);
}

#[test]
fn each_subscription_of_a_connection_gets_what_it_asked_for_under_its_own_id() {
    let mut server = stdio(&[]);
    let ack = stdio_listen(&mut server, json!("tools"), json!({"toolsListChanged": true}));
    assert_eq!(ack, acknowledgement(json!("tools"), json!({"toolsListChanged": true})));
    let asked = json!({"promptsListChanged": true, "resourceSubscriptions": [HELLO]});
    assert_eq!(
        stdio_listen(&mut server, json!(7), asked.clone()),
        acknowledgement(json!(7), asked)
    );

    let (response, before) = modern_call(&mut server, "trigger-list-changed", json!({}));
    assert_eq!(
        text(&response),
        "added tool dynamic-1 and sent notifications/tools/list_changed to 1 subscriptions"
    );
    assert_eq!(
        before,
        [of_subscription(
            "notifications/tools/list_changed",
            json!("tools"),
            json!({})
        )]
    );

    let (response, before) = modern_call(&mut server, "update-resource", json!({"uri": HELLO}));
    assert_eq!(
        text(&response),
        format!("sent notifications/resources/updated for {HELLO} to 1 subscriptions")
    );
    assert_eq!(
        before,
        [of_subscription(
            "notifications/resources/updated",
            json!(7),
            json!({"uri": HELLO})
        )]
    );

    let (_, before) = modern_call(&mut server, "trigger-list-changed", json!({"list": "prompts"}));
    assert_eq!(
        before,
        [of_subscription(
            "notifications/prompts/list_changed",
            json!(7),
            json!({})
        )]
    );
    let (response, before) = modern_call(&mut server, "trigger-list-changed", json!({"list": "resources"}));
    assert_eq!(
        text(&response),
        "sent notifications/resources/list_changed to 0 subscriptions"
    );
    assert_eq!(before, Vec::<Value>::new());
    let (response, before) = modern_call(
        &mut server,
        "update-resource",
        json!({"uri": "test://static/readme.md"}),
    );
    assert_eq!(
        text(&response),
        "no subscription listens to test://static/readme.md; nothing sent"
    );
    assert_eq!(before, Vec::<Value>::new());
}

#[test]
fn a_modern_session_gets_no_notification_outside_a_subscription() {
    let mut server = stdio(&[]);
    let (response, before) = modern_call(&mut server, "trigger-list-changed", json!({}));
    assert_eq!(
        text(&response),
        "added tool dynamic-1 and sent notifications/tools/list_changed to 0 subscriptions"
    );
    assert_eq!(before, Vec::<Value>::new());
    let (response, before) = modern_call(&mut server, "update-resource", json!({"uri": HELLO}));
    assert_eq!(
        text(&response),
        format!("no subscription listens to {HELLO}; nothing sent")
    );
    assert_eq!(before, Vec::<Value>::new());
    // The stateless era has no resources/subscribe.
    assert_eq!(
        server.error("resources/subscribe", modern(json!({"uri": HELLO})))["code"],
        -32601
    );

    // A legacy session (another process) still gets today's notification.
    let mut legacy = stdio(&[]);
    legacy.initialize();
    assert_eq!(
        legacy.tool_text("trigger-list-changed", json!({})),
        "added tool dynamic-1 and sent notifications/tools/list_changed"
    );
    assert_eq!(
        legacy.unsolicited,
        [json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]
    );
}

#[test]
fn a_legacy_session_has_no_listen() {
    let mut server = stdio(&[]);
    server.initialize();
    let refused = server.error(
        "subscriptions/listen",
        modern(json!({"notifications": {"toolsListChanged": true}})),
    );
    assert_eq!(refused["code"], -32601, "{refused}");
}

#[test]
fn the_client_cancels_a_subscription_over_stdio() {
    let log = EventLogFile::new("listen-client");
    let mut server = stdio(&[&log.arg()]);
    stdio_listen(&mut server, json!(1), json!({"toolsListChanged": true}));
    stdio_listen(&mut server, json!(2), json!({"toolsListChanged": true}));
    server.notify("notifications/cancelled", json!({"requestId": 1}));
    let (response, before) = modern_call(&mut server, "trigger-list-changed", json!({}));
    assert_eq!(
        text(&response),
        "added tool dynamic-1 and sent notifications/tools/list_changed to 1 subscriptions"
    );
    assert_eq!(
        before,
        [of_subscription("notifications/tools/list_changed", json!(2), json!({}))],
        "nothing for the cancelled subscription"
    );
    assert_eq!(
        log.matching(&json!({"event": "listen-end"})),
        [json!({"event": "listen-end", "id": 1, "how": "client"})]
    );
}

#[test]
fn the_server_ends_or_cancels_a_subscription_over_stdio() {
    let log = EventLogFile::new("listen-graceful");
    let mut server = stdio(&["--end-listen-after-ms", "200", &log.arg()]);
    stdio_listen(&mut server, json!("l"), json!({"toolsListChanged": true}));
    assert_eq!(server.recv(), completion(json!("l")));
    assert_eq!(
        log.matching(&json!({"event": "listen-end"})),
        [json!({"event": "listen-end", "id": "l", "how": "graceful"})]
    );

    let log = EventLogFile::new("listen-cancel");
    let mut server = stdio(&["--cancel-listen-after-ms", "200", &log.arg()]);
    stdio_listen(&mut server, json!(5), json!({"toolsListChanged": true}));
    let cancelled = server.recv();
    assert_eq!(
        cancelled["params"],
        json!({"requestId": 5, "reason": "the server ended the subscription (--cancel-listen-after-ms)"})
    );
    assert_eq!(cancelled["method"], "notifications/cancelled");
    let (response, before) = modern_call(&mut server, "trigger-list-changed", json!({}));
    assert!(text(&response).ends_with("to 0 subscriptions"), "{response}");
    assert_eq!(before, Vec::<Value>::new());
    assert_eq!(
        log.matching(&json!({"event": "listen-end"})),
        [json!({"event": "listen-end", "id": 5, "how": "cancelled"})]
    );
}

#[test]
fn a_connection_has_at_most_16_subscriptions() {
    let mut server = stdio(&[]);
    for id in 0..16 {
        let ack = stdio_listen(&mut server, json!(id), json!({}));
        assert_eq!(ack, acknowledgement(json!(id), json!({})));
    }
    let refused = stdio_listen(&mut server, json!(16), json!({}));
    assert_eq!(
        refused["error"],
        json!({"code": -32603, "message": "16 subscriptions are already live on this connection (the limit); end one before listening again"})
    );
    server.notify("notifications/cancelled", json!({"requestId": 3}));
    let ack = stdio_listen(&mut server, json!(16), json!({}));
    assert_eq!(ack, acknowledgement(json!(16), json!({})));
}

/// The headers of a stateless POST of `message`.
fn headers_for(message: &Value) -> Vec<(&str, &str)> {
    let mut headers = vec![
        ACCEPT_BOTH,
        JSON_BODY,
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", message["method"].as_str().unwrap()),
    ];
    if let Some(name) = message["params"]["name"].as_str() {
        headers.push(("Mcp-Name", name));
    }
    headers
}

/// POSTs `message` on a new connection and reads the response's head.
fn open(remote: &Remote, message: &Value) -> (Conn, Head) {
    let mut conn = remote.connect();
    let body = serde_json::to_vec(message).unwrap();
    conn.send("POST", &remote.path, &headers_for(message), &body);
    let head = conn.head();
    (conn, head)
}

/// POSTs `message` and reads the whole response.
fn post(remote: &Remote, message: &Value) -> Response {
    let body = serde_json::to_vec(message).unwrap();
    remote
        .connect()
        .exchange("POST", &remote.path, &headers_for(message), &body)
}

/// Opens a listen over HTTP: its connection and the response's head (an event stream).
fn http_listen(remote: &Remote, id: i64, filter: Value) -> (Conn, Head) {
    let (conn, head) = open(remote, &listen_request(json!(id), filter));
    assert_eq!(
        (head.status, head.header("content-type")),
        (200, Some("text/event-stream")),
        "{head:?}"
    );
    (conn, head)
}

/// Waits until `log` has an event with `fields`; those events.
fn wait_matching(log: &EventLogFile, fields: &Value) -> Vec<Value> {
    let deadline = std::time::Instant::now() + common::HANG_GUARD;
    loop {
        let found = log.matching(fields);
        if !found.is_empty() {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no event {fields} within the guard"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The messages of `events` (all `event: message`).
fn messages(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|event| {
            assert_eq!(event.event.as_deref(), Some("message"), "{event:?}");
            event.json()
        })
        .collect()
}

/// Calls tool `name` by a stateless POST; the result's text.
fn http_call(remote: &Remote, id: i64, name: &str, arguments: Value) -> String {
    let call = request(id, "tools/call", modern(json!({"name": name, "arguments": arguments})));
    let response = post(remote, &call);
    assert_eq!(response.status(), 200, "{}", response.text());
    let events = response
        .text()
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| block.strip_prefix("event: message\ndata: ").unwrap().to_owned())
        .collect::<Vec<_>>();
    let answer: Value = serde_json::from_str(events.last().expect("an answer")).unwrap();
    text(&answer).to_owned()
}

#[test]
fn a_change_reaches_an_http_listen_that_another_client_opened() {
    let remote = Remote::start("http", &[]);
    let (mut conn, head) = http_listen(
        &remote,
        1,
        json!({"toolsListChanged": true, "resourceSubscriptions": [HELLO, "test://nope"]}),
    );
    let mut events = conn.events(&head);
    assert_eq!(
        messages(&[events.expect()]),
        [acknowledgement(
            json!(1),
            json!({"toolsListChanged": true, "resourceSubscriptions": [HELLO]})
        )]
    );
    assert_eq!(
        http_call(&remote, 2, "trigger-list-changed", json!({})),
        "added tool dynamic-1 and sent notifications/tools/list_changed to 1 subscriptions"
    );
    assert_eq!(
        messages(&[events.expect()]),
        [of_subscription("notifications/tools/list_changed", json!(1), json!({}))]
    );
    assert_eq!(
        http_call(&remote, 3, "update-resource", json!({"uri": HELLO})),
        format!("sent notifications/resources/updated for {HELLO} to 1 subscriptions")
    );
    assert_eq!(
        messages(&[events.expect()]),
        [of_subscription(
            "notifications/resources/updated",
            json!(1),
            json!({"uri": HELLO})
        )]
    );
    // Prompts were not asked for.
    assert_eq!(
        http_call(&remote, 4, "trigger-list-changed", json!({"list": "prompts"})),
        "sent notifications/prompts/list_changed to 0 subscriptions"
    );
}

#[test]
fn closing_the_stream_ends_an_http_subscription() {
    let log = EventLogFile::new("listen-closed");
    let remote = Remote::start("http", &[&log.arg()]);
    let (mut conn, head) = http_listen(&remote, 9, json!({"toolsListChanged": true}));
    conn.events(&head).expect();
    conn.close();
    assert_eq!(
        wait_matching(&log, &json!({"event": "listen-end"})),
        [json!({"event": "listen-end", "id": 9, "how": "closed"})]
    );
    assert_eq!(
        http_call(&remote, 2, "trigger-list-changed", json!({})),
        "added tool dynamic-1 and sent notifications/tools/list_changed to 0 subscriptions"
    );
}

#[test]
fn the_server_ends_or_cancels_an_http_subscription() {
    // Gracefully: the listen's response is the stream's last event (`--json-response` or not).
    let log = EventLogFile::new("listen-http-graceful");
    let remote = Remote::start("http", &["--end-listen-after-ms", "200", "--json-response", &log.arg()]);
    let (mut conn, head) = http_listen(&remote, 4, json!({"promptsListChanged": true}));
    assert_eq!(
        messages(&conn.events(&head).rest()),
        [
            acknowledgement(json!(4), json!({"promptsListChanged": true})),
            completion(json!(4))
        ]
    );
    assert_eq!(
        log.matching(&json!({"event": "listen-end"})),
        [json!({"event": "listen-end", "id": 4, "how": "graceful"})]
    );

    // Cancelled: the stream ends without a response.
    let log = EventLogFile::new("listen-http-cancel");
    let remote = Remote::start("http", &["--cancel-listen-after-ms", "200", &log.arg()]);
    let (mut conn, head) = http_listen(&remote, 5, json!({"toolsListChanged": true}));
    assert_eq!(
        messages(&conn.events(&head).rest()),
        [acknowledgement(json!(5), json!({"toolsListChanged": true}))]
    );
    assert_eq!(
        log.matching(&json!({"event": "listen-end"})),
        [json!({"event": "listen-end", "id": 5, "how": "cancelled"})]
    );
}

#[test]
fn an_http_server_has_at_most_256_subscriptions() {
    let remote = Remote::start("http", &[]);
    let mut open_streams: Vec<Conn> = (0..256).map(|id| http_listen(&remote, id, json!({})).0).collect();
    let refused = post(&remote, &listen_request(json!(256), json!({})));
    assert_eq!(
        (refused.status(), refused.header("content-type")),
        (200, Some("application/json"))
    );
    assert_eq!(
        refused.json(),
        json!({"jsonrpc": "2.0", "id": 256, "error": {"code": -32603, "message": "256 subscriptions are already live on this server (the limit); end one before listening again"}})
    );
    // A filter that is not an object: 400 with -32602.
    let invalid = post(&remote, &listen_request(json!(300), json!("tools")));
    assert_eq!(
        (invalid.status(), invalid.json()["error"]["code"].clone()),
        (400, json!(-32602))
    );

    // One stream closed frees a place.
    open_streams.pop().unwrap().close();
    let deadline = std::time::Instant::now() + common::HANG_GUARD;
    loop {
        let (conn, head) = open(&remote, &listen_request(json!(257), json!({})));
        if head.header("content-type") == Some("text/event-stream") {
            open_streams.push(conn);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the closed stream's place was never freed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A WebSocket connection is a connection as stdio is: its own subscriptions, its own output.
#[test]
fn a_websocket_connection_listens_as_stdio_does() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::{self, Message};

    let remote = Remote::start("ws", &[]);
    let mut upgrade = remote.url.as_str().into_client_request().unwrap();
    upgrade
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", "mcp".parse().unwrap());
    let stream = std::net::TcpStream::connect(remote.addr).unwrap();
    stream.set_read_timeout(Some(common::HANG_GUARD)).unwrap();
    let (mut socket, _) = tungstenite::client(upgrade, stream).expect("the handshake");
    let mut exchange = |message: &Value, answers: usize| -> Vec<Value> {
        socket.send(Message::text(message.to_string())).unwrap();
        let mut received = Vec::new();
        while received.len() < answers {
            if let Message::Text(text) = socket.read().expect("a frame") {
                received.push(serde_json::from_str(&text).unwrap());
            }
        }
        received
    };
    let listen = listen_request(json!(1), json!({"toolsListChanged": true}));
    assert_eq!(
        exchange(&listen, 1),
        [acknowledgement(json!(1), json!({"toolsListChanged": true}))]
    );
    let trigger = request(2, "tools/call", modern(json!({"name": "trigger-list-changed"})));
    let received = exchange(&trigger, 2);
    assert_eq!(
        received[0],
        of_subscription("notifications/tools/list_changed", json!(1), json!({}))
    );
    assert_eq!(received[1]["id"], 2);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    assert_eq!(exchange(&cancel, 0), Vec::<Value>::new());
    let trigger = request(3, "tools/call", modern(json!({"name": "trigger-list-changed"})));
    let received = exchange(&trigger, 1);
    assert_eq!(
        text(&received[0]),
        "added tool dynamic-2 and sent notifications/tools/list_changed to 0 subscriptions"
    );
}
