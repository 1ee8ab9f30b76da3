//! Errors about the remote server a transport connects to, which name its URL the way logs may
//! show it (see [`redact_url`]).

use plexus_transport::TransportError;

use crate::redact::redact_url;

/// A [`TransportError::Connect`] to a URL, which it names without credentials, query or
/// fragment.
pub fn connect_error(url: &str, reason: impl Into<String>) -> TransportError {
    TransportError::Connect {
        target: redact_url(url),
        reason: reason.into(),
    }
}

/// Fails with a [`TransportError::Connect`] to `url` unless its `scheme` (as a URL parser gives
/// it) is one of `allowed`; the error names the `transport` that needs them.
///
/// ```
/// use plexus_net::require_scheme;
///
/// assert!(require_scheme("wss://h/mcp", "wss", &["ws", "wss"], "WebSocket").is_ok());
/// let error = require_scheme("http://u:p@h/mcp", "http", &["ws", "wss"], "WebSocket");
/// assert_eq!(
///     error.unwrap_err().to_string(),
///     r#"could not connect to http://h/mcp: the URL scheme is "http"; the WebSocket transport needs ws or wss"#
/// );
/// ```
pub fn require_scheme(url: &str, scheme: &str, allowed: &[&str], transport: &str) -> Result<(), TransportError> {
    if allowed.contains(&scheme) {
        return Ok(());
    }
    let reason = format!(
        "the URL scheme is {scheme:?}; the {transport} transport needs {}",
        allowed.join(" or ")
    );
    Err(connect_error(url, reason))
}
