//! `cargo xtask bench`: builds the test server in release mode and runs the benchmarks, which
//! measure plexus against a raw floor in the same run and print the ratios.

use crate::cmd::{self, CommandError, cargo};

/// Runs the stdio and Streamable HTTP benchmarks (`crates/plexus/benches/`) twice each: pinned to
/// CPU 0 (the method of the reference figures, which the targets are judged by) and unpinned;
/// then the pool benchmark (many servers), unpinned, the gateway's overhead, and the tool pool's
/// assembly.
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
    for name in ["stdio", "http"] {
        for pin in [Some("0"), None] {
            let mut bench = cargo(["bench", "--package", "plexus", "--bench", name]);
            bench.env("PLEXUS_TESTSERVER_BIN", &server);
            match pin {
                Some(cpu) => bench.env("PLEXUS_BENCH_CPU", cpu),
                None => bench.env_remove("PLEXUS_BENCH_CPU"),
            };
            cmd::run_streaming(&mut bench)?;
        }
    }
    // Many servers at once: pinned to one CPU it would measure the CPU, not the window.
    let mut bench = cargo(["bench", "--package", "plexus", "--bench", "pool"]);
    bench.env("PLEXUS_TESTSERVER_BIN", &server);
    bench.env_remove("PLEXUS_BENCH_CPU");
    cmd::run_streaming(&mut bench)?;
    // Gateway overhead: a stdio call through the gateway against the same call direct, pinned
    // (the method of the reference figures) and unpinned.
    for pin in [Some("0"), None] {
        let mut bench = cargo(["bench", "--package", "plexus-gateway", "--bench", "gateway"]);
        bench.env("PLEXUS_TESTSERVER_BIN", &server);
        match pin {
            Some(cpu) => bench.env("PLEXUS_BENCH_CPU", cpu),
            None => bench.env_remove("PLEXUS_BENCH_CPU"),
        };
        cmd::run_streaming(&mut bench)?;
    }
    // Assembling a pool of 10 000 tools and one name lookup (no server involved).
    cmd::run_streaming(&mut cargo([
        "bench",
        "--package",
        "plexus-tools",
        "--bench",
        "assembly",
    ]))?;
    Ok(())
}
