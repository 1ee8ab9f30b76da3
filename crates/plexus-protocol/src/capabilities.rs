//! Client and server capabilities, exchanged in `initialize`.
//!
//! A capability the schema models as an empty object (`"logging": {}`) is an `Option<JsonObject>`
//! here: `Some` (with whatever keys it carried) means present, `None` means absent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// What a client supports; sent in `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<BTreeMap<String, JsonObject>>,
    /// Present if the client can list roots (`roots/list`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Present if the client can sample from a model (`sampling/createMessage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Present if the client can ask its user for input (`elicitation/create`, since 2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Present if the client supports task-augmented requests (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ClientTasksCapability>,
    /// Capabilities this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The client's `roots` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// Whether the client sends `notifications/roots/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The client's `sampling` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingCapability {
    /// Present if the client honours `includeContext` other than `"none"` (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Present if the client supports `tools` and `toolChoice` in sampling (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The client's `elicitation` capability (since 2025-06-18; modes since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCapability {
    /// Present if the client supports form-mode elicitation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// Present if the client supports URL-mode elicitation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationCapability {
    /// Whether form mode is supported: declared, or implied by an empty capability (`"elicitation": {}`,
    /// the only form before 2025-11-25).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported (declared explicitly).
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// The client's `tasks` capability (since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTasksCapability {
    /// Present if the client supports `tasks/list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// Present if the client supports `tasks/cancel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// Which server-to-client requests may be task-augmented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<ClientTaskRequests>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The server-to-client requests a client accepts as task-augmented.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTaskRequests {
    /// Sampling requests (`createMessage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingTaskRequests>,
    /// Elicitation requests (`create`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationTaskRequests>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Task support for `sampling/*` requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingTaskRequests {
    /// Present if `sampling/createMessage` may be task-augmented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_message: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Task support for `elicitation/*` requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationTaskRequests {
    /// Present if `elicitation/create` may be task-augmented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// What a server supports; received in the `initialize` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<BTreeMap<String, JsonObject>>,
    /// Present if the server sends log messages (`logging/setLevel`, `notifications/message`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Present if the server answers `completion/complete` (since 2025-03-26).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Present if the server offers prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Present if the server offers resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Present if the server offers tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Present if the server supports task-augmented requests (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ServerTasksCapability>,
    /// Capabilities this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ServerCapabilities {
    /// The settings of the extension `id` when `capabilities.extensions` declares it (an object;
    /// empty when it has none), else `None`.
    pub fn extension(&self, id: &str) -> Option<&JsonObject> {
        self.extra.get("extensions")?.as_object()?.get(id)?.as_object()
    }

    /// Whether `tools/call` may be task-augmented in the `initialize` era
    /// (`tasks.requests.tools.call`, 2025-11-25).
    pub fn has_tool_call_tasks(&self) -> bool {
        self.tasks
            .as_ref()
            .and_then(|tasks| tasks.requests.as_ref())
            .and_then(|requests| requests.tools.as_ref())
            .is_some_and(|tools| tools.call.is_some())
    }
}

/// The server's `prompts` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Whether the server sends `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The server's `resources` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether the client may subscribe to updates of single resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server sends `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The server's `tools` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The server's `tasks` capability (since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTasksCapability {
    /// Present if the server supports `tasks/list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// Present if the server supports `tasks/cancel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// Which client-to-server requests may be task-augmented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<ServerTaskRequests>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The client-to-server requests a server accepts as task-augmented.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTaskRequests {
    /// Tool requests (`call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolTaskRequests>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Task support for `tools/*` requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolTaskRequests {
    /// Present if `tools/call` may be task-augmented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}
