//! `plexus-peer-bench`: plexus against its peers on one echo server, as issue 31 asks, run by
//! `cargo xtask bench --peers`.
//!
//! Rows (clients), against `plexus-testserver` over stdio (a child per client) and over
//! Streamable HTTP (`http --json-response`, one process per pass), calling `echo` with
//! `{"text":"hello"}`:
//! - `floor`: a raw client (lines over a pipe; a minimal keep-alive HTTP/1.1 client), both eras;
//! - `plexus`, `plexus ct`: `plexus::Hub` as a host embeds it, on a multi-thread and a
//!   current-thread runtime, both eras;
//! - `rmcp`, `rmcp tuned`: the official Rust SDK, pinned (see [`rmcp_row`] for what "tuned" is);
//! - `ts-sdk`: the official TypeScript SDK, pinned, driven by `node/client.mjs`.
//!
//! Workloads: connect + initialize + list tools; sequential calls (p50, p99); calls with 64 in
//! flight; the client's CPU per call; its peak RSS; idle memory per stdio connection; RSS over
//! 100 000 timed-out requests; 50 servers through the pool; a call through `plexus serve` alone and
//! with 32 in flight, against the same call direct. Each row runs in a child process (this
//! program again, `--role`), so memory and CPU are the client's own. A pass pinned to one CPU,
//! then an unpinned one; rounds interleave the rows; medians of the rounds go into one Markdown
//! table with ratios to the floor and to rmcp's best, then issue 31's targets, met or MISSED.
//!
//! This crate is outside the root workspace (its own `[workspace]` and lockfile) so that rmcp and
//! its dependencies never enter plexus's lockfile or dependency policy. Its dependencies: `plexus`
//! (the client under test), `rmcp` and `reqwest` (the Rust peer and the tuned row's HTTP client),
//! `tokio` (runtimes, sockets, processes), `serde`/`serde_json` (the children's figures and
//! `--json`), `nix` (pinning), `tempfile` (plexus homes and config files), `thiserror` (the
//! error). The floors and the statistics are the project's bench support
//! (`crates/plexus/benches/support`), included as a module.
#![forbid(unsafe_code)]
// Statistics over counts far below 2^52.
#![allow(clippy::cast_precision_loss)]

mod args;
mod drive;
mod floor;
mod gateway;
mod harness;
mod node_row;
mod plexus_row;
mod rmcp_row;
mod role;
mod table;
mod targets;

#[path = "../../../crates/plexus/benches/support/mod.rs"]
mod support;

use std::process::ExitCode;
use std::time::Duration;

use role::{Figures, Programs, Role, Row, Runtime, Task};

/// Why the bench failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BenchError {
    /// Bad arguments.
    #[error("{0}\n{usage}", usage = args::USAGE)]
    Usage(String),
    /// A file, process or runtime could not be had.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// plexus failed (a Hub's start, a call).
    #[error("plexus: {0}")]
    Plexus(String),
    /// rmcp failed.
    #[error("rmcp: {0}")]
    Rmcp(String),
    /// A row's child process failed.
    #[error("row {row}: {detail}")]
    Child {
        /// The row.
        row: String,
        /// How it failed (its status and the end of its stderr).
        detail: String,
    },
    /// The role argument is not a role.
    #[error("the --role argument is not a role: {0}")]
    Role(serde_json::Error),
}

/// The HTTP server's URL, which HTTP rows need.
pub(crate) fn need_url(programs: &Programs) -> Result<&str, BenchError> {
    programs
        .url
        .as_deref()
        .ok_or_else(|| BenchError::Usage("an HTTP row needs the server's URL".to_owned()))
}

/// A tokio runtime of that kind.
pub(crate) fn runtime(kind: Runtime) -> Result<tokio::runtime::Runtime, BenchError> {
    let mut builder = match kind {
        Runtime::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        Runtime::MultiThread => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build().map_err(|source| BenchError::Io {
        what: "building a tokio runtime".to_owned(),
        source,
    })
}

/// The figures of a `Calls` task.
pub(crate) fn call_figures(connect_ms: f64, p50: f64, p99: f64, cpu: Option<f64>, throughput: f64) -> Figures {
    let mut figures = Figures::from([
        ("connect_ms".to_owned(), connect_ms),
        ("p50_us".to_owned(), p50),
        ("p99_us".to_owned(), p99),
        ("calls_per_s".to_owned(), throughput),
    ]);
    if let Some(cpu) = cpu {
        figures.insert("cpu_us".to_owned(), cpu);
    }
    figures
}

/// Pins this process to `cpu`, or lets it run on every CPU (`None`); the pass's label. Whatever
/// it starts afterwards inherits the setting.
pub(crate) fn pin(cpu: Option<usize>) -> Result<String, BenchError> {
    let mut set = nix::sched::CpuSet::new();
    let cpus = match cpu {
        Some(cpu) => vec![cpu],
        None => (0..std::thread::available_parallelism().map_or(1, usize::from)).collect(),
    };
    for cpu in cpus {
        set.set(cpu).map_err(|e| BenchError::Usage(format!("CPU {cpu}: {e}")))?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|e| BenchError::Io {
        what: format!("setting the CPU affinity to {cpu:?}"),
        source: e.into(),
    })?;
    Ok(cpu.map_or_else(|| "unpinned".to_owned(), |cpu| format!("pinned to CPU {cpu}")))
}

/// A child's work: the figures of its task.
fn run_role(role: &Role) -> Result<Figures, BenchError> {
    let programs = &role.programs;
    let mut figures = match role.task.clone() {
        Task::Calls { row, transport, counts } => match row {
            Row::Floor { era } => floor::calls(programs, transport, era, counts)?,
            Row::Plexus { era, runtime: kind } => {
                runtime(kind)?.block_on(plexus_row::calls(programs, transport, era, counts))?
            }
            Row::Rmcp { tuned } => {
                runtime(rmcp_runtime(tuned))?.block_on(rmcp_row::calls(programs, transport, tuned, counts))?
            }
            Row::TsSdk => {
                return Err(BenchError::Usage(
                    "the ts-sdk row runs in Node, not in a role".to_owned(),
                ));
            }
        },
        Task::Idle { row, connections } => match row {
            Row::Floor { .. } => floor::idle(programs, connections),
            Row::Plexus { runtime: kind, .. } => runtime(kind)?.block_on(plexus_row::idle(programs, connections))?,
            Row::Rmcp { tuned } => runtime(rmcp_runtime(tuned))?.block_on(rmcp_row::idle(programs, connections))?,
            Row::TsSdk => return Err(BenchError::Usage("the ts-sdk row has no idle workload".to_owned())),
        },
        Task::Gateway {
            through_gateway,
            counts,
        } => runtime(Runtime::MultiThread)?.block_on(gateway::calls(programs, through_gateway, counts))?,
        Task::TimedOut {
            calls,
            in_flight,
            timeout_ms,
        } => runtime(Runtime::MultiThread)?.block_on(plexus_row::timed_out(
            programs,
            calls,
            in_flight,
            Duration::from_millis(timeout_ms),
        ))?,
        Task::Pool { servers } => runtime(Runtime::MultiThread)?.block_on(plexus_row::pool(programs, servers))?,
    };
    if matches!(role.task, Task::Calls { .. })
        && let Some(peak) = role::peak_rss_kib()
    {
        figures.insert("peak_rss_kib".to_owned(), peak);
    }
    Ok(figures)
}

/// rmcp's runtime: tokio's default (multi-thread), or current-thread when tuned.
fn rmcp_runtime(tuned: bool) -> Runtime {
    if tuned {
        Runtime::CurrentThread
    } else {
        Runtime::MultiThread
    }
}

fn harness(args: &args::Args) -> Result<(), BenchError> {
    if !std::path::Path::new(&args.testserver).is_file() {
        return Err(BenchError::Usage(format!(
            "the test server {} does not exist",
            args.testserver
        )));
    }
    let plan = harness::Plan::new(args.rounds, args.quick);
    let started = std::time::Instant::now();
    let samples = harness::run(args, plan)?;
    let took = started.elapsed();
    if let Some(path) = &args.json {
        let raw = serde_json::json!({"plan": plan, "samples": samples});
        std::fs::write(path, serde_json::to_string_pretty(&raw).unwrap_or_default()).map_err(|source| {
            BenchError::Io {
                what: format!("writing {}", path.display()),
                source,
            }
        })?;
    }
    print!("{}", table::render(&samples, plan.rounds));
    println!("\nThe run took {:.0} s.", took.as_secs_f64());
    Ok(())
}

fn main() -> ExitCode {
    let result = match args::parse(std::env::args().skip(1)) {
        Ok(args::Invocation::Help) => {
            println!("{}", args::USAGE);
            Ok(())
        }
        Ok(args::Invocation::Role(text)) => serde_json::from_str::<Role>(&text)
            .map_err(BenchError::Role)
            .and_then(|role| run_role(&role))
            .map(|figures| println!("{}", serde_json::to_string(&figures).unwrap_or_default())),
        Ok(args::Invocation::Harness(args)) => harness(&args),
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", plexus::jsonrpc::error_chain(&e));
            ExitCode::FAILURE
        }
    }
}
