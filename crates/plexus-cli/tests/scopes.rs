//! Discovery and merging as the CLI shows them: every scope's file, precedence, `--config`,
//! `--strict-config`, `--project`, managed policy, broken files and entries, the demo fallback,
//! and `plexus get`.

mod support;

use serde_json::{Value, json};
use support::{PLEXUS, Workspace, demo, demo_written, version};

/// A row of `plexus servers --json` with the fields a test does not set at their "does not apply"
/// value.
fn row(name: &str, scope: &str, source: &str, kind: Option<&str>, status: &str, details: &Value) -> Value {
    let mut row = json!({
        "name": name, "scope": scope, "source": source, "kind": kind, "status": status, "state": status,
        "reason": null, "protocolVersion": null, "era": null, "eraSource": null, "serverInfo": null,
        "toolCount": null, "connectMs": null,
        "required": false, "error": null, "warnings": [], "errors": [], "changes": []
    });
    for (key, value) in details.as_object().unwrap() {
        row[key] = value.clone();
    }
    row
}

#[test]
fn servers_shows_every_scope_with_its_file_warnings_and_errors() {
    let ws = Workspace::new();
    ws.write_servers(
        "home/settings.json",
        &json!({"from-user": {"command": PLEXUS, "args": ["demo-server"], "color": "blue"}, "blocked": demo(&[])}),
    );
    ws.write_servers(
        ".mcp.json",
        &json!({"from-project": demo(&[]), "broken": {"command": "node", "args": ["a.js", 3]}}),
    );
    ws.write_servers(ws.local_file(), &json!({"off": {"command": "x", "disabled": true}}));
    ws.write_json(
        "etc/managed-mcp.json",
        &json!({"deniedMcpServers": [{"serverName": "blocked"}]}),
    );
    let (user, project, local, managed) = (
        ws.shown("home/settings.json"),
        ws.shown(".mcp.json"),
        ws.shown(ws.local_file()),
        ws.shown("etc/managed-mcp.json"),
    );

    let out = ws.run(&["--json", "servers"]);
    out.expect(0, "connecting 1 server…\n");
    let mut rows = out.json();
    // How long the connect took varies; that there is a figure for the connected server does not.
    assert!(rows[3]["connectMs"].is_u64(), "{rows}");
    rows[3]["connectMs"] = json!("measured");
    let broken_error = format!("{project}: server \"broken\": field \"args[1]\": expected a string, found 3");
    assert_eq!(
        rows,
        json!([
            row(
                "blocked",
                "user",
                &user,
                Some("stdio"),
                "disabled",
                &json!({"reason": format!("disabled by managed policy: denied by deniedMcpServers[0] (serverName \"blocked\") in {managed}")})
            ),
            row(
                "broken",
                "project",
                &project,
                None,
                "failed",
                &json!({"error": broken_error, "errors": [broken_error]})
            ),
            row(
                "from-project",
                "project",
                &project,
                Some("stdio"),
                "pending",
                &json!({"reason": "pending approval (a project server runs only once approved); approve it with: plexus approve from-project"})
            ),
            row(
                "from-user",
                "user",
                &user,
                Some("stdio"),
                "connected",
                &json!({
                    "protocolVersion": "2026-07-28", "era": "stateless", "eraSource": "probe", "serverInfo": {"name": "plexus-testserver", "version": version()}, "toolCount": 20,
                    "connectMs": "measured",
                    "warnings": [format!("{user}: server \"from-user\": field \"color\": unknown field for a \"stdio\" server; kept as written but not used")]
                })
            ),
            row(
                "off",
                "local",
                &local,
                Some("stdio"),
                "disabled",
                &json!({"reason": "disabled by its entry"})
            ),
        ])
    );

    // The table shows the same, then each warning and error in full.
    let out = ws.run(&["servers"]);
    let text = out.expect(0, "connecting 1 server…\n");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 9, "{text}");
    let cells = |line: &str| line.split_whitespace().take(4).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(cells(lines[0]), ["NAME", "SCOPE", "KIND", "STATUS"]);
    assert_eq!(cells(lines[1]), ["blocked", "user", "stdio", "disabled"]);
    // An invalid entry has no kind: its cell is empty.
    assert_eq!(cells(lines[2]), ["broken", "project", "failed", project.as_str()]);
    assert_eq!(cells(lines[3]), ["from-project", "project", "stdio", "pending"]);
    assert_eq!(cells(lines[4]), ["from-user", "user", "stdio", "connected"]);
    assert_eq!(cells(lines[5]), ["off", "local", "stdio", "disabled"]);
    assert!(lines[4].ends_with(&format!("  20     {user}")), "{}", lines[4]);
    assert_eq!(
        lines[6..],
        [
            "",
            &format!("error: {broken_error}"),
            &format!(
                "warning: {user}: server \"from-user\": field \"color\": unknown field for a \"stdio\" server; kept as written but not used"
            ),
        ]
    );
}

#[test]
fn the_highest_scope_wins_whole_and_get_shows_what_it_overrides() {
    let ws = Workspace::new();
    ws.write_servers("home/settings.json", &json!({"s": {"command": "from-user"}}));
    ws.write_servers(".mcp.json", &json!({"s": {"command": "from-project"}}));
    ws.write_servers(
        ws.local_file(),
        &json!({"s": {"command": PLEXUS, "args": ["demo-server"], "env": {"WHO": "${WHO:-nobody}"}}}),
    );
    let out = ws.run_with_env(&["--json", "get", "s"], &[("WHO", "tester")]);
    assert_eq!(
        out.json(),
        json!({
            "name": "s", "scope": "local", "source": ws.shown(ws.local_file()), "kind": "stdio",
            "status": "active", "reason": null,
            "config": {"type": "stdio", "command": PLEXUS, "args": ["demo-server"], "env": {"WHO": "tester"}},
            "warnings": [], "errors": [],
            "overridden": [
                {"scope": "project", "source": ws.shown(".mcp.json")},
                {"scope": "user", "source": ws.shown("home/settings.json")}
            ],
            "changes": []
        })
    );
    let out = ws.run(&["get", "s"]);
    assert_eq!(
        out.ok(),
        format!(
            "name:      s\nscope:     local\nsource:    {local}\nkind:      stdio\nstatus:    active\noverrides: {project} (project)\noverrides: {user} (user)\nconfig:\n{{\n  \"type\": \"stdio\",\n  \"command\": \"{PLEXUS}\",\n  \"args\": [\n    \"demo-server\"\n  ],\n  \"env\": {{\n    \"WHO\": \"nobody\"\n  }}\n}}\n",
            local = ws.shown(ws.local_file()),
            project = ws.shown(".mcp.json"),
            user = ws.shown("home/settings.json"),
        )
    );

    // An explicit --config file wins over every scope.
    let explicit = ws.write_servers("extra.json", &json!({"s": {"command": "from-explicit"}}));
    let out = ws.run(&["--config", explicit.to_str().unwrap(), "--json", "get", "s"]);
    let details = out.json();
    assert_eq!(
        (details["scope"].clone(), details["config"]["command"].clone()),
        (json!("explicit"), json!("from-explicit"))
    );
    assert_eq!(details["overridden"].as_array().unwrap().len(), 3);
}

#[test]
fn get_shows_invalid_entries_and_names_the_configured_servers_when_one_is_unknown() {
    let ws = Workspace::new();
    ws.write_servers(
        ws.local_file(),
        &json!({"bad": {"type": "http"}, "good": {"command": "x"}}),
    );
    let local = ws.shown(ws.local_file());
    let error = format!("{local}: server \"bad\": field \"url\": missing; a \"http\" server requires it");
    let out = ws.run(&["get", "bad"]);
    assert_eq!(
        out.ok(),
        format!("name:   bad\nscope:  local\nsource: {local}\nstatus: failed\nerror:  {error}\n")
    );
    let out = ws.run(&["--json", "get", "bad"]);
    assert_eq!(out.json()["errors"], json!([error]));
    assert_eq!(
        (out.json()["config"].clone(), out.json()["kind"].clone()),
        (Value::Null, Value::Null)
    );
    ws.run(&["tools", "bad"]).expect(
        2,
        &format!("plexus: {error}\nplexus: server \"bad\" is not started: its entry is invalid\n"),
    );
    ws.run(&["get", "nope"]).expect(
        2,
        "plexus: error: no server named \"nope\" is configured (configured: bad, good)\n",
    );
}

#[test]
fn strict_config_reads_only_the_explicit_files() {
    let ws = Workspace::new();
    ws.write_servers(ws.local_file(), &json!({"local-one": {"command": "x"}}));
    let explicit = ws.write_servers("only.json", &json!({"e": demo(&[])}));
    let explicit = explicit.to_str().unwrap();
    let names = |args: &[&str]| -> Vec<String> {
        let out = ws.run(args);
        let rows = out.json();
        rows.as_array()
            .unwrap()
            .iter()
            .map(|row| row["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&["--config", explicit, "--json", "servers"]), ["e", "local-one"]);
    assert_eq!(
        names(&["--config", explicit, "--strict-config", "--json", "servers"]),
        ["e"]
    );
    ws.run(&["--strict-config", "servers"]).expect(
        2,
        "error: the following required arguments were not provided:\n  --config <FILE>\n\nUsage: plexus --config <FILE> --strict-config <COMMAND>\n\nFor more information, try '--help'.\n",
    );
}

#[test]
fn project_is_found_upwards_from_the_working_directory_or_from_project_dir() {
    let ws = Workspace::new();
    ws.write_servers("app/.mcp.json", &json!({"app-server": demo(&[])}));
    std::fs::create_dir_all(ws.join("app/src/deep")).unwrap();
    ws.run_in(&ws.join("app/src/deep"), &["approve", "app-server"]).ok();
    assert!(ws.local_file_of("app").is_file());
    let source = |out: support::Run| out.json()["source"].as_str().map(str::to_owned);
    let found = source(ws.run_in(&ws.join("app/src/deep"), &["--json", "get", "app-server"]));
    assert_eq!(found, Some(ws.shown("app/.mcp.json")));
    let app = ws.shown("app");
    let found = source(ws.run(&["--project", &app, "--json", "get", "app-server"]));
    assert_eq!(found, Some(ws.shown("app/.mcp.json")));
    // Relative to the working directory, and the approval in that project's local settings holds.
    let out = ws.run(&[
        "--project",
        "app/src",
        "call",
        "mcp__app-server__echo",
        r#"{"text":"found"}"#,
    ]);
    assert_eq!(out.expect(0, "connecting 1 server…\n"), "found\n");

    let missing = ws.shown("nowhere");
    ws.run(&["--project", &missing, "servers"]).expect(
        2,
        &format!("plexus: --project {missing}: No such file or directory (os error 2)\n"),
    );
    let file = ws.shown("app/.mcp.json");
    ws.run(&["--project", &file, "servers"])
        .expect(2, &format!("plexus: --project {file}: not a directory\n"));
}

#[test]
fn the_search_stops_at_the_repository_root() {
    let ws = Workspace::new();
    // A `.mcp.json` above a nested repository is not that repository's project file.
    ws.write_servers(".mcp.json", &json!({"outer": {"command": "x"}}));
    std::fs::create_dir_all(ws.join("inner/.git")).unwrap();
    std::fs::create_dir_all(ws.join("inner/src")).unwrap();
    let out = ws.run_in(&ws.join("inner/src"), &["--json", "get", "outer"]);
    out.expect(
        2,
        &format!(
            "{}plexus: error: no server named \"outer\" is configured (configured: demo)\n",
            support::DEMO_NOTICE
        ),
    );
}

#[test]
fn a_settings_file_that_is_not_json_stops_every_command_with_its_line_and_column() {
    let ws = Workspace::new();
    ws.write(
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"p\": {\"command\": \"x\"},\n  }\n}\n",
    );
    ws.write_servers("home/settings.json", &json!({"u": demo(&[])}));
    let project_error = format!(
        "plexus: error: {}:4:3: invalid JSON\n  caused by: trailing comma\n",
        ws.shown(".mcp.json")
    );
    // Going on without the file would run other servers than the user wrote: nothing starts.
    for args in [
        &["servers"][..],
        &["--json", "servers"],
        &["tools"],
        &["call", "mcp__u__echo", "-a", "text=hi"],
        &["get", "u"],
        &["serve"],
    ] {
        let out = ws.run(args);
        assert_eq!(
            (out.code, out.stderr.as_str(), out.stdout.as_str()),
            (Some(2), project_error.as_str(), ""),
            "{args:?}"
        );
    }
    // The user's settings.json likewise.
    ws.write(".mcp.json", "{}");
    ws.write("home/settings.json", "{\"mcpServers\": {\"u\": }}");
    ws.run(&["servers"]).expect(
        2,
        &format!(
            "plexus: error: {}:1:22: invalid JSON\n  caused by: expected value\n",
            ws.shown("home/settings.json")
        ),
    );

    // A broken --config file is named by the user: it stops the command too.
    ws.write_servers("home/settings.json", &json!({"u": demo(&[])}));
    let explicit = ws.write("broken.json", "[1, 2");
    let explicit = explicit.to_str().unwrap();
    ws.run(&["--config", explicit, "servers"]).expect(
        2,
        &format!("plexus: error: {explicit}:1:5: invalid JSON\n  caused by: EOF while parsing a list\n"),
    );
}

#[test]
fn settings_files_without_servers_count_as_config_and_end_the_demo() {
    let ws = Workspace::new();
    assert_eq!(
        ws.run(&["--json", "get", "demo"]).json()["scope"],
        Value::Null,
        "with no file anywhere, the demo server"
    );
    ws.write_json("home/settings.json", &json!({"theme": "dark"}));
    assert_eq!(ws.run(&["servers"]).ok(), "no servers configured\n");
    assert_eq!(ws.run(&["--json", "servers"]).ok(), "[]\n");
}

#[test]
fn a_managed_file_that_cannot_be_applied_blocks_every_server() {
    let ws = Workspace::new();
    ws.write_servers(ws.local_file(), &json!({"mine": demo(&[])}));
    ws.write("etc/managed-mcp.json", "{\"deniedMcpServers\": [");
    let managed = ws.shown("etc/managed-mcp.json");
    let out = ws.run(&["--json", "servers"]);
    out.expect(
        2,
        &format!(
            "plexus: error: {managed}:1:22: invalid JSON\n  caused by: EOF while parsing a list\nplexus: no server could be used: of 1 \
             configured server, none may run (invalid, disabled, rejected or waiting for approval)\n"
        ),
    );
    assert_eq!(
        out.json()[0]["reason"],
        format!(
            "disabled by managed policy: the managed policy {managed} cannot be applied ({managed}:1:22: invalid JSON: EOF while parsing a list); every server is blocked until it is fixed"
        )
    );
    assert_eq!(out.json()[0]["status"], "disabled");
}

#[test]
fn managed_servers_replace_every_other_scope() {
    let ws = Workspace::new();
    ws.write_servers(ws.local_file(), &json!({"mine": {"command": "x"}}));
    ws.write_servers("etc/managed-mcp.json", &json!({"corp": demo_written()}));
    let out = ws.run(&["--json", "servers"]);
    out.expect(0, "connecting 1 server…\n");
    let rows = out.json();
    assert_eq!(
        (
            rows[0]["name"].clone(),
            rows[0]["scope"].clone(),
            rows[0]["status"].clone()
        ),
        (json!("corp"), json!("managed"), json!("connected"))
    );
    assert_eq!(
        (
            rows[1]["name"].clone(),
            rows[1]["status"].clone(),
            rows[1]["reason"].clone()
        ),
        (
            json!("mine"),
            json!("disabled"),
            json!(format!(
                "disabled by managed policy: {} defines mcpServers, which replace the servers of every other scope",
                ws.shown("etc/managed-mcp.json")
            ))
        )
    );
}
