//! `plexus serve --deferred`, driven by plexus's own client over stdio with the test server
//! behind it: the list is the three meta-tools; `search_tools` finds `echo` by its exact and its
//! typo'd name, with its full definition; `describe_tools` gives its schema; `call_tool` runs it
//! through the gateway, once (the test server's event log says so).

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::gateway::{args, client_of as connect, names, stdio_entry, workspace};
use support::{demo, events};

/// Calls the meta-tool `name` with `arguments`; its structured content, checked to be its
/// text's JSON too, and whether it is an error.
async fn meta(client: &plexus::Client, name: &str, arguments: Value) -> (Value, bool) {
    let result = client.call_tool(name, args(arguments)).await.unwrap();
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    if !structured.is_null() {
        let text: Value = serde_json::from_str(result.content[0].as_text().unwrap()).unwrap();
        assert_eq!(text, structured, "the text is the structured content");
    }
    (structured, result.is_error())
}

/// The test server's `tools/call` requests for `tool`, from its event log.
fn calls_of(log: &Path, tool: &str) -> usize {
    events(log)
        .iter()
        .filter(|event| {
            event["event"] == "request" && event["method"] == "tools/call" && event["params"]["name"] == tool
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_tools_are_found_described_and_called_through_the_meta_tools() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.log");
    let ws = workspace(&json!({"demo": demo(&["--event-log", log.to_str().unwrap()])}));
    let client = connect(&stdio_entry(&ws, &["--deferred"]), None).await;
    let tools = client.list_tools().await.unwrap();
    assert_eq!(names(&tools), ["search_tools", "describe_tools", "call_tool"]);

    // Found by its exact name and with a typo, its full definition in the result.
    for (query, matched) in [
        ("mcp__demo__echo", "exact name"),
        ("echo", "exact name"),
        ("ecoh", "name, 1 typo"),
    ] {
        let (found, is_error) = meta(&client, "search_tools", json!({"query": query, "k": 3})).await;
        assert!(!is_error, "{found}");
        assert_eq!(found["hits"][0]["name"], "mcp__demo__echo", "{query}: {found}");
        assert_eq!(found["hits"][0]["match"], matched, "{query}");
        assert_eq!(
            found["hits"][0]["summary"],
            "Returns `text` unchanged as one text content."
        );
        assert!(found["hits"][0]["score"].is_number());
        assert_eq!(found["tools"][0]["name"], "mcp__demo__echo");
        assert_eq!(found["tools"][0]["inputSchema"]["required"], json!(["text"]));
        assert!(found["hits"].as_array().unwrap().len() <= 3);
        assert_eq!(
            found["hits"].as_array().unwrap().len(),
            found["tools"].as_array().unwrap().len()
        );
    }
    let (bad, is_error) = meta(&client, "search_tools", json!({"query": "echo", "k": 0})).await;
    assert!(is_error && bad.is_null());

    // Described as the gateway lists it without --deferred.
    let (described, is_error) = meta(
        &client,
        "describe_tools",
        json!({"names": ["mcp__demo__echo", "mcp__demo__nope"]}),
    )
    .await;
    assert!(!is_error, "{described}");
    let echo = &described["tools"][0];
    assert_eq!(echo["name"], "mcp__demo__echo");
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    assert_eq!(described["unknown"], json!(["mcp__demo__nope"]));

    // Called once, through the gateway's call path.
    assert_eq!(calls_of(&log, "echo"), 0);
    let result = client
        .call_tool(
            "call_tool",
            args(json!({"name": "mcp__demo__echo", "arguments": {"text": "deferred"}})),
        )
        .await
        .unwrap();
    assert!(!result.is_error());
    assert_eq!(result.content[0].as_text(), Some("deferred"));
    assert_eq!(calls_of(&log, "echo"), 1);
    // A tool that no server has is the gateway's error, as for a direct call.
    let error = client
        .call_tool("call_tool", args(json!({"name": "mcp__demo__nope"})))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no tool is named"), "{error}");
    assert_eq!(calls_of(&log, "echo"), 1);
    client.close().await.unwrap();
}
