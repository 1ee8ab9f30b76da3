//! Whole MCP sessions over the WebSocket transport, driven by the real session engine
//! (plexus-client), against plexus-testserver's `ws` mode run in-process with options from its
//! command line.

use std::time::Duration;

use clap::Parser;
use plexus_client::{Client, ClientError, ClientOptions};
use plexus_net::RemoteConfig as _;
use plexus_testserver::{Cli, Command, RemoteServer};
use plexus_transport::{ErrorClass, TransportError};
use plexus_ws::{WsConfig, WsTransport};
use serde_json::{Value, json};

/// A generous bound for anything a test waits for: a hang guard, never a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// Starts `plexus-testserver ws ARGS…` in-process.
async fn test_server(args: &[&str]) -> RemoteServer {
    let argv = ["plexus-testserver", "ws"].iter().chain(args);
    let Command::Ws(options) = Cli::parse_from(argv).command else {
        panic!("not the ws mode")
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    RemoteServer::ws(listener, options).unwrap()
}

async fn session(config: WsConfig) -> Result<Client, ClientError> {
    let connect = async {
        let transport = WsTransport::connect(config).await?;
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
async fn a_whole_session_over_websocket() {
    let server = test_server(&[]).await;
    let config = WsConfig::new(server.url())
        .ping_interval(Some(Duration::from_millis(50)))
        .dead_peer_timeout(Duration::from_millis(500));
    let client = session(config).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let (a, b) = tokio::join!(
        call(&client, "add", json!({"a": 20, "b": 22})),
        call(&client, "echo", json!({"text": "over ws"}))
    );
    assert_eq!(a.unwrap()["content"][0]["text"], "42");
    assert_eq!(b.unwrap()["content"][0]["text"], "over ws");
    // The keepalive pings are answered: a slow tool outlasts the dead-peer timeout.
    let slow = call(&client, "slow", json!({"ms": 1200})).await.unwrap();
    assert_eq!(slow["isError"], Value::Null, "{slow}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_that_does_not_echo_the_subprotocol_is_refused() {
    let server = test_server(&["--no-subprotocol"]).await;
    let error = WsTransport::connect(WsConfig::new(server.url())).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {}: the server accepted the WebSocket without the subprotocol `mcp` (its answer \
             has no Sec-WebSocket-Protocol header), so it does not speak MCP over WebSocket",
            server.url()
        )
    );
}

#[tokio::test]
async fn a_required_header_goes_on_the_upgrade() {
    let server = test_server(&["--require-header", "X-Claude-Code-Ide-Authorization: ide-token"]).await;
    let error = WsTransport::connect(WsConfig::new(server.url())).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::NeedsAuth);
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server needs authentication: the WebSocket upgrade of {} answered HTTP 401 (WWW-Authenticate: \
             Bearer realm=\"plexus-testserver\"): plexus-testserver: the request lacks the header \
             \"x-claude-code-ide-authorization\" with the required value (--require-header)",
            server.url()
        )
    );
    let config = WsConfig::new(server.url()).header("X-Claude-Code-Ide-Authorization", "ide-token");
    let client = session(config).await.unwrap();
    let result = call(&client, "echo", json!({"text": "ide"})).await.unwrap();
    assert_eq!(result["content"][0]["text"], "ide");
}

#[tokio::test]
async fn garbage_is_skipped_and_an_oversize_message_ends_the_connection() {
    let server = test_server(&[]).await;
    let client = session(WsConfig::new(server.url()).max_message_size(4096))
        .await
        .unwrap();
    let result = call(&client, "garbage", json!({})).await.unwrap();
    assert_eq!(result["content"][0]["text"], "a garbage line came before this response");
    let error = call(&client, "oversize", json!({"bytes": 100_000})).await.unwrap_err();
    let ClientError::Transport(error) = error else {
        panic!("{error:?}")
    };
    assert!(matches!(error, TransportError::Closed { .. }), "{error:?}");
    assert!(
        error.to_string().ends_with(
            "larger than the 4096-byte limit; it was discarded (raise the limit with PLEXUS_MAX_MESSAGE_SIZE)"
        ),
        "{error}"
    );
    tokio::time::timeout(HANG_GUARD, client.closed()).await.unwrap();
}

#[tokio::test]
async fn a_server_that_goes_away_ends_the_session_with_the_reason() {
    let server = test_server(&[]).await;
    let client = session(WsConfig::new(server.url())).await.unwrap();
    server.shutdown().await;
    tokio::time::timeout(HANG_GUARD, client.closed()).await.unwrap();
    let Some(ClientError::Transport(error)) = client.closed_reason() else {
        panic!("{:?}", client.closed_reason())
    };
    assert!(error.is_terminal(), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("the connection is closed: the server closed the"),
        "{error}"
    );
}

#[tokio::test]
async fn the_upgrade_goes_through_a_connect_tunnel_of_the_entrys_proxy() {
    let log = plexus_testserver::EventLogFile::new("ws-proxy");
    let proxy = plexus_testserver::ProxyServer::from_args(&["--require-auth=me:secret", &log.arg()])
        .await
        .unwrap();
    let server = test_server(&[]).await;
    let proxy_url = proxy.url().replace("http://", "http://me:secret@");
    let config = WsConfig::new(server.url()).proxy(plexus_net::http::ProxyChoice::Url(proxy_url));
    let client = session(config).await.unwrap();
    let result = call(&client, "echo", json!({"text": "tunnelled"})).await.unwrap();
    assert_eq!(result["content"][0]["text"], "tunnelled");
    client.close().await.unwrap();
    let authority = server
        .url()
        .trim_start_matches("ws://")
        .trim_end_matches("/mcp")
        .to_owned();
    let tunnels = log.matching(&json!({"event": "proxy", "method": "CONNECT", "target": authority}));
    assert_eq!(tunnels.len(), 1, "{tunnels:?}");
    assert_eq!(tunnels[0]["authorized"], true);
}
