//! stdio round trips: a raw floor against plexus, in one run, against the same test server binary.
//!
//! Run through `cargo xtask bench`, which builds the test server and passes its path in
//! `PLEXUS_TESTSERVER_BIN`. Every figure is the median of several rounds; floor and plexus rounds
//! alternate so that machine noise hits both alike.
//!
//! With `PLEXUS_BENCH_CPU=N` the whole run (this process, its runtime threads and the servers it
//! starts) is pinned to CPU N, the method of the reference figures in the design notes: on a
//! virtual machine an unpinned pipe round trip is dominated by waking an idle CPU (tens of µs),
//! which hides the client's own cost.
#![allow(missing_docs)]
// Statistics over counts far below 2^52, and an index computed from a fraction in [0, 1].
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use plexus::stdio::{StdioConfig, StdioTransport};
use plexus::{Client, ClientOptions};
use support::{median, percentile, pin_from_env, server_path, verdict};

mod support;

const ROUNDS: usize = 5;
const SEQUENTIAL_CALLS: usize = 20_000;
const WARMUP_CALLS: usize = 2_000;
const IN_FLIGHT: usize = 64;
const THROUGHPUT_CALLS: usize = 64_000;

/// Latency figures of one round, in microseconds, and throughput in calls per second.
#[derive(Clone, Copy, Default)]
struct Round {
    p50: f64,
    p99: f64,
    throughput: f64,
}

/// The floor: a minimal client writing and reading lines on the child's pipes, blocking, on one
/// thread.
struct RawClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
}

impl RawClient {
    fn start(server: &str) -> RawClient {
        let mut child = Command::new(server)
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the test server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = RawClient {
            child,
            stdin,
            stdout,
            line: String::new(),
            next_id: 0,
        };
        raw.send(r#""method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}"#);
        raw.receive();
        writeln!(raw.stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
        raw
    }

    fn send(&mut self, body: &str) {
        self.next_id += 1;
        writeln!(self.stdin, r#"{{"jsonrpc":"2.0","id":{},{body}}}"#, self.next_id).unwrap();
    }

    fn send_echo(&mut self) {
        self.send(r#""method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}"#);
    }

    fn receive(&mut self) {
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        assert!(self.line.contains("\"result\""), "unexpected reply: {}", self.line);
    }

    fn round(&mut self) -> Round {
        for _ in 0..WARMUP_CALLS {
            self.send_echo();
            self.receive();
        }
        let mut times = Vec::with_capacity(SEQUENTIAL_CALLS);
        for _ in 0..SEQUENTIAL_CALLS {
            let start = Instant::now();
            self.send_echo();
            self.receive();
            times.push(start.elapsed());
        }
        times.sort_unstable();
        let start = Instant::now();
        for _ in 0..IN_FLIGHT {
            self.send_echo();
        }
        for done in 0..THROUGHPUT_CALLS {
            self.receive();
            if done + IN_FLIGHT < THROUGHPUT_CALLS {
                self.send_echo();
            }
        }
        let throughput = THROUGHPUT_CALLS as f64 / start.elapsed().as_secs_f64();
        Round {
            p50: percentile(&times, 0.5),
            p99: percentile(&times, 0.99),
            throughput,
        }
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    for _ in 0..SEQUENTIAL_CALLS {
        let start = Instant::now();
        client.call_tool("echo", Some(arguments.clone())).await.unwrap();
        times.push(start.elapsed());
    }
    times.sort_unstable();
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
    let throughput = THROUGHPUT_CALLS as f64 / start.elapsed().as_secs_f64();
    Round {
        p50: percentile(&times, 0.5),
        p99: percentile(&times, 0.99),
        throughput,
    }
}

async fn connect(server: &str) -> Client {
    let config = StdioConfig::new(server).arg("stdio");
    let transport = StdioTransport::spawn(config).expect("spawn the test server");
    Client::connect(Box::new(transport), ClientOptions::new("bench"))
        .await
        .expect("initialize")
}

fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
    let mut builder = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder.enable_all().build().unwrap()
}

fn summarize(label: &str, rounds: &[Round], floor: Option<&Summary>) -> Summary {
    let summary = Summary {
        p50: median(rounds.iter().map(|r| r.p50).collect()),
        p99: median(rounds.iter().map(|r| r.p99).collect()),
        throughput: median(rounds.iter().map(|r| r.throughput).collect()),
    };
    match floor {
        None => println!(
            "{label:<28} p50 {:>7.2} µs   p99 {:>7.2} µs   {IN_FLIGHT} in flight {:>9.0} calls/s",
            summary.p50, summary.p99, summary.throughput
        ),
        Some(f) => println!(
            "{label:<28} p50 {:>7.2} µs ({:.2}× floor)   p99 {:>7.2} µs ({:.2}× floor)   {IN_FLIGHT} in flight {:>9.0} calls/s ({:.2}× floor)",
            summary.p50,
            summary.p50 / f.p50,
            summary.p99,
            summary.p99 / f.p99,
            summary.throughput,
            summary.throughput / f.throughput
        ),
    }
    summary
}

struct Summary {
    p50: f64,
    p99: f64,
    throughput: f64,
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let pinning = pin_from_env();
    let server = server_path();
    println!(
        "stdio, {pinning}: {SEQUENTIAL_CALLS} sequential tools/call echo + {THROUGHPUT_CALLS} with {IN_FLIGHT} in flight, median of {ROUNDS} rounds"
    );
    let mut floor = Vec::new();
    let mut current = Vec::new();
    let mut multi = Vec::new();
    let current_rt = runtime(false);
    let multi_rt = runtime(true);
    let current_client = current_rt.block_on(connect(&server));
    let multi_client = multi_rt.block_on(connect(&server));
    let mut raw = RawClient::start(&server);
    for _ in 0..ROUNDS {
        floor.push(raw.round());
        current.push(current_rt.block_on(plexus_round(&current_client)));
        multi.push(multi_rt.block_on(plexus_round(&multi_client)));
    }
    let floor = summarize("floor (raw pipes)", &floor, None);
    let current = summarize("plexus (current-thread rt)", &current, Some(&floor));
    let multi = summarize("plexus (multi-thread rt)", &multi, Some(&floor));
    for (label, summary) in [("current-thread", &current), ("multi-thread", &multi)] {
        let p50 = summary.p50 / floor.p50;
        let throughput = summary.throughput / floor.throughput;
        println!(
            "targets, {label} runtime: p50 ≤ 1.5× floor: {p50:.2}× {}; throughput ≥ 0.35× floor: {throughput:.2}× {}",
            verdict(p50 <= 1.5),
            verdict(throughput >= 0.35)
        );
    }
    current_rt.block_on(async { current_client.close().await.unwrap() });
    multi_rt.block_on(async { multi_client.close().await.unwrap() });
}
