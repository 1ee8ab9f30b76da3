//! The project's automation, run as `cargo xtask <command>` (see `.cargo/config.toml`).
//!
//! - `cargo xtask ci` runs every check CI runs and ends with `N passed, N failed`.
//! - `cargo xtask fuzz [TARGET] [SECONDS]` builds and runs the cargo-fuzz targets in `fuzz/`.
//! - `cargo xtask bench` measures plexus against a raw floor in the same run; `--peers` against
//!   the floor, rmcp and the TypeScript SDK (`bench/peers`).
//! - `cargo xtask soak [--short] [--seed N]` runs many calls through the Hub with timeouts and
//!   cancellations, and fails on a lost or mismatched reply or memory growth.
//! - `cargo xtask peers` installs pinned third-party MCP servers and runs plexus against them.
//! - `cargo xtask conformance [SCENARIO]...` runs the official MCP conformance suite against
//!   plexus's conformance client.
//! - `cargo xtask faults [FILTER]` runs the fault matrix and prints it as Markdown.
//!
//! Each command lives in its own module; `cmd` holds the helpers for running child processes.
#![forbid(unsafe_code)]

mod bench;
mod checks;
mod ci;
mod cmd;
mod conformance;
mod faults;
mod fuzz;
mod haproxy;
mod peers;
mod requirements;
mod soak;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Held by every test that starts a process or writes an executable: a process forked by one test
/// thread while another holds a freshly written script open for writing makes running that script
/// fail with "text file busy" (ETXTBSY). nextest runs tests in separate processes, `cargo test`
/// in threads.
#[cfg(test)]
static PROCESS_TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`PROCESS_TEST_LOCK`], whether or not an earlier test panicked while holding it.
#[cfg(test)]
fn process_test_lock() -> std::sync::MutexGuard<'static, ()> {
    PROCESS_TEST_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The project's automation.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", about)]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

/// The tasks.
#[derive(Debug, Subcommand)]
enum Task {
    /// Run every CI check in order (fmt, clippy, tests with the fault matrix, the short soak,
    /// peers, conformance, doctests, rustdoc, layer check, cargo deny, fuzz smoke), continue past
    /// failures, and end with `N passed, N failed`.
    Ci(ci::CiArgs),
    /// Build and run the cargo-fuzz targets on the stable toolchain; fails if a crash is found.
    Fuzz(fuzz::FuzzArgs),
    /// Measure plexus against a raw floor (stdio round trips), in one run, and print the ratios;
    /// with --peers, against the floor, rmcp and the TypeScript SDK, as one Markdown table.
    Bench(bench::BenchArgs),
    /// Soak the Hub: 1 000 000 stdio and 2 × 200 000 Streamable HTTP calls (both eras) and
    /// 100 000 timed-out calls, with random timeouts and cancellations; fails on a lost or
    /// mismatched reply, RSS growth over 10 % or a call left running on the server (`--short`:
    /// fewer calls, in the debug test profile, as CI runs it).
    Soak(soak::SoakArgs),
    /// Install the pinned third-party MCP peers under target/peers/ (the everything server, the
    /// Python SDK servers) and run the peer tests against them.
    Peers,
    /// Run the official MCP conformance suite against plexus-conformance-client, print a table per
    /// suite version, and fail unless every must-pass scenario passes.
    Conformance(conformance::ConformanceArgs),
    /// Run the fault matrix (every fault over every transport, through the Hub and through
    /// `plexus serve`) and print it as Markdown; fails if a cell fails.
    Faults(faults::FaultsArgs),
}

/// Prints a task's error with its causes; true when it succeeded.
fn report<E: std::error::Error>(result: Result<(), E>) -> bool {
    match result {
        Ok(()) => true,
        Err(e) => {
            eprintln!("error: {}", plexus_jsonrpc::error_chain(&e));
            false
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ok = match &cli.command {
        Task::Ci(args) => ci::run(args),
        Task::Fuzz(args) => report(fuzz::run(args)),
        Task::Bench(args) => report(bench::run_command(args)),
        Task::Soak(args) => report(soak::run(args)),
        Task::Peers => report(peers::run()),
        Task::Conformance(args) => report(conformance::run(args)),
        Task::Faults(args) => report(faults::run(args)),
    };
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
