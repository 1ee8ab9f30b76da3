//! What goes wrong on the wire, against a scripted server: error bodies, resets and refusals
//! (each fails its own request; the transport stays open), per-request and connect timeouts, and bodies and
//! events over the size cap.

mod common;

use std::time::Duration;

use common::mcp::{call, handshake, nothing_queued, recv, request, script, transport};
use common::{Reply, Step, TestServer, event, guard, priming};
use plexus_jsonrpc::RequestId;
use plexus_net::RemoteConfig as _;
use plexus_transport::{ErrorClass, TransportError, TransportSender, error_chain};

/// The server answers `reset` by resetting the connection, and everything else normally.
fn resetting() -> impl Fn(&common::Recorded) -> Reply + Send + Sync + 'static {
    script(|r| (r.rpc_method().as_deref() == Some("reset")).then_some(Reply::Reset))
}

fn assert_terminal_io(error: &TransportError, expected: &str) {
    assert_eq!(error.class(), ErrorClass::TerminalIo, "{error:?}");
    assert_eq!(error_chain(&error), expected);
}

#[tokio::test]
async fn connection_failures_fail_only_their_requests_and_the_transport_stays_open() {
    let server = TestServer::start(resetting()).await;
    let reset = format!(
        "POST {}: Connection reset by peer (os error 104) before the server answered (the request was sent; whether \
         the server acted on it is unknown)",
        server.url
    );
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    // Whoever owns the connection decides how many failures are too many (plexus-pool: 3 in a
    // row); the transport itself goes on.
    for id in 1..=5 {
        let error = guard(sender.send(request(id, "reset"))).await.unwrap_err();
        assert_terminal_io(&error, &reset);
        assert!(!sender.is_closed(), "failure {id} closed the transport");
    }
    assert_eq!(call(&sender, request(9, "ping")).await.id, Some(RequestId::Number(9)));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_refused_connection_is_a_terminal_io_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let (sender, mut receiver, _info) = transport(&url, |c| c);
    let mut errors = Vec::new();
    for id in 0..3 {
        errors.push(guard(sender.send(request(id, "ping"))).await.unwrap_err());
    }
    assert!(
        !sender.is_closed(),
        "refusals fail their requests; the owner decides when to give up"
    );
    for error in &errors {
        assert!(
            matches!(error, TransportError::Io { source, .. } if source.kind() == std::io::ErrorKind::ConnectionRefused),
            "{error:?}"
        );
        assert_terminal_io(
            error,
            &format!("POST {url}: could not connect: Connection refused (os error 111)"),
        );
    }
    sender.close().await.unwrap();
    assert_eq!(recv(&mut receiver).await.unwrap_err().class(), ErrorClass::Closed);
}

#[tokio::test]
async fn slow_headers_hit_the_per_request_timeout() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("slow")).then_some(Reply::Silent)
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.request_timeout(Duration::from_millis(300)));
    handshake(&sender, &mut receiver).await;
    let error = guard(sender.send(request(1, "slow"))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: no response within 300ms (the per-request timeout)",
            server.url
        )
    );
    assert!(matches!(&error, TransportError::Io { source, .. } if source.kind() == std::io::ErrorKind::TimedOut));
    assert!(!sender.is_closed());
    assert_eq!(info.requests_in_flight(), 0);
    // The next request has its own timer and goes through.
    assert_eq!(call(&sender, request(2, "ping")).await.id, Some(RequestId::Number(2)));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_json_body_that_stalls_fails_its_request_at_the_timeout() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("stall")).then(|| Reply::Partial {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            declared: 100,
            sent: br#"{"jsonrpc":"#.to_vec(),
        })
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c.request_timeout(Duration::from_millis(300)));
    handshake(&sender, &mut receiver).await;
    let error = guard(sender.send(request(1, "stall"))).await.unwrap_err();
    assert_terminal_io(
        &error,
        &format!(
            "POST {}: the response body did not arrive within 300ms (the per-request timeout)",
            server.url
        ),
    );
    assert!(
        nothing_queued(&mut receiver),
        "the request's error is told once, by send"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn an_error_body_is_read_only_up_to_16_kib() {
    // 20 KiB of a body that claims 1 MiB and then never ends: reading past 16 KiB would wait for
    // the 60 s request timeout, past the hang guard.
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("boom")).then(|| Reply::Partial {
            status: 500,
            headers: vec![("content-type".into(), "text/plain".into())],
            declared: 1 << 20,
            sent: vec![b'x'; 20 * 1024],
        })
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let error = guard(sender.send(request(1, "boom"))).await.unwrap_err();
    let TransportError::Http { status, what, body } = &error else {
        panic!("expected an HTTP error, got {error:?}")
    };
    assert_eq!(*status, 500);
    assert_eq!(what, &format!("POST {}", server.url));
    assert_eq!(body, &format!("{}…", "x".repeat(plexus_http::ERROR_BODY_EXCERPT)));
    assert!(!sender.is_closed());
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_json_body_over_the_cap_fails_its_request_with_its_size() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"pad":"{}"}}}}"#,
        "p".repeat(4096)
    );
    let declared = big.len();
    let server = TestServer::start(script(move |r| match r.rpc_method().as_deref() {
        // The size is declared: nothing is read.
        Some("declared") => Some(Reply::json(big.clone(), &[])),
        // Chunked, so the size is unknown up front: the body is counted to its end.
        Some("chunked") => Some(Reply::Chunked {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            steps: vec![Step::Text("[".repeat(1000)), Step::Text("]".repeat(1500)), Step::End],
        }),
        // Never ends: it is counted until the request's deadline.
        Some("endless") => Some(Reply::Chunked {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            steps: vec![Step::Text("[".repeat(3000)), Step::Forever],
        }),
        _ => None,
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| {
        c.max_message_size(1024).request_timeout(Duration::from_millis(500))
    });
    handshake(&sender, &mut receiver).await;
    for (id, method, size) in [(1, "declared", declared), (2, "chunked", 2500), (3, "endless", 3000)] {
        let error = guard(sender.send(request(id, method))).await.unwrap_err();
        let TransportError::DroppedReply { id: dropped, reason } = &error else {
            panic!("{method}: a dropped reply: {error:?}")
        };
        assert_eq!(dropped, &Some(RequestId::Number(id)), "{method}");
        assert!(
            matches!(**reason, TransportError::TooLarge { size: s, limit: 1024 } if s == size),
            "{method}: {reason:?}"
        );
        assert_eq!(
            plexus_transport::error_chain(&error),
            format!(
                "the server's reply to request {id} was dropped: a message of {size} bytes from the server is larger \
                 than the 1024-byte limit; it was discarded (raise the limit with PLEXUS_MAX_MESSAGE_SIZE)"
            )
        );
        assert!(!error.is_terminal(), "{method}");
        assert!(
            nothing_queued(&mut receiver),
            "{method}: the request's error is told once, by send"
        );
        if method == "chunked" {
            assert_eq!(
                info.idle_connections(),
                1,
                "a body counted to its end leaves its connection reusable"
            );
        }
    }
    assert!(!sender.is_closed());
    sender.close().await.unwrap();
}

#[tokio::test]
async fn an_sse_event_over_the_cap_is_skipped_and_the_stream_goes_on() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("tools/call")).then(|| {
            let big = format!(
                r#"{{"jsonrpc":"2.0","method":"big","params":{{"pad":"{}"}}}}"#,
                "p".repeat(4096)
            );
            Reply::sse(
                &[],
                vec![
                    priming("0"),
                    event(Some("1"), &big),
                    event(Some("2"), &common::mcp::result(&r.rpc_id(), &serde_json::json!({}))),
                    Step::End,
                ],
            )
        })
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c.max_message_size(1024));
    handshake(&sender, &mut receiver).await;
    assert!(guard(sender.send(request(5, "tools/call"))).await.unwrap().is_none());
    let too_large = recv(&mut receiver).await.unwrap_err();
    assert_eq!(
        too_large.to_string(),
        format!(
            "a message of {} bytes from the server is larger than the 1024-byte limit; it was discarded (raise the \
             limit with PLEXUS_MAX_MESSAGE_SIZE)",
            r#"{"jsonrpc":"2.0","method":"big","params":{"pad":""}}"#.len() + 4096
        )
    );
    let response = common::mcp::recv_response(&mut receiver).await;
    assert_eq!(response.id, Some(RequestId::Number(5)));
    assert!(response.outcome.is_ok());
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_body_that_is_not_json_rpc_fails_its_request_saying_why() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("garbage")).then(|| Reply::json("[1, 2]", &[]))
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let error = guard(sender.send(request(1, "garbage"))).await.unwrap_err();
    assert_eq!(error.reply_to(), Some(&RequestId::Number(1)));
    assert_eq!(error.class(), ErrorClass::Protocol);
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server's reply to request 1 was dropped: the server sent an invalid message: the JSON body of the \
             response to POST {} is not a JSON-RPC message: the message is a JSON array (a JSON-RPC batch); MCP does \
             not allow batching",
            server.url
        )
    );
    assert!(
        nothing_queued(&mut receiver),
        "the request's error is told once, by send"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_server_that_hangs_up_fails_the_request() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("hangup")).then_some(Reply::Hangup)
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let error = guard(sender.send(request(1, "hangup"))).await.unwrap_err();
    assert_terminal_io(
        &error,
        &format!(
            "POST {}: the server closed the connection before answering (the request was sent; whether the server \
             acted on it is unknown)",
            server.url
        ),
    );
    let hangups = server
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("hangup"))
        .count();
    assert_eq!(
        hangups, 1,
        "a request that may have reached the server is not sent again"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn the_connect_timeout_bounds_a_connection_that_never_opens() {
    // A listener that never accepts, with a backlog of 1: once its queue is full, the kernel
    // drops further SYNs and connecting hangs.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_millis(200), tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => fillers.push(stream),
            Ok(Err(e)) => panic!("filling the backlog failed: {e}"),
            Err(_) => break,
        }
        assert!(fillers.len() < 64, "the backlog never filled up");
    }
    let url = format!("http://{addr}/mcp");
    let (sender, _receiver, _info) = transport(&url, |c| c.connect_timeout(Duration::from_millis(200)));
    let error = guard(sender.send(request(1, "ping"))).await.unwrap_err();
    assert!(
        matches!(&error, TransportError::Io { source, .. } if source.kind() == std::io::ErrorKind::TimedOut),
        "{error:?}"
    );
    assert_terminal_io(
        &error,
        &format!("POST {url}: could not connect within 200ms (the connect timeout)"),
    );
    drop(listener);
}
