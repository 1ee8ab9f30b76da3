//! The MCP surface over real pipes: initialize, every method, every ordinary tool, pagination.

mod common;

use common::Server;
use serde_json::{Value, json};

const BUILTIN_TOOLS: [&str; 20] = [
    "echo",
    "add",
    "large",
    "image",
    "slow",
    "trigger-list-changed",
    "update-resource",
    "elicit",
    "sample",
    "roots",
    "url-elicit",
    "log",
    "error",
    "fail",
    "crash",
    "hang",
    "garbage",
    "oversize",
    "drip",
    "stderr",
];

#[test]
fn initialize_answers_with_the_full_server_description() {
    let mut server = Server::start(&[]);
    let result = server.initialize();
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(
        result["serverInfo"],
        json!({"name": "plexus-testserver", "title": "plexus test server", "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(
        result["capabilities"],
        json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {},
        })
    );
    assert!(
        result["instructions"]
            .as_str()
            .unwrap()
            .starts_with("plexus-testserver is a test MCP server.")
    );
    assert_eq!(server.result("ping", json!({})), json!({}));
}

#[test]
fn initialize_negotiates_the_version() {
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut server = Server::start(&[]);
        assert_eq!(
            server.initialize_with(asked, json!({}))["protocolVersion"],
            answered,
            "asked {asked}"
        );
    }
    let mut server = Server::start(&["--protocol-version", "2024-11-05"]);
    assert_eq!(server.initialize()["protocolVersion"], "2024-11-05");
    let mut server = Server::start(&["--protocol-version", "banana"]);
    assert_eq!(server.initialize()["protocolVersion"], "banana");
}

#[test]
fn bad_params_and_unknown_methods_get_json_rpc_errors() {
    let mut server = Server::start(&[]);
    let error = server.error(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    );
    assert_eq!(error["code"], -32602);
    assert_eq!(
        error["message"],
        "invalid params for initialize: missing field `clientInfo` at line 1 column 50"
    );
    let error = server.error("resources/templates/lists", json!({}));
    assert_eq!(
        error,
        json!({"code": -32601, "message": "method not found: resources/templates/lists"})
    );
    let error = server.error("tools/call", json!({"arguments": {}}));
    assert_eq!(
        error,
        json!({"code": -32602, "message": "invalid params for tools/call: missing field `name` at line 1 column 16"})
    );
    let error = server.error("tools/call", json!({"name": "nope"}));
    assert_eq!(error, json!({"code": -32602, "message": "unknown tool: nope"}));
    let error = server.call_tool("echo", json!({}))["error"].clone();
    assert_eq!(
        error,
        json!({"code": -32602, "message": "invalid arguments for tool echo: missing field `text` at line 1 column 2"})
    );
    let error = server.call_tool("echo", json!(["hi"]))["error"].clone();
    assert_eq!(
        error,
        json!({"code": -32602, "message": "invalid arguments for tool echo: the arguments must be a JSON object"})
    );
    let error = server.call_tool("slow", json!({"ms": 600_001}))["error"].clone();
    assert_eq!(
        error,
        json!({"code": -32602, "message": "invalid arguments for tool slow: ms is 600001, more than the limit 600000"})
    );
    let error = server.call_tool("oversize", json!({"bytes": 3}))["error"].clone();
    assert_eq!(
        error["message"],
        "invalid arguments for tool oversize: bytes is 3, less than the 116 bytes of the smallest JSON-RPC notification"
    );
    let error = server.error("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(error["code"], -32602);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid params for logging/setLevel: unknown variant `loud`"),
        "{error}"
    );
}

#[test]
fn undecodable_lines_get_errors_with_a_null_id_and_the_stream_goes_on() {
    let mut server = Server::start(&["--max-line-bytes", "200"]);
    server.send_raw(b"this is not json\n");
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "the message is not valid JSON: expected ident at line 1 column 2"}})
    );
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(300)
    );
    server.send_raw(format!("{big}\n").as_bytes());
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": format!("a message of {} bytes is larger than the 200-byte limit", big.len())}})
    );
    server.send_raw(b"[1,2]\n");
    assert_eq!(server.recv()["error"]["code"], -32600);
    assert_eq!(server.result("ping", json!({})), json!({}));
}

#[test]
fn tools_list_describes_every_tool() {
    let mut server = Server::start(&[]);
    server.initialize();
    let result = server.result("tools/list", json!({}));
    assert!(result.get("nextCursor").is_none());
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, BUILTIN_TOOLS);
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["title"].is_string() && tool["description"].is_string(), "{tool}");
    }
    let echo = &tools[0];
    assert_eq!(
        echo["inputSchema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );
    assert_eq!(
        echo["annotations"],
        json!({"title": "Echo", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(
        tools[1]["outputSchema"],
        json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]})
    );
    let crash = tools.iter().find(|t| t["name"] == "crash").unwrap();
    assert_eq!(crash["annotations"]["destructiveHint"], true);
}

#[test]
fn ordinary_tools_do_what_they_say() {
    let mut server = Server::start(&[]);
    server.initialize();
    let tricky = "line\nbreak \"quoted\" \\ tab\t ünïcødé 🦀 \u{0}";
    assert_eq!(
        server.call_tool("echo", json!({"text": tricky}))["result"],
        json!({"content": [{"type": "text", "text": tricky}]})
    );
    assert_eq!(
        server.call_tool("add", json!({"a": 2, "b": 40}))["result"],
        json!({"content": [{"type": "text", "text": "42"}], "structuredContent": {"sum": 42}})
    );
    assert_eq!(
        server.call_tool("add", json!({"a": 0.25, "b": -1}))["result"]["structuredContent"],
        json!({"sum": -0.75})
    );
    let large = server.tool_text("large", json!({"bytes": 1_000_003}));
    assert_eq!(large.len(), 1_000_003);
    assert!(large.starts_with("abcdefghijklmnopqrstuvwxyz0123456789abc"));
    let image = server.call_tool("image", json!({}))["result"].clone();
    assert_eq!(image["content"][0]["type"], "image");
    assert_eq!(image["content"][0]["mimeType"], "image/png");
    assert!(
        image["content"][0]["data"].as_str().unwrap().starts_with("iVBORw0KGgo"),
        "the PNG signature, base64-encoded"
    );
    assert_eq!(image["content"][1]["type"], "text");
    assert_eq!(
        server.call_tool("error", json!({}))["result"],
        json!({"content": [{"type": "text", "text": "the error tool failed as asked"}], "isError": true})
    );
    assert_eq!(
        server.call_tool("fail", json!({}))["error"],
        json!({"code": -32603, "message": "the fail tool answers with a JSON-RPC error as asked"})
    );
    assert_eq!(
        server.tool_text("slow", json!({"ms": 1, "steps": 3})),
        "slow: done after 1 ms"
    );
    assert!(
        server.unsolicited.is_empty(),
        "no progress without a progress token: {:?}",
        server.unsolicited
    );
}

#[test]
fn trigger_list_changed_adds_a_callable_tool_and_notifies() {
    let mut server = Server::start(&[]);
    server.initialize();
    assert_eq!(
        server.tool_text("trigger-list-changed", json!({})),
        "added tool dynamic-1 and sent notifications/tools/list_changed"
    );
    assert_eq!(
        server.unsolicited,
        vec![json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]
    );
    let tools = server.result("tools/list", json!({}))["tools"].clone();
    assert_eq!(tools.as_array().unwrap().last().unwrap()["name"], "dynamic-1");
    assert_eq!(server.tool_text("dynamic-1", json!({"k": [1, 2]})), r#"{"k":[1,2]}"#);
    assert_eq!(
        server.call_tool("dynamic-2", json!({}))["error"]["message"],
        "unknown tool: dynamic-2"
    );
}

#[test]
fn log_sends_messages_filtered_by_set_level() {
    let mut server = Server::start(&[]);
    server.initialize();
    assert_eq!(
        server.tool_text("log", json!({"level": "info", "message": "hello"})),
        "sent notifications/message"
    );
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "plexus-testserver", "data": "hello"}});
    assert_eq!(server.unsolicited, vec![notification]);
    server.unsolicited.clear();
    assert_eq!(server.result("logging/setLevel", json!({"level": "error"})), json!({}));
    assert_eq!(
        server.tool_text("log", json!({"level": "warning", "message": "quiet"})),
        "not sent: below the level \"error\" set by logging/setLevel"
    );
    assert_eq!(
        server.tool_text("log", json!({"level": "critical", "message": "loud", "logger": "mine"})),
        "sent notifications/message"
    );
    assert_eq!(
        server.unsolicited,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "critical", "logger": "mine", "data": "loud"}})
        ]
    );
}

/// Follows every page of `method` and returns the entries under `key`.
fn walk(server: &mut Server, method: &str, key: &str) -> (Vec<Value>, usize) {
    let mut entries = Vec::new();
    let mut pages = 0;
    let mut params = json!({});
    loop {
        let result = server.result(method, params);
        pages += 1;
        entries.extend(result[key].as_array().unwrap().iter().cloned());
        match result.get("nextCursor") {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => return (entries, pages),
        }
        assert!(pages < 100, "{method} never ends");
    }
}

#[test]
fn pagination_walks_every_list() {
    let mut server = Server::start(&["--tools", "25", "--page-size", "10"]);
    server.initialize();
    let (tools, pages) = walk(&mut server, "tools/list", "tools");
    assert_eq!(pages, 5);
    let names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    let mut expected: Vec<String> = BUILTIN_TOOLS.iter().map(|n| (*n).to_owned()).collect();
    expected.extend((1..=25).map(|n| format!("tool-{n:04}")));
    assert_eq!(names, expected);
    assert_eq!(server.tool_text("tool-0025", json!({"x": 1})), r#"{"x":1}"#);
    assert_eq!(
        server.call_tool("tool-0026", json!({}))["error"]["message"],
        "unknown tool: tool-0026"
    );

    let mut server = Server::start(&["--page-size", "2"]);
    server.initialize();
    let (resources, pages) = walk(&mut server, "resources/list", "resources");
    assert_eq!((resources.len(), pages), (3, 2));
    let (templates, pages) = walk(&mut server, "resources/templates/list", "resourceTemplates");
    assert_eq!((templates.len(), pages), (2, 1));
    let (prompts, pages) = walk(&mut server, "prompts/list", "prompts");
    assert_eq!((prompts.len(), pages), (3, 2));
    let error = server.error("tools/list", json!({"cursor": "bogus"}));
    assert_eq!(
        error,
        json!({"code": -32602, "message": "invalid params for tools/list: unknown cursor \"bogus\""})
    );
}

#[test]
fn repeat_cursor_always_returns_the_same_next_cursor() {
    let mut server = Server::start(&["--page-size", "5", "--repeat-cursor"]);
    server.initialize();
    let first = server.result("tools/list", json!({}));
    let cursor = first["nextCursor"].clone();
    assert!(cursor.is_string());
    for _ in 0..3 {
        let again = server.result("tools/list", json!({"cursor": cursor}));
        assert_eq!(again["nextCursor"], cursor);
    }
    // Other lists are not affected.
    let (prompts, pages) = walk(&mut server, "prompts/list", "prompts");
    assert_eq!((prompts.len(), pages), (3, 1));
}

#[test]
fn resources_read_subscribe_and_update() {
    let mut server = Server::start(&[]);
    server.initialize();
    let resources = server.result("resources/list", json!({}))["resources"].clone();
    assert_eq!(resources[0]["uri"], "test://static/hello.txt");
    let hello = server.result("resources/read", json!({"uri": "test://static/hello.txt"}));
    assert_eq!(
        hello,
        json!({"contents": [{"uri": "test://static/hello.txt", "mimeType": "text/plain", "text": "Hello from plexus-testserver!\n"}]})
    );
    let data = server.result("resources/read", json!({"uri": "test://static/data.bin"}));
    assert_eq!(data["contents"][0]["blob"], "AAECAwQFBgcICQoLDA0ODw==");
    assert_eq!(
        server.result("resources/read", json!({"uri": "test://items/7"}))["contents"][0]["text"],
        "item 7"
    );
    let templates = server.result("resources/templates/list", json!({}))["resourceTemplates"].clone();
    assert_eq!(templates[0]["uriTemplate"], "test://items/{id}");
    let missing = server.error("resources/read", json!({"uri": "test://nope"}));
    assert_eq!(
        missing,
        json!({"code": -32002, "message": "resource not found: test://nope", "data": {"uri": "test://nope"}})
    );
    assert_eq!(
        server.error("resources/subscribe", json!({"uri": "test://nope"}))["code"],
        -32002
    );

    let uri = "test://static/readme.md";
    assert_eq!(
        server.tool_text("update-resource", json!({"uri": uri})),
        format!("the client is not subscribed to {uri}; nothing sent")
    );
    assert_eq!(server.result("resources/subscribe", json!({"uri": uri})), json!({}));
    assert_eq!(
        server.tool_text("update-resource", json!({"uri": uri})),
        format!("sent notifications/resources/updated for {uri}")
    );
    assert_eq!(
        server.unsolicited,
        vec![json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})]
    );
    assert_eq!(server.result("resources/unsubscribe", json!({"uri": uri})), json!({}));
    assert_eq!(
        server.tool_text("update-resource", json!({"uri": uri})),
        format!("the client is not subscribed to {uri}; nothing sent")
    );
}

#[test]
fn prompts_and_completions() {
    let mut server = Server::start(&[]);
    server.initialize();
    let prompts = server.result("prompts/list", json!({}))["prompts"].clone();
    assert_eq!(
        prompts
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["simple", "greeting", "code-review"]
    );
    let greeting = server.result("prompts/get", json!({"name": "greeting", "arguments": {"name": "Ada"}}));
    assert_eq!(
        greeting["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Hello, Ada! Please greet me back."}}])
    );
    let error = server.error("prompts/get", json!({"name": "greeting"}));
    assert_eq!(
        error,
        json!({"code": -32602, "message": "invalid params for prompts/get: prompt \"greeting\" needs the argument \"name\""})
    );
    assert_eq!(
        server.error("prompts/get", json!({"name": "nope"}))["message"],
        "invalid params for prompts/get: unknown prompt \"nope\""
    );

    let complete = |server: &mut Server, reference: Value, name: &str, value: &str| {
        server.result(
            "completion/complete",
            json!({"ref": reference, "argument": {"name": name, "value": value}}),
        )
    };
    let languages = complete(
        &mut server,
        json!({"type": "ref/prompt", "name": "code-review"}),
        "language",
        "py",
    );
    assert_eq!(
        languages,
        json!({"completion": {"values": ["python"], "total": 1, "hasMore": false}})
    );
    let ids = complete(
        &mut server,
        json!({"type": "ref/resource", "uri": "test://items/{id}"}),
        "id",
        "4",
    );
    assert_eq!(ids["completion"]["values"], json!(["42"]));
    let error = server.error(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}}),
    );
    assert_eq!(
        error["message"],
        "invalid params for completion/complete: unknown prompt \"nope\""
    );
}
