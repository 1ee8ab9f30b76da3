//! `plexus tools --search QUERY`: the tools that best match a query, best first, as `plexus
//! tools` shows them with their rank, why they matched and their score; with `--json`, the same
//! objects as `plexus tools --json`, best first.

use std::sync::Arc;

use plexus::tools::{SearchHit, SearchQuery, ToolEntry};

use crate::Outcome;
use crate::commands::with_tool_pool;
use crate::output::{fixed, print_tools_after};
use crate::sources::Configured;
use crate::table::Column;

/// `plexus tools --search QUERY [--limit N]`.
#[derive(Debug, clap::Args)]
pub(crate) struct SearchArgs {
    /// The tools that best match QUERY, best first: an exact or near name (any case or
    /// separators, the mcp__SERVER__ prefix optional, a typo or two) first, then by the
    /// words of their names, titles, descriptions and argument names.
    #[arg(long, value_name = "QUERY")]
    pub(crate) search: Option<String>,
    /// How many tools --search shows at most.
    #[arg(long, value_name = "N", default_value_t = 10, requires = "search",
          value_parser = clap::value_parser!(u16).range(1..=100))]
    pub(crate) limit: u16,
}

/// The columns before the tools' own.
const HIT_COLUMNS: [Column; 3] = [fixed("#"), fixed("MATCH"), fixed("SCORE")];

/// Searches the tools of the `only` server (else of every server) for `query`, showing at most
/// `limit`. A query the search cannot run is a usage error, said before any server starts.
pub(crate) async fn search_command(
    configured: Configured,
    only: Option<&str>,
    query: &str,
    limit: usize,
    json: bool,
) -> Outcome {
    let query = match SearchQuery::new(query, limit) {
        Ok(query) => query,
        Err(e) => return crate::fail_error(&e),
    };
    match with_tool_pool(configured, only, |hub, pool| hub.search_index(pool).search(&query)).await {
        Ok((hits, outcome)) => {
            print_hits(&hits, json);
            outcome
        }
        Err(outcome) => outcome,
    }
}

/// The hits as `plexus tools` prints tools, each after its rank, match and score.
fn print_hits(hits: &[SearchHit], json: bool) {
    let entries: Vec<Arc<ToolEntry>> = hits.iter().map(|hit| Arc::clone(&hit.entry)).collect();
    let lead = |n: usize| {
        let hit = &hits[n];
        vec![
            (n + 1).to_string(),
            hit.matched.label().to_owned(),
            format!("{:.2}", hit.score),
        ]
    };
    print_tools_after(&entries, json, &HIT_COLUMNS, &lead, "no tools match");
}
