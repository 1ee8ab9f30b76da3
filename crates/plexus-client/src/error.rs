//! The session's error type.

use std::time::Duration;

use plexus_jsonrpc::ErrorObject;
use plexus_protocol::NegotiationError;
use plexus_transport::{ErrorClass, TransportError};

/// Why a request or the session failed. Cloneable, so that one transport failure reaches every
/// waiting caller.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    /// The transport failed or closed (for a child process, with its exit status and stderr tail).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// No response within the request's timeout; the server was sent `notifications/cancelled`.
    #[error("{method} timed out after {}", format_duration(*.after))]
    Timeout {
        /// The method of the request.
        method: String,
        /// The timeout that expired.
        after: Duration,
    },
    /// The server answered with a JSON-RPC error.
    #[error("{method} failed: {error}")]
    Rpc {
        /// The method of the request.
        method: String,
        /// The server's error object.
        error: ErrorObject,
    },
    /// The server's result does not have the shape the protocol defines.
    #[error("{method}: the server's result is malformed: {reason}")]
    InvalidResult {
        /// The method of the request.
        method: String,
        /// What did not fit.
        reason: String,
    },
    /// The server speaks no protocol version we support.
    #[error(transparent)]
    Negotiation(#[from] NegotiationError),
    /// A paginated list repeated a cursor or never ended.
    #[error("{method}: the server's pagination does not end ({reason})")]
    Pagination {
        /// The list method.
        method: String,
        /// The repeated cursor, or the page limit that was reached.
        reason: String,
    },
    /// The caller's parameters could not be serialized.
    #[error("{method}: the request parameters cannot be encoded: {reason}")]
    InvalidParams {
        /// The method of the request.
        method: String,
        /// serde_json's description.
        reason: String,
    },
    /// The session was closed by its owner.
    #[error("the session is closed")]
    SessionClosed,
}

impl ClientError {
    /// The transport error class, when the failure came from the transport.
    pub fn transport_class(&self) -> Option<ErrorClass> {
        match self {
            ClientError::Transport(t) => Some(t.class()),
            _ => None,
        }
    }
}

/// `1.5 s`, `250 ms`, `2 min`.
pub(crate) fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms % 60_000 == 0 {
        format!("{} min", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(format_duration(Duration::from_secs(30)), "30 s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(format_duration(Duration::from_secs(120)), "2 min");
    }

    #[test]
    fn timeout_message() {
        let e = ClientError::Timeout {
            method: "tools/call".into(),
            after: Duration::from_secs(60),
        };
        assert_eq!(e.to_string(), "tools/call timed out after 1 min");
    }
}
