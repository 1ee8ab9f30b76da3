//! Messages both ways against a scripted server on 127.0.0.1: JSON and SSE responses, the
//! session and version headers, 202s, concurrency and connection reuse.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use common::mcp::{
    SESSION, VERSION, call, handshake, initialize, nothing_queued, notification, recv_message, recv_response, request,
    result, result_of, script, transport,
};
use common::{Gate, Reply, Step, TestServer, event, guard, priming};
use plexus_jsonrpc::{Message, RequestId};
use plexus_net::RemoteConfig as _;
use plexus_transport::{Transport, TransportError, TransportSender};
use serde_json::json;

#[tokio::test]
async fn json_responses_and_the_session_and_version_headers() {
    let server = TestServer::start(script(|_| None)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.header("X-Team", "blue"));
    assert_eq!(info.session_id(), None);
    handshake(&sender, &mut receiver).await;
    assert_eq!(info.session_id().as_deref(), Some(SESSION));
    assert_eq!(info.protocol_version().as_deref(), Some(VERSION));
    let response = call(&sender, request(1, "tools/list")).await;
    assert_eq!(response.id, Some(RequestId::Number(1)));
    assert_eq!(result_of(&response), json!({"method": "tools/list"}));
    assert!(nothing_queued(&mut receiver), "the reply came back from send only");

    let requests = server.wait_for_method("GET", 1).await;
    let posts: Vec<_> = requests.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 3);
    for post in &posts {
        assert_eq!(post.path, "/mcp");
        assert_eq!(post.header("accept"), Some("application/json, text/event-stream"));
        assert_eq!(post.header("content-type"), Some("application/json"));
        assert_eq!(post.header("x-team"), Some("blue"));
    }
    // `initialize` starts the session: it carries neither header; everything after carries both.
    assert_eq!(posts[0].rpc_method().as_deref(), Some("initialize"));
    assert_eq!(posts[0].header("mcp-session-id"), None);
    assert_eq!(posts[0].header("mcp-protocol-version"), None);
    assert_eq!(posts[0].body.last(), Some(&b'}'), "the body has no trailing newline");
    for later in requests.iter().skip(1) {
        assert_eq!(later.header("mcp-session-id"), Some(SESSION), "{later:?}");
        assert_eq!(later.header("mcp-protocol-version"), Some(VERSION), "{later:?}");
    }
    let get = requests.iter().find(|r| r.method == "GET").unwrap();
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("x-team"), Some("blue"));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn an_sse_response_with_a_priming_event_and_messages_before_the_response() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("tools/call")).then(|| {
            let id = r.rpc_id();
            Reply::sse(
                &[],
                vec![
                    priming("p-0"),
                    event(
                        Some("p-1"),
                        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
                    ),
                    // One event split over two chunks, with a data line per part.
                    Step::Text("id: p-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",".to_owned()),
                    Step::Text("\ndata: \"method\":\"sampling/createMessage\"}\n\n".to_owned()),
                    event(Some("p-3"), &result(&id, &json!({"content": []}))),
                    Step::End,
                ],
            )
        })
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(7, "tools/call"))).await.unwrap();
    let Message::Notification(progress) = recv_message(&mut receiver).await else {
        panic!("the progress notification comes first")
    };
    assert_eq!(progress.method, "notifications/progress");
    let Message::Request(sampling) = recv_message(&mut receiver).await else {
        panic!("then the server's request")
    };
    assert_eq!(sampling.id, RequestId::String("srv-1".into()));
    assert_eq!(sampling.method, "sampling/createMessage");
    let response = recv_response(&mut receiver).await;
    assert_eq!(response.id, Some(RequestId::Number(7)));
    assert_eq!(result_of(&response), json!({"content": []}));
    // The client's answer to the server's request is a POST that gets 202.
    let answer = Message::Response(plexus_jsonrpc::Response {
        id: Some(RequestId::String("srv-1".into())),
        outcome: Ok(serde_json::value::to_raw_value(&json!({"ok": true})).unwrap()),
    });
    guard(sender.send(plexus_transport::OutboundMessage::from_message(&answer)))
        .await
        .unwrap();
    let requests = server
        .wait_until("the answer", |all| {
            all.iter().any(|r| r.json().get("result") == Some(&json!({"ok": true})))
        })
        .await;
    assert!(
        requests
            .iter()
            .all(|r| r.method != "POST" || r.header("mcp-session-id") == Some(SESSION) || r.index == 0)
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn the_version_is_read_from_an_sse_initialize_response_too() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("initialize")).then(|| {
            let body = json!({"jsonrpc":"2.0","id":r.rpc_id(),"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1"}}});
            Reply::sse(&[("Mcp-Session-Id", "sse-session")], vec![priming("0"), event(Some("1"), &body.to_string()), Step::End])
        })
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    assert_eq!(info.session_id().as_deref(), Some("sse-session"));
    assert_eq!(info.protocol_version().as_deref(), Some("2025-03-26"));
    let requests = server.wait_for_method("POST", 2).await;
    assert_eq!(requests[1].header("mcp-protocol-version"), Some("2025-03-26"));
    assert_eq!(requests[1].header("mcp-session-id"), Some("sse-session"));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_server_without_sessions_gets_no_session_header() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("initialize"))
            .then(|| Reply::json(common::mcp::initialize_result(&r.rpc_id()), &[]))
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    call(&sender, request(1, "ping")).await;
    assert_eq!(info.session_id(), None);
    let requests = server.wait_for_method("POST", 3).await;
    assert!(requests.iter().all(|r| r.header("mcp-session-id").is_none()));
    assert_eq!(requests[2].header("mcp-protocol-version"), Some(VERSION));
    sender.close().await.unwrap();
    // Without a session there is nothing to DELETE.
    assert!(server.requests().iter().all(|r| r.method != "DELETE"));
}

#[tokio::test]
async fn many_requests_are_in_flight_at_once() {
    const COUNT: i64 = 24;
    // The server holds every response until all the requests have arrived: a transport that sent
    // them one at a time would never get past the first.
    let arrived = Arc::new(AtomicI64::new(0));
    let all_in = Gate::new();
    let server = TestServer::start({
        let arrived = Arc::clone(&arrived);
        let all_in = Arc::clone(&all_in);
        script(move |r| {
            (r.rpc_method().as_deref() == Some("tools/call")).then(|| {
                if arrived.fetch_add(1, Ordering::SeqCst) + 1 == COUNT {
                    all_in.open();
                }
                let gate = Step::WaitFor(Arc::clone(&all_in));
                Reply::sse(
                    &[],
                    vec![gate, event(None, &result(&r.rpc_id(), &json!({}))), Step::End],
                )
            })
        })
    })
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let sender = Arc::new(sender);
    let sends: Vec<_> = (0..COUNT)
        .map(|i| {
            let sender = Arc::clone(&sender);
            tokio::spawn(async move { sender.send(request(100 + i, "tools/call")).await })
        })
        .collect();
    for send in sends {
        guard(send).await.unwrap().unwrap();
    }
    let mut ids: Vec<RequestId> = Vec::new();
    for _ in 0..COUNT {
        ids.push(recv_response(&mut receiver).await.id.unwrap());
    }
    ids.sort_by_key(|id| match id {
        RequestId::Number(n) => *n,
        RequestId::String(_) => i64::MAX,
    });
    assert_eq!(ids, (0..COUNT).map(|i| RequestId::Number(100 + i)).collect::<Vec<_>>());
    sender.close().await.unwrap();
    assert_eq!(info.requests_in_flight(), 0);
}

#[tokio::test]
async fn sequential_requests_reuse_one_connection() {
    let server = TestServer::start(script(|_| None)).await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    for id in 1..=50 {
        assert_eq!(call(&sender, request(id, "ping")).await.id, Some(RequestId::Number(id)));
    }
    let posts: Vec<_> = server.requests().into_iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 52);
    // The GET stream (answered 405) may have taken a second connection at the same moment.
    let post_connections: std::collections::BTreeSet<usize> = posts.iter().map(|r| r.connection).collect();
    assert!(post_connections.len() <= 2, "POSTs used {post_connections:?}");
    assert!(server.connections() <= 2, "{} connections", server.connections());
    sender.close().await.unwrap();
}

#[tokio::test]
async fn an_unexpected_content_type_fails_the_send() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("initialize"))
            .then(|| Reply::status(200, "<html>hello</html>", &[("content-type", "text/html")]))
    }))
    .await;
    let (sender, _receiver, _info) = transport(&server.url, |c| c);
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server sent an invalid message: POST {} answered HTTP 200 with content type \"text/html\"; expected \
             application/json or text/event-stream",
            server.url
        )
    );
    assert!(!error.is_terminal());
}

#[tokio::test]
async fn notifications_wait_for_the_202_and_report_errors() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("notifications/bad"))
            .then(|| Reply::status(400, "unknown notification", &[]))
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    guard(sender.send(notification("notifications/roots/list_changed")))
        .await
        .unwrap();
    let error = guard(sender.send(notification("notifications/bad"))).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the server answered HTTP 400 to POST {}: unknown notification",
            server.url
        )
    );
    assert!(!sender.is_closed());
    sender.close().await.unwrap();
}

#[tokio::test]
async fn describe_hides_credentials_and_the_query() {
    let transport = plexus_http::HttpTransport::new(plexus_http::HttpConfig::new(
        "http://user:secret@127.0.0.1:9/mcp?key=abc",
    ))
    .unwrap();
    assert_eq!(transport.describe(), "http://127.0.0.1:9/mcp?…");
    let bad = plexus_http::HttpTransport::new(plexus_http::HttpConfig::new("ftp://example.com/mcp")).unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&bad),
        "could not connect to ftp://example.com/mcp: the URL scheme is \"ftp\"; the Streamable HTTP transport needs \
         http or https"
    );
    let bad =
        plexus_http::HttpTransport::new(plexus_http::HttpConfig::new("http://127.0.0.1:9/").header("bad name", "x"))
            .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&bad),
        "could not connect to http://127.0.0.1:9/: the header name \"bad name\" is not a valid HTTP header name"
    );
    assert!(matches!(bad, TransportError::Connect { .. }));
    // A URL that cannot be used is still named without its credentials.
    let bad =
        plexus_http::HttpTransport::new(plexus_http::HttpConfig::new("http://user:secret@/mcp?key=abc")).unwrap_err();
    assert!(matches!(bad, TransportError::Connect { .. }));
    assert!(
        plexus_transport::error_chain(&bad).starts_with("could not connect to http:///mcp?…: "),
        "{bad}"
    );
}

#[tokio::test]
async fn a_stream_left_open_after_its_response_is_let_go() {
    // The response, then nothing, and the stream never ends: its reader waits STREAM_END_GRACE
    // for the end (so that the connection could go back to the pool), then drops it.
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("tools/call")).then(|| {
            Reply::sse(
                &[],
                vec![
                    priming("0"),
                    event(Some("1"), &result(&r.rpc_id(), &json!({}))),
                    Step::Forever,
                ],
            )
        })
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(1, "tools/call"))).await.unwrap();
    assert_eq!(recv_response(&mut receiver).await.id, Some(RequestId::Number(1)));
    guard(async {
        while info.running_tasks() != 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(!sender.is_closed());
    sender.close().await.unwrap();
}
