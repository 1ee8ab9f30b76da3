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

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plexus::Client;
use plexus::http::{HttpConfig, HttpTransport};
use support::http_server::HttpServer;
use support::{cpu_per_call, era_cpu_verdict, median, percentile, pin_from_env, process_cpu, server_path, verdict};

mod support;
use plexus::net::RemoteConfig as _;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader as AsyncBufReader};
use tokio::net::TcpStream;

const ROUNDS: usize = 5;
const SEQUENTIAL_CALLS: usize = 5_000;
const WARMUP_CALLS: usize = 500;
const IN_FLIGHT: usize = 64;
const THROUGHPUT_CALLS: usize = 32_000;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

const ECHO: &str = r#"{"name":"echo","arguments":{"text":"hello"}}"#;

/// What the floor's requests carry: the session of the `initialize` era, or the envelope and the
/// headers of the stateless era.
#[derive(Clone)]
enum Wire {
    Session(String),
    Stateless,
}

/// The stateless era's envelope, as the floor sends it in every call.
const ENVELOPE: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"0"}}"#;

/// One keep-alive HTTP/1.1 connection that posts JSON-RPC bodies and reads `Content-Length` replies.
struct RawConnection {
    stream: AsyncBufReader<TcpStream>,
    host: String,
    path: String,
    session: Option<String>,
    stateless: bool,
    body: Vec<u8>,
}

impl RawConnection {
    async fn open_for(url: &str, wire: &Wire) -> RawConnection {
        match wire {
            Wire::Session(session) => RawConnection::open(url, Some(session.clone())).await,
            Wire::Stateless => {
                let mut connection = RawConnection::open(url, None).await;
                connection.stateless = true;
                connection
            }
        }
    }

    async fn open(url: &str, session: Option<String>) -> RawConnection {
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_at(rest.find('/').unwrap());
        let stream = TcpStream::connect(host).await.unwrap();
        stream.set_nodelay(true).unwrap();
        RawConnection {
            stream: AsyncBufReader::new(stream),
            host: host.to_owned(),
            path: path.to_owned(),
            session,
            stateless: false,
            body: Vec::new(),
        }
    }

    /// Posts one message and returns the response headers' session id, if any; the body stays in `self.body`.
    async fn post(&mut self, message: &str) -> Option<String> {
        let mut request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.host,
            message.len()
        );
        if let Some(session) = &self.session {
            let _ = write!(
                request,
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            );
        }
        if self.stateless {
            request.push_str("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n");
        }
        request.push_str("\r\n");
        request.push_str(message);
        self.stream.get_mut().write_all(request.as_bytes()).await.unwrap();
        let mut length = 0;
        let mut session = None;
        let mut line = String::new();
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if lower.starts_with("mcp-session-id:") {
                session = Some(header[header.find(':').unwrap() + 1..].trim().to_owned());
            }
        }
        self.body.resize(length, 0);
        self.stream.read_exact(&mut self.body).await.unwrap();
        session
    }

    async fn call_echo(&mut self) {
        // Ids are unique within the session, across every connection (the server refuses a
        // duplicate id in flight).
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let message = if self.stateless {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{ENVELOPE},"name":"echo","arguments":{{"text":"hello"}}}}}}"#
            )
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{ECHO}}}"#)
        };
        self.post(&message).await;
        assert!(
            self.body.starts_with(b"{") && memchr_result(&self.body),
            "unexpected reply: {}",
            String::from_utf8_lossy(&self.body)
        );
    }
}

fn memchr_result(body: &[u8]) -> bool {
    body.windows(8).any(|w| w == b"\"result\"")
}

/// Initializes a session with the raw client and returns its id.
async fn raw_session(url: &str) -> String {
    let mut connection = RawConnection::open(url, None).await;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#;
    let session = connection.post(init).await.expect("a session id");
    connection.session = Some(session.clone());
    connection
        .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    session
}

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
    let mut connection = RawConnection::open_for(url, wire).await;
    for _ in 0..WARMUP_CALLS {
        connection.call_echo().await;
    }
    let mut times = Vec::with_capacity(SEQUENTIAL_CALLS);
    let before = process_cpu();
    for _ in 0..SEQUENTIAL_CALLS {
        let start = Instant::now();
        connection.call_echo().await;
        times.push(start.elapsed());
    }
    let cpu = cpu_per_call(before, SEQUENTIAL_CALLS);
    let mut connections = Vec::new();
    for _ in 0..IN_FLIGHT {
        connections.push(RawConnection::open_for(url, wire).await);
    }
    let start = Instant::now();
    let workers: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            tokio::spawn(async move {
                for _ in 0..THROUGHPUT_CALLS / IN_FLIGHT {
                    connection.call_echo().await;
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
        let (client, legacy) = compare(&server.url, "current-thread", 1.5, false).await;
        client.close().await.unwrap();
        let (client, modern) = compare(&server.url, "current-thread", 1.5, true).await;
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
