//! The `initialize` handshake.

use serde::{Deserialize, Serialize};

use crate::version::ProtocolVersion;
use crate::{ClientCapabilities, Implementation, JsonObject, RequestMeta, ServerCapabilities};

/// The params of `initialize`: the client's protocol version, capabilities and identity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The version the client offers (normally [`ProtocolVersion::LATEST`]).
    pub protocol_version: String,
    /// What the client supports.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl InitializeRequestParams {
    /// The params that offer `version`.
    pub fn new(version: ProtocolVersion, capabilities: ClientCapabilities, client_info: Implementation) -> Self {
        InitializeRequestParams {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            client_info,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The result of `initialize`: the version the server chose, its capabilities and identity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose; pass it to [`ProtocolVersion::negotiate`]. Kept as a string
    /// because a server may answer with a version this crate does not know.
    pub protocol_version: String,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use the server: a hint for the model's system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}
