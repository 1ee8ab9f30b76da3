//! "Did you mean …": the names nearest to one the user mistyped (a tool, prompt, resource or
//! server), by edit distance over the whole name and over its last part (the tool's own name in
//! `mcp__server__tool`), so that `echo`, `mcp__demo__ecko` and `mcp__dmeo__echo` all find
//! `mcp__demo__echo`.

use plexus::tools::naming::{PREFIX, SEPARATOR};

/// The most names suggested.
const MAX_SUGGESTIONS: usize = 3;

/// How alike two names must be (0 to 1, normalised Damerau-Levenshtein) to be suggested.
const MIN_SIMILARITY: f64 = 0.6;

/// Names this long are compared at all (a query of one or two characters matches everything).
const MIN_QUERY: usize = 3;

/// The server's part and the own part of a qualified name (`mcp__<server>__<own>`), or the
/// directory and the last segment of a URI or path.
fn parts(name: &str) -> Option<(&str, &str)> {
    match name.strip_prefix(PREFIX) {
        Some(rest) => rest.split_once(SEPARATOR),
        None => name.rsplit_once('/').filter(|(_, last)| !last.is_empty()),
    }
}

/// How alike two names are, from 0 to 1 (normalised Damerau-Levenshtein).
fn alike(a: &str, b: &str) -> f64 {
    strsim::normalized_damerau_levenshtein(a, b)
}

/// How alike `query` and `candidate` are, from 0 (nothing alike) to 1 (the same but for case).
/// Two qualified names (or URIs) are as alike as the less alike of their two parts (a shared
/// `mcp__demo__` says nothing of the tool, nor `file:///docs/` of the file); a bare name is
/// compared with a qualified name's own part.
fn similarity(query: &str, candidate: &str) -> f64 {
    let (query, candidate) = (query.to_lowercase(), candidate.to_lowercase());
    let by_parts = match (parts(&query), parts(&candidate)) {
        (Some((query_server, query_own)), Some((server, own))) => {
            let own_alike = alike(query_own, own);
            // The right tool of the wrong server (or file in the wrong place) is worth naming,
            // after the near typos.
            let same_tool = if query_own == own { 0.7 } else { 0.0 };
            alike(query_server, server).min(own_alike).max(same_tool)
        }
        (None, Some((_, own))) => alike(&query, own).max(alike(&query, &candidate)),
        _ => alike(&query, &candidate),
    };
    // One holding the other whole (`echo` in `mcp__demo__echo_twice`) is a good guess too.
    let contained = if candidate.contains(&query) { 0.8 } else { 0.0 };
    by_parts.max(contained)
}

/// The names of `candidates` nearest to `query`, best first (at most three).
pub(crate) fn nearest<'a>(query: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    if query.chars().count() < MIN_QUERY {
        return Vec::new();
    }
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter(|candidate| *candidate != query)
        .map(|candidate| (similarity(query, candidate), candidate))
        .filter(|(score, _)| *score >= MIN_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(MAX_SUGGESTIONS).map(|(_, name)| name).collect()
}

/// `; did you mean "a"?` or `; did you mean one of "a", "b"?` for the names nearest to `query`,
/// or nothing.
pub(crate) fn did_you_mean<'a>(query: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = nearest(query, candidates)
        .into_iter()
        .map(|name| format!("{name:?}"))
        .collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        many => format!("; did you mean one of {}?", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 5] = [
        "mcp__demo__echo",
        "mcp__demo__add",
        "mcp__demo__long_running",
        "mcp__docs__search",
        "mcp__demo__echo_twice",
    ];

    #[test]
    fn a_typo_a_bare_name_or_a_wrong_server_finds_the_tool() {
        assert_eq!(nearest("mcp__demo__ecko", TOOLS), ["mcp__demo__echo"]);
        assert_eq!(nearest("echo", TOOLS), ["mcp__demo__echo", "mcp__demo__echo_twice"]);
        assert_eq!(nearest("mcp__dmeo__echo", TOOLS)[0], "mcp__demo__echo");
        assert_eq!(nearest("mcp__other__echo", TOOLS), ["mcp__demo__echo"]);
        assert!(nearest("mcp__demo__nope", TOOLS).is_empty());
        assert_eq!(nearest("ECHO", TOOLS)[0], "mcp__demo__echo");
        assert_eq!(nearest("serch", TOOLS), ["mcp__docs__search"]);
    }

    #[test]
    fn a_uri_is_near_by_its_last_segment() {
        let uris = [
            "test://static/hello.txt",
            "test://static/data.bin",
            "test://static/readme.md",
        ];
        assert_eq!(nearest("test://static/helo.txt", uris), ["test://static/hello.txt"]);
        assert_eq!(nearest("test://other/data.bin", uris), ["test://static/data.bin"]);
    }

    #[test]
    fn nothing_alike_and_too_short_find_nothing() {
        assert!(nearest("weather", TOOLS).is_empty());
        assert!(nearest("ad", TOOLS).is_empty());
        assert!(nearest("mcp__demo__echo", ["mcp__demo__echo"]).is_empty());
    }

    #[test]
    fn the_suggestion_reads_as_a_question() {
        assert_eq!(did_you_mean("dmeo", ["demo", "docs"]), "; did you mean \"demo\"?");
        assert_eq!(
            did_you_mean("ech", TOOLS),
            "; did you mean one of \"mcp__demo__echo\", \"mcp__demo__echo_twice\"?"
        );
        assert_eq!(did_you_mean("zzz", TOOLS), "");
    }
}
