//! MCP server configuration: every scope's config file read, merged, `${VAR}`-expanded, validated and governed by policy, with cache keys, file editing and import from other clients.
//!
//! [`ConfigSources`] finds the file of every [`Scope`] (see [`ConfigPaths`]) and
//! [`ConfigSources::load`] turns them into a [`MergedConfig`]: one [`MergedServer`] per name, the
//! entry of the highest scope used whole (explicit `--config` files > local > project > user),
//! with its scope, source file, [`EntryStatus`], warnings and cache key. Nothing fails the load:
//! a file that is not JSON, a bad entry, a broken policy are all data on the result, and
//! everything else still loads.
//!
//! ```
//! use plexus_config::{ConfigSources, DiscoveryOptions, Scope, ServerName, EntryStatus};
//!
//! let root = tempfile::tempdir()?;
//! let (home, project) = (root.path().join("home"), root.path().join("project"));
//! std::fs::create_dir_all(project.join(".git"))?;
//! std::fs::write(
//!     project.join(".mcp.json"),
//!     r#"{"mcpServers": {"docs": {"type": "http", "url": "https://${DOCS_HOST}/mcp"}}}"#,
//! )?;
//! let options = DiscoveryOptions::new(&home, &project)
//!     .with_managed_file(None)
//!     .with_env([("DOCS_HOST", "docs.example.com")].into_iter().collect());
//! let sources = ConfigSources::discover(&options);
//!
//! let merged = sources.load();
//! let docs = merged.server("docs").unwrap();
//! assert_eq!((docs.scope, docs.source.clone()), (Scope::Project, project.join(".mcp.json")));
//! assert_eq!(docs.config.url().unwrap().as_str(), "https://docs.example.com/mcp");
//! // A project's servers are someone else's code: they wait for the user's approval.
//! assert_eq!(docs.status, EntryStatus::PendingApproval);
//!
//! sources.approve(&[ServerName::new("docs")?])?;
//! assert!(sources.load().server("docs").unwrap().is_active());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A single file can also be read on its own, taking its values literally: a bad entry is
//! reported as a [`Diagnostic`] (file, server, field, reason) and skipped, and the rest of the file
//! still loads.
//!
//! ```
//! use plexus_config::{ConfigFile, ServerConfig, ServerKind};
//!
//! let text = r#"{
//!   "mcpServers": {
//!     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] },
//!     "docs": { "type": "http", "url": "https://example.com/mcp", "timeout": 20000 },
//!     "broken": { "command": "uvx", "args": ["tool", 3] }
//!   }
//! }"#;
//! let file = ConfigFile::parse(text, "/project/.mcp.json").unwrap();
//!
//! let Some(ServerConfig::Stdio(files)) = file.server("files") else { panic!("a stdio server") };
//! assert_eq!(files.command, "npx");
//! assert_eq!(file.server("docs").unwrap().kind(), ServerKind::Http);
//! assert!(file.server("broken").is_none());
//! assert_eq!(
//!     file.diagnostics()[0].to_string(),
//!     r#"/project/.mcp.json: server "broken": field "args[1]": expected a string, found 3"#
//! );
//! ```
//!
//! # Decisions
//!
//! - **Files.** User settings: `<home>/settings.json`, where the home is `$PLEXUS_HOME` or
//!   `~/.plexus`. Project: the nearest `.mcp.json` from the working directory (or `--project DIR`)
//!   up to the repository root. Local settings (and approvals):
//!   `<home>/projects/<key>/settings.local.json`, keyed by the project root's canonical path
//!   ([`ConfigPaths::local_file_for`]): they are the user's, never the project's, so nothing a
//!   repository ships can approve its own servers; a `.plexus/settings.local.json` inside the
//!   project is reported and never read. Managed: `/etc/plexus/managed-mcp.json` or
//!   `$PLEXUS_MANAGED_CONFIG`.
//! - **Precedence.** The highest scope's entry is used whole, even if it is invalid (then the
//!   server is listed in [`MergedConfig::invalid`] and not run; a lower scope never stands in).
//! - **Policy fails closed.** A deny rule wins over everything; no allow-list allows all, an empty
//!   one none. A managed file that defines `mcpServers` replaces every other scope. A managed file
//!   that exists but cannot be read, or holds a malformed rule, blocks every server until fixed: a
//!   dropped deny rule must not let a server through. Policy applies with `--strict-config` too.
//!   `"requireToolLock": true` in the managed file ([`MergedConfig::require_tool_lock`]) holds
//!   every tool of a server that no tool-pool lockfile locks out of the tool pool (a value other
//!   than `true` or `false` makes the policy unusable, like a malformed rule).
//! - **Approval.** Project servers run once approved ([`ConfigSources::approve`], `plexus approve`),
//!   recorded in the local settings in the plexus home (`approvedMcpjsonServers`, never in the
//!   repository), or by `enableAllProjectMcpServers` in the user or local settings. An approval is
//!   bound to the entry as written in the project file, before `${VAR}` expansion: any change of
//!   the entry (command, args, env, URL, headers, any field) makes it wait again, and
//!   [`MergedServer::pending`] says what changed ([`PendingReason::Changed`]) without showing a
//!   value of `env` or `headers`; a changed environment changes nothing, and neither does key order
//!   or spacing. A rejection (`disabledMcpjsonServers`) is by name and wins over every approval. A
//!   name in `enabledMcpjsonServers` (how earlier versions recorded a yes) no longer approves: such a
//!   server waits ([`PendingReason::ApprovedByNameOnly`]) until approved again, since binding it to
//!   whatever the file holds today could bless an entry the user never saw.
//! - **Set aside, said out loud.** A project entry that is pending or rejected never hides a
//!   lower scope's entry of the same name: the user's server runs ([`MergedServer::set_aside`]),
//!   and a warning on it says so.
//! - **Expansion** (see [`expand_vars`]) runs on the raw entry before it is checked, in `command`,
//!   `args`, `env` values, `cwd`, `url`, `headers` values and `headersHelper`.
//!   `${VAR:-default}` takes the default when `VAR` is unset or empty, as in the shell.
//! - **Writing** ([`SettingsEdit`]) edits the file's text in place, so unknown keys, their order and
//!   their formatting survive byte for byte, and replaces the file atomically.
//!
//! Dependencies: `nix` opens a `--config` pipe without blocking and waits for it with `poll`,
//! bounded. `sha2` hashes a project's canonical path into the key of its local settings.
//! `url` parses and checks the URLs of remote servers (WHATWG rules, the same ones
//! the HTTP and WebSocket clients apply), so a bad URL is reported here, with its field, rather than
//! at connect time. `tempfile` creates the temporary file, next to the target, that an atomic write
//! renames into place.
#![forbid(unsafe_code)]

mod approval;
mod cache_key;
mod diagnostic;
mod discover;
mod entry;
mod error;
mod expand;
mod file;
mod import;
mod json;
mod kind;
mod merge;
mod name;
mod new_entry;
mod nofollow;
mod pipe;
mod policy;
mod scope;
mod server;
mod values;
mod write;

use std::time::Duration;

pub use approval::{APPROVED_KEY, DISABLED_KEY, ENABLE_ALL_KEY, ENABLED_KEY, EntryChange, FieldValue, PendingReason};
pub use cache_key::{cache_key, canonical_json, sha256_hex};
pub use diagnostic::{Diagnostic, Severity};
pub use discover::{
    ConfigPaths, DEFAULT_MANAGED_FILE, DiscoveryError, DiscoveryOptions, IGNORED_LOCAL_SETTINGS_FILE,
    LOCAL_SETTINGS_FILE, PROJECT_FILE, PROJECTS_DIR, USER_SETTINGS_FILE,
};
pub use error::{ConfigError, JsonProblem};
pub use expand::{Environment, Expanded, ExpansionTooLong, MAX_EXPANDED_LEN, expand_vars};
pub use file::{ConfigFile, MAX_FILE_SIZE, SERVERS_KEY};
pub use import::{
    Import, ImportContext, ImportError, ImportInput, ImportNote, ImportSource, ImportedServer, MAX_IMPORT_FILE_SIZE,
    NoteKind, ShapeProblem, UnknownImportSource, WriteOutcome, import_servers,
};
pub use kind::ServerKind;
pub use merge::{
    ConfigSources, EntryOrigin, EntryStatus, FileOutcome, InvalidServer, MergedConfig, MergedServer, SourceFile,
};
pub use name::{InvalidServerName, ServerName};
pub use new_entry::{EntryError, NewEntry, check_entry, checked_entry, entry_from_json};
pub use nofollow::{SymlinkRefused, open_no_follow, refuse_symlink};
pub use pipe::PIPE_TIMEOUT;
pub use policy::{ALLOWED_KEY, DENIED_KEY, PolicyBlock, PolicyMatcher, REQUIRE_TOOL_LOCK_KEY};
pub use scope::{Scope, UnknownScope};
pub use server::{
    ClaudeAiProxyEntry, ClientIdentityConfig, HttpEntry, InProcessEntry, NetworkConfig, OAuthConfig, OAuthGrantType,
    ProxySetting, ServerConfig, ServerOptions, SseIdeEntry, StdioEntry, WsEntry, WsIdeEntry,
};
pub use url::Url;
pub use values::{ValueError, env_name, header_name, header_value};
pub use write::{SettingsEdit, WriteError, write_atomically};

/// The shortest per-server `timeout` honoured; smaller values are ignored with a warning.
pub const MIN_TIMEOUT: Duration = Duration::from_secs(1);

/// The shortest per-server `probeTimeout` honoured; smaller values are ignored with a warning.
pub const MIN_PROBE_TIMEOUT: Duration = Duration::from_millis(100);
