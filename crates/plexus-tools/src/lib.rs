//! The tool adapter: turns a server's MCP tools into entries of the host's tool pool (qualified
//! names and their index, annotations with the spec's defaults, truncated descriptions, schemas
//! passed through, permission rules).
//!
//! ```
//! use plexus_tools::{ToolIndex, qualified_name, truncate_description};
//!
//! assert_eq!(qualified_name("github", "create_issue"), "mcp__github__create_issue");
//! let mut index = ToolIndex::default();
//! let name = index.insert("my server", "get.weather").to_owned();
//! assert!(name.starts_with("mcp__my_server__get_weather__"));
//! assert_eq!(index.resolve(&name).unwrap().tool, "get.weather");
//! assert_eq!(truncate_description("short"), "short");
//! ```
//!
//! Dependencies: `sha2` for the hash that tells colliding names apart; `plexus-pool` for the
//! one text cut shared with server instructions; `base64` to decode binary content; `image` to
//! downsample images (its PNG, JPEG, GIF and WebP codecs only); `wildmatch` for the
//! `enabledTools` / `disabledTools` glob patterns; `async-trait` for the object-safe
//! [`UrlElicitationHandler`] a host implements; `tokio` to wait for a URL elicitation's
//! completion, its timeout and the handler's answer at once; `foldhash` to hash the tool index's
//! names (every call looks one up). Tool search ([`search`]) is written
//! here rather than taken from a crate: its module's documentation says why. The tool-pool
//! lockfile ([`lock`]) uses `sha2` and `plexus-config`'s canonical JSON for its hashes, and
//! `plexus-config`'s atomic write and no-follow open for its file.
#![forbid(unsafe_code)]

mod as_sent;
pub mod assembly;
pub mod call;
pub mod elicitation;
mod entry;
pub mod image;
pub mod lock;
pub mod naming;
pub mod permission;
pub mod result;
pub mod search;
pub mod store;
pub mod text;

pub use as_sent::{AsSentResult, CallOutcome};
pub use assembly::{HeldBecause, LeftOut, LeftOutBecause, ServerTools, ToolFilter, ToolPool, assemble, server_entries};
pub use call::{CallError, CallOptions, call_tool, call_tool_raw, decode_result};
pub use elicitation::{MalformedElicitation, UrlElicitationError, UrlElicitationHandler};
pub use entry::{MAX_DESCRIPTION_CHARS, TRUNCATION_MARKER, ToolEntry, requires_task, truncate_description};
pub use naming::{
    Collision, DEFAULT_MAX_NAME_LEN, ToolIndex, ToolOrigin, normalize_name, qualified_name, qualified_name_within,
};
pub use result::{ProcessedResult, ResultError, ResultSettings, SavedFile, process, processing_may_block, save_binary};
pub use search::{Match, SearchError, SearchHit, SearchIndex, SearchQuery, SegmentCache};
pub use store::ResultStore;
