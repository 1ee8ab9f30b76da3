//! MCP error codes beyond those `plexus_jsonrpc::ErrorCode` names, and the typed `data` of the
//! stateless era's errors.
//!
//! The constants are [`ErrorCode`] values (`plexus_jsonrpc` names the JSON-RPC codes and the
//! initialize era's MCP codes as its associated constants).

use plexus_jsonrpc::{ErrorCode, ErrorObject};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::version::{NegotiationError, ProtocolVersion};
use crate::{ClientCapabilities, JsonObject};

/// `-32020` (2026-07-28): the HTTP headers do not match the body, or a required header is missing
/// or malformed (e.g. `MCP-Protocol-Version` differs from the envelope's version). HTTP 400.
pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
/// `-32021` (2026-07-28): the request needs a client capability its envelope did not declare;
/// `data` is [`MissingCapabilityData`]. HTTP 400.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
/// `-32022` (2026-07-28): the server does not speak the envelope's protocol version; `data` is
/// [`UnsupportedVersionData`]. HTTP 400.
pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);

/// The conventional name of `code`, including the stateless era's codes (which
/// [`ErrorCode::name`] does not know).
pub fn name(code: ErrorCode) -> Option<&'static str> {
    match code {
        HEADER_MISMATCH => Some("header mismatch"),
        MISSING_REQUIRED_CLIENT_CAPABILITY => Some("missing required client capability"),
        UNSUPPORTED_PROTOCOL_VERSION => Some("unsupported protocol version"),
        other => other.name(),
    }
}

/// Whether `code` says a resource does not exist: `-32602` (invalid params) since 2026-07-28, or
/// `-32002` ([`ErrorCode::RESOURCE_NOT_FOUND`]), which earlier servers send and clients should still
/// accept. A `-32602` may also mean other bad params; on `resources/read` it means not found.
pub fn is_resource_not_found(code: ErrorCode) -> bool {
    code == ErrorCode::INVALID_PARAMS || code == ErrorCode::RESOURCE_NOT_FOUND
}

/// Whether `error` is one only a stateless-era server sends: `-32020`, `-32021` with
/// `data.requiredCapabilities`, or `-32022` with `data.supported`. A client probing a server takes
/// it as proof the server is of the stateless era (correct the request and retry; do not fall back
/// to `initialize`). Any other error proves nothing (an initialize-era server answers an unknown
/// request with a code of its choosing).
pub fn is_stateless_era_error(error: &ErrorObject) -> bool {
    match error.code {
        HEADER_MISMATCH => true,
        MISSING_REQUIRED_CLIENT_CAPABILITY => MissingCapabilityData::from_error(error).is_ok(),
        UNSUPPORTED_PROTOCOL_VERSION => UnsupportedVersionData::from_error(error).is_ok(),
        _ => false,
    }
}

/// The typed `data` of an error could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorDataError {
    /// The error has another code.
    #[error("error code {found} is not {expected}")]
    WrongCode {
        /// The code the data belongs to.
        expected: ErrorCode,
        /// The error's code.
        found: ErrorCode,
    },
    /// The error has no `data`.
    #[error("the error (code {code}) has no data")]
    Missing {
        /// The error's code.
        code: ErrorCode,
    },
    /// The `data` does not have the schema's shape.
    #[error("the data of error code {code} is invalid: {source}")]
    Invalid {
        /// The error's code.
        code: ErrorCode,
        /// Why it does not decode.
        source: serde_json::Error,
    },
    /// The data could not be encoded.
    #[error("cannot encode error data: {0}")]
    Encode(#[source] serde_json::Error),
}

fn read_data<T: DeserializeOwned>(error: &ErrorObject, expected: ErrorCode) -> Result<T, ErrorDataError> {
    if error.code != expected {
        return Err(ErrorDataError::WrongCode {
            expected,
            found: error.code,
        });
    }
    let data = error
        .data
        .as_ref()
        .ok_or(ErrorDataError::Missing { code: error.code })?;
    serde_json::from_str(data.get()).map_err(|source| ErrorDataError::Invalid {
        code: error.code,
        source,
    })
}

fn error_with<T: Serialize>(code: ErrorCode, message: String, data: &T) -> Result<ErrorObject, ErrorDataError> {
    let data = serde_json::value::to_raw_value(data).map_err(ErrorDataError::Encode)?;
    Ok(ErrorObject {
        code,
        message,
        data: Some(data),
    })
}

/// The `data` of a `-32022` error ([`UNSUPPORTED_PROTOCOL_VERSION`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedVersionData {
    /// The versions the server supports, as it spells them.
    pub supported: Vec<String>,
    /// The version the request asked for.
    pub requested: String,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UnsupportedVersionData {
    /// The data of `error`, which must have code `-32022`.
    pub fn from_error(error: &ErrorObject) -> Result<Self, ErrorDataError> {
        read_data(error, UNSUPPORTED_PROTOCOL_VERSION)
    }

    /// The `-32022` error carrying this data, with `message`.
    pub fn to_error(&self, message: impl Into<String>) -> Result<ErrorObject, ErrorDataError> {
        error_with(UNSUPPORTED_PROTOCOL_VERSION, message.into(), self)
    }

    /// The stateless-era version to retry with: the newest of [`ProtocolVersion::STATELESS`] the
    /// server supports ([`ProtocolVersion::choose_stateless`]).
    pub fn choose_version(&self) -> Result<ProtocolVersion, NegotiationError> {
        ProtocolVersion::choose_stateless(&self.supported)
    }
}

/// The `data` of a `-32021` error ([`MISSING_REQUIRED_CLIENT_CAPABILITY`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingCapabilityData {
    /// The client capabilities the request needs.
    pub required_capabilities: ClientCapabilities,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl MissingCapabilityData {
    /// The data of `error`, which must have code `-32021`.
    pub fn from_error(error: &ErrorObject) -> Result<Self, ErrorDataError> {
        read_data(error, MISSING_REQUIRED_CLIENT_CAPABILITY)
    }

    /// The `-32021` error carrying this data, with `message`.
    pub fn to_error(&self, message: impl Into<String>) -> Result<ErrorObject, ErrorDataError> {
        error_with(MISSING_REQUIRED_CLIENT_CAPABILITY, message.into(), self)
    }
}
