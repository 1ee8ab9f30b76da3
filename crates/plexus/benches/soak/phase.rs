//! One phase of the soak: its server (a stdio child the Hub starts, or the HTTP mode as a child
//! of the soak), a Hub over it, and many calls with a fixed number in flight, sampling memory
//! at every tenth of the calls.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plexus::config::{DiscoveryOptions, Environment, ServerConfig};
use plexus::{Hub, HubOptions};

use crate::calls::{self, Counts, ECHO_TOOL, Fate, Tally, Work};
use crate::support::http_server::HttpServer;
use crate::support::memory::{children_running, rss_kib_of};

/// The tool timeout of the soak's Hubs (`MCP_TOOL_TIMEOUT`, ms): a call with no timeout of its
/// own whose reply never comes ends within it, and is counted lost.
const HANG_GUARD_MS: &str = "10000";
/// How long a Hub may take to connect its server.
const READY_BUDGET: Duration = Duration::from_secs(30);

/// The protocol era a phase pins.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Era {
    /// The `initialize` handshake at 2025-11-25.
    Initialize,
    /// The stateless 2026-07-28 revision.
    Stateless,
}

impl Era {
    fn version(self) -> &'static str {
        match self {
            Era::Initialize => "2025-11-25",
            Era::Stateless => "2026-07-28",
        }
    }
}

/// The transport a phase's calls go over.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wire {
    /// `plexus-testserver stdio`, started by the Hub.
    Stdio,
    /// `plexus-testserver http`, started by the soak; the Hub connects over Streamable HTTP.
    Http,
}

/// What a phase does.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    pub(crate) name: &'static str,
    pub(crate) wire: Wire,
    pub(crate) era: Era,
    pub(crate) calls: u64,
    pub(crate) in_flight: usize,
    pub(crate) work: Work,
}

/// Memory when a tenth of the calls had ended: this process's RSS and the server's (KiB).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    pub(crate) rss: Option<u64>,
    pub(crate) server_rss: Option<u64>,
}

/// A Hub over the phase's server, and the server's process.
pub(crate) struct Target {
    pub(crate) hub: Arc<Hub>,
    server_pid: Option<u32>,
    /// The HTTP server (a child of the soak), killed on drop.
    http: Option<HttpServer>,
    _home: tempfile::TempDir,
}

impl Target {
    /// Starts the phase's server and a Hub connected to it (its era pinned, no probe).
    pub(crate) async fn start(spec: &Spec, server: &Path) -> Result<Target, String> {
        let server_text = server.display().to_string();
        let (entry, http) = match spec.wire {
            Wire::Stdio => (
                serde_json::json!({"command": server_text, "args": ["stdio"], "protocolVersion": spec.era.version()}),
                None,
            ),
            Wire::Http => {
                let http = HttpServer::start(&server_text, &[]);
                let entry = serde_json::json!({"type": "http", "url": http.url, "protocolVersion": spec.era.version()});
                (entry, Some(http))
            }
        };
        let (config, _) = ServerConfig::from_json(&entry).map_err(|e| format!("the soak's entry {entry}: {e:?}"))?;
        let home = tempfile::tempdir().map_err(|e| format!("a temporary plexus home: {e}"))?;
        let discovery = DiscoveryOptions::new(home.path().join("home"), home.path())
            .with_managed_file(None)
            .with_env(Environment::from_fn(|name| {
                (name == "MCP_TOOL_TIMEOUT").then(|| HANG_GUARD_MS.to_owned())
            }));
        let hub = Hub::start(HubOptions::new(discovery).ad_hoc("soak", config))
            .await
            .map_err(|e| format!("starting the Hub: {e}"))?;
        let ready = hub
            .wait_ready(READY_BUDGET)
            .await
            .map_err(|e| format!("waiting for the server: {e}"))?;
        if ready.connected != ["soak"] {
            return Err(format!("the server did not connect: {ready:?}"));
        }
        if hub
            .tool_pool()
            .await
            .entries
            .iter()
            .all(|entry| entry.name != ECHO_TOOL)
        {
            return Err(format!("the server's tools have no {ECHO_TOOL}"));
        }
        let server_pid = match &http {
            Some(http) => Some(http.pid()),
            None => single(&children_running(server)),
        };
        Ok(Target {
            hub: Arc::new(hub),
            server_pid,
            http,
            _home: home,
        })
    }

    /// The memory now.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            rss: rss_kib_of(None),
            server_rss: self.server_pid.and_then(|pid| rss_kib_of(Some(pid))),
        }
    }

    /// Whether the server process the phase started with still serves it (not restarted).
    pub(crate) fn same_server(&self, server: &Path) -> bool {
        match (self.http.as_ref(), self.server_pid) {
            (Some(_), Some(pid)) => rss_kib_of(Some(pid)).is_some(),
            (None, Some(pid)) => single(&children_running(server)) == Some(pid),
            _ => false,
        }
    }

    /// Closes the Hub (its server's session), then the server.
    pub(crate) async fn close(self) {
        self.hub.shutdown().await;
    }
}

fn single(pids: &[u32]) -> Option<u32> {
    match pids {
        [pid] => Some(*pid),
        _ => None,
    }
}

/// What driving a phase's calls gave.
pub(crate) struct Driven {
    pub(crate) counts: Counts,
    /// The memory at each tenth of the calls (the last: when the last call ended).
    pub(crate) marks: Vec<Mark>,
    pub(crate) wall: Duration,
    /// Workers that panicked (their calls are not counted).
    pub(crate) panics: Vec<String>,
}

/// Runs the phase's calls through `target`'s Hub, `spec.in_flight` at once: each worker takes
/// the next call number, runs it to its fate and counts how it ended; the worker that ends a
/// tenth of the calls samples the memory.
pub(crate) async fn drive(target: &Arc<Target>, spec: &Spec, index: u64, seed: u64) -> Driven {
    let shared = Arc::new(Shared {
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        tally: Tally::default(),
        marks: Mutex::new(Vec::with_capacity(10)),
    });
    let tenth = (spec.calls / 10).max(1);
    let started = Instant::now();
    let workers: Vec<_> = (0..spec.in_flight)
        .map(|_| {
            let (shared, target, spec) = (Arc::clone(&shared), Arc::clone(target), spec.clone());
            tokio::spawn(async move {
                loop {
                    let call = shared.next.fetch_add(1, Ordering::Relaxed);
                    if call >= spec.calls {
                        break;
                    }
                    let fate = Fate::draw(seed, index, call, spec.work);
                    let outcome = calls::run(&target.hub, index, call, spec.work, fate).await;
                    shared.tally.add(outcome);
                    let done = shared.done.fetch_add(1, Ordering::Relaxed) + 1;
                    if done % tenth == 0 || done == spec.calls {
                        let mark = target.mark();
                        lock(&shared.marks).push((done, mark));
                    }
                }
            })
        })
        .collect();
    let mut panics = Vec::new();
    for worker in workers {
        if let Err(e) = worker.await {
            panics.push(e.to_string());
        }
    }
    let wall = started.elapsed();
    let mut marks = lock(&shared.marks).clone();
    marks.sort_by_key(|(done, _)| *done);
    marks.dedup_by_key(|(done, _)| *done);
    Driven {
        counts: shared.tally.counts(),
        marks: marks.into_iter().map(|(_, mark)| mark).collect(),
        wall,
        panics,
    }
}

struct Shared {
    next: AtomicU64,
    done: AtomicU64,
    tally: Tally,
    marks: Mutex<Vec<(u64, Mark)>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The test server binary: `PLEXUS_TESTSERVER_BIN` (set by `cargo xtask soak`), else the one
/// beside this executable's profile directory (built by a workspace test run).
pub(crate) fn server_binary() -> PathBuf {
    match std::env::var_os("PLEXUS_TESTSERVER_BIN") {
        Some(path) => PathBuf::from(path),
        None => plexus_testserver::child_test::testserver_binary().to_path_buf(),
    }
}
