//! One server's tools, indexed once per list: each tool's weighted word counts (its name, title,
//! description and argument names) as postings by word, its length, and the keys that name
//! matching compares.

use std::collections::HashMap;
use std::sync::Arc;

use crate::ToolEntry;
use crate::search::tokenize::{char_set, for_each_word, name_key, words};

/// How much one occurrence of a word counts in each field: a word of the tool's own name counts
/// three times one of its description, and so on. The title usually repeats the name, which then
/// counts five times.
const NAME_WEIGHT: u32 = 3;
const TITLE_WEIGHT: u32 = 2;
const ARGUMENT_WEIGHT: u32 = 2;
const SERVER_WEIGHT: u32 = 1;
const DESCRIPTION_WEIGHT: u32 = 1;

/// The most words of one field (a title, a description) counted.
const MAX_FIELD_WORDS: usize = 1024;
/// The most argument names read from one input schema.
const MAX_ARGUMENTS: usize = 256;
/// How deep argument names are read: the top-level `properties` are depth 1, the properties of
/// an object argument (or of an array argument's items) depth 2, and so on.
const MAX_SCHEMA_DEPTH: usize = 3;

/// The longest name key (in characters) that name matching compares: a longer name is found
/// by its words only.
pub const MAX_KEY_CHARS: usize = 256;

/// A name reduced for matching (see [`name_key`]), with its length and character set.
#[derive(Debug)]
pub(crate) struct Key {
    /// The key; empty for a name with no letter or digit, or longer than [`MAX_KEY_CHARS`].
    pub(crate) text: Box<str>,
    pub(crate) chars: usize,
    pub(crate) set: u64,
}

impl Key {
    fn of(key: String) -> Key {
        let chars = key.chars().count();
        if chars > MAX_KEY_CHARS {
            return Key {
                text: Box::default(),
                chars: 0,
                set: 0,
            };
        }
        Key {
            set: char_set(&key),
            text: key.into_boxed_str(),
            chars,
        }
    }
}

/// One tool of a segment.
#[derive(Debug)]
pub(crate) struct Doc {
    pub(crate) entry: Arc<ToolEntry>,
    /// The weighted count of its words (BM25's document length).
    pub(crate) len: u32,
    /// Its name's keys: the tool's own name, the server's and the tool's, the qualified name.
    pub(crate) keys: [Key; 3],
    /// The words of the tool's own name, sorted, joined by spaces (for words in another order).
    pub(crate) sorted_words: Box<str>,
}

/// A tool that has a word, the word's weighted count in it, and the tool's length (here, so
/// that scoring a posting reads nothing else).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posting {
    /// The tool's place in its segment.
    pub(crate) doc: u32,
    pub(crate) count: u32,
    pub(crate) len: u32,
}

/// The lengths and character sets of a tool's three name keys, side by side for the scan that
/// rules out most names before any key is read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KeyFilter {
    pub(crate) sets: [u64; 3],
    pub(crate) chars: [u32; 3],
    /// The length in bytes of the name's sorted words.
    pub(crate) words: u32,
}

/// The tools of one server, indexed once per list the server sends, for a
/// [`SearchIndex`](crate::search::SearchIndex) to combine with the others' at query time.
#[derive(Debug)]
pub struct Segment {
    server: String,
    pub(crate) docs: Vec<Doc>,
    /// Each tool's key filter, in the order of the tools.
    pub(crate) filters: Vec<KeyFilter>,
    /// Each word's postings: a range of [`postings`](Self::postings).
    terms: HashMap<Box<str>, (u32, u32)>,
    postings: Vec<Posting>,
}

impl Segment {
    /// The segment of `server`'s `entries`, in their order.
    pub fn build<'a>(server: &str, entries: impl IntoIterator<Item = &'a Arc<ToolEntry>>) -> Segment {
        let mut by_term: HashMap<Box<str>, Vec<Posting>> = HashMap::new();
        let mut counts: HashMap<Box<str>, u32> = HashMap::new();
        let mut docs = Vec::new();
        for entry in entries {
            counts.clear();
            let mut add = |text: &str, weight: u32, limit: usize| {
                let mut seen = 0;
                for_each_word(text, |word| {
                    if seen < limit {
                        seen += 1;
                        match counts.get_mut(word) {
                            Some(count) => *count += weight,
                            None => {
                                counts.insert(word.into(), weight);
                            }
                        }
                    }
                });
            };
            add(&entry.tool, NAME_WEIGHT, MAX_FIELD_WORDS);
            add(&entry.server, SERVER_WEIGHT, MAX_FIELD_WORDS);
            add(&entry.title, TITLE_WEIGHT, MAX_FIELD_WORDS);
            add(&entry.description, DESCRIPTION_WEIGHT, MAX_FIELD_WORDS);
            for argument in argument_names(&entry.input_schema) {
                add(argument, ARGUMENT_WEIGHT, MAX_FIELD_WORDS);
            }
            let doc = u32::try_from(docs.len()).expect("fewer than 2^32 tools in one server's list");
            let len = counts.values().fold(0u32, |len, count| len.saturating_add(*count));
            for (term, count) in counts.drain() {
                by_term.entry(term).or_default().push(Posting { doc, count, len });
            }
            let mut sorted = words(&entry.tool);
            sorted.sort_unstable();
            docs.push(Doc {
                keys: [
                    Key::of(name_key(&entry.tool)),
                    Key::of(name_key(&entry.server) + &name_key(&entry.tool)),
                    Key::of(name_key(&entry.name)),
                ],
                sorted_words: sorted.join(" ").into_boxed_str(),
                len,
                entry: Arc::clone(entry),
            });
        }
        let filters = docs
            .iter()
            .map(|doc| KeyFilter {
                sets: doc.keys.each_ref().map(|key| key.set),
                chars: doc.keys.each_ref().map(|key| key.chars as u32),
                words: doc.sorted_words.len() as u32,
            })
            .collect();
        let mut postings = Vec::with_capacity(by_term.values().map(Vec::len).sum());
        let terms = by_term
            .into_iter()
            .map(|(term, list)| {
                let start = postings.len() as u32;
                postings.extend(list);
                (term, (start, postings.len() as u32))
            })
            .collect();
        Segment {
            server: server.to_owned(),
            docs,
            filters,
            terms,
            postings,
        }
    }

    /// The server whose tools these are.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether it holds no tool.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The tools that have `term`, in the order of the tools.
    pub(crate) fn postings(&self, term: &str) -> &[Posting] {
        match self.terms.get(term) {
            Some(&(start, end)) => &self.postings[start as usize..end as usize],
            None => &[],
        }
    }

    /// Which of this segment's tools are `entries` (the same entries, by identity, in the same
    /// order): `None` when one of them is not here (the segment is of another list).
    pub(crate) fn find(&self, entries: &[&Arc<ToolEntry>]) -> Option<Vec<bool>> {
        let mut found = vec![false; self.docs.len()];
        let mut at = 0;
        for entry in entries {
            loop {
                let doc = self.docs.get(at)?;
                at += 1;
                if Arc::ptr_eq(&doc.entry, entry) {
                    found[at - 1] = true;
                    break;
                }
            }
        }
        Some(found)
    }
}

/// The argument names of an input schema: the keys of its `properties`, then those of the
/// properties of each object argument and of each array argument's items, breadth first, down
/// to [`MAX_SCHEMA_DEPTH`], at most [`MAX_ARGUMENTS`] of them.
fn argument_names(schema: &serde_json::Value) -> Vec<&str> {
    let mut names = Vec::new();
    let mut level = vec![schema];
    for _ in 0..MAX_SCHEMA_DEPTH {
        let mut next = Vec::new();
        for schema in level {
            let Some(properties) = schema.get("properties").and_then(serde_json::Value::as_object) else {
                continue;
            };
            for (name, property) in properties {
                if names.len() == MAX_ARGUMENTS {
                    return names;
                }
                names.push(name.as_str());
                next.push(property);
                if let Some(items) = property.get("items") {
                    next.push(items);
                }
            }
        }
        level = next;
    }
    names
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn argument_names_are_read_to_a_depth() {
        let schema = json!({"type": "object", "properties": {
            "filePath": {"type": "string"},
            "options": {"type": "object", "properties": {"recursive": {}, "deep": {"properties": {"deeper": {"properties": {"deepest": {}}}}}}},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"label": {}}}},
        }});
        let mut names = argument_names(&schema);
        names.sort_unstable();
        assert_eq!(
            names,
            ["deep", "deeper", "filePath", "label", "options", "recursive", "tags"]
        );
        assert!(argument_names(&json!({"properties": 3})).is_empty());
        assert!(argument_names(&json!(null)).is_empty());
    }

    #[test]
    fn arguments_are_bounded() {
        let properties: serde_json::Map<String, serde_json::Value> =
            (0..1000).map(|i| (format!("arg{i}"), json!({}))).collect();
        assert_eq!(argument_names(&json!({"properties": properties})).len(), MAX_ARGUMENTS);
    }
}
