//! What the benchmarks and the soak share: pinning, medians, verdicts, the test server's path and
//! its HTTP mode as a child ([`http_server`]), resident memory ([`memory`]), and the floors: stdio
//! ([`raw`]) and Streamable HTTP ([`raw_http`]). The peer bench (`bench/peers`) includes this
//! module too.
// Statistics over counts far below 2^52, and an index computed from a fraction in [0, 1].
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]
// Each bench uses a part.
#![allow(dead_code)]

use std::time::Duration;

pub(crate) mod http_server;
pub(crate) mod memory;
pub(crate) mod raw;
pub(crate) mod raw_http;

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

/// The CPU time this process's threads have used so far (the sum of each
/// `/proc/self/task/*/schedstat`, in nanoseconds), so that a client's own cost per call is seen
/// apart from its server's: the server runs in another process, and the stateless era costs a
/// server more per request than the `initialize` era. `None` where the kernel does not say.
pub(crate) fn process_cpu() -> Option<Duration> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        // A thread that ended since the listing has nothing more to add.
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        nanos += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(nanos))
}

/// The CPU time (µs) this process used per call since `before` (a [`process_cpu`] reading),
/// over `calls` calls.
pub(crate) fn cpu_per_call(before: Option<Duration>, calls: usize) -> Option<f64> {
    let used = process_cpu()?.checked_sub(before?)?;
    Some(used.as_secs_f64() * 1e6 / calls as f64)
}

/// Prints the verdict on "the stateless era no slower per call" (`label`: the runtime): plexus's
/// own CPU time per call (µs) in the stateless era against the `initialize` era, within 10 %,
/// with the floor's figures of each era. The server's share is left out of it: a server works
/// more per request in the stateless era (an envelope, and over HTTP its headers, on every
/// request), which the latency of floor and plexus alike carries.
pub(crate) fn era_cpu_verdict(label: &str, legacy: (Option<f64>, Option<f64>), stateless: (Option<f64>, Option<f64>)) {
    let ((Some(legacy_cpu), legacy_floor), (Some(stateless_cpu), stateless_floor)) = (legacy, stateless) else {
        println!("target ({label}): the stateless era no slower per call: no CPU figures on this system");
        return;
    };
    let floors = match (legacy_floor, stateless_floor) {
        (Some(legacy), Some(stateless)) => format!(" (the floor's: {legacy:.2} and {stateless:.2} µs)"),
        _ => String::new(),
    };
    println!(
        "target ({label}): the stateless era no slower per call: plexus's own CPU per call {stateless_cpu:.2} µs vs {legacy_cpu:.2} µs in the initialize era ({:.2}×){floors} {}",
        stateless_cpu / legacy_cpu,
        verdict(stateless_cpu <= legacy_cpu * 1.1)
    );
}

/// The bench client's options, its era pinned (no probe, so that the figures are of the era
/// named): the stateless revision or the `initialize` handshake.
pub(crate) fn pinned_options(stateless: bool) -> plexus::ClientOptions {
    let mut options = plexus::ClientOptions::new("bench");
    options.era = if stateless {
        plexus::client::EraChoice::Stateless(plexus::protocol::ProtocolVersion::V2026_07_28)
    } else {
        plexus::client::EraChoice::Initialize
    };
    options
}

/// "met" or "MISSED".
pub(crate) fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}
