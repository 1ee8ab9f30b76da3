//! The connections under the transport, against scripted servers: the cap and the idle limits of
//! the pool, idle expiry, the server's `Keep-Alive` and `Connection: close`, connections the
//! server closes while they wait, body framings (chunked, until close), and responses that are
//! not HTTP.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::mcp::{call, handshake, recv_response, request, result, result_of, script, transport};
use common::{Recorded, Reply, Step, TestServer, event, guard};
use plexus_http::SessionInfo;
use plexus_jsonrpc::RequestId;
use plexus_transport::{ErrorClass, TransportSender, error_chain};
use serde_json::json;

async fn wait_until(info: &SessionInfo, what: &str, done: impl Fn(&SessionInfo) -> bool) {
    let waited = tokio::time::timeout(common::HANG_GUARD, async {
        while !done(info) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "never {what}: {} open, {} idle",
        info.open_connections(),
        info.idle_connections()
    );
}

fn json_reply(r: &Recorded, headers: &[(&str, &str)]) -> Reply {
    Reply::json(result(&r.rpc_id(), &json!({"method": r.rpc_method()})), headers)
}

#[tokio::test]
async fn the_connection_cap_holds_and_requests_wait_for_a_connection() {
    // Each call's stream takes a while: six of them over at most two connections.
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("tools/call")).then(|| {
            Reply::sse(
                &[],
                vec![
                    Step::Sleep(Duration::from_millis(30)),
                    event(Some("1"), &result(&r.rpc_id(), &json!({}))),
                    Step::End,
                ],
            )
        })
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.max_connections(2));
    handshake(&sender, &mut receiver).await;
    let sender = Arc::new(sender);
    let sends: Vec<_> = (1..=6)
        .map(|id| {
            let sender = Arc::clone(&sender);
            tokio::spawn(async move { sender.send(request(id, "tools/call")).await })
        })
        .collect();
    for send in sends {
        assert!(guard(send).await.unwrap().unwrap().is_none());
    }
    let mut ids: Vec<i64> = Vec::new();
    for _ in 0..6 {
        match recv_response(&mut receiver).await.id {
            Some(RequestId::Number(id)) => ids.push(id),
            other => panic!("{other:?}"),
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    assert!(server.connections() <= 2, "{} connections", server.connections());
    assert!(info.open_connections() <= 2);
    sender.close().await.unwrap();
}

#[tokio::test]
async fn idle_connections_expire_and_the_next_request_opens_a_new_one() {
    let server = TestServer::start(script(|_| None)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.idle_timeout(Duration::from_millis(50)));
    handshake(&sender, &mut receiver).await;
    call(&sender, request(1, "ping")).await;
    // Nothing else happens: the pool's sweeper closes them.
    wait_until(&info, "closed the idle connections", |i| i.open_connections() == 0).await;
    assert_eq!(info.idle_connections(), 0);
    let before = server.connections();
    assert_eq!(call(&sender, request(2, "ping")).await.id, Some(RequestId::Number(2)));
    assert_eq!(server.connections(), before + 1);
    sender.close().await.unwrap();
}

#[tokio::test]
async fn the_idle_limit_closes_the_oldest_connections() {
    // Three calls held open at once need three connections; only one may stay idle after.
    let arrived = Arc::new(AtomicUsize::new(0));
    let gate = common::Gate::new();
    let server = TestServer::start({
        let arrived = Arc::clone(&arrived);
        let gate = Arc::clone(&gate);
        script(move |r| {
            (r.rpc_method().as_deref() == Some("tools/call")).then(|| {
                if arrived.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                    gate.open();
                }
                Reply::sse(
                    &[],
                    vec![
                        Step::WaitFor(Arc::clone(&gate)),
                        event(None, &result(&r.rpc_id(), &json!({}))),
                        Step::End,
                    ],
                )
            })
        })
    })
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.max_idle_connections(1));
    handshake(&sender, &mut receiver).await;
    for id in 1..=3 {
        guard(sender.send(request(id, "tools/call"))).await.unwrap();
    }
    for _ in 0..3 {
        recv_response(&mut receiver).await;
    }
    wait_until(&info, "dropped to one idle connection", |i| {
        i.open_connections() == 1 && i.running_tasks() == 0
    })
    .await;
    assert_eq!(info.idle_connections(), 1);
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_server_that_closes_or_limits_keep_alive_gets_new_connections() {
    // `Connection: close`, and a `Keep-Alive` timeout too short to use (a second is kept as a margin).
    for header in [("connection", "close"), ("keep-alive", "timeout=1")] {
        let server = TestServer::start(script(move |r| {
            (r.rpc_method().as_deref() == Some("ping")).then(|| json_reply(r, &[header]))
        }))
        .await;
        let (sender, mut receiver, info) = transport(&server.url, |c| c);
        handshake(&sender, &mut receiver).await;
        let before = server.connections();
        for id in 1..=3 {
            assert_eq!(call(&sender, request(id, "ping")).await.id, Some(RequestId::Number(id)));
            assert_eq!((info.open_connections(), info.idle_connections()), (0, 0), "{header:?}");
        }
        // The first ping took the handshake's connection; each later one needed a new one.
        assert_eq!(server.connections(), before + 2, "{header:?}");
        sender.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_connection_the_server_closed_while_it_waited_costs_no_request() {
    // Every answer closes its connection afterwards, without saying so.
    let server = TestServer::start(|r: &Recorded| Reply::Closing(Box::new(common::mcp::default_reply(r)))).await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    for id in 1..=5 {
        assert_eq!(call(&sender, request(id, "ping")).await.id, Some(RequestId::Number(id)));
    }
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_request_a_kept_alive_connection_took_is_never_sent_again_when_the_server_hangs_up() {
    // The first `flaky` is read and then the connection closes without an answer: the server may
    // have acted on it, so it fails instead of going again on a new connection.
    let hung_up = Arc::new(AtomicUsize::new(0));
    let server = TestServer::start({
        let hung_up = Arc::clone(&hung_up);
        script(move |r| {
            (r.rpc_method().as_deref() == Some("flaky") && hung_up.fetch_add(1, Ordering::SeqCst) == 0)
                .then_some(Reply::Hangup)
        })
    })
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    call(&sender, request(1, "ping")).await;
    let error = guard(sender.send(request(2, "flaky"))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: the server closed the connection before answering (the request was sent; whether the server \
             acted on it is unknown)",
            server.url
        )
    );
    assert_eq!(error.class(), ErrorClass::TerminalIo);
    let flaky = server
        .requests()
        .into_iter()
        .filter(|r| r.rpc_method().as_deref() == Some("flaky"))
        .count();
    assert_eq!(flaky, 1, "sent once");
    // The next one goes on a new connection.
    let before = server.connections();
    assert_eq!(call(&sender, request(3, "flaky")).await.id, Some(RequestId::Number(3)));
    assert_eq!(server.connections(), before + 1);
    assert!(!sender.is_closed());
    sender.close().await.unwrap();
}

#[tokio::test]
async fn chunked_and_close_delimited_json_bodies() {
    let server = TestServer::start(script(|r| match r.rpc_method().as_deref() {
        Some("chunked") => {
            let body = result(&r.rpc_id(), &json!({"framing": "chunked"}));
            let (first, second) = body.split_at(body.len() / 2);
            Some(Reply::Chunked {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                steps: vec![Step::Text(first.to_owned()), Step::Text(second.to_owned()), Step::End],
            })
        }
        Some("until-close") => {
            let body = result(&r.rpc_id(), &json!({"framing": "until close"}));
            Some(Reply::Raw(
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{body}").into_bytes(),
            ))
        }
        _ => None,
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let chunked = call(&sender, request(1, "chunked")).await;
    assert_eq!(result_of(&chunked), json!({"framing": "chunked"}));
    assert_eq!(
        info.idle_connections(),
        1,
        "a chunked body that ended leaves its connection reusable"
    );
    let until_close = call(&sender, request(2, "until-close")).await;
    assert_eq!(result_of(&until_close), json!({"framing": "until close"}));
    assert_eq!(
        info.open_connections(),
        0,
        "a body delimited by the close leaves no connection"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_response_that_is_not_http_fails_its_request() {
    let server = TestServer::start(script(|r| match r.rpc_method().as_deref() {
        Some("ssh") => Some(Reply::Raw(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec())),
        Some("bad-length") => Some(Reply::Raw(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5, 6\r\n\r\n".to_vec(),
        )),
        Some("bad-chunk") => Some(Reply::Raw(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        )),
        _ => None,
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    for (method, why) in [
        (
            "ssh",
            "the server's response is not valid HTTP: invalid HTTP version parsed",
        ),
        (
            "bad-length",
            "the server's response is not valid HTTP: invalid content-length parsed",
        ),
    ] {
        let error = guard(sender.send(request(1, method))).await.unwrap_err();
        assert_eq!(error_chain(&error), format!("POST {}: {why}", server.url));
        assert_eq!(error.class(), ErrorClass::Closed, "not a dead connection: {error}");
    }
    // A bad framing inside the body fails the request.
    let error = guard(sender.send(request(2, "bad-chunk"))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: reading the response body failed: error reading a body from connection: Invalid chunk size line: \
             missing size digit",
            server.url
        )
    );
    assert!(!sender.is_closed());
    sender.close().await.unwrap();
}

#[tokio::test]
async fn close_closes_every_connection() {
    let server = TestServer::start(script(|_| None)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    call(&sender, request(1, "ping")).await;
    assert!(info.open_connections() >= 1);
    sender.close().await.unwrap();
    assert_eq!((info.open_connections(), info.idle_connections()), (0, 0));
}

#[tokio::test]
async fn https_to_a_plain_http_server_fails_the_handshake_cleanly() {
    // A plain HTTP server answers the TLS greeting with a plain 400, as real ones do.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let (mut socket, _) = listener.accept().await.unwrap();
        let answer = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        socket.write_all(answer).await.unwrap();
    });
    let (sender, _receiver, _info) = transport(&url, |c| c);
    let error = guard(sender.send(common::mcp::initialize(0))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!("POST {url}: could not connect: TLS: received corrupt message of type InvalidContentType")
    );
    assert!(!sender.is_closed(), "one failure fails only its request");
    server.await.unwrap();
}
