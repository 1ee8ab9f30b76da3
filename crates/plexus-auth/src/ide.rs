//! IDE tokens: the `authToken` of an IDE extension's lockfile, sent in
//! [`IDE_AUTH_HEADER`] (`X-Claude-Code-Ide-Authorization`).
//!
//! An IDE extension that serves MCP writes a lockfile named `<port>.lock` into the IDE lock
//! directory: a JSON object with `authToken`, `port`, `workspaceFolders`, `pid`, `ideName`,
//! `transport`, `runningInWindows` (see [`IdeLockfile`]). The lock directory is
//! `$PLEXUS_IDE_LOCK_DIR` when set, else `~/.claude/ide` (see [`default_ide_lock_dir`]).
//!
//! Both IDE kinds send the token in the same header: `ws-ide` sends the entry's `authToken`, or
//! else the lockfile's; `sse-ide` sends the lockfile's (its entry has no token). The lockfile read
//! is bounded ([`MAX_LOCKFILE_SIZE`]); a missing, unreadable or malformed lockfile, or one without
//! an `authToken`, is an error that names the file. A 401 or 403 from the IDE is a failure, not
//! "needs auth": no login fixes a wrong IDE token.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use plexus_auth::{IDE_AUTH_HEADER, IdeToken};
//! use plexus_transport::AuthProvider;
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("41234.lock"), r#"{"authToken": "t0k", "port": 41234, "ideName": "VS Code"}"#).unwrap();
//! let token = IdeToken::from_lockfile(dir.path(), 41234).await.unwrap();
//! assert_eq!(token.headers("GET", "ws://127.0.0.1:41234/").await.unwrap(), [(IDE_AUTH_HEADER.to_owned(), "t0k".to_owned())]);
//!
//! let missing = IdeToken::from_lockfile(dir.path(), 9).await.unwrap_err();
//! assert_eq!(
//!     missing.to_string(),
//!     format!("no IDE lockfile at {} (is the IDE running, with its extension?)", dir.path().join("9.lock").display())
//! );
//! # }
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plexus_transport::{AuthDecision, AuthFailure, AuthHeaders, AuthProvider, BoxFuture, Rejection};
use serde::Deserialize;
use tokio::io::AsyncReadExt;

/// The header that carries the IDE token, for `ws-ide` and `sse-ide` alike.
pub const IDE_AUTH_HEADER: &str = "X-Claude-Code-Ide-Authorization";

/// The environment variable that names the IDE lock directory.
pub const IDE_LOCK_DIR_VAR: &str = "PLEXUS_IDE_LOCK_DIR";

/// The largest lockfile read, in bytes (64 KiB).
pub const MAX_LOCKFILE_SIZE: u64 = 64 * 1024;

/// Why there is no IDE token. Each message names the file (or what is missing).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdeError {
    /// No lock directory was given and neither `PLEXUS_IDE_LOCK_DIR` nor `HOME` is set.
    #[error("cannot find the IDE lock directory: set {IDE_LOCK_DIR_VAR} (or HOME)")]
    NoLockDir,
    /// There is no lockfile for the port.
    #[error("no IDE lockfile at {} (is the IDE running, with its extension?)", .path.display())]
    Missing {
        /// The lockfile's path.
        path: PathBuf,
    },
    /// The lockfile exists but cannot be read.
    #[error("cannot read the IDE lockfile {}", .path.display())]
    Unreadable {
        /// The lockfile's path.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The lockfile is larger than [`MAX_LOCKFILE_SIZE`].
    #[error("the IDE lockfile {} is larger than {limit} bytes", .path.display())]
    TooLarge {
        /// The lockfile's path.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// The lockfile is not the JSON object it should be.
    #[error("the IDE lockfile {} is malformed", .path.display())]
    Malformed {
        /// The lockfile's path.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        problem: LockfileProblem,
    },
    /// The IDE answered a request carrying the token with 401 or 403.
    #[error("the IDE rejected the token from {origin} (HTTP {status})")]
    TokenRejected {
        /// Where the token came from.
        origin: String,
        /// 401 or 403.
        status: u16,
    },
    /// The lockfile has no `authToken` (or an empty one).
    #[error("the IDE lockfile {} has no \"authToken\"", .path.display())]
    NoToken {
        /// The lockfile's path.
        path: PathBuf,
    },
}

/// What is wrong with an IDE lockfile's content ([`IdeError::Malformed`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockfileProblem {
    /// It is not JSON, or its fields have the wrong types.
    #[error(transparent)]
    Json(serde_json::Error),
    /// It is JSON, but not an object.
    #[error("it is not a JSON object")]
    NotAnObject,
}

/// The IDE lock directory from the environment: `$PLEXUS_IDE_LOCK_DIR` when set and not empty,
/// else `$HOME/.claude/ide`; `None` when neither is set. `lookup` reads a variable (tests pass a
/// map instead of the process environment).
pub fn default_ide_lock_dir(lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let non_empty = |name: &str| lookup(name).filter(|value| !value.is_empty());
    non_empty(IDE_LOCK_DIR_VAR)
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| Path::new(&home).join(".claude").join("ide")))
}

/// The lockfile of the IDE server on `port`: `<lock_dir>/<port>.lock`.
pub fn lockfile_path(lock_dir: &Path, port: u16) -> PathBuf {
    lock_dir.join(format!("{port}.lock"))
}

/// An IDE lockfile's content. Fields this crate does not know are ignored. `Debug` hides the
/// token.
#[derive(Clone, PartialEq, Eq)]
pub struct IdeLockfile {
    /// `authToken`: the token the IDE's server expects (never empty).
    pub auth_token: String,
    /// `port`: the IDE server's port.
    pub port: Option<u16>,
    /// `pid`: the IDE's process id.
    pub pid: Option<u32>,
    /// `workspaceFolders`: the folders open in the IDE.
    pub workspace_folders: Vec<String>,
    /// `ideName`: the IDE's display name.
    pub ide_name: Option<String>,
    /// `transport`: `ws` or `sse`.
    pub transport: Option<String>,
    /// `runningInWindows`: the IDE runs on Windows (while the host may run in WSL).
    pub running_in_windows: bool,
}

impl fmt::Debug for IdeLockfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdeLockfile")
            .field("auth_token", &"<redacted>")
            .field("port", &self.port)
            .field("pid", &self.pid)
            .field("workspace_folders", &self.workspace_folders)
            .field("ide_name", &self.ide_name)
            .field("transport", &self.transport)
            .field("running_in_windows", &self.running_in_windows)
            .finish()
    }
}

/// The lockfile as written, every field optional so that a missing token gets its own message.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLockfile {
    auth_token: Option<String>,
    port: Option<u16>,
    pid: Option<u32>,
    #[serde(default)]
    workspace_folders: Vec<String>,
    ide_name: Option<String>,
    transport: Option<String>,
    #[serde(default)]
    running_in_windows: bool,
}

impl IdeLockfile {
    /// Reads and parses the lockfile at `path` (at most [`MAX_LOCKFILE_SIZE`] bytes).
    pub async fn read(path: &Path) -> Result<IdeLockfile, IdeError> {
        let unreadable = |source: io::Error| {
            if source.kind() == io::ErrorKind::NotFound {
                IdeError::Missing { path: path.to_owned() }
            } else {
                IdeError::Unreadable {
                    path: path.to_owned(),
                    source,
                }
            }
        };
        let file = tokio::fs::File::open(path).await.map_err(unreadable)?;
        let mut text = Vec::new();
        file.take(MAX_LOCKFILE_SIZE + 1)
            .read_to_end(&mut text)
            .await
            .map_err(unreadable)?;
        if text.len() as u64 > MAX_LOCKFILE_SIZE {
            return Err(IdeError::TooLarge {
                path: path.to_owned(),
                limit: MAX_LOCKFILE_SIZE,
            });
        }
        IdeLockfile::parse(&text, path)
    }

    /// Parses a lockfile's content; `path` is for errors.
    pub fn parse(text: &[u8], path: &Path) -> Result<IdeLockfile, IdeError> {
        let malformed = |problem| IdeError::Malformed {
            path: path.to_owned(),
            problem,
        };
        let json = |e| malformed(LockfileProblem::Json(e));
        let value: serde_json::Value = serde_json::from_slice(text).map_err(json)?;
        if !value.is_object() {
            return Err(malformed(LockfileProblem::NotAnObject));
        }
        let raw: RawLockfile = serde_json::from_value(value).map_err(json)?;
        let auth_token = raw
            .auth_token
            .filter(|token| !token.is_empty())
            .ok_or_else(|| IdeError::NoToken { path: path.to_owned() })?;
        Ok(IdeLockfile {
            auth_token,
            port: raw.port,
            pid: raw.pid,
            workspace_folders: raw.workspace_folders,
            ide_name: raw.ide_name,
            transport: raw.transport,
            running_in_windows: raw.running_in_windows,
        })
    }
}

/// An IDE token as an [`AuthProvider`]: every request carries it in [`IDE_AUTH_HEADER`]; a 401 or
/// 403 is a failure that says where the token came from.
#[derive(Clone)]
pub struct IdeToken {
    token: String,
    origin: String,
}

impl fmt::Debug for IdeToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdeToken")
            .field("token", &"<redacted>")
            .field("origin", &self.origin)
            .finish()
    }
}

impl IdeToken {
    /// A token from the entry's `authToken` (for `ws-ide`).
    pub fn from_config(token: impl Into<String>) -> IdeToken {
        IdeToken {
            token: token.into(),
            origin: "the entry's authToken".to_owned(),
        }
    }

    /// The token of the lockfile for `port` in `lock_dir`, read now.
    pub async fn from_lockfile(lock_dir: &Path, port: u16) -> Result<IdeToken, IdeError> {
        let path = lockfile_path(lock_dir, port);
        let lockfile = IdeLockfile::read(&path).await?;
        Ok(IdeToken {
            token: lockfile.auth_token,
            origin: format!("the IDE lockfile {}", path.display()),
        })
    }

    /// Where the token came from, for messages (`the entry's authToken`, `the IDE lockfile …`).
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

impl AuthProvider for IdeToken {
    fn headers(&self, _method: &str, _url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let headers = vec![(IDE_AUTH_HEADER.to_owned(), self.token.clone())];
        Box::pin(async move { Ok(headers) })
    }

    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        let cause = Arc::new(IdeError::TokenRejected {
            origin: self.origin.clone(),
            status: rejection.status,
        });
        Box::pin(async move { AuthDecision::Fail { cause } })
    }
}
