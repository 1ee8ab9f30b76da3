//! The gateway rows: plexus's client (a `Client` over a stdio transport, as a host that embeds
//! plexus holds one) calling `echo` on the test server directly, and the same client calling it
//! through `plexus serve` (the release CLI serving one configured server over stdio, as
//! `mcp__bench__echo`), both in the `initialize` era, alone and with calls in flight. Both sides
//! use the same client, so the difference is what the gateway adds (a raw client would judge
//! the gateway's hop against a call that skips a client's own work).

use std::time::Duration;

use plexus::client::EraChoice;
use plexus::stdio::{StdioConfig, StdioTransport};
use plexus::{Client, ClientOptions};
use serde_json::{Map, Value, json};

use crate::BenchError;
use crate::role::{Counts, Era, Figures, Programs};

/// The `Gateway` task: the warm-up calls, the sequential ones (p50), as many with `in_flight` at
/// once, on the runtime this runs on.
pub(crate) async fn calls(programs: &Programs, through_gateway: bool, counts: Counts) -> Result<Figures, BenchError> {
    let home = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: "a temporary plexus home".to_owned(),
        source,
    })?;
    let (config, tool) = if through_gateway {
        let plexus = programs
            .plexus
            .as_deref()
            .ok_or_else(|| BenchError::Usage("the gateway rows need the plexus binary (--plexus PATH)".to_owned()))?;
        let file = home.path().join("bench.json");
        let text = json!({"mcpServers": {"bench": crate::plexus_row::entry(programs, crate::role::Transport::Stdio, Era::Initialize)?}});
        std::fs::write(&file, text.to_string()).map_err(|source| BenchError::Io {
            what: format!("writing {}", file.display()),
            source,
        })?;
        let config = StdioConfig::new(plexus)
            .arg("--config")
            .arg(file.display().to_string())
            .args(["--strict-config", "--quiet", "serve", "--no-watch"])
            .env("HOME", home.path().display().to_string())
            .env("PLEXUS_HOME", home.path().join(".plexus").display().to_string());
        (config, "mcp__bench__echo")
    } else {
        (StdioConfig::new(&programs.testserver).arg("stdio"), "echo")
    };
    let failed = |e: &dyn std::fmt::Display| BenchError::Plexus(format!("{tool}: {e}"));
    let transport = StdioTransport::spawn(config).map_err(|e| failed(&e))?;
    let mut options = ClientOptions::new("bench");
    options.initialize_timeout = Duration::from_secs(60);
    options.era = EraChoice::Initialize;
    let client = Client::connect(Box::new(transport), options)
        .await
        .map_err(|e| failed(&e))?;
    let arguments: Map<String, Value> = json!({"text": "hello"}).as_object().cloned().unwrap_or_default();
    let caller = client.clone();
    let figures = crate::drive::drive(counts, 0.0, move || {
        let (client, arguments) = (caller.clone(), arguments.clone());
        async move {
            let result = client
                .call_tool(tool, Some(arguments))
                .await
                .map_err(|e| BenchError::Plexus(format!("{tool}: {e}")))?;
            if result.is_error() {
                return Err(BenchError::Plexus(format!("{tool} answered an error: {result:?}")));
            }
            Ok(())
        }
    })
    .await;
    let _ = client.close().await;
    figures
}
