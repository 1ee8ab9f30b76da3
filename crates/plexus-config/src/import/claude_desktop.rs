//! Claude Desktop: `claude_desktop_config.json`, servers under `mcpServers`, values literal.

use serde_json::Value;

use super::{Group, ShapeProblem, object_at};

/// The servers of a Claude Desktop config file.
pub(super) fn groups(top: &Value) -> Result<Vec<Group<'_>>, ShapeProblem> {
    let servers = object_at(top, "", "mcpServers")?.ok_or(ShapeProblem::NoServers {
        key: "mcpServers",
        expected: "Claude Desktop's claude_desktop_config.json",
    })?;
    Ok(vec![Group {
        origin: "mcpServers".to_owned(),
        servers,
    }])
}
