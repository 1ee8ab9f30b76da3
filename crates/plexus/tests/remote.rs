//! The facade's connector for the remote kinds, end to end against the test server on 127.0.0.1:
//! `http`, `sse` and `ws` entries, custom headers, the fallback from Streamable HTTP to legacy SSE,
//! and session expiry with a reconnect and one retry (by hand, as the pool will do it).

mod support;

use plexus::config::ServerConfig;
use plexus::transport::{ErrorClass, TransportError, error_chain};
use plexus::{ClientError, ClientOptions, ConnectError};
use serde_json::json;
use support::{HANG_GUARD, echo, entry, test_server};

async fn connect(config: &ServerConfig) -> Result<plexus::Connected, ConnectError> {
    tokio::time::timeout(
        HANG_GUARD,
        plexus::connect_detailed("remote", config, ClientOptions::new("remote")),
    )
    .await
    .expect("hang guard")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_remote_kind_connects_through_the_facade() {
    let http = test_server("http", &[]).await;
    let json_mode = test_server("http", &["--json-response"]).await;
    let sse = test_server("sse", &[]).await;
    let ws = test_server("ws", &[]).await;
    let cases = [
        json!({"type": "http", "url": http.url()}),
        json!({"type": "streamable-http", "url": json_mode.url()}),
        json!({"type": "sse", "url": sse.url()}),
        json!({"type": "ws", "url": ws.url()}),
    ];
    for case in cases {
        let connected = connect(&entry(&case)).await.unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(connected.fallback, None);
        let client = connected.client;
        assert!(
            client.list_tools().await.unwrap().iter().any(|t| t.name == "echo"),
            "{case}"
        );
        assert_eq!(echo(&client, "over the wire").await.unwrap(), "over the wire", "{case}");
        client.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_headers_reach_the_server_and_their_absence_is_needs_auth() {
    let server = test_server("http", &["--require-header", "X-Api-Key: sesame"]).await;
    let with = entry(&json!({"type": "http", "url": server.url(), "headers": {"X-Api-Key": "sesame"}}));
    let client = connect(&with).await.unwrap().client;
    assert_eq!(echo(&client, "let in").await.unwrap(), "let in");
    client.close().await.unwrap();
    let without = entry(&json!({"type": "http", "url": server.url()}));
    let error = connect(&without).await.unwrap_err();
    let Some(ClientError::Transport(transport)) = error.client_error() else {
        panic!("{error:?}")
    };
    assert_eq!(transport.class(), ErrorClass::NeedsAuth, "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_entry_for_a_legacy_sse_server_falls_back_and_says_so() {
    let server = test_server("http", &["--legacy-sse-at-same-url"]).await;
    let connected = connect(&entry(&json!({"type": "http", "url": server.url()})))
        .await
        .unwrap();
    assert_eq!(
        connected.fallback.as_deref(),
        Some("the server answered the Streamable HTTP initialize with HTTP 405; using legacy HTTP+SSE at the same URL")
    );
    assert_eq!(echo(&connected.client, "legacy").await.unwrap(), "legacy");
    connected.client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_status_that_is_not_a_legacy_sign_is_not_a_fallback() {
    let server = test_server("http", &["--http-status-on-initialize", "500"]).await;
    let error = connect(&entry(&json!({"type": "http", "url": server.url()})))
        .await
        .unwrap_err();
    assert!(
        error_chain(&error).starts_with("server \"remote\": the server answered HTTP 500 to "),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_fails_in_flight_calls_at_once_then_a_reconnect_and_one_retry_succeed() {
    // The server (of the `initialize` era: sessions are its) forgets the session after a few
    // requests.
    let server = test_server("http", &["--era", "legacy", "--expire-session-after", "6"]).await;
    let config = entry(&json!({"type": "http", "url": server.url()}));
    let client = connect(&config).await.unwrap().client;
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("hang", None).await })
    };
    let mut expired = None;
    for i in 0..10 {
        match echo(&client, &format!("call {i}")).await {
            Ok(text) => assert_eq!(text, format!("call {i}")),
            Err(error) => {
                expired = Some(error);
                break;
            }
        }
    }
    let error = expired.expect("the session expires within 10 calls");
    assert!(
        matches!(error, ClientError::Transport(TransportError::SessionExpired { .. })),
        "{error:?}"
    );
    assert_eq!(error.transport_class(), Some(ErrorClass::SessionExpired));
    // The call in flight fails at once with the same error, and the client reports itself closed.
    let hung = tokio::time::timeout(HANG_GUARD, in_flight)
        .await
        .expect("never hangs")
        .unwrap()
        .unwrap_err();
    assert_eq!(hung.transport_class(), Some(ErrorClass::SessionExpired), "{hung:?}");
    tokio::time::timeout(HANG_GUARD, client.closed())
        .await
        .expect("the client reports itself closed");
    // Its owner reconnects (a new session) and retries the call once.
    let fresh = connect(&config).await.unwrap().client;
    assert_eq!(echo(&fresh, "retried").await.unwrap(), "retried");
    fresh.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_server_that_never_names_its_endpoint_is_given_the_connect_budget() {
    // The event stream opens and then stays silent: the wait for the endpoint event is bounded by
    // the entry's `timeout`, like the rest of the connect.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", listener.local_addr().unwrap());
    let silent = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = [0; 4096];
        let _ = socket.read(&mut request).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        // Until the client hangs up.
        while matches!(socket.read(&mut request).await, Ok(n) if n > 0) {}
    });
    let error = connect(&entry(&json!({"type": "sse", "url": url, "timeout": 1000})))
        .await
        .unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "server \"remote\": could not connect to {url}: the server sent no endpoint event within 1s of opening \
             the event stream"
        )
    );
    tokio::time::timeout(HANG_GUARD, silent).await.unwrap().unwrap();
}
