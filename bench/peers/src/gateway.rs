//! The gateway rows: the floor's stdio client calling `echo` on the test server directly, and the
//! same client calling it through `plexus serve` (the release CLI serving one configured server
//! over stdio, as `mcp__bench__echo`), both in the `initialize` era, alone and with calls in
//! flight.

use std::process::Command;

use crate::BenchError;
use crate::role::{Counts, Era, Figures, Programs};
use crate::support::raw::{LEGACY_INITIALIZED, LEGACY_OPENING, RawClient};

/// The echo call through the gateway, which names the tool `mcp__<server>__<tool>` (its id is
/// added).
const GATEWAY_ECHO: &str = r#""method":"tools/call","params":{"name":"mcp__bench__echo","arguments":{"text":"hello"}}"#;

/// The `Gateway` task: the warm-up calls, the sequential ones (p50), as many with `in_flight` at
/// once.
pub(crate) fn calls(programs: &Programs, through_gateway: bool, counts: Counts) -> Result<Figures, BenchError> {
    let Counts {
        warmup,
        calls,
        in_flight,
    } = counts;
    let round = if through_gateway {
        let plexus = programs
            .plexus
            .as_deref()
            .ok_or_else(|| BenchError::Usage("the gateway rows need the plexus binary (--plexus PATH)".to_owned()))?;
        let home = tempfile::tempdir().map_err(|source| BenchError::Io {
            what: "a temporary plexus home".to_owned(),
            source,
        })?;
        let config = home.path().join("bench.json");
        let text = serde_json::json!({"mcpServers": {"bench": crate::plexus_row::entry(programs, crate::role::Transport::Stdio, Era::Initialize)?}});
        std::fs::write(&config, text.to_string()).map_err(|source| BenchError::Io {
            what: format!("writing {}", config.display()),
            source,
        })?;
        let mut command = Command::new(plexus);
        command
            .arg("--config")
            .arg(&config)
            .args(["--strict-config", "--quiet", "serve", "--no-watch"])
            .env("HOME", home.path())
            .env("PLEXUS_HOME", home.path().join(".plexus"));
        let mut client = RawClient::spawn(command, &[LEGACY_OPENING, LEGACY_INITIALIZED], GATEWAY_ECHO);
        client.round(warmup, calls, in_flight, calls)
    } else {
        let (mut client, _) = crate::floor::open_stdio(&programs.testserver, Era::Initialize);
        client.round(warmup, calls, in_flight, calls)
    };
    Ok(Figures::from([
        ("p50_us".to_owned(), round.p50),
        ("calls_per_s".to_owned(), round.throughput),
    ]))
}
