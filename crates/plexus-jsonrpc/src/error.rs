//! JSON-RPC error objects and the standard and MCP error codes.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Well-known JSON-RPC and MCP error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode;

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP: the session id is unknown or expired (sent by most Streamable HTTP servers with a 404).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// MCP: a requested resource does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// MCP: the request needs a URL-mode elicitation to complete first.
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;

    /// The conventional name of a code, if it has one.
    pub fn name(code: i64) -> Option<&'static str> {
        Some(match code {
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

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code (see [`ErrorCode`]).
    pub code: i64,
    /// A short description of the error.
    pub message: String,
    /// Additional information, kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl ErrorObject {
    /// An error object without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
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
        match ErrorCode::name(self.code) {
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
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(source) = cause {
        text.push_str(": ");
        text.push_str(&source.to_string());
        cause = source.source();
    }
    text
}
