//! Managed policy with real files: allow- and deny-lists by name, URL and command, exclusive
//! managed servers, and a broken managed file that blocks everything.

mod common;

use common::{Workspace, messages, servers, stdio};
use plexus_config::{ConfigSources, EntryStatus, MergedConfig, PolicyBlock, PolicyMatcher, Scope};
use serde_json::{Value, json};

/// A workspace whose user scope defines a stdio, an http and a ws server.
fn workspace(policy: &Value) -> Workspace {
    let ws = Workspace::new();
    ws.write_json(
        &ws.user_file(),
        &servers(json!({
            "files": {"command": "npx", "args": ["-y", "@mcp/files", "."]},
            "docs": {"type": "http", "url": "https://API.Example.com/mcp"},
            "sock": {"type": "ws", "url": "wss://ws.other.org/"}
        })),
    );
    ws.write_json(&ws.managed, policy);
    ws
}

/// Each server's status, as displayed, in name order.
fn statuses(merged: &MergedConfig) -> Vec<(String, String)> {
    merged
        .servers
        .iter()
        .map(|server| (server.name.to_string(), server.status.to_string()))
        .collect()
}

fn pairs(expected: &[(&str, String)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(name, status)| ((*name).to_owned(), status.clone()))
        .collect()
}

#[test]
fn deny_rules_match_by_name_url_glob_and_exact_command() {
    let ws = workspace(&json!({
        "deniedMcpServers": [
            {"serverName": "nothing-here"},
            {"serverUrl": "HTTPS://*.EXAMPLE.com/*"},
            {"serverCommand": ["npx", "-y", "@mcp/files", "."]},
            {"serverName": "sock"}
        ]
    }));
    let managed = ws.managed.display().to_string();
    assert_eq!(
        statuses(&ws.load()),
        pairs(&[
            (
                "docs",
                format!(
                    r#"disabled by managed policy: denied by deniedMcpServers[1] (serverUrl "HTTPS://*.EXAMPLE.com/*") in {managed}"#
                )
            ),
            (
                "files",
                format!(
                    r#"disabled by managed policy: denied by deniedMcpServers[2] (serverCommand ["npx", "-y", "@mcp/files", "."]) in {managed}"#
                )
            ),
            (
                "sock",
                format!(
                    r#"disabled by managed policy: denied by deniedMcpServers[3] (serverName "sock") in {managed}"#
                )
            ),
        ])
    );
    let docs = ws.load().server("docs").unwrap().status.clone();
    assert_eq!(
        docs,
        EntryStatus::DeniedByPolicy(PolicyBlock::Denied {
            file: ws.managed.clone(),
            index: 1,
            matcher: PolicyMatcher::ServerUrl("HTTPS://*.EXAMPLE.com/*".into()),
        })
    );
}

#[test]
fn a_command_rule_needs_the_exact_argv_and_a_url_rule_the_whole_url() {
    let ws = workspace(&json!({
        "deniedMcpServers": [
            {"serverCommand": ["npx", "-y", "@mcp/files"]},
            {"serverCommand": ["npx"]},
            {"serverUrl": "https://api.example.com"},
            {"serverUrl": "wss://ws.other.org"}
        ]
    }));
    let managed = ws.managed.display().to_string();
    assert_eq!(
        statuses(&ws.load()),
        pairs(&[
            ("docs", "active".to_owned()),
            ("files", "active".to_owned()),
            // A URL whose path is only "/" matches the pattern without it.
            (
                "sock",
                format!(
                    r#"disabled by managed policy: denied by deniedMcpServers[3] (serverUrl "wss://ws.other.org") in {managed}"#
                )
            ),
        ])
    );
}

#[test]
fn no_allow_list_allows_all_an_empty_one_none_and_deny_always_wins() {
    let ws = workspace(&json!({}));
    assert!(ws.load().servers.iter().all(plexus_config::MergedServer::is_active));

    let ws = workspace(&json!({"allowedMcpServers": []}));
    let managed = ws.managed.display().to_string();
    let blocked =
        format!("disabled by managed policy: allowedMcpServers in {managed} is empty, so no server is allowed");
    assert_eq!(
        statuses(&ws.load()),
        pairs(&[("docs", blocked.clone()), ("files", blocked.clone()), ("sock", blocked)])
    );

    let ws = workspace(&json!({
        "allowedMcpServers": [{"serverName": "files"}, {"serverUrl": "https://api.example.com/*"}],
        "deniedMcpServers": [{"serverName": "files"}]
    }));
    let managed = ws.managed.display().to_string();
    assert_eq!(
        statuses(&ws.load()),
        pairs(&[
            ("docs", "active".to_owned()),
            (
                "files",
                format!(
                    r#"disabled by managed policy: denied by deniedMcpServers[0] (serverName "files") in {managed}"#
                )
            ),
            (
                "sock",
                format!("disabled by managed policy: not matched by any entry of allowedMcpServers in {managed}")
            ),
        ])
    );
}

#[test]
fn managed_servers_are_exclusive() {
    let ws = workspace(&json!({
        "mcpServers": {"corp": stdio("corp-server"), "files": stdio("corp-files")},
        "deniedMcpServers": [{"serverName": "corp"}]
    }));
    ws.write_json(&ws.project_file(), &servers(json!({"proj": stdio("p")})));
    let merged = ws.load();
    let managed = ws.managed.display().to_string();
    let replaced = format!(
        "disabled by managed policy: {managed} defines mcpServers, which replace the servers of every other scope"
    );
    assert_eq!(
        statuses(&merged),
        pairs(&[
            (
                "corp",
                format!(
                    r#"disabled by managed policy: denied by deniedMcpServers[0] (serverName "corp") in {managed}"#
                )
            ),
            ("docs", replaced.clone()),
            ("files", "active".to_owned()),
            ("proj", replaced.clone()),
            ("sock", replaced),
        ])
    );
    let files = merged.server("files").unwrap();
    assert_eq!(
        (files.scope, files.source.clone()),
        (Scope::Managed, ws.managed.clone())
    );
    assert_eq!(files.overridden.len(), 1);

    // Even an empty managed list is exclusive, and strict mode does not escape it.
    let ws = workspace(&json!({"mcpServers": {}}));
    let explicit = ws.root.path().join("mine.json");
    ws.write_json(&explicit, &servers(json!({"mine": stdio("m")})));
    let options = ws.options().with_explicit_files(vec![explicit], true);
    let merged = ConfigSources::discover(&options).load();
    assert_eq!(merged.active().count(), 0);
    assert_eq!(merged.servers.len(), 1);
}

#[test]
fn a_broken_managed_file_blocks_every_server_and_says_why() {
    let ws = workspace(&json!({}));
    ws.write(&ws.managed, "{\"deniedMcpServers\": [\n  {\"serverName\": }\n]}");
    let merged = ws.load();
    let managed = ws.managed.display().to_string();
    let blocked = format!(
        "disabled by managed policy: the managed policy {managed} cannot be applied ({managed}:2:18: invalid JSON: expected value); every server is blocked until it is fixed"
    );
    assert_eq!(
        statuses(&merged),
        pairs(&[("docs", blocked.clone()), ("files", blocked.clone()), ("sock", blocked)])
    );
    let errors: Vec<String> = merged
        .file_errors()
        .map(|(_, error)| plexus_jsonrpc::error_chain(error))
        .collect();
    assert_eq!(errors, [format!("{managed}:2:18: invalid JSON: expected value")]);
}

#[test]
fn a_malformed_rule_blocks_every_server_and_an_unknown_field_in_a_rule_is_a_warning() {
    let ws = workspace(&json!({
        "allowedMcpServers": [{"serverName": "files", "comment": "ok"}],
        "deniedMcpServers": [{"serverName": "x", "serverUrl": "y"}, "files", {"serverCommand": "npx"}, {"serverUrl": ""}]
    }));
    let merged = ws.load();
    let managed = ws.managed.display().to_string();
    let blocked = format!(
        r#"disabled by managed policy: the managed policy {managed} cannot be applied (field "deniedMcpServers[0]": expected an object with exactly one of "serverName", "serverUrl" or "serverCommand", found serverName and serverUrl); every server is blocked until it is fixed"#
    );
    assert_eq!(statuses(&merged)[0], ("docs".to_owned(), blocked));
    assert_eq!(
        messages(&merged.diagnostics),
        [
            format!(r#"{managed}: field "allowedMcpServers[0].comment": unknown field in a server rule; ignored"#),
            format!(
                r#"{managed}: field "deniedMcpServers[0]": expected an object with exactly one of "serverName", "serverUrl" or "serverCommand", found serverName and serverUrl"#
            ),
            format!(
                r#"{managed}: field "deniedMcpServers[1]": expected an object with exactly one of "serverName", "serverUrl" or "serverCommand", found a string"#
            ),
            format!(
                r#"{managed}: field "deniedMcpServers[2].serverCommand": expected a non-empty array of strings (the command and its arguments), found a string"#
            ),
            format!(
                r#"{managed}: field "deniedMcpServers[3].serverUrl": expected a non-empty string, found an empty string"#
            ),
        ]
    );

    let ws = workspace(&json!({"deniedMcpServers": {"serverName": "x"}}));
    let managed = ws.managed.display().to_string();
    assert_eq!(
        messages(&ws.load().diagnostics),
        [format!(
            r#"{managed}: field "deniedMcpServers": expected an array of server rules, found an object"#
        )]
    );
    assert_eq!(ws.load().active().count(), 0);
}

#[test]
fn without_a_managed_file_nothing_is_filtered() {
    let ws = workspace(&json!({"allowedMcpServers": []}));
    let options = ws.options().with_managed_file(None);
    let merged = ConfigSources::discover(&options).load();
    assert_eq!(merged.active().count(), 3);
    assert!(merged.files.iter().all(|file| file.scope != Scope::Managed));
}

#[test]
fn require_tool_lock_is_read_from_the_managed_file_only_and_a_bad_value_blocks_every_server() {
    let ws = workspace(&json!({"requireToolLock": true}));
    let merged = ws.load();
    assert!(merged.require_tool_lock);
    assert_eq!(merged.active().count(), 3, "the setting holds tools, not servers");
    assert!(!workspace(&json!({"requireToolLock": false})).load().require_tool_lock);
    assert!(!workspace(&json!({})).load().require_tool_lock);

    // In the user's own settings it means nothing.
    let ws = workspace(&json!({}));
    let mut user: Value = serde_json::from_str(&std::fs::read_to_string(ws.user_file()).unwrap()).unwrap();
    user["requireToolLock"] = json!(true);
    ws.write_json(&ws.user_file(), &user);
    assert!(!ws.load().require_tool_lock);

    let ws = workspace(&json!({"requireToolLock": "yes"}));
    let merged = ws.load();
    let managed = ws.managed.display().to_string();
    assert_eq!(
        messages(&merged.diagnostics),
        [format!(
            r#"{managed}: field "requireToolLock": expected true or false, found a string"#
        )]
    );
    assert_eq!(merged.active().count(), 0);
    assert_eq!(
        statuses(&merged)[0].1,
        format!(
            r#"disabled by managed policy: the managed policy {managed} cannot be applied (field "requireToolLock": expected true or false, found a string); every server is blocked until it is fixed"#
        )
    );
}
