//! The `plexus` binary against remote servers: the test server runs in this test process on
//! 127.0.0.1 (its library API), the binary connects to it over real sockets.

mod support;

use clap::Parser;
use plexus_testserver::{Cli, Command, RemoteServer};
use serde_json::{Value, json};
use support::Workspace;

/// Runs `plexus-testserver http ARGS…` on a runtime of its own, for as long as the guard lives.
struct Remote {
    server: Option<RemoteServer>,
    runtime: tokio::runtime::Runtime,
}

impl Remote {
    fn http(args: &[&str]) -> Remote {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let argv = ["plexus-testserver", "http"].into_iter().chain(args.iter().copied());
        let Command::Http(options) = Cli::parse_from(argv).command else {
            panic!("not the http mode")
        };
        let server = runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            RemoteServer::http(listener, options).unwrap()
        });
        Remote {
            server: Some(server),
            runtime,
        }
    }

    fn url(&self) -> String {
        self.server.as_ref().unwrap().url().to_string()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

fn servers_json(ws: &Workspace, servers: &Value) -> (Option<i32>, Value, String) {
    let path = ws.write_servers("servers.json", servers);
    let output = ws
        .command(ws.path(), &["--config", path.to_str().unwrap(), "--json", "servers"])
        .output()
        .unwrap();
    let rows = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code(), rows, String::from_utf8(output.stderr).unwrap())
}

#[test]
fn a_remote_server_is_listed_and_called_with_its_headers() {
    let remote = Remote::http(&["--require-header", "X-Api-Key: sesame"]);
    let ws = Workspace::new();
    let servers = json!({"api": {"type": "http", "url": remote.url(), "headers": {"X-Api-Key": "sesame"}}});
    let (code, rows, errors) = servers_json(&ws, &servers);
    assert_eq!(code, Some(0), "{errors}");
    assert_eq!(rows[0]["status"], "connected", "{rows}");
    assert_eq!(rows[0]["kind"], "http");
    let path = ws.write_servers("servers.json", &servers);
    let output = ws
        .command(
            ws.path(),
            &[
                "--config",
                path.to_str().unwrap(),
                "call",
                "mcp__api__echo",
                r#"{"text":"over http"}"#,
            ],
        )
        .output()
        .unwrap();
    assert_eq!(
        (output.status.code(), String::from_utf8(output.stdout).unwrap()),
        (Some(0), "over http\n".to_owned())
    );
}

#[test]
fn a_server_that_wants_credentials_is_needs_auth_with_exit_code_4() {
    let remote = Remote::http(&["--require-header", "X-Api-Key: sesame"]);
    let ws = Workspace::new();
    let servers = json!({"api": {"type": "http", "url": remote.url()}});
    let (code, rows, _) = servers_json(&ws, &servers);
    assert_eq!(code, Some(0));
    assert_eq!(rows[0]["status"], "needs-auth", "{rows}");
    assert!(
        rows[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("server \"api\": the server needs authentication: "),
        "{rows}"
    );
    let path = ws.write_servers("servers.json", &servers);
    let output = ws
        .command(ws.path(), &["--config", path.to_str().unwrap(), "tools"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn an_http_entry_for_a_legacy_server_says_it_fell_back() {
    let remote = Remote::http(&["--legacy-sse-at-same-url"]);
    let ws = Workspace::new();
    let (code, rows, errors) = servers_json(&ws, &json!({"old": {"type": "http", "url": remote.url()}}));
    assert_eq!(code, Some(0), "{errors}");
    assert_eq!(rows[0]["status"], "connected", "{rows}");
    assert_eq!(
        rows[0]["warnings"],
        json!([
            "the server answered the Streamable HTTP initialize with HTTP 405; using legacy HTTP+SSE at the same URL"
        ])
    );
}
