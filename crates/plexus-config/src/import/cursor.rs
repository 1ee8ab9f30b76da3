//! Cursor: `.cursor/mcp.json` or `~/.cursor/mcp.json`, servers under `mcpServers`, with
//! `${env:NAME}`, `${workspaceFolder}`, `${userHome}` variables and a static OAuth client under
//! `auth`.

use serde_json::{Map, Value};

use super::convert::{drop_field, normalize_env, note};
use super::{Group, ImportNote, NoteKind, ShapeProblem, object_at};

/// The servers of a Cursor `mcp.json`.
pub(super) fn groups(top: &Value) -> Result<Vec<Group<'_>>, ShapeProblem> {
    let servers = object_at(top, "", "mcpServers")?.ok_or(ShapeProblem::NoServers {
        key: "mcpServers",
        expected: "Cursor's mcp.json",
    })?;
    Ok(vec![Group {
        origin: "mcpServers".to_owned(),
        servers,
    }])
}

/// Cursor's fields turned into plexus's.
pub(super) fn adapt(object: &mut Map<String, Value>, server: &str, notes: &mut Vec<ImportNote>) {
    drop_field(
        object,
        "envFile",
        server,
        "plexus does not read env files; put the variables in \"env\"",
        notes,
    );
    normalize_env(object, server, notes);
    let Some(Value::Object(auth)) = object.get("auth") else {
        return;
    };
    if object.contains_key("oauth") {
        return;
    }
    let mut oauth = Map::new();
    for (from, to) in [
        ("CLIENT_ID", "clientId"),
        ("CLIENT_SECRET", "clientSecret"),
        ("scopes", "scopes"),
    ] {
        if let Some(value) = auth.get(from) {
            oauth.insert(to.to_owned(), value.clone());
        }
    }
    let left_out: Vec<&str> = auth
        .keys()
        .map(String::as_str)
        .filter(|key| !matches!(*key, "CLIENT_ID" | "CLIENT_SECRET" | "scopes"))
        .collect();
    if !left_out.is_empty() {
        notes.push(note(
            NoteKind::Skipped,
            server,
            Some("auth"),
            format!("{} not used by plexus; left out", left_out.join(", ")),
        ));
    }
    object.remove("auth");
    object.insert("oauth".to_owned(), Value::Object(oauth));
    notes.push(note(
        NoteKind::Changed,
        server,
        Some("auth"),
        "moved to \"oauth\" (CLIENT_ID as clientId, CLIENT_SECRET as clientSecret)",
    ));
}
