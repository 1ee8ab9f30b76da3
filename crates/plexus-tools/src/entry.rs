//! A tool as the host's pool sees it.

use plexus_protocol::Tool;
use serde::Serialize;

use crate::naming::{qualified_name, truncate_description};

/// One MCP tool as an entry of the host's tool pool. Serializes to the stable JSON shape the
/// `plexus tools --json` command prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::struct_excessive_bools)] // each flag is an independent annotation of the tool
pub struct ToolEntry {
    /// `mcp__<server>__<tool>`.
    pub name: String,
    /// The server's configured name.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// The display name: the tool's `title`, else `annotations.title`, else its name.
    pub title: String,
    /// The description, at most 2048 characters.
    pub description: String,
    /// The JSON Schema of the arguments.
    pub input_schema: serde_json::Value,
    /// `readOnlyHint`: the tool does not modify its environment.
    pub read_only: bool,
    /// `destructiveHint` (meaningful only when not read-only; the spec's default is true, but
    /// an MCP tool is reported destructive only when it says so).
    pub destructive: bool,
    /// `openWorldHint`: the tool reaches outside entities.
    pub open_world: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
    /// Whether the host may run it concurrently with other tools (read-only tools are).
    pub concurrency_safe: bool,
}

impl ToolEntry {
    /// The entry for `tool` of `server`.
    pub fn new(server: &str, tool: &Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        let hint = |f: fn(&plexus_protocol::ToolAnnotations) -> Option<bool>| annotations.and_then(f).unwrap_or(false);
        let read_only = hint(|a| a.read_only_hint);
        let title = tool
            .title
            .clone()
            .or_else(|| annotations.and_then(|a| a.title.clone()))
            .unwrap_or_else(|| tool.name.clone());
        ToolEntry {
            name: qualified_name(server, &tool.name),
            server: server.to_owned(),
            tool: tool.name.clone(),
            title,
            description: truncate_description(tool.description.as_deref().unwrap_or_default()).into_owned(),
            input_schema: serde_json::to_value(&tool.input_schema).unwrap_or(serde_json::Value::Null),
            read_only,
            destructive: hint(|a| a.destructive_hint),
            open_world: hint(|a| a.open_world_hint),
            idempotent: hint(|a| a.idempotent_hint),
            concurrency_safe: read_only,
        }
    }
}
