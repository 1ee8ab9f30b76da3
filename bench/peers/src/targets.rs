//! Issue 31's targets, each judged on one pass's medians: met or MISSED.

use std::fmt::Write as _;

use crate::harness::THROUGH_GATEWAY;

/// What a target's figure is divided by.
#[derive(Clone, Copy)]
enum Reference {
    /// The floor of the row's era (the gateway row: the direct call).
    Floor,
    /// The better of rmcp and rmcp tuned.
    RmcpBest,
    /// Nothing: the figure itself.
    Value,
}

/// How the ratio (or value) must stand to the bound.
#[derive(Clone, Copy)]
enum Bound {
    AtMost(f64),
    AtLeast(f64),
    /// Within this fraction of 1 (either side).
    Within(f64),
}

struct Target {
    text: &'static str,
    figure: &'static str,
    transport: &'static str,
    rows: &'static [&'static str],
    reference: Reference,
    bound: Bound,
}

const PLEXUS_BOTH_RUNTIMES: &[&str] = &["plexus", "plexus ct"];

const TARGETS: [Target; 12] = [
    Target {
        text: "HTTP, 64 in flight: ≥ 2× rmcp's best",
        figure: "calls_per_s",
        transport: "HTTP",
        rows: PLEXUS_BOTH_RUNTIMES,
        reference: Reference::RmcpBest,
        bound: Bound::AtLeast(2.0),
    },
    Target {
        text: "HTTP, 64 in flight: ≥ 0.7× the floor",
        figure: "calls_per_s",
        transport: "HTTP",
        rows: &["plexus", "plexus (stateless)", "plexus ct", "plexus ct (stateless)"],
        reference: Reference::Floor,
        bound: Bound::AtLeast(0.7),
    },
    Target {
        text: "HTTP p50 ≤ 1.8× the floor (current-thread runtime)",
        figure: "p50_us",
        transport: "HTTP",
        rows: &["plexus ct", "plexus ct (stateless)"],
        reference: Reference::Floor,
        bound: Bound::AtMost(1.8),
    },
    Target {
        text: "HTTP p50 ≤ 2.0× the floor (multi-thread runtime)",
        figure: "p50_us",
        transport: "HTTP",
        rows: &["plexus", "plexus (stateless)"],
        reference: Reference::Floor,
        bound: Bound::AtMost(2.0),
    },
    Target {
        text: "stdio p50 ≤ 1.5× the floor (current-thread runtime)",
        figure: "p50_us",
        transport: "stdio",
        rows: &["plexus ct", "plexus ct (stateless)"],
        reference: Reference::Floor,
        bound: Bound::AtMost(1.5),
    },
    Target {
        text: "stdio p50 ≤ 1.8× the floor (multi-thread runtime)",
        figure: "p50_us",
        transport: "stdio",
        rows: &["plexus", "plexus (stateless)"],
        reference: Reference::Floor,
        bound: Bound::AtMost(1.8),
    },
    Target {
        text: "stdio, 64 in flight: ≥ 3× rmcp's best",
        figure: "calls_per_s",
        transport: "stdio",
        rows: PLEXUS_BOTH_RUNTIMES,
        reference: Reference::RmcpBest,
        bound: Bound::AtLeast(3.0),
    },
    Target {
        text: "gateway: added p50 ≤ 1.0× the direct call's (p50 through it ≤ 2.0× direct)",
        figure: "gateway_p50_us",
        transport: "stdio",
        rows: &[THROUGH_GATEWAY],
        reference: Reference::Floor,
        bound: Bound::AtMost(2.0),
    },
    Target {
        text: "gateway, 32 in flight: ≥ 0.8× the direct throughput",
        figure: "gateway_calls_per_s",
        transport: "stdio",
        rows: &[THROUGH_GATEWAY],
        reference: Reference::Floor,
        bound: Bound::AtLeast(0.8),
    },
    Target {
        text: "peak RSS ≤ 0.75× rmcp's best (stdio, HTTP)",
        figure: "peak_rss_kib",
        transport: "*",
        rows: PLEXUS_BOTH_RUNTIMES,
        reference: Reference::RmcpBest,
        bound: Bound::AtMost(0.75),
    },
    Target {
        text: "RSS flat (± 10 %) after 100 000 timed-out requests",
        figure: "timed_out_rss_ratio",
        transport: "stdio",
        rows: &["plexus"],
        reference: Reference::Value,
        bound: Bound::Within(0.1),
    },
    Target {
        text: "idle memory ≤ 50 KiB per stdio connection",
        figure: "idle_kib",
        transport: "stdio",
        rows: &["plexus"],
        reference: Reference::Value,
        bound: Bound::AtMost(50.0),
    },
];

/// The floor a row is compared with: the floor of its era (the gateway rows: the direct call).
pub(crate) fn floor_of(row: &str) -> &'static str {
    if row == THROUGH_GATEWAY || row == crate::harness::DIRECT {
        crate::harness::DIRECT
    } else if row.contains("(stateless)") {
        "floor (stateless)"
    } else {
        "floor"
    }
}

/// The better of rmcp's two rows' `figure` over `transport` (more calls per second; less of
/// anything else).
pub(crate) fn rmcp_best(get: &impl Fn(&str, &str, &str) -> Option<f64>, figure: &str, transport: &str) -> Option<f64> {
    let values = ["rmcp", "rmcp tuned"]
        .into_iter()
        .filter_map(|row| get(figure, transport, row));
    if figure.ends_with("per_s") {
        values.reduce(f64::max)
    } else {
        values.reduce(f64::min)
    }
}

/// The targets block for the pass `pass`, whose medians `get(figure, transport, row)` gives.
pub(crate) fn render(get: &impl Fn(&str, &str, &str) -> Option<f64>, pass: &str) -> String {
    let mut out = format!("Targets (issue 31), {pass}:\n\n");
    for target in &TARGETS {
        let transports: &[&str] = if target.transport == "*" {
            &["stdio", "HTTP"]
        } else {
            &[target.transport]
        };
        let mut parts = Vec::new();
        let mut all_met = true;
        for transport in transports {
            for row in target.rows {
                let value = get(target.figure, transport, row);
                let reference = match target.reference {
                    Reference::Floor => get(target.figure, transport, floor_of(row)),
                    Reference::RmcpBest => rmcp_best(get, target.figure, transport),
                    Reference::Value => Some(1.0),
                };
                let where_ = if transports.len() > 1 {
                    format!("{row}, {transport}")
                } else {
                    (*row).to_owned()
                };
                let Some(figure) = value.zip(reference).map(|(v, r)| v / r) else {
                    parts.push(format!("{where_}: not measured"));
                    all_met = false;
                    continue;
                };
                let met = match target.bound {
                    Bound::AtMost(bound) => figure <= bound,
                    Bound::AtLeast(bound) => figure >= bound,
                    Bound::Within(fraction) => (figure - 1.0).abs() <= fraction,
                };
                all_met &= met;
                let shown = match target.reference {
                    Reference::Value if target.figure == "idle_kib" => format!("{figure:.1} KiB"),
                    _ => format!("{figure:.2}×"),
                };
                parts.push(format!("{where_} {shown}"));
            }
        }
        let verdict = if all_met { "met" } else { "MISSED" };
        let _ = writeln!(out, "- {}: {} — **{verdict}**", target.text, parts.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(
        pairs: &'static [(&'static str, &'static str, &'static str, f64)],
    ) -> impl Fn(&str, &str, &str) -> Option<f64> {
        move |figure, transport, row| {
            pairs
                .iter()
                .find(|(f, t, r, _)| *f == figure && *t == transport && *r == row)
                .map(|(.., value)| *value)
        }
    }

    #[test]
    fn memory_targets_are_judged_on_the_values_themselves() {
        let get = figures(&[
            ("timed_out_rss_ratio", "stdio", "plexus", 1.08),
            ("idle_kib", "stdio", "plexus", 61.5),
            ("peak_rss_kib", "stdio", "plexus", 7_000.0),
            ("peak_rss_kib", "stdio", "plexus ct", 6_000.0),
            ("peak_rss_kib", "HTTP", "plexus", 7_500.0),
            ("peak_rss_kib", "HTTP", "plexus ct", 7_500.0),
            ("peak_rss_kib", "stdio", "rmcp", 12_000.0),
            ("peak_rss_kib", "stdio", "rmcp tuned", 10_000.0),
            ("peak_rss_kib", "HTTP", "rmcp", 10_000.0),
        ]);
        let block = render(&get, "pinned to CPU 0");
        assert!(
            block.contains("- RSS flat (± 10 %) after 100 000 timed-out requests: plexus 1.08× — **met**\n"),
            "{block}"
        );
        assert!(
            block.contains("- idle memory ≤ 50 KiB per stdio connection: plexus 61.5 KiB — **MISSED**\n"),
            "{block}"
        );
        assert!(
            block.contains("- peak RSS ≤ 0.75× rmcp's best (stdio, HTTP): plexus, stdio 0.70×, plexus ct, stdio 0.60×, plexus, HTTP 0.75×, plexus ct, HTTP 0.75× — **met**\n"),
            "{block}"
        );
    }

    #[test]
    fn the_gateway_is_judged_against_the_direct_call() {
        let get = figures(&[
            ("gateway_p50_us", "stdio", "plexus (direct)", 20.0),
            ("gateway_p50_us", "stdio", "plexus via plexus serve", 45.0),
            ("gateway_calls_per_s", "stdio", "plexus (direct)", 50_000.0),
            ("gateway_calls_per_s", "stdio", "plexus via plexus serve", 40_000.0),
        ]);
        let block = render(&get, "unpinned");
        assert!(
            block.contains("(p50 through it ≤ 2.0× direct): plexus via plexus serve 2.25× — **MISSED**\n"),
            "{block}"
        );
        assert!(
            block.contains(
                "- gateway, 32 in flight: ≥ 0.8× the direct throughput: plexus via plexus serve 0.80× — **met**\n"
            ),
            "{block}"
        );
    }
}
