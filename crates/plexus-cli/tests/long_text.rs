//! Text from a server of any length never breaks a table: a 70 000-character tool title (which
//! once panicked the table's formatting) is cut to the widest a column may be, or to the
//! terminal's width, and printed whole below the table.

mod support;

use serde_json::json;
use support::{Workspace, demo};

/// A workspace whose one server has a tool named (and so titled) with `length` characters.
fn workspace_with_a_long_tool(length: usize) -> (Workspace, String) {
    let ws = Workspace::new();
    let long = "t".repeat(length);
    ws.write_servers(
        "home/settings.json",
        &json!({"s": demo(&["--tool-named", long.as_str()])}),
    );
    (ws, long)
}

#[test]
fn a_seventy_thousand_character_title_is_cut_and_printed_below() {
    let (ws, long) = workspace_with_a_long_tool(70_000);
    for columns in [None, Some("100")] {
        let env: Vec<(&str, &str)> = columns.iter().map(|columns| ("COLUMNS", *columns)).collect();
        let out = ws.run_with_env(&["-q", "tools"], &env);
        assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "COLUMNS={columns:?}");
        let (table, below) = out.stdout.split_once("\n\n").expect("the cut text below the table");
        let limit = columns.map_or(256 * 4 + 3 * 2, |columns| columns.parse().unwrap());
        for line in table.lines() {
            assert!(
                line.chars().count() <= limit,
                "COLUMNS={columns:?}: {} characters",
                line.chars().count()
            );
        }
        // The title is whole below the table, on the line of its tool.
        let whole = format!(": title: {long}");
        assert!(below.lines().any(|line| line.ends_with(&whole)), "COLUMNS={columns:?}");
    }
}
