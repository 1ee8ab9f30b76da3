//! The remote modes run in-process through [`RemoteServer`], on a listener the test bound: the
//! same server as the binary's, stopped by `shutdown` or by a crash.

mod common;
mod wire;

use std::net::TcpStream;

use clap::Parser;
use plexus_jsonrpc::error_chain;
use plexus_testserver::{
    Cli, Command, HttpOptions, JwksProblem, JwtClientFile, OAuthOptions, OptionProblem, PathProblem, RemoteError,
    RemoteServer, SseOptions, WsOptions,
};
use serde_json::json;
use tokio::net::TcpListener;
use wire::{Conn, initialize_request, tool_call};

async fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// Runs blocking wire-client code off the runtime's threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_in_process_and_shuts_down() {
    let server = RemoteServer::http(listener().await, HttpOptions::default()).unwrap();
    let addr = server.local_addr();
    assert_eq!(server.url(), format!("http://{addr}/mcp"));
    let text = blocking(move || {
        let mut conn = Conn::open(addr);
        let head = wire::post(&mut conn, "/mcp", None, &initialize_request(1, json!({})));
        let session = head.header("mcp-session-id").unwrap().to_owned();
        conn.events(&head).rest();
        let head = wire::post(
            &mut conn,
            "/mcp",
            Some(&session),
            &tool_call(2, "echo", json!({"text": "in-process"})),
        );
        conn.events(&head).rest().last().unwrap().json()["result"]["content"][0]["text"].clone()
    })
    .await;
    assert_eq!(text, "in-process");
    server.shutdown().await;
    let refused = blocking(move || TcpStream::connect(addr).unwrap_err().kind()).await;
    assert_eq!(refused, std::io::ErrorKind::ConnectionRefused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_and_ws_serve_in_process_with_options_from_the_command_line() {
    let Command::Sse(options) = Cli::parse_from(["plexus-testserver", "sse", "--path", "/events"]).command else {
        panic!("not sse")
    };
    let server = RemoteServer::sse(listener().await, options).unwrap();
    assert_eq!(server.url(), format!("http://{}/events", server.local_addr()));
    let addr = server.local_addr();
    let endpoint = blocking(move || {
        let mut conn = Conn::open(addr);
        conn.send("GET", "/events", &[("Accept", "text/event-stream")], b"");
        let head = conn.head();
        conn.events(&head).expect().data
    })
    .await;
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");

    let server = RemoteServer::ws(listener().await, WsOptions::default()).unwrap();
    assert_eq!(server.url(), format!("ws://{}/mcp", server.local_addr()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_stops_an_in_process_server_instead_of_the_process() {
    let mut server = RemoteServer::http(listener().await, HttpOptions::default()).unwrap();
    let addr = server.local_addr();
    blocking(move || {
        let mut conn = Conn::open(addr);
        let head = wire::post(&mut conn, "/mcp", None, &initialize_request(1, json!({})));
        let session = head.header("mcp-session-id").unwrap().to_owned();
        conn.events(&head).rest();
        let mut conn = Conn::open(addr);
        wire::post(
            &mut conn,
            "/mcp",
            Some(&session),
            &tool_call(2, "crash", json!({"code": 3})),
        );
    })
    .await;
    server.stopped().await;
    let refused = blocking(move || TcpStream::connect(addr).unwrap_err().kind()).await;
    assert_eq!(refused, std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn invalid_options_are_named() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut options = HttpOptions::default();
        options.remote.path = Some("mcp".into());
        let error = RemoteServer::http(listener().await, options).unwrap_err();
        assert!(matches!(
            &error,
            RemoteError::InvalidOption {
                option: "path",
                problem: OptionProblem::Path(PathProblem::NotAbsolute { path }),
            } if path == "mcp"
        ));
        assert_eq!(
            error_chain(&error),
            "invalid option --path: \"mcp\" does not start with '/'"
        );
        let mut options = SseOptions::default();
        options.remote.path = Some("/messages".into());
        let error = RemoteServer::sse(listener().await, options).unwrap_err();
        assert_eq!(
            error_chain(&error),
            "invalid option --path: /messages is where clients POST their messages; choose another path"
        );
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("svc.jwks");
        std::fs::write(&keys, r#"{"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"}"#).unwrap();
        let options = HttpOptions {
            oauth: OAuthOptions {
                jwt_clients: vec![JwtClientFile {
                    id: "svc".into(),
                    file: keys.clone(),
                }],
                ..OAuthOptions::enabled()
            },
            ..HttpOptions::default()
        };
        let error = RemoteServer::http(listener().await, options).unwrap_err();
        assert!(matches!(
            &error,
            RemoteError::InvalidOption {
                option: "oauth-jwt-client",
                problem: OptionProblem::Keys { problem: JwksProblem::CoordinateLength { coordinate: "x", len: 3 }, .. },
            }
        ));
        assert_eq!(
            error_chain(&error),
            format!(
                "invalid option --oauth-jwt-client: {} holds no usable public keys: the JWK's x is 3 bytes, not 32",
                keys.display()
            )
        );
        let missing = dir.path().join("missing.pem");
        let mut options = HttpOptions::default();
        options.remote.tls_cert = Some(missing.clone());
        options.remote.tls_key = Some(missing.clone());
        let error = RemoteServer::http(listener().await, options).unwrap_err();
        assert!(matches!(
            &error,
            RemoteError::InvalidOption { option: "tls-cert", problem: OptionProblem::Pem { path, .. } } if *path == missing
        ));
        let chain = error_chain(&error);
        assert!(
            chain.starts_with(&format!("invalid option --tls-cert: cannot read the PEM file {}: ", missing.display())),
            "{chain}"
        );
    });
    let outside = runtime.block_on(listener());
    let error = RemoteServer::ws(outside, WsOptions::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "a remote server must be started within a tokio runtime"
    );
    // The binary refuses the same on its command line.
    let error = Cli::try_parse_from(["plexus-testserver", "http", "--path", "mcp"]).unwrap_err();
    assert!(error.to_string().contains("\"mcp\" does not start with '/'"), "{error}");
}
