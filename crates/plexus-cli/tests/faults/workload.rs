//! One cell's scripted workload: a Hub with the faulty server and a healthy one (directly, or
//! both behind `plexus serve --http`), a good call, the call that meets the fault, one more
//! call, a healthy server called throughout, and the teardown.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plexus::config::{DiscoveryOptions, Environment};
use plexus::tools::CallOptions;
use plexus::{Hub, HubError, HubOptions};
use serde_json::{Value, json};

use crate::cells::{CALL_BOUND, Cell, Transport, Via};
use crate::leaks;
use crate::support::gateway::{HttpGateway, serve_http};
use crate::support::{PLEXUS, Workspace, events};

/// How long the Hub may take to settle its servers (the faulty one may never connect).
const READY_BOUND: Duration = Duration::from_secs(20);
/// How long the healthy server has to answer each call.
const HEALTHY_BOUND: Duration = Duration::from_secs(10);
/// The pause between two healthy calls.
const HEALTHY_PACE: Duration = Duration::from_millis(20);

/// What one call came to.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// `ok`, or the kind of error (see [`kind_of`]).
    pub kind: String,
    /// The error's whole text (or the result's first text).
    pub detail: String,
    /// How long the call took.
    pub took: Duration,
}

/// What the workload saw.
#[derive(Debug)]
pub struct Observed {
    /// The good call before the fault, if the cell makes one.
    pub warm_up: Option<CallOutcome>,
    /// The call that met the fault.
    pub trigger: CallOutcome,
    /// The call after it.
    pub after: CallOutcome,
    /// The faulty server's status in the Hub's pool afterwards (`gw`'s, through the gateway).
    pub state: String,
    /// Healthy calls answered, and those that failed (with why).
    pub healthy_ok: u64,
    pub healthy_failed: Vec<String>,
    /// Tool calls a server ran twice (tool and arguments), from their event logs.
    pub run_twice: Vec<String>,
    /// The `fault` events the faulty server logged (what it did, as it says).
    pub faults_logged: Vec<String>,
    /// The largest growth of the resident set seen during the cell, in bytes.
    pub rss_growth: u64,
    /// Tasks still alive on the runtime after the teardown.
    pub tasks_left: usize,
    /// How long the Hub's shutdown (and the gateway's end) took.
    pub teardown: Duration,
}

/// The files and processes of one cell.
struct Setup {
    dir: tempfile::TempDir,
    faulty_log: PathBuf,
    healthy_log: PathBuf,
    pidfile: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        Setup {
            faulty_log: dir.path().join("faulty-events.jsonl"),
            healthy_log: dir.path().join("healthy-events.jsonl"),
            pidfile: dir.path().join("grandchild.pid"),
            dir,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The pid of the grandchild a cell's server spawned, if it did.
pub fn grandchild_of(pidfile: &Path) -> Option<i32> {
    std::fs::read_to_string(pidfile).ok()?.trim().parse().ok()
}

/// Runs `cell` on a runtime of its own; the runtime is gone when this returns. Gives what was
/// observed and the grandchild's pid, if any.
pub fn run(cell: Cell) -> (Observed, Option<i32>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let setup = Setup::new();
    let observed = runtime.block_on(workload(cell, &setup));
    runtime.shutdown_timeout(Duration::from_secs(5));
    (observed, grandchild_of(&setup.pidfile))
}

/// The faulty server: a stdio entry, or a remote server running in this process.
struct Faulty {
    entry: Value,
    remote: Option<plexus_testserver::RemoteServer>,
}

async fn start_faulty(cell: Cell, setup: &Setup) -> Faulty {
    let pidfile = setup.pidfile.to_str().unwrap();
    let log = setup.faulty_log.to_str().unwrap();
    let (mode, era) = cell.transport.server_mode();
    let mut args: Vec<String> = era.iter().map(|arg| (*arg).to_owned()).collect();
    args.extend(cell.fault.server_args(cell.transport, pidfile));
    args.extend(["--event-log".to_owned(), log.to_owned()]);
    if cell.transport == Transport::Stdio {
        let mut argv = vec!["demo-server".to_owned()];
        argv.extend(args);
        return Faulty {
            entry: json!({"command": PLEXUS, "args": argv, "timeout": 10_000}),
            remote: None,
        };
    }
    if cell.fault == crate::cells::Fault::ExitAtStart {
        // A server that exited before it listened: nothing accepts on its port.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let scheme = if cell.transport == Transport::Ws { "ws" } else { "http" };
        let path = if cell.transport == Transport::Sse { "sse" } else { "mcp" };
        return Faulty {
            entry: json!({"type": cell.transport.kind(), "url": format!("{scheme}://127.0.0.1:{port}/{path}"), "timeout": 10_000}),
            remote: None,
        };
    }
    let borrowed: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = plexus_testserver::RemoteServer::from_args(mode, &borrowed)
        .await
        .unwrap();
    Faulty {
        entry: json!({"type": cell.transport.kind(), "url": server.url(), "timeout": 10_000}),
        remote: Some(server),
    }
}

fn healthy_entry(setup: &Setup) -> Value {
    json!({"command": PLEXUS, "args": ["demo-server", "--event-log", setup.healthy_log.to_str().unwrap()]})
}

/// Starts the Hub on `servers` (a `mcpServers` object), its home inside the cell's directory.
async fn start_hub(setup: &Setup, servers: &Value) -> Hub {
    let config = setup.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();
    let discovery = DiscoveryOptions::new(setup.path().join("home"), setup.path())
        .with_explicit_files(vec![config], true)
        .with_managed_file(None)
        .with_env(Environment::from_fn(|_| None));
    let hub = Hub::start(HubOptions::new(discovery)).await.unwrap();
    let _ = hub.wait_ready(READY_BOUND).await;
    hub
}

/// The qualified names the cell calls, found in the tool pool by origin.
struct Names {
    via: Via,
    by_origin: HashMap<(String, String), String>,
}

impl Names {
    async fn of(hub: &Hub, via: Via) -> Names {
        let pool = hub.tool_pool().await;
        let by_origin = pool
            .entries
            .iter()
            .map(|entry| ((entry.server.clone(), entry.tool.clone()), entry.name.clone()))
            .collect();
        Names { via, by_origin }
    }

    /// The names once the servers' `echo` tools are listed (the faulty one's only when it can
    /// start): through the gateway, a backend that connects after the gateway answered a list
    /// joins it later, which `list_changed` tells the Hub. At most [`READY_BOUND`].
    async fn settled(hub: &Hub, cell: Cell) -> Names {
        let deadline = Instant::now() + READY_BOUND;
        loop {
            let names = Names::of(hub, cell.via).await;
            let listed = |server: &str| names.lists(server, "echo");
            let faulty_starts = cell.fault != crate::cells::Fault::ExitAtStart;
            if (listed("healthy") && (listed("faulty") || !faulty_starts)) || Instant::now() >= deadline {
                return names;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Whether the pool lists `server`'s `tool`.
    fn lists(&self, server: &str, tool: &str) -> bool {
        self.by_origin.contains_key(&self.key(server, tool))
    }

    fn key(&self, server: &str, tool: &str) -> (String, String) {
        match self.via {
            Via::Hub => (server.to_owned(), tool.to_owned()),
            Via::Gateway => ("gw".to_owned(), format!("mcp__{server}__{tool}")),
        }
    }

    /// The qualified name of `server`'s `tool`, or the name it would have when the pool does
    /// not list it (a call of it is then an unknown tool).
    fn of_tool(&self, server: &str, tool: &str) -> String {
        let key = self.key(server, tool);
        self.by_origin
            .get(&key)
            .cloned()
            .unwrap_or_else(|| format!("mcp__{}__{}", key.0, key.1))
    }
}

async fn workload(cell: Cell, setup: &Setup) -> Observed {
    let baseline_rss = leaks::rss_bytes();
    let mut faulty = start_faulty(cell, setup).await;
    let mut gateway: Option<(HttpGateway, Workspace)> = None;
    let servers = match cell.via {
        Via::Hub => json!({"faulty": faulty.entry, "healthy": healthy_entry(setup)}),
        Via::Gateway => {
            let ws = Workspace::new();
            ws.write_servers(
                ws.user_file(),
                &json!({"faulty": faulty.entry, "healthy": healthy_entry(setup)}),
            );
            let (process, address) = serve_http(&ws, "127.0.0.1", &[], &[]);
            gateway = Some((process, ws));
            json!({"gw": {"type": "http", "url": format!("http://{address}/mcp"), "timeout": 20_000}})
        }
    };
    let hub = Arc::new(start_hub(setup, &servers).await);
    let names = Names::settled(&hub, cell).await;

    let peak_rss = Arc::new(AtomicU64::new(baseline_rss));
    let stop = Arc::new(AtomicBool::new(false));
    let healthy = tokio::spawn(healthy_loop(
        Arc::clone(&hub),
        names.of_tool("healthy", "echo"),
        Arc::clone(&stop),
        Arc::clone(&peak_rss),
    ));

    let warm_up = if cell.fault.warm_up() {
        Some(
            call(
                &hub,
                &names.of_tool("faulty", "echo"),
                &json!({"text": "warm-up"}),
                CALL_BOUND,
            )
            .await,
        )
    } else {
        None
    };
    let (tool, arguments, timeout) = cell.fault.trigger();
    let trigger = call(&hub, &names.of_tool("faulty", tool), &arguments, timeout).await;
    let after = call(
        &hub,
        &names.of_tool("faulty", "echo"),
        &json!({"text": "after"}),
        CALL_BOUND,
    )
    .await;

    stop.store(true, Ordering::Relaxed);
    let (healthy_ok, healthy_failed) = healthy.await.unwrap();
    let state_of = match cell.via {
        Via::Hub => "faulty",
        Via::Gateway => "gw",
    };
    let state = hub
        .pool()
        .state(state_of)
        .map_or_else(|| "absent".to_owned(), |state| state.status.to_string());

    let started = Instant::now();
    hub.shutdown().await;
    drop(hub);
    if let Some((process, _ws)) = gateway.take() {
        end_gateway(process).await;
    }
    if let Some(server) = faulty.remote.take() {
        server.shutdown().await;
    }
    let teardown = started.elapsed();
    let tasks_left = tasks_after_settling().await;

    let faults_logged = events(&setup.faulty_log)
        .into_iter()
        .filter(|event| event["event"] == "fault")
        .map(|event| event["fault"].as_str().unwrap_or("?").to_owned())
        .collect();
    let mut twice = run_twice(&setup.faulty_log);
    twice.extend(run_twice(&setup.healthy_log));
    Observed {
        warm_up,
        trigger,
        after,
        state,
        healthy_ok,
        healthy_failed,
        run_twice: twice,
        faults_logged,
        rss_growth: peak_rss.load(Ordering::Relaxed).saturating_sub(baseline_rss),
        tasks_left,
        teardown,
    }
}

/// Calls `name` within `timeout` (the Hub's own timeout), bounded again from outside so that a
/// hang shows as a failed cell, not a stuck one.
async fn call(hub: &Hub, name: &str, arguments: &Value, timeout: Duration) -> CallOutcome {
    let options = CallOptions {
        timeout: Some(timeout),
        ..CallOptions::default()
    };
    let started = Instant::now();
    let outcome = tokio::time::timeout(timeout + CALL_BOUND, hub.call_with(name, arguments, &options)).await;
    let took = started.elapsed();
    match outcome {
        Err(_) => CallOutcome {
            kind: "HUNG".to_owned(),
            detail: format!("no outcome within {:?}", timeout + CALL_BOUND),
            took,
        },
        Ok(Ok(result)) => CallOutcome {
            kind: if result.is_error { "tool-error" } else { "ok" }.to_owned(),
            detail: first_text(&result),
            took,
        },
        Ok(Err(error)) => CallOutcome {
            kind: kind_of(&error),
            detail: chain(&error),
            took,
        },
    }
}

fn first_text(result: &plexus::tools::ProcessedResult) -> String {
    result
        .content
        .first()
        .and_then(|block| serde_json::to_value(block).ok())
        .and_then(|block| block["text"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// An error and its sources, as one line.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The kind of a Hub error, in a word or two.
pub fn kind_of(error: &HubError) -> String {
    use plexus::transport::ErrorClass;
    if matches!(error, HubError::UnknownTool { .. }) {
        return "unknown-tool".to_owned();
    }
    if error.is_timeout() {
        return "timeout".to_owned();
    }
    if error.needs_auth() {
        return "needs-auth".to_owned();
    }
    if let Some(code) = error.rpc_code() {
        return format!("rpc {}", code.0);
    }
    if let Some(client) = error.client_error() {
        return match client {
            plexus::ClientError::Transport(plexus::transport::TransportError::Http { status, .. }) => {
                format!("http {status}")
            }
            plexus::ClientError::Transport(transport) => match transport.class() {
                ErrorClass::TerminalIo => "io-error",
                ErrorClass::Closed => "closed",
                ErrorClass::TooLarge => "too-large",
                ErrorClass::Protocol => "protocol-error",
                ErrorClass::Connect => "connect-error",
                ErrorClass::NeedsAuth => "needs-auth",
                ErrorClass::SessionExpired => "session-expired",
            }
            .to_owned(),
            plexus::ClientError::SessionClosed => "closed".to_owned(),
            other => format!("client-error ({})", variant(other)),
        };
    }
    if error.pool_error().is_some() {
        return "unavailable".to_owned();
    }
    format!("error ({})", variant(error))
}

/// The variant name of an error's `Debug` form.
fn variant(error: &dyn std::fmt::Debug) -> String {
    let debug = format!("{error:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Calls the healthy server's echo until told to stop; gives the answered count and the
/// failures. Samples the resident set as it goes.
async fn healthy_loop(
    hub: Arc<Hub>,
    name: String,
    stop: Arc<AtomicBool>,
    peak_rss: Arc<AtomicU64>,
) -> (u64, Vec<String>) {
    let (mut ok, mut failed) = (0_u64, Vec::new());
    let mut n = 0_u64;
    loop {
        n += 1;
        let text = format!("healthy-{n}");
        let outcome = call(&hub, &name, &json!({"text": text}), HEALTHY_BOUND).await;
        if outcome.kind == "ok" && outcome.detail == text {
            ok += 1;
        } else {
            failed.push(format!("{text}: {} ({})", outcome.kind, outcome.detail));
        }
        peak_rss.fetch_max(leaks::rss_bytes(), Ordering::Relaxed);
        if stop.load(Ordering::Relaxed) {
            return (ok, failed);
        }
        tokio::time::sleep(HEALTHY_PACE).await;
    }
}

/// Ends `plexus serve` as a service manager does (SIGTERM), killing it if it has not ended
/// within 5 s.
async fn end_gateway(mut gateway: HttpGateway) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gateway.0.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if gateway.0.try_wait().unwrap().is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("plexus serve did not end within 5 s of SIGTERM");
}

/// The runtime's tasks still alive once the teardown has had a moment (this one excluded).
async fn tasks_after_settling() -> usize {
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // The future `block_on` runs is not a task.
        let alive = metrics.num_alive_tasks();
        if alive == 0 || Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The tool calls the server of `log` ran more than once (the same tool with the same
/// arguments: every call of a cell has arguments of its own).
fn run_twice(log: &Path) -> Vec<String> {
    let mut seen: HashMap<String, u32> = HashMap::new();
    for event in events(log) {
        if event["event"] == "request" && event["method"] == "tools/call" {
            let key = format!("{} {}", event["params"]["name"], event["params"]["arguments"]);
            *seen.entry(key).or_default() += 1;
        }
    }
    let mut twice: Vec<String> = seen
        .into_iter()
        .filter(|(_, count)| *count > 1)
        .map(|(key, count)| format!("{key} ran {count} times"))
        .collect();
    twice.sort();
    twice
}
