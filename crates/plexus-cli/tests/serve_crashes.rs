//! A backend that keeps crashing through `plexus serve`: the pool stops it after 3 deaths within
//! a minute, and the gateway starts it again after `--crash-pause` (doubled each time), telling
//! its clients when, so that no backend stays off until the gateway restarts.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::gateway::RawGateway;
use support::{Workspace, demo};

/// A `tools/call` of `name` with id `id`.
fn call(id: u64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {"text": "hi"}}})
}

/// Whether `message` is the gateway's word that it starts a crashed server again later.
fn is_pause(message: &Value) -> bool {
    message["method"] == "notifications/message"
        && message["params"]["data"]
            .as_str()
            .is_some_and(|text| text.contains("plexus serve starts it again in"))
}

#[test]
fn a_backend_stopped_for_crashing_is_started_again_after_the_pause() {
    let ws = Workspace::new();
    // Dies right after answering each call.
    ws.write_servers(ws.user_file(), &json!({"flaky": demo(&["--crash-after", "1"])}));
    let mut gateway = RawGateway::start_with(&ws, &["--crash-pause", "1"]);
    gateway.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    gateway.next(|m| m["id"] == "init");
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Each call starts the server (on demand) and is answered, then the server dies, until the
    // pool's guard stops it (3 deaths within a minute); the gateway then says when it starts it
    // again. A call's answer and that message may come in either order.
    let stopped = "server \"flaky\" stopped 3 times within 60 s";
    let mut pause = None;
    let mut guard_tripped = false;
    for id in 1..=10 {
        gateway.send(&call(id, "mcp__flaky__echo"));
        loop {
            let message = gateway.next_within(Duration::from_secs(60), |m| m["id"] == id || is_pause(m));
            if is_pause(&message) {
                pause = Some(message);
                continue;
            }
            let text = message["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            guard_tripped = text.contains(stopped);
            // A call sent while the server is dying fails with its exit; that is a death too.
            let answered = text == "hi" || message["result"]["isError"] == true;
            assert!(guard_tripped || answered, "{message}");
            break;
        }
        if guard_tripped {
            break;
        }
    }
    assert!(guard_tripped, "the crash-loop guard never tripped");
    let pause = pause.unwrap_or_else(|| gateway.next_within(Duration::from_secs(60), is_pause));
    assert_eq!(
        (&pause["params"]["level"], &pause["params"]["logger"]),
        (&json!("warning"), &json!("flaky")),
        "{pause}"
    );
    assert_eq!(
        pause["params"]["data"],
        "server \"flaky\" crashed 3 times within 60 s; plexus serve starts it again in 1 s"
    );
    // After the pause it is back: listed, and its tool answers again.
    for id in 100..400 {
        gateway.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let listed = gateway.next_within(Duration::from_secs(60), |m| m["id"] == id);
        let tools = listed["result"]["tools"].as_array().unwrap();
        if tools.iter().any(|tool| tool["name"] == "mcp__flaky__echo") {
            break;
        }
        assert!(id < 399, "the server did not come back");
        std::thread::sleep(Duration::from_millis(100));
    }
    gateway.send(&call(1000, "mcp__flaky__echo"));
    let answer = gateway.next_within(Duration::from_secs(60), |m| m["id"] == 1000);
    assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    drop(gateway.stdin);
    assert!(gateway.child.wait().unwrap().success());
}
