//! Errors that stop a whole config file from loading.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

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
    #[error("{}:{line}:{column}: invalid JSON", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The line of the problem, from 1.
        line: usize,
        /// The column of the problem, from 1 (0 when the file ends before anything was read).
        column: usize,
        /// What the JSON parser found wrong.
        #[source]
        source: JsonProblem,
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

/// What the JSON parser found wrong, without the position it ends with (the error that holds it
/// names the line and column).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JsonProblem {
    /// serde_json's error.
    #[error("{}", without_position(.0))]
    Parser(Arc<serde_json::Error>),
    /// The bytes are not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
}

impl JsonProblem {
    /// The problem of `error`, with the line and column it names.
    pub(crate) fn located(error: serde_json::Error) -> (usize, usize, JsonProblem) {
        (error.line(), error.column(), JsonProblem::Parser(Arc::new(error)))
    }
}

impl PartialEq for JsonProblem {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

fn without_position(error: &serde_json::Error) -> String {
    let full = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    full.strip_suffix(&position).unwrap_or(&full).to_owned()
}

impl ConfigError {
    /// Whether the file does not exist (callers that look in optional places treat this as "no
    /// config here").
    pub fn is_not_found(&self) -> bool {
        matches!(self, ConfigError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The error's text followed by its cause's (the operating system's reason, the JSON
    /// parser's), if it has one, for a place that keeps only a text (a managed file's problem,
    /// which blocks every server).
    pub(crate) fn with_reason(&self) -> String {
        match std::error::Error::source(self) {
            Some(cause) => format!("{self}: {cause}"),
            None => self.to_string(),
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
