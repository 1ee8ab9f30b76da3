//! VS Code: `.vscode/mcp.json` (`servers`, `inputs`), or a user `settings.json` (`mcp.servers`,
//! `mcp.inputs`); `${input:id}` prompts, `${env:NAME}` and `${workspaceFolder}` variables.

use serde_json::{Map, Value};

use super::convert::{InputDecl, drop_field, normalize_env};
use super::{Group, ImportNote, NoteKind, ShapeProblem, object_at};
use crate::json::{describe, index_path};

/// Where the file keeps its `servers` and `inputs`: the top level, or `mcp` in a settings file.
fn section(top: &Value) -> (&Value, &'static str) {
    match top.get("mcp") {
        Some(mcp) if top.get("servers").is_none() => (mcp, "mcp"),
        _ => (top, ""),
    }
}

/// The servers of a VS Code `mcp.json`.
pub(super) fn groups(top: &Value) -> Result<Vec<Group<'_>>, ShapeProblem> {
    let (section, path) = section(top);
    let servers = object_at(section, path, "servers")?.ok_or(ShapeProblem::NoServers {
        key: "servers",
        expected: "VS Code's .vscode/mcp.json",
    })?;
    Ok(vec![Group {
        origin: if path.is_empty() {
            "servers".to_owned()
        } else {
            "mcp.servers".to_owned()
        },
        servers,
    }])
}

/// The declared inputs; malformed ones are noted and left out.
pub(super) fn inputs(top: &Value, notes: &mut Vec<ImportNote>) -> Vec<InputDecl> {
    let (section, path) = section(top);
    let key = if path.is_empty() {
        "inputs".to_owned()
    } else {
        "mcp.inputs".to_owned()
    };
    let mut skip = |field: String, message: String| {
        notes.push(ImportNote {
            kind: NoteKind::Skipped,
            server: None,
            field: Some(field),
            message,
        });
    };
    let items = match section.get("inputs") {
        None => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => {
            skip(key, format!("expected an array of inputs, found {}", describe(other)));
            return Vec::new();
        }
    };
    let mut declared = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let field = index_path(&key, index);
        let Some(id) = item.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) else {
            skip(field, "an input needs a non-empty string \"id\"".to_owned());
            continue;
        };
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("promptString");
        if kind == "command" {
            skip(
                field,
                "a \"command\" input runs a VS Code command, which plexus cannot; its variable must be set by hand"
                    .to_owned(),
            );
        }
        declared.push(InputDecl {
            id: id.to_owned(),
            description: item.get("description").and_then(Value::as_str).map(str::to_owned),
            password: item.get("password").and_then(Value::as_bool).unwrap_or(false),
            default: item.get("default").and_then(Value::as_str).map(str::to_owned),
        });
    }
    declared
}

/// VS Code's fields turned into plexus's.
pub(super) fn adapt(object: &mut Map<String, Value>, server: &str, notes: &mut Vec<ImportNote>) {
    drop_field(
        object,
        "envFile",
        server,
        "plexus does not read env files; put the variables in \"env\"",
        notes,
    );
    drop_field(
        object,
        "dev",
        server,
        "VS Code's development mode (watch and debug) has no plexus equivalent",
        notes,
    );
    normalize_env(object, server, notes);
}
