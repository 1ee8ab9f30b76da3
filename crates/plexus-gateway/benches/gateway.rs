//! Gateway overhead: a stdio `tools/call` through the gateway against the same call made directly
//! to the backend, in one run, both with plexus's client and the same server (the test server).
//! The gateway runs as a process of its own serving over stdio, as `plexus serve` does: this
//! bench starts itself again in that role. Rounds alternate direct and gateway so that machine
//! noise hits both alike; figures are medians of the rounds' p50s. Target (issue 31): the
//! gateway adds at most 1.0× the direct call's p50.
//!
//! It also measures throughput with [`IN_FLIGHT`] calls at once, direct and through the gateway
//! (target, issue 31: at least 0.8× the direct throughput).
//!
//! Run through `cargo xtask bench` (release build; it sets `PLEXUS_TESTSERVER_BIN`).
//! `PLEXUS_BENCH_CPU=N` pins the run to CPU N.
#![allow(missing_docs)]
#![allow(clippy::cast_precision_loss)] // call counts far below 2^52

#[path = "../../plexus/benches/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use plexus::config::{DiscoveryOptions, ServerConfig};
use plexus::stdio::{StdioConfig, StdioTransport};
use plexus::{Client, ClientOptions, Hub, HubOptions};
use plexus_gateway::{Backends, Gateway, GatewayOptions};
use serde_json::{Map, Value, json};

const ROUNDS: usize = 5;
const CALLS: usize = 5_000;
const WARMUP: usize = 500;
/// Calls kept in flight at once for the throughput figure.
const IN_FLIGHT: usize = 32;
/// Calls made per throughput round.
const THROUGHPUT_CALLS: usize = 20_000;
/// Set in the environment of the copy of this bench that serves as the gateway.
const SERVE_VAR: &str = "PLEXUS_GATEWAY_BENCH_SERVE";

async fn connect(config: StdioConfig) -> Client {
    let transport = StdioTransport::spawn(config).expect("spawn the server");
    let mut options = ClientOptions::new("bench");
    options.initialize_timeout = Duration::from_secs(60);
    // Every hop in the `initialize` era (the gateway serves both), so that the direct call and
    // the gateway's call to its backend are alike.
    options.era = plexus::client::EraChoice::Initialize;
    Client::connect(Box::new(transport), options).await.expect("initialize")
}

/// The p50 of `CALLS` sequential calls of `tool`, in microseconds.
async fn p50(client: &Client, tool: &str) -> f64 {
    let arguments: Map<String, Value> = json!({"text": "hello"}).as_object().cloned().unwrap();
    for _ in 0..WARMUP {
        client.call_tool(tool, Some(arguments.clone())).await.unwrap();
    }
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        client.call_tool(tool, Some(arguments.clone())).await.unwrap();
        times.push(started.elapsed());
    }
    times.sort();
    support::percentile(&times, 0.5)
}

/// Calls per second with [`IN_FLIGHT`] calls of `tool` at once, over [`THROUGHPUT_CALLS`] calls.
async fn throughput(client: &Client, tool: &'static str) -> f64 {
    let arguments: Map<String, Value> = json!({"text": "hello"}).as_object().cloned().unwrap();
    let started = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (client, arguments) = (client.clone(), arguments.clone());
        callers.spawn(async move {
            for _ in 0..THROUGHPUT_CALLS / IN_FLIGHT {
                client.call_tool(tool, Some(arguments.clone())).await.unwrap();
            }
        });
    }
    while let Some(done) = callers.join_next().await {
        done.unwrap();
    }
    (THROUGHPUT_CALLS / IN_FLIGHT * IN_FLIGHT) as f64 / started.elapsed().as_secs_f64()
}

/// The gateway's role: a Hub whose one server is the test server, served on stdio, on one
/// thread as `plexus serve` over stdio runs.
fn serve(server: &str, home: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let entry =
            ServerConfig::from_json(&json!({"command": server, "args": ["stdio"], "protocolVersion": "2025-11-25"}))
                .unwrap()
                .0;
        let discovery = DiscoveryOptions::new(home, home).with_managed_file(None);
        let backends = Backends::new();
        let options = backends.hub_options(HubOptions::new(discovery).ad_hoc("demo", entry));
        let hub = Arc::new(Hub::start(options).await.unwrap());
        let gateway = Gateway::new(Arc::clone(&hub), backends, GatewayOptions::default());
        gateway.serve_stdio().await.unwrap();
        drop(gateway);
        hub.shutdown().await;
    });
}

fn main() {
    let server = support::server_path();
    if let Ok(home) = std::env::var(SERVE_VAR) {
        return serve(&server, &home);
    }
    let pin = support::pin_from_env();
    let home = tempfile::tempdir().unwrap();
    let myself = std::env::current_exe().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ((direct, gateway), (direct_rate, gateway_rate)) = runtime.block_on(async {
        let direct = connect(StdioConfig::new(&server).arg("stdio")).await;
        let gateway = connect(StdioConfig::new(&myself).env(SERVE_VAR, home.path())).await;
        let (mut direct_p50s, mut gateway_p50s) = (Vec::new(), Vec::new());
        let (mut direct_rates, mut gateway_rates) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            direct_p50s.push(p50(&direct, "echo").await);
            gateway_p50s.push(p50(&gateway, "mcp__demo__echo").await);
            direct_rates.push(throughput(&direct, "echo").await);
            gateway_rates.push(throughput(&gateway, "mcp__demo__echo").await);
        }
        let _ = direct.close().await;
        let _ = gateway.close().await;
        (
            (support::median(direct_p50s), support::median(gateway_p50s)),
            (support::median(direct_rates), support::median(gateway_rates)),
        )
    });
    let added = (gateway - direct) / direct;
    println!("gateway overhead ({pin}, stdio tools/call, {ROUNDS} rounds × {CALLS} calls, medians of p50):");
    println!("  direct    {direct:>8.1} µs");
    println!("  gateway   {gateway:>8.1} µs  ({:.2}× direct)", gateway / direct);
    println!(
        "  added     {:>8.1} µs  = {added:.2}× the direct p50 (target ≤ 1.00×: {})",
        gateway - direct,
        support::verdict(added <= 1.0)
    );
    println!("{IN_FLIGHT} calls in flight ({ROUNDS} rounds × {THROUGHPUT_CALLS} calls, medians):");
    println!("  direct    {direct_rate:>8.0} calls/s");
    println!(
        "  gateway   {gateway_rate:>8.0} calls/s  = {:.2}× direct (target ≥ 0.80×: {})",
        gateway_rate / direct_rate,
        support::verdict(gateway_rate / direct_rate >= 0.8)
    );
}
