//! The `plexus` binary end to end: real config files in temp dirs, real server processes (the
//! binary's own demo server), exact output and exit codes.

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use support::{Workspace, demo};

/// Runs `plexus ARGS` in `ws` (or a directory inside it), every location inside the workspace.
fn plexus_in(ws: &Workspace, dir: &Path, args: &[&str]) -> Output {
    ws.command(dir, args).output().unwrap()
}

fn plexus(ws: &Workspace, args: &[&str]) -> Output {
    plexus_in(ws, ws.path(), args)
}

fn plexus_with_stdin(ws: &Workspace, args: &[&str], stdin: Option<&str>) -> Output {
    let run = ws.run_with_stdin(args, stdin.unwrap_or_default());
    Output {
        status: exit_status(run.code),
        stdout: run.stdout.into_bytes(),
        stderr: run.stderr.into_bytes(),
    }
}

fn exit_status(code: Option<i32>) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(code.unwrap_or(255) << 8)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// A temp dir that is its own repository root, so no `.mcp.json` above it is found.
fn workspace() -> Workspace {
    Workspace::new()
}

/// Writes a config file with these servers and returns its path.
fn config(ws: &Workspace, servers: &Value) -> String {
    ws.write_servers("servers.json", servers).to_str().unwrap().to_owned()
}

#[test]
fn with_no_config_the_demo_server_is_used() {
    let dir = workspace();
    let output = plexus(&dir, &["tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("NAME "), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("mcp__demo__echo ") && l.contains("read-only")),
        "{text}"
    );
    assert_eq!(
        stderr(&output),
        format!("{}connecting 1 server…\n", support::DEMO_NOTICE)
    );
}

#[test]
fn tools_json_is_the_documented_shape() {
    let dir = workspace();
    let output = plexus(&dir, &["--json", "tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let echo = tools.iter().find(|t| t["name"] == "mcp__demo__echo").unwrap();
    let mut keys: Vec<_> = echo.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "concurrencySafe",
            "description",
            "destructive",
            "idempotent",
            "inputSchema",
            "name",
            "openWorld",
            "outputSchema",
            "readOnly",
            "server",
            "taskSupport",
            "title",
            "tool"
        ]
    );
    assert_eq!(echo["taskSupport"], "forbidden");
    assert_eq!(echo["server"], "demo");
    assert_eq!(echo["tool"], "echo");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["readOnly"], true);
    assert_eq!(echo["concurrencySafe"], true);
    assert_eq!(echo["destructive"], false);
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    let crash = tools.iter().find(|t| t["name"] == "mcp__demo__crash").unwrap();
    assert_eq!(
        (crash["readOnly"].clone(), crash["destructive"].clone()),
        (json!(false), json!(true))
    );
}

#[test]
fn servers_json_reports_each_status() {
    let dir = workspace();
    let path = config(
        &dir,
        &json!({
            "demo": demo(&[]),
            "gone": {"command": "plexus-no-such-command"},
            "off": {"command": "true", "disabled": true},
            "remote": {"type": "claudeai-proxy", "url": "https://127.0.0.1:9/mcp", "id": "c1"},
        }),
    );
    let output = plexus(&dir, &["--config", &path, "--json", "servers"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut rows: Value = serde_json::from_slice(&output.stdout).unwrap();
    // How long the connect took varies; that there is a figure for the connected server does not.
    assert!(rows[0]["connectMs"].is_u64(), "{rows}");
    rows[0]["connectMs"] = json!("measured");
    let version = env!("CARGO_PKG_VERSION");
    let row = |name: &str, kind: &str, status: &str, details: Value| {
        let mut row = json!({
            "name": name, "scope": "explicit", "source": path, "kind": kind, "status": status, "state": status,
            "reason": null, "protocolVersion": null, "era": null, "eraSource": null, "serverInfo": null,
            "toolCount": null, "connectMs": null,
            "required": false, "error": null, "warnings": [], "errors": [], "changes": []
        });
        for (key, value) in details.as_object().unwrap() {
            row[key] = value.clone();
        }
        row
    };
    assert_eq!(
        rows,
        json!([
            row(
                "demo",
                "stdio",
                "connected",
                json!({"protocolVersion": "2026-07-28", "era": "stateless", "eraSource": "probe", "serverInfo": {"name": "plexus-testserver", "version": version}, "toolCount": 20, "connectMs": "measured"})
            ),
            row(
                "gone",
                "stdio",
                "failed",
                json!({"error": "could not connect to plexus-no-such-command: command not found: plexus-no-such-command"})
            ),
            row("off", "stdio", "disabled", json!({"reason": "disabled by its entry"})),
            row(
                "remote",
                "claudeai-proxy",
                "failed",
                json!({"error": "POST https://127.0.0.1:9/mcp: could not connect: Connection refused (os error 111)"})
            ),
        ])
    );
}

#[test]
fn servers_table_is_tidy() {
    let dir = workspace();
    let output = plexus(&dir, &["servers"]);
    assert_eq!(output.status.code(), Some(0));
    let version = env!("CARGO_PKG_VERSION");
    // The demo server comes from no scope and no file; the probe found it speaks the stateless era.
    let expected = format!(
        "NAME  SCOPE  KIND   STATUS     PROTOCOL             SERVER{pad}TOOLS  SOURCE  ERROR\ndemo         stdio  connected  2026-07-28 (probed)  plexus-testserver {version}  20\n",
        pad = " ".repeat(format!("plexus-testserver {version}").len() - "SERVER".len() + 2)
    );
    assert_eq!(stdout(&output), expected);
}

#[test]
fn call_prints_the_result_and_sets_the_exit_code() {
    let dir = workspace();
    let output = plexus(&dir, &["call", "mcp__demo__echo", r#"{"text":"hello there"}"#]);
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (Some(0), "hello there\n".to_owned())
    );

    let output = plexus(&dir, &["--json", "call", "mcp__demo__add", r#"{"a":2,"b":40}"#]);
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        result,
        json!({"isError": false, "content": [{"type": "text", "text": "42"}], "structuredContent": {"sum": 42},
               "files": [], "truncated": false, "warnings": []})
    );

    let output = plexus(&dir, &["--json", "call", "mcp__demo__error"]);
    assert_eq!(output.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"], Value::Null);

    let output = plexus_with_stdin(
        &dir,
        &["call", "mcp__demo__echo", "-"],
        Some(r#"{"text":"from stdin"}"#),
    );
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (Some(0), "from stdin\n".to_owned())
    );

    // An image is saved for a person to open (0600, under the plexus home's tool-results).
    let output = plexus(&dir, &["call", "mcp__demo__image"]);
    let shown = stdout(&output);
    let path = shown
        .strip_prefix("[image: image/png, 70 bytes, saved to ")
        .and_then(|rest| rest.strip_suffix("]\na 1×1 PNG image\n"))
        .unwrap_or_else(|| panic!("{shown}"));
    let saved = std::fs::read(path).unwrap();
    assert_eq!(&saved[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(std::path::Path::new(path).extension(), Some("png".as_ref()), "{path}");
    assert!(path.contains("/tool-results/"), "{path}");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn usage_errors_exit_2_with_the_reason() {
    let dir = workspace();
    let demo = support::DEMO_NOTICE;
    let cases: [(&[&str], String); 7] = [
        (
            &["call", "mcp__demo__echo", "[1]"],
            "plexus: error: the arguments must be a JSON object, not an array\n".to_owned(),
        ),
        (
            &["call", "mcp__demo__nope"],
            format!("{demo}connecting 1 server…\nplexus: no tool is named \"mcp__demo__nope\" (see `plexus tools`)\n"),
        ),
        (
            // No server has the name's part: the servers that may run are asked, to suggest one.
            &["call", "mcp__other__echo"],
            format!(
                "{demo}connecting 1 server…\nplexus: no tool is named \"mcp__other__echo\"; did you mean \"mcp__demo__echo\"? (see `plexus tools`)\n"
            ),
        ),
        (
            &["call", "mcp__demo__ecoh", "-a", "text=hi"],
            format!(
                "{demo}connecting 1 server…\nplexus: no tool is named \"mcp__demo__ecoh\"; did you mean \"mcp__demo__echo\"? (see `plexus tools`)\n"
            ),
        ),
        (
            &["tools", "elsewhere"],
            format!("{demo}plexus: no server named \"elsewhere\" is configured (configured: demo)\n"),
        ),
        (
            &["tools", "dmeo"],
            format!("{demo}plexus: no server named \"dmeo\" is configured (configured: demo); did you mean \"demo\"?\n"),
        ),
        (
            &["call", "mcp__demo__add", "a=2", "b=3"],
            "plexus: error: the arguments are one JSON object; give them one by one with --arg (-a): plexus call mcp__demo__add -a a=2 -a b=3\n".to_owned(),
        ),
    ];
    for (args, message) in cases {
        let output = plexus(&dir, args);
        assert_eq!((output.status.code(), stderr(&output)), (Some(2), message), "{args:?}");
    }
    let missing = dir.join("missing.json");
    let output = plexus(&dir, &["--config", missing.to_str().unwrap(), "tools"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "plexus: error: cannot read {}\n  caused by: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    let output = plexus(&dir, &["frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_failing_server_does_not_hide_the_others_tools_and_exits_3() {
    let dir = workspace();
    let path = config(
        &dir,
        &json!({"demo": demo(&[]), "broken": demo(&["--exit-at-start", "5"])}),
    );
    let output = plexus(&dir, &["--config", &path, "--json", "tools"]);
    assert_eq!(output.status.code(), Some(3));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(tools.len(), 20);
    assert!(tools.iter().all(|t| t["server"] == "demo"));
    let errors = stderr(&output);
    assert!(
        errors.contains(
            "plexus: error: server \"broken\"\n  caused by: the connection is closed: the server exited with status \
             5\n--- last stderr output of the server ---\n"
        ),
        "{errors}"
    );
}

#[test]
fn a_server_dying_mid_call_exits_3_with_its_stderr() {
    let dir = workspace();
    let output = plexus(&dir, &["call", "mcp__demo__crash", r#"{"code": 9}"#]);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr(&output).ends_with(
            "plexus: error: calling mcp__demo__crash\n  caused by: the connection is closed: the server exited with \
             status 9\n--- last stderr output of the server ---\nplexus-testserver: crashing as asked\n"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_project_file_is_found_from_a_subdirectory_and_bad_entries_are_reported() {
    let dir = workspace();
    let servers = json!({"mcpServers": {"proj": demo(&[]), "bad name!": {"command": "x"}}});
    std::fs::write(dir.join(".mcp.json"), servers.to_string()).unwrap();
    let sub = dir.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    // A project's servers run once approved; the approval is found from the subdirectory too.
    let output = plexus_in(&dir, &sub, &["approve", "proj"]);
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (
            Some(0),
            format!(
                "approved project server \"proj\" (recorded in {})\n",
                dir.shown(dir.local_file())
            )
        ),
        "{}",
        stderr(&output)
    );
    let output = plexus_in(&dir, &sub, &["--json", "tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert!(tools.iter().all(|t| t["server"] == "proj") && !tools.is_empty());
    let errors = stderr(&output);
    assert!(
        errors.starts_with(&format!("plexus: {}: server \"bad name!\": ", dir.shown(".mcp.json"))),
        "{errors}"
    );
}

#[test]
fn later_config_files_win_whole_entries() {
    let dir = workspace();
    let first = dir.join("a.json");
    let second = dir.join("b.json");
    std::fs::write(
        &first,
        json!({"mcpServers": {"s": {"command": "plexus-no-such-command"}}}).to_string(),
    )
    .unwrap();
    std::fs::write(&second, json!({"mcpServers": {"s": demo(&[])}}).to_string()).unwrap();
    let output = plexus(
        &dir,
        &[
            "--config",
            first.to_str().unwrap(),
            "--config",
            second.to_str().unwrap(),
            "call",
            "mcp__s__echo",
            r#"{"text":"b wins"}"#,
        ],
    );
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (Some(0), "b wins\n".to_owned()),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_stdio_server_does_not_inherit_plexus_secrets_unless_its_entry_names_them() {
    let ws = Workspace::new();
    let seen = ws.join("seen");
    // Each server writes what it sees of the two secret variables, then runs the demo server.
    let server = |name: &str, env: Value| {
        json!({
            "command": "sh",
            "args": ["-c", format!(
                "printf '%s %s\\n' \"${{PLEXUS_SESSION_INGRESS_TOKEN-unset}}\" \"${{PLEXUS_SESSION_INGRESS_TOKEN_FILE-unset}}\" > {}/{name}; exec {} demo-server",
                seen.display(),
                support::PLEXUS
            )],
            "env": env
        })
    };
    std::fs::create_dir_all(&seen).unwrap();
    ws.write_servers(
        ws.user_file(),
        &json!({
            "plain": server("plain", json!({})),
            "named": server("named", json!({"PLEXUS_SESSION_INGRESS_TOKEN": "${PLEXUS_SESSION_INGRESS_TOKEN}"})),
        }),
    );
    let out = ws.run_with_env(
        &["tools"],
        &[
            ("PLEXUS_SESSION_INGRESS_TOKEN", "s3cret"),
            ("PLEXUS_SESSION_INGRESS_TOKEN_FILE", "/run/token"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(std::fs::read_to_string(seen.join("plain")).unwrap(), "unset unset\n");
    assert_eq!(std::fs::read_to_string(seen.join("named")).unwrap(), "s3cret unset\n");
}

#[test]
fn escape_sequences_from_a_server_never_reach_the_terminal() {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"bad": demo(&["--hostile-text"])}));
    let shown = r"\x1b]0;pwned\x07\x1b[2J\u{9b}31m";
    let runs = [
        ws.run(&["servers"]),
        ws.run(&["tools"]),
        ws.run(&["call", "mcp__bad__hostile"]),
        ws.run(&["call", "mcp__bad__hostile", r#"{"mode": "error"}"#]),
        ws.run(&["call", "mcp__bad__hostile", r#"{"mode": "crash"}"#]),
        ws.run(&["-v", "call", "mcp__bad__hostile", r#"{"mode": "crash"}"#]),
    ];
    for out in &runs {
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !text.contains(['\u{1b}', '\u{7}', '\u{9b}']),
                "a raw control character was written: {text:?}"
            );
        }
        assert!(
            out.stdout.contains(shown) || out.stderr.contains(shown),
            "the sequence is shown escaped: {out:?}"
        );
    }
    // In the servers table, the server's info; in the tools table, the title and description.
    assert!(
        runs[0].stdout.contains(&format!("plexus-testserver{shown}")),
        "{}",
        runs[0].stdout
    );
    assert!(
        runs[1].stdout.contains(&format!("Hostile{shown}")),
        "{}",
        runs[1].stdout
    );
    assert_eq!(runs[2].stdout, format!("result{shown}\n"));
    assert!(runs[3].stderr.contains(&format!("failed{shown}")), "{}", runs[3].stderr);
    assert!(
        runs[4].stderr.contains(&format!("plexus-testserver: dying{shown}")),
        "{}",
        runs[4].stderr
    );
    // JSON output is JSON's own escaping, and the text is intact inside it.
    let json = ws.run(&["--json", "call", "mcp__bad__hostile"]);
    assert_eq!(
        json.json()["content"][0]["text"],
        "result\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m"
    );
}

#[test]
fn when_no_server_can_be_used_the_commands_say_so_and_exit_non_zero() {
    let ws = Workspace::new();
    ws.write_servers(
        ws.user_file(),
        &json!({"gone": {"command": "plexus-no-such-command"}, "dead": demo(&["--exit-at-start", "5"])}),
    );
    let line = "plexus: no server could be used: of 2 configured servers, none could be connected\n";
    for command in [&["servers"][..], &["tools"], &["--json", "servers"]] {
        let out = ws.run(command);
        assert_eq!(out.code, Some(3), "{command:?}: {out:?}");
        assert!(out.stderr.ends_with(line), "{command:?}: {}", out.stderr);
    }
    // One usable server is enough.
    ws.write_servers(
        ws.user_file(),
        &json!({"gone": {"command": "plexus-no-such-command"}, "demo": demo(&[])}),
    );
    assert_eq!(ws.run(&["servers"]).code, Some(0));
}

#[test]
fn tools_whose_names_would_collide_keep_their_own_names_and_calls_resolve_through_the_index() {
    let ws = Workspace::new();
    let log = ws.path().join("events.log").display().to_string();
    let long_tool = "x".repeat(80);
    ws.write_servers(
        ws.user_file(),
        &json!({"demo": demo(&["--event-log", &log, "--tool-named", "a.b", "--tool-named", "a_b", "--tool-named", &long_tool])}),
    );
    let out = ws.run(&["--json", "tools"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let tools = out.json();
    let name_of = |tool: &str| {
        tools.as_array().unwrap().iter().find(|t| t["tool"] == tool).unwrap()["name"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (plain, dotted, long) = (name_of("a_b"), name_of("a.b"), name_of(&"x".repeat(80)));
    assert_eq!(plain, "mcp__demo__a_b");
    assert!(
        dotted.starts_with("mcp__demo__a_b__") && dotted.len() == plain.len() + 10,
        "{dotted}"
    );
    assert_eq!(long.len(), 64, "{long}");
    assert!(
        out.stderr.contains(&format!(
            "plexus: tools share the name mcp__demo__a_b; each keeps one of its own: \"a.b\" of server \"demo\" is {dotted}, \"a_b\" of server \"demo\" is {plain}"
        )),
        "{}",
        out.stderr
    );
    for (name, tool) in [(&dotted, "a.b"), (&plain, "a_b"), (&long, long_tool.as_str())] {
        let out = ws.run(&["--json", "call", name, r#"{"which": 1}"#]);
        assert_eq!(out.code, Some(0), "{name} ({tool}): {out:?}");
        assert_eq!(out.json()["content"][0]["text"], r#"{"which":1}"#, "{name}");
        // The server was asked for exactly that tool.
        let called: Vec<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|event| event["method"] == "tools/call")
            .map(|event| event["params"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(called.last().map(String::as_str), Some(tool), "{name}");
    }
}

#[test]
fn enabled_and_disabled_tools_decide_what_is_listed_and_callable() {
    let ws = Workspace::new();
    let mut entry = demo(&[]);
    entry["enabledTools"] = json!(["e*", "add"]);
    entry["disabledTools"] = json!(["error"]);
    ws.write_servers(ws.user_file(), &json!({"demo": entry}));
    let out = ws.run(&["--json", "tools"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let names: Vec<String> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tool"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["add", "echo", "elicit"]);
    assert_eq!(ws.run(&["call", "mcp__demo__add", r#"{"a": 1, "b": 2}"#]).code, Some(0));
    let out = ws.run(&["call", "mcp__demo__error"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains("no tool is named \"mcp__demo__error\""),
        "{}",
        out.stderr
    );
}

#[test]
fn a_required_server_that_cannot_connect_fails_the_command() {
    let ws = Workspace::new();
    let mut dead = demo(&["--exit-at-start", "5"]);
    dead["required"] = json!(true);
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[]), "dead": dead}));
    for command in [&["servers"][..], &["tools"], &["--json", "servers"]] {
        let out = ws.run(command);
        assert_eq!(out.code, Some(3), "{command:?}: {out:?}");
        assert!(
            out.stderr.contains(
                "plexus: required server \"dead\" could not connect: the connection is closed: the server exited with \
                 status 5\n--- last stderr output of the server ---\n"
            ),
            "{command:?}: {}",
            out.stderr
        );
        // The others are still shown.
        assert!(
            out.stdout.contains("mcp__demo__echo") || out.stdout.contains("demo"),
            "{}",
            out.stdout
        );
    }
    let rows = ws.run(&["--json", "servers"]).json();
    assert_eq!(rows[0]["name"], "dead");
    assert_eq!(rows[0]["required"], true);
    // Not required: the same failure is only a row.
    ws.write_servers(
        ws.user_file(),
        &json!({"demo": demo(&[]), "dead": demo(&["--exit-at-start", "5"])}),
    );
    assert_eq!(ws.run(&["servers"]).code, Some(0));
}

#[test]
fn a_table_fits_the_terminal_and_what_it_cuts_is_printed_whole_below() {
    let ws = Workspace::new();
    ws.write_servers(
        ws.user_file(),
        &json!({"demo": demo(&[]), "gone": {"command": "plexus-no-such-command-with-a-long-name"}}),
    );
    // 100 columns: the fixed columns (the protocol with how it was found, "2026-07-28 (probed)")
    // and the flexible ones at their floor take 99.
    let out = ws.run_with_env(&["servers"], &[("COLUMNS", "100")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (table, below) = out.stdout.split_once("\n\n").expect("a part below the table");
    for line in table.lines() {
        assert!(line.chars().count() <= 100, "{line:?} is wider than 100");
    }
    assert!(table.lines().nth(2).unwrap().ends_with('…'), "{table}");
    assert!(
        below.lines().any(|line| line
            == "gone: error: could not connect to plexus-no-such-command-with-a-long-name: command not found: \
                plexus-no-such-command-with-a-long-name"),
        "{below}"
    );
}

#[test]
fn plexus_max_message_size_sets_the_limit_and_a_reply_over_it_fails_its_call_at_once() {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[])}));
    let call = ["call", "mcp__demo__large", r#"{"bytes": 200000}"#];
    let out = ws.run_with_env(
        &call,
        &[("PLEXUS_MAX_MESSAGE_SIZE", "65536"), ("MCP_TOOL_TIMEOUT", "60000")],
    );
    assert_eq!(out.code, Some(3), "{out:?}");
    let error = out.stderr.lines().rev().take(3).collect::<Vec<_>>();
    assert_eq!(
        error[1..],
        [
            // The probe (request 0) and the stateless era's listen (1) come first.
            "  caused by: the server's reply to request 3 was dropped",
            "plexus: error: calling mcp__demo__large"
        ],
        "{}",
        out.stderr
    );
    let error = error[0];
    assert!(
        error.starts_with("  caused by: a message of ")
            && error.ends_with(
                "bytes from the server is larger than the 65536-byte limit; it was discarded (raise the limit with \
                 PLEXUS_MAX_MESSAGE_SIZE)"
            ),
        "{error}"
    );
    // Within both limits (the message size, and the output tokens) the whole text comes through.
    let out = ws.run_with_env(
        &call,
        &[
            ("PLEXUS_MAX_MESSAGE_SIZE", "1048576"),
            ("MAX_MCP_OUTPUT_TOKENS", "60000"),
        ],
    );
    assert_eq!((out.code, out.stdout.len()), (Some(0), 200_001), "{}", out.stderr);
}

#[test]
fn output_over_the_token_limit_is_saved_whole_and_its_head_printed() {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[])}));
    let call = ["--json", "call", "mcp__demo__large", r#"{"bytes": 200000}"#];
    let out = ws.run_with_env(&call, &[("MAX_MCP_OUTPUT_TOKENS", "1000")]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let result = out.json();
    assert_eq!(result["truncated"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.chars().count(), 4000, "1000 tokens of 4 characters");
    let file = result["files"][0]["path"].as_str().unwrap();
    assert!(file.starts_with(&ws.shown("home/tool-results/")), "{file}");
    assert_eq!(
        std::fs::read(file).unwrap().len(),
        200_000,
        "the whole output is in the file"
    );
    assert!(text.ends_with(&format!("the whole output is in {file}]")), "{text}");
    assert_eq!(
        result["warnings"],
        json!(["the output was truncated to 4000 characters"])
    );
}

#[test]
fn verbose_output_shows_server_logs_then_messages_then_bodies_with_secrets_redacted() {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&[])}));
    let log = [
        "call",
        "mcp__demo__log",
        r#"{"level": "warning", "message": "disk almost full"}"#,
    ];
    let out = ws.run(&[&["-v"][..], &log].concat());
    assert_eq!(out.code, Some(0), "{out:?}");
    let line = out
        .stderr
        .lines()
        .find(|line| line.contains("disk almost full"))
        .unwrap();
    assert!(line.contains(" WARN ") && line.contains("server=\"demo\""), "{line}");
    assert!(
        !out.stderr.contains("→ request"),
        "messages only from -vv: {}",
        out.stderr
    );

    let echo = ["call", "mcp__demo__echo", r#"{"text": "hi", "api_key": "sk-123"}"#];
    let out = ws.run(&[&["-vv"][..], &echo].concat());
    assert!(
        out.stderr
            .lines()
            .any(|line| line.contains("→ request tools/call id=3 (") && line.ends_with("bytes) server=\"demo\"")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("← result id=3 ("), "{}", out.stderr);
    assert!(!out.stderr.contains("sk-123"), "no body at -vv: {}", out.stderr);

    let out = ws.run(&[&["-vvv"][..], &echo].concat());
    assert!(out.stderr.contains(r#""api_key":"<redacted>""#), "{}", out.stderr);
    assert!(out.stderr.contains(r#""text":"hi""#), "{}", out.stderr);
    assert!(
        !out.stderr.contains("sk-123"),
        "the secret never reaches the log: {}",
        out.stderr
    );
    // Not a terminal: no colours.
    assert!(!out.stderr.contains('\u{1b}'), "{}", out.stderr);
}
