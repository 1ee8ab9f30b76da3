//! `plexus serve` while its backends start: the first lists wait for the servers that start
//! within `--ready-grace`, not for the others, which join later with list changes; a call waits
//! for its own server only, never for another one still starting.

mod support;

use std::time::Duration;

use plexus::client::ServerNotification;
use serde_json::json;
use support::demo;
use support::gateway::{args, client_of as connect, names, stdio_entry, workspace};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_backend_joins_after_the_grace_period_with_list_changes() {
    let ws = workspace(&json!({
        "fast": demo(&[]),
        "slow": demo(&["--era", "legacy", "--delay", "initialize=8000"]),
    }));
    let client = connect(&stdio_entry(&ws, &["--ready-grace", "2"]), None).await;
    assert!(client.server().capabilities.tools.is_some());
    let mut notifications = client.subscribe();
    // The first lists hold the fast server's entries, not the slow one's.
    let slow = |name: &str| name.starts_with("mcp__slow__") || name.starts_with("plexus://slow/");
    let tools = client.list_tools().await.unwrap();
    assert!(names(&tools).contains(&"mcp__fast__echo"), "{:?}", names(&tools));
    assert!(!names(&tools).into_iter().any(slow), "{:?}", names(&tools));
    let prompts = client.list_prompts().await.unwrap();
    assert!(prompts.iter().any(|prompt| prompt.name == "mcp__fast__greeting"));
    assert!(!prompts.iter().any(|prompt| slow(&prompt.name)));
    let resources = client.list_resources().await.unwrap();
    assert!(
        resources
            .iter()
            .any(|r| r.uri == "plexus://fast/test://static/hello.txt")
    );
    assert!(!resources.iter().any(|r| slow(&r.uri)));
    // A call of the slow server's tool waits for that server, not longer.
    let echoed = client
        .call_tool("mcp__slow__echo", args(json!({"text": "late"})))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("late"));
    // Its joining changed every list, and the clients were told.
    let mut changed = std::collections::BTreeSet::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while changed.len() < 3 {
            match notifications.recv().await.unwrap() {
                ServerNotification::ToolsListChanged => changed.insert("tools"),
                ServerNotification::PromptsListChanged => changed.insert("prompts"),
                ServerNotification::ResourcesListChanged => changed.insert("resources"),
                _ => false,
            };
        }
    })
    .await
    .unwrap_or_else(|_| panic!("only {changed:?} changed"));
    assert!(names(&client.list_tools().await.unwrap()).contains(&"mcp__slow__echo"));
    assert!(
        client
            .list_prompts()
            .await
            .unwrap()
            .iter()
            .any(|prompt| prompt.name == "mcp__slow__greeting")
    );
    assert!(
        client
            .list_resources()
            .await
            .unwrap()
            .iter()
            .any(|r| r.uri == "plexus://slow/test://static/hello.txt")
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_for_its_own_server_not_for_one_that_never_answers() {
    // `stuck` does not answer `initialize` within the test, and its connect timeout (30 s)
    // outlasts the client's own timeout of 20 s. The gateway's `initialize` waits for the grace
    // period (2 s: what the backends offer decides the capabilities); after it, a call of a
    // `fast` tool waits for nothing else.
    let ws = workspace(&json!({
        "fast": demo(&[]),
        "stuck": demo(&["--era", "legacy", "--delay", "initialize=600000"]),
    }));
    let config = stdio_entry(&ws, &["--ready-grace", "2"]);
    let mut options = plexus::ClientOptions::new("impatient");
    options.request_timeout = Duration::from_secs(20);
    options.tool_timeout = Duration::from_secs(20);
    let client = plexus::DefaultConnector::new()
        .connect("gateway", &config, options)
        .await
        .unwrap();
    for round in 0..3 {
        let text = format!("round {round}");
        let echoed = client
            .call_tool("mcp__fast__echo", args(json!({"text": text})))
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(echoed.content[0].as_text(), Some(text.as_str()));
    }
    client.close().await.unwrap();
}
