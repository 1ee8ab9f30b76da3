//! Qualified names — `mcp__<server>__<tool>` for every MCP tool (and prompt) — that model APIs
//! accept, that never change because another server came or went, that are unique within a
//! pool, and that resolve back to their origin through a [`ToolIndex`], never by splitting.
//!
//! A name is the plain `mcp__<server>__<tool>` (every character outside `[A-Za-z0-9_-]`
//! replaced by `_`) when both parts are *clean* — they survive that replacement unchanged, and
//! neither holds `__` nor starts or ends with `_`, so the separator cannot be mistaken — and the
//! name fits the length limit. Otherwise it is a readable head of the plain name, `__`, and the
//! first 8 hex digits of the SHA-256 of the raw (server, tool) pair: `a.b` and `a_b` of one
//! server, or server `a` + tool `b__c` and server `a__b` + tool `c`, get distinct names, each
//! a function of its own pair only. A clean name never contains a second `__`, so a hashed name
//! can only meet another hashed one; should two hashes ever agree, the index lengthens the later
//! one's hash and reports the pair.

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;

use sha2::{Digest, Sha256};

/// Every qualified name starts with this.
pub const PREFIX: &str = "mcp__";
/// What separates the server from the tool, and a name from its hash.
pub const SEPARATOR: &str = "__";
/// The longest name by default (some model APIs allow 128).
pub const DEFAULT_MAX_NAME_LEN: usize = 64;
/// The shortest length limit accepted: room for the prefix, a little of the name and a hash.
pub const MIN_MAX_NAME_LEN: usize = 32;
/// Hex digits of the hash that tells names apart.
const HASH_DIGITS: usize = 8;

/// Replaces every character outside `[A-Za-z0-9_-]` by `_` (hosts' tool-name rules allow only these).
pub fn normalize_name(name: &str) -> String {
    name.chars().map(|c| if is_allowed(c) { c } else { '_' }).collect()
}

fn is_allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `part` appears in a plain name as it is, and cannot blur the separator.
fn is_clean(part: &str) -> bool {
    !part.is_empty()
        && part.chars().all(is_allowed)
        && !part.contains(SEPARATOR)
        && !part.starts_with('_')
        && !part.ends_with('_')
}

/// `mcp__<server>__<tool>`, both parts normalized, whatever its length.
pub fn plain_name(server: &str, tool: &str) -> String {
    format!("{PREFIX}{}{SEPARATOR}{}", normalize_name(server), normalize_name(tool))
}

/// The name of `tool` of `server` within the default length limit (see the module docs).
pub fn qualified_name(server: &str, tool: &str) -> String {
    qualified_name_within(server, tool, DEFAULT_MAX_NAME_LEN)
}

/// The name of `tool` of `server` within `max_len` characters (at least [`MIN_MAX_NAME_LEN`]).
pub fn qualified_name_within(server: &str, tool: &str, max_len: usize) -> String {
    let max_len = max_len.max(MIN_MAX_NAME_LEN);
    let plain = plain_name(server, tool);
    if is_clean(server) && is_clean(tool) && plain.len() <= max_len {
        return plain;
    }
    hashed_name(&plain, server, tool, max_len, HASH_DIGITS)
}

/// A head of `plain`, `__`, and `digits` hex digits of the pair's hash, within `max_len`.
fn hashed_name(plain: &str, server: &str, tool: &str, max_len: usize, digits: usize) -> String {
    let mut hasher = Sha256::new();
    // Length-prefixed: ("ab", "c") and ("a", "bc") hash apart.
    hasher.update((server.len() as u64).to_le_bytes());
    hasher.update(server.as_bytes());
    hasher.update(tool.as_bytes());
    let hex: String = hasher
        .finalize()
        .iter()
        .flat_map(|byte| [byte >> 4, byte & 0xf])
        .take(digits)
        .map(|nibble| char::from_digit(u32::from(nibble), 16).unwrap_or('0'))
        .collect();
    // The plain name is ASCII: any byte index is a character boundary.
    let room = max_len.saturating_sub(SEPARATOR.len() + hex.len());
    let head = plain[..room.min(plain.len())].trim_end_matches('_');
    format!("{head}{SEPARATOR}{hex}")
}

/// Where a qualified name comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolOrigin {
    /// The server's configured name.
    pub server: String,
    /// The tool's (or prompt's) own name on that server.
    pub tool: String,
}

/// Names whose plain form is the same, told apart by their hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// The plain name they share.
    pub plain: String,
    /// Each one's origin and name, ordered by origin.
    pub names: Vec<(ToolOrigin, String)>,
}

/// The names of a pool's tools (or prompts): origin → name and back.
#[derive(Debug, Clone)]
pub struct ToolIndex {
    max_len: usize,
    /// Shared, so that a call resolves its name without copying the origin. Hashed with
    /// foldhash, as every call looks its name up here.
    names: HashMap<String, Arc<ToolOrigin>, RandomState>,
    origins: HashMap<ToolOrigin, String, RandomState>,
}

impl Default for ToolIndex {
    fn default() -> Self {
        ToolIndex::new(DEFAULT_MAX_NAME_LEN)
    }
}

impl ToolIndex {
    /// An empty index whose names have at most `max_len` characters (at least
    /// [`MIN_MAX_NAME_LEN`]).
    pub fn new(max_len: usize) -> ToolIndex {
        ToolIndex {
            max_len: max_len.max(MIN_MAX_NAME_LEN),
            names: HashMap::default(),
            origins: HashMap::default(),
        }
    }

    /// The length limit.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Adds `tool` of `server` (again: nothing changes) and returns its name.
    pub fn insert(&mut self, server: &str, tool: &str) -> &str {
        let origin = ToolOrigin {
            server: server.to_owned(),
            tool: tool.to_owned(),
        };
        if !self.origins.contains_key(&origin) {
            let mut name = qualified_name_within(server, tool, self.max_len);
            // Two hashes that agree (never seen in practice): the later one gets a longer hash.
            let mut digits = HASH_DIGITS;
            while self.names.get(&name).is_some_and(|other| **other != origin) && digits < 64 {
                digits *= 2;
                name = hashed_name(&plain_name(server, tool), server, tool, self.max_len, digits);
            }
            self.names.insert(name.clone(), Arc::new(origin.clone()));
            self.origins.insert(origin.clone(), name);
        }
        &self.origins[&origin]
    }

    /// Forgets every name of `server` (it left the pool).
    pub fn remove_server(&mut self, server: &str) {
        self.origins.retain(|origin, _| origin.server != server);
        self.names.retain(|_, origin| origin.server != server);
    }

    /// Where `name` comes from.
    pub fn resolve(&self, name: &str) -> Option<&ToolOrigin> {
        self.names.get(name).map(Arc::as_ref)
    }

    /// [`resolve`](Self::resolve), shared: what a caller keeps past the index's lock.
    pub fn resolve_shared(&self, name: &str) -> Option<Arc<ToolOrigin>> {
        self.names.get(name).map(Arc::clone)
    }

    /// The name of `tool` of `server`, when it is in the index.
    pub fn name_of(&self, server: &str, tool: &str) -> Option<&str> {
        self.origins
            .get(&ToolOrigin {
                server: server.to_owned(),
                tool: tool.to_owned(),
            })
            .map(String::as_str)
    }

    /// How many names the index holds.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the index holds no name.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names that share their plain form with another (each pair is kept under distinct
    /// names; hosts may want to tell the user), ordered by plain name.
    pub fn collisions(&self) -> Vec<Collision> {
        let mut by_plain: HashMap<String, Vec<(ToolOrigin, String)>> = HashMap::new();
        for (origin, name) in &self.origins {
            by_plain
                .entry(plain_name(&origin.server, &origin.tool))
                .or_default()
                .push((origin.clone(), name.clone()));
        }
        let mut collisions: Vec<Collision> = by_plain
            .into_iter()
            .filter(|(_, names)| names.len() > 1)
            .map(|(plain, mut names)| {
                names.sort();
                Collision { plain, names }
            })
            .collect();
        collisions.sort_by(|a, b| a.plain.cmp(&b.plain));
        collisions
    }
}

/// Whether a tool of `server` may be named `name`: the name starts with the server's part
/// (`mcp__<server>__`), or, for a long name whose head was cut to make room for its hash, the
/// head is a start of that part. A host starts only such servers to find a tool it does not
/// know yet.
pub fn may_belong_to(server: &str, name: &str) -> bool {
    let part = plain_name(server, "");
    if name.starts_with(&part) {
        return true;
    }
    let Some((head, hash)) = name.rsplit_once(SEPARATOR) else {
        return false;
    };
    let hashed = hash.len() >= 8 && hash.chars().all(|c| c.is_ascii_hexdigit());
    hashed && head.len() > PREFIX.len() && part.starts_with(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn valid(name: &str, max: usize) -> bool {
        name.starts_with(PREFIX) && name.len() <= max && name.chars().all(is_allowed)
    }

    #[test]
    fn clean_parts_give_the_plain_name() {
        assert_eq!(qualified_name("github", "create_issue"), "mcp__github__create_issue");
        assert_eq!(qualified_name("my-server", "get-x"), "mcp__my-server__get-x");
    }

    #[test]
    fn lossy_and_ambiguous_parts_get_a_hash_of_their_own_pair() {
        let dotted = qualified_name("s", "a.b");
        assert_eq!(qualified_name("s", "a_b"), "mcp__s__a_b");
        assert!(
            dotted.starts_with("mcp__s__a_b__") && dotted.len() == "mcp__s__a_b__".len() + 8,
            "{dotted}"
        );
        let one = qualified_name("a", "b__c");
        let other = qualified_name("a__b", "c");
        assert_ne!(one, other);
        assert!(one.starts_with("mcp__a__b__c__") && other.starts_with("mcp__a__b__c__"));
        // Leading and trailing underscores would blur the separator too.
        assert_ne!(qualified_name("a_", "b"), qualified_name("a", "_b"));
    }

    #[test]
    fn a_long_name_keeps_a_readable_head_within_the_limit() {
        let long = "x".repeat(100);
        let name = qualified_name("server", &long);
        assert_eq!(name.len(), 64);
        assert!(name.starts_with("mcp__server__xxxx"));
        assert_eq!(qualified_name_within("server", &"x".repeat(200), 128).len(), 128);
        assert_eq!(
            qualified_name_within("server", &long, 128),
            format!("mcp__server__{long}")
        );
        assert_eq!(
            qualified_name_within("server", &"x".repeat(50), 128),
            format!("mcp__server__{}", "x".repeat(50))
        );
    }

    #[test]
    fn the_index_resolves_names_and_reports_collisions() {
        let mut index = ToolIndex::default();
        let plain = index.insert("s", "a_b").to_owned();
        let dotted = index.insert("s", "a.b").to_owned();
        assert_ne!(plain, dotted);
        assert_eq!(index.resolve(&dotted).unwrap().tool, "a.b");
        assert_eq!(index.name_of("s", "a_b"), Some(plain.as_str()));
        let collisions = index.collisions();
        assert_eq!(collisions.len(), 1);
        assert_eq!(collisions[0].plain, "mcp__s__a_b");
        assert_eq!(collisions[0].names.len(), 2);
        index.remove_server("s");
        assert!(index.is_empty() && index.resolve(&plain).is_none());
    }

    fn part() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,8}",
            "[a-z_.]{0,6}",
            "[A-Za-z0-9_ -]{1,20}",
            ".{0,12}",
            "[a-z]{40,90}",
        ]
    }

    proptest! {
        #[test]
        fn names_are_valid_unique_stable_and_resolve(
            pairs in proptest::collection::vec((part(), part()), 1..40),
            extra in proptest::collection::vec((part(), part()), 0..20),
            max in prop_oneof![Just(64usize), Just(128usize), 32usize..200],
        ) {
            let mut index = ToolIndex::new(max);
            let mut named = Vec::new();
            for (server, tool) in &pairs {
                let name = index.insert(server, tool).to_owned();
                prop_assert!(valid(&name, max.max(MIN_MAX_NAME_LEN)), "{name:?}");
                named.push((server.clone(), tool.clone(), name));
            }
            // Other servers come and go: nobody's name changes.
            for (server, tool) in &extra {
                index.insert(&format!("other-{server}"), tool);
            }
            index.remove_server("other-x");
            for (server, tool, name) in &named {
                prop_assert_eq!(index.name_of(server, tool), Some(name.as_str()));
                let origin = index.resolve(name).unwrap();
                prop_assert_eq!((&origin.server, &origin.tool), (server, tool));
            }
            // Unique: as many names as distinct origins.
            prop_assert_eq!(index.names.len(), index.origins.len());
        }

        #[test]
        fn a_name_depends_only_on_its_pair(server in part(), tool in part(), max in 32usize..200) {
            let alone = qualified_name_within(&server, &tool, max);
            let mut index = ToolIndex::new(max);
            index.insert("someone", "else");
            prop_assert_eq!(index.insert(&server, &tool), alone.as_str());
        }

        #[test]
        fn allowed_names_are_unchanged(name in "[A-Za-z0-9_-]{0,40}") {
            prop_assert_eq!(normalize_name(&name), name);
        }
    }

    #[test]
    fn a_call_starts_only_the_servers_whose_part_the_name_has() {
        assert!(may_belong_to("s", "mcp__s__t"));
        assert!(!may_belong_to("sx", "mcp__s__t"));
        let long = qualified_name(&"v".repeat(70), "t");
        assert!(may_belong_to(&"v".repeat(70), &long), "{long}");
        assert!(!may_belong_to("v", &long));
    }
}
