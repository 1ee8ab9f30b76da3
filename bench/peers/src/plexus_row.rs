//! The plexus rows: a `plexus::Hub` as a host embeds it, its server(s) given as ad-hoc entries
//! (a host's own, started without approval) with the era pinned (no probe), calls made through
//! `Hub::call_with` by qualified name. Also the plexus-only workloads: RSS over many timed-out
//! requests and 50 servers started through the pool.

use std::sync::Arc;
use std::time::{Duration, Instant};

use plexus::config::{DiscoveryOptions, Environment, ServerConfig};
use plexus::tools::CallOptions;
use plexus::{Hub, HubOptions};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::BenchError;
use crate::role::{Counts, Era, Figures, Programs, Transport};

/// The echo tool, as the Hub names it (server `bench`).
pub(crate) const ECHO_TOOL: &str = "mcp__bench__echo";
/// The test server's `slow` tool, as the Hub names it.
const SLOW_TOOL: &str = "mcp__bench__slow";
/// How long a `slow` call would run if nothing stopped it: the test server's longest (10 min).
const SLOW_MS: u64 = 600_000;
/// How long a Hub may take to connect its servers.
const READY_BUDGET: Duration = Duration::from_secs(120);

/// A Hub and its temporary plexus home.
pub(crate) struct BenchHub {
    /// The Hub.
    pub(crate) hub: Arc<Hub>,
    _home: TempDir,
}

/// The config entry of the test server over `transport`, in `era`.
pub(crate) fn entry(programs: &Programs, transport: Transport, era: Era) -> Result<Value, BenchError> {
    Ok(match transport {
        Transport::Stdio => {
            json!({"command": programs.testserver, "args": ["stdio"], "protocolVersion": era.version()})
        }
        Transport::Http => json!({"type": "http", "url": crate::need_url(programs)?, "protocolVersion": era.version()}),
    })
}

/// Starts a Hub over `entries` (name, config entry) in a fresh home and waits until every one is
/// connected.
pub(crate) async fn start(entries: Vec<(String, Value)>) -> Result<BenchHub, BenchError> {
    let home = tempfile::tempdir().map_err(|source| BenchError::Io {
        what: "a temporary plexus home".to_owned(),
        source,
    })?;
    let discovery = DiscoveryOptions::new(home.path().join("home"), home.path())
        .with_managed_file(None)
        .with_env(Environment::from_fn(|_| None));
    let mut options = HubOptions::new(discovery);
    let count = entries.len();
    for (name, entry) in entries {
        let (config, _) =
            ServerConfig::from_json(&entry).map_err(|e| BenchError::Plexus(format!("entry {entry}: {e:?}")))?;
        options = options.ad_hoc(name, config);
    }
    let hub = Hub::start(options)
        .await
        .map_err(|e| BenchError::Plexus(format!("starting the Hub: {e}")))?;
    let ready = hub
        .wait_ready(READY_BUDGET)
        .await
        .map_err(|e| BenchError::Plexus(format!("waiting for the servers: {e}")))?;
    if ready.connected.len() != count {
        return Err(BenchError::Plexus(format!(
            "{} of {count} servers connected: {ready:?}",
            ready.connected.len()
        )));
    }
    Ok(BenchHub {
        hub: Arc::new(hub),
        _home: home,
    })
}

/// The `Calls` task of plexus (see [`crate::role::Task::Calls`]), on the runtime this runs on.
pub(crate) async fn calls(
    programs: &Programs,
    transport: Transport,
    era: Era,
    counts: Counts,
) -> Result<Figures, BenchError> {
    let started = Instant::now();
    let bench = start(vec![("bench".to_owned(), entry(programs, transport, era)?)]).await?;
    let tools = bench.hub.tool_pool().await;
    if tools.entries.iter().all(|tool| tool.name != ECHO_TOOL) {
        return Err(BenchError::Plexus(format!("the Hub's tool pool has no {ECHO_TOOL}")));
    }
    let connect = started.elapsed().as_secs_f64() * 1e3;
    let hub = Arc::clone(&bench.hub);
    let figures = crate::drive::drive(counts, connect, move || {
        let hub = Arc::clone(&hub);
        async move { echo(&hub).await }
    })
    .await?;
    bench.hub.shutdown().await;
    Ok(figures)
}

/// The echo call's arguments, `{"text":"hello"}`, serialized straight from this (a host's own
/// arguments type; `Hub::call_with` takes anything that serializes as an object).
#[derive(serde::Serialize)]
struct EchoArguments {
    text: &'static str,
}

async fn echo(hub: &Hub) -> Result<(), BenchError> {
    let result = hub
        .call_with(ECHO_TOOL, &EchoArguments { text: "hello" }, &CallOptions::default())
        .await
        .map_err(|e| BenchError::Plexus(format!("{ECHO_TOOL}: {e}")))?;
    if result.is_error {
        return Err(BenchError::Plexus(format!("{ECHO_TOOL} answered an error: {result:?}")));
    }
    Ok(())
}

/// The `Idle` task of plexus: `connections` stdio servers in one Hub, connected and idle.
pub(crate) async fn idle(programs: &Programs, connections: usize) -> Result<Figures, BenchError> {
    // A Hub with one server first, so that what the first one costs (the Hub's own state, the
    // statics, the runtime's growth) is not spread over the others: the figure is each further
    // connection's cost, in a second Hub.
    let first = start(vec![(
        "first".to_owned(),
        entry(programs, Transport::Stdio, Era::Initialize)?,
    )])
    .await?;
    let before = crate::support::memory::rss_kib();
    let entries = (0..connections)
        .map(|n| Ok((format!("idle{n}"), entry(programs, Transport::Stdio, Era::Initialize)?)))
        .collect::<Result<Vec<_>, BenchError>>()?;
    let bench = start(entries).await?;
    let grown = crate::support::memory::rss_kib().saturating_sub(before);
    bench.hub.shutdown().await;
    first.hub.shutdown().await;
    Ok(Figures::from([(
        "idle_kib".to_owned(),
        grown as f64 / connections as f64,
    )]))
}

/// The `TimedOut` task: one stdio server (stateless era), `calls` calls of `slow` with a timeout
/// of `timeout`, `in_flight` at once; RSS after the first tenth and at the end.
pub(crate) async fn timed_out(
    programs: &Programs,
    calls: usize,
    in_flight: usize,
    timeout: Duration,
) -> Result<Figures, BenchError> {
    let bench = start(vec![(
        "bench".to_owned(),
        entry(programs, Transport::Stdio, Era::Stateless)?,
    )])
    .await?;
    let tenth = calls / 10;
    run_timed_out(&bench.hub, tenth, in_flight, timeout).await?;
    let before = crate::support::memory::rss_kib();
    run_timed_out(&bench.hub, calls - tenth, in_flight, timeout).await?;
    let after = crate::support::memory::rss_kib();
    bench.hub.shutdown().await;
    Ok(Figures::from([
        ("rss_before_kib".to_owned(), before as f64),
        ("rss_after_kib".to_owned(), after as f64),
    ]))
}

async fn run_timed_out(hub: &Arc<Hub>, calls: usize, in_flight: usize, timeout: Duration) -> Result<(), BenchError> {
    let workers: Vec<_> = (0..in_flight)
        .map(|worker| {
            let hub = Arc::clone(hub);
            // The calls shared out; the first workers take one more.
            let mine = calls / in_flight + usize::from(worker < calls % in_flight);
            tokio::spawn(async move {
                let arguments = json!({"ms": SLOW_MS, "steps": 0});
                let options = CallOptions {
                    timeout: Some(timeout),
                    ..CallOptions::default()
                };
                for _ in 0..mine {
                    match hub.call_with(SLOW_TOOL, &arguments, &options).await {
                        Err(error) if error.is_timeout() => {}
                        other => {
                            return Err(BenchError::Plexus(format!(
                                "{SLOW_TOOL} with a {timeout:?} timeout did not time out: {other:?}"
                            )));
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker
            .await
            .map_err(|e| BenchError::Plexus(format!("a caller task: {e}")))??;
    }
    Ok(())
}

/// The `Pool` task: a Hub with `servers` stdio entries; the time from its start until every one
/// is connected.
pub(crate) async fn pool(programs: &Programs, servers: usize) -> Result<Figures, BenchError> {
    let entries = (0..servers)
        .map(|n| Ok((format!("s{n}"), entry(programs, Transport::Stdio, Era::Initialize)?)))
        .collect::<Result<Vec<_>, BenchError>>()?;
    let started = Instant::now();
    let bench = start(entries).await?;
    let took = started.elapsed().as_secs_f64() * 1e3;
    bench.hub.shutdown().await;
    Ok(Figures::from([("all_connected_ms".to_owned(), took)]))
}
