//! A tool as the host's pool sees it.

use plexus_protocol::{TaskSupport, Tool, ToolAnnotations, ToolExecution};
use serde::Serialize;

use crate::naming::qualified_name;

/// The longest description handed to the host, in characters (the marker included).
pub const MAX_DESCRIPTION_CHARS: usize = plexus_pool::text::MAX_TEXT_CHARS;
pub use plexus_pool::text::TRUNCATION_MARKER;

/// One MCP tool as an entry of the host's tool pool. Serializes to the stable JSON shape the
/// `plexus tools --json` command prints.
///
/// The flags come from the tool's annotations, with the spec's defaults where a hint is
/// absent: not read-only, destructive (when not read-only), not idempotent, open world. They
/// inform a host's interface and scheduling; they never skip a permission check (every MCP
/// tool asks, see [`crate::permission`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::struct_excessive_bools)] // each flag is an independent annotation of the tool
pub struct ToolEntry {
    /// `mcp__<server>__<tool>` (see [`crate::naming`]).
    pub name: String,
    /// The server's configured name.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// The display name: the tool's `title`, else `annotations.title`, else its name.
    pub title: String,
    /// The description, at most [`MAX_DESCRIPTION_CHARS`] characters.
    pub description: String,
    /// The JSON Schema of the arguments, as the server sent it.
    pub input_schema: serde_json::Value,
    /// The JSON Schema of `structuredContent`, as the server sent it, if any.
    pub output_schema: Option<serde_json::Value>,
    /// `readOnlyHint` (default false): the tool does not modify its environment.
    pub read_only: bool,
    /// `destructiveHint` (default true), for a tool that is not read-only.
    pub destructive: bool,
    /// `openWorldHint` (default true): the tool reaches outside entities.
    pub open_world: bool,
    /// `idempotentHint` (default false).
    pub idempotent: bool,
    /// Whether the host may run it concurrently with other tools (read-only tools are).
    pub concurrency_safe: bool,
    /// `execution.taskSupport`: `forbidden` (the default), `optional` or `required`.
    pub task_support: String,
    /// The tool's `execution` object exactly as the server sent it (unknown fields included),
    /// for a host that lists the tool to its own clients (a gateway); `None` when absent. Not
    /// part of the `--json` shape, which has [`task_support`](Self::task_support).
    #[serde(skip)]
    pub execution: Option<ToolExecution>,
}

impl ToolEntry {
    /// The tool as a host lists it to its own clients (a gateway's `tools/list`): the qualified
    /// name, the title, the truncated description, the annotations with the spec's defaults
    /// applied, the schemas and the `execution` object as the server sent them.
    pub fn to_tool(&self) -> Tool {
        let object = |schema: &serde_json::Value| schema.as_object().cloned().unwrap_or_default();
        Tool {
            name: self.name.clone(),
            title: Some(self.title.clone()),
            description: Some(self.description.clone()),
            input_schema: object(&self.input_schema),
            output_schema: self.output_schema.as_ref().map(object),
            annotations: Some(ToolAnnotations {
                title: Some(self.title.clone()),
                read_only_hint: Some(self.read_only),
                destructive_hint: Some(self.destructive),
                idempotent_hint: Some(self.idempotent),
                open_world_hint: Some(self.open_world),
                ..ToolAnnotations::default()
            }),
            execution: self.execution.clone(),
            ..Tool::default()
        }
    }

    /// The entry for `tool` of `server`, under its default name ([`qualified_name`]).
    pub fn new(server: &str, tool: &Tool) -> Self {
        ToolEntry::named(qualified_name(server, &tool.name), server, tool)
    }

    /// The entry for `tool` of `server` under `name` (from a [`ToolIndex`](crate::ToolIndex)).
    pub fn named(name: String, server: &str, tool: &Tool) -> Self {
        // No annotations at all: every hint takes its default.
        let annotations = tool.annotations.clone().unwrap_or_default();
        let read_only = annotations.is_read_only();
        let task_support = tool
            .execution
            .as_ref()
            .and_then(|execution| execution.task_support.clone())
            .unwrap_or(TaskSupport::Forbidden);
        ToolEntry {
            name,
            server: server.to_owned(),
            tool: tool.name.clone(),
            title: tool.display_name().to_owned(),
            description: truncate_description(tool.description.as_deref().unwrap_or_default()).into_owned(),
            input_schema: serde_json::Value::Object(tool.input_schema.clone()),
            output_schema: tool.output_schema.clone().map(serde_json::Value::Object),
            read_only,
            destructive: annotations.is_destructive(),
            open_world: annotations.is_open_world(),
            idempotent: annotations.is_idempotent(),
            concurrency_safe: read_only,
            task_support: task_support.as_str().to_owned(),
            execution: tool.execution.clone(),
        }
    }

    /// Whether the tool must be called as a task (a host without task support cannot call it).
    pub fn requires_task(&self) -> bool {
        self.task_support == TaskSupport::Required.as_str()
    }
}

/// Whether `tool` must be called as a task (`execution.taskSupport` is `required`).
pub fn requires_task(tool: &Tool) -> bool {
    tool.execution
        .as_ref()
        .and_then(|execution| execution.task_support.as_ref())
        .is_some_and(|support| *support == TaskSupport::Required)
}

/// Cuts a description to at most [`MAX_DESCRIPTION_CHARS`] characters, ending a cut one with
/// [`TRUNCATION_MARKER`]. Never splits a character.
pub fn truncate_description(description: &str) -> std::borrow::Cow<'_, str> {
    plexus_pool::text::truncate_chars(description, MAX_DESCRIPTION_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn tool(value: serde_json::Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn absent_hints_take_the_spec_defaults() {
        let plain = ToolEntry::new("s", &tool(json!({"name": "t", "inputSchema": {"type": "object"}})));
        assert_eq!(
            (
                plain.read_only,
                plain.destructive,
                plain.idempotent,
                plain.open_world,
                plain.concurrency_safe
            ),
            (false, true, false, true, false)
        );
        let reader = ToolEntry::new(
            "s",
            &tool(
                json!({"name": "r", "inputSchema": {}, "annotations": {"readOnlyHint": true, "openWorldHint": false, "title": "Reader"}}),
            ),
        );
        assert_eq!(
            (reader.read_only, reader.destructive, reader.open_world),
            (true, false, false)
        );
        assert_eq!(reader.title, "Reader");
        assert_eq!(reader.task_support, "forbidden");
        assert_eq!(reader.execution, None);
    }

    #[test]
    fn a_listed_tool_has_its_qualified_name_and_every_hint_spelled_out() {
        let entry = ToolEntry::new(
            "s",
            &tool(json!({
                "name": "t", "description": "Does t.", "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
                "execution": {"taskSupport": "optional", "future": 1}, "_meta": {"private": true}
            })),
        );
        assert_eq!(
            serde_json::to_value(entry.to_tool()).unwrap(),
            json!({
                "name": "mcp__s__t", "title": "t", "description": "Does t.",
                "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
                "annotations": {"title": "t", "readOnlyHint": true, "destructiveHint": false,
                    "idempotentHint": false, "openWorldHint": true},
                "execution": {"taskSupport": "optional", "future": 1}
            })
        );
    }

    #[test]
    fn schemas_pass_through_as_sent() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": {"a": {"$anchor": "a", "type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"}},
            "additionalProperties": false, "allOf": [{"anyOf": [{"required": ["x"]}]}],
            "if": {"required": ["x"]}, "then": {}, "else": {}
        });
        let entry = ToolEntry::new(
            "s",
            &tool(
                json!({"name": "t", "inputSchema": schema, "outputSchema": {"type": "object"}, "execution": {"taskSupport": "required", "x-later": [1]}}),
            ),
        );
        assert_eq!(entry.input_schema, schema);
        assert_eq!(entry.output_schema, Some(json!({"type": "object"})));
        assert!(entry.requires_task());
        // The execution object too, with a field this crate does not know.
        assert_eq!(
            serde_json::to_value(&entry.execution).unwrap(),
            json!({"taskSupport": "required", "x-later": [1]})
        );
    }

    proptest! {
        #[test]
        fn truncation_is_bounded_and_a_prefix(text in ".{0,3000}") {
            let cut = truncate_description(&text);
            prop_assert!(cut.chars().count() <= MAX_DESCRIPTION_CHARS);
            if text.chars().count() <= MAX_DESCRIPTION_CHARS {
                prop_assert_eq!(cut.as_ref(), text.as_str());
            } else {
                let body = cut.strip_suffix(TRUNCATION_MARKER).unwrap();
                prop_assert!(text.starts_with(body));
            }
        }
    }
}
