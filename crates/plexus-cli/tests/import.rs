//! `plexus import --from SOURCE [FILE] [--scope S]`: other clients' real files in a temporary
//! workspace, every note printed in full, the files as written, and VS Code inputs asked for on a
//! real pseudo-terminal.

mod support;

use serde_json::json;
use support::Workspace;

/// A VS Code `.vscode/mcp.json` with comments, a trailing comma, two inputs and two servers.
const VSCODE: &str = r#"{
  // VS Code allows comments and trailing commas.
  "inputs": [
    {"type": "promptString", "id": "api-key", "description": "API key", "password": true},
    {"type": "promptString", "id": "region", "description": "Region", "default": "eu"}
  ],
  "servers": {
    "github": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${input:api-key}"}},
    "local": {"command": "node", "args": ["${workspaceFolder}/server.js", "--region", "${input:region}"], "env": {"PORT": 8080}, "envFile": "${workspaceFolder}/.env"},
  }
}"#;

/// The notes of importing [`VSCODE`] into the workspace `root`.
fn vscode_notes(root: &str) -> String {
    format!(
        r#"changed: server "github": field "headers.Authorization": replaced ${{input:api-key}} with ${{API_KEY}}
warning: server "github": not set and without a default: ${{API_KEY}} in headers.Authorization; kept as written
skipped: server "local": field "envFile": plexus does not read env files; put the variables in "env"
changed: server "local": field "env.PORT": the number 8080 is now the string "8080"
changed: server "local": field "args[0]": replaced ${{workspaceFolder}} with "{root}"
changed: server "local": field "args[2]": replaced ${{input:region}} with ${{REGION:-eu}}
warning: input "api-key" (API key) is now the variable ${{API_KEY}}: set API_KEY in the environment, or give its value when asked
warning: input "region" (Region) is now the variable ${{REGION}}: set REGION in the environment, or give its value when asked
"#
    )
}

#[test]
fn claude_desktop_is_imported_from_its_usual_place() {
    let ws = Workspace::new();
    ws.write_json(
        "user/.config/Claude/claude_desktop_config.json",
        &json!({
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u"]},
                "my server": {"command": "uvx", "args": ["mcp-server-git"]},
                "broken": {"command": "node", "args": ["index.js", 8080]}
            }
        }),
    );
    let local = ws.shown(ws.local_file());
    let out = ws.run(&["import", "--from", "claude-desktop"]);
    assert_eq!(
        out.ok(),
        format!(
            r#"changed: server "my server": renamed to "my_server" (server names use only A-Z, a-z, 0-9, "_" and "-", at most 64)
skipped: server "broken": the entry is invalid: field "args[1]": expected a string, found 8080
added stdio server "filesystem" to {local} (local scope)
added stdio server "my_server" to {local} (local scope)
"#
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u"]},
            "my_server": {"command": "uvx", "args": ["mcp-server-git"]}
        }})
    );
}

#[test]
fn vscode_inputs_become_variables_to_set_and_existing_servers_are_kept() {
    let ws = Workspace::new();
    ws.write(".vscode/mcp.json", VSCODE);
    let root = ws.path().display().to_string();
    let local = ws.shown(ws.local_file());
    let out = ws.run(&["import", "--from", "vscode"]);
    assert_eq!(
        out.ok(),
        format!(
            "{}added http server \"github\" to {local} (local scope)\nadded stdio server \"local\" to {local} (local scope)\n",
            vscode_notes(&root)
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file()),
        json!({"mcpServers": {
            "github": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}},
            "local": {"command": "node", "args": [format!("{root}/server.js"), "--region", "${REGION:-eu}"], "env": {"PORT": "8080"}}
        }})
    );

    // Again: the servers are there already and are kept, unless --overwrite.
    ws.write_servers(
        ws.local_file(),
        &json!({"github": {"command": "mine"}, "local": {"command": "mine"}}),
    );
    let out = ws.run(&["import", "--from", "vscode"]);
    assert_eq!(
        out.ok(),
        format!(
            "{}kept server \"github\": {local} already defines it (use --overwrite to replace it)\nkept server \"local\": {local} already defines it (use --overwrite to replace it)\n",
            vscode_notes(&root)
        )
    );
    assert_eq!(
        ws.read_json(ws.local_file())["mcpServers"]["github"],
        json!({"command": "mine"})
    );
    let out = ws.run(&["import", "--from", "vscode", ".vscode/mcp.json", "--overwrite"]);
    assert!(
        out.ok().ends_with(&format!(
            "replaced http server \"github\" in {local} (local scope)\nreplaced stdio server \"local\" in {local} (local scope)\n"
        )),
        "{}",
        out.stdout
    );
    assert_eq!(ws.read_json(ws.local_file())["mcpServers"]["github"]["type"], "http");
}

#[test]
fn import_json_is_the_documented_shape() {
    let ws = Workspace::new();
    ws.write(".vscode/mcp.json", VSCODE);
    let out = ws.run(&["--json", "import", "--from", "vscode", "--scope", "project"]);
    let report = out.json();
    assert_eq!(out.ok().lines().next(), Some("{"));
    let mut keys: Vec<&str> = report.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "added",
            "file",
            "from",
            "inputs",
            "keptExisting",
            "notes",
            "replaced",
            "scope",
            "target"
        ]
    );
    assert_eq!(
        (
            &report["from"],
            &report["scope"],
            &report["added"],
            &report["replaced"],
            &report["keptExisting"]
        ),
        (
            &json!("vscode"),
            &json!("project"),
            &json!(["github", "local"]),
            &json!([]),
            &json!([])
        )
    );
    assert_eq!(
        (&report["file"], &report["target"]),
        (&json!(ws.shown(".vscode/mcp.json")), &json!(ws.shown(".mcp.json")))
    );
    assert_eq!(
        report["notes"][0],
        json!({"kind": "changed", "server": "github", "field": "headers.Authorization", "message": "replaced ${input:api-key} with ${API_KEY}"})
    );
    assert_eq!(report["notes"].as_array().unwrap().len(), 8);
    assert_eq!(
        report["inputs"],
        json!([
            {"id": "api-key", "variable": "API_KEY", "description": "API key", "password": true, "filled": false},
            {"id": "region", "variable": "REGION", "description": "Region", "password": false, "filled": false}
        ])
    );
}

#[test]
fn vscode_inputs_are_asked_for_on_a_terminal() {
    let ws = Workspace::new();
    ws.write(".vscode/mcp.json", VSCODE);
    // A secret for the first input; an empty answer keeps the second one's variable.
    let out = ws.run_on_terminal(&["import", "--from", "vscode"], b"s3cret\n\n");
    let local = ws.shown(ws.local_file());
    assert_eq!(
        out.expect(
            0,
            // The hidden answer's Enter is not echoed, so plexus ends that line itself.
            "value for input \"api-key\" (API key), written into the entries as plain text; empty keeps ${API_KEY}: \nvalue for input \"region\" (Region), written into the entries as plain text; empty keeps ${REGION}: "
        ),
        format!(
            "{}filled: input \"api-key\": the value given is written in place of ${{API_KEY}}\nadded http server \"github\" to {local} (local scope)\nadded stdio server \"local\" to {local} (local scope)\n",
            vscode_notes(&ws.path().display().to_string())
        )
    );
    let written = ws.read_json(ws.local_file());
    assert_eq!(
        written["mcpServers"]["github"]["headers"],
        json!({"Authorization": "Bearer s3cret"})
    );
    assert_eq!(written["mcpServers"]["local"]["args"][2], "${REGION:-eu}");
}

#[test]
fn cursor_and_claude_code_files_are_converted() {
    let ws = Workspace::new();
    let cursor = ws.write_json(
        "elsewhere/cursor.json",
        &json!({"mcpServers": {
            "web": {"url": "https://w.example.com/mcp", "headers": {"X-Key": "${env:WEB_KEY}"}},
            "tool": {"command": "python", "args": ["${workspaceFolder}/t.py"], "envFile": ".env"}
        }}),
    );
    let user = ws.shown("home/settings.json");
    let out = ws.run(&[
        "import",
        "--from",
        "cursor",
        cursor.to_str().unwrap(),
        "--scope",
        "user",
    ]);
    assert_eq!(
        out.ok(),
        format!(
            r#"changed: server "web": field "type": added "http" (Streamable HTTP): the entry has a URL and no type; use "sse" for a legacy HTTP+SSE server
changed: server "web": field "headers.X-Key": replaced ${{env:WEB_KEY}} with ${{WEB_KEY}}
warning: server "web": not set and without a default: ${{WEB_KEY}} in headers.X-Key; kept as written
skipped: server "tool": field "envFile": plexus does not read env files; put the variables in "env"
changed: server "tool": field "args[0]": replaced ${{workspaceFolder}} with "{root}"
added stdio server "tool" to {user} (user scope)
added http server "web" to {user} (user scope)
"#,
            root = ws.path().display()
        )
    );

    // Claude Code: the user's servers and this project's, the project's winning.
    ws.write_json(
        "user/.claude.json",
        &json!({
            "numStartups": 3,
            "mcpServers": {"shared": {"type": "stdio", "command": "npx", "args": ["-y", "g"]}},
            "projects": {
                ws.path().display().to_string(): {"mcpServers": {"proj": {"type": "sse", "url": "https://x.example.com/sse"}, "shared": {"command": "uvx", "args": ["g2"]}}},
                "/some/other/project": {"mcpServers": {"not-this": {"command": "x"}}}
            }
        }),
    );
    let project = ws.shown(".mcp.json");
    let out = ws.run(&["import", "--from", "claude-code", "--scope", "project"]);
    assert_eq!(
        out.ok(),
        format!(
            r#"warning: server "shared": also defined in mcpServers; the entry from projects["{root}"].mcpServers is used
added sse server "proj" to {project} (project scope)
added stdio server "shared" to {project} (project scope)
project servers run once approved: plexus approve proj shared
"#,
            root = ws.path().display()
        )
    );
    assert_eq!(
        ws.read_json(".mcp.json"),
        json!({"mcpServers": {"proj": {"type": "sse", "url": "https://x.example.com/sse"}, "shared": {"command": "uvx", "args": ["g2"]}}})
    );
}

#[test]
fn import_errors_exit_2_with_the_reason() {
    let ws = Workspace::new();
    ws.run(&["import", "--from", "cursor"]).expect(
        2,
        &format!(
            "plexus: error: no cursor config found; looked at {}, {}; name the file to import\n",
            ws.shown(".cursor/mcp.json"),
            ws.shown("user/.cursor/mcp.json")
        ),
    );
    ws.write("x.json", "{\"mcpServers\": [1");
    ws.run(&["import", "--from", "claude-desktop", "x.json"]).expect(
        2,
        "plexus: error: x.json:1:17: invalid JSON\n  caused by: EOF while parsing a list\n",
    );
    ws.write("y.json", "{\"a\": 1}");
    ws.run(&["import", "--from", "claude-desktop", "y.json"]).expect(
        2,
        "plexus: error: y.json\n  caused by: no \"mcpServers\" object; is this Claude Desktop's claude_desktop_config.json?\n",
    );
    ws.run(&["import", "--from", "zed"]).expect(
        2,
        "error: invalid value 'zed' for '--from <claude-desktop|vscode|cursor|claude-code>': unknown import source \"zed\"; expected one of \"claude-desktop\", \"vscode\", \"cursor\", \"claude-code\"\n\nFor more information, try '--help'.\n",
    );

    // The target file cannot be edited: nothing is written.
    ws.write_servers("z.json", &json!({"s": {"command": "x"}}));
    ws.write(ws.local_file(), "[");
    ws.run(&["import", "--from", "claude-desktop", "z.json"]).expect(
        2,
        &format!(
            "plexus: error: nothing was written\n  caused by: {}:1:1: invalid JSON\n  caused by: EOF while parsing a list\n",
            ws.shown(ws.local_file())
        ),
    );
    assert_eq!(ws.read(ws.local_file()), "[");

    // Without a home, the default files cannot be found.
    let output = ws
        .command(ws.path(), &["import", "--from", "cursor"])
        .env_remove("HOME")
        .output()
        .unwrap();
    assert_eq!(
        (output.status.code(), String::from_utf8(output.stderr).unwrap()),
        (
            Some(2),
            "plexus: error: cannot find your home directory (for the clients' default files): set HOME\n".to_owned()
        )
    );
}
