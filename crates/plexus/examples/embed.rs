//! A host that embeds plexus: every config scope (the plexus home, the working directory's
//! project), the servers waited for, the tool pool's names printed, and the tool named on the
//! command line called with the JSON arguments after it.
//!
//! `cargo run --example embed -p plexus -- mcp__demo__echo '{"text": "hi"}'`

use std::time::Duration;

use plexus::{Hub, HubOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hub = Hub::start(HubOptions::from_process(None)?).await?;
    hub.wait_ready(Duration::from_secs(30)).await?;
    for tool in &hub.tool_pool().await.entries {
        println!("{}", tool.name);
    }
    let mut args = std::env::args().skip(1);
    if let Some(name) = args.next() {
        let arguments: serde_json::Value = serde_json::from_str(&args.next().unwrap_or_else(|| "{}".into()))?;
        let result = hub.call(&name, arguments).await?;
        println!("{}", serde_json::to_string(&result.content)?);
    }
    hub.shutdown().await;
    Ok(())
}
