//! What the benchmarks share: pinning, medians, verdicts, the test server's path, and the stdio
//! floor ([`raw`]).
// Statistics over counts far below 2^52, and an index computed from a fraction in [0, 1].
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]
// Each bench uses a part.
#![allow(dead_code)]

use std::time::Duration;

pub(crate) mod raw;

/// The test server binary, from `PLEXUS_TESTSERVER_BIN` (set by `cargo xtask bench`).
pub(crate) fn server_path() -> String {
    std::env::var("PLEXUS_TESTSERVER_BIN").unwrap_or_else(|_| {
        eprintln!("PLEXUS_TESTSERVER_BIN is not set: run this bench through `cargo xtask bench`");
        std::process::exit(2);
    })
}

/// Pins this thread (and so every thread and process started after it) to the CPU named by
/// `PLEXUS_BENCH_CPU`; returns a label for the report.
pub(crate) fn pin_from_env() -> String {
    let Ok(cpu) = std::env::var("PLEXUS_BENCH_CPU") else {
        return "unpinned".to_owned();
    };
    let cpu: usize = cpu.trim().parse().unwrap_or_else(|_| {
        eprintln!("PLEXUS_BENCH_CPU must be a CPU number, not {cpu:?}");
        std::process::exit(2);
    });
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).expect("a valid CPU number");
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).expect("pin to the CPU");
    format!("pinned to CPU {cpu}")
}

/// The value at fraction `p` of sorted durations, in microseconds.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1e6
}

/// The median of the values.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// "met" or "MISSED".
pub(crate) fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}
