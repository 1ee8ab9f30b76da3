//! The typed causes of a [`DecodeError`](crate::DecodeError): serde_json's error, shared, and
//! what makes a JSON object no JSON-RPC 2.0 message.

use std::fmt;
use std::sync::Arc;

/// serde_json's error, shared so that a [`DecodeError`](crate::DecodeError) stays `Clone`; two
/// are equal when they say the same (line and column included).
#[derive(Debug, Clone)]
pub struct JsonError(Arc<serde_json::Error>);

impl JsonError {
    /// serde_json's error.
    pub fn get(&self) -> &serde_json::Error {
        &self.0
    }
}

impl From<serde_json::Error> for JsonError {
    fn from(error: serde_json::Error) -> Self {
        JsonError(Arc::new(error))
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for JsonError {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for JsonError {}

/// What makes a JSON object no JSON-RPC 2.0 request, notification or response
/// ([`DecodeError::Invalid`](crate::DecodeError::Invalid)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidMessage {
    /// A member has the wrong type (serde_json's word for which).
    #[error(transparent)]
    Members(JsonError),
    /// The `id` is neither a string nor an integer.
    #[error("bad id")]
    BadId(#[source] JsonError),
    /// A message has a `method` and a `result` or an `error`.
    #[error("a message has both \"method\" and \"result\"/\"error\"")]
    MethodAndOutcome,
    /// A request's or notification's `params` are neither an object nor an array.
    #[error("\"params\" of {method} must be an object or array")]
    ParamsNotStructured {
        /// The method.
        method: String,
    },
    /// A request has a `null` id.
    #[error("request {method} has a null id (MCP forbids null ids)")]
    NullId {
        /// The method.
        method: String,
    },
    /// A response has both a `result` and an `error`.
    #[error("a response has both \"result\" and \"error\"")]
    ResultAndError,
    /// A result response has no id.
    #[error("a result response without an id")]
    ResultWithoutId,
    /// The `error` member is not a JSON-RPC error object.
    #[error("bad \"error\" object")]
    BadErrorObject(#[source] JsonError),
    /// None of `method`, `result`, `error`.
    #[error("neither \"method\" nor \"result\" nor \"error\"")]
    Unclassified,
}
