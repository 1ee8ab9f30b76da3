//! Turning what goes wrong on the wire into [`TransportError`]s: reqwest's errors into I/O
//! errors of the right kind, and error responses into a bounded excerpt of their body.

use std::error::Error as _;
use std::io;
use std::time::Duration;

use plexus_transport::{TransportError, body_excerpt};
use tokio::time::Instant;

use crate::config::ERROR_BODY_READ_LIMIT;

/// A reqwest error as an I/O error whose kind says whether the connection is dead: the kind of
/// the underlying socket error when there is one; `TimedOut` for a timeout; `UnexpectedEof`
/// when the connection closed before a complete response (hyper reports that without a socket
/// error); `Other` for anything else. Its text is the most specific cause, after `could not
/// connect: ` when the connection could not be opened.
pub(crate) fn io_error(error: &reqwest::Error) -> io::Error {
    let mut socket_error = None;
    let mut innermost = None;
    let mut source = error.source();
    while let Some(cause) = source {
        if socket_error.is_none()
            && let Some(io) = cause.downcast_ref::<io::Error>()
        {
            socket_error = Some(io);
        }
        innermost = Some(cause);
        source = cause.source();
    }
    let kind = match socket_error {
        Some(io) => io.kind(),
        None if error.is_timeout() => io::ErrorKind::TimedOut,
        None if error.is_request() || error.is_body() || error.is_connect() => io::ErrorKind::UnexpectedEof,
        None => io::ErrorKind::Other,
    };
    let cause = match (socket_error, innermost) {
        (Some(io), _) => io.to_string(),
        (None, _) if error.is_timeout() => "timed out".to_owned(),
        (None, Some(cause)) => cause.to_string(),
        (None, None) => error.to_string(),
    };
    let text = if error.is_connect() {
        format!("could not connect: {cause}")
    } else {
        cause
    };
    io::Error::new(kind, text)
}

/// The transport error for a failed request: an I/O error with what was being done.
pub(crate) fn request_failed(what: &str, error: &reqwest::Error, connect_timeout: Duration) -> TransportError {
    let io = io_error(error);
    if error.is_connect() && io.kind() == io::ErrorKind::TimedOut {
        let text = format!("could not connect within {connect_timeout:?} (the connect timeout)");
        return TransportError::from_io(what, io::Error::new(io::ErrorKind::TimedOut, text));
    }
    TransportError::from_io(what, io)
}

/// Reads at most [`ERROR_BODY_READ_LIMIT`] bytes of an error response before `deadline` and
/// keeps an excerpt of at most [`ERROR_BODY_EXCERPT`](crate::ERROR_BODY_EXCERPT) bytes: the `message` of a JSON-RPC error
/// body when it has one, else the start of the text.
pub(crate) async fn error_body(mut response: reqwest::Response, deadline: Instant) -> String {
    let mut body = Vec::new();
    let read = async {
        while body.len() < ERROR_BODY_READ_LIMIT {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = ERROR_BODY_READ_LIMIT - body.len();
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) | Err(_) => break,
            }
        }
    };
    let _ = tokio::time::timeout_at(deadline, read).await;
    excerpt(&body)
}

/// The excerpt of an error body (see [`error_body`]).
pub(crate) fn excerpt(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        error: ErrorMember,
    }
    #[derive(serde::Deserialize)]
    struct ErrorMember {
        message: String,
    }
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(parsed) => body_excerpt(parsed.error.message.as_bytes()),
        Err(_) => body_excerpt(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ERROR_BODY_EXCERPT;

    #[test]
    fn a_json_rpc_error_body_gives_its_message() {
        let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#;
        assert_eq!(excerpt(body), "Session not found");
        assert_eq!(excerpt(b"  plain text\n"), "plain text");
    }

    #[test]
    fn a_long_message_is_cut_too() {
        let body = format!(r#"{{"error":{{"message":"{}"}}}}"#, "é".repeat(ERROR_BODY_EXCERPT));
        let cut = excerpt(body.as_bytes());
        assert!(cut.starts_with("éé") && cut.ends_with('…'));
        assert_eq!(cut.len(), ERROR_BODY_EXCERPT + '…'.len_utf8());
    }
}
