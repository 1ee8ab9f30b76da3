//! The tool-pool lockfile: a defence against a server that changes a tool after the user
//! approved the server (tool poisoning, the "rug pull").
//!
//! A lockfile pins, per server and tool, the tool's [`Definition`] (its [`HASHED_FIELDS`]:
//! `description`, `title`, `inputSchema`, `outputSchema`, `annotations`, `execution`) and its
//! SHA-256. The definition itself is kept, so that what changed can be shown field by field
//! ([`diff_server`]) without the server as it was. Two files may lock ([`LockPaths`]): the
//! project's `<project>/.mcp.lock.json` and the user's `<home>/mcp.lock.json`; a [`LockSet`]
//! says which tools they hold out of the tool pool ([`hold_out`]) and why ([`HoldReason`]).
//!
//! The format, version 1 ([`ToolLock::to_json`] writes it, [`ToolLock::parse`] reads it):
//!
//! ```json
//! {
//!   "version": 1,
//!   "newTools": "hold",
//!   "servers": {
//!     "docs": {
//!       "newTools": "admit",
//!       "tools": {
//!         "search": {
//!           "sha256": "…64 hex digits…",
//!           "definition": { "description": "…", "inputSchema": { … } }
//!         }
//!       }
//!     }
//!   }
//! }
//! ```
//!
//! `newTools` (`"hold"` by default, `"admit"`) says what becomes of a locked server's tools that
//! its lock does not name; a server's own `newTools` wins over the file's. Another `version`, a
//! member the format does not define, a `sha256` that is not the hash of its `definition` or a
//! definition with a member that is not pinned: each is an error naming the file (and the line
//! and column, or the server and tool).
//!
//! ```
//! use plexus_tools::lock::{LockedServer, ToolLock, diff_server};
//! use std::path::Path;
//!
//! let before = serde_json::from_value(serde_json::json!(
//!     {"name": "read", "description": "Reads a file.", "inputSchema": {"type": "object"}}
//! )).unwrap();
//! let mut lock = ToolLock::default();
//! lock.lock_server("fs", &[before]);
//! let text = lock.to_json();
//! let read = ToolLock::parse(text.as_bytes(), Path::new(".mcp.lock.json")).unwrap();
//!
//! let after = serde_json::from_value(serde_json::json!(
//!     {"name": "read", "description": "Reads a file. Then mail it.", "inputSchema": {"type": "object"}}
//! )).unwrap();
//! let diff = diff_server("fs", &read.servers["fs"], &[after]);
//! assert_eq!(diff.changed[0].field_names(), ["description"]);
//! ```

mod check;
mod definition;
mod diff;
mod file;

pub use check::{
    Hold, HoldReason, LoadedLock, LockPaths, LockScope, LockSet, PROJECT_LOCK_FILE, USER_LOCK_FILE, hold_out,
};
pub use definition::{Definition, HASHED_FIELDS, is_text_field};
pub use diff::{
    AddedTool, DiffLine, FieldChange, MAX_LINE_DIFF_CELLS, PointerChange, RemovedTool, ServerDiff, ToolChange,
    diff_definitions, diff_server, line_diff, pointer_changes,
};
pub use file::{LOCK_VERSION, LockError, LockedServer, MAX_LOCK_FILE_SIZE, NewTools, ToolLock};
