//! The session's life against a scripted server: expiry (404 with a session id), the DELETE on
//! close, and the statuses of an `initialize` that mean "try legacy SSE".

mod common;

use std::time::Duration;

use common::mcp::{SESSION, VERSION, handshake, initialize, recv, request, script, transport};
use common::{Reply, Step, TestServer, guard, priming};
use plexus_net::RemoteConfig as _;
use plexus_transport::{ErrorClass, Transport, TransportError, TransportSender};

const SESSION_NOT_FOUND: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#;

fn expired() -> String {
    format!("the server ended the session \"{SESSION}\" (it answered 404); reconnect and retry")
}

async fn wait_for_idle(info: &plexus_http::SessionInfo) {
    guard(async {
        while info.running_tasks() != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_404_with_the_session_id_fails_everything_at_once_and_a_new_transport_starts_over() {
    let server = TestServer::start(script(|r| match r.rpc_method().as_deref() {
        // A long call whose stream stays open.
        Some("tools/call") => Some(Reply::sse(&[], vec![priming("0"), Step::Forever])),
        Some("tools/list") if r.header("mcp-session-id") == Some(SESSION) => Some(Reply::Full {
            status: 404,
            headers: vec![("content-type".into(), "application/json".into())],
            body: SESSION_NOT_FOUND.into(),
        }),
        _ => None,
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(1, "tools/call"))).await.unwrap();
    let error = guard(sender.send(request(2, "tools/list"))).await.unwrap_err();
    assert_eq!(error.to_string(), expired());
    assert_eq!(error.class(), ErrorClass::SessionExpired);
    assert!(sender.is_closed());
    // The reader learns it at once (its in-flight call 1 fails with it), then sees `Closed`.
    let terminal = recv(&mut receiver).await.unwrap_err();
    assert!(matches!(&terminal, TransportError::SessionExpired { session_id } if session_id == SESSION));
    let later = recv(&mut receiver).await.unwrap_err();
    assert_eq!(later.to_string(), format!("the connection is closed: {}", expired()));
    // Every later send gets the same error, so that its owner reconnects.
    let again = guard(sender.send(request(3, "ping"))).await.unwrap_err();
    assert_eq!(again.to_string(), expired());
    assert_eq!(info.closed().unwrap().to_string(), expired());
    wait_for_idle(&info).await;
    // The session is gone: closing sends no DELETE.
    sender.close().await.unwrap();
    assert!(server.requests().iter().all(|r| r.method != "DELETE"));

    // The owner's reconnection: a new transport, a new `initialize` without a session id.
    let before = server.requests().len();
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let requests = server.requests();
    assert_eq!(requests[before].rpc_method().as_deref(), Some("initialize"));
    assert_eq!(requests[before].header("mcp-session-id"), None);
    assert_eq!(info.session_id().as_deref(), Some(SESSION));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_404_on_the_event_stream_ends_the_session_too() {
    let server = TestServer::start(script(|r| {
        (r.method == "GET").then(|| Reply::status(404, SESSION_NOT_FOUND, &[("content-type", "application/json")]))
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let terminal = recv(&mut receiver).await.unwrap_err();
    assert_eq!(terminal.to_string(), expired());
    assert_eq!(info.closed().unwrap().class(), ErrorClass::SessionExpired);
    sender.close().await.unwrap();
}

#[tokio::test]
async fn close_deletes_the_session_once_and_later_sends_fail() {
    let server = TestServer::start(script(|_| None)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.header("X-Team", "blue"));
    handshake(&sender, &mut receiver).await;
    guard(sender.close()).await.unwrap();
    guard(sender.close()).await.unwrap();
    let deletes: Vec<_> = server.requests().into_iter().filter(|r| r.method == "DELETE").collect();
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].header("mcp-session-id"), Some(SESSION));
    assert_eq!(deletes[0].header("mcp-protocol-version"), Some(VERSION));
    assert_eq!(deletes[0].header("x-team"), Some("blue"));
    let closed = "the connection is closed: the transport was closed by the client";
    assert_eq!(
        guard(sender.send(request(1, "ping"))).await.unwrap_err().to_string(),
        closed
    );
    assert_eq!(recv(&mut receiver).await.unwrap_err().to_string(), closed);
    assert_eq!(recv(&mut receiver).await.unwrap_err().to_string(), closed);
    wait_for_idle(&info).await;
}

#[tokio::test]
async fn a_405_to_the_delete_is_fine_and_a_silent_server_cannot_hold_close() {
    for reply in [Reply::status(405, "", &[]), Reply::Silent] {
        let server = TestServer::start(script(move |r| (r.method == "DELETE").then(|| reply.clone()))).await;
        let (sender, mut receiver, _info) = transport(&server.url, |c| c);
        handshake(&sender, &mut receiver).await;
        // Bounded by plexus_http::CLOSE_TIMEOUT (2 s) when the server never answers.
        guard(sender.close()).await.unwrap();
        let requests = server.wait_for_method("DELETE", 1).await;
        assert_eq!(requests.iter().filter(|r| r.method == "DELETE").count(), 1);
    }
}

#[tokio::test]
async fn dropping_both_halves_deletes_the_session_in_the_background() {
    let server = TestServer::start(script(|_| None)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    drop(sender);
    assert!(info.closed().is_none(), "the receiver still holds the transport");
    drop(receiver);
    assert_eq!(
        info.closed().unwrap().to_string(),
        "the connection is closed: the transport was dropped"
    );
    let deletes = server.wait_for_method("DELETE", 1).await;
    assert_eq!(deletes.iter().filter(|r| r.method == "DELETE").count(), 1);
}

#[tokio::test]
async fn an_initialize_answered_400_404_or_405_is_the_legacy_fallback_signal() {
    for status in [400u16, 404, 405] {
        let server =
            TestServer::start(move |_: &common::Recorded| Reply::status(status, "no streamable http here", &[])).await;
        let (sender, _receiver, info) = transport(&server.url, |c| c);
        let error = guard(sender.send(initialize(0))).await.unwrap_err();
        assert!(
            matches!(error, TransportError::Http { status: s, .. } if s == status),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "the server answered HTTP {status} to POST {}: no streamable http here",
                server.url
            )
        );
        // Not a session expiry (no session id was sent), and the transport stays usable.
        assert!(info.closed().is_none());
        assert!(!sender.is_closed());
    }
}

#[tokio::test]
async fn a_session_id_outside_visible_ascii_is_refused() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("initialize")).then(|| {
            Reply::json(
                common::mcp::initialize_result(&r.rpc_id()),
                &[("mcp-session-id", "has space")],
            )
        })
    }))
    .await;
    let transport = plexus_http::HttpTransport::new(plexus_http::HttpConfig::new(&server.url)).unwrap();
    let url = transport.describe();
    let (sender, _receiver) = Box::new(transport).split();
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server sent an invalid message: the Mcp-Session-Id header of the initialize response of {url} is \
             empty or has characters outside visible ASCII"
        )
    );
}
