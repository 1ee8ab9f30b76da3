//! The report: medians of the rounds as ONE Markdown table (a line per workload, wire and client;
//! a column group per pass: the figure, its ratio to the floor of the same era, its ratio to
//! rmcp's best), then issue 31's targets, each met or MISSED, judged on the first (pinned) pass.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::harness::{DIRECT, Sample, THROUGH_GATEWAY, call_rows};
use crate::role::Row;
use crate::targets::{floor_of, rmcp_best};

/// A workload's figure as the table shows it.
struct Workload {
    /// The figure's name in the samples.
    figure: &'static str,
    /// What the table calls it.
    title: &'static str,
    /// Its unit.
    unit: &'static str,
    /// Decimals shown.
    decimals: usize,
}

const WORKLOADS: [Workload; 11] = [
    Workload {
        figure: "connect_ms",
        title: "connect + initialize + list tools",
        unit: "ms",
        decimals: 2,
    },
    Workload {
        figure: "p50_us",
        title: "sequential calls, p50",
        unit: "µs",
        decimals: 1,
    },
    Workload {
        figure: "p99_us",
        title: "sequential calls, p99",
        unit: "µs",
        decimals: 1,
    },
    Workload {
        figure: "calls_per_s",
        title: "64 calls in flight",
        unit: "calls/s",
        decimals: 0,
    },
    Workload {
        figure: "cpu_us",
        title: "client CPU per call",
        unit: "µs",
        decimals: 1,
    },
    Workload {
        figure: "peak_rss_kib",
        title: "client peak RSS",
        unit: "KiB",
        decimals: 0,
    },
    Workload {
        figure: "idle_kib",
        title: "idle memory per stdio connection",
        unit: "KiB",
        decimals: 1,
    },
    Workload {
        figure: "timed_out_rss_ratio",
        title: "RSS after / before 100 000 timed-out requests",
        unit: "×",
        decimals: 3,
    },
    Workload {
        figure: "all_connected_ms",
        title: "50 stdio servers through the pool, all connected",
        unit: "ms",
        decimals: 1,
    },
    Workload {
        figure: "gateway_p50_us",
        title: "a call through `plexus serve`, p50",
        unit: "µs",
        decimals: 1,
    },
    Workload {
        figure: "gateway_calls_per_s",
        title: "32 calls in flight through `plexus serve`",
        unit: "calls/s",
        decimals: 0,
    },
];

/// Medians: (pass, figure, transport, row) → value.
pub(crate) type Medians = BTreeMap<(String, String, String, String), f64>;

/// The median of each figure over its rounds.
pub(crate) fn medians(samples: &[Sample]) -> Medians {
    let mut grouped: BTreeMap<(String, String, String, String), Vec<f64>> = BTreeMap::new();
    for sample in samples {
        grouped
            .entry((
                sample.pass.clone(),
                sample.figure.clone(),
                sample.transport.clone(),
                sample.row.clone(),
            ))
            .or_default()
            .push(sample.value);
    }
    grouped
        .into_iter()
        .map(|(key, values)| (key, crate::support::median(values)))
        .collect()
}

/// The passes in the order they ran.
fn passes(samples: &[Sample]) -> Vec<String> {
    let mut passes: Vec<String> = Vec::new();
    for sample in samples {
        if !passes.contains(&sample.pass) {
            passes.push(sample.pass.clone());
        }
    }
    passes
}

/// Every row label in table order.
fn row_labels() -> Vec<String> {
    let mut rows: Vec<String> = call_rows().into_iter().map(Row::label).collect();
    rows.extend([DIRECT.to_owned(), THROUGH_GATEWAY.to_owned()]);
    rows
}

fn floor_ratio(
    get: &impl Fn(&str, &str, &str) -> Option<f64>,
    workload: &Workload,
    transport: &str,
    row: &str,
) -> Option<f64> {
    Some(get(workload.figure, transport, row)? / get(workload.figure, transport, floor_of(row))?)
}

fn rmcp_ratio(
    get: &impl Fn(&str, &str, &str) -> Option<f64>,
    workload: &Workload,
    transport: &str,
    row: &str,
) -> Option<f64> {
    Some(get(workload.figure, transport, row)? / rmcp_best(get, workload.figure, transport)?)
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×"))
}

/// The Markdown table and the targets block.
pub(crate) fn render(samples: &[Sample], rounds: usize) -> String {
    let medians = medians(samples);
    let passes = passes(samples);
    let mut out = String::new();
    let _ = write!(out, "| workload | wire | client |");
    for pass in &passes {
        let _ = write!(out, " {pass} | × floor | × rmcp best |");
    }
    out.push('\n');
    out.push_str("|---|---|---|");
    for _ in &passes {
        out.push_str("--:|--:|--:|");
    }
    out.push('\n');
    for workload in &WORKLOADS {
        for transport in ["stdio", "HTTP"] {
            for row in row_labels() {
                if passes
                    .iter()
                    .all(|pass| lookup_fn(&medians, pass)(workload.figure, transport, &row).is_none())
                {
                    continue;
                }
                let _ = write!(out, "| {} ({}) | {transport} | {row} |", workload.title, workload.unit);
                for pass in &passes {
                    let get = lookup_fn(&medians, pass);
                    let value = get(workload.figure, transport, &row);
                    let shown = value.map_or_else(|| "—".to_owned(), |v| format!("{v:.*}", workload.decimals));
                    let _ = write!(
                        out,
                        " {shown} | {} | {} |",
                        ratio(floor_ratio(&get, workload, transport, &row)),
                        ratio(rmcp_ratio(&get, workload, transport, &row)),
                    );
                }
                out.push('\n');
            }
        }
    }
    let _ = writeln!(
        out,
        "\nMedians of {rounds} round(s), rows interleaved in each round; × floor: to the floor of the same era (the gateway: to the direct call); × rmcp best: to the better of rmcp and rmcp tuned."
    );
    if let Some(first) = passes.first() {
        out.push('\n');
        out.push_str(&crate::targets::render(&lookup_fn(&medians, first), first));
    }
    out
}

/// The medians of one pass as a function of (figure, transport, row).
fn lookup_fn<'a>(medians: &'a Medians, pass: &'a str) -> impl Fn(&str, &str, &str) -> Option<f64> + 'a {
    move |figure, transport, row| {
        medians
            .get(&(pass.to_owned(), figure.to_owned(), transport.to_owned(), row.to_owned()))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(pass: &str, round: usize, figure: &str, transport: &str, row: &str, value: f64) -> Sample {
        Sample {
            pass: pass.to_owned(),
            round,
            figure: figure.to_owned(),
            transport: transport.to_owned(),
            row: row.to_owned(),
            value,
        }
    }

    /// Medians over rounds; ratios to the floor of the row's era and to rmcp's better row; a
    /// figure nobody measured is left out of the table; the targets are judged on the first pass.
    #[test]
    fn the_table_shows_medians_and_ratios() {
        let mut samples = Vec::new();
        for (round, floor) in [(0, 10.0), (1, 30.0), (2, 20.0)] {
            samples.push(sample("pinned to CPU 0", round, "p50_us", "stdio", "floor", floor));
        }
        samples.push(sample(
            "pinned to CPU 0",
            0,
            "p50_us",
            "stdio",
            "floor (stateless)",
            40.0,
        ));
        samples.push(sample("pinned to CPU 0", 0, "p50_us", "stdio", "plexus", 30.0));
        samples.push(sample(
            "pinned to CPU 0",
            0,
            "p50_us",
            "stdio",
            "plexus (stateless)",
            60.0,
        ));
        samples.push(sample("pinned to CPU 0", 0, "p50_us", "stdio", "rmcp", 80.0));
        samples.push(sample("pinned to CPU 0", 0, "p50_us", "stdio", "rmcp tuned", 60.0));
        samples.push(sample("pinned to CPU 0", 0, "calls_per_s", "stdio", "rmcp", 1000.0));
        samples.push(sample(
            "pinned to CPU 0",
            0,
            "calls_per_s",
            "stdio",
            "rmcp tuned",
            2000.0,
        ));
        samples.push(sample("pinned to CPU 0", 0, "calls_per_s", "stdio", "plexus", 7000.0));
        samples.push(sample("unpinned", 0, "p50_us", "stdio", "floor", 10.0));
        samples.push(sample("unpinned", 0, "p50_us", "stdio", "plexus", 25.0));
        let table = render(&samples, 3);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| workload | wire | client | pinned to CPU 0 | × floor | × rmcp best | unpinned | × floor | × rmcp best |"
        );
        assert!(
            lines.contains(&"| sequential calls, p50 (µs) | stdio | floor | 20.0 | 1.00× | 0.33× | 10.0 | 1.00× | — |"),
            "{table}"
        );
        assert!(
            lines.contains(
                &"| sequential calls, p50 (µs) | stdio | plexus (stateless) | 60.0 | 1.50× | 1.00× | — | — | — |"
            ),
            "{table}"
        );
        assert!(
            lines
                .contains(&"| sequential calls, p50 (µs) | stdio | plexus | 30.0 | 1.50× | 0.50× | 25.0 | 2.50× | — |"),
            "{table}"
        );
        assert!(
            lines.contains(&"| 64 calls in flight (calls/s) | stdio | plexus | 7000 | — | 3.50× | — | — | — |"),
            "{table}"
        );
        assert!(!table.contains("| HTTP |"), "{table}");
        assert!(table.contains("Targets (issue 31), pinned to CPU 0:"), "{table}");
        assert!(
            lines.contains(
                &"- stdio p50 ≤ 1.8× the floor (multi-thread runtime): plexus 1.50×, plexus (stateless) 1.50× — **met**"
            ),
            "{table}"
        );
        assert!(
            lines.contains(
                &"- stdio, 64 in flight: ≥ 3× rmcp's best: plexus 3.50×, plexus ct: not measured — **MISSED**"
            ),
            "{table}"
        );
    }
}
