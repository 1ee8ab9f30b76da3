//! A host with an MCP server in its own process: the test server on an in-memory pipe, reached
//! through the Hub like any configured server; then a slow call, cancelled with a reason.
//!
//! `cargo run --example in_process -p plexus`

use std::time::Duration;

use plexus::in_process::DuplexStream;
use plexus::tools::CallOptions;
use plexus::{CancelHandle, Hub, HubOptions};
use serde_json::json;

/// Serves one connection with the test server.
async fn test_server(pipe: DuplexStream) {
    let (input, output) = tokio::io::split(pipe);
    let options = plexus_testserver::StdioOptions::default();
    if let Err(e) = plexus_testserver::serve_io(options, Box::pin(input), Box::pin(output)).await {
        eprintln!("the in-process server stopped: {e}");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // No config file: the in-process server is the only one.
    let dir = tempfile::tempdir()?;
    let discovery = plexus::config::DiscoveryOptions::new(dir.path().join("home"), dir.path()).with_managed_file(None);
    let hub = Hub::start(HubOptions::new(discovery).in_process("demo", test_server)).await?;
    hub.wait_ready(Duration::from_secs(10)).await?;
    let echoed = hub
        .call("mcp__demo__echo", json!({"text": "hello from inside"}))
        .await?;
    println!("{}", echoed.content[0].as_text().unwrap_or_default());

    // The user stops a call that would take a minute.
    let cancel = CancelHandle::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel("the user pressed stop");
    });
    let options = CallOptions::default().cancel_with(cancel);
    match hub.call_with("mcp__demo__slow", &json!({"ms": 60_000}), &options).await {
        Err(error) if error.is_cancelled() => println!("cancelled: {}", plexus::transport::error_chain(&error)),
        other => return Err(format!("the call was not cancelled: {other:?}").into()),
    }
    hub.shutdown().await;
    Ok(())
}
