//! Change notifications in the stateless era, against the test server over stdio and Streamable
//! HTTP: the session's `subscriptions/listen` (what the server acknowledged, the notifications
//! reaching the session's subscribers, resource subscriptions as a filter, a subscription the
//! server ends listened again), and the pool's list cache keeping a list whose changes are
//! announced past its `ttlMs` while refetching one whose changes are not.

use std::time::Duration;

use plexus::client::{EraChoice, ServerNotification};
use plexus::protocol::ProtocolVersion;
use plexus::{Client, ClientOptions};
use plexus_testserver::RemoteServer;
use plexus_testserver::child_test::testserver_binary;
use serde_json::{Value, json};
use support::{HANG_GUARD, hub_with_entry};

mod support;

/// A stateless client of the test server over stdio with `args`.
async fn stdio_client(args: &[&str]) -> Client {
    let mut config = plexus::stdio::StdioConfig::new(testserver_binary()).arg("stdio");
    for arg in args {
        config = config.arg(*arg);
    }
    let transport = plexus::stdio::StdioTransport::spawn(config).unwrap();
    Client::connect(Box::new(transport), stateless()).await.unwrap()
}

fn stateless() -> ClientOptions {
    let mut options = ClientOptions::new("demo");
    options.era = EraChoice::Stateless(ProtocolVersion::V2026_07_28);
    options
}

/// Waits until the server acknowledged the session's subscription; what it granted.
async fn acknowledged(client: &Client) -> plexus::protocol::SubscriptionFilter {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            if let Some(granted) = client.change_notifications() {
                return granted;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the subscription was acknowledged")
}

/// The next notification matching `wanted`.
async fn next(
    notifications: &mut tokio::sync::broadcast::Receiver<ServerNotification>,
    wanted: impl Fn(&ServerNotification) -> bool,
) -> ServerNotification {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let notification = notifications.recv().await.expect("the session is open");
            if wanted(&notification) {
                return notification;
            }
        }
    })
    .await
    .expect("the notification arrived")
}

async fn call(client: &Client, tool: &str, arguments: Value) {
    let result = client.call_tool(tool, arguments.as_object().cloned()).await.unwrap();
    assert!(!result.is_error(), "{result:?}");
}

#[tokio::test]
async fn the_session_listens_for_what_the_server_announces_and_its_subscribers_hear_it() {
    let client = stdio_client(&[]).await;
    let granted = acknowledged(&client).await;
    assert_eq!(
        (
            granted.tools_list_changed,
            granted.prompts_list_changed,
            granted.resources_list_changed
        ),
        (Some(true), Some(true), Some(true))
    );
    let mut notifications = client.subscribe();
    call(&client, "trigger-list-changed", json!({})).await;
    next(&mut notifications, |n| {
        matches!(n, ServerNotification::ToolsListChanged)
    })
    .await;
    call(&client, "trigger-list-changed", json!({"list": "prompts"})).await;
    next(&mut notifications, |n| {
        matches!(n, ServerNotification::PromptsListChanged)
    })
    .await;
    client.close().await.unwrap();

    // A server that honours less says so, and the session claims no more.
    let client = stdio_client(&["--listen-honours", "tools"]).await;
    let granted = acknowledged(&client).await;
    assert_eq!(
        (granted.tools_list_changed, granted.prompts_list_changed),
        (Some(true), None)
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_resource_subscription_is_part_of_the_filter_and_an_unknown_resource_is_refused() {
    let client = stdio_client(&[]).await;
    acknowledged(&client).await;
    let uri = "test://static/hello.txt";
    client.subscribe_resource(uri).await.unwrap();
    assert_eq!(
        client
            .change_notifications()
            .and_then(|granted| granted.resource_subscriptions),
        Some(vec![uri.to_owned()])
    );
    let mut notifications = client.subscribe();
    call(&client, "update-resource", json!({"uri": uri})).await;
    let updated = next(&mut notifications, |n| {
        matches!(n, ServerNotification::ResourceUpdated(_))
    })
    .await;
    let ServerNotification::ResourceUpdated(params) = updated else {
        unreachable!()
    };
    assert_eq!(params.uri, uri);
    let refused = client.subscribe_resource("test://nowhere").await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("did not grant the subscription to test://nowhere"),
        "{refused}"
    );
    client.unsubscribe_resource(uri).await.unwrap();
    assert_eq!(
        client
            .change_notifications()
            .and_then(|granted| granted.resource_subscriptions)
            .unwrap_or_default(),
        Vec::<String>::new()
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_subscription_the_server_ends_is_listened_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let client = stdio_client(&["--end-listen-after-ms", "200", "--event-log", log.to_str().unwrap()]).await;
    acknowledged(&client).await;
    // The server ends it after 200 ms; the session listens again after 1 s.
    let listens = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains(r#""event":"listen""#))
            .count()
    };
    tokio::time::timeout(HANG_GUARD, async {
        while listens() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a second subscription");
    client.close().await.unwrap();
}

#[tokio::test]
async fn over_http_the_listen_stream_carries_the_notifications() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let transport = plexus::http::HttpTransport::new(plexus::http::HttpConfig::new(server.url())).unwrap();
    let client = Client::connect(Box::new(transport), stateless()).await.unwrap();
    acknowledged(&client).await;
    let mut notifications = client.subscribe();
    call(&client, "trigger-list-changed", json!({})).await;
    next(&mut notifications, |n| {
        matches!(n, ServerNotification::ToolsListChanged)
    })
    .await;
    client.close().await.unwrap();
}

/// How many `tools/list` requests the server logged.
fn tool_lists(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(r#""event":"request""#) && line.contains(r#""method":"tools/list""#))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_keeps_a_list_whose_changes_are_announced_and_refetches_one_past_its_ttl() {
    for (honours, cached) in [("tools,prompts,resources,updates", true), ("prompts", false)] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.jsonl");
        let entry = json!({
            "command": testserver_binary(),
            "args": ["stdio", "--listen-honours", honours, "--event-log", log],
            "protocolVersion": "2026-07-28",
        });
        let hub = hub_with_entry(&dir, entry).await;
        let client = hub.pool().ensure_connected("demo").await.unwrap();
        acknowledged(&client).await;
        // The listing made before the acknowledgement is stale (`ttlMs: 0`): the first ask after
        // it lists again; then three more asks.
        let _ = hub.tool_pool().await;
        let before = tool_lists(&log);
        for _ in 0..3 {
            let _ = hub.tool_pool().await;
        }
        let asked = tool_lists(&log) - before;
        // The test server's lists say `ttlMs: 0`: stale at once unless their changes are announced.
        assert_eq!(asked, if cached { 0 } else { 3 }, "listen honours {honours}");
        hub.shutdown().await;
    }
}
