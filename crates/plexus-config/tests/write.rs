//! Editing config files as `plexus add`, `add-json`, `remove` and `approve` do: exact file contents
//! after each edit, unknown keys and formatting kept, atomic replacement, and every error message.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{Workspace, messages, servers, stdio};
use plexus_config::{EntryStatus, Environment, Scope, ServerName, SettingsEdit, WriteError, entry_from_json};
use serde_json::json;

fn name(text: &str) -> ServerName {
    ServerName::new(text).unwrap()
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The names of the files in `dir`.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn adding_to_a_missing_file_creates_it_and_its_directory() {
    let ws = Workspace::new();
    let sources = ws.sources();
    let path = sources
        .add_server(
            Scope::Local,
            &name("db"),
            &json!({"command": "pg-mcp", "args": ["--ro"]}),
        )
        .unwrap();
    assert_eq!(path, ws.local_file());
    assert_eq!(
        read(&path),
        // The keys in the order given.
        "{\n  \"mcpServers\": {\n    \"db\": {\n      \"command\": \"pg-mcp\",\n      \"args\": [\n        \"--ro\"\n      ]\n    }\n  }\n}\n"
    );
    assert_eq!(mode(&path), 0o600);
    assert_eq!(listing(path.parent().unwrap()), ["settings.local.json"]);
    assert!(
        !ws.project.join(".plexus").exists(),
        "nothing is written inside the project"
    );

    let path = sources.add_server(Scope::Project, &name("db"), &stdio("x")).unwrap();
    assert_eq!(mode(&path), 0o644, "the project file is meant to be shared");
    let path = sources.add_server(Scope::User, &name("db"), &stdio("x")).unwrap();
    assert_eq!(path, ws.user_file());
    assert_eq!(mode(&path), 0o600);

    let merged = ws.load();
    let db = merged.server("db").unwrap();
    assert_eq!((db.scope, db.status.clone()), (Scope::Local, EntryStatus::Active));
}

#[test]
fn an_edit_keeps_every_other_byte_of_the_file() {
    let ws = Workspace::new();
    let original = "{\n\t\"theme\": \"dark\",\n\t\"mcpServers\": {\n\t\t\"keep\": {\"command\": \"k\",   \"x-custom\": [1, 2]}\n\t},\n\t\"permissions\": {\"allow\": [\"Bash(ls:*)\"]}\n}\n";
    ws.write(&ws.user_file(), original);
    let sources = ws.sources();
    sources
        .add_server(
            Scope::User,
            &name("new"),
            &json!({"type": "http", "url": "https://h/mcp"}),
        )
        .unwrap();
    let added = "{\n\t\"theme\": \"dark\",\n\t\"mcpServers\": {\n\t\t\"keep\": {\"command\": \"k\",   \"x-custom\": [1, 2]},\n\t\t\"new\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://h/mcp\"\n\t\t}\n\t},\n\t\"permissions\": {\"allow\": [\"Bash(ls:*)\"]}\n}\n";
    assert_eq!(read(&ws.user_file()), added);

    sources.remove_server("new", Some(Scope::User)).unwrap();
    assert_eq!(read(&ws.user_file()), original);
    sources.remove_server("keep", None).unwrap();
    assert_eq!(
        read(&ws.user_file()),
        "{\n\t\"theme\": \"dark\",\n\t\"mcpServers\": {},\n\t\"permissions\": {\"allow\": [\"Bash(ls:*)\"]}\n}\n"
    );
    assert_eq!(listing(&ws.home), ["settings.json"], "no temporary file is left behind");
}

#[test]
fn a_file_without_mcp_servers_gets_the_key_appended() {
    let ws = Workspace::new();
    ws.write(&ws.user_file(), "{\"model\": \"opus\"}");
    ws.sources().add_server(Scope::User, &name("a"), &stdio("c")).unwrap();
    assert_eq!(
        read(&ws.user_file()),
        r#"{"model": "opus", "mcpServers": {"a":{"command":"c"}}}"#
    );
    ws.write(&ws.user_file(), "  \n");
    ws.sources().add_server(Scope::User, &name("a"), &stdio("c")).unwrap();
    assert_eq!(
        read(&ws.user_file()),
        "{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"c\"\n    }\n  }\n}  \n"
    );
}

#[test]
fn replacing_and_the_errors_of_adding_and_removing() {
    let ws = Workspace::new();
    ws.write_json(&ws.local_file(), &servers(json!({"a": stdio("one")})));
    let sources = ws.sources();
    let local = ws.local_file().display().to_string();
    assert_eq!(
        sources
            .add_server(Scope::Local, &name("a"), &stdio("two"))
            .unwrap_err()
            .to_string(),
        format!(r#"{local}: server "a" already exists; remove it first or choose another name"#)
    );
    let mut edit = sources.edit(Scope::Local).unwrap();
    assert_eq!(edit.set_server(&name("a"), &stdio("two")).unwrap(), Some(stdio("one")));
    assert_eq!(edit.server("a"), Some(stdio("two")));
    assert!(edit.commit().unwrap());
    assert_eq!(
        ws.load().server("a").map(|s| s.config.to_json()),
        Some(json!({"type": "stdio", "command": "two"}))
    );

    assert_eq!(
        sources
            .remove_server("zzz", Some(Scope::Local))
            .unwrap_err()
            .to_string(),
        format!(r#"{local}: there is no server "zzz""#)
    );
    assert_eq!(
        sources.remove_server("zzz", None).unwrap_err().to_string(),
        r#"there is no server "zzz" in the local, project or user scope"#
    );
    ws.write_json(&ws.user_file(), &servers(json!({"a": stdio("u")})));
    let error = sources.remove_server("a", None).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            r#"server "a" is defined in several scopes: local ({local}), user ({}); choose one with --scope"#,
            ws.user_file().display()
        )
    );
    assert_eq!(
        sources.remove_server("a", Some(Scope::User)).unwrap(),
        (Scope::User, ws.user_file())
    );
    assert_eq!(
        sources.remove_server("a", None).unwrap(),
        (Scope::Local, ws.local_file())
    );

    for scope in [Scope::Explicit, Scope::Managed] {
        assert_eq!(
            sources.edit(scope).unwrap_err().to_string(),
            format!("servers cannot be written to the {scope} scope; use --scope local, project or user")
        );
    }
}

#[test]
fn a_bad_entry_can_be_removed_by_its_name() {
    let ws = Workspace::new();
    ws.write(
        &ws.project_file(),
        r#"{"mcpServers": {"bad name": {"command": 3}, "ok": {"command": "c"}}}"#,
    );
    ws.sources().remove_server("bad name", None).unwrap();
    assert_eq!(read(&ws.project_file()), r#"{"mcpServers": {"ok": {"command": "c"}}}"#);
}

#[test]
fn a_file_that_cannot_be_read_is_never_rewritten() {
    let ws = Workspace::new();
    let broken = "{\"mcpServers\": {\"a\": }";
    ws.write(&ws.user_file(), broken);
    let error = ws
        .sources()
        .add_server(Scope::User, &name("b"), &stdio("c"))
        .unwrap_err();
    assert_eq!(
        plexus_jsonrpc::error_chain(&error),
        format!(
            "nothing was written: {}:1:22: invalid JSON: expected value",
            ws.user_file().display()
        )
    );
    assert!(matches!(error, WriteError::Unreadable { .. }));
    assert_eq!(read(&ws.user_file()), broken);

    ws.write(&ws.user_file(), r#"{"mcpServers": ["a"]}"#);
    assert_eq!(
        plexus_jsonrpc::error_chain(
            &ws.sources()
                .add_server(Scope::User, &name("b"), &stdio("c"))
                .unwrap_err()
        ),
        format!(
            "nothing was written: {}: field \"mcpServers\": expected an object that maps each server's name to its settings, found an array",
            ws.user_file().display()
        )
    );
    ws.write(&ws.user_file(), "[]");
    assert_eq!(
        plexus_jsonrpc::error_chain(&ws.sources().remove_server("a", Some(Scope::User)).unwrap_err()),
        format!(
            "nothing was written: {}: the top level must be a JSON object, found an array",
            ws.user_file().display()
        )
    );
}

#[test]
fn a_file_changed_during_the_edit_is_not_overwritten() {
    let ws = Workspace::new();
    ws.write_json(&ws.user_file(), &servers(json!({})));
    let mut edit = SettingsEdit::open(ws.user_file()).unwrap();
    edit.add_server(&name("a"), &stdio("c")).unwrap();
    ws.write(&ws.user_file(), "{\"someone\": \"else\"}");
    assert_eq!(
        edit.commit().unwrap_err().to_string(),
        format!(
            "{} changed while it was being edited; nothing was written, try again",
            ws.user_file().display()
        )
    );
    assert_eq!(read(&ws.user_file()), "{\"someone\": \"else\"}");
}

#[test]
fn permissions_and_symbolic_links_are_kept() {
    let ws = Workspace::new();
    let real = ws.root.path().join("dotfiles/plexus-settings.json");
    ws.write(&real, "{}");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::symlink(&real, ws.user_file()).unwrap();
    ws.sources().add_server(Scope::User, &name("a"), &stdio("c")).unwrap();
    assert!(
        std::fs::symlink_metadata(ws.user_file())
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        read(&real),
        "{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"c\"\n    }\n  }\n}"
    );
    assert_eq!(mode(&real), 0o640);
}

#[test]
fn an_edit_without_changes_writes_nothing() {
    let ws = Workspace::new();
    let mut edit = SettingsEdit::open(ws.user_file()).unwrap();
    edit.reject(&[]).unwrap();
    assert!(!edit.is_changed());
    assert!(!edit.commit().unwrap());
    assert!(!ws.user_file().exists());

    // Approving again what is approved, rejecting again what is rejected.
    ws.write_json(&ws.project_file(), &servers(json!({"a": stdio("a")})));
    ws.sources().approve(&[name("a")]).unwrap();
    let mut edit = SettingsEdit::open(ws.local_file()).unwrap();
    edit.approve(&name("a"), &stdio("a")).unwrap();
    assert!(!edit.commit().unwrap());
    ws.write(&ws.local_file(), r#"{"disabledMcpjsonServers": ["a"]}"#);
    let mut edit = SettingsEdit::open(ws.local_file()).unwrap();
    edit.reject(&[name("a")]).unwrap();
    assert!(!edit.commit().unwrap());
}

#[test]
fn approval_lists_of_the_wrong_type_are_not_touched() {
    let ws = Workspace::new();
    ws.write_json(&ws.project_file(), &servers(json!({"b": {"command": "b"}})));
    ws.write(&ws.local_file(), r#"{"enabledMcpjsonServers": "a", "other": 1}"#);
    assert_eq!(
        ws.sources().approve(&[name("b")]).unwrap_err().to_string(),
        format!(
            r#"{}: field "enabledMcpjsonServers": expected an array of server names, found a string; fix it by hand, nothing was written"#,
            ws.local_file().display()
        )
    );
    ws.write(&ws.local_file(), r#"{"approvedMcpjsonServers": [], "other": 1}"#);
    assert_eq!(
        ws.sources().approve(&[name("b")]).unwrap_err().to_string(),
        format!(
            r#"{}: field "approvedMcpjsonServers": expected an object of approvals, found an array; fix it by hand, nothing was written"#,
            ws.local_file().display()
        )
    );
    ws.write(&ws.local_file(), r#"{"disabledMcpjsonServers": ["b", 4], "other": 1}"#);
    ws.sources().approve(&[name("b")]).unwrap();
    let digest = plexus_config::sha256_hex(br#"{"command":"b"}"#);
    assert_eq!(
        read(&ws.local_file()),
        format!(
            r#"{{"disabledMcpjsonServers": [4], "other": 1, "approvedMcpjsonServers": {{"b":{{"sha256":"{digest}","entry":{{"command":"b"}}}}}}}}"#
        )
    );
    // A server the project file does not define cannot be approved.
    assert_eq!(
        ws.sources().approve(&[name("c")]).unwrap_err().to_string(),
        format!(r#"{}: there is no server "c""#, ws.project_file().display())
    );
}

#[test]
fn plexus_add_json_reads_one_entry() {
    let env = Environment::empty();
    let entry = entry_from_json(r#"{"type": "http", "url": "https://h/", "x-note": 1}"#, &env).unwrap();
    assert_eq!(entry.entry, json!({"type": "http", "url": "https://h/", "x-note": 1}));
    assert_eq!(
        messages(&entry.warnings),
        [r#"field "x-note": unknown field for a "http" server; kept as written but not used"#]
    );
    assert_eq!(
        plexus_jsonrpc::error_chain(&entry_from_json("{\n  \"command\": \"c\",\n}", &env).unwrap_err()),
        "invalid JSON at line 3, column 1: trailing comma"
    );
    assert_eq!(
        entry_from_json("[1]", &env).unwrap_err().to_string(),
        "the entry is invalid: expected an object with the server's settings, found an array"
    );
    assert_eq!(
        entry_from_json(r#"{"command": "c", "args": [1], "cwd": ""}"#, &env)
            .unwrap_err()
            .to_string(),
        r#"the entry is invalid: field "args[0]": expected a string, found 1; field "cwd": must not be empty"#
    );
}

#[test]
fn an_added_project_server_waits_for_approval() {
    let ws = Workspace::new();
    let sources = ws.sources();
    let entry = entry_from_json(r#"{"command": "run-me"}"#, sources.env()).unwrap();
    sources.add_server(Scope::Project, &name("tool"), &entry.entry).unwrap();
    let merged = sources.load();
    assert_eq!(merged.server("tool").unwrap().status, EntryStatus::PendingApproval);
    sources.approve(&[name("tool")]).unwrap();
    assert_eq!(sources.load().server("tool").unwrap().status, EntryStatus::Active);
}
