//! `server/discover` (stateless era): what a server supports, asked without a handshake.

use serde::{Deserialize, Serialize};

use crate::version::{NegotiationError, ProtocolVersion};
use crate::{CacheScope, EnvelopeError, Implementation, JsonObject, ResultType, ServerCapabilities, envelope};

/// The params of `server/discover`: only `_meta`, which carries the request envelope.
pub type DiscoverRequestParams = crate::RequestParams;

/// The result of `server/discover`: the versions, capabilities and instructions of a stateless-era
/// server. Its identity is in `_meta` ([`DiscoverResult::server_info`]); a top-level `serverInfo`
/// (which some servers send) is kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// `resultType` (always `complete` for this method; absent from older servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The protocol versions the server supports, as it spells them (unknown ones included).
    pub supported_versions: Vec<String>,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// How to use the server: a hint for the model's system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long this result stays fresh, in milliseconds; read it through
    /// [`DiscoverResult::ttl_ms()`], which treats an absent or negative value as 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse this result from a cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata (the server's identity under `io.modelcontextprotocol/serverInfo`), kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl DiscoverResult {
    /// The server's identity from `_meta`, if it gave one.
    pub fn server_info(&self) -> Result<Option<Implementation>, EnvelopeError> {
        envelope::server_info(self.meta.as_ref())
    }

    /// The stateless-era version to speak with this server: the newest of
    /// [`ProtocolVersion::STATELESS`] it supports. An error means it supports none (a server that
    /// lists only initialize-era versions is spoken to through `initialize`).
    pub fn choose_version(&self) -> Result<ProtocolVersion, NegotiationError> {
        ProtocolVersion::choose_stateless(&self.supported_versions)
    }
}
