//! `plexus tools --search`: two test servers (real processes over stdio), their tools found by
//! exact and typo'd names and by text, best first, in a table with rank, match and score, and
//! with `--json` as the same objects as `plexus tools --json`, best first.

mod support;

use serde_json::json;
use support::{Workspace, demo};

fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[]), "other": demo(&[])}));
    ws
}

/// The rows of a `plexus tools`-like table, each split into its cells (the columns are
/// separated by two spaces or more).
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .take_while(|line| !line.is_empty())
        .map(|line| {
            line.split("  ")
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

#[test]
fn a_typo_finds_the_tool_first_in_a_ranked_table() {
    let ws = workspace();
    let run = ws.run(&["tools", "--search", "mcp__other__ecoh"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rows = rows(&run.stdout);
    assert_eq!(rows[0][..4], ["#", "MATCH", "SCORE", "NAME"], "{}", run.stdout);
    assert_eq!(rows[1][..2], ["1", "name, 1 typo"], "{}", run.stdout);
    assert_eq!(rows[1][3], "mcp__other__echo", "{}", run.stdout);
    assert!(rows.len() <= 11, "at most 10 hits by default: {}", run.stdout);
}

#[test]
fn json_hits_are_the_objects_of_tools_json_best_first() {
    let ws = workspace();
    let all = ws.run(&["--json", "tools"]);
    assert_eq!(all.code, Some(0), "{}", all.stderr);
    let all = all.json();
    let run = ws.run(&["--json", "tools", "--search", "other echo", "--limit", "2"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let hits = run.json();
    let hits = hits.as_array().unwrap();
    assert_eq!(hits.len(), 2);
    let of = |name: &str| {
        all.as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap()
            .clone()
    };
    // The exact name first (the server's name in front), then the other server's `echo` by text.
    assert_eq!(hits[0], of("mcp__other__echo"));
    assert_eq!(hits[1], of("mcp__demo__echo"));
}

#[test]
fn text_and_one_server_and_bad_queries() {
    let ws = workspace();
    // Words of a description, on one server only.
    let run = ws.run(&["--json", "tools", "demo", "--search", "adds two numbers"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let hits = run.json();
    assert_eq!(hits[0]["name"], "mcp__demo__add");
    assert!(
        hits.as_array().unwrap().iter().all(|hit| hit["server"] == "demo"),
        "{hits}"
    );
    // Nothing matches.
    let run = ws.run(&["tools", "--search", "kubernetes"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "no tools match\n"),
        "{}",
        run.stderr
    );
    // A query without a word is a usage error, said before any server starts.
    let run = ws.run(&["tools", "--search", "!! ??"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("has no word to look for"), "{}", run.stderr);
    assert!(!run.stderr.contains("connecting"), "{}", run.stderr);
    let run = ws.run(&["tools", "--search", "echo", "--limit", "101"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    // --limit needs --search.
    let run = ws.run(&["tools", "--limit", "3"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
}
