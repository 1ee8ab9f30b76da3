//! Errors that stop a whole config file from loading.

use std::io;
use std::path::PathBuf;

/// Why a config file could not be loaded at all.
///
/// Problems inside a single server entry are not errors of this kind: they are
/// [`Diagnostic`](crate::Diagnostic)s on the loaded [`ConfigFile`](crate::ConfigFile), and the other
/// entries still load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be opened or read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The path names something other than a regular file (a directory, a FIFO, a device).
    #[error("cannot read {}: {what}, not a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead: `"it is a directory"` or `"it is a special file"`.
        what: &'static str,
    },
    /// The file is larger than the limit.
    #[error("{}: the file is larger than the {limit}-byte limit for a config file", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, in bytes ([`MAX_FILE_SIZE`](crate::MAX_FILE_SIZE)).
        limit: u64,
    },
    /// The file is not valid JSON.
    #[error("{}:{line}:{column}: invalid JSON: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The line of the problem, from 1.
        line: usize,
        /// The column of the problem, from 1 (0 when the file ends before anything was read).
        column: usize,
        /// What the JSON parser found wrong.
        message: String,
    },
    /// The top level of the file is not a JSON object.
    #[error("{}: the top level must be a JSON object, found {found}", path.display())]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// What was found instead: `an array`, `null`, `3`, …
        found: String,
    },
    /// `mcpServers` is present but is not a JSON object.
    #[error(
        "{}: field \"mcpServers\": expected an object that maps each server's name to its settings, found {found}",
        path.display()
    )]
    ServersNotAnObject {
        /// The file.
        path: PathBuf,
        /// What was found instead: `an array`, `null`, `3`, …
        found: String,
    },
}

impl ConfigError {
    /// Whether the file does not exist (callers that look in optional places treat this as "no
    /// config here").
    pub fn is_not_found(&self) -> bool {
        matches!(self, ConfigError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The error's text followed by the operating system's reason, if it has one, for a place
    /// that keeps only a text (a managed file's problem, which blocks every server).
    pub(crate) fn with_reason(&self) -> String {
        match self {
            ConfigError::Read { source, .. } => format!("{self}: {source}"),
            other => other.to_string(),
        }
    }

    /// The file the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            ConfigError::Read { path, .. }
            | ConfigError::NotAFile { path, .. }
            | ConfigError::TooLarge { path, .. }
            | ConfigError::Syntax { path, .. }
            | ConfigError::NotAnObject { path, .. }
            | ConfigError::ServersNotAnObject { path, .. } => path,
        }
    }
}
