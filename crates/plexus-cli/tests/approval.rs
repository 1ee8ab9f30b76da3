//! Project servers wait for approval: `plexus approve`, `approve --all`, `reject`, the
//! `enableAllProjectMcpServers` setting, and what `servers`, `tools` and `call` say meanwhile.

mod support;

use serde_json::{Value, json};
use support::{Workspace, demo};

/// A workspace whose `.mcp.json` holds `names`, each the demo server.
fn project_with(names: &[&str]) -> Workspace {
    let ws = Workspace::new();
    let servers: serde_json::Map<String, Value> = names.iter().map(|name| ((*name).to_owned(), demo(&[]))).collect();
    ws.write_servers(".mcp.json", &Value::Object(servers));
    ws
}

/// `approvedMcpjsonServers` approving each of `names`, each bound to the demo entry.
fn approved(names: &[&str]) -> Value {
    let entry = demo(&[]);
    let digest = plexus::config::sha256_hex(plexus::config::canonical_json(&entry).as_bytes());
    let records: serde_json::Map<String, Value> = names
        .iter()
        .map(|name| ((*name).to_owned(), json!({"sha256": digest, "entry": entry})))
        .collect();
    Value::Object(records)
}

/// `name`'s row of `plexus servers --json`, reduced to status, reason and error.
fn status(ws: &Workspace, name: &str) -> Value {
    let out = ws.run(&["--json", "servers"]);
    let rows = out.json();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap()
        .clone();
    json!({"status": row["status"], "reason": row["reason"], "error": row["error"]})
}

#[test]
fn a_project_server_is_pending_until_approved() {
    let ws = project_with(&["shared"]);
    assert_eq!(
        status(&ws, "shared"),
        json!({"status": "pending", "reason": "pending approval (a project server runs only once approved); approve it with: plexus approve shared", "error": null})
    );
    // Nothing was started: no "connecting" line; and since no server may run, exit 2.
    let out = ws.run(&["servers"]);
    assert_eq!(
        out.expect(
            2,
            "plexus: no server could be used: of 1 configured server, none may run (invalid, disabled, rejected or \
             waiting for approval)\n"
        ),
        format!(
            "NAME    SCOPE    KIND   STATUS   PROTOCOL  SERVER  TOOLS  SOURCE{pad}  ERROR\nshared  project  stdio  pending                           {source}  pending approval (a project server runs only once approved); approve it with: plexus approve shared\n",
            pad = " ".repeat(ws.shown(".mcp.json").len() - "SOURCE".len()),
            source = ws.shown(".mcp.json")
        )
    );

    let out = ws.run(&["approve", "shared"]);
    assert_eq!(
        out.ok(),
        format!(
            "approved project server \"shared\" (recorded in {})\n",
            ws.shown(ws.local_file())
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"approvedMcpjsonServers": approved(&["shared"])})
    );
    assert_eq!(
        status(&ws, "shared"),
        json!({"status": "connected", "reason": null, "error": null})
    );
}

#[test]
fn reject_keeps_a_project_server_from_running_until_approved_again() {
    let ws = project_with(&["shared"]);
    ws.run(&["approve", "shared"]).ok();
    let out = ws.run(&["reject", "shared"]);
    assert_eq!(
        out.ok(),
        format!(
            "rejected project server \"shared\" (recorded in {})\n",
            ws.shown(ws.local_file())
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"approvedMcpjsonServers": {}, "disabledMcpjsonServers": ["shared"]})
    );
    let reason = "rejected (disabledMcpjsonServers); approve it with: plexus approve shared";
    assert_eq!(
        status(&ws, "shared"),
        json!({"status": "disabled", "reason": reason, "error": null})
    );
    ws.run(&["tools", "shared"])
        .expect(2, &format!("plexus: server \"shared\" is not started: {reason}\n"));
    ws.run(&["call", "mcp__shared__echo", r#"{"text":"no"}"#])
        .expect(2, &format!("plexus: server \"shared\" is not started: {reason}\n"));

    ws.run(&["approve", "shared"]).ok();
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"approvedMcpjsonServers": approved(&["shared"]), "disabledMcpjsonServers": []})
    );
    assert_eq!(status(&ws, "shared")["status"], "connected");
}

#[test]
fn approve_all_approves_every_pending_server_but_not_the_rejected_ones() {
    let ws = project_with(&["a", "b", "c"]);
    ws.run(&["reject", "c"]).ok();
    let local = ws.shown(ws.local_file());
    let out = ws.run(&["approve", "--all"]);
    assert_eq!(
        out.ok(),
        format!(
            "approved project server \"a\" (recorded in {local})\napproved project server \"b\" (recorded in {local})\n"
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"disabledMcpjsonServers": ["c"], "approvedMcpjsonServers": approved(&["a", "b"])})
    );
    assert_eq!(
        ws.run(&["approve", "--all"]).ok(),
        "no project server is waiting for approval\n"
    );
    assert_eq!(status(&ws, "c")["status"], "disabled");
}

#[test]
fn enable_all_project_servers_in_the_user_settings_approves_them() {
    let ws = project_with(&["shared"]);
    ws.write_json("home/settings.json", &json!({"enableAllProjectMcpServers": true}));
    assert_eq!(status(&ws, "shared")["status"], "connected");
    // A rejection still wins.
    ws.write_json(ws.local_file(), &json!({"disabledMcpjsonServers": ["shared"]}));
    assert_eq!(status(&ws, "shared")["status"], "disabled");
}

#[test]
fn tools_lists_the_approved_servers_and_names_the_pending_ones() {
    let ws = project_with(&["pending1", "ready"]);
    ws.run(&["approve", "ready"]).ok();
    let out = ws.run(&["--json", "tools"]);
    out.expect(
        0,
        "plexus: server \"pending1\" is not started: pending approval (a project server runs only once approved); approve it with: plexus approve pending1\nconnecting 1 server…\n",
    );
    let tools = out.json();
    let tools = tools.as_array().unwrap();
    assert!(!tools.is_empty() && tools.iter().all(|tool| tool["server"] == "ready"));

    ws.run(&["call", "mcp__pending1__echo", r#"{"text":"x"}"#]).expect(
        2,
        "plexus: server \"pending1\" is not started: pending approval (a project server runs only once approved); approve it with: plexus approve pending1\n",
    );
}

#[test]
fn approve_and_reject_take_only_the_projects_servers() {
    let ws = project_with(&["shared"]);
    ws.write_servers("home/settings.json", &json!({"mine": {"command": "x"}}));
    let project = ws.shown(".mcp.json");
    ws.run(&["approve", "mine", "bad!", "shared", "mine"]).expect(
        2,
        &format!(
            "plexus: {project}: there is no server \"mine\"; only the project's servers need approval\nplexus: server \"bad!\": invalid server name: the character '!' is not allowed; use only A-Z, a-z, 0-9, \"_\" and \"-\"\n"
        ),
    );
    ws.run(&["reject", "nope"]).expect(
        2,
        &format!("plexus: {project}: there is no server \"nope\"; only the project's servers need approval\n"),
    );
    assert!(!ws.local_file().exists(), "nothing is recorded when a name is wrong");

    ws.run(&["approve"]).expect(
        2,
        "error: the following required arguments were not provided:\n  <NAMES>...\n\nUsage: plexus approve <NAMES>...\n\nFor more information, try '--help'.\n",
    );
    ws.run(&["approve", "--all", "shared"]).expect(
        2,
        "error: the argument '--all' cannot be used with '[NAMES]...'\n\nUsage: plexus approve --all [NAMES]...\n\nFor more information, try '--help'.\n",
    );

    // A project file that does not parse is named, with where.
    ws.write(".mcp.json", "{\"mcpServers\": {,}");
    ws.run(&["approve", "shared"]).expect(
        2,
        &format!("plexus: {project}:1:17: invalid JSON: key must be a string\n"),
    );
}

#[test]
fn approvals_are_kept_with_the_rest_of_the_local_settings() {
    let ws = project_with(&["shared"]);
    let original = "{\n  \"mcpServers\": {\"mine\": {\"command\": \"x\"}},\n  \"editor\": {\"tabs\": 2}\n}\n";
    ws.write(ws.local_file(), original);
    ws.run(&["approve", "shared"]).ok();
    let digest = approved(&["shared"])["shared"]["sha256"].as_str().unwrap().to_owned();
    assert_eq!(
        ws.read(ws.local_file()),
        format!(
            "{{\n  \"mcpServers\": {{\"mine\": {{\"command\": \"x\"}}}},\n  \"editor\": {{\"tabs\": 2}},\n  \"approvedMcpjsonServers\": {{\n    \"shared\": {{\n      \"sha256\": \"{digest}\",\n      \"entry\": {{\n        \"command\": {},\n        \"args\": [\n          \"demo-server\"\n        ]\n      }}\n    }}\n  }}\n}}\n",
            json!(support::PLEXUS)
        )
    );
}

#[test]
fn a_repository_that_ships_its_own_approval_never_gets_its_commands_run() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let ran = ws.join("ran");
    let touch = json!({"command": "sh", "args": ["-c", format!("touch {}", ran.display())]});
    ws.write_servers(".mcp.json", &json!({"evil": touch}));
    // Where older versions read the local settings: inside the repository.
    let shipped = ws.write_json(
        ".plexus/settings.local.json",
        &json!({"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["evil"], "mcpServers": {"sneaky": touch}}),
    );
    for command in [&["servers"][..], &["tools"], &["call", "mcp__evil__x"]] {
        let out = ws.run(command);
        assert!(
            out.stderr.contains(&format!(
                "plexus: {}: ignored: it is inside the project, and nothing a project ships may approve or add servers",
                shipped.display()
            )),
            "{command:?}: {}",
            out.stderr
        );
        assert!(
            !out.stdout.contains("sneaky") && !out.stderr.contains("sneaky"),
            "{command:?}: {out:?}"
        );
    }
    assert!(!ran.exists(), "a command of the repository ran without approval");
    assert_eq!(status(&ws, "evil")["status"], "pending");
}

#[test]
fn a_changed_project_entry_waits_again_and_says_what_changed() {
    let ws = Workspace::new();
    let mut entry = demo(&[]);
    entry["env"] = json!({"TOKEN": "${DEMO_TOKEN}"});
    ws.write_servers(".mcp.json", &json!({"shared": entry}));
    ws.run(&["approve", "shared"]).ok();
    // The variable's value is not what was approved: the file is.
    let out = ws.run_with_env(&["--json", "servers"], &[("DEMO_TOKEN", "other")]);
    assert_eq!(out.json()[0]["status"], "connected");

    // The repository changes the entry: an argument, the token, and a field whose name and value
    // try to drive the terminal.
    let mut changed = demo(&["\u{1b}[2Jwiped"]);
    changed["env"] = json!({"TOKEN": "literal-secret"});
    changed["note\u{7}"] = json!(1);
    ws.write_servers(".mcp.json", &json!({"shared": changed}));
    let project = ws.shown(".mcp.json");
    let reason = "pending approval: its entry changed since it was approved (args, env.TOKEN, note\u{7}); see the \
                  changes with: plexus get shared; approve it with: plexus approve shared";
    let changes = [
        r#"field "args": was ["demo-server"], now ["demo-server","\u001b[2Jwiped"]"#,
        r#"field "env.TOKEN": changed (the value is not shown)"#,
        r#"field "note\u0007": added, 1"#,
    ];
    let rows = ws.run(&["--json", "servers"]);
    let row = &rows.json()[0];
    assert_eq!(
        (&row["status"], &row["reason"], &row["changes"]),
        (&json!("pending"), &json!(reason), &json!(changes))
    );

    let out = ws.run(&["servers"]);
    let table = out.expect(
        2,
        "plexus: no server could be used: of 1 configured server, none may run (invalid, disabled, rejected or \
         waiting for approval)\n",
    );
    let escaped_reason = reason.replace('\u{7}', "\\x07");
    assert!(!table.contains('\u{1b}') && !table.contains('\u{7}'), "{table:?}");
    assert!(table.contains(&escaped_reason), "{table}");
    let unknown = format!(
        r#"warning: {project}: server "shared": field "note\u0007": unknown field for a "stdio" server; kept as written but not used"#
    );
    assert!(
        table.ends_with(&format!(
            "\n\nchanged: server \"shared\": {}\nchanged: server \"shared\": {}\nchanged: server \"shared\": {}\n{unknown}\n",
            changes[0], changes[1], changes[2]
        )),
        "{table}"
    );
    assert!(!table.contains("literal-secret"));

    let out = ws.run(&["get", "shared"]);
    let described = out.ok();
    assert_eq!(
        described.split("config:\n").next().unwrap(),
        format!(
            "name:    shared\nscope:   project\nsource:  {project}\nkind:    stdio\nstatus:  pending\nreason:  {escaped_reason}\n\
             changed: {}\nchanged: {}\nchanged: {}\n{unknown}\n",
            changes[0], changes[1], changes[2]
        )
    );
    assert!(
        !described.contains('\u{1b}') && !described.contains('\u{7}'),
        "{described:?}"
    );

    // Approved again: bound to the new entry.
    ws.run(&["approve", "shared"]).ok();
    let rows = ws.run(&["--json", "servers"]);
    assert_eq!(rows.json()[0]["changes"], json!([]));
}

#[test]
fn a_project_entry_not_approved_does_not_hide_the_users_server() {
    let ws = Workspace::new();
    ws.write_servers("home/settings.json", &json!({"shared": demo(&[])}));
    ws.write_servers(
        ".mcp.json",
        &json!({"shared": {"command": "sh", "args": ["-c", "echo theirs"]}}),
    );
    let project = ws.shown(".mcp.json");
    let user = ws.shown("home/settings.json");
    let warning = |why: &str| {
        format!(
            "{project}: server \"shared\": this project server is {why}, so it does not replace the user server of \
             the same name: the user entry ({user}) is the one that runs"
        )
    };
    let pending = warning("pending approval (a project server runs only once approved)");
    let out = ws.run(&["--json", "servers"]);
    let row = &out.json()[0];
    assert_eq!(
        (&row["scope"], &row["status"], &row["warnings"]),
        (&json!("user"), &json!("connected"), &json!([pending]))
    );
    let described = |ws: &Workspace| {
        let out = ws.run(&["get", "shared"]);
        out.ok().split("config:\n").next().unwrap().to_owned()
    };
    assert_eq!(
        described(&ws),
        format!(
            "name:    shared\nscope:   user\nsource:  {user}\nkind:    stdio\nstatus:  active\nwarning: {pending}\n"
        )
    );
    // A rejection leaves the user's server running too.
    ws.run(&["reject", "shared"]).ok();
    assert_eq!(
        described(&ws),
        format!(
            "name:    shared\nscope:   user\nsource:  {user}\nkind:    stdio\nstatus:  active\nwarning: {}\n",
            warning("rejected (disabledMcpjsonServers)")
        )
    );
    // Approved, the project's entry takes the name, as the precedence says.
    ws.run(&["approve", "shared"]).ok();
    assert_eq!(
        described(&ws),
        format!(
            "name:      shared\nscope:     project\nsource:    {project}\nkind:      stdio\nstatus:    active\noverrides: {user} (user)\n"
        )
    );
}
