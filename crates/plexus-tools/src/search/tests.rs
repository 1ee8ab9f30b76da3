use std::sync::Arc;

use plexus_protocol::Tool;
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::{ServerTools, ToolFilter, ToolIndex, assemble, server_entries};

/// A tool named `name` with `description` and the arguments `arguments`.
fn tool(name: &str, description: &str, arguments: &[&str]) -> Tool {
    let properties: serde_json::Map<String, serde_json::Value> =
        arguments.iter().map(|name| ((*name).to_owned(), json!({}))).collect();
    serde_json::from_value(json!({
        "name": name, "description": description,
        "inputSchema": {"type": "object", "properties": properties},
    }))
    .unwrap()
}

/// Each server's entries, built as a host keeps them.
struct Servers {
    index: ToolIndex,
    built: Vec<(String, Arc<[Arc<ToolEntry>]>)>,
}

impl Servers {
    fn new() -> Servers {
        Servers {
            index: ToolIndex::default(),
            built: Vec::new(),
        }
    }

    /// Sets `server`'s list (replacing its entries).
    fn list(&mut self, server: &str, tools: &[Tool]) -> &mut Servers {
        let entries = server_entries(server, tools, &mut self.index);
        self.built.retain(|(name, _)| name != server);
        self.built.push((server.to_owned(), entries));
        self
    }

    fn remove(&mut self, server: &str) {
        self.built.retain(|(name, _)| name != server);
    }

    fn pool_with(&self, filter: &ToolFilter) -> ToolPool {
        let servers: Vec<ServerTools<'_>> = self
            .built
            .iter()
            .map(|(server, entries)| ServerTools {
                server,
                entries,
                filter,
            })
            .collect();
        assemble(&[], &servers)
    }

    fn pool(&self) -> ToolPool {
        self.pool_with(&ToolFilter::default())
    }
}

fn names(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|hit| hit.entry.name.as_str()).collect()
}

fn weather() -> ToolPool {
    let mut servers = Servers::new();
    servers
        .list(
            "weather",
            &[
                tool("get_weather", "Current weather for a city.", &["city", "units"]),
                tool(
                    "get_forecast",
                    "The weather forecast for the next days.",
                    &["city", "days"],
                ),
                tool(
                    "weather_alerts",
                    "Weather alerts and warnings for a region.",
                    &["region"],
                ),
            ],
        )
        .list(
            "files",
            &[
                tool("read_file", "Reads a file and returns its text.", &["path"]),
                tool("write_file", "Writes text to a file.", &["path", "content"]),
                tool("list_directory", "Lists a directory's entries.", &["path", "recursive"]),
            ],
        )
        .list(
            "github",
            &[
                tool(
                    "create_issue",
                    "Opens an issue in a repository.",
                    &["repo", "title", "body"],
                ),
                tool("search_code", "Searches code across repositories.", &["query"]),
                tool("get", "Gets any API path.", &["apiPath"]),
            ],
        );
    servers.pool()
}

#[test]
fn an_exact_name_in_any_spelling_ranks_first() {
    let pool = weather();
    for query in [
        "get_weather",
        "getWeather",
        "GET-WEATHER",
        "get weather",
        "mcp__weather__get_weather",
        "weather__get_weather",
        "weather get_weather",
    ] {
        let hits = pool.search(query, 5).unwrap();
        assert_eq!(hits[0].entry.name, "mcp__weather__get_weather", "{query}");
        assert_eq!(hits[0].matched, Match::ExactName, "{query}");
        // The others that only share words come after, as text.
        assert!(
            hits[1..].iter().all(|hit| hit.matched == Match::Text),
            "{query}: {hits:?}"
        );
    }
}

#[test]
fn an_exact_name_beats_a_tool_whose_text_is_all_about_the_query() {
    // `weather_alerts` says "weather" three times; `get` is a 3-letter name of another server.
    let hits = weather().search("get", 3).unwrap();
    assert_eq!(hits[0].entry.name, "mcp__github__get");
    assert_eq!(hits[0].matched, Match::ExactName);
}

#[test]
fn words_in_another_order_come_next() {
    let hits = weather().search("weather get", 3).unwrap();
    assert_eq!(hits[0].entry.name, "mcp__weather__get_weather");
    assert_eq!(hits[0].matched, Match::ReorderedName);
    let hits = weather().search("file read", 3).unwrap();
    assert_eq!(hits[0].entry.name, "mcp__files__read_file");
}

#[test]
fn typos_find_the_name() {
    let pool = weather();
    for (query, name, typos) in [
        ("get_wether", "mcp__weather__get_weather", 1),
        ("gte_weather", "mcp__weather__get_weather", 1),
        ("get_weathre", "mcp__weather__get_weather", 1),
        ("gte_wether", "mcp__weather__get_weather", 2),
        ("reed_file", "mcp__files__read_file", 1),
        ("creat_isue", "mcp__github__create_issue", 2),
        ("mcp__github__serch_code", "mcp__github__search_code", 1),
    ] {
        let hits = pool.search(query, 3).unwrap();
        assert_eq!(hits[0].entry.name, name, "{query}");
        assert_eq!(hits[0].matched, Match::NearName { typos }, "{query}");
    }
    // Three typos are too many; and a 3-letter name takes none.
    let hits = pool.search("gte_wetehr", 3).unwrap();
    assert!(hits.iter().all(|hit| hit.matched == Match::Text), "{hits:?}");
    let hits = pool.search("got", 3).unwrap();
    assert!(hits.iter().all(|hit| hit.entry.tool != "get"), "{hits:?}");
}

#[test]
fn argument_names_are_searched() {
    let pool = weather();
    let hits = pool.search("recursive", 3).unwrap();
    assert_eq!(names(&hits), ["mcp__files__list_directory"]);
    assert_eq!(hits[0].matched, Match::Text);
    // camelCase arguments are found by their words.
    assert_eq!(names(&pool.search("api path", 1).unwrap()), ["mcp__github__get"]);
    let days = pool.search("days", 5).unwrap();
    assert_eq!(days[0].entry.name, "mcp__weather__get_forecast");
}

#[test]
fn free_text_ranks_by_relevance() {
    let hits = weather().search("weather forecast for a city", 3).unwrap();
    assert_eq!(hits[0].entry.name, "mcp__weather__get_forecast");
    assert!(hits[0].score > hits[1].score);
    assert!(names(&hits).contains(&"mcp__weather__get_weather"));
    assert!(weather().search("kubernetes", 5).unwrap().is_empty());
    // Words such as "of" and "the" count only when they are all there is.
    assert!(weather().search("kubernetes of the", 5).unwrap().is_empty());
    assert_eq!(
        weather().search("the", 1).unwrap()[0].entry.name,
        "mcp__weather__get_forecast"
    );
}

#[test]
fn ties_go_to_the_name_that_sorts_first() {
    let mut servers = Servers::new();
    let same = |name: &str| tool(name, "Does the same thing.", &[]);
    servers
        .list("b", &[same("zeta"), same("alpha")])
        .list("a", &[same("mid")]);
    let hits = servers.pool().search("same thing", 10).unwrap();
    assert_eq!(names(&hits), ["mcp__a__mid", "mcp__b__alpha", "mcp__b__zeta"]);
    assert!(
        hits.windows(2)
            .all(|pair| pair[0].score.to_bits() == pair[1].score.to_bits())
    );
    // Two exact names (one tool name on two servers): by name too.
    let mut servers = Servers::new();
    servers.list("y", &[same("echo")]).list("x", &[same("echo")]);
    let hits = servers.pool().search("echo", 2).unwrap();
    assert_eq!(names(&hits), ["mcp__x__echo", "mcp__y__echo"]);
    assert!(hits.iter().all(|hit| hit.matched == Match::ExactName));
}

#[test]
fn k_bounds_the_hits_and_bad_queries_say_why() {
    let pool = weather();
    assert_eq!(pool.search("weather", 2).unwrap().len(), 2);
    assert_eq!(pool.search("get_weather", 1).unwrap().len(), 1);
    assert_eq!(pool.search("x", 0).unwrap_err(), SearchError::Count { k: 0 });
    assert_eq!(pool.search("x", 101).unwrap_err(), SearchError::Count { k: 101 });
    let long = "a ".repeat(600);
    assert_eq!(
        pool.search(&long, 5).unwrap_err(),
        SearchError::QueryTooLong { bytes: 1200 }
    );
    assert!(matches!(pool.search(" -_- ", 5), Err(SearchError::NoWords { .. })));
    assert!(pool.search("x", 0).unwrap_err().to_string().contains("from 1 to 100"));
}

#[test]
fn a_filtered_tool_is_not_found_and_the_cache_keeps_its_segment() {
    let mut servers = Servers::new();
    servers.list(
        "fs",
        &[tool("read_file", "Reads.", &[]), tool("delete_file", "Deletes.", &[])],
    );
    let mut cache = SegmentCache::new();
    let everything = servers.pool();
    let filtered = servers.pool_with(&ToolFilter::new(None, &["delete_*".to_owned()]));
    let query = SearchQuery::new("delete_file", 5).unwrap();
    assert_eq!(
        names(&cache.index(&everything).search(&query)),
        ["mcp__fs__delete_file", "mcp__fs__read_file"]
    );
    // Filtered out: not found by its name, and its words count no more (only `read_file` has "file").
    let hits = cache.index(&filtered).search(&query);
    assert_eq!(names(&hits), ["mcp__fs__read_file"]);
    let fresh = SearchIndex::new(&filtered).search(&query);
    assert_eq!(hits[0].score.to_bits(), fresh[0].score.to_bits());
    assert_eq!(cache.segments_built(), 1);
}

#[test]
fn a_changed_list_rebuilds_only_its_servers_segment() {
    let mut servers = Servers::new();
    servers
        .list("a", &[tool("alpha", "First.", &[])])
        .list("b", &[tool("beta", "Second.", &[])]);
    let mut cache = SegmentCache::new();
    let query = SearchQuery::new("gamma", 5).unwrap();
    assert!(cache.index(&servers.pool()).search(&query).is_empty());
    assert_eq!(cache.segments_built(), 2);
    servers.list("b", &[tool("beta", "Second.", &[]), tool("gamma", "Third.", &[])]);
    assert_eq!(names(&cache.index(&servers.pool()).search(&query)), ["mcp__b__gamma"]);
    assert_eq!(cache.segments_built(), 3);
    // Unchanged: nothing built.
    cache.index(&servers.pool());
    assert_eq!(cache.segments_built(), 3);
    servers.remove("b");
    assert!(cache.index(&servers.pool()).search(&query).is_empty());
}

/// Servers by name, each with its tools: name, description, argument names.
type Spec = Vec<(String, Vec<(String, String, Vec<String>)>)>;

/// A pool of random tools: words of a small vocabulary so that names and texts collide.
fn random_servers() -> impl Strategy<Value = Spec> {
    let word = prop::sample::select(vec![
        "get", "set", "list", "read", "write", "file", "weather", "issue", "user", "a", "ab", "abc", "echo", "search",
        "x1", "Data",
    ]);
    let name = prop::collection::vec(word.clone(), 1..4).prop_map(|words| words.join("_"));
    let text = prop::collection::vec(word.clone(), 0..8).prop_map(|words| words.join(" "));
    let arguments = prop::collection::vec(word.prop_map(str::to_owned), 0..3);
    let tools = prop::collection::vec((name, text, arguments), 1..8);
    // Each server once (a list replaces the one before).
    prop::collection::btree_map("[a-d]{1,3}", tools, 1..5).prop_map(|servers| servers.into_iter().collect())
}

fn servers_of(spec: &Spec) -> Servers {
    let mut servers = Servers::new();
    for (server, tools) in spec {
        let tools: Vec<Tool> = tools
            .iter()
            .map(|(name, text, arguments)| {
                let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
                tool(name, text, &arguments)
            })
            .collect();
        servers.list(server, &tools);
    }
    servers
}

/// What a search returned, comparable.
fn outcome(hits: &[SearchHit]) -> Vec<(String, u32, Match)> {
    hits.iter()
        .map(|hit| (hit.entry.name.clone(), hit.score.to_bits(), hit.matched))
        .collect()
}

proptest! {
    #[test]
    fn an_exact_name_always_ranks_first(spec in random_servers(), pick in any::<prop::sample::Index>(), k in 1usize..10) {
        let pool = servers_of(&spec).pool();
        let target = pick.get(&pool.entries).clone();
        for query in [target.tool.clone(), target.name.clone(), target.tool.to_uppercase().replace('_', " ")] {
            let hits = pool.search(&query, k).unwrap();
            prop_assert_eq!(hits[0].matched, Match::ExactName, "{}", query);
            // Every exact match comes before anything else, and the target is one of them.
            let exact = hits.iter().take_while(|hit| hit.matched == Match::ExactName).count();
            prop_assert!(hits[exact..].iter().all(|hit| hit.matched != Match::ExactName));
            let all = pool.search(&query, MAX_HITS).unwrap();
            prop_assert!(all.iter().any(|hit| hit.matched == Match::ExactName && hit.entry.name == target.name));
        }
    }

    #[test]
    fn searches_are_deterministic_and_ordered(spec in random_servers(), query in "[a-z_ ]{1,20}", k in 1usize..20) {
        let servers = servers_of(&spec);
        let Ok(hits) = servers.pool().search(&query, k) else { return Ok(()) };
        prop_assert!(hits.len() <= k);
        // The same pool built again, its servers listed in reverse order: the same hits.
        let mut reversed = spec.clone();
        reversed.reverse();
        let again = servers_of(&reversed).pool().search(&query, k).unwrap();
        prop_assert_eq!(outcome(&hits), outcome(&again));
        // Ties go by name; a server that lists one name twice (the generator may) gives two
        // hits of the same name, in its list's order.
        for pair in hits.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            prop_assert!(a.matched < b.matched || (a.matched == b.matched
                && (a.score > b.score || (a.score.to_bits() == b.score.to_bits() && a.entry.name <= b.entry.name))), "{:?} then {:?}", a, b);
        }
    }

    #[test]
    fn the_kept_segments_search_as_a_fresh_index(
        spec in random_servers(), changes in random_servers(), query in "[a-z_ ]{1,20}", disabled in "[a-z]{0,2}",
    ) {
        let Ok(query) = SearchQuery::new(&query, 10) else { return Ok(()) };
        let mut servers = servers_of(&spec);
        let mut cache = SegmentCache::new();
        cache.index(&servers.pool());
        // Some servers change their lists, some leave, a filter hides some tools.
        for (server, tools) in &changes {
            let tools: Vec<Tool> = tools.iter().map(|(name, text, _)| tool(name, text, &[])).collect();
            if tools.len() % 3 == 0 { servers.remove(server) } else { servers.list(server, &tools); }
        }
        let filter = if disabled.is_empty() { ToolFilter::default() } else { ToolFilter::new(None, &[format!("{disabled}*")]) };
        let pool = servers.pool_with(&filter);
        let kept = cache.index(&pool).search(&query);
        let fresh = SearchIndex::new(&pool).search(&query);
        prop_assert_eq!(outcome(&kept), outcome(&fresh));
    }
}
