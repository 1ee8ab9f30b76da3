//! `cargo xtask soak [--short] [--seed N]`: many calls through the Hub against the test server,
//! with random timeouts and cancellations, judged for lost or mismatched replies and for memory
//! growth (the bench target `crates/plexus/benches/soak`, whose docs list the phases and rules).
//!
//! The full soak runs in the bench profile (release: the figures of what ships), against the
//! test server built in release as `cargo xtask bench` builds it. The short one (`--short`, a
//! step of `cargo xtask ci`) runs in the test profile: CI has just built every test with the
//! workspace's features, so only the soak's own binary is compiled, where a release build would
//! compile the whole stack again (minutes, with fat LTO); it uses the test server that build
//! made (`target/debug/plexus-testserver`, built on the spot when missing).

use std::ffi::OsString;

use crate::bench;
use crate::cmd::{self, CommandError, cargo};

/// Arguments of `cargo xtask soak`.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct SoakArgs {
    /// Fewer calls per phase (about a minute in the debug test profile), as CI runs it.
    #[arg(long)]
    pub(crate) short: bool,
    /// Repeat the random timeouts and cancellations of an earlier run (its seed is printed).
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
}

/// Builds and runs the soak; fails when the soak fails.
pub(crate) fn run(args: &SoakArgs) -> Result<(), CommandError> {
    let mut soak = if args.short {
        cargo(["test", "--workspace", "--bench", "soak", "--", "--short"])
    } else {
        let server = bench::release_testserver()?;
        let mut soak = cargo(["bench", "--package", "plexus", "--bench", "soak", "--"]);
        soak.env("PLEXUS_TESTSERVER_BIN", server);
        soak
    };
    if let Some(seed) = args.seed {
        soak.args([OsString::from("--seed"), seed.to_string().into()]);
    }
    soak.current_dir(cmd::workspace_root());
    cmd::run_streaming(&mut soak)
}
