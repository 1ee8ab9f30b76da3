//! What a new user trips over, each through the binary against the demo server: output into a
//! closed pipe, `--quiet`, a tool described with its arguments, `--arg` values typed by the
//! schema, "did you mean", `read @server:uri`, the text a narrow table cuts, and Cursor-style
//! entries and names with spaces in the user's own config.

mod support;

use std::io::Read;
use std::process::Stdio;

use serde_json::json;
use support::{DEMO_NOTICE, Workspace, demo};

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let ws = Workspace::new();
    for args in [
        &["tools"][..],
        &["--json", "tools"],
        &["describe", "mcp__demo__add"],
        &["call", "mcp__demo__large", "-a", "bytes=200000"],
        &["completions", "bash"],
    ] {
        let mut child = ws
            .command(ws.path(), args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before a line is written: the output's first write finds the pipe
        // closed (as `plexus tools | head -0` would).
        drop(child.stdout.take());
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[test]
fn quiet_leaves_only_the_results() {
    let ws = Workspace::new();
    let out = ws.run(&["-q", "call", "mcp__demo__slow", "-a", "ms=50", "-a", "steps=3"]);
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "{out:?}");
    assert_eq!(out.stdout, "slow: done after 50 ms\n");
    let out = ws.run(&["--quiet", "servers"]);
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""), "{out:?}");
    // Errors are still said.
    let out = ws.run(&["-q", "call", "mcp__demo__nope"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            Some(2),
            "plexus: no tool is named \"mcp__demo__nope\" (see `plexus tools`)\n"
        )
    );
}

#[test]
fn a_tool_is_described_with_a_table_of_its_arguments() {
    let ws = Workspace::new();
    let expected = "mcp__demo__slow (Slow)\ntool \"slow\" of server \"demo\"\nread-only\n\nWaits `ms` milliseconds; \
                    with a progress token, sends `steps` progress notifications along the way.\n\n\
                    ARGUMENT  TYPE     REQUIRED  DEFAULT  VALUES  DESCRIPTION\n\
                    ms        integer  yes\n\
                    steps     integer  no        5\n";
    ws.run(&["-q", "describe", "mcp__demo__slow"]).expect(0, "");
    assert_eq!(ws.run(&["-q", "describe", "mcp__demo__slow"]).stdout, expected);
    // `tools NAME` with a tool's name is the same.
    assert_eq!(ws.run(&["-q", "tools", "mcp__demo__slow"]).stdout, expected);
    let json = ws.run(&["-q", "--json", "describe", "mcp__demo__slow"]).json();
    assert_eq!(json["inputSchema"]["required"], json!(["ms"]));
    let wrong = ws.run(&["describe", "mcp__demo__slwo"]);
    assert_eq!(
        (wrong.code, wrong.stderr.as_str()),
        (
            Some(2),
            format!(
                "{DEMO_NOTICE}connecting 1 server…\nplexus: no tool is named \"mcp__demo__slwo\"; did you mean \
                 \"mcp__demo__slow\"? (see `plexus tools`)\n"
            )
            .as_str()
        )
    );
}

#[test]
fn arg_values_are_typed_by_the_schema_and_checked_before_anything_is_sent() {
    let ws = Workspace::new();
    // A string argument keeps digits as text.
    let echoed = ws
        .run(&["-q", "--json", "call", "mcp__demo__echo", "-a", "text=123"])
        .json();
    assert_eq!(echoed["content"][0]["text"], "123");
    // A number argument reads leading zeros as a number.
    let sum = ws
        .run(&["-q", "--json", "call", "mcp__demo__add", "-a", "a=007", "-a", "b=0.5"])
        .json();
    assert_eq!(sum["structuredContent"], json!({"sum": 7.5}));
    // Text that is not a number is refused, naming the argument and the type.
    ws.run(&["-q", "call", "mcp__demo__add", "-a", "a=abc", "-a", "b=1"])
        .expect(
            2,
            "plexus: --arg a: it takes a number, and \"abc\" is not one (see `plexus describe mcp__demo__add`)\n",
        );
    // Nothing was sent: with -vv every message sent is traced, and no tools/call is among them.
    let traced = ws.run(&["-vv", "call", "mcp__demo__add", "-a", "a=abc", "-a", "b=1"]);
    assert_eq!(traced.code, Some(2));
    assert!(!traced.stderr.contains("tools/call"), "{}", traced.stderr);
    // KEY=VALUE without -a gets a hint.
    ws.run(&["call", "mcp__demo__add", "a=1", "b=2"]).expect(
        2,
        "plexus: error: the arguments are one JSON object; give them one by one with --arg (-a): plexus call \
         mcp__demo__add -a a=1 -a b=2\n",
    );
}

#[test]
fn a_resource_is_read_by_its_reference_and_a_near_uri_is_suggested() {
    let ws = Workspace::new();
    let by_reference = ws.run(&["-q", "read", "@demo:test://static/hello.txt"]);
    let by_parts = ws.run(&["-q", "read", "demo", "test://static/hello.txt"]);
    assert_eq!((by_reference.code, by_reference.stderr.as_str()), (Some(0), ""));
    assert_eq!(by_reference.stdout, by_parts.stdout);
    assert!(!by_reference.stdout.is_empty());
    let typo = ws.run(&["-q", "read", "@demo:test://static/helo.txt"]);
    assert_eq!(typo.code, Some(3), "{typo:?}");
    assert!(
        typo.stderr.ends_with("; did you mean \"test://static/hello.txt\"?\n"),
        "{typo:?}"
    );
    ws.run(&["read", "demo"]).expect(
        2,
        "plexus: error: read needs the resource's URI: plexus read demo URI (or plexus read @demo:URI)\n",
    );
    ws.run(&["read", "@demo"]).expect(
        2,
        "plexus: error: \"@demo\" is not a resource reference (@server:uri, as `plexus resources` shows it)\n",
    );
}

#[test]
fn a_narrow_tools_table_prints_what_it_cut() {
    let ws = Workspace::new();
    let out = ws.run_with_env(&["-q", "tools"], &[("COLUMNS", "100")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (table, below) = out.stdout.split_once("\n\n").expect("the cut text below the table");
    assert!(table.lines().all(|line| line.chars().count() <= 100), "{table}");
    assert!(
        below.lines().any(|line| line
            == "mcp__demo__slow: description: Waits `ms` milliseconds; with a progress token, sends `steps` \
                progress notifications along the way."),
        "{below}"
    );
    // Wide enough: that description is not cut (only one longer than a column may be, 256).
    let wide = ws.run_with_env(&["-q", "tools"], &[("COLUMNS", "1000")]);
    assert!(
        !wide.stdout.contains("mcp__demo__slow: description:"),
        "{}",
        wide.stdout
    );
}

#[test]
fn cursor_style_entries_and_names_with_spaces_work_with_one_warning() {
    let ws = Workspace::new();
    ws.write_servers(
        "home/settings.json",
        &json!({"my demo": demo(&[]), "remote": {"url": "http://127.0.0.1:9/mcp"}}),
    );
    let settings = ws.shown("home/settings.json");
    let out = ws.run(&["-q", "tools", "my_demo"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            Some(0),
            format!(
                "plexus: {settings}: server \"my demo\": renamed to \"my_demo\" (server names use only A-Z, a-z, \
                 0-9, \"_\" and \"-\", at most 64)\n"
            )
            .as_str()
        )
    );
    assert!(out.stdout.contains("mcp__my_demo__echo"), "{}", out.stdout);
    let rows = ws.run(&["-q", "--json", "servers"]).json();
    let remote = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "remote")
        .unwrap();
    assert_eq!(remote["kind"], "http");
    assert_eq!(
        remote["warnings"],
        json!([format!(
            "{settings}: server \"remote\": field \"type\": missing; taken as \"http\" since the entry has a \"url\" \
             (add \"type\": \"http\" or \"sse\" to choose)"
        )])
    );
    // The failed connect's reason is in the JSON too.
    assert_eq!(remote["status"], "failed");
    assert!(
        remote["error"]
            .as_str()
            .is_some_and(|error| error.contains("127.0.0.1:9")),
        "{remote}"
    );
}
