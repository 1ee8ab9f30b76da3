//! Importing from Claude Desktop, VS Code, Cursor and Claude Code files: the converted entries,
//! every note in full, and writing the result.

mod common;

use std::path::{Path, PathBuf};

use common::Workspace;
use plexus_config::{
    Environment, Import, ImportContext, ImportSource, Scope, ServerName, SettingsEdit, import_servers,
};
use serde_json::{Value, json};

/// A user home and a project in one workspace; the plexus home is separate.
fn context(ws: &Workspace) -> ImportContext {
    ImportContext {
        user_home: ws.root.path().join("user"),
        project_dir: ws.project.clone(),
        env: Environment::empty(),
    }
}

fn notes(import: &Import) -> Vec<String> {
    import.notes.iter().map(ToString::to_string).collect()
}

fn entries(import: &Import) -> Vec<(String, Value)> {
    import
        .servers
        .iter()
        .map(|server| (server.name.to_string(), server.entry.clone()))
        .collect()
}

fn pairs(expected: &Value) -> Vec<(String, Value)> {
    expected.as_object().unwrap().clone().into_iter().collect()
}

#[test]
fn claude_desktop_from_its_default_place() {
    let ws = Workspace::new();
    let context = context(&ws);
    let file = context.user_home.join(".config/Claude/claude_desktop_config.json");
    ws.write_json(
        &file,
        &json!({
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]},
                "my server": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_DIR": "/repo"}},
                "broken": {"command": "node", "args": ["index.js", 8080]},
                "odd": "not an object"
            }
        }),
    );
    let imported = import_servers(ImportSource::ClaudeDesktop, None, &context).unwrap();
    assert_eq!(imported.file, file);
    assert_eq!(
        entries(&imported),
        pairs(&json!({
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]},
            "my_server": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_DIR": "/repo"}}
        }))
    );
    assert_eq!(
        notes(&imported),
        [
            r#"changed: server "my server": renamed to "my_server" (server names use only A-Z, a-z, 0-9, "_" and "-", at most 64)"#,
            r#"skipped: server "broken": the entry is invalid: field "args[1]": expected a string, found 8080"#,
            r#"skipped: server "odd": expected an object with the server's settings, found a string"#,
        ]
    );
    assert!(imported.inputs.is_empty());

    // Written to the local scope; a second import keeps what is there.
    let sources = ws.sources();
    let mut edit = sources.edit(Scope::Local).unwrap();
    let outcome = imported.write_to(&mut edit, false).unwrap();
    assert_eq!(outcome.added, [name("filesystem"), name("my_server")]);
    assert!(edit.commit().unwrap());
    let merged = sources.load();
    assert_eq!(merged.active().count(), 2);
    assert_eq!(merged.server("my_server").unwrap().scope, Scope::Local);

    let mut edit = sources.edit(Scope::Local).unwrap();
    let outcome = imported.write_to(&mut edit, false).unwrap();
    assert!(outcome.added.is_empty());
    assert_eq!(outcome.kept_existing, [name("filesystem"), name("my_server")]);
    assert!(!edit.commit().unwrap());
    let mut edit = sources.edit(Scope::Local).unwrap();
    let outcome = imported.write_to(&mut edit, true).unwrap();
    assert_eq!(outcome.replaced, [name("filesystem"), name("my_server")]);
}

fn name(text: &str) -> ServerName {
    ServerName::new(text).unwrap()
}

#[test]
fn a_missing_source_file_lists_the_places_looked_at() {
    let ws = Workspace::new();
    let mut context = context(&ws);
    context.env = [("APPDATA", "/appdata")].into_iter().collect();
    let home = context.user_home.display().to_string();
    assert_eq!(
        import_servers(ImportSource::ClaudeDesktop, None, &context)
            .unwrap_err()
            .to_string(),
        format!(
            "no claude-desktop config found; looked at {home}/Library/Application Support/Claude/claude_desktop_config.json, {home}/.config/Claude/claude_desktop_config.json, /appdata/Claude/claude_desktop_config.json; name the file to import"
        )
    );
    assert_eq!(
        "zed".parse::<ImportSource>().unwrap_err().to_string(),
        r#"unknown import source "zed"; expected one of "claude-desktop", "vscode", "cursor", "claude-code""#
    );
    for source in ImportSource::ALL {
        assert_eq!(source.as_str().parse::<ImportSource>().unwrap(), source);
    }
}

/// A `.vscode/mcp.json` with comments, trailing commas, inputs and editor variables.
const VSCODE_MCP_JSON: &str = r#"{
  // Inputs are asked for when a server starts.
  "inputs": [
    {"type": "promptString", "id": "api-key", "description": "Perplexity API key", "password": true},
    {"type": "pickString", "id": "region", "options": ["eu", "us"], "default": "eu"},
    {"type": "command", "id": "picked", "command": "ext.pick"},
    {"description": "no id"}
  ],
  "servers": {
    "perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask", "--region=${input:region}"],
      "env": {"PERPLEXITY_API_KEY": "${input:api-key}", "PORT": 8080, "UNSET": null},
      "envFile": "${workspaceFolder}/.env",
      "dev": {"watch": "src/**/*.ts"},
    },
    /* a remote one */
    "github": {
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": {"Authorization": "Bearer ${input:token}", "X-Root": "${workspaceFolder}"}
    },
    "local-tool": {
      "command": "${workspaceFolder}/bin/tool",
      "args": ["--home=${env:HOME_DIR}", "--cfg=${config:tool.path}", "${command:pick}", "${PLAIN:-x}"],
    },
  },
}"#;

#[test]
fn vscode_with_comments_inputs_and_editor_variables() {
    let ws = Workspace::new();
    let context = context(&ws);
    let file = ws.project.join(".vscode/mcp.json");
    ws.write(&file, VSCODE_MCP_JSON);
    let imported = import_servers(ImportSource::VsCode, None, &context).unwrap();
    let project = ws.project.display().to_string();
    assert_eq!(
        entries(&imported),
        pairs(&json!({
            "github": {
                "type": "http",
                "url": "https://api.githubcopilot.com/mcp/",
                "headers": {"Authorization": "Bearer ${TOKEN}", "X-Root": project}
            },
            "local-tool": {
                "command": format!("{project}/bin/tool"),
                "args": ["--home=${HOME_DIR}", "--cfg=${config:tool.path}", "${command:pick}", "${PLAIN:-x}"]
            },
            "perplexity": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "server-perplexity-ask", "--region=${REGION:-eu}"],
                "env": {"PERPLEXITY_API_KEY": "${API_KEY}", "PORT": "8080"}
            }
        }))
    );
    assert_eq!(
        notes(&imported),
        [
            r#"skipped: field "inputs[2]": a "command" input runs a VS Code command, which plexus cannot; its variable must be set by hand"#.to_owned(),
            r#"skipped: field "inputs[3]": an input needs a non-empty string "id""#.to_owned(),
            r#"skipped: server "perplexity": field "envFile": plexus does not read env files; put the variables in "env""#.to_owned(),
            r#"skipped: server "perplexity": field "dev": VS Code's development mode (watch and debug) has no plexus equivalent"#.to_owned(),
            r#"changed: server "perplexity": field "env.PORT": the number 8080 is now the string "8080""#.to_owned(),
            r#"skipped: server "perplexity": field "env.UNSET": null (unset the variable) has no plexus equivalent; left out"#.to_owned(),
            r#"changed: server "perplexity": field "args[2]": replaced ${input:region} with ${REGION:-eu}"#.to_owned(),
            r#"changed: server "perplexity": field "env.PERPLEXITY_API_KEY": replaced ${input:api-key} with ${API_KEY}"#.to_owned(),
            r#"warning: server "perplexity": not set and without a default: ${API_KEY} in env.PERPLEXITY_API_KEY; kept as written"#.to_owned(),
            r#"changed: server "github": field "type": added "http" (Streamable HTTP): the entry has a URL and no type; use "sse" for a legacy HTTP+SSE server"#.to_owned(),
            r#"warning: server "github": field "headers.Authorization": ${input:token} names no input declared in "inputs""#.to_owned(),
            r#"changed: server "github": field "headers.Authorization": replaced ${input:token} with ${TOKEN}"#.to_owned(),
            format!(r#"changed: server "github": field "headers.X-Root": replaced ${{workspaceFolder}} with "{project}""#),
            r#"warning: server "github": not set and without a default: ${TOKEN} in headers.Authorization; kept as written"#.to_owned(),
            format!(r#"changed: server "local-tool": field "command": replaced ${{workspaceFolder}} with "{project}""#),
            r#"changed: server "local-tool": field "args[0]": replaced ${env:HOME_DIR} with ${HOME_DIR}"#.to_owned(),
            r#"warning: server "local-tool": field "args[1]": ${config:tool.path} has no plexus equivalent; kept as written, replace it by hand"#.to_owned(),
            r#"warning: server "local-tool": field "args[2]": ${command:pick} has no plexus equivalent; kept as written, replace it by hand"#.to_owned(),
            r#"warning: server "local-tool": not set and without a default: ${HOME_DIR} in args[0], ${config:tool.path} in args[1], ${command:pick} in args[2]; kept as written"#.to_owned(),
            r#"warning: input "region" is now the variable ${REGION}: set REGION in the environment, or give its value when asked"#.to_owned(),
            r#"warning: input "api-key" (Perplexity API key) is now the variable ${API_KEY}: set API_KEY in the environment, or give its value when asked"#.to_owned(),
            r#"warning: input "token" is now the variable ${TOKEN}: set TOKEN in the environment, or give its value when asked"#.to_owned(),
        ]
    );
    let inputs: Vec<(&str, &str, bool)> = imported
        .inputs
        .iter()
        .map(|input| (input.id.as_str(), input.variable.as_str(), input.password))
        .collect();
    assert_eq!(
        inputs,
        [
            ("region", "REGION", false),
            ("api-key", "API_KEY", true),
            ("token", "TOKEN", false)
        ]
    );
}

#[test]
fn vscode_inputs_can_be_answered() {
    let ws = Workspace::new();
    ws.write(&ws.project.join(".vscode/mcp.json"), VSCODE_MCP_JSON);
    // Answering an input on a terminal puts the value in place of its references.
    let mut answered = import_servers(ImportSource::VsCode, None, &context(&ws)).unwrap();
    assert_eq!(answered.fill_input("API_KEY", "pplx-123"), 1);
    assert_eq!(answered.fill_input("REGION", "us"), 1);
    assert_eq!(answered.fill_input("NOPE", "x"), 0);
    let perplexity = &answered
        .servers
        .iter()
        .find(|s| s.name.as_str() == "perplexity")
        .unwrap()
        .entry;
    assert_eq!(perplexity["env"]["PERPLEXITY_API_KEY"], "pplx-123");
    assert_eq!(perplexity["args"][2], "--region=us");
}

#[test]
fn vscode_is_looked_for_in_the_workspace_then_in_the_user_profile() {
    let ws = Workspace::new();
    let user_file = ws.root.path().join("user/.config/Code/User/mcp.json");
    ws.write_json(&user_file, &json!({"servers": {"mine": {"command": "x"}}}));
    let imported = import_servers(ImportSource::VsCode, None, &context(&ws)).unwrap();
    assert_eq!(imported.file, user_file);
    assert_eq!(imported.servers[0].name.as_str(), "mine");
    // The workspace's own file wins.
    ws.write(&ws.project.join(".vscode/mcp.json"), VSCODE_MCP_JSON);
    let imported = import_servers(ImportSource::VsCode, None, &context(&ws)).unwrap();
    assert_eq!(imported.file, ws.project.join(".vscode/mcp.json"));
}

#[test]
fn vscode_user_settings_keep_servers_under_mcp() {
    let ws = Workspace::new();
    let file = ws.root.path().join("Code/User/settings.json");
    ws.write_json(
        &file,
        &json!({"editor.fontSize": 14, "mcp": {"servers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}}),
    );
    let imported = import_servers(ImportSource::VsCode, Some(&file), &context(&ws)).unwrap();
    assert_eq!(imported.servers[0].origin, "mcp.servers");
    assert_eq!(
        imported.servers[0].entry,
        json!({"command": "uvx", "args": ["mcp-server-time"]})
    );
    assert!(imported.notes.is_empty());

    let file = ws.root.path().join("other.json");
    ws.write_json(&file, &json!({"mcpServers": {}}));
    assert_eq!(
        plexus_jsonrpc::error_chain(&import_servers(ImportSource::VsCode, Some(&file), &context(&ws)).unwrap_err()),
        format!(
            r#"{}: no "servers" object; is this VS Code's .vscode/mcp.json?"#,
            file.display()
        )
    );
}

#[test]
fn cursor_variables_and_oauth_client() {
    let ws = Workspace::new();
    let context = context(&ws);
    let file = context.user_home.join(".cursor/mcp.json");
    ws.write_json(
        &file,
        &json!({
            "mcpServers": {
                "notes": {
                    "command": "${userHome}/.local/bin/notes-mcp",
                    "args": ["--root", "${workspaceFolder}${/}docs", "--name=${workspaceFolderBasename}"],
                    "env": {"NOTES_TOKEN": "${env:NOTES_TOKEN}"},
                    "envFile": ".env"
                },
                "linear": {
                    "url": "https://mcp.linear.app/mcp",
                    "auth": {"CLIENT_ID": "abc", "CLIENT_SECRET": "${env:LINEAR_SECRET}", "scopes": ["read"], "extra": 1}
                }
            }
        }),
    );
    let imported = import_servers(ImportSource::Cursor, None, &context).unwrap();
    assert_eq!(imported.file, file, "the global file when the project has none");
    let home = context.user_home.display().to_string();
    let project = ws.project.display().to_string();
    assert_eq!(
        entries(&imported),
        pairs(&json!({
            "linear": {
                "type": "http",
                "url": "https://mcp.linear.app/mcp",
                "oauth": {"clientId": "abc", "clientSecret": "${LINEAR_SECRET}", "scopes": ["read"]}
            },
            "notes": {
                "command": format!("{home}/.local/bin/notes-mcp"),
                "args": ["--root", format!("{project}/docs"), "--name=repo"],
                "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}
            }
        }))
    );
    assert_eq!(
        notes(&imported),
        [
            r#"skipped: server "notes": field "envFile": plexus does not read env files; put the variables in "env""#.to_owned(),
            format!(r#"changed: server "notes": field "command": replaced ${{userHome}} with "{home}""#),
            format!(r#"changed: server "notes": field "args[1]": replaced ${{workspaceFolder}} with "{project}", ${{/}} with "/""#),
            r#"changed: server "notes": field "args[2]": replaced ${workspaceFolderBasename} with "repo""#.to_owned(),
            r#"changed: server "notes": field "env.NOTES_TOKEN": replaced ${env:NOTES_TOKEN} with ${NOTES_TOKEN}"#.to_owned(),
            r#"warning: server "notes": not set and without a default: ${NOTES_TOKEN} in env.NOTES_TOKEN; kept as written"#.to_owned(),
            r#"skipped: server "linear": field "auth": extra not used by plexus; left out"#.to_owned(),
            r#"changed: server "linear": field "auth": moved to "oauth" (CLIENT_ID as clientId, CLIENT_SECRET as clientSecret)"#.to_owned(),
            r#"changed: server "linear": field "type": added "http" (Streamable HTTP): the entry has a URL and no type; use "sse" for a legacy HTTP+SSE server"#.to_owned(),
            r#"changed: server "linear": field "oauth.clientSecret": replaced ${env:LINEAR_SECRET} with ${LINEAR_SECRET}"#.to_owned(),
        ]
    );

    // The project's own file comes first.
    let project_file = ws.project.join(".cursor/mcp.json");
    ws.write_json(&project_file, &json!({"mcpServers": {}}));
    assert_eq!(
        import_servers(ImportSource::Cursor, None, &context).unwrap().file,
        project_file
    );
}

#[test]
fn claude_code_user_and_project_servers_from_claude_json() {
    let ws = Workspace::new();
    let context = context(&ws);
    let file = context.user_home.join(".claude.json");
    let project_key = ws.project.display().to_string();
    ws.write_json(
        &file,
        &json!({
            "numStartups": 12,
            "mcpServers": {
                "everywhere": {"type": "stdio", "command": "npx", "args": ["everything"]},
                "shared": {"type": "http", "url": "https://user.example/mcp"}
            },
            "projects": {
                project_key.clone(): {
                    "allowedTools": [],
                    "mcpServers": {
                        "shared": {"type": "sse", "url": "https://project.example/sse", "headers": {"X": "${TOKEN:-none}"}}
                    }
                },
                "/somewhere/else": {"mcpServers": {"other": {"command": "x"}}}
            }
        }),
    );
    let imported = import_servers(ImportSource::ClaudeCode, None, &context).unwrap();
    assert_eq!(imported.file, file);
    assert_eq!(
        entries(&imported),
        pairs(&json!({
            "everywhere": {"type": "stdio", "command": "npx", "args": ["everything"]},
            "shared": {"type": "sse", "url": "https://project.example/sse", "headers": {"X": "${TOKEN:-none}"}}
        }))
    );
    let origins: Vec<&str> = imported.servers.iter().map(|s| s.origin.as_str()).collect();
    assert_eq!(
        origins,
        ["mcpServers", &format!("projects[\"{project_key}\"].mcpServers")]
    );
    assert_eq!(
        notes(&imported),
        [format!(
            r#"warning: server "shared": also defined in mcpServers; the entry from projects["{project_key}"].mcpServers is used"#
        )]
    );

    // A project's .mcp.json is the same format.
    let mcp_json = ws.root.path().join("elsewhere/.mcp.json");
    ws.write_json(&mcp_json, &json!({"mcpServers": {"p": {"command": "c"}}}));
    let imported = import_servers(ImportSource::ClaudeCode, Some(&mcp_json), &context).unwrap();
    assert_eq!(entries(&imported), pairs(&json!({"p": {"command": "c"}})));

    let empty = ws.root.path().join("empty.json");
    ws.write_json(&empty, &json!({"numStartups": 1}));
    assert_eq!(
        plexus_jsonrpc::error_chain(&import_servers(ImportSource::ClaudeCode, Some(&empty), &context).unwrap_err()),
        format!(
            r#"{}: no "mcpServers" object; is this Claude Code's ~/.claude.json or a .mcp.json?"#,
            empty.display()
        )
    );
}

#[test]
fn source_files_that_are_not_json_or_have_the_wrong_shape() {
    let ws = Workspace::new();
    let context = context(&ws);
    let file: PathBuf = ws.root.path().join("bad.json");
    ws.write(&file, "{\n  // comment\n  \"mcpServers\": {\"a\": }\n}");
    assert_eq!(
        plexus_jsonrpc::error_chain(&import_servers(ImportSource::Cursor, Some(&file), &context).unwrap_err()),
        format!("{}:3:23: invalid JSON: expected value", file.display())
    );
    ws.write(&file, r#"{"mcpServers": []}"#);
    assert_eq!(
        plexus_jsonrpc::error_chain(&import_servers(ImportSource::ClaudeDesktop, Some(&file), &context).unwrap_err()),
        format!(
            r#"{}: field "mcpServers": expected an object that maps each server's name to its settings, found an array"#,
            file.display()
        )
    );
    ws.write(&file, "[]");
    assert_eq!(
        plexus_jsonrpc::error_chain(&import_servers(ImportSource::ClaudeDesktop, Some(&file), &context).unwrap_err()),
        format!(
            "{}: the top level must be a JSON object, found an array",
            file.display()
        )
    );
    let absent = Path::new("/nonexistent/plexus/import.json");
    assert_eq!(
        plexus_jsonrpc::error_chain(&import_servers(ImportSource::ClaudeDesktop, Some(absent), &context).unwrap_err()),
        "cannot read /nonexistent/plexus/import.json: No such file or directory (os error 2)"
    );
}

#[test]
fn imported_entries_land_in_an_existing_file_without_disturbing_it() {
    let ws = Workspace::new();
    let context = context(&ws);
    let file = ws.root.path().join("desktop.json");
    ws.write_json(
        &file,
        &json!({"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}),
    );
    ws.write(
        &ws.user_file(),
        "{\n  \"keep\": true,\n  \"mcpServers\": {\n    \"b\": {\"command\": \"mine\"}\n  }\n}\n",
    );
    let imported = import_servers(ImportSource::ClaudeDesktop, Some(&file), &context).unwrap();
    let mut edit = SettingsEdit::open(ws.user_file()).unwrap();
    let outcome = imported.write_to(&mut edit, false).unwrap();
    assert_eq!(
        (outcome.added, outcome.kept_existing),
        (vec![name("a")], vec![name("b")])
    );
    edit.commit().unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.user_file()).unwrap(),
        "{\n  \"keep\": true,\n  \"mcpServers\": {\n    \"b\": {\"command\": \"mine\"},\n    \"a\": {\n      \"command\": \"a\"\n    }\n  }\n}\n"
    );
}
