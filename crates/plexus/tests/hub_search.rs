//! The Hub's tool search against two test servers on 127.0.0.1: names in any spelling and with
//! typos, the segments kept from one search to the next, and a changed list searched again
//! with only its server's segment rebuilt.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use plexus::config::{DiscoveryOptions, Environment};
use plexus::tools::search::Segment;
use plexus::tools::{Match, SearchError};
use plexus::{Hub, HubOptions};
use plexus_testserver::RemoteServer;
use serde_json::{Map, json};

/// A Hub over the servers `one` and `two` at these URLs.
async fn hub(dir: &tempfile::TempDir, one: &str, two: &str) -> Hub {
    let config = dir.path().join("servers.json");
    let servers = json!({"mcpServers": {"one": {"type": "http", "url": one}, "two": {"type": "http", "url": two}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
        .with_explicit_files(vec![config], true)
        .with_managed_file(None)
        .with_env(Environment::from_fn(|_| None::<String>));
    let hub = Hub::start(HubOptions::new(discovery)).await.unwrap();
    hub.wait_ready(Duration::from_secs(30)).await.unwrap();
    hub
}

/// The segments of the Hub's index now, by server.
async fn segments(hub: &Hub) -> HashMap<String, Arc<Segment>> {
    let pool = hub.tool_pool().await;
    hub.search_index(&pool)
        .segments()
        .map(|segment| (segment.server().to_owned(), Arc::clone(segment)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_searches_its_pool_and_keeps_the_segments_of_unchanged_lists() {
    let (one, two) = (
        RemoteServer::from_args("http", &[]).await.unwrap(),
        RemoteServer::from_args("http", &[]).await.unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(&dir, one.url(), two.url()).await;
    for (query, matched) in [
        ("mcp__one__echo", Match::ExactName),
        ("one echo", Match::ExactName),
        ("mcp__one__ecoh", Match::NearName { typos: 1 }),
    ] {
        let hits = hub.search_tools(query, 3).await.unwrap();
        assert_eq!(hits[0].entry.name, "mcp__one__echo", "{query}");
        assert_eq!(hits[0].matched, matched, "{query}");
    }
    // Both servers' `echo` are exact names; the first by name.
    let hits = hub.search_tools("ECHO", 2).await.unwrap();
    let names: Vec<&str> = hits.iter().map(|hit| hit.entry.name.as_str()).collect();
    assert_eq!(names, ["mcp__one__echo", "mcp__two__echo"]);
    assert_eq!(
        hub.search_tools("echo", 0).await.unwrap_err(),
        SearchError::Count { k: 0 }
    );

    // Searching again builds nothing: the same segments.
    let before = segments(&hub).await;
    assert_eq!(before.len(), 2);
    let again = segments(&hub).await;
    assert!(
        before
            .iter()
            .all(|(server, segment)| Arc::ptr_eq(segment, &again[server]))
    );

    // Server `two` adds a tool: its segment alone is built anew, and the search finds the tool.
    let mut events = hub.subscribe();
    hub.call("mcp__two__trigger-list-changed", Map::new()).await.unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
            Ok(Ok(plexus::pool::PoolEvent::ListChanged { .. })) => break,
            Ok(Ok(_)) => {}
            other => panic!("no list change: {other:?}"),
        }
    }
    let hits = hub.search_tools("dynamic 1", 1).await.unwrap();
    assert_eq!(hits[0].entry.name, "mcp__two__dynamic-1");
    assert_eq!(hits[0].matched, Match::ExactName);
    let after = segments(&hub).await;
    assert!(Arc::ptr_eq(&before["one"], &after["one"]));
    assert!(!Arc::ptr_eq(&before["two"], &after["two"]));
    assert_eq!(after["two"].len(), before["two"].len() + 1);
    hub.shutdown().await;
    one.shutdown().await;
    two.shutdown().await;
}
