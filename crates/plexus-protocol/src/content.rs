//! Content blocks: what tool results, prompt messages and sampling messages carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::resources::{Resource, ResourceContents};
use crate::{Annotations, JsonObject};

/// Text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display and use hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TextContent {
    /// A text block without annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            ..Self::default()
        }
    }
}

/// Base64-encoded binary media with its MIME type: the shape of [`ImageContent`] and [`AudioContent`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaContent {
    /// The base64-encoded bytes.
    pub data: String,
    /// The MIME type (`image/png`, `audio/wav`, ...).
    pub mime_type: String,
    /// Display and use hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl MediaContent {
    /// A media block from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        MediaContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Self::default()
        }
    }
}

/// An image (`"type": "image"`).
pub type ImageContent = MediaContent;

/// Audio (`"type": "audio"`, since 2025-03-26).
pub type AudioContent = MediaContent;

/// The contents of a resource, embedded in a message (`"type": "resource"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's contents.
    pub resource: ResourceContents,
    /// Display and use hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

tagged_enum! {
    /// A content block of a tool result, prompt message or embedded message, tagged by `type`.
    ///
    /// Encode and decode blocks through this enum: the variant structs do not carry the `type` field.
    pub enum ContentBlock {
        what: "content block",
        tag: "type";
        /// `"text"`.
        Text(TextContent) = "text",
        /// `"image"`.
        Image(ImageContent) = "image",
        /// `"audio"` (since 2025-03-26).
        Audio(AudioContent) = "audio",
        /// `"resource_link"`: a reference to a resource the client may read (since 2025-06-18).
        ResourceLink(Resource) = "resource_link",
        /// `"resource"`: the contents of a resource, embedded.
        Resource(EmbeddedResource) = "resource",
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(text) => Some(&text.text),
            _ => None,
        }
    }
}

/// A model's request to call a tool, inside a sampling message (`"type": "tool_use"`, since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// The id of this tool use, echoed by the matching [`ToolResultContent::tool_use_id`].
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments.
    pub input: JsonObject,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of a tool use, inside a sampling message (`"type": "tool_result"`, since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The [`ToolUseContent::id`] this answers.
    pub tool_use_id: String,
    /// The result's content.
    pub content: Vec<ContentBlock>,
    /// The structured result, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool use failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

tagged_enum! {
    /// A content block of a sampling message, tagged by `type`.
    pub enum SamplingContentBlock {
        what: "sampling content block",
        tag: "type";
        /// `"text"`.
        Text(TextContent) = "text",
        /// `"image"`.
        Image(ImageContent) = "image",
        /// `"audio"` (since 2025-03-26).
        Audio(AudioContent) = "audio",
        /// `"tool_use"` (since 2025-11-25).
        ToolUse(ToolUseContent) = "tool_use",
        /// `"tool_result"` (since 2025-11-25).
        ToolResult(ToolResultContent) = "tool_result",
    }
}

impl SamplingContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        SamplingContentBlock::Text(TextContent::new(text))
    }
}
