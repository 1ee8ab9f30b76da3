//! `plexus add`, `add-json`, `remove`: real files in a temporary workspace, the exact
//! confirmation and error lines, and the files as written.

mod support;

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use support::{PLEXUS, Workspace, demo_written};

#[test]
fn add_writes_a_stdio_server_to_the_local_settings_and_it_runs() {
    let ws = Workspace::new();
    let out = ws.run(&[
        "add",
        "-e",
        "GREETING=hi",
        "-e",
        "EMPTY=",
        "demo2",
        "--",
        PLEXUS,
        "demo-server",
    ]);
    assert_eq!(
        out.ok(),
        format!(
            "added stdio server \"demo2\" to {} (local scope)\n",
            ws.shown(ws.local_file())
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"mcpServers": {"demo2": {"type": "stdio", "command": PLEXUS, "args": ["demo-server"], "env": {"GREETING": "hi", "EMPTY": ""}}}})
    );
    // The local settings are private: a new file is readable by its owner only.
    let mode = std::fs::metadata(ws.local_file()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let out = ws.run(&["call", "mcp__demo2__echo", r#"{"text":"local servers run"}"#]);
    assert_eq!(out.expect(0, "connecting 1 server…\n"), "local servers run\n");
}

#[test]
fn add_infers_the_transport_from_the_url_and_writes_headers() {
    let ws = Workspace::new();
    let out = ws.run(&[
        "add",
        "--scope",
        "user",
        "-H",
        "Authorization: Bearer ${TOKEN}",
        "-H",
        "X-Team:  core ",
        "docs",
        "https://docs.example.com/mcp",
    ]);
    // The unset variable is a warning: the entry is written as typed, to be expanded when read.
    assert_eq!(
        out.expect(
            0,
            &format!(
                "plexus: {}: server \"docs\": not set and without a default: ${{TOKEN}} in headers.Authorization; kept as written\n",
                ws.shown("home/settings.json")
            )
        ),
        format!(
            "added http server \"docs\" to {} (user scope)\n",
            ws.shown("home/settings.json")
        )
    );
    let out = ws.run(&["add", "-s", "user", "live", "wss://live.example.com/socket"]);
    assert_eq!(
        out.ok(),
        format!(
            "added ws server \"live\" to {} (user scope)\n",
            ws.shown("home/settings.json")
        )
    );
    let out = ws.run(&["add", "-s", "user", "-t", "sse", "legacy", "http://127.0.0.1:9/sse"]);
    assert_eq!(
        out.ok(),
        format!(
            "added sse server \"legacy\" to {} (user scope)\n",
            ws.shown("home/settings.json")
        )
    );
    assert_eq!(
        ws.read_json(ws.user_file()),
        json!({"mcpServers": {
            "docs": {"type": "http", "url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Team": "core"}},
            "live": {"type": "ws", "url": "wss://live.example.com/socket"},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
        }})
    );
}

#[test]
fn add_to_the_project_scope_creates_mcp_json_and_says_it_needs_approval() {
    let ws = Workspace::new();
    let out = ws.run(&["add", "--scope", "project", "shared", "--", PLEXUS, "demo-server"]);
    assert_eq!(
        out.ok(),
        format!(
            "added stdio server \"shared\" to {} (project scope)\nproject servers run once approved: plexus approve shared\n",
            ws.shown(".mcp.json")
        )
    );
    assert_eq!(
        ws.read_json(".mcp.json"),
        json!({"mcpServers": {"shared": demo_written()}})
    );
    let mode = std::fs::metadata(ws.project_file()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644, "a project file is meant to be shared");
}

#[test]
fn adding_below_a_higher_scope_says_which_entry_is_used() {
    let ws = Workspace::new();
    ws.write_servers(ws.local_file(), &json!({"s": {"command": "mine"}}));
    let out = ws.run(&["add", "--scope", "user", "s", "--", "theirs"]);
    assert_eq!(
        out.ok(),
        format!(
            "added stdio server \"s\" to {} (user scope)\nnote: the local scope also defines \"s\" ({}), and its entry is the one used\n",
            ws.shown("home/settings.json"),
            ws.shown(ws.local_file())
        )
    );
}

#[test]
fn bad_add_arguments_exit_2_with_the_reason_and_write_nothing() {
    let ws = Workspace::new();
    let cases: [(&[&str], &str); 14] = [
        (
            &["add", "x"],
            "plexus: error: missing the server's URL, or -- COMMAND [ARGS...]\n",
        ),
        (
            &["add", "bad name", "--", "x"],
            "plexus: error: server \"bad name\": invalid server name: the character ' ' is not allowed; use only A-Z, a-z, 0-9, \"_\" and \"-\"\n",
        ),
        (
            &["add", "-e", "NOVALUE", "x", "--", "cmd"],
            "plexus: error: invalid -e \"NOVALUE\"\n  caused by: expected KEY=VALUE\n",
        ),
        (
            &["add", "-H", "bad", "x", "https://e.com"],
            "plexus: error: invalid -H \"bad\"\n  caused by: expected 'Name: value'\n",
        ),
        (
            &["add", "-H", "Bad Name: v", "x", "https://e.com"],
            "plexus: error: invalid -H \"Bad Name: v\"\n  caused by: a header name cannot contain ' '\n",
        ),
        (
            &["add", "-e", "A=b", "x", "https://e.com"],
            "plexus: error: -e sets environment variables of a stdio server; an http server takes headers (-H)\n",
        ),
        (
            &["add", "-H", "A: b", "x", "--", "cmd"],
            "plexus: error: -H sets headers of a remote server; a stdio server takes environment variables (-e)\n",
        ),
        (
            &["add", "-t", "http", "x", "https://a.example", "https://b.example"],
            "plexus: error: an http server takes one URL (http:// or https://), not a command: got \"https://a.example https://b.example\"\n",
        ),
        (
            &["add", "-t", "http", "x", "notaurl"],
            "plexus: error: an http server takes one URL (http:// or https://), not a command: got \"notaurl\"\n",
        ),
        (
            &["add", "-t", "http", "x", "--", "npx", "-y", "server"],
            "plexus: error: an http server takes one URL (http:// or https://), not a command: got \"npx -y server\"\n",
        ),
        (
            &["add", "x", "ftp://files.example/mcp"],
            "plexus: error: \"ftp://files.example/mcp\" is not a URL plexus can connect to (it takes http://, https://, ws:// or wss://); to run a command with it as its only word, say --transport stdio\n",
        ),
        (
            &["add", "-t", "http", "x", "http://"],
            "plexus: error: the entry is invalid: field \"url\": not a valid URL: empty host\n",
        ),
        (
            &["add", "-t", "tcp", "x", "notaurl"],
            "error: invalid value 'tcp' for '--transport <stdio|sse|http|ws>': unknown transport \"tcp\"; expected stdio, sse, http or ws\n\nFor more information, try '--help'.\n",
        ),
        (
            &["add", "--scope", "managed", "x", "--", "c"],
            "error: invalid value 'managed' for '--scope <local|project|user>': unknown scope \"managed\"; expected one of \"local\", \"project\", \"user\"\n\nFor more information, try '--help'.\n",
        ),
    ];
    for (args, message) in cases {
        let out = ws.run(args);
        assert_eq!(out.expect(2, message), "", "{args:?}");
    }
    assert!(!ws.local_file().exists() && !ws.join(".plexus").exists());
}

#[test]
fn a_name_already_in_the_file_is_not_replaced() {
    let ws = Workspace::new();
    ws.run(&["add", "x", "--", "first"]).ok();
    let before = ws.read(ws.local_file());
    let out = ws.run(&["add", "x", "--", "second"]);
    out.expect(
        2,
        &format!(
            "plexus: error: {}: server \"x\" already exists; remove it first or choose another name\n",
            ws.shown(ws.local_file())
        ),
    );
    assert_eq!(ws.read(ws.local_file()), before);
}

#[test]
fn a_file_that_cannot_be_edited_is_a_config_error_and_stays_as_it_was() {
    let ws = Workspace::new();
    ws.write(ws.local_file(), "{\n  \"mcpServers\": {,\n}");
    let out = ws.run(&["add", "x", "--", "cmd"]);
    out.expect(
        2,
        &format!(
            "plexus: error: nothing was written\n  caused by: {}:2:18: invalid JSON\n  caused by: key must be a string\n",
            ws.shown(ws.local_file())
        ),
    );
    assert_eq!(ws.read(ws.local_file()), "{\n  \"mcpServers\": {,\n}");

    std::fs::create_dir_all(ws.join("home/settings.json")).unwrap();
    let out = ws.run(&["add-json", "--scope", "user", "y", r#"{"command": "c"}"#]);
    out.expect(
        2,
        &format!(
            "plexus: error: nothing was written\n  caused by: cannot read {}: it is a directory, not a regular file\n",
            ws.shown("home/settings.json")
        ),
    );
}

#[test]
fn writing_keeps_the_rest_of_the_file_byte_for_byte() {
    let ws = Workspace::new();
    let original = "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"a\": { \"command\": \"x\", \"future\": [1, 2] }\n    },\n    \"zzz\": {\"nested\": true}\n}\n";
    ws.write("home/settings.json", original);
    let out = ws.run(&["add", "--scope", "user", "b", "--", "y", "--flag"]);
    out.ok();
    assert_eq!(
        ws.read(ws.user_file()),
        "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"a\": { \"command\": \"x\", \"future\": [1, 2] },\n        \"b\": {\n            \"type\": \"stdio\",\n            \"command\": \"y\",\n            \"args\": [\n                \"--flag\"\n            ]\n        }\n    },\n    \"zzz\": {\"nested\": true}\n}\n"
    );
    let out = ws.run(&["remove", "b"]);
    assert_eq!(
        out.ok(),
        format!(
            "removed server \"b\" from {} (user scope)\n",
            ws.shown("home/settings.json")
        )
    );
    assert_eq!(ws.read(ws.user_file()), original);
}

#[test]
fn add_json_writes_the_entry_as_typed_and_get_shows_it_expanded() {
    let ws = Workspace::new();
    let entry = r#"{"type": "http", "url": "https://${DOCS_HOST:-docs.example.com}/mcp", "custom": 1}"#;
    let out = ws.run(&["add-json", "--scope", "project", "docs", entry]);
    assert_eq!(
        out.expect(
            0,
            &format!(
                "plexus: {}: server \"docs\": field \"custom\": unknown field for a \"http\" server; kept as written but not used\n",
                ws.shown(".mcp.json")
            )
        ),
        format!(
            "added http server \"docs\" to {} (project scope)\nproject servers run once approved: plexus approve docs\n",
            ws.shown(".mcp.json")
        )
    );
    assert_eq!(
        ws.read_json(".mcp.json"),
        json!({"mcpServers": {"docs": {"type": "http", "url": "https://${DOCS_HOST:-docs.example.com}/mcp", "custom": 1}}})
    );
    let out = ws.run_with_env(&["--json", "get", "docs"], &[("DOCS_HOST", "mirror.example.org")]);
    assert_eq!(out.json()["config"]["url"], "https://mirror.example.org/mcp");

    // From stdin.
    let out = ws.run_with_stdin(
        &["add-json", "piped", "-"],
        r#"{"command": "npx", "args": ["-y", "srv"]}"#,
    );
    assert_eq!(
        out.ok(),
        format!(
            "added stdio server \"piped\" to {} (local scope)\n",
            ws.shown(ws.local_file())
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"mcpServers": {"piped": {"command": "npx", "args": ["-y", "srv"]}}})
    );
}

#[test]
fn add_json_errors_name_the_line_column_and_field() {
    let ws = Workspace::new();
    let cases: [(&[&str], &str); 4] = [
        (
            &["add-json", "x", r#"{"type":"http","#],
            "plexus: error: invalid JSON at line 1, column 15\n  caused by: EOF while parsing a value\n",
        ),
        (
            &["add-json", "x", r#"{"command": 3}"#],
            "plexus: error: the entry is invalid: field \"command\": expected a string, found 3\n",
        ),
        (
            &["add-json", "x", r#"{"type": "http", "url": "ftp://example.com/"}"#],
            "plexus: error: the entry is invalid: field \"url\": expected an http or https URL, found a \"ftp\" URL\n",
        ),
        (
            &["add-json", "x!", r#"{"command": "c"}"#],
            "plexus: error: server \"x!\": invalid server name: the character '!' is not allowed; use only A-Z, a-z, 0-9, \"_\" and \"-\"\n",
        ),
    ];
    for (args, message) in cases {
        assert_eq!(ws.run(args).expect(2, message), "", "{args:?}");
    }
    assert!(!ws.join(".plexus").exists());
}

#[test]
fn remove_finds_the_scope_or_asks_for_one() {
    let ws = Workspace::new();
    ws.write_servers(
        "home/settings.json",
        &json!({"s": {"command": "u"}, "only-user": {"command": "u"}}),
    );
    ws.write_servers(ws.local_file(), &json!({"s": {"command": "l"}}));
    let local = ws.shown(ws.local_file());
    let user = ws.shown("home/settings.json");

    let out = ws.run(&["remove", "s"]);
    out.expect(
        2,
        &format!(
            "plexus: error: server \"s\" is defined in several scopes: local ({local}), user ({user}); choose one with --scope\n"
        ),
    );
    let out = ws.run(&["remove", "s", "--scope", "user"]);
    assert_eq!(
        out.ok(),
        format!("removed server \"s\" from {user} (user scope)\nnote: the local scope still defines \"s\" ({local})\n")
    );
    let out = ws.run(&["remove", "s"]);
    assert_eq!(out.ok(), format!("removed server \"s\" from {local} (local scope)\n"));
    assert_eq!(ws.read_json(ws.local_file()), json!({"mcpServers": {}}));
    assert_eq!(
        ws.read_json(ws.user_file()),
        json!({"mcpServers": {"only-user": {"command": "u"}}})
    );

    ws.run(&["remove", "s"]).expect(
        2,
        "plexus: error: there is no server \"s\" in the local, project or user scope\n",
    );
    ws.run(&["remove", "only-user", "--scope", "project"]).expect(
        2,
        &format!(
            "plexus: error: {}: there is no server \"only-user\"\n",
            ws.shown(".mcp.json")
        ),
    );
}

#[test]
fn remove_takes_out_an_entry_whose_name_is_invalid() {
    let ws = Workspace::new();
    ws.write_servers(
        ".mcp.json",
        &json!({"bad name!": {"command": "x"}, "good": {"command": "y"}}),
    );
    let out = ws.run(&["remove", "bad name!"]);
    assert_eq!(
        out.ok(),
        format!(
            "removed server \"bad name!\" from {} (project scope)\n",
            ws.shown(".mcp.json")
        )
    );
    assert_eq!(
        ws.read_json(".mcp.json"),
        json!({"mcpServers": {"good": {"command": "y"}}})
    );
}
