//! Redirects against scripted servers: followed within the origin with every header, refused to
//! another origin (another port) so that no credential reaches it, and bounded.

mod common;

use common::mcp::{SESSION, call, handshake, initialize, request, script, transport};
use common::{Reply, TestServer, guard};
use plexus_jsonrpc::RequestId;
use plexus_net::RemoteConfig as _;
use plexus_transport::{TransportError, TransportSender};

#[tokio::test]
async fn a_same_origin_redirect_is_followed_with_every_header_and_the_body() {
    let server = TestServer::start(script(|r| match r.path.as_str() {
        "/mcp" => Some(Reply::status(307, "", &[("location", "/mcp/")])),
        "/mcp/" => None,
        other => Some(Reply::status(500, format!("unexpected path {other}"), &[])),
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| {
        c.header("Authorization", "Bearer secret").header("X-Api-Key", "k")
    });
    handshake(&sender, &mut receiver).await;
    assert_eq!(
        call(&sender, request(1, "tools/list")).await.id,
        Some(RequestId::Number(1))
    );
    sender.close().await.unwrap();

    let requests = server.requests();
    // Every request went to /mcp first, then again to /mcp/ with the same method and body (the
    // event stream's GET may interleave with the POSTs).
    let (first, second): (Vec<_>, Vec<_>) = requests.iter().partition(|r| r.path == "/mcp");
    assert_eq!(first.len(), second.len());
    assert!(second.iter().all(|r| r.path == "/mcp/"));
    for followed in &second {
        assert!(
            first
                .iter()
                .any(|r| r.index < followed.index && r.method == followed.method && r.body == followed.body),
            "{followed:?} was not redirected from /mcp"
        );
    }
    for r in &requests {
        assert_eq!(r.header("authorization"), Some("Bearer secret"));
        assert_eq!(r.header("x-api-key"), Some("k"));
        if r.rpc_method().as_deref() != Some("initialize") {
            assert_eq!(r.header("mcp-session-id"), Some(SESSION));
        }
    }
    assert!(requests.iter().any(|r| r.method == "DELETE" && r.path == "/mcp/"));
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_nothing_reaches_it() {
    let elsewhere = TestServer::start(script(|_| None)).await;
    let target = elsewhere.url.clone();
    let server = TestServer::start(move |_: &common::Recorded| Reply::status(307, "", &[("location", &target)])).await;
    let (sender, _receiver, _info) = transport(&server.url, |c| {
        c.header("Authorization", "Bearer secret").header("X-Api-Key", "k")
    });
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert!(matches!(error, TransportError::Connect { .. }), "{error:?}");
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {url}: POST {url}: was redirected (HTTP 307) to {target}, another origin; redirects \
             are followed only within the same origin, so that credentials and custom headers never reach another \
             server (configure the new URL if it is right)",
            url = server.url,
            target = elsewhere.url
        )
    );
    assert_eq!(server.requests().len(), 1);
    // The other origin saw no request at all, let alone a credential.
    assert_eq!(elsewhere.connections(), 0);
    assert!(elsewhere.requests().is_empty());
    // A different scheme or host on the same port is another origin too.
    let https = format!("https://{}/mcp", server.addr);
    let localhost = format!("http://localhost:{}/mcp", server.addr.port());
    for target in [https, localhost] {
        let redirecting =
            TestServer::start(move |_: &common::Recorded| Reply::status(308, "", &[("location", &target)])).await;
        let (sender, _receiver, _info) = transport(&redirecting.url, |c| c.header("Authorization", "Bearer secret"));
        let error = guard(sender.send(initialize(0))).await.unwrap_err();
        assert!(
            plexus_transport::error_chain(&error).contains("another origin"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_redirect_loop_ends() {
    let server = TestServer::start(|_: &common::Recorded| Reply::status(302, "", &[("location", "/mcp")])).await;
    let (sender, _receiver, _info) = transport(&server.url, |c| c);
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server sent an invalid message: POST {}: was redirected more than 10 times",
            server.url
        )
    );
    assert_eq!(server.requests().len(), 11);
}
