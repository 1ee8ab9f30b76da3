//! The tool adapter: turns a server's MCP tools into entries of the host's tool pool (qualified
//! names, annotations, truncated descriptions).
//!
//! ```
//! use plexus_tools::{qualified_name, truncate_description};
//!
//! assert_eq!(qualified_name("my server", "get.weather"), "mcp__my_server__get_weather");
//! assert_eq!(truncate_description("short"), "short");
//! ```
#![forbid(unsafe_code)]

mod entry;
mod naming;

pub use entry::ToolEntry;
pub use naming::{MAX_DESCRIPTION_CHARS, TRUNCATION_MARKER, normalize_name, qualified_name, truncate_description};
