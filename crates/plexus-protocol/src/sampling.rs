//! Sampling: a server asks the client's model for a message (`sampling/createMessage`).

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::content::SamplingContentBlock;
use crate::tasks::TaskMetadata;
use crate::tools::Tool;
use crate::{JsonObject, RequestMeta, Role};

/// The content of a sampling message: one block, or (since 2025-11-25) several.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one block is the common case: boxing it would cost an allocation each.
pub enum SamplingContent {
    /// One block (the only form before 2025-11-25).
    Single(SamplingContentBlock),
    /// Several blocks (since 2025-11-25; e.g. parallel tool uses).
    Multiple(Vec<SamplingContentBlock>),
}

impl SamplingContent {
    /// The blocks, one or many.
    pub fn blocks(&self) -> &[SamplingContentBlock] {
        match self {
            SamplingContent::Single(block) => std::slice::from_ref(block),
            SamplingContent::Multiple(blocks) => blocks,
        }
    }
}

impl From<SamplingContentBlock> for SamplingContent {
    fn from(block: SamplingContentBlock) -> Self {
        SamplingContent::Single(block)
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;

        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = SamplingContent;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sampling content block or an array of them")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SamplingContent, A::Error> {
                SamplingContentBlock::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(SamplingContent::Single)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<SamplingContent, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(SamplingContent::Multiple)
            }
        }

        deserializer.deserialize_any(ContentVisitor)
    }
}

/// A message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: SamplingContent,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A hint for model selection: a name or name fragment (`"claude-3-5-sonnet"`, `"sonnet"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    /// The name or fragment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The server's preferences for model selection; priorities range from 0 to 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model hints, in order of preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much low cost matters.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub cost_priority: Option<f64>,
    /// How much speed matters.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub speed_priority: Option<f64>,
    /// How much capability matters.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub intelligence_priority: Option<f64>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// Which MCP context the client should add to the prompt (`includeContext`; soft-deprecated in
    /// 2025-11-25 unless the client declares `sampling.context`).
    pub enum IncludeContext {
        /// No context.
        None = "none",
        /// Context from the requesting server.
        ThisServer = "thisServer",
        /// Context from every connected server.
        AllServers = "allServers",
    }
}

open_string_enum! {
    /// How the model may use the offered tools (`toolChoice.mode`).
    pub enum ToolChoiceMode {
        /// The model decides (the default).
        Auto = "auto",
        /// The model must use at least one tool.
        Required = "required",
        /// The model must not use tools.
        None = "none",
    }
}

/// How the model may use the tools of a sampling request (since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode (absent means auto).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `sampling/createMessage` (received by the client).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Model selection preferences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the server asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which MCP context to include.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// The sampling temperature.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub temperature: Option<f64>,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// Sequences that stop sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata, passed through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may use (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use the tools (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Asks for task-augmented execution (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// Why sampling stopped (`stopReason`, an open set: providers add their own).
    pub enum StopReason {
        /// The model ended its turn.
        EndTurn = "endTurn",
        /// A stop sequence was met.
        StopSequence = "stopSequence",
        /// The token limit was reached.
        MaxTokens = "maxTokens",
        /// The model wants to use tools (since 2025-11-25).
        ToolUse = "toolUse",
    }
}

/// The result of `sampling/createMessage` (sent by the client).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who said it (the assistant).
    pub role: Role,
    /// What the model said.
    pub content: SamplingContent,
    /// The model that answered.
    pub model: String,
    /// Why sampling stopped, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CreateMessageResult {
    /// An assistant message from `model` with `content`.
    pub fn new(model: impl Into<String>, content: impl Into<SamplingContent>, stop_reason: Option<StopReason>) -> Self {
        CreateMessageResult {
            role: Role::Assistant,
            content: content.into(),
            model: model.into(),
            stop_reason,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}
