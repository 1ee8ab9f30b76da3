//! The `plexus` binary against remote servers: the test server runs in this test process on
//! 127.0.0.1 (its library API), the binary connects to it over real sockets.

mod support;

use serde_json::{Value, json};
use support::Workspace;
use support::remote::Remote;

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
    assert_eq!(code, Some(4));
    assert_eq!(rows[0]["status"], "needs-auth", "{rows}");
    assert!(
        rows[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("the server needs authentication: "),
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
fn needs_auth_is_remembered_in_the_plexus_home() {
    let remote = Remote::http(&["--require-header", "X-Api-Key: sesame"]);
    let ws = Workspace::new();
    let servers = json!({"api": {"type": "http", "url": remote.url()}});
    let (_, rows, _) = servers_json(&ws, &servers);
    assert_eq!(rows[0]["status"], "needs-auth", "{rows}");
    assert!(ws.home().join("mcp-needs-auth-cache.json").is_file());
    // The server is gone: only the cache can still say that it needs authentication.
    drop(remote);
    let (code, rows, errors) = servers_json(&ws, &servers);
    assert_eq!(code, Some(4), "{errors}");
    assert_eq!(rows[0]["status"], "needs-auth", "{rows}");
    let error = rows[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("the server needs authentication: ")
            && error.contains("(remembered from an earlier connect; plexus tries again in "),
        "{error}"
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
            "server \"old\": the server answered the Streamable HTTP initialize with HTTP 405; using legacy HTTP+SSE \
             at the same URL"
        ])
    );
}

#[test]
fn a_stateless_http_server_tool_with_an_invalid_header_annotation_is_left_out_and_said_why() {
    let remote = Remote::http(&["--header-tools"]);
    let ws = Workspace::new();
    let servers = json!({"api": {"type": "http", "url": remote.url(), "protocolVersion": "2026-07-28"}});
    let path = ws.write_servers("servers.json", &servers);
    let output = ws
        .command(ws.path(), &["--config", path.to_str().unwrap(), "tools"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("mcp__api__headers_echo"), "{stdout}");
    assert!(!stdout.contains("bad_header_tool"), "{stdout}");
    assert!(
        stderr.contains(r#"plexus: server "api": tool "bad_header_tool" is left out: "#)
            && stderr.contains("My Region"),
        "{stderr}"
    );
    // Its arguments go as headers: the call shows what the server received.
    let output = ws
        .command(
            ws.path(),
            &[
                "--config",
                path.to_str().unwrap(),
                "call",
                "mcp__api__headers_echo",
                r#"{"region":"eu-west1","priority":3}"#,
            ],
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        (
            &seen["mcp-param-region"],
            &seen["mcp-param-priority"],
            &seen["mcp-name"]
        ),
        (&json!("eu-west1"), &json!("3"), &json!("headers_echo"))
    );
}
