//! What the harness asks of a child process (a [`Role`], one JSON argument) and what the child
//! answers ([`Figures`], one JSON line on stdout): the harness re-executes itself once per
//! client row, so that each row's memory and CPU are its own process's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A protocol era.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Era {
    /// The `initialize` handshake (2025-11-25).
    Initialize,
    /// The stateless revision (2026-07-28): `server/discover`, an envelope in every request.
    Stateless,
}

impl Era {
    /// The version a plexus config entry pins the era with.
    pub(crate) fn version(self) -> &'static str {
        match self {
            Era::Initialize => "2025-11-25",
            Era::Stateless => "2026-07-28",
        }
    }
}

/// The wire between client and server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Transport {
    /// The server as a child process, newline-delimited JSON-RPC on its pipes.
    Stdio,
    /// Streamable HTTP on 127.0.0.1 (`plexus-testserver http --json-response`).
    Http,
}

impl Transport {
    /// Its name in the table.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "HTTP",
        }
    }
}

/// The tokio runtime a row's client runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Runtime {
    /// One thread.
    CurrentThread,
    /// tokio's default: one worker per CPU.
    MultiThread,
}

/// A client row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "client")]
pub(crate) enum Row {
    /// The raw floor: lines over a pipe (blocking, one thread), or a minimal keep-alive HTTP/1.1
    /// client on raw sockets (current-thread runtime).
    Floor {
        /// The era it speaks.
        era: Era,
    },
    /// plexus through its `Hub`, as a host uses it.
    Plexus {
        /// The era its one server is pinned to.
        era: Era,
        /// The runtime the host runs it on.
        runtime: Runtime,
    },
    /// rmcp's client (`initialize` era).
    Rmcp {
        /// Defaults (`false`) or the tuned configuration (see [`crate::rmcp_row`]).
        tuned: bool,
    },
    /// The TypeScript SDK's client, driven by `node/client.mjs` (`initialize` era).
    TsSdk,
}

impl Row {
    /// The row's name in the table.
    pub(crate) fn label(self) -> String {
        let era = |era: Era| match era {
            Era::Initialize => "",
            Era::Stateless => " (stateless)",
        };
        match self {
            Row::Floor { era: e } => format!("floor{}", era(e)),
            Row::Plexus { era: e, runtime } => {
                let rt = match runtime {
                    Runtime::MultiThread => "",
                    Runtime::CurrentThread => " ct",
                };
                format!("plexus{rt}{}", era(e))
            }
            Row::Rmcp { tuned: false } => "rmcp".to_owned(),
            Row::Rmcp { tuned: true } => "rmcp tuned".to_owned(),
            Row::TsSdk => "ts-sdk".to_owned(),
        }
    }
}

/// How many calls a calls workload makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counts {
    /// Calls before the timed ones.
    pub(crate) warmup: usize,
    /// Timed calls, sequential, then again with `in_flight` at once.
    pub(crate) calls: usize,
    /// Calls at once in the throughput phase.
    pub(crate) in_flight: usize,
}

/// One job for a child process.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "task")]
pub(crate) enum Task {
    /// Connect + initialize + list tools; `warmup` calls; `calls` sequential calls; `calls`
    /// more with `in_flight` at once. Figures: `connect_ms`, `p50_us`, `p99_us`, `cpu_us`
    /// (the client's CPU per sequential call), `calls_per_s`, `peak_rss_kib`.
    Calls {
        /// The client.
        row: Row,
        /// The wire.
        transport: Transport,
        /// The calls.
        counts: Counts,
    },
    /// `connections` stdio connections held idle: figure `idle_kib` (RSS growth per connection).
    Idle {
        /// The client (floor, plexus or rmcp).
        row: Row,
        /// How many.
        connections: usize,
    },
    /// plexus's Hub over stdio: `calls` calls of the test server's `slow` tool, each timing out
    /// after `timeout_ms`, `in_flight` at once. Figures: `rss_before_kib` (after the first tenth),
    /// `rss_after_kib`.
    TimedOut {
        /// How many.
        calls: usize,
        /// At once.
        in_flight: usize,
        /// Each call's timeout.
        timeout_ms: u64,
    },
    /// The floor's stdio client calling `echo` directly or through `plexus serve` (see
    /// [`crate::gateway`]). Figures: `p50_us`, `calls_per_s`.
    Gateway {
        /// Through the gateway (`true`) or direct.
        through_gateway: bool,
        /// The calls.
        counts: Counts,
    },
    /// plexus's Hub with `servers` stdio entries: figure `all_connected_ms`, from the start of
    /// the Hub until every server is connected.
    Pool {
        /// How many servers.
        servers: usize,
    },
}

/// Where the programs are, for the child.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Programs {
    /// `plexus-testserver` (release).
    pub(crate) testserver: String,
    /// The Streamable HTTP server's URL (the harness's one server process).
    pub(crate) url: Option<String>,
    /// The `plexus` CLI (release), for the gateway rows.
    pub(crate) plexus: Option<String>,
}

/// The child's whole argument.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Role {
    /// What to do.
    pub(crate) task: Task,
    /// With what.
    pub(crate) programs: Programs,
}

/// Named figures (see each [`Task`]).
pub(crate) type Figures = BTreeMap<String, f64>;

/// The peak resident set size (`VmHWM`) of this process, in KiB.
pub(crate) fn peak_rss_kib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let value = status.lines().find_map(|line| line.strip_prefix("VmHWM:"))?;
    value.split_whitespace().next()?.parse().ok()
}
