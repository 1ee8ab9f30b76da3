//! Protocol versions, their [`Era`], version negotiation, and which features each version has.
//!
//! MCP has two eras. In the **initialize era** (2024-11-05 to 2025-11-25) a session starts with
//! `initialize`, in which the client offers [`ProtocolVersion::LATEST`] and accepts the server's
//! answer with [`ProtocolVersion::negotiate`]. In the **stateless era** (2026-07-28 on) there is no
//! handshake: every request names its version in its `_meta` envelope
//! ([`RequestEnvelope`](crate::RequestEnvelope)), a server that does not speak it answers `-32022`
//! with the versions it does, and the client picks one with [`ProtocolVersion::choose_stateless`].
//! The two sets never mix: [`ProtocolVersion::SUPPORTED`], `negotiate` and `answer` are the
//! initialize era's only, [`ProtocolVersion::STATELESS`] the stateless era's.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The HTTP header that carries the negotiated version on every request after `initialize` (Streamable
/// HTTP, since 2025-06-18); in the stateless era, on every request, equal to the version in its
/// `_meta` envelope.
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";

/// The two eras of MCP: how a client and a server agree on a version and what a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Era {
    /// The initialize era (2024-11-05 to 2025-11-25, "legacy"): a session starts with the
    /// `initialize` handshake, which fixes the version and both sides' capabilities.
    Initialize,
    /// The stateless era (2026-07-28 on, "modern"): no handshake; every request carries the version,
    /// client capabilities and client info in its `_meta` envelope, and a client probes a server
    /// with `server/discover`.
    Stateless,
}

impl Era {
    /// A short name for logs: `"initialize"` or `"stateless"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Era::Initialize => "initialize",
            Era::Stateless => "stateless",
        }
    }

    /// The revisions of this era this crate speaks, newest first.
    pub fn versions(self) -> &'static [ProtocolVersion] {
        match self {
            Era::Initialize => &ProtocolVersion::SUPPORTED,
            Era::Stateless => &ProtocolVersion::STATELESS,
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An MCP protocol revision this crate speaks, of either [`Era`]. Ordered by date: a later revision
/// compares greater.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first revision (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, tool annotations, audio content, completions capability.
    V2025_03_26,
    /// 2025-06-18: structured tool output, elicitation, resource links, titles.
    V2025_06_18,
    /// 2025-11-25: icons, URL-mode elicitation, tool use in sampling, tasks. The last revision of
    /// the initialize era.
    V2025_11_25,
    /// 2026-07-28: the first revision of the stateless era: no `initialize`, a `_meta` envelope on
    /// every request, `server/discover`, multi-round-trip requests (`input_required`),
    /// `subscriptions/listen`, caching hints (`ttlMs`, `cacheScope`); tasks moved to an extension.
    V2026_07_28,
}

impl ProtocolVersion {
    /// The newest initialize-era revision: what a client offers in `initialize`. Never a
    /// stateless-era revision (those have no `initialize`); see [`ProtocolVersion::LATEST_STATELESS`].
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// Every initialize-era revision, newest first: what [`ProtocolVersion::negotiate`] accepts and
    /// [`ProtocolVersion::answer`] answers with. The stateless era's are in
    /// [`ProtocolVersion::STATELESS`]; both together in [`ProtocolVersion::ALL`].
    pub const SUPPORTED: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The newest stateless-era revision: what a client puts in a request's `_meta` envelope first.
    pub const LATEST_STATELESS: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// Every stateless-era revision this crate speaks, newest first: what
    /// [`ProtocolVersion::choose_stateless`] chooses from.
    pub const STATELESS: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

    /// Every revision this crate knows, of both eras, newest first: what parsing accepts.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2026_07_28,
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
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era this revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2024_11_05
            | ProtocolVersion::V2025_03_26
            | ProtocolVersion::V2025_06_18
            | ProtocolVersion::V2025_11_25 => Era::Initialize,
            ProtocolVersion::V2026_07_28 => Era::Stateless,
        }
    }

    /// Whether this revision is of the stateless era (no `initialize`; a `_meta` envelope on every
    /// request).
    pub const fn is_stateless(self) -> bool {
        matches!(self.era(), Era::Stateless)
    }

    /// Decides the session's version from the one the server answered `initialize` with, given that
    /// the client offered [`ProtocolVersion::LATEST`]: a server that supports the offer echoes it,
    /// one that does not answers with another version it supports, and the client accepts the
    /// answer if it supports it too. Initialize era only: a stateless-era answer (which no
    /// `initialize` should get) is rejected like any other unsupported one.
    pub fn negotiate(server_version: &str) -> Result<ProtocolVersion, NegotiationError> {
        Self::negotiate_among(&Self::SUPPORTED, server_version)
    }

    /// What a server answers a client's `initialize` with: the version the client asked for
    /// when it is an initialize-era revision, else [`ProtocolVersion::LATEST`] (the client then
    /// decides whether it can go on). Never a stateless-era revision.
    pub fn answer(requested: &str) -> ProtocolVersion {
        requested
            .parse::<ProtocolVersion>()
            .ok()
            .filter(|version| Self::SUPPORTED.contains(version))
            .unwrap_or(Self::LATEST)
    }

    /// [`ProtocolVersion::negotiate`] for a client that supports only `supported` (e.g. pinned by
    /// configuration). The answer is accepted only if it is in `supported`, whatever its era.
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

    /// Chooses the stateless-era version to speak from the versions a server says it supports
    /// (`data.supported` of a `-32022` error, or `supportedVersions` of a `server/discover`
    /// result): the newest of [`ProtocolVersion::STATELESS`] the server lists. Strings this crate
    /// does not know, and initialize-era versions, are never chosen (an initialize-era server is
    /// spoken to through `initialize`, not by retrying a stateless request).
    ///
    /// ```
    /// use plexus_protocol::ProtocolVersion;
    ///
    /// let supported = ["2027-01-01", "2026-07-28", "2025-11-25"];
    /// assert_eq!(ProtocolVersion::choose_stateless(&supported), Ok(ProtocolVersion::V2026_07_28));
    /// assert!(ProtocolVersion::choose_stateless(&["2025-11-25"]).is_err());
    /// ```
    pub fn choose_stateless<S: AsRef<str>>(server_supported: &[S]) -> Result<ProtocolVersion, NegotiationError> {
        Self::choose_among(&Self::STATELESS, server_supported)
    }

    /// The newest of `ours` (any era, e.g. pinned by configuration) that `server_supported` lists.
    /// The order of `server_supported` does not matter; `ours` need not be sorted.
    pub fn choose_among<S: AsRef<str>>(
        ours: &[ProtocolVersion],
        server_supported: &[S],
    ) -> Result<ProtocolVersion, NegotiationError> {
        ours.iter()
            .copied()
            .filter(|version| server_supported.iter().any(|s| s.as_ref() == version.as_str()))
            .max()
            .ok_or_else(|| NegotiationError::NoCommonVersion {
                server_supported: server_supported.iter().map(|s| s.as_ref().to_owned()).collect(),
                supported: ours.to_vec(),
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

    /// HTTP requests after `initialize` carry [`PROTOCOL_VERSION_HEADER`] (since 2025-06-18; in the
    /// stateless era, every HTTP request).
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

    /// Requests may be task-augmented, with the `tasks/*` methods (2025-11-25 only: 2026-07-28 moved
    /// tasks to the `io.modelcontextprotocol/tasks` extension).
    pub fn has_tasks(self) -> bool {
        self == ProtocolVersion::V2025_11_25
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no protocol revision this crate speaks (of either era).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown MCP protocol version {version:?} (known: {})", list(&ProtocolVersion::ALL))]
pub struct ParseVersionError {
    /// The string that was given.
    pub version: String,
}

impl FromStr for ProtocolVersion {
    type Err = ParseVersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::ALL
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
    /// None of the versions a stateless-era server supports is one the client speaks.
    #[error(
        "the server supports protocol versions {}, none of which this client speaks (it speaks: {})",
        quoted(server_supported),
        list(supported)
    )]
    NoCommonVersion {
        /// The versions the server said it supports, as it spelled them.
        server_supported: Vec<String>,
        /// The versions the client chose from.
        supported: Vec<ProtocolVersion>,
    },
}

/// `"2027-01-01", "2025-11-25"` (`[]` when empty)
fn quoted(versions: &[String]) -> String {
    if versions.is_empty() {
        return "[]".to_owned();
    }
    versions
        .iter()
        .map(|version| format!("{version:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `2025-11-25, 2025-06-18, ...`
fn list(versions: &[ProtocolVersion]) -> String {
    versions
        .iter()
        .map(|version| version.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
