//! Protocol versions, version negotiation, and which features each version has.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The HTTP header that carries the negotiated version on every request after `initialize` (Streamable
/// HTTP, since 2025-06-18).
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";

/// An MCP protocol revision this crate speaks. Ordered by date: a later revision compares greater.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first revision (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, tool annotations, audio content, completions capability.
    V2025_03_26,
    /// 2025-06-18: structured tool output, elicitation, resource links, titles.
    V2025_06_18,
    /// 2025-11-25: icons, URL-mode elicitation, tool use in sampling, tasks.
    V2025_11_25,
}

impl ProtocolVersion {
    /// The newest revision: what a client offers in `initialize`.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// Every supported revision, newest first.
    pub const SUPPORTED: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The revision as spelled on the wire (`"2025-11-25"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
        }
    }

    /// Decides the session's version from the one the server answered `initialize` with, given that
    /// the client offered [`ProtocolVersion::LATEST`]: a server that supports the offer echoes it,
    /// one that does not answers with another version it supports, and the client accepts the
    /// answer if it supports it too.
    pub fn negotiate(server_version: &str) -> Result<ProtocolVersion, NegotiationError> {
        Self::negotiate_among(&Self::SUPPORTED, server_version)
    }

    /// What a server answers a client's `initialize` with: the version the client asked for
    /// when it is supported, else the newest (the client then decides whether it can go on).
    pub fn answer(requested: &str) -> ProtocolVersion {
        requested
            .parse::<ProtocolVersion>()
            .ok()
            .filter(|version| Self::SUPPORTED.contains(version))
            .unwrap_or(Self::LATEST)
    }

    /// [`ProtocolVersion::negotiate`] for a client that supports only `supported` (e.g. pinned by
    /// configuration).
    pub fn negotiate_among(
        supported: &[ProtocolVersion],
        server_version: &str,
    ) -> Result<ProtocolVersion, NegotiationError> {
        server_version
            .parse::<ProtocolVersion>()
            .ok()
            .filter(|version| supported.contains(version))
            .ok_or_else(|| NegotiationError::UnsupportedVersion {
                server_version: server_version.to_owned(),
                supported: supported.to_vec(),
            })
    }

    /// Streamable HTTP exists (since 2025-03-26); before it, remote servers speak HTTP+SSE.
    pub fn has_streamable_http(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Tools carry `annotations` (since 2025-03-26).
    pub fn has_tool_annotations(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Content blocks may be `audio` (since 2025-03-26).
    pub fn has_audio_content(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Servers declare the `completions` capability (since 2025-03-26).
    pub fn has_completions_capability(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Progress notifications carry a `message` (since 2025-03-26).
    pub fn has_progress_message(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// JSON-RPC batches are allowed (2025-03-26 only: added then, removed in 2025-06-18).
    pub fn has_json_rpc_batching(self) -> bool {
        self == ProtocolVersion::V2025_03_26
    }

    /// Tools have `outputSchema` and results `structuredContent` (since 2025-06-18).
    pub fn has_structured_content(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Servers may ask the user for input with `elicitation/create` (since 2025-06-18).
    pub fn has_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Content blocks may be `resource_link` (since 2025-06-18).
    pub fn has_resource_links(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Tools, prompts, resources and implementations carry a display `title` (since 2025-06-18).
    pub fn has_titles(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// `completion/complete` takes a `context` of resolved arguments (since 2025-06-18).
    pub fn has_completion_context(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// HTTP requests after `initialize` carry [`PROTOCOL_VERSION_HEADER`] (since 2025-06-18).
    pub fn has_protocol_version_header(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Elicitation may send the user to a URL (`mode: "url"`, since 2025-11-25).
    pub fn has_url_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// Sampling requests may offer tools, and messages carry tool use and results (since 2025-11-25).
    pub fn has_sampling_tools(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// Implementations, tools, prompts and resources carry `icons` (since 2025-11-25).
    pub fn has_icons(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// Requests may be task-augmented, with the `tasks/*` methods (since 2025-11-25).
    pub fn has_tasks(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no protocol revision this crate speaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown MCP protocol version {version:?} (known: {})", list(&ProtocolVersion::SUPPORTED))]
pub struct ParseVersionError {
    /// The string that was given.
    pub version: String,
}

impl FromStr for ProtocolVersion {
    type Err = ParseVersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::SUPPORTED
            .into_iter()
            .find(|version| version.as_str() == s)
            .ok_or_else(|| ParseVersionError { version: s.to_owned() })
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let version = String::deserialize(deserializer)?;
        version.parse().map_err(serde::de::Error::custom)
    }
}

/// Version negotiation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The server answered with a version the client does not support.
    #[error(
        "the server answered initialize with protocol version {server_version:?}, which this client does not support (supported: {})",
        list(supported)
    )]
    UnsupportedVersion {
        /// The version the server answered with.
        server_version: String,
        /// The versions the client supports, newest first.
        supported: Vec<ProtocolVersion>,
    },
}

/// `2025-11-25, 2025-06-18, ...`
fn list(versions: &[ProtocolVersion]) -> String {
    versions
        .iter()
        .map(|version| version.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
