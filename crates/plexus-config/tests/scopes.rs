//! Scopes with real files in temporary directories: discovery, precedence, whole-entry wins,
//! errors as data, and project approval.

mod common;

use std::path::PathBuf;

use common::{Workspace, messages, servers, stdio};
use plexus_config::{
    ConfigPaths, ConfigSources, EntryOrigin, EntryStatus, FileOutcome, MergedConfig, Scope, ServerConfig, ServerName,
};
use serde_json::json;

fn command(merged: &MergedConfig, name: &str) -> String {
    match &merged.server(name).expect("the server is merged").config {
        ServerConfig::Stdio(stdio) => stdio.command.clone(),
        other => panic!("a stdio server, got {other:?}"),
    }
}

fn names(merged: &MergedConfig) -> Vec<&str> {
    merged.servers.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn the_highest_scope_wins_whole_and_records_its_scope_and_file() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.user_file(),
        &json!({
            "theme": "dark",
            "enableAllProjectMcpServers": true,
            "mcpServers": {
                "shared": {"command": "user-cmd", "env": {"U": "1"}, "timeout": 5000},
                "only-user": stdio("u")
            }
        }),
    );
    ws.write_json(
        &ws.project_file(),
        &servers(json!({
            "shared": {"command": "project-cmd", "args": ["--p"]},
            "only-project": stdio("p")
        })),
    );
    ws.write_json(&ws.local_file(), &servers(json!({ "shared": stdio("local-cmd") })));
    let merged = ws.load();
    assert!(!merged.has_errors());
    assert_eq!(names(&merged), ["only-project", "only-user", "shared"]);

    let shared = merged.server("shared").unwrap();
    assert_eq!(shared.scope, Scope::Local);
    assert_eq!(shared.source, ws.local_file());
    // The local entry is used as written: no args, env or timeout from the lower scopes.
    let (expected, _) = ServerConfig::from_json(&stdio("local-cmd")).unwrap();
    assert_eq!(shared.config, expected);
    assert_eq!(
        shared.overridden,
        [
            EntryOrigin {
                scope: Scope::Project,
                file: ws.project_file()
            },
            EntryOrigin {
                scope: Scope::User,
                file: ws.user_file()
            },
        ]
    );
    assert_eq!(shared.status, EntryStatus::Active);

    let user = merged.server("only-user").unwrap();
    assert_eq!((user.scope, user.source.clone()), (Scope::User, ws.user_file()));
    let project = merged.server("only-project").unwrap();
    assert_eq!(
        (project.scope, project.source.clone()),
        (Scope::Project, ws.project_file())
    );
    assert_eq!(
        project.status,
        EntryStatus::Active,
        "approved by enableAllProjectMcpServers"
    );

    let outcomes: Vec<(Scope, PathBuf, String)> = merged
        .files
        .iter()
        .map(|file| (file.scope, file.path.clone(), format!("{:?}", file.outcome)))
        .collect();
    assert_eq!(
        outcomes,
        [
            (Scope::Managed, ws.managed.clone(), "Missing".to_owned()),
            (Scope::User, ws.user_file(), "Loaded { entries: 2 }".to_owned()),
            (Scope::Project, ws.project_file(), "Loaded { entries: 2 }".to_owned()),
            (Scope::Local, ws.local_file(), "Loaded { entries: 1 }".to_owned()),
        ]
    );
}

#[test]
fn explicit_files_win_over_every_scope_and_a_later_one_over_an_earlier_one() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.local_file(),
        &servers(json!({"a": stdio("local"), "b": stdio("local")})),
    );
    let first = ws.root.path().join("first.json");
    let second = ws.root.path().join("second.json");
    ws.write_json(&first, &servers(json!({"a": stdio("first"), "c": stdio("first")})));
    ws.write_json(&second, &servers(json!({"a": stdio("second")})));
    let options = ws
        .options()
        .with_explicit_files(vec![first.clone(), second.clone()], false);
    let merged = ConfigSources::discover(&options).load();
    assert_eq!(names(&merged), ["a", "b", "c"]);
    assert_eq!(command(&merged, "a"), "second");
    assert_eq!(merged.server("a").unwrap().scope, Scope::Explicit);
    assert_eq!(merged.server("a").unwrap().source, second);
    assert_eq!(
        merged.server("a").unwrap().overridden,
        [
            EntryOrigin {
                scope: Scope::Explicit,
                file: first.clone()
            },
            EntryOrigin {
                scope: Scope::Local,
                file: ws.local_file()
            },
        ]
    );
    assert_eq!(command(&merged, "b"), "local");
    assert_eq!(merged.server("c").unwrap().source, first);
}

#[test]
fn strict_config_reads_only_the_explicit_files() {
    let ws = Workspace::new();
    ws.write_json(&ws.user_file(), &servers(json!({"user": stdio("u")})));
    ws.write_json(&ws.project_file(), &servers(json!({"project": stdio("p")})));
    ws.write_json(&ws.local_file(), &servers(json!({"local": stdio("l")})));
    let explicit = ws.root.path().join("only.json");
    ws.write_json(&explicit, &servers(json!({"only": stdio("o")})));
    let options = ws.options().with_explicit_files(vec![explicit.clone()], true);
    let merged = ConfigSources::discover(&options).load();
    assert_eq!(names(&merged), ["only"]);
    let scopes: Vec<Scope> = merged.files.iter().map(|file| file.scope).collect();
    assert_eq!(scopes, [Scope::Managed, Scope::Explicit]);
}

#[test]
fn a_missing_explicit_file_is_an_error_and_missing_scope_files_are_not() {
    let ws = Workspace::new();
    let absent = ws.root.path().join("absent.json");
    let options = ws.options().with_explicit_files(vec![absent.clone()], false);
    let merged = ConfigSources::discover(&options).load();
    let errors: Vec<String> = merged
        .file_errors()
        .map(|(_, error)| plexus_jsonrpc::error_chain(error))
        .collect();
    assert_eq!(
        errors,
        [format!(
            "cannot read {}: No such file or directory (os error 2)",
            absent.display()
        )]
    );
    assert!(merged.has_errors());
    assert!(ws.load().file_errors().next().is_none());
    assert!(!ws.load().has_errors());
}

#[test]
fn the_project_is_the_nearest_ancestor_with_mcp_json_up_to_the_repository_root() {
    let ws = Workspace::new();
    let deeper = ws.project.join("sub/deeper");
    std::fs::create_dir_all(&deeper).unwrap();
    // Above the repository root: never looked at from inside the repository.
    ws.write_json(
        &ws.root.path().join(".mcp.json"),
        &servers(json!({"outside": stdio("o")})),
    );

    let paths = |start: &std::path::Path| ConfigPaths::discover(&plexus_config::DiscoveryOptions::new(&ws.home, start));
    // No .mcp.json in the repository: the project is the repository root.
    assert_eq!(paths(&deeper).project_dir, ws.project);
    assert_eq!(paths(&deeper).project_file, ws.project.join(".mcp.json"));

    ws.write_json(&ws.project_file(), &servers(json!({})));
    assert_eq!(paths(&deeper).project_dir, ws.project);
    ws.write_json(&ws.project.join("sub/.mcp.json"), &servers(json!({})));
    let found = paths(&deeper);
    assert_eq!(found.project_dir, ws.project.join("sub"));
    assert_eq!(
        found.local_file,
        ConfigPaths::local_file_for(&ws.home, &ws.project.join("sub"))
    );
    assert!(found.local_file.starts_with(ws.home.join("projects")));
    assert_eq!(
        found.ignored_local_file,
        ws.project.join("sub/.plexus/settings.local.json")
    );
    assert_eq!(found.user_file, ws.home.join("settings.json"));

    // Outside any repository the search goes up until it finds one.
    let loose = ws.root.path().join("loose/a/b");
    std::fs::create_dir_all(&loose).unwrap();
    ws.write_json(&ws.root.path().join("loose/.mcp.json"), &servers(json!({})));
    assert_eq!(paths(&loose).project_dir, ws.root.path().join("loose"));

    // The loaded servers come from the nearest file only.
    let options = ws.options();
    let mut options = options;
    options.start_dir = deeper;
    let merged = ConfigSources::discover(&options).load();
    assert!(merged.servers.is_empty());
    assert_eq!(
        merged.files.iter().find(|f| f.scope == Scope::Project).unwrap().path,
        ws.project.join("sub/.mcp.json")
    );
}

#[test]
fn an_explicit_project_directory_starts_the_search_there() {
    let ws = Workspace::new();
    let other = ws.root.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    ws.write_json(&other.join(".mcp.json"), &servers(json!({"there": stdio("t")})));
    let options = plexus_config::DiscoveryOptions::new(&ws.home, &other)
        .with_managed_file(None)
        .with_env(plexus_config::Environment::empty());
    let merged = ConfigSources::discover(&options).load();
    assert_eq!(names(&merged), ["there"]);
    assert_eq!(merged.server("there").unwrap().source, other.join(".mcp.json"));
}

#[test]
fn a_file_that_is_not_json_is_reported_with_line_and_column_and_the_other_scopes_load() {
    let ws = Workspace::new();
    ws.write_json(&ws.user_file(), &servers(json!({"user": stdio("u")})));
    ws.write(
        &ws.project_file(),
        "{\n  \"mcpServers\": {\n    \"p\": {\"command\": \"x\",}\n  }\n}\n",
    );
    ws.write_json(&ws.local_file(), &servers(json!({"local": stdio("l")})));
    let merged = ws.load();
    assert_eq!(names(&merged), ["local", "user"]);
    let errors: Vec<String> = merged
        .file_errors()
        .map(|(_, error)| plexus_jsonrpc::error_chain(error))
        .collect();
    assert_eq!(
        errors,
        [format!(
            "{}:3:26: invalid JSON: trailing comma",
            ws.project_file().display()
        )]
    );
    let (file, _) = merged.file_errors().next().unwrap();
    assert_eq!(file.scope, Scope::Project);
    assert!(matches!(file.outcome, FileOutcome::Failed(_)));
}

#[test]
fn a_bad_entry_is_reported_and_skipped_and_the_rest_of_its_file_loads() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.local_file(),
        &servers(json!({
            "good": stdio("g"),
            "bad": {"command": "b", "args": ["ok", 3], "color": "red"},
            "bad name": stdio("n")
        })),
    );
    let merged = ws.load();
    // A name with a space is read as `plexus import` reads it, with a warning.
    assert_eq!(names(&merged), ["bad_name", "good"]);
    assert_eq!(
        messages(&merged.server("bad_name").unwrap().warnings),
        [format!(
            r#"{}: server "bad name": renamed to "bad_name" (server names use only A-Z, a-z, 0-9, "_" and "-", at most 64)"#,
            ws.local_file().display()
        )]
    );
    let local = ws.local_file().display().to_string();
    let invalid: Vec<(&str, Vec<String>, Vec<String>)> = merged
        .invalid
        .iter()
        .map(|server| {
            (
                server.name.as_str(),
                messages(&server.errors),
                messages(&server.warnings),
            )
        })
        .collect();
    assert_eq!(
        invalid,
        [(
            "bad",
            vec![format!(
                r#"{local}: server "bad": field "args[1]": expected a string, found 3"#
            )],
            vec![format!(
                r#"{local}: server "bad": field "color": unknown field for a "stdio" server; kept as written but not used"#
            )]
        ),]
    );
    assert_eq!(merged.invalid[0].scope, Scope::Local);
    assert_eq!(merged.invalid[0].source, ws.local_file());
    assert!(merged.has_errors());
}

#[test]
fn an_invalid_winning_entry_does_not_fall_back_to_a_lower_scope() {
    let ws = Workspace::new();
    ws.write_json(&ws.user_file(), &servers(json!({"db": stdio("good")})));
    ws.write_json(&ws.local_file(), &servers(json!({"db": {"type": "http"}})));
    let merged = ws.load();
    assert!(merged.server("db").is_none());
    let invalid = merged.invalid_server("db").unwrap();
    assert_eq!(invalid.scope, Scope::Local);
    assert_eq!(
        messages(&invalid.errors),
        [format!(
            r#"{}: server "db": field "url": missing; a "http" server requires it"#,
            ws.local_file().display()
        )]
    );
    assert_eq!(
        invalid.overridden,
        [EntryOrigin {
            scope: Scope::User,
            file: ws.user_file()
        }]
    );
}

#[test]
fn unknown_fields_and_duplicates_are_warnings_on_the_server_and_kept() {
    let ws = Workspace::new();
    ws.write(
        &ws.user_file(),
        r#"{"mcpServers": {"x": {"command": "a"}, "x": {"command": "b", "note": {"keep": [1]}}}}"#,
    );
    let merged = ws.load();
    let server = merged.server("x").unwrap();
    assert_eq!(command(&merged, "x"), "b");
    let user = ws.user_file().display().to_string();
    assert_eq!(
        messages(&server.warnings),
        [
            format!(r#"{user}: server "x": defined more than once; the last definition is used"#),
            format!(
                r#"{user}: server "x": field "note": unknown field for a "stdio" server; kept as written but not used"#
            ),
        ]
    );
    assert_eq!(server.config.options().unknown_fields["note"], json!({"keep": [1]}));
    assert!(merged.diagnostics.is_empty());
}

#[test]
fn project_servers_wait_for_approval_and_a_rejection_wins() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.project_file(),
        &servers(json!({
            "approved": stdio("a"),
            "pending": stdio("p"),
            "rejected": stdio("r"),
            "off": {"command": "o", "disabled": true}
        })),
    );
    let sources = ws.sources();
    sources
        .approve(&[
            ServerName::new("approved").unwrap(),
            ServerName::new("rejected").unwrap(),
        ])
        .unwrap();
    let mut settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ws.local_file()).unwrap()).unwrap();
    settings["disabledMcpjsonServers"] = json!(["rejected"]);
    ws.write_json(&ws.local_file(), &settings);
    let merged = ws.load();
    let statuses: Vec<(&str, String)> = merged
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.status.to_string()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("approved", "active".to_owned()),
            ("off", "disabled by its entry".to_owned()),
            (
                "pending",
                "pending approval (a project server runs only once approved)".to_owned()
            ),
            ("rejected", "rejected (disabledMcpjsonServers)".to_owned()),
        ]
    );
    let pending: Vec<&str> = merged.pending_approval().map(|s| s.name.as_str()).collect();
    assert_eq!(pending, ["pending"]);
    let active: Vec<&str> = merged.active().map(|s| s.name.as_str()).collect();
    assert_eq!(active, ["approved"]);

    // Approving everything in the user settings: the rejection still wins, and a server that its
    // entry disables stays disabled.
    ws.write_json(&ws.user_file(), &json!({"enableAllProjectMcpServers": true}));
    let merged = ws.load();
    let labels: Vec<&str> = merged.servers.iter().map(|s| s.status.label()).collect();
    assert_eq!(labels, ["active", "disabled", "active", "rejected"]);
    assert_eq!(
        merged.server("off").unwrap().status.to_string(),
        "disabled by its entry"
    );
}

#[test]
fn approval_settings_of_the_wrong_type_are_reported_and_ignored() {
    let ws = Workspace::new();
    ws.write_json(&ws.project_file(), &servers(json!({"p": stdio("p")})));
    ws.write_json(
        &ws.local_file(),
        &json!({"enableAllProjectMcpServers": "yes", "enabledMcpjsonServers": ["p", 7], "disabledMcpjsonServers": {}}),
    );
    let merged = ws.load();
    // A name alone no longer approves (see `approvals_by_name_only_wait_to_be_bound`).
    assert_eq!(merged.server("p").unwrap().status, EntryStatus::PendingApproval);
    let local = ws.local_file().display().to_string();
    assert_eq!(
        messages(&merged.diagnostics),
        [
            format!(r#"{local}: field "enableAllProjectMcpServers": expected true or false, found a string; ignored"#),
            format!(r#"{local}: field "enabledMcpjsonServers[1]": expected a server name, found 7; ignored"#),
            format!(
                r#"{local}: field "disabledMcpjsonServers": expected an array of server names, found an object; ignored"#
            ),
        ]
    );
}

#[test]
fn approve_and_reject_are_recorded_in_the_local_settings() {
    let ws = Workspace::new();
    ws.write_json(&ws.project_file(), &servers(json!({"a": stdio("a"), "b": stdio("b")})));
    let sources = ws.sources();
    let pending: Vec<ServerName> = sources.load().pending_approval().map(|s| s.name.clone()).collect();
    assert_eq!(sources.approve(&pending).unwrap(), ws.local_file());
    let record = |command: &str| json!({"sha256": plexus_config::sha256_hex(format!(r#"{{"command":"{command}"}}"#).as_bytes()), "entry": {"command": command}});
    assert_eq!(
        ws.read_json(&ws.local_file()),
        json!({"approvedMcpjsonServers": {"a": record("a"), "b": record("b")}})
    );
    assert_eq!(sources.load().active().count(), 2);

    sources.reject(&[ServerName::new("a").unwrap()]).unwrap();
    assert_eq!(
        ws.read_json(&ws.local_file()),
        json!({"approvedMcpjsonServers": {"b": record("b")}, "disabledMcpjsonServers": ["a"]})
    );
    let merged = sources.load();
    assert_eq!(merged.server("a").unwrap().status, EntryStatus::RejectedByUser);
    assert_eq!(merged.server("b").unwrap().status, EntryStatus::Active);
}

#[test]
fn the_cache_key_is_the_name_and_the_canonical_expanded_entry() {
    let ws = Workspace::new();
    ws.write(
        &ws.user_file(),
        r#"{"mcpServers": {"s": {"url": "https://${HOST}/mcp", "type": "streamable-http", "headers": {"B": "2", "A": "1"}}}}"#,
    );
    let options = ws.options().with_env([("HOST", "Example.com")].into_iter().collect());
    let merged = ConfigSources::discover(&options).load();
    assert_eq!(
        merged.server("s").unwrap().cache_key(),
        r#"s:{"headers":{"A":"1","B":"2"},"type":"http","url":"https://example.com/mcp"}"#
    );
    let options = ws
        .options()
        .with_env([("HOST", "other.example.com")].into_iter().collect());
    let merged = ConfigSources::discover(&options).load();
    assert_eq!(
        merged.server("s").unwrap().cache_key(),
        r#"s:{"headers":{"A":"1","B":"2"},"type":"http","url":"https://other.example.com/mcp"}"#
    );
}

#[test]
fn nothing_a_project_ships_can_approve_its_servers_or_add_local_ones() {
    let ws = Workspace::new();
    ws.write_json(&ws.project_file(), &servers(json!({"evil": stdio("rm")})));
    // What a cloned repository could ship, where older versions read the local settings.
    let shipped = ws.project.join(".plexus/settings.local.json");
    ws.write_json(
        &shipped,
        &json!({
            "enableAllProjectMcpServers": true,
            "enabledMcpjsonServers": ["evil"],
            "mcpServers": {"sneaky": stdio("curl")}
        }),
    );
    let merged = ws.load();
    assert_eq!(names(&merged), ["evil"]);
    assert_eq!(merged.server("evil").unwrap().status, EntryStatus::PendingApproval);
    assert_eq!(merged.active().count(), 0);
    assert!(
        merged.files.iter().all(|file| file.path != shipped),
        "the shipped file is never read"
    );
    assert_eq!(
        messages(&merged.diagnostics),
        [format!(
            "{}: ignored: it is inside the project, and nothing a project ships may approve or add servers; your \
             local settings and approvals for this project are in {}",
            shipped.display(),
            ws.local_file().display()
        )]
    );

    // The user's own approval, in the plexus home, is what lets it run.
    ws.sources().approve(&[ServerName::new("evil").unwrap()]).unwrap();
    assert!(ws.load().server("evil").unwrap().is_active());
    assert!(ws.local_file().starts_with(&ws.home));
}

#[test]
fn each_project_has_its_own_local_settings_however_it_is_reached() {
    let ws = Workspace::new();
    let other = ws.root.path().join("elsewhere/repo");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    // Two projects with the same directory name never share their approvals.
    assert_ne!(
        ConfigPaths::local_file_for(&ws.home, &ws.project),
        ConfigPaths::local_file_for(&ws.home, &other)
    );
    // A project reached through a symbolic link is the same project.
    let link = ws.root.path().join("link");
    std::os::unix::fs::symlink(&ws.project, &link).unwrap();
    assert_eq!(
        ConfigPaths::local_file_for(&ws.home, &link),
        ConfigPaths::local_file_for(&ws.home, &ws.project)
    );
    let from_link = ConfigPaths::discover(&plexus_config::DiscoveryOptions::new(&ws.home, &link));
    assert_eq!(from_link.local_file, ws.local_file());
    let key = ws
        .local_file()
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(key.starts_with("repo-"), "{key}");
}
