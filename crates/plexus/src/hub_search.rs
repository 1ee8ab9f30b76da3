//! Tool search over the Hub's tool pool (see [`plexus_tools::search`]): each server's search
//! segment is kept while its list stays the same (the Hub builds a server's entries once per
//! list, and a segment is kept while its entries are), so that a search after a change costs
//! the index of the changed servers only, and repeated searches build nothing.

use std::sync::Mutex;

use plexus_tools::{SearchError, SearchHit, SearchIndex, SearchQuery, SegmentCache, ToolPool};

use crate::hub::Hub;
use crate::lock;

/// The Hub's kept search segments.
#[derive(Debug, Default)]
pub(crate) struct SearchSegments(Mutex<SegmentCache>);

impl Hub {
    /// The `k` tools of the tool pool now ([`tool_pool`](Self::tool_pool)) that best match
    /// `query`, best first: an exact or near-exact name first (case, separators and the
    /// `mcp__<server>__` prefix aside, or one or two typos), then by BM25 over the tools' names,
    /// titles, descriptions and argument names; ties by name. `query` is at most
    /// [`MAX_QUERY_BYTES`](plexus_tools::search::MAX_QUERY_BYTES) bytes and `k` from 1 to
    /// [`MAX_HITS`](plexus_tools::search::MAX_HITS); the error says which is wrong.
    pub async fn search_tools(&self, query: &str, k: usize) -> Result<Vec<SearchHit>, SearchError> {
        let query = SearchQuery::new(query, k)?;
        let pool = self.tool_pool().await;
        Ok(self.search_index(&pool).search(&query))
    }

    /// The search index of `pool` (a tool pool this Hub built, possibly narrowed by the host),
    /// from the kept segments: for a host that has the pool already, or searches it more than
    /// once.
    pub fn search_index(&self, pool: &ToolPool) -> SearchIndex {
        lock(&self.search_segments().0).index(pool)
    }
}
