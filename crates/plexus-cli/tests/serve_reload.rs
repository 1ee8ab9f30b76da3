//! `plexus serve` follows its config files: a server added to the user's settings joins and the
//! client gets list_changed, a call in flight on another server is not disturbed, an edit that
//! does not load is said on stderr and changes nothing, a removed server's tools go.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::gateway::{RawGateway, workspace};
use support::{Workspace, demo};

/// The tool names of a `tools/list` answer.
fn tool_names(answer: &Value) -> Vec<String> {
    let mut names: Vec<String> = answer["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

fn list(gateway: &mut RawGateway, id: u64) -> Vec<String> {
    gateway.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    tool_names(&gateway.next(|m| m["id"] == id))
}

/// Waits until the gateway's stderr (in `ws`'s `stderr.txt`) holds `text`; all of it.
fn stderr_with(ws: &Workspace, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let said = std::fs::read_to_string(ws.join("stderr.txt")).unwrap_or_default();
        if said.contains(text) {
            return said;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway never said {text:?}; it said:\n{said}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_gateway_follows_edits_of_its_config() {
    let ws = workspace(&json!({"one": demo(&[])}));
    let stderr = std::fs::File::create(ws.join("stderr.txt")).unwrap();
    let mut gateway = RawGateway::start_logging(&ws, &[], stderr.into());
    gateway.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    gateway.next(|m| m["id"] == "init");
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let before = list(&mut gateway, 1);
    assert!(before.contains(&"mcp__one__echo".to_owned()), "{before:?}");
    assert!(!before.iter().any(|name| name.starts_with("mcp__two__")));

    // A call in flight on `one` while `two` joins.
    gateway.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__one__slow", "arguments": {"ms": 1500}}}));
    std::thread::sleep(Duration::from_millis(200));
    ws.write_servers(ws.user_file(), &json!({"one": demo(&[]), "two": demo(&[])}));
    gateway.next(|m| m["method"] == "notifications/tools/list_changed");
    stderr_with(&ws, "plexus: the config changed: added two\n");
    let after = list(&mut gateway, 3);
    assert!(after.contains(&"mcp__two__echo".to_owned()), "{after:?}");
    let slow = gateway.next(|m| m["id"] == 2);
    assert_eq!(slow["result"]["isError"], json!(false), "{slow}");

    // A broken edit: said, and nothing changes.
    std::fs::write(ws.user_file(), "{\"mcpServers\": ").unwrap();
    let path = ws.user_file().display().to_string();
    stderr_with(
        &ws,
        &format!(
            "plexus: {path}:1:15: invalid JSON: EOF while parsing a value; nothing changed, the last good \
             config stays\n"
        ),
    );
    assert_eq!(list(&mut gateway, 4), after);
    gateway.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "mcp__two__echo", "arguments": {"text": "still here"}}}));
    let echoed = gateway.next(|m| m["id"] == 5);
    assert_eq!(echoed["result"]["content"][0]["text"], "still here", "{echoed}");

    // `two` removed: its tools go, and the client is told.
    ws.write_servers(ws.user_file(), &json!({"one": demo(&[])}));
    gateway.next(|m| m["method"] == "notifications/tools/list_changed");
    stderr_with(&ws, "plexus: the config changed: removed two\n");
    assert_eq!(list(&mut gateway, 6), before);

    drop(gateway.stdin);
    assert!(gateway.child.wait().unwrap().success());
}
