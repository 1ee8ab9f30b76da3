//! `cargo xtask bench`: builds the test server in release mode and runs the benchmarks, which
//! measure plexus against a raw floor in the same run and print the ratios.

use std::path::{Path, PathBuf};

use crate::cmd::{self, CommandError, cargo};

/// Runs the stdio and Streamable HTTP benchmarks (`crates/plexus/benches/`, each in both protocol
/// eras) twice each: pinned to CPU 0 (the method of the reference figures, which the targets are
/// judged by) and unpinned; the connect cost of negotiating the era likewise; then the pool
/// benchmark (many servers), unpinned, the gateway's overhead, the tool pool's assembly and the
/// tool search.
pub(crate) fn run() -> Result<(), CommandError> {
    let server = release_testserver()?;
    for name in ["stdio", "http", "eras"] {
        bench(&server, "plexus", name, &[Some("0"), None])?;
    }
    // Many servers at once: pinned to one CPU it would measure the CPU, not the window.
    bench(&server, "plexus", "pool", &[None])?;
    // Gateway overhead: a stdio call through the gateway against the same call direct.
    bench(&server, "plexus-gateway", "gateway", &[Some("0"), None])?;
    // Assembling a pool of 10 000 tools and one name lookup, then searching it and keeping its
    // index current (no server involved).
    for name in ["assembly", "search"] {
        cmd::run_streaming(&mut cargo(["bench", "--package", "plexus-tools", "--bench", name]))?;
    }
    Ok(())
}

/// Runs bench `name` of `package` against the test server `server` once per pinning (`Some(cpu)`
/// pins the run to that CPU, `None` leaves it unpinned).
fn bench(server: &Path, package: &str, name: &str, pinnings: &[Option<&str>]) -> Result<(), CommandError> {
    for pin in pinnings {
        let mut bench = cargo(["bench", "--package", package, "--bench", name]);
        bench.env("PLEXUS_TESTSERVER_BIN", server);
        match pin {
            Some(cpu) => bench.env("PLEXUS_BENCH_CPU", cpu),
            None => bench.env_remove("PLEXUS_BENCH_CPU"),
        };
        cmd::run_streaming(&mut bench)?;
    }
    Ok(())
}

/// Builds the test server in release mode (what the benchmarks and the full soak run against);
/// its path.
pub(crate) fn release_testserver() -> Result<PathBuf, CommandError> {
    cmd::run_streaming(&mut cargo([
        "build",
        "--release",
        "--package",
        "plexus-testserver",
        "--bin",
        "plexus-testserver",
    ]))?;
    Ok(crate::peers::target_dir().join("release/plexus-testserver"))
}
