//! Concurrent requests, progress, cancellation and the server's own requests to the client.

mod common;

use common::{Server, wait_for_event};
use serde_json::{Value, json};

fn tool_call(name: &str, arguments: Value) -> Value {
    let mut params = json!({"name": name});
    params["arguments"] = arguments;
    params
}

#[test]
fn a_slow_call_does_not_hold_up_a_quick_one_and_cancellation_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let mut server = Server::start(&["--event-log", log.to_str().unwrap()]);
    server.initialize();
    let slow = server.request("tools/call", tool_call("slow", json!({"ms": 60_000})));
    let echo = server.request("tools/call", tool_call("echo", json!({"text": "first"})));
    let reply = server.recv();
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": echo, "result": {"content": [{"type": "text", "text": "first"}]}})
    );
    server.notify(
        "notifications/cancelled",
        json!({"requestId": slow, "reason": "not needed"}),
    );
    let events = wait_for_event(&log, |e| e["method"] == "notifications/cancelled");
    let cancelled = events
        .iter()
        .find(|e| e["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(
        cancelled,
        &json!({"event": "notification", "method": "notifications/cancelled", "params": {"requestId": slow, "reason": "not needed"}})
    );
    // The cancelled call never answers; the session goes on.
    assert_eq!(server.result("ping", json!({})), json!({}));
    // End of input abandons whatever is still in flight and exits at once.
    let hang = server.request("tools/call", tool_call("hang", json!({})));
    let _ = server.request("tools/call", tool_call("slow", json!({"ms": 600_000})));
    server.close_stdin();
    assert_eq!(server.wait().code(), Some(0));
    server.assert_no_more_output();
    let kinds: Vec<Value> = common::events(&log).iter().map(|e| e["event"].clone()).collect();
    assert_eq!(
        kinds.iter().rev().take(2).collect::<Vec<_>>(),
        [&json!("exit"), &json!("stdin-closed")]
    );
    assert!(
        common::events(&log)
            .iter()
            .any(|e| e["event"] == "request" && e["id"] == hang && e["params"]["name"] == "hang")
    );
}

#[test]
fn slow_sends_progress_for_a_progress_token() {
    let mut server = Server::start(&[]);
    server.initialize();
    let id = server.request(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 40, "steps": 4}, "_meta": {"progressToken": "p-1"}}),
    );
    for step in 1..=4 {
        let progress = server.recv();
        assert_eq!(
            progress,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p-1", "progress": step, "total": 4, "message": format!("step {step} of 4")}})
        );
    }
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "slow: done after 40 ms"}]}})
    );
    // Integer tokens come back as integers.
    let id = server.request(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 0, "steps": 1}, "_meta": {"progressToken": 7}}),
    );
    assert_eq!(server.recv()["params"]["progressToken"], 7);
    assert_eq!(
        server.response(id)["result"]["content"][0]["text"],
        "slow: done after 0 ms"
    );
    let error = server.call(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 0}, "_meta": {"progressToken": 1.5}}),
    );
    assert_eq!(
        error["error"]["message"],
        "invalid params for tools/call: _meta.progressToken must be a string or an integer, not 1.5"
    );
}

#[test]
fn elicitation_round_trip_with_replies_out_of_order() {
    let mut server = Server::start(&[]);
    server.initialize_with("2025-11-25", json!({"elicitation": {}}));
    let call = server.request("tools/call", tool_call("elicit", json!({"message": "Who are you?"})));
    let request = server.recv();
    assert_eq!(
        request,
        json!({"jsonrpc": "2.0", "id": "s-1", "method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Who are you?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name", "description": "Your name"},
                    "confirm": {"type": "boolean", "title": "Confirm", "default": false},
                },
                "required": ["name"],
            },
        }})
    );
    // While the elicitation waits, other requests are answered.
    assert_eq!(server.tool_text("echo", json!({"text": "meanwhile"})), "meanwhile");
    server.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}\n",
    );
    let answer = server.response(call);
    assert_eq!(
        answer["result"],
        json!({"content": [{"type": "text", "text": r#"{"action":"accept","content":{"name":"Ada"}}"#}]})
    );

    // A client error becomes a tool error; ids keep counting.
    let call = server.request("tools/call", tool_call("elicit", json!({"message": "again?"})));
    assert_eq!(server.recv()["id"], "s-2");
    server.send(&json!({"jsonrpc": "2.0", "id": "s-2", "error": {"code": -32601, "message": "Method not found"}}));
    let answer = server.response(call);
    assert_eq!(
        answer["result"],
        json!({"content": [{"type": "text", "text": "the client answered elicitation/create with an error: Method not found (method not found, code -32601)"}], "isError": true})
    );
}

#[test]
fn elicitation_respects_the_era_the_capability_and_the_timeout() {
    let mut server = Server::start(&["--client-timeout-ms", "50"]);
    server.initialize_with("2025-06-18", json!({"elicitation": {}}));
    let call = server.request("tools/call", tool_call("elicit", json!({"message": "hm"})));
    let request = server.recv();
    assert!(
        request["params"].get("mode").is_none(),
        "2025-06-18 has no mode: {request}"
    );
    let answer = server.response(call);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "the client did not answer elicitation/create within 50 ms"
    );
    assert_eq!(answer["result"]["isError"], true);
    // A late answer is reported on stderr and changes nothing.
    server.send(&json!({"jsonrpc": "2.0", "id": "s-1", "result": {"action": "cancel"}}));
    assert_eq!(server.result("ping", json!({})), json!({}));
    common::wait_until("the late answer is reported", || {
        server
            .stderr_text()
            .contains("a response for request id \"s-1\" that is not waiting for one")
    });

    let mut server = Server::start(&[]);
    server.initialize();
    for (tool, capability) in [("elicit", "elicitation"), ("sample", "sampling"), ("roots", "roots")] {
        let answer = server.call_tool(tool, json!({"message": "x", "prompt": "x"}));
        assert_eq!(
            answer["result"]["content"][0]["text"],
            format!("the client did not declare the {capability} capability"),
            "{tool}"
        );
        assert_eq!(answer["result"]["isError"], true);
    }
    assert!(
        server.unsolicited.is_empty(),
        "nothing was sent to the client: {:?}",
        server.unsolicited
    );
}

#[test]
fn sampling_and_roots_round_trips() {
    let mut server = Server::start(&[]);
    server.initialize_with("2025-11-25", json!({"sampling": {}, "roots": {"listChanged": true}}));
    let call = server.request(
        "tools/call",
        tool_call("sample", json!({"prompt": "What is 6×7?", "maxTokens": 20})),
    );
    let request = server.recv();
    assert_eq!(
        request,
        json!({"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "What is 6×7?"}}],
            "maxTokens": 20,
            "_meta": {"progressToken": "sample-progress"},
        }})
    );
    server.send(&json!({"jsonrpc": "2.0", "id": "s-1", "result": {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}}));
    assert_eq!(
        server.response(call)["result"],
        json!({"content": [{"type": "text", "text": "42"}]})
    );

    let call = server.request("tools/call", tool_call("roots", json!({})));
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "id": "s-2", "method": "roots/list", "params": {}})
    );
    let roots = json!([{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]);
    server.send(&json!({"jsonrpc": "2.0", "id": "s-2", "result": {"roots": roots}}));
    let text = server.response(call)["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), roots);

    let call = server.request("tools/call", tool_call("roots", json!({})));
    server.recv();
    server.send(&json!({"jsonrpc": "2.0", "id": "s-3", "result": {"nothing": true}}));
    assert_eq!(
        server.response(call)["result"]["content"][0]["text"],
        "the client's roots/list result is invalid (missing field `roots` at line 1 column 16): {\"nothing\":true}"
    );
}
