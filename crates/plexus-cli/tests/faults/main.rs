//! The fault matrix: every fault the test server can commit, over every transport, met by a Hub
//! directly and through `plexus serve`, each cell a scripted workload with a healthy second
//! server beside the faulty one. A cell passes when:
//! - every call ended within its bound, with the outcome the matrix specifies (`expect.rs`);
//! - the faulty server (or the gateway) is in the specified state afterwards;
//! - the healthy server answered every call throughout;
//! - no server ran a tool call twice;
//! - nothing is left: no child process (this process is the subreaper, so a grandchild counts),
//!   file descriptor, thread or runtime task; and the resident set grew less than its bound.
//!
//! Each cell is a test (`hub::stdio::crash_mid_call`); the cells run one at a time in a process,
//! since they measure the process. With `PLEXUS_FAULTS_REPORT=FILE`, each cell appends its row
//! as a JSON line, from which `cargo xtask faults` prints the Markdown matrix.

#![allow(unreachable_pub)] // the modules of one test binary.

#[path = "../support/mod.rs"]
mod support;

mod cells;
mod expect;
mod leaks;
mod workload;

use std::io::Write as _;

use cells::Cell;
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::json;

/// The file each cell appends its row to.
const REPORT_VAR: &str = "PLEXUS_FAULTS_REPORT";

fn main() {
    let mut arguments = Arguments::from_args();
    // Each cell measures the whole process (threads, descriptors, children).
    arguments.test_threads = Some(1);
    leaks::become_subreaper();
    leaks::prime_process_globals();
    let trials = Cell::all()
        .into_iter()
        .map(|cell| Trial::test(cell.name(), move || run_cell(cell)))
        .collect();
    libtest_mimic::run(&arguments, trials).exit();
}

fn run_cell(cell: Cell) -> Result<(), Failed> {
    let baseline = leaks::Snapshot::take();
    let (observed, grandchild) = workload::run(cell);
    let mut problems = expect::check(cell, &observed);
    if let Err(left) = leaks::Snapshot::settle_to(&baseline) {
        problems.push(left);
    }
    if let Some(pid) = grandchild.filter(|pid| leaks::alive(*pid)) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        problems.push(format!("the server's grandchild {pid} outlived it"));
    }
    report(cell, &observed, &problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{cell}: {}\nobserved: {observed:#?}", problems.join("; ")).into())
    }
}

/// Appends the cell's row to the report file, when one is asked for.
fn report(cell: Cell, observed: &workload::Observed, problems: &[String]) {
    let Some(path) = std::env::var_os(REPORT_VAR) else {
        return;
    };
    let row = json!({
        "via": format!("{:?}", cell.via).to_lowercase(),
        "transport": cell.transport.label(),
        "fault": cell.fault.label(),
        "outcome": observed.trigger.kind,
        "ms": observed.trigger.took.as_millis() as u64,
        "detail": observed.trigger.detail.chars().take(400).collect::<String>(),
        "after": observed.after.kind,
        "after_detail": observed.after.detail.chars().take(400).collect::<String>(),
        "state": observed.state,
        "healthy": observed.healthy_ok,
        "faults_logged": observed.faults_logged,
        "teardown_ms": observed.teardown.as_millis() as u64,
        "rss_growth_mib": observed.rss_growth / (1 << 20),
        "passed": problems.is_empty(),
        "problems": problems,
    });
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the report file opens");
    writeln!(file, "{row}").expect("the report file is written");
}
