//! `cargo xtask bench`: builds the test server in release mode and runs the benchmarks, which
//! measure plexus against a raw floor in the same run and print the ratios.

use crate::cmd::{self, CommandError, cargo};

/// Runs the stdio benchmark (`crates/plexus/benches/stdio.rs`) twice, pinned to CPU 0 (the
/// method of the reference figures, which the targets are judged by) and unpinned, then the
/// Streamable HTTP benchmark (`crates/plexus/benches/http.rs`).
pub(crate) fn run() -> Result<(), CommandError> {
    cmd::run_streaming(&mut cargo([
        "build",
        "--release",
        "--package",
        "plexus-testserver",
        "--bin",
        "plexus-testserver",
    ]))?;
    let server = cmd::workspace_root().join("target/release/plexus-testserver");
    for pin in [Some("0"), None] {
        let mut bench = cargo(["bench", "--package", "plexus", "--bench", "stdio"]);
        bench.env("PLEXUS_TESTSERVER_BIN", &server);
        match pin {
            Some(cpu) => bench.env("PLEXUS_BENCH_CPU", cpu),
            None => bench.env_remove("PLEXUS_BENCH_CPU"),
        };
        cmd::run_streaming(&mut bench)?;
    }
    let mut http = cargo(["bench", "--package", "plexus", "--bench", "http"]);
    http.env("PLEXUS_TESTSERVER_BIN", &server);
    cmd::run_streaming(&mut http)
}
