//! The lockfile itself: its model, its JSON format (version 1), reading it (bounded, never
//! through a symbolic link) and writing it atomically.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plexus_config::{JsonProblem, SymlinkRefused, open_no_follow, write_atomically};
use plexus_protocol::Tool;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Definition;

/// The version of the lockfile format this crate reads and writes.
pub const LOCK_VERSION: u64 = 1;

/// The largest lockfile read, in bytes (16 MiB): thousands of tools with large schemas fit; a
/// wrong file (a log, a device) is not read into memory.
pub const MAX_LOCK_FILE_SIZE: u64 = 16 * 1024 * 1024;

/// Whether the tools a locked server lists that its lock does not name are held out of the tool
/// pool (`"hold"`, the default) or admitted (`"admit"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NewTools {
    /// Held until locked (`plexus lock --update`).
    #[default]
    Hold,
    /// Admitted as they come.
    Admit,
}

/// A lockfile: for each locked server, the definition of each of its tools as approved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolLock {
    /// What becomes of a locked server's tools that its lock does not name (a server's own
    /// setting wins).
    pub new_tools: NewTools,
    /// The locked servers, by name.
    pub servers: BTreeMap<String, LockedServer>,
}

/// One server's lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockedServer {
    /// This server's own `newTools`, over the file's.
    pub new_tools: Option<NewTools>,
    /// Its tools' definitions as locked, by the tool's own name.
    pub tools: BTreeMap<String, Definition>,
}

impl LockedServer {
    /// The lock of the listed `tools`.
    pub fn of(tools: &[Tool]) -> LockedServer {
        LockedServer {
            new_tools: None,
            tools: tools
                .iter()
                .map(|tool| (tool.name.clone(), Definition::of(tool)))
                .collect(),
        }
    }
}

/// Why a lockfile could not be read, parsed or written. Each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The file could not be opened or read (a symbolic link in its place included: see
    /// [`SymlinkRefused`]).
    #[error("cannot read the tool lockfile {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Something other than a regular file is there.
    #[error("cannot read the tool lockfile {}: it is not a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The file is larger than [`MAX_LOCK_FILE_SIZE`].
    #[error("the tool lockfile {} is larger than the {limit}-byte limit", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// The file is not JSON, or not of the lockfile's shape (an unknown member, a wrong type).
    #[error("{}:{line}:{column}: not a valid tool lockfile", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line of the problem, from 1.
        line: usize,
        /// Its column, from 1.
        column: usize,
        /// What is wrong there.
        #[source]
        source: JsonProblem,
    },
    /// The file is of a format version this crate does not read.
    #[error(
        "the tool lockfile {} has version {found}; this plexus reads version {LOCK_VERSION} only",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has, as written (or `none`).
        found: String,
    },
    /// A locked tool's entry is inconsistent (its hash is not that of its definition, or its
    /// definition has a member a lockfile does not pin).
    #[error("the tool lockfile {}: server {server:?}, tool {tool:?}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// What is wrong.
        problem: String,
    },
    /// The file could not be written.
    #[error("cannot write the tool lockfile {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: plexus_config::WriteError,
    },
}

impl LockError {
    /// Whether the file does not exist (the only error that means "no lockfile").
    pub fn is_not_found(&self) -> bool {
        matches!(self, LockError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// Whether the file was refused because it is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        matches!(self, LockError::Read { source, .. } if SymlinkRefused::is(source))
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            LockError::Read { path, .. }
            | LockError::NotAFile { path }
            | LockError::TooLarge { path, .. }
            | LockError::Parse { path, .. }
            | LockError::Version { path, .. }
            | LockError::Invalid { path, .. }
            | LockError::Write { path, .. } => path,
        }
    }
}

/// The file's shape, read strictly: a member the format does not define is an error, so that a
/// misspelt setting is never silently ignored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLock {
    #[allow(dead_code)] // checked before this shape is read.
    version: Value,
    #[serde(default)]
    new_tools: NewTools,
    #[serde(default)]
    servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawServer {
    #[serde(default)]
    new_tools: Option<NewTools>,
    #[serde(default)]
    tools: BTreeMap<String, RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    sha256: String,
    definition: Map<String, Value>,
}

/// Only the version, read first: a file of another version may have another shape.
#[derive(Deserialize)]
struct VersionOnly {
    version: Option<Value>,
}

impl ToolLock {
    /// Parses `bytes` as the lockfile at `path` (used in errors). Every locked tool's `sha256`
    /// must be the hash of its `definition`, and a definition may hold only the pinned members.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<ToolLock, LockError> {
        let located = |error: serde_json::Error| LockError::Parse {
            path: path.to_owned(),
            line: error.line(),
            column: error.column(),
            source: JsonProblem::Parser(Arc::new(error)),
        };
        let VersionOnly { version } = serde_json::from_slice(bytes).map_err(located)?;
        if version.as_ref().and_then(Value::as_u64) != Some(LOCK_VERSION) || version.as_ref().is_some_and(Value::is_f64)
        {
            return Err(LockError::Version {
                path: path.to_owned(),
                found: version.map_or_else(|| "none".to_owned(), |v| v.to_string()),
            });
        }
        let raw: RawLock = serde_json::from_slice(bytes).map_err(located)?;
        let mut lock = ToolLock {
            new_tools: raw.new_tools,
            servers: BTreeMap::new(),
        };
        for (server, raw_server) in raw.servers {
            let mut tools = BTreeMap::new();
            for (tool, raw_tool) in raw_server.tools {
                let invalid = |problem: String| LockError::Invalid {
                    path: path.to_owned(),
                    server: server.clone(),
                    tool: tool.clone(),
                    problem,
                };
                let definition = Definition::from_fields(raw_tool.definition).map_err(invalid)?;
                if definition.sha256() != raw_tool.sha256 {
                    return Err(invalid(format!(
                        "its sha256 {:?} is not the SHA-256 of its definition ({}): the file was edited by hand; \
                         lock the tool again",
                        raw_tool.sha256,
                        definition.sha256()
                    )));
                }
                tools.insert(tool, definition);
            }
            lock.servers.insert(
                server,
                LockedServer {
                    new_tools: raw_server.new_tools,
                    tools,
                },
            );
        }
        Ok(lock)
    }

    /// Reads the lockfile at `path`: `Ok(None)` when there is none. A symbolic link there is
    /// refused (never followed), and so is anything but a regular file; at most
    /// [`MAX_LOCK_FILE_SIZE`] bytes are read.
    pub fn load(path: &Path) -> Result<Option<ToolLock>, LockError> {
        match read_bounded(path) {
            Ok(bytes) => ToolLock::parse(&bytes, path).map(Some),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The file's text: pretty JSON, servers and tools in name order, each definition's keys
    /// sorted, ending in a newline (so that locking again what did not change changes no byte).
    pub fn to_json(&self) -> String {
        let servers: Map<String, Value> = self
            .servers
            .iter()
            .map(|(name, server)| {
                let tools: Map<String, Value> = server
                    .tools
                    .iter()
                    .map(|(tool, definition)| {
                        let mut entry = Map::new();
                        entry.insert("sha256".into(), Value::String(definition.sha256().to_owned()));
                        entry.insert("definition".into(), definition.sorted_json());
                        (tool.clone(), Value::Object(entry))
                    })
                    .collect();
                let mut entry = Map::new();
                if let Some(new_tools) = server.new_tools {
                    entry.insert(
                        "newTools".into(),
                        serde_json::to_value(new_tools).unwrap_or(Value::Null),
                    );
                }
                entry.insert("tools".into(), Value::Object(tools));
                (name.clone(), Value::Object(entry))
            })
            .collect();
        let mut file = Map::new();
        file.insert("version".into(), Value::from(LOCK_VERSION));
        file.insert(
            "newTools".into(),
            serde_json::to_value(self.new_tools).unwrap_or(Value::Null),
        );
        file.insert("servers".into(), Value::Object(servers));
        let mut text = serde_json::to_string_pretty(&Value::Object(file)).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Writes the lockfile to `path` atomically (a temporary file next to it, then a rename); a
    /// new file gets `new_file_mode` (an existing one keeps its own). A symbolic link at `path`
    /// is refused.
    pub fn write(&self, path: &Path, new_file_mode: u32) -> Result<(), LockError> {
        write_atomically(path, self.to_json().as_bytes(), new_file_mode).map_err(|source| LockError::Write {
            path: path.to_owned(),
            source,
        })
    }

    /// `newTools` for `server`: its own setting, else the file's.
    pub fn new_tools_of(&self, server: &str) -> NewTools {
        self.servers
            .get(server)
            .and_then(|locked| locked.new_tools)
            .unwrap_or(self.new_tools)
    }

    /// Locks `server` with its listed `tools`, replacing what was locked for it (its own
    /// `newTools` kept).
    pub fn lock_server(&mut self, server: &str, tools: &[Tool]) {
        let locked = self.servers.entry(server.to_owned()).or_default();
        let new_tools = locked.new_tools;
        *locked = LockedServer {
            new_tools,
            ..LockedServer::of(tools)
        };
    }

    /// Locks one tool of `server` as `tool` is now (the server is locked if it was not).
    pub fn lock_tool(&mut self, server: &str, tool: &Tool) {
        self.servers
            .entry(server.to_owned())
            .or_default()
            .tools
            .insert(tool.name.clone(), Definition::of(tool));
    }

    /// Removes the tool `tool` of `server` from the lock; whether it was there.
    pub fn unlock_tool(&mut self, server: &str, tool: &str) -> bool {
        self.servers
            .get_mut(server)
            .is_some_and(|locked| locked.tools.remove(tool).is_some())
    }
}

/// The bytes of the file at `path`, refused when it is a link or not a regular file, and
/// bounded.
fn read_bounded(path: &Path) -> Result<Vec<u8>, LockError> {
    let read_error = |source| LockError::Read {
        path: path.to_owned(),
        source,
    };
    // Before opening: opening a FIFO would block until a writer comes.
    let metadata = std::fs::symlink_metadata(path).map_err(read_error)?;
    if metadata.file_type().is_symlink() {
        return Err(read_error(SymlinkRefused::error()));
    }
    if !metadata.is_file() {
        return Err(LockError::NotAFile { path: path.to_owned() });
    }
    let file = open_no_follow(OpenOptions::new().read(true), path).map_err(read_error)?;
    let opened = file.metadata().map_err(read_error)?;
    if !opened.is_file() {
        return Err(LockError::NotAFile { path: path.to_owned() });
    }
    let too_large = || LockError::TooLarge {
        path: path.to_owned(),
        limit: MAX_LOCK_FILE_SIZE,
    };
    if opened.len() > MAX_LOCK_FILE_SIZE {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    file.take(MAX_LOCK_FILE_SIZE + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_LOCK_FILE_SIZE {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    fn sample() -> ToolLock {
        let mut lock = ToolLock::default();
        lock.lock_server(
            "docs",
            &[
                tool(
                    json!({"name": "search", "description": "Finds.\nSecond line", "inputSchema": {"type": "object"}}),
                ),
                tool(json!({"name": "get", "inputSchema": {"type": "object", "required": ["id"]}})),
            ],
        );
        lock.servers.get_mut("docs").unwrap().new_tools = Some(NewTools::Admit);
        lock
    }

    #[test]
    fn the_file_round_trips_and_is_stable() {
        let lock = sample();
        let text = lock.to_json();
        let again = ToolLock::parse(text.as_bytes(), Path::new("/p/.mcp.lock.json")).unwrap();
        assert_eq!(again, lock);
        assert_eq!(again.to_json(), text);
        assert!(
            text.starts_with("{\n  \"version\": 1,\n  \"newTools\": \"hold\",\n  \"servers\": {"),
            "{text}"
        );
        assert_eq!(again.new_tools_of("docs"), NewTools::Admit);
        assert_eq!(again.new_tools_of("other"), NewTools::Hold);
    }

    #[test]
    fn bad_files_are_errors_that_name_the_file_and_where() {
        let path = Path::new("/p/.mcp.lock.json");
        let error = |text: &str| ToolLock::parse(text.as_bytes(), path).unwrap_err().to_string();
        assert_eq!(
            error("{\n  \"version\": 1,\n  oops"),
            "/p/.mcp.lock.json:3:3: not a valid tool lockfile"
        );
        assert_eq!(
            error(r#"{"version": 2, "servers": []}"#),
            "the tool lockfile /p/.mcp.lock.json has version 2; this plexus reads version 1 only"
        );
        assert_eq!(
            error(r#"{"servers": {}}"#),
            "the tool lockfile /p/.mcp.lock.json has version none; this plexus reads version 1 only"
        );
        assert_eq!(
            error(r#"{"version": 1.0}"#),
            "the tool lockfile /p/.mcp.lock.json has version 1.0; this plexus reads version 1 only"
        );
        let unknown = ToolLock::parse(br#"{"version": 1, "newtools": "admit"}"#, path).unwrap_err();
        assert!(matches!(unknown, LockError::Parse { line: 1, .. }), "{unknown:?}");
        assert!(
            plexus_jsonrpc::error_chain(&unknown).contains("unknown field `newtools`"),
            "{}",
            plexus_jsonrpc::error_chain(&unknown)
        );
        let bad_setting = error(r#"{"version": 1, "newTools": "maybe"}"#);
        assert_eq!(bad_setting, "/p/.mcp.lock.json:1:34: not a valid tool lockfile");
        let mut edited: Value = serde_json::from_str(&sample().to_json()).unwrap();
        edited["servers"]["docs"]["tools"]["get"]["definition"]["description"] = json!("sneaky");
        let text = edited.to_string();
        let message = error(&text);
        assert!(
            message.starts_with("the tool lockfile /p/.mcp.lock.json: server \"docs\", tool \"get\": its sha256 \"",)
                && message.contains("edited by hand"),
            "{message}"
        );
        edited["servers"]["docs"]["tools"]["get"]["definition"]["name"] = json!("x");
        assert!(error(&edited.to_string()).contains("the member \"name\""));
    }

    #[test]
    fn reading_is_bounded_and_refuses_links_and_special_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.lock.json");
        assert_eq!(ToolLock::load(&path).unwrap(), None);
        sample().write(&path, 0o600).unwrap();
        assert_eq!(ToolLock::load(&path).unwrap(), Some(sample()));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let error = ToolLock::load(&link).unwrap_err();
        assert!(error.is_symlink(), "{error:?}");
        assert_eq!(error.path(), link);
        assert!(matches!(ToolLock::load(dir.path()), Err(LockError::NotAFile { .. })));
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(ToolLock::load(&fifo), Err(LockError::NotAFile { .. })));
        let big = dir.path().join("big.json");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_LOCK_FILE_SIZE + 1).unwrap();
        assert!(matches!(ToolLock::load(&big), Err(LockError::TooLarge { .. })));
        // Writing through a link is refused too.
        assert!(matches!(sample().write(&link, 0o600), Err(LockError::Write { .. })));
    }
}
