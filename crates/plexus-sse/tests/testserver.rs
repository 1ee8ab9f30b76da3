//! Whole MCP sessions over the SSE transport, driven by the real session engine (plexus-client),
//! against plexus-testserver's `sse` mode run in-process with options from its command line.

mod support;

use clap::Parser;
use plexus_client::{Client, ClientError, ClientOptions};
use plexus_net::RemoteConfig as _;
use plexus_sse::{SseConfig, SseTransport};
use plexus_testserver::{Cli, Command, RemoteServer};
use plexus_transport::{ErrorClass, TransportError};
use serde_json::{Value, json};
use support::{Bystander, HANG_GUARD};

/// Starts `plexus-testserver sse ARGS…` in-process.
async fn test_server(args: &[&str]) -> RemoteServer {
    let argv = ["plexus-testserver", "sse"].iter().chain(args);
    let Command::Sse(options) = Cli::parse_from(argv).command else {
        panic!("not the sse mode")
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    RemoteServer::sse(listener, options).unwrap()
}

async fn session(config: SseConfig) -> Result<Client, ClientError> {
    let connect = async {
        let transport = SseTransport::connect(config).await?;
        Client::connect(Box::new(transport), ClientOptions::new("test")).await
    };
    tokio::time::timeout(HANG_GUARD, connect).await.expect("hang guard")
}

async fn call(client: &Client, tool: &str, arguments: Value) -> Result<Value, ClientError> {
    let arguments = arguments.as_object().cloned();
    let result = tokio::time::timeout(HANG_GUARD, client.call_tool(tool, arguments))
        .await
        .expect("hang guard")?;
    Ok(serde_json::to_value(result).unwrap())
}

#[tokio::test]
async fn a_whole_session_over_the_legacy_transport() {
    let server = test_server(&[]).await;
    let client = session(SseConfig::new(server.url())).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let result = call(&client, "echo", json!({"text": "over sse"})).await.unwrap();
    assert_eq!(result["content"][0]["text"], "over sse");
    // Concurrent calls share the stream and come back to their callers.
    let (a, b) = tokio::join!(
        call(&client, "add", json!({"a": 1, "b": 2})),
        call(&client, "echo", json!({"text": "second"}))
    );
    assert_eq!(a.unwrap()["content"][0]["text"], "3");
    assert_eq!(b.unwrap()["content"][0]["text"], "second");
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_endpoint_on_another_origin_is_refused() {
    let bystander = Bystander::new();
    let origin = format!("http://{}", bystander.addr);
    let server = test_server(&["--endpoint-origin", &origin]).await;
    let error = SseTransport::connect(SseConfig::new(server.url())).await.unwrap_err();
    let text = plexus_transport::error_chain(&error);
    assert!(
        text.starts_with(&format!(
            "could not connect to {}: the server's endpoint {origin}/messages?… is on {origin}, another origin than \
             its event stream (http://{})",
            server.url(),
            server.local_addr()
        )),
        "{text}"
    );
    assert!(!bystander.contacted());
}

#[tokio::test]
async fn a_required_header_is_sent_on_the_stream_and_on_every_post() {
    let server = test_server(&["--require-header", "X-Api-Key: k1"]).await;
    let error = SseTransport::connect(SseConfig::new(server.url())).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::NeedsAuth);
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server needs authentication: GET {} answered HTTP 401 (WWW-Authenticate: Bearer \
             realm=\"plexus-testserver\"): plexus-testserver: the request lacks the header \"x-api-key\" with the \
             required value (--require-header)",
            server.url()
        )
    );
    let client = session(SseConfig::new(server.url()).header("X-Api-Key", "k1"))
        .await
        .unwrap();
    let result = call(&client, "echo", json!({"text": "authorized"})).await.unwrap();
    assert_eq!(result["content"][0]["text"], "authorized");
}

#[tokio::test]
async fn oversize_and_garbage_events_are_skipped_and_the_session_goes_on() {
    let server = test_server(&[]).await;
    let client = session(SseConfig::new(server.url()).max_message_size(4096))
        .await
        .unwrap();
    let result = call(&client, "oversize", json!({"bytes": 100_000})).await.unwrap();
    assert_eq!(
        result["content"][0]["text"],
        "a 100000-byte line came before this response"
    );
    let result = call(&client, "garbage", json!({})).await.unwrap();
    assert_eq!(result["content"][0]["text"], "a garbage line came before this response");
    assert!(!client.is_closed());
}

#[tokio::test]
async fn the_stream_dropped_by_the_server_ends_the_session_with_the_reason() {
    // The stream ends a few events in: the session is up, and a call soon finds the stream gone.
    let server = test_server(&["--drop-sse-after", "3"]).await;
    let client = session(SseConfig::new(server.url())).await.unwrap();
    let _ = call(&client, "echo", json!({"text": "maybe the last"})).await;
    tokio::time::timeout(HANG_GUARD, client.closed()).await.unwrap();
    let Some(ClientError::Transport(error)) = client.closed_reason() else {
        panic!("{:?}", client.closed_reason())
    };
    assert!(matches!(error, TransportError::Closed { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the connection is closed: the server closed the event stream"
    );
    let error = call(&client, "echo", json!({"text": "too late"})).await.unwrap_err();
    assert!(
        matches!(error, ClientError::Transport(_) | ClientError::SessionClosed),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_stream_and_the_posts_go_through_the_entrys_proxy() {
    let log = plexus_testserver::EventLogFile::new("sse-proxy");
    let proxy = plexus_testserver::ProxyServer::from_args(&["--require-auth=me:secret", &log.arg()])
        .await
        .unwrap();
    let server = test_server(&[]).await;
    let proxy_url = proxy.url().replace("http://", "http://me:secret@");
    let config = SseConfig::new(server.url()).proxy(plexus_net::http::ProxyChoice::Url(proxy_url));
    let client = session(config).await.unwrap();
    let result = call(&client, "echo", json!({"text": "proxied"})).await.unwrap();
    assert_eq!(result["content"][0]["text"], "proxied");
    client.close().await.unwrap();
    // Plain http: the event stream's GET and every POST in absolute form, with the credentials.
    let gets = log.matching(&json!({"event": "proxy", "method": "GET", "target": server.url(), "authorized": true}));
    assert_eq!(gets.len(), 1, "{gets:?}");
    let posts = log.matching(&json!({"event": "proxy", "method": "POST", "authorized": true}));
    assert!(posts.len() >= 3, "initialize, initialized and the call: {posts:?}");
}
