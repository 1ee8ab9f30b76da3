//! `cargo xtask bench`: builds the test server in release mode and runs the benchmarks, which
//! measure plexus against a raw floor in the same run and print the ratios.
//!
//! `cargo xtask bench --peers`: the peer bench (`bench/peers`, a crate outside the workspace):
//! plexus against the floor, rmcp and the TypeScript SDK on one echo server, as one Markdown
//! table with issue 31's targets.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{self, CommandError, cargo};
use crate::peers::{self, NpmPackage, PeersError};

/// The TypeScript SDK the peer bench's `ts-sdk` row drives (the version
/// `bench/peers/node/package.json` pins).
pub(crate) const TS_SDK: NpmPackage = NpmPackage {
    name: "@modelcontextprotocol/sdk",
    version: "1.32.2",
};

/// Where the peer bench crate is, from the workspace root.
pub(crate) const PEER_BENCH_MANIFEST: &str = "bench/peers/Cargo.toml";

/// Arguments of `cargo xtask bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Run the peer bench instead (plexus against a raw floor, rmcp and the TypeScript SDK) and
    /// print its table.
    #[arg(long)]
    peers: bool,
    /// With --peers: rounds per pass (medians are taken over them).
    #[arg(long, requires = "peers", value_parser = clap::value_parser!(u32).range(1..))]
    rounds: Option<u32>,
    /// With --peers: a smoke run (one round, few calls, pinned only).
    #[arg(long, requires = "peers")]
    quick: bool,
    /// With --peers: also write the raw figures to this file.
    #[arg(long, requires = "peers", value_name = "FILE")]
    json: Option<PathBuf>,
}

/// `cargo xtask bench [--peers …]`.
pub(crate) fn run_command(args: &BenchArgs) -> Result<(), PeersError> {
    if args.peers { run_peers(args) } else { Ok(run()?) }
}

/// The peer bench's smoke run, as CI runs it (`--quick`, about a quarter of a minute): the crate
/// in debug mode against the workspace's debug test server and CLI (which the test step built),
/// with the pinned Node and TypeScript SDK. No figure is judged here: a row that fails to run
/// fails the step.
pub(crate) fn peer_bench_smoke() -> Result<(), PeersError> {
    let dir = peers::peers_dir();
    let node = peers::ensure_node(&dir)?;
    let sdk = peers::npm_install(&dir.join("ts-sdk"), TS_SDK)?;
    let debug = peers::target_dir().join("debug");
    cmd::run_streaming(&mut cargo([
        "build",
        "--package",
        "plexus-testserver",
        "--bin",
        "plexus-testserver",
        "--package",
        "plexus-cli",
        "--bin",
        "plexus",
    ]))?;
    let mut bench = peer_bench(&[]);
    bench
        .arg("--testserver")
        .arg(debug.join("plexus-testserver"))
        .arg("--plexus")
        .arg(debug.join("plexus"))
        .arg("--node")
        .arg(&node)
        .arg("--ts-sdk")
        .arg(&sdk)
        .arg("--quick");
    Ok(cmd::run_streaming(&mut bench)?)
}

/// `cargo run PROFILE… --locked --manifest-path bench/peers/Cargo.toml --` (the bench's
/// arguments follow), in the workspace's target directory.
fn peer_bench(profile: &[&str]) -> Command {
    let mut bench = cargo(["run"]);
    // The workspace's target directory, not the bench's own: what the workspace's builds
    // compiled is reused where it can be.
    bench
        .env("CARGO_TARGET_DIR", peers::target_dir())
        .args(profile)
        .args(["--locked", "--manifest-path"])
        .arg(cmd::workspace_root().join(PEER_BENCH_MANIFEST))
        .arg("--");
    bench
}

/// Installs Node and the TypeScript SDK (pinned) under `target/peers/` if missing, builds the
/// test server and the CLI in release mode, then builds and runs the peer bench in release mode.
fn run_peers(args: &BenchArgs) -> Result<(), PeersError> {
    let dir = peers::peers_dir();
    let node = peers::ensure_node(&dir)?;
    let sdk = peers::npm_install(&dir.join("ts-sdk"), TS_SDK)?;
    let server = release_testserver()?;
    cmd::run_streaming(&mut cargo([
        "build",
        "--release",
        "--package",
        "plexus-cli",
        "--bin",
        "plexus",
    ]))?;
    let plexus = peers::target_dir().join("release/plexus");
    let mut bench = peer_bench(&["--release"]);
    bench
        .arg("--testserver")
        .arg(&server)
        .arg("--plexus")
        .arg(&plexus)
        .arg("--node")
        .arg(&node)
        .arg("--ts-sdk")
        .arg(&sdk);
    if let Some(rounds) = args.rounds {
        bench.arg("--rounds").arg(rounds.to_string());
    }
    if args.quick {
        bench.arg("--quick");
    }
    if let Some(json) = &args.json {
        bench.arg("--json").arg(json);
    }
    Ok(cmd::run_streaming(&mut bench)?)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDK `cargo xtask bench --peers` installs is the one the bench's package.json names.
    #[test]
    fn the_ts_sdk_pin_matches_the_bench_package_json() {
        let path = cmd::workspace_root().join("bench/peers/node/package.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            manifest["dependencies"][TS_SDK.name],
            TS_SDK.version,
            "{}",
            path.display()
        );
    }
}
