//! The soak: many calls through the Hub (`plexus::Hub`) against the test server, pipelined, with
//! random timeouts and cancellations mixed in, judged call by call and for memory.
//!
//! Phases (the full run; `--short` runs each with 1/20 of the calls, for CI):
//!
//! | phase | server | calls | in flight |
//! |---|---|--:|--:|
//! | stdio | `plexus-testserver stdio`, `initialize` era (2025-11-25) | 1 000 000 | 128 |
//! | HTTP, initialize era | `plexus-testserver http` (SSE responses), 2025-11-25 | 200 000 | 64 |
//! | HTTP, stateless era | the same, the stateless 2026-07-28 revision | 200 000 | 64 |
//! | timed out | `plexus-testserver stdio`, stateless era: `slow` calls (10 min) with a 20 ms timeout | 100 000 | 256 |
//!
//! Each echo call sends a payload of its own and must get exactly it back; 1 % of the echo calls
//! get a timeout of their own (0.5–8 ms, so some expire), 1 % are cancelled through a
//! [`CancelHandle`](plexus::CancelHandle) and 1 % have their future dropped, at a random point
//! (after a few yields, or after 0.1–5 ms). Every call of the last phase must time out, and
//! none may be left running on the server ([`leftovers`]). A call is *lost* when it neither got
//! its own reply nor the error its fate allows (a timeout for one with a timeout of its own, a
//! cancellation for one cancelled); *mismatched* when it got a reply that is not its own. Both
//! must be 0. Memory: see [`report`] (this process's RSS at the end of a phase at most 1.10×
//! its RSS when the first tenth of the phase's calls had ended). The fates come from a seeded RNG: the seed is printed,
//! and `--seed N` repeats a run's fates (not its timing).
//!
//! Run through `cargo xtask soak [--short] [--seed N]`, which builds it and the test server and
//! passes the server's path in `PLEXUS_TESTSERVER_BIN` (without it, the server binary beside
//! this executable's profile directory is used). Exits non-zero when a phase fails.
#![allow(missing_docs)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use calls::Work;
use phase::{Era, Spec, Target, Wire};
use report::{Check, PhaseReport};

mod calls;
mod leftovers;
mod phase;
mod report;
#[path = "../support/mod.rs"]
mod support;

/// How many times fewer calls `--short` makes (CI: about half a minute in the debug test
/// profile).
const SHORT_DIVISOR: u64 = 20;

/// The per-call timeout of the timed-out phase.
const TIMED_OUT_AFTER: Duration = Duration::from_millis(20);

/// The command line: `--short`, `--seed N` (cargo's own `--bench` is accepted and ignored).
struct Args {
    short: bool,
    seed: u64,
}

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
        let mut parsed = Args {
            short: false,
            seed: fastrand::u64(..),
        };
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
                None => (arg.clone(), None),
            };
            match flag.as_str() {
                "--short" if inline.is_none() => parsed.short = true,
                "--bench" if inline.is_none() => {}
                "--seed" => {
                    let value = inline.or_else(|| args.next()).ok_or("--seed needs a number")?;
                    parsed.seed = value
                        .parse()
                        .map_err(|_| format!("--seed needs a number, not {value:?}"))?;
                }
                _ => return Err(format!("unknown argument {arg:?} (expected --short, --seed N)")),
            }
        }
        Ok(parsed)
    }
}

/// The phases, in order; `short` divides every count by [`SHORT_DIVISOR`].
fn phases(short: bool) -> Vec<Spec> {
    let scale = |full: u64| if short { full / SHORT_DIVISOR } else { full };
    vec![
        Spec {
            name: "stdio, initialize era",
            wire: Wire::Stdio,
            era: Era::Initialize,
            calls: scale(1_000_000),
            in_flight: 128,
            work: Work::Echo,
        },
        Spec {
            name: "HTTP, initialize era",
            wire: Wire::Http,
            era: Era::Initialize,
            calls: scale(200_000),
            in_flight: 64,
            work: Work::Echo,
        },
        Spec {
            name: "HTTP, stateless era",
            wire: Wire::Http,
            era: Era::Stateless,
            calls: scale(200_000),
            in_flight: 64,
            work: Work::Echo,
        },
        Spec {
            name: "timed out (stdio, stateless era)",
            wire: Wire::Stdio,
            era: Era::Stateless,
            calls: scale(100_000),
            in_flight: 256,
            work: Work::TimedOut {
                timeout: TIMED_OUT_AFTER,
            },
        },
    ]
}

/// Runs phase `index`: its server and Hub, the leftovers probe around a phase of timed-out
/// calls, the calls, and a last call that must get its reply.
async fn run_phase(index: u64, spec: Spec, seed: u64, server: &std::path::Path) -> PhaseReport {
    eprintln!(
        "soak: {} — {} calls, {} in flight…",
        spec.name,
        report::grouped(spec.calls),
        spec.in_flight
    );
    let mut report = PhaseReport {
        spec: spec.clone(),
        counts: calls::Counts::default(),
        marks: Vec::new(),
        wall: Duration::ZERO,
        checks: Vec::new(),
    };
    let target = match Target::start(&spec, server).await {
        Ok(target) => Arc::new(target),
        Err(e) => {
            report
                .checks
                .push(Check::new(format!("the phase's server and Hub start: {e}"), false));
            return report;
        }
    };
    let timed_out = matches!(spec.work, Work::TimedOut { .. });
    if timed_out {
        report
            .checks
            .push(probe_check(&target, "before the phase (calibration)").await);
    }
    let driven = phase::drive(&target, &spec, index, seed).await;
    report.counts = driven.counts;
    report.marks = driven.marks;
    report.wall = driven.wall;
    for panic in driven.panics {
        report
            .checks
            .push(Check::new(format!("a worker panicked: {panic}"), false));
    }
    if timed_out {
        report.checks.push(probe_check(&target, "after the phase").await);
    }
    let last = calls::run(&target.hub, index, u64::MAX, Work::Echo, calls::Fate::Whole).await;
    report.checks.push(Check::new(
        format!("a call after the phase gets its own reply ({last:?})"),
        matches!(last, calls::Outcome::Replied),
    ));
    report.checks.push(Check::new(
        "the server process the phase started with served all of it (no reconnect)",
        target.same_server(server),
    ));
    match Arc::try_unwrap(target) {
        Ok(target) => target.close().await,
        Err(_) => report
            .checks
            .push(Check::new("the Hub is closed after the phase", false)),
    }
    eprintln!("soak: {} done in {:.1} s", spec.name, report.wall.as_secs_f64());
    report
}

/// The leftovers probe as a check: exactly one of [`leftovers::SERVER_LIMIT`] + 1 calls refused.
async fn probe_check(target: &Arc<Target>, when: &str) -> Check {
    let limit = leftovers::SERVER_LIMIT;
    match leftovers::probe(&target.hub).await {
        Ok(seen) => Check::new(
            format!(
                "{when}: of {} slow calls at once the server held {} and refused {} (must be {limit} and 1: no call the client gave up on still runs there)",
                limit + 1,
                seen.held,
                seen.refused
            ),
            seen.held == limit && seen.refused == 1,
        ),
        Err(e) => Check::new(format!("{when}: the leftovers probe: {e}"), false),
    }
}

fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let server = phase::server_binary();
    let specs = phases(args.short);
    println!(
        "soak ({}), seed {} (repeat with --seed {}), test server {}",
        if args.short { "short" } else { "full" },
        args.seed,
        args.seed,
        server.display()
    );
    println!(
        "rules: 0 lost and 0 mismatched replies; this process's RSS at the end of a phase ≤ {}× its RSS when the phase's first tenth of calls had ended (the server's is shown, not judged); around the timed-out phase, no call the client gave up on still runs on the server",
        report::RSS_LIMIT
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let started = Instant::now();
    let reports = runtime.block_on(async {
        let mut reports = Vec::new();
        for (index, spec) in (0u64..).zip(specs) {
            reports.push(run_phase(index, spec, args.seed, &server).await);
        }
        reports
    });
    drop(runtime);
    if report::print(&reports, args.seed, started.elapsed()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
