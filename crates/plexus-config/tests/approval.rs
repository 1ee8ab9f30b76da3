//! Approvals bound to the entry as written, what an approval by name only means now, and a
//! project entry that is not approved never hiding the user's server of the same name.

mod common;

use common::{Workspace, messages, servers, stdio};
use plexus_config::{
    ConfigSources, EntryChange, EntryOrigin, EntryStatus, FieldValue, PendingReason, Scope, ServerName,
};
use serde_json::json;

fn name(text: &str) -> ServerName {
    ServerName::new(text).unwrap()
}

#[test]
fn the_binding_is_to_the_file_not_to_the_environment() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.project_file(),
        &servers(json!({"p": {"command": "srv", "env": {"TOKEN": "${TOKEN}"}}})),
    );
    let with = |token: &str| ConfigSources::discover(&ws.options().with_env([("TOKEN", token)].into_iter().collect()));
    with("one").approve(&[name("p")]).unwrap();
    // Another value of the variable: still the entry that was approved.
    assert!(with("two").load().server("p").unwrap().is_active());
    // Another file: waits, and says what changed without showing a value of `env`.
    ws.write_json(
        &ws.project_file(),
        &servers(json!({"p": {"command": "srv", "args": ["--x"], "env": {"TOKEN": "literal"}}})),
    );
    let merged = with("one").load();
    let server = merged.server("p").unwrap();
    assert_eq!(server.status, EntryStatus::PendingApproval);
    assert_eq!(
        server.pending,
        Some(PendingReason::Changed(vec![
            EntryChange {
                field: "args".into(),
                before: None,
                after: Some(FieldValue::Shown(json!(["--x"])))
            },
            EntryChange {
                field: "env.TOKEN".into(),
                before: Some(FieldValue::Hidden),
                after: Some(FieldValue::Hidden)
            },
        ]))
    );
    assert_eq!(
        server.pending.as_ref().unwrap().to_string(),
        r#"its entry changed since it was approved: field "args": added, ["--x"]; field "env.TOKEN": changed (the value is not shown)"#
    );
    let approvals = std::fs::read_to_string(ws.local_file()).unwrap();
    assert!(
        !approvals.contains("${TOKEN}") && !approvals.contains("one"),
        "{approvals}"
    );
}

#[test]
fn approvals_by_name_only_wait_to_be_bound() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.project_file(),
        &servers(json!({"old": stdio("o"), "other": stdio("x")})),
    );
    // What an earlier plexus (or another client) recorded: names only.
    ws.write_json(
        &ws.local_file(),
        &json!({"enabledMcpjsonServers": ["old", "other"], "theme": "dark"}),
    );
    let merged = ws.load();
    let server = merged.server("old").unwrap();
    assert_eq!(server.status, EntryStatus::PendingApproval);
    assert_eq!(server.pending, Some(PendingReason::ApprovedByNameOnly));
    assert_eq!(
        server.pending.as_ref().unwrap().to_string(),
        "it was approved by name only (enabledMcpjsonServers), which does not say what was approved; approve it again \
         to bind the approval to this entry"
    );
    // Approving binds it, and the record replaces the name.
    ws.sources().approve(&[name("old")]).unwrap();
    let local = ws.read_json(&ws.local_file());
    assert_eq!(local["enabledMcpjsonServers"], json!(["other"]));
    assert_eq!(local["theme"], json!("dark"));
    assert_eq!(local["approvedMcpjsonServers"]["old"]["entry"], json!({"command": "o"}));
    let merged = ws.load();
    assert!(merged.server("old").unwrap().is_active());
    assert_eq!(merged.server("other").unwrap().status, EntryStatus::PendingApproval);
}

#[test]
fn a_project_entry_not_approved_never_hides_the_users_server() {
    let ws = Workspace::new();
    ws.write_json(
        &ws.user_file(),
        &servers(json!({"db": stdio("mine"), "off": stdio("mine-too"), "bad": stdio("mine-three")})),
    );
    // What a repository could ship to turn the user's servers off or take their place.
    ws.write_json(
        &ws.project_file(),
        &servers(json!({
            "db": stdio("theirs"),
            "off": {"command": "x", "disabled": true},
            "bad": {"type": "http"}
        })),
    );
    let project = ws.project_file().display().to_string();
    let user = ws.user_file().display().to_string();
    let merged = ws.load();
    for name in ["db", "off", "bad"] {
        let server = merged.server(name).unwrap();
        assert_eq!((server.scope, server.status.label()), (Scope::User, "active"), "{name}");
        assert_eq!(
            server.set_aside,
            Some(EntryOrigin {
                scope: Scope::Project,
                file: ws.project_file()
            })
        );
        assert_eq!(server.pending, Some(PendingReason::NotApproved));
        assert_eq!(
            messages(&server.warnings),
            [format!(
                "{project}: server \"{name}\": this project server is pending approval (a project server runs only \
                 once approved), so it does not replace the user server of the same name: the user entry ({user}) \
                 is the one that runs"
            )]
        );
    }
    let pending: Vec<&str> = merged.pending_approval().map(|s| s.name.as_str()).collect();
    assert_eq!(pending, ["bad", "db", "off"]);
    // The set-aside invalid entry's errors are still reported.
    assert_eq!(
        messages(&merged.diagnostics),
        [format!(
            r#"{project}: server "bad": field "url": missing; a "http" server requires it"#
        )]
    );

    // Rejected: the user's still runs, and the warning says why.
    ws.sources().reject(&[name("db")]).unwrap();
    let merged = ws.load();
    let db = merged.server("db").unwrap();
    assert_eq!((db.scope, db.pending.clone()), (Scope::User, None));
    assert_eq!(
        messages(&db.warnings),
        [format!(
            "{project}: server \"db\": this project server is rejected (disabledMcpjsonServers), so it does not \
             replace the user server of the same name: the user entry ({user}) is the one that runs"
        )]
    );

    // Approved: the project's entry wins, as the precedence says, and overrides the user's.
    ws.sources().approve(&[name("db")]).unwrap();
    let merged = ws.load();
    let db = merged.server("db").unwrap();
    assert_eq!(
        (db.scope, db.status.label(), db.set_aside.clone()),
        (Scope::Project, "active", None)
    );
    assert_eq!(
        db.overridden,
        [EntryOrigin {
            scope: Scope::User,
            file: ws.user_file()
        }]
    );
    assert!(db.warnings.is_empty());
}

#[test]
fn the_local_settings_are_never_read_or_written_through_a_link() {
    let ws = Workspace::new();
    ws.write_json(&ws.project_file(), &servers(json!({"evil": stdio("rm")})));
    // A file inside the repository that would approve its server, and a link to it where the
    // local settings belong.
    let other = Workspace::new();
    other.write_json(&other.project_file(), &servers(json!({"evil": stdio("rm")})));
    other.sources().approve(&[name("evil")]).unwrap();
    let shipped = ws.project.join("approvals.json");
    std::fs::copy(other.local_file(), &shipped).unwrap();
    let before = std::fs::read_to_string(&shipped).unwrap();
    std::fs::create_dir_all(ws.local_file().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&shipped, ws.local_file()).unwrap();

    let merged = ws.load();
    assert_eq!(merged.server("evil").unwrap().status, EntryStatus::PendingApproval);
    let refused = format!(
        "cannot read {}: it is a symbolic link, and plexus neither follows nor replaces a link where it keeps its own \
         files; remove the link",
        ws.local_file().display()
    );
    let failed: Vec<String> = merged
        .file_errors()
        .map(|(_, error)| plexus_jsonrpc::error_chain(error))
        .collect();
    assert_eq!(failed, std::slice::from_ref(&refused));

    let error = ws.sources().approve(&[name("evil")]).unwrap_err();
    assert_eq!(
        plexus_jsonrpc::error_chain(&error),
        format!("nothing was written: {refused}")
    );
    assert_eq!(std::fs::read_to_string(&shipped).unwrap(), before);
    assert!(
        std::fs::symlink_metadata(ws.local_file())
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // Any file plexus writes whole is refused the same way.
    let error = plexus_config::write_atomically(&ws.local_file(), b"{}", 0o600).unwrap_err();
    assert_eq!(
        plexus_jsonrpc::error_chain(&error),
        format!(
            "cannot write {}: it is a symbolic link, and plexus neither follows nor replaces a link where it keeps its \
             own files; remove the link",
            ws.local_file().display()
        )
    );
    assert_eq!(std::fs::read_to_string(&shipped).unwrap(), before);
}
