//! JSON-RPC error objects and the standard and MCP error codes.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A JSON-RPC error code, with the well-known JSON-RPC and MCP codes as constants. It is written
/// as the bare number; any number a peer sends is kept.
///
/// ```
/// use plexus_jsonrpc::ErrorCode;
///
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND, ErrorCode(-32601));
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND.name(), Some("method not found"));
/// assert_eq!(ErrorCode(-1).name(), None);
/// assert_eq!(serde_json::to_string(&ErrorCode::PARSE_ERROR).unwrap(), "-32700");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// MCP: the session id is unknown or expired (sent by most Streamable HTTP servers with a 404).
    pub const SESSION_NOT_FOUND: ErrorCode = ErrorCode(-32001);
    /// MCP: a requested resource does not exist.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// MCP: the request needs a URL-mode elicitation to complete first.
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

    /// The conventional name of the code, if it has one.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::PARSE_ERROR => "parse error",
            Self::INVALID_REQUEST => "invalid request",
            Self::METHOD_NOT_FOUND => "method not found",
            Self::INVALID_PARAMS => "invalid params",
            Self::INTERNAL_ERROR => "internal error",
            Self::SESSION_NOT_FOUND => "session not found",
            Self::RESOURCE_NOT_FOUND => "resource not found",
            Self::URL_ELICITATION_REQUIRED => "URL elicitation required",
            _ => return None,
        })
    }
}

impl From<i64> for ErrorCode {
    fn from(code: i64) -> Self {
        ErrorCode(code)
    }
}

impl From<ErrorCode> for i64 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

impl PartialEq<i64> for ErrorCode {
    fn eq(&self, other: &i64) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description of the error.
    pub message: String,
    /// Additional information, kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl ErrorObject {
    /// An error object without data.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> Self {
        ErrorObject {
            code: code.into(),
            message: message.into(),
            data: None,
        }
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code.name() {
            Some(name) => write!(f, "{} ({name}, code {})", self.message, self.code)?,
            None => write!(f, "{} (code {})", self.message, self.code)?,
        }
        if let Some(data) = &self.data {
            let data = data.get();
            if data.len() <= 512 {
                write!(f, ": {data}")?;
            } else {
                let cut = (0..=512).rev().find(|i| data.is_char_boundary(*i)).unwrap_or(0);
                write!(f, ": {}…", &data[..cut])?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ErrorObject {}

/// `error` and its causes on one line, `what failed: why: why that`: how a host shows an error
/// whose causes are kept as [`source`](std::error::Error::source)s, not repeated in its text.
/// The parts are those of [`error_causes`].
///
/// ```
/// use plexus_jsonrpc::error_chain;
///
/// let io = std::io::Error::other("refused");
/// assert_eq!(error_chain(&io), "refused");
/// ```
pub fn error_chain(error: &dyn std::error::Error) -> String {
    error_causes(error).join(": ")
}

/// The text of `error`, then that of each of its causes in order (for a report with one line
/// per cause: `error: …`, `caused by: …`). A cause whose text the one before ends with (an error
/// of another library that repeats its cause) is left out, and so is an empty one.
///
/// ```
/// use plexus_jsonrpc::error_causes;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("reading the config")]
/// struct Reading(#[source] std::io::Error);
///
/// let error = Reading(std::io::Error::other("refused"));
/// assert_eq!(error_causes(&error), ["reading the config", "refused"]);
/// ```
pub fn error_causes(error: &dyn std::error::Error) -> Vec<String> {
    let mut parts = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(source) = cause {
        let part = source.to_string();
        let said = parts.last().is_some_and(|last| last.ends_with(&part));
        if !said && !part.is_empty() {
            parts.push(part);
        }
        cause = source.source();
    }
    parts
}

#[cfg(test)]
mod chain_tests {
    use super::error_chain;

    /// An error of another library that repeats its cause in its own text.
    #[derive(Debug, thiserror::Error)]
    #[error("IO error: {0}")]
    struct Repeating(#[from] std::io::Error);

    /// An error that keeps its cause and says only its own part.
    #[derive(Debug, thiserror::Error)]
    #[error("reading the config")]
    struct Reading(#[source] Repeating);

    #[test]
    fn causes_are_joined_and_a_repeated_one_is_said_once() {
        let error = Reading(Repeating(std::io::Error::other("refused")));
        assert_eq!(error_chain(&error), "reading the config: IO error: refused");
    }
}
