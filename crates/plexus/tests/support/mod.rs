//! What the facade's remote tests share: the in-process test server, entries as users write
//! them, and the `echo` tool.
#![allow(dead_code, unreachable_pub)] // each test binary uses a part.

use std::time::Duration;

use clap::Parser;
use plexus::ClientError;
use plexus::config::ServerConfig;
use plexus_testserver::{Cli, Command, RemoteServer};
use serde_json::{Value, json};

/// Long enough for anything on a busy machine; never the point of a test.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// Starts `plexus-testserver MODE ARGS…` in-process on an ephemeral port.
pub async fn test_server(mode: &str, args: &[&str]) -> RemoteServer {
    let argv = ["plexus-testserver", mode].into_iter().chain(args.iter().copied());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    match Cli::parse_from(argv).command {
        Command::Http(options) => RemoteServer::http(listener, options).unwrap(),
        Command::Sse(options) => RemoteServer::sse(listener, options).unwrap(),
        Command::Ws(options) => RemoteServer::ws(listener, options).unwrap(),
        Command::Stdio(_) => panic!("not a remote mode"),
    }
}

/// A config entry as a user writes it.
pub fn entry(value: &Value) -> ServerConfig {
    ServerConfig::from_json(value)
        .map(|(config, _warnings)| config)
        .unwrap()
}

/// Calls the `echo` tool and returns its text.
pub async fn echo(client: &plexus::Client, text: &str) -> Result<String, ClientError> {
    let result = client
        .call_tool("echo", json!({ "text": text }).as_object().cloned())
        .await?;
    Ok(serde_json::to_value(&result.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned())
}
