//! A phase's figures and verdicts, and the Markdown table of the run.
//!
//! The memory rule, per phase, for this process (the Hub and everything under it): the resident
//! set size when the last call ended is at most [`RSS_LIMIT`] times the one when a tenth of the
//! calls had ended. The first tenth is the warm-up: by then the connection, its buffers, the
//! allocator's per-thread caches and the pipeline of calls in flight have their working size. A
//! shrinking RSS passes; nothing is averaged or left out.
//!
//! The server's RSS is shown the same way but not judged: it measures the test server's own
//! bookkeeping (an HTTP session's stream history, for one). What the client could make a server
//! keep, calls it gave up on, is judged exactly by the leftovers probe (`leftovers`).

use std::fmt::Write as _;
use std::time::Duration;

use crate::calls::Counts;
use crate::phase::{Mark, Spec};

/// How much the RSS may grow from the end of a phase's first tenth to its end.
pub(crate) const RSS_LIMIT: f64 = 1.10;

/// A check of a phase beside its counts and memory (the server, the probe, a last call).
#[derive(Clone, Debug)]
pub(crate) struct Check {
    pub(crate) what: String,
    pub(crate) passed: bool,
}

impl Check {
    pub(crate) fn new(what: impl Into<String>, passed: bool) -> Check {
        Check {
            what: what.into(),
            passed,
        }
    }
}

/// What one phase gave.
pub(crate) struct PhaseReport {
    pub(crate) spec: Spec,
    pub(crate) counts: Counts,
    /// The memory at each tenth of the calls; empty when the phase could not start.
    pub(crate) marks: Vec<Mark>,
    pub(crate) wall: Duration,
    pub(crate) checks: Vec<Check>,
}

/// The growth of an RSS from the first tenth to the end (end / first), and whether it is within
/// the rule; `None` without both figures.
fn growth(first: Option<u64>, end: Option<u64>) -> Option<(f64, bool)> {
    let (first, end) = (first?, end?);
    #[allow(clippy::cast_precision_loss)] // KiB counts far below 2^52.
    let ratio = end as f64 / first.max(1) as f64;
    Some((ratio, ratio <= RSS_LIMIT))
}

impl PhaseReport {
    fn first_and_end(&self) -> Option<(Mark, Mark)> {
        Some((*self.marks.first()?, *self.marks.last()?))
    }

    /// This process's RSS growth.
    fn client_growth(&self) -> Option<(f64, bool)> {
        let (first, end) = self.first_and_end()?;
        growth(first.rss, end.rss)
    }

    /// The server's RSS growth (shown, not judged).
    fn server_growth(&self) -> Option<(f64, bool)> {
        let (first, end) = self.first_and_end()?;
        growth(first.server_rss, end.server_rss)
    }

    /// Why the phase failed; empty when it passed.
    pub(crate) fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        let c = &self.counts;
        if c.lost > 0 {
            failures.push(format!("{} lost replies", c.lost));
        }
        if c.mismatched > 0 {
            failures.push(format!("{} mismatched replies", c.mismatched));
        }
        if c.total() != self.spec.calls {
            failures.push(format!("{} of {} calls counted", c.total(), self.spec.calls));
        }
        match self.client_growth() {
            Some((ratio, false)) => failures.push(format!("RSS grew {ratio:.3}× (limit {RSS_LIMIT}×)")),
            None => failures.push("no RSS figures for this process".to_owned()),
            Some(_) => {}
        }
        failures.extend(
            self.checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("failed: {}", c.what)),
        );
        failures
    }

    /// The phase's row of the table.
    fn row(&self) -> String {
        let c = &self.counts;
        let (first, end) = self.first_and_end().unzip();
        let rss = |mark: Option<Mark>, server: bool| {
            mark.and_then(|m| if server { m.server_rss } else { m.rss })
                .map_or_else(|| "–".to_owned(), mib)
        };
        let ratio = |growth: Option<(f64, bool)>| growth.map_or_else(|| "–".to_owned(), |(r, _)| format!("{r:.3}"));
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52.
        let rate = self.spec.calls as f64 / self.wall.as_secs_f64().max(1e-9);
        let verdict = if self.failures().is_empty() { "pass" } else { "**FAIL**" };
        format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} → {} ({}) | {:.0} | {:.1} s | {verdict} |",
            self.spec.name,
            grouped(self.spec.calls),
            self.spec.in_flight,
            grouped(c.replied),
            grouped(c.cancelled),
            grouped(c.timed_out),
            c.lost,
            c.mismatched,
            rss(first, false),
            rss(end, false),
            ratio(self.client_growth()),
            rss(first, true),
            rss(end, true),
            ratio(self.server_growth()),
            rate,
            self.wall.as_secs_f64(),
        )
    }

    /// The lines under the table about this phase: memory at every tenth, checks, notes.
    fn details(&self) -> String {
        let mut text = format!("- **{}**", self.spec.name);
        let tenths: Vec<String> = self
            .marks
            .iter()
            .map(|m| m.rss.map_or_else(|| "–".to_owned(), mib))
            .collect();
        let _ = write!(text, ": RSS at every tenth of the calls: {}", tenths.join(", "));
        for check in &self.checks {
            let _ = write!(
                text,
                "\n  - {}: {}",
                if check.passed { "ok" } else { "FAILED" },
                check.what
            );
        }
        for note in &self.counts.notes {
            let _ = write!(text, "\n  - {note}");
        }
        text
    }
}

/// Prints the table, the details and the verdict; whether every phase passed.
pub(crate) fn print(reports: &[PhaseReport], seed: u64, total: Duration) -> bool {
    println!();
    println!(
        "| phase | calls | in flight | replied | cancelled | timed out | lost | mismatched | RSS at 10 % | RSS at end | end / 10 % | server RSS 10 % → end (ratio) | calls/s | wall | result |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
    for report in reports {
        println!("{}", report.row());
    }
    println!();
    for report in reports {
        println!("{}", report.details());
    }
    println!();
    let failures: Vec<String> = reports
        .iter()
        .flat_map(|r| r.failures().into_iter().map(move |f| format!("{}: {f}", r.spec.name)))
        .collect();
    if failures.is_empty() {
        println!("soak passed (seed {seed}) in {:.1} s", total.as_secs_f64());
    } else {
        println!(
            "soak FAILED (seed {seed}, rerun with --seed {seed}) in {:.1} s:",
            total.as_secs_f64()
        );
        for failure in &failures {
            println!("  {failure}");
        }
    }
    failures.is_empty()
}

/// KiB as MiB with one decimal.
fn mib(kib: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // KiB counts far below 2^52.
    let mib = kib as f64 / 1024.0;
    format!("{mib:.1} MiB")
}

/// A count with its thousands apart (`1 000 000`).
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            text.push(' ');
        }
        text.push(digit);
    }
    text
}
