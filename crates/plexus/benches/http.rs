//! Streamable HTTP round trips: a raw floor against plexus, in one run, against the same test
//! server process (`plexus-testserver http --json-response`), on a multi-thread and on a
//! current-thread runtime. (Memory over many requests, with their timers armed and timing out,
//! is the soak's to judge: `benches/soak`.)
//!
//! Run through `cargo xtask bench`, which builds the test server and passes its path in
//! `PLEXUS_TESTSERVER_BIN`; `PLEXUS_BENCH_CPU=N` pins the run as in the stdio bench. The floor is a minimal keep-alive HTTP/1.1 client on raw sockets
//! posting the same bodies (one connection per request in flight). Figures are medians of rounds
//! that alternate floor and plexus.
#![allow(missing_docs)]
// Statistics over counts far below 2^52, and an index computed from a fraction in [0, 1].
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use plexus::Client;
use plexus::http::{HttpConfig, HttpTransport};
use support::http_server::HttpServer;
use support::raw_http::{self, Wire, raw_session};
use support::{cpu_per_call, era_cpu_verdict, median, percentile, pin_from_env, process_cpu, server_path, verdict};

mod support;
use plexus::net::RemoteConfig as _;

const ROUNDS: usize = 5;
const SEQUENTIAL_CALLS: usize = 5_000;
const WARMUP_CALLS: usize = 500;
const IN_FLIGHT: usize = 64;
const THROUGHPUT_CALLS: usize = 32_000;

#[derive(Clone, Copy)]
struct Round {
    p50: f64,
    throughput: f64,
    /// This process's CPU time per sequential call (µs): the client's own cost (the server is
    /// another process).
    cpu: Option<f64>,
}

fn p50(mut times: Vec<Duration>) -> f64 {
    times.sort_unstable();
    percentile(&times, 0.5)
}

async fn floor_round(url: &str, wire: &Wire) -> Round {
    let round = raw_http::floor_round(url, wire, WARMUP_CALLS, SEQUENTIAL_CALLS, IN_FLIGHT, THROUGHPUT_CALLS).await;
    Round {
        p50: round.p50,
        throughput: round.throughput,
        cpu: round.cpu,
    }
}

fn echo_arguments() -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({"text": "hello"}).as_object().cloned().unwrap()
}

async fn plexus_round(client: &Client) -> Round {
    let arguments = echo_arguments();
    for _ in 0..WARMUP_CALLS {
        client.call_tool("echo", Some(arguments.clone())).await.unwrap();
    }
    let mut times = Vec::with_capacity(SEQUENTIAL_CALLS);
    let before = process_cpu();
    for _ in 0..SEQUENTIAL_CALLS {
        let start = Instant::now();
        client.call_tool("echo", Some(arguments.clone())).await.unwrap();
        times.push(start.elapsed());
    }
    let cpu = cpu_per_call(before, SEQUENTIAL_CALLS);
    let start = Instant::now();
    let arguments = Arc::new(arguments);
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let client = client.clone();
            let arguments = Arc::clone(&arguments);
            tokio::spawn(async move {
                for _ in 0..THROUGHPUT_CALLS / IN_FLIGHT {
                    client.call_tool("echo", Some((*arguments).clone())).await.unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    Round {
        p50: p50(times),
        throughput: THROUGHPUT_CALLS as f64 / start.elapsed().as_secs_f64(),
        cpu,
    }
}

async fn connect(url: &str, stateless: bool) -> Client {
    let transport = HttpTransport::new(HttpConfig::new(url).name("bench")).expect("the transport");
    Client::connect(Box::new(transport), support::pinned_options(stateless))
        .await
        .expect("initialize")
}

fn main() {
    let pinning = pin_from_env();
    let server = HttpServer::start(&server_path(), &["--json-response"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "http (--json-response), {pinning}: {SEQUENTIAL_CALLS} sequential tools/call echo + {THROUGHPUT_CALLS} with {IN_FLIGHT} in flight, median of {ROUNDS} rounds"
        );
        let (client, legacy) = compare(&server.url, "multi-thread", 2.0, false).await;
        let (stateless, modern) = compare(&server.url, "multi-thread", 2.0, true).await;
        era_verdict("multi-thread", legacy, modern);
        stateless.close().await.unwrap();
        client.close().await.unwrap();
    });
    drop(runtime);
    // The same rounds on a current-thread runtime (floor and plexus alike).
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    current.block_on(async {
        let (client, legacy) = compare(&server.url, "current-thread", 1.8, false).await;
        client.close().await.unwrap();
        let (client, modern) = compare(&server.url, "current-thread", 1.8, true).await;
        client.close().await.unwrap();
        era_verdict("current-thread", legacy, modern);
    });
}

/// Rounds of the floor and of plexus, alternating, on the runtime this runs on (`label`), in the
/// `initialize` era or the stateless one; prints their medians against the p50 target
/// (`p50_target`× the floor). Gives plexus's client and its figures for [`era_verdict`].
async fn compare(url: &str, label: &str, p50_target: f64, stateless: bool) -> (Client, EraFigures) {
    let wire = if stateless {
        Wire::Stateless
    } else {
        Wire::Session(raw_session(url).await)
    };
    let era = if stateless { "stateless" } else { "initialize" };
    let client = connect(url, stateless).await;
    let (mut floor, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        floor.push(floor_round(url, &wire).await);
        ours.push(plexus_round(&client).await);
    }
    let floor_p50 = median(floor.iter().map(|r| r.p50).collect());
    let floor_tp = median(floor.iter().map(|r| r.throughput).collect());
    let our_p50 = median(ours.iter().map(|r| r.p50).collect());
    let our_tp = median(ours.iter().map(|r| r.throughput).collect());
    let cpu = |rounds: &[Round]| rounds.iter().map(|r| r.cpu).collect::<Option<Vec<f64>>>().map(median);
    let ratios = (our_p50 / floor_p50, our_tp / floor_tp);
    println!("floor ({label} rt, {era} era)  p50 {floor_p50:>7.1} µs   {IN_FLIGHT} in flight {floor_tp:>8.0} calls/s");
    println!(
        "plexus ({label} rt, {era} era) p50 {our_p50:>7.1} µs ({:.2}× floor)   {IN_FLIGHT} in flight {our_tp:>8.0} calls/s ({:.2}× floor)",
        ratios.0, ratios.1
    );
    println!(
        "targets ({label}, {era} era): p50 ≤ {p50_target}× floor: {:.2}× {}; throughput ≥ 0.7× floor: {:.2}× {}",
        ratios.0,
        verdict(ratios.0 <= p50_target),
        ratios.1,
        verdict(ratios.1 >= 0.7)
    );
    let figures = EraFigures {
        p50: ratios.0,
        throughput: ratios.1,
        cpu: cpu(&ours),
        floor_cpu: cpu(&floor),
    };
    (client, figures)
}

/// One era's figures on one runtime: plexus's p50 and throughput as ratios to the floor of the
/// era, and the CPU time per call (µs) of plexus and of the floor.
#[derive(Clone, Copy)]
struct EraFigures {
    p50: f64,
    throughput: f64,
    cpu: Option<f64>,
    floor_cpu: Option<f64>,
}

/// Prints the stateless era's ratios to its floor against the `initialize` era's, and the
/// verdict on plexus's own CPU time per call ([`era_cpu_verdict`]).
fn era_verdict(label: &str, legacy: EraFigures, stateless: EraFigures) {
    println!(
        "the stateless era against the initialize era ({label}, to each era's floor): p50 {:.2}× vs {:.2}×, throughput {:.2}× vs {:.2}×",
        stateless.p50, legacy.p50, stateless.throughput, legacy.throughput
    );
    era_cpu_verdict(
        label,
        (legacy.cpu, legacy.floor_cpu),
        (stateless.cpu, stateless.floor_cpu),
    );
}
