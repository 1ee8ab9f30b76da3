//! The TypeScript SDK row: `node/client.mjs` (committed beside this crate) driving the pinned
//! `@modelcontextprotocol/sdk`'s client, `initialize` era. Node is its own process, so its CPU
//! (`process.cpuUsage()`) and peak RSS (`VmHWM`) are the client's alone; the script prints them
//! as one JSON line, read by [`crate::harness`] like a row's child.

use std::path::PathBuf;
use std::process::Command;

use crate::role::{Counts, Programs, Transport};

/// Where Node, the SDK and the script are.
#[derive(Debug, Clone)]
pub(crate) struct NodeRow {
    /// The `node` binary (Node 22, from `cargo xtask peers`).
    pub(crate) node: PathBuf,
    /// The installed `@modelcontextprotocol/sdk` package directory.
    pub(crate) sdk: PathBuf,
    /// `client.mjs`.
    pub(crate) script: PathBuf,
}

impl NodeRow {
    /// The command that runs the `Calls` workload (see [`crate::role::Task::Calls`]).
    pub(crate) fn command(&self, programs: &Programs, transport: Transport, counts: Counts) -> Command {
        let workload = serde_json::json!({
            "transport": match transport { Transport::Stdio => "stdio", Transport::Http => "http" },
            "testserver": programs.testserver,
            "url": programs.url,
            "warmup": counts.warmup,
            "calls": counts.calls,
            "in_flight": counts.in_flight,
            "phase_limit_ms": crate::drive::PHASE_LIMIT.as_millis() as u64,
            "min_calls": crate::drive::MIN_CALLS,
        });
        let mut command = Command::new(&self.node);
        command
            .arg(&self.script)
            .arg(workload.to_string())
            .env("PLEXUS_TS_SDK_DIR", &self.sdk);
        command
    }
}
