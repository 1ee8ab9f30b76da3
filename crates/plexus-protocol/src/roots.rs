//! Roots: the directories a client lets servers work in.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// A root directory or file the server may operate on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// The root's URI (a `file://` URI in current revisions).
    pub uri: String,
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Root {
    /// A root at `uri` with an optional display name.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Root {
            uri: uri.into(),
            name,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The result of `roots/list` (sent by the client).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}
