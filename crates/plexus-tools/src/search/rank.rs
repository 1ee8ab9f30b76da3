//! Running a query over an index: the name matches, the BM25 scores, the best `k` in order.

use crate::search::distance::{Rows, allowed_typos};
use crate::search::segment::{Doc, KeyFilter, MAX_KEY_CHARS, Posting};
use crate::search::tokenize::{char_set, for_each_word, name_key};
use crate::search::{MAX_HITS, MAX_QUERY_BYTES, MAX_QUERY_WORDS, Match, SearchError, SearchHit, SearchIndex};

/// BM25's term frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalization.
const B: f32 = 0.75;

/// The English words a query's text match leaves out (when it has others): they are in most
/// descriptions and tell none of them apart. Names are still matched whole.
const STOP_WORDS: [&str; 24] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "its", "of", "on", "or",
    "that", "the", "this", "to", "with", "me",
];

/// A checked query: its words and its name key, and how many hits it asks for.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    /// The first [`MAX_QUERY_WORDS`] different words, sorted.
    terms: Vec<String>,
    /// The name key's characters; empty when too long to be a name.
    key: Vec<char>,
    key_text: String,
    key_set: u64,
    /// Its words sorted and joined by spaces, when there are two or more.
    sorted_words: String,
    k: usize,
}

impl SearchQuery {
    /// The query `text`, asking for the `k` best hits: at most [`MAX_QUERY_BYTES`] bytes, at
    /// least one letter or digit, `k` from 1 to [`MAX_HITS`].
    pub fn new(text: &str, k: usize) -> Result<SearchQuery, SearchError> {
        if !(1..=MAX_HITS).contains(&k) {
            return Err(SearchError::Count { k });
        }
        if text.len() > MAX_QUERY_BYTES {
            return Err(SearchError::QueryTooLong { bytes: text.len() });
        }
        let mut all = Vec::new();
        for_each_word(text, |word| all.push(word.to_owned()));
        if all.is_empty() {
            return Err(SearchError::NoWords { query: text.to_owned() });
        }
        // Words such as "of" and "the" say nothing of a tool, unless they are all there is.
        let telling = all.iter().any(|word| !STOP_WORDS.contains(&word.as_str()));
        let mut terms: Vec<String> = Vec::new();
        for word in &all {
            let wanted = !telling || !STOP_WORDS.contains(&word.as_str());
            if wanted && terms.len() < MAX_QUERY_WORDS && !terms.contains(word) {
                terms.push(word.clone());
            }
        }
        terms.sort_unstable();
        let mut sorted = all;
        sorted.sort_unstable();
        let mut key_text = name_key(text);
        let mut key: Vec<char> = key_text.chars().collect();
        if key.len() > MAX_KEY_CHARS {
            key.clear();
            key_text.clear();
        }
        Ok(SearchQuery {
            terms,
            key_set: char_set(&key_text),
            key,
            key_text,
            sorted_words: if sorted.len() > 1 {
                sorted.join(" ")
            } else {
                String::new()
            },
            k,
        })
    }

    /// How many hits it asks for.
    pub fn k(&self) -> usize {
        self.k
    }

    /// How the tool `doc` (whose key filter is `filter`) matches by name, if it does.
    fn name_match(&self, doc: &Doc, filter: &KeyFilter, rows: &mut Rows) -> Option<Match> {
        let length = self.key.len() as u32;
        let exact = (0..3).any(|at| {
            filter.sets[at] == self.key_set && filter.chars[at] == length && *doc.keys[at].text == *self.key_text
        });
        if exact {
            return Some(Match::ExactName);
        }
        if !self.sorted_words.is_empty() && *doc.sorted_words == *self.sorted_words {
            return Some(Match::ReorderedName);
        }
        let mut least: Option<usize> = None;
        for at in 0..3 {
            let chars = filter.chars[at];
            let limit = allowed_typos(chars.min(length) as usize) as u32;
            let possible = limit > 0
                && chars.abs_diff(length) <= limit
                && (filter.sets[at] ^ self.key_set).count_ones() <= 2 * limit;
            if possible && let Some(typos) = rows.within(&self.key, &doc.keys[at].text, limit as usize) {
                least = Some(least.map_or(typos, |least| least.min(typos)));
            }
        }
        least.map(|typos| Match::NearName { typos: typos as u8 })
    }

    /// Whether a tool whose key filter is `filter` may match by name at all (its keys' lengths
    /// and character sets allow it): the cheap test before [`name_match`](Self::name_match).
    fn may_name(&self, filter: &KeyFilter) -> bool {
        let length = self.key.len() as u32;
        (0..3).any(|at| {
            let chars = filter.chars[at];
            let limit = allowed_typos(chars.min(length) as usize) as u32;
            chars.abs_diff(length) <= limit && (filter.sets[at] ^ self.key_set).count_ones() <= 2 * limit
        }) || (!self.sorted_words.is_empty() && self.sorted_words.len() as u32 == filter.words)
    }
}

/// A tool's place in the score table and its part.
#[derive(Debug, Clone, Copy)]
struct Slot {
    part: usize,
    doc: u32,
}

/// The hits of `query` over `index`, best first. Counts and lengths become `f32` (exact up to
/// 2^24, far beyond any pool; a larger one would only round its scores alike).
#[allow(clippy::cast_precision_loss)]
pub(super) fn run(index: &SearchIndex, query: &SearchQuery) -> Vec<SearchHit> {
    let doc = |slot: Slot| &index.parts[slot.part].segment.docs[slot.doc as usize];
    let slot_of = |slot: Slot| index.parts[slot.part].offset + slot.doc as usize;
    // Names.
    let mut named: Vec<(Match, Slot)> = Vec::new();
    if !query.key.is_empty() {
        let mut rows = Rows::default();
        for (part_at, part) in index.parts.iter().enumerate() {
            for (at, filter) in part.segment.filters.iter().enumerate() {
                let at = at as u32;
                if query.may_name(filter)
                    && part.has(at)
                    && let Some(matched) = query.name_match(&part.segment.docs[at as usize], filter, &mut rows)
                {
                    named.push((matched, Slot { part: part_at, doc: at }));
                }
            }
        }
    }
    // BM25 over the pool's tools: each term's postings in every segment, twice (its document
    // frequency first).
    let mut scores = vec![0f32; index.slots];
    let mut touched: Vec<Slot> = Vec::new();
    let tools = index.tools as f32;
    let average = if index.tools == 0 {
        1.0
    } else {
        (index.total_len as f32 / tools).max(1.0)
    };
    let mut lists: Vec<(usize, &[Posting])> = Vec::with_capacity(index.parts.len());
    for term in &query.terms {
        lists.clear();
        let mut frequency = 0usize;
        for (part_at, part) in index.parts.iter().enumerate() {
            let postings = part.segment.postings(term);
            if postings.is_empty() {
                continue;
            }
            frequency += match &part.in_pool {
                None => postings.len(),
                Some(_) => postings.iter().filter(|posting| part.has(posting.doc)).count(),
            };
            lists.push((part_at, postings));
        }
        if frequency == 0 {
            continue;
        }
        let frequency = frequency as f32;
        let idf = (1.0 + (tools - frequency + 0.5) / (frequency + 0.5)).ln();
        for &(part_at, postings) in &lists {
            let part = &index.parts[part_at];
            for posting in postings.iter().filter(|posting| part.has(posting.doc)) {
                let count = posting.count as f32;
                let len = posting.len as f32;
                let score = idf * count * (K1 + 1.0) / (count + K1 * (1.0 - B + B * len / average));
                let slot = part.offset + posting.doc as usize;
                if scores[slot] == 0.0 {
                    touched.push(Slot {
                        part: part_at,
                        doc: posting.doc,
                    });
                }
                scores[slot] += score;
            }
        }
    }
    // The order: names first (by how they match), then by score, then by name.
    let by_name = |a: &Slot, b: &Slot| {
        let (x, y) = (&doc(*a).entry, &doc(*b).entry);
        x.name.cmp(&y.name).then_with(|| x.server.cmp(&y.server))
    };
    let by_score = |a: &Slot, b: &Slot| {
        scores[slot_of(*b)]
            .total_cmp(&scores[slot_of(*a)])
            .then_with(|| by_name(a, b))
    };
    named.sort_by(|(a_match, a), (b_match, b)| a_match.cmp(b_match).then_with(|| by_score(a, b)));
    named.truncate(query.k);
    let mut text: Vec<Slot> = Vec::new();
    let wanted = query.k - named.len();
    if wanted > 0 {
        // A name match has its score too: it is left out of the text matches.
        let mut taken: Vec<usize> = named.iter().map(|(_, slot)| slot_of(*slot)).collect();
        taken.sort_unstable();
        let mut scored: Vec<(f32, Slot)> = touched
            .into_iter()
            .filter(|slot| taken.binary_search(&slot_of(*slot)).is_err())
            .map(|slot| (scores[slot_of(slot)], slot))
            .collect();
        text = best(&mut scored, wanted, &by_name);
        text.sort_unstable_by(by_score);
    }
    let hit = |slot: Slot, matched: Match| SearchHit {
        entry: std::sync::Arc::clone(&doc(slot).entry),
        score: scores[slot_of(slot)],
        matched,
    };
    let mut hits: Vec<SearchHit> = named.into_iter().map(|(matched, slot)| hit(slot, matched)).collect();
    hits.extend(text.into_iter().map(|slot| hit(slot, Match::Text)));
    hits
}

/// The `wanted` best of `scored` (by score, then by name), in no order. Chosen by score alone
/// (a comparison of two numbers), names compared only among the tools tied at the last place.
fn best(scored: &mut [(f32, Slot)], wanted: usize, by_name: &dyn Fn(&Slot, &Slot) -> std::cmp::Ordering) -> Vec<Slot> {
    if scored.len() <= wanted {
        return scored.iter().map(|(_, slot)| *slot).collect();
    }
    scored.select_nth_unstable_by(wanted - 1, |a, b| b.0.total_cmp(&a.0));
    let last = scored[wanted - 1].0;
    let mut chosen: Vec<Slot> = Vec::with_capacity(wanted);
    let mut tied: Vec<Slot> = Vec::new();
    for (score, slot) in scored.iter() {
        match score.total_cmp(&last) {
            std::cmp::Ordering::Greater => chosen.push(*slot),
            std::cmp::Ordering::Equal => tied.push(*slot),
            std::cmp::Ordering::Less => {}
        }
    }
    let room = wanted - chosen.len();
    if tied.len() > room {
        tied.select_nth_unstable_by(room - 1, by_name);
        tied.truncate(room);
    }
    chosen.extend(tied);
    chosen
}
