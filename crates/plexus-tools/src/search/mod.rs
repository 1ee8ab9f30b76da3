//! Tool search: the tools of the pool that best match a query, best first, so that a host can
//! give its model a short list and a search tool instead of every definition up front.
//!
//! ```
//! use plexus_tools::{ServerTools, ToolFilter, ToolIndex, assemble, server_entries};
//! use plexus_tools::search::Match;
//!
//! let tools: Vec<plexus_protocol::Tool> = serde_json::from_value(serde_json::json!([
//!     {"name": "get_weather", "description": "The forecast for a city.", "inputSchema": {"properties": {"city": {}}}},
//!     {"name": "read_file", "description": "A file's text.", "inputSchema": {"properties": {"path": {}}}},
//! ])).unwrap();
//! let entries = server_entries("meteo", &tools, &mut ToolIndex::default());
//! let filter = ToolFilter::default();
//! let pool = assemble(&[], &[ServerTools { server: "meteo", entries: &entries, filter: &filter }]);
//!
//! let hits = pool.search("getWether", 5).unwrap(); // a typo, another spelling
//! assert_eq!(hits[0].entry.name, "mcp__meteo__get_weather");
//! assert_eq!(hits[0].matched, Match::NearName { typos: 1 });
//! assert_eq!(pool.search("city", 5).unwrap()[0].entry.tool, "get_weather"); // an argument
//! ```
//!
//! How tools rank:
//! - Names first. A query that is a tool's name, its case and separators (`-`, `_`, spaces,
//!   `__`) aside, with or without the `mcp__<server>__` prefix (or with the server's name in
//!   front, `weather get_forecast`), is an [exact name](Match::ExactName); the words of the name
//!   in another order (`weather get`) come next; then names one or two typos away (an
//!   insertion, deletion, substitution or swap of adjacent characters each count as one; none
//!   for names up to 3 characters, one up to 7, two from 8 on). Every name match ranks above
//!   every text match, whatever the scores.
//! - Then text: BM25 (k1 = 1.2, b = 0.75) over the words (see [`tokenize`]) of the tool's own
//!   name (each occurrence counting 3), its server's name (1), its title (2), its description
//!   (1) and its argument names (2: the input schema's `properties`, and theirs down to three
//!   levels). Document frequencies and the average length are those of the whole pool. A
//!   query's words such as "of", "the" and "a" are left out of the text match when it has others.
//! - Ties go to the name that sorts first: the same pool and query always give the same list.
//!
//! Kept current cheaply: the index is made of one [`Segment`] per server, built once per list
//! the server sends; a [`SegmentCache`] keeps them, and a change of one server's list rebuilds
//! only that server's segment. The segments are combined when the pool's index is made
//! ([`SegmentCache::index`]), which only checks which of each segment's tools are in the pool
//! (by identity: the entries a host keeps per list, see [`server_entries`](crate::server_entries)).
//!
//! Bounded: a query holds at most [`MAX_QUERY_BYTES`] bytes, of which the first
//! [`MAX_QUERY_WORDS`] different words count; at most [`MAX_HITS`] hits are asked for.
//!
//! Why not a search crate: the BM25 crates (`bm25`, tantivy and the like) each bring their own
//! tokenizer and a corpus-wide index; none combines independently built per-server segments
//! with pool-wide statistics and a filter of the pool, and none ranks names as names. What is
//! needed is about two hundred lines, tested here.

mod distance;
mod rank;
mod segment;
pub mod tokenize;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub use rank::SearchQuery;
pub use segment::{MAX_KEY_CHARS, Segment};

use crate::{ToolEntry, ToolPool};

/// The longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// The most hits one search returns (`k` is from 1 to this).
pub const MAX_HITS: usize = 100;
/// The most different words of a query that count (the first ones).
pub const MAX_QUERY_WORDS: usize = 32;

/// Why a tool matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Match {
    /// The query is the tool's name (case and separators aside, the prefix optional).
    ExactName,
    /// The query is the words of the tool's name in another order.
    ReorderedName,
    /// The query is the tool's name with this many typos (1 or 2).
    NearName {
        /// How many.
        typos: u8,
    },
    /// Words of the query are in the tool's name, title, description or argument names.
    Text,
}

impl Match {
    /// A short label: `exact name`, `reordered name`, `name, 1 typo`, `name, 2 typos`, `text`.
    pub fn label(self) -> &'static str {
        match self {
            Match::ExactName => "exact name",
            Match::ReorderedName => "reordered name",
            Match::NearName { typos: 1 } => "name, 1 typo",
            Match::NearName { .. } => "name, 2 typos",
            Match::Text => "text",
        }
    }
}

impl std::fmt::Display for Match {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One tool a search found.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The tool.
    pub entry: Arc<ToolEntry>,
    /// Its BM25 score for the query's words (0 for a name match none of whose words are in the
    /// tool's text). Hits are ordered by [`matched`](Self::matched) first, then by score.
    pub score: f32,
    /// Why it matched.
    pub matched: Match,
}

/// A query the search cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query is longer than [`MAX_QUERY_BYTES`].
    #[error("the search query is {bytes} bytes long; at most {MAX_QUERY_BYTES} are allowed")]
    QueryTooLong {
        /// Its length.
        bytes: usize,
    },
    /// The query has no letter or digit.
    #[error("the search query {query:?} has no word to look for")]
    NoWords {
        /// The query.
        query: String,
    },
    /// The number of hits asked for is not from 1 to [`MAX_HITS`].
    #[error("{k} hits asked for; a search returns from 1 to {MAX_HITS}")]
    Count {
        /// The number asked for.
        k: usize,
    },
}

/// A segment and which of its tools are in the pool (`None`: all of them).
type Placed = (Arc<Segment>, Option<Box<[bool]>>);

/// One server's segment and which of its tools are in the pool.
#[derive(Debug)]
struct Part {
    segment: Arc<Segment>,
    /// `None`: every tool of the segment.
    in_pool: Option<Box<[bool]>>,
    /// The first slot of its tools in a search's score table.
    offset: usize,
}

impl Part {
    fn has(&self, doc: u32) -> bool {
        self.in_pool.as_ref().is_none_or(|in_pool| in_pool[doc as usize])
    }
}

/// An index of a tool pool's MCP tools (the built-ins have no definition to search), ready for
/// any number of searches: the servers' segments and the pool's statistics.
#[derive(Debug, Default)]
pub struct SearchIndex {
    parts: Vec<Part>,
    /// How many tools of the pool it holds.
    tools: usize,
    /// Their lengths' sum.
    total_len: u64,
    /// Every segment's tools, in the pool or not: the score table's size.
    slots: usize,
}

impl SearchIndex {
    /// The index of `pool`, every segment built anew (see [`SegmentCache`] to keep them).
    pub fn new(pool: &ToolPool) -> SearchIndex {
        let parts = by_server(pool)
            .into_iter()
            .map(|(server, entries)| (Arc::new(Segment::build(server, entries)), None))
            .collect();
        SearchIndex::of_parts(parts)
    }

    fn of_parts(parts: Vec<Placed>) -> SearchIndex {
        let mut index = SearchIndex::default();
        for (segment, in_pool) in parts {
            let part = Part {
                offset: index.slots,
                segment,
                in_pool,
            };
            index.slots += part.segment.docs.len();
            for (doc, tool) in part.segment.docs.iter().enumerate() {
                if part.has(doc as u32) {
                    index.tools += 1;
                    index.total_len += u64::from(tool.len);
                }
            }
            index.parts.push(part);
        }
        index
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.tools
    }

    /// Whether it holds no tool.
    pub fn is_empty(&self) -> bool {
        self.tools == 0
    }

    /// Its segments, one per server, by server name.
    pub fn segments(&self) -> impl Iterator<Item = &Arc<Segment>> {
        self.parts.iter().map(|part| &part.segment)
    }

    /// The best hits for `query`, best first (see the [module](self) for the order).
    pub fn search(&self, query: &SearchQuery) -> Vec<SearchHit> {
        rank::run(self, query)
    }
}

/// The pool's MCP tools by server (each server's in the pool's order), servers by name.
fn by_server(pool: &ToolPool) -> BTreeMap<&str, Vec<&Arc<ToolEntry>>> {
    let mut servers: BTreeMap<&str, Vec<&Arc<ToolEntry>>> = BTreeMap::new();
    for entry in &pool.entries {
        servers.entry(entry.server.as_str()).or_default().push(entry);
    }
    servers
}

/// Each server's [`Segment`], kept from one index to the next while its tools stay the same
/// entries: what keeps a pool's index current for the cost of the servers whose lists changed.
#[derive(Debug, Default)]
pub struct SegmentCache {
    segments: HashMap<String, Arc<Segment>>,
    built: u64,
}

impl SegmentCache {
    /// An empty cache.
    pub fn new() -> SegmentCache {
        SegmentCache::default()
    }

    /// The index of `pool`: each server's kept segment when it holds the server's tools of the
    /// pool (the same entries, by identity, in the same order, the pool possibly holding fewer
    /// of them: a filter, a hold), else a segment built anew and kept. The segments of servers
    /// no longer in the pool are dropped. The searches of the index are those of
    /// [`SearchIndex::new`] of the same pool.
    pub fn index(&mut self, pool: &ToolPool) -> SearchIndex {
        let servers = by_server(pool);
        self.segments.retain(|server, _| servers.contains_key(server.as_str()));
        let mut parts = Vec::with_capacity(servers.len());
        for (server, entries) in servers {
            let kept = self.segments.get(server).and_then(|segment| {
                let found = segment.find(&entries)?;
                let in_pool = (!found.iter().all(|found| *found)).then(|| found.into_boxed_slice());
                Some((Arc::clone(segment), in_pool))
            });
            let part = kept.unwrap_or_else(|| {
                let segment = Arc::new(Segment::build(server, entries));
                self.built += 1;
                self.segments.insert(server.to_owned(), Arc::clone(&segment));
                (segment, None)
            });
            parts.push(part);
        }
        SearchIndex::of_parts(parts)
    }

    /// How many segments it has built so far.
    pub fn segments_built(&self) -> u64 {
        self.built
    }
}

impl ToolPool {
    /// The `k` tools of the pool that best match `query`, best first (see [`search`](self)).
    /// Indexes the pool for this one search: a host that searches a pool more than once keeps
    /// a [`SegmentCache`] and searches its [`index`](SegmentCache::index) instead.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<SearchHit>, SearchError> {
        let query = SearchQuery::new(query, k)?;
        Ok(SearchIndex::new(self).search(&query))
    }
}

#[cfg(test)]
mod tests;
