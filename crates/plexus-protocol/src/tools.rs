//! Tools: definitions, annotations, listing and calling.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::ContentBlock;
use crate::tasks::TaskMetadata;
use crate::{Icon, InputResponses, JsonObject, RequestMeta};

/// A tool the server offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The programmatic name, used in `tools/call`.
    pub name: String,
    /// A display name (since 2025-06-18). Display precedence: `title`, `annotations.title`, `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does: a hint to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the arguments (an object schema), kept as the server sent it.
    pub input_schema: JsonObject,
    /// The JSON Schema of `structuredContent` in results (since 2025-06-18), kept as the server sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints (since 2025-03-26).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons for a user interface (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Execution properties (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Tool {
    /// The name to show a person: `title`, else `annotations.title`, else `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(&self.name)
    }
}

/// Hints about a tool's behaviour (since 2025-03-26). They are hints from the server, not guarantees:
/// a client must not trust them from a server it does not trust.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default true; meaningful only when not read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolAnnotations {
    /// `readOnlyHint`, or its default (false).
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// `destructiveHint`, or its default (true); always false for a read-only tool.
    pub fn is_destructive(&self) -> bool {
        !self.is_read_only() && self.destructive_hint.unwrap_or(true)
    }

    /// `idempotentHint`, or its default (false).
    pub fn is_idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }

    /// `openWorldHint`, or its default (true).
    pub fn is_open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }
}

open_string_enum! {
    /// Whether a tool may be called as a task (`execution.taskSupport`).
    pub enum TaskSupport {
        /// The tool must not be called as a task (the default).
        Forbidden = "forbidden",
        /// The tool may be called as a task or directly.
        Optional = "optional",
        /// The tool must be called as a task.
        Required = "required",
    }
}

/// Execution properties of a tool (since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool supports task-augmented calls (absent means forbidden).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

paginated_result!(
    cacheable
    /// The result of `tools/list`: one page of tools.
    ListToolsResult,
    /// The tools on this page.
    tools: Tool
);

/// The params of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool's name.
    pub name: String,
    /// The arguments, matching the tool's `inputSchema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Asks for task-augmented execution (since 2025-11-25; the result is then a `CreateTaskResult`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Stateless era: the answers to the input requests of an `input_required` result, on the retry
    /// (not written when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// Stateless era: the `requestState` of the `input_required` result, echoed byte for byte on
    /// the retry (not written when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata (progress token, the stateless era's envelope, and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolRequestParams {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        CallToolRequestParams {
            name: name.into(),
            arguments,
            ..Self::default()
        }
    }
}

/// The result of `tools/call`. A tool's own failure is a result with `isError: true`, not a JSON-RPC
/// error, so that the model can see it. In the stateless era the server may answer with an
/// [`InputRequiredResult`](crate::InputRequiredResult) instead; see
/// [`ResultOrInputRequired`](crate::ResultOrInputRequired).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// `resultType` (the stateless era): [`ResultType::Complete`](crate::ResultType::Complete) on a
    /// final result (absent from servers of earlier revisions, which means the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<crate::ResultType>,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result (since 2025-06-18), matching the tool's `outputSchema` if it has one.
    /// An object in 2025-06-18 and 2025-11-25; any JSON value in later revisions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed (absent means false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CallToolResult {
    /// Whether the tool reported a failure.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }
}
