//! Assembling a tool pool of 10 000 MCP tools (100 servers × 100 tools): from the listed tools
//! (entries built, names through a warm index), and from the entries kept per list (what a host
//! does on every change of any server); and one name lookup. Medians of many rounds.
#![allow(missing_docs)]
#![allow(clippy::cast_precision_loss)]

use std::sync::Arc;
use std::time::Instant;

use plexus_protocol::Tool;
use plexus_tools::{ServerTools, ToolEntry, ToolFilter, ToolIndex, assemble, server_entries};

const SERVERS: usize = 100;
const TOOLS: usize = 100;
const ROUNDS: usize = 51;
const LOOKUPS: usize = 100_000;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The servers' kept entries as `assemble` takes them.
fn view<'a>(built: &'a [(&'a str, Arc<[Arc<ToolEntry>]>)], filter: &'a ToolFilter) -> Vec<ServerTools<'a>> {
    built
        .iter()
        .map(|(server, entries)| ServerTools {
            server,
            entries,
            filter,
        })
        .collect()
}

fn main() {
    let lists: Vec<(String, Vec<Tool>)> = (0..SERVERS)
        .map(|s| {
            let tools = (0..TOOLS)
                .map(|t| {
                    serde_json::from_value(serde_json::json!({
                        "name": format!("tool_{t:03}"),
                        "description": "Does one thing well. ".repeat(8),
                        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                        "annotations": {"readOnlyHint": t % 2 == 0},
                    }))
                    .unwrap()
                })
                .collect();
            (format!("server-{s:03}"), tools)
        })
        .collect();
    let filter = ToolFilter::default();
    let builtins = ["Read", "Write", "Bash"];
    let mut index = ToolIndex::default();
    // Cold: every server's entries built from its listed tools (what one list change costs
    // for its own server), then assembled.
    let mut cold_rounds = Vec::with_capacity(ROUNDS);
    let mut built = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        built = lists
            .iter()
            .map(|(server, tools)| (server.as_str(), server_entries(server, tools, &mut index)))
            .collect::<Vec<_>>();
        let pool = assemble(&builtins, &view(&built, &filter));
        cold_rounds.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(pool.entries.len(), SERVERS * TOOLS);
    }
    // Warm: the entries kept per list, the pool assembled (what every change of any server costs).
    let servers = view(&built, &filter);
    let mut rounds = Vec::with_capacity(ROUNDS);
    let mut size = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let pool = assemble(&builtins, &servers);
        rounds.push(started.elapsed().as_secs_f64() * 1e3);
        size = pool.entries.len();
    }
    let assembly = median(rounds);
    let cold = median(cold_rounds);
    let name = index.name_of("server-050", "tool_050").unwrap().to_owned();
    let started = Instant::now();
    let mut found = 0;
    for _ in 0..LOOKUPS {
        found += usize::from(index.resolve(std::hint::black_box(&name)).is_some());
    }
    let lookup = started.elapsed().as_secs_f64() * 1e9 / LOOKUPS as f64;
    assert_eq!(found, LOOKUPS);
    println!("tool pool: {size} MCP tools + {} built-ins", builtins.len());
    println!("entries built from the 10 000 listed tools, then assembled (median of {ROUNDS}): {cold:.2} ms");
    println!(
        "assembly from the kept entries (median of {ROUNDS}): {assembly:.2} ms — target ≤ 5 ms: {}",
        if assembly <= 5.0 { "met" } else { "MISSED" }
    );
    println!("one name lookup: {lookup:.0} ns");
}
