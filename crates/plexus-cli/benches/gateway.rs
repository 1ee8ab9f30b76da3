//! Gateway overhead: a stdio `tools/call` through `plexus serve` against the same call made
//! directly to the backend, in one run, both with plexus's client and the same server code (the
//! binary's own demo server). Rounds alternate direct and gateway so that machine noise hits both
//! alike; figures are medians of the rounds' p50s. Target: the gateway adds at most 1.5× the
//! direct call's p50.
//!
//! Run through `cargo xtask bench` (release build). `PLEXUS_BENCH_CPU=N` pins the run to CPU N.
#![allow(missing_docs)]
// Statistics over counts far below 2^52, and an index computed from a fraction in [0, 1].
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation
)]

use std::time::{Duration, Instant};

use plexus::stdio::{StdioConfig, StdioTransport};
use plexus::{Client, ClientOptions};
use serde_json::{Map, Value, json};

const ROUNDS: usize = 5;
const CALLS: usize = 5_000;
const WARMUP: usize = 500;
const PLEXUS: &str = env!("CARGO_BIN_EXE_plexus");

/// Pins this process (and what it starts) to `PLEXUS_BENCH_CPU`, if set.
fn pin_from_env() -> Option<usize> {
    let cpu: usize = std::env::var("PLEXUS_BENCH_CPU").ok()?.parse().ok()?;
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).ok()?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).ok()?;
    Some(cpu)
}

async fn connect(config: StdioConfig) -> Client {
    let transport = StdioTransport::spawn(config).expect("spawn the server");
    let mut options = ClientOptions::new("bench");
    options.initialize_timeout = Duration::from_secs(60);
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
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let pinned = pin_from_env();
    let home = tempfile::tempdir().unwrap();
    let config_file = home.path().join("servers.json");
    std::fs::write(
        &config_file,
        json!({"mcpServers": {"demo": {"command": PLEXUS, "args": ["demo-server"]}}}).to_string(),
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (direct, gateway) = runtime.block_on(async {
        let direct = connect(StdioConfig::new(PLEXUS).arg("demo-server")).await;
        let gateway = connect(
            StdioConfig::new(PLEXUS)
                .arg("serve")
                .arg("--strict-config")
                .arg("--config")
                .arg(config_file.to_str().unwrap())
                .env("PLEXUS_HOME", home.path().join("home").to_str().unwrap())
                .env("HOME", home.path().to_str().unwrap()),
        )
        .await;
        let (mut direct_p50s, mut gateway_p50s) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            direct_p50s.push(p50(&direct, "echo").await);
            gateway_p50s.push(p50(&gateway, "mcp__demo__echo").await);
        }
        let _ = direct.close().await;
        let _ = gateway.close().await;
        (median(direct_p50s), median(gateway_p50s))
    });
    let added = (gateway - direct) / direct;
    let pin = pinned.map_or_else(|| "unpinned".to_owned(), |cpu| format!("pinned to CPU {cpu}"));
    println!("gateway overhead ({pin}, stdio tools/call, {ROUNDS} rounds × {CALLS} calls, medians of p50):");
    println!("  direct    {direct:>8.1} µs");
    println!("  gateway   {gateway:>8.1} µs  ({:.2}× direct)", gateway / direct);
    println!(
        "  added     {:>8.1} µs  = {added:.2}× the direct p50 (target ≤ 1.50×: {})",
        gateway - direct,
        if added <= 1.5 { "met" } else { "MISSED" }
    );
}
