//! Claude Code: `~/.claude.json` (user servers under `mcpServers`, each project's under
//! `projects["<dir>"].mcpServers`), or a project's `.mcp.json`. Same entry format and `${VAR}`
//! syntax as plexus.

use serde_json::Value;

use super::{Group, ImportContext, ShapeProblem, object_at};
use crate::json::quote;

/// The user's servers and the current project's, user first (the project's win).
pub(super) fn groups<'v>(top: &'v Value, context: &ImportContext) -> Result<Vec<Group<'v>>, ShapeProblem> {
    let mut groups = Vec::new();
    if let Some(servers) = object_at(top, "", "mcpServers")? {
        groups.push(Group {
            origin: "mcpServers".to_owned(),
            servers,
        });
    }
    let Some(projects) = top.get("projects") else {
        return if groups.is_empty() {
            Err(ShapeProblem::NoServers {
                key: "mcpServers",
                expected: "Claude Code's ~/.claude.json or a .mcp.json",
            })
        } else {
            Ok(groups)
        };
    };
    let mut keys = vec![context.project_dir.to_string_lossy().into_owned()];
    if let Ok(canonical) = context.project_dir.canonicalize() {
        keys.push(canonical.to_string_lossy().into_owned());
    }
    for key in keys {
        let Some(project) = projects.get(&key) else {
            continue;
        };
        let path = format!("projects[{}]", quote(&key));
        if let Some(servers) = object_at(project, &path, "mcpServers")? {
            groups.push(Group {
                origin: format!("{path}.mcpServers"),
                servers,
            });
        }
        break;
    }
    Ok(groups)
}
