//! Claude Desktop: `claude_desktop_config.json`, servers under `mcpServers`, values literal.

use serde_json::Value;

use super::{Group, object_at};

/// The servers of a Claude Desktop config file.
pub(super) fn groups(top: &Value) -> Result<Vec<Group<'_>>, String> {
    let servers = object_at(top, "", "mcpServers")?
        .ok_or_else(|| "no \"mcpServers\" object; is this Claude Desktop's claude_desktop_config.json?".to_owned())?;
    Ok(vec![Group {
        origin: "mcpServers".to_owned(),
        servers,
    }])
}
