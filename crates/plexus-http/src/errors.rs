//! Turning what goes wrong on the wire into [`TransportError`]s: failed exchanges into I/O
//! errors of the right kind, and error responses into a bounded excerpt of their body.

use std::pin::pin;

use crate::config::ERROR_BODY_READ_LIMIT;
use crate::deadline::Deadline;
use plexus_net::http::Body;
use plexus_transport::body_excerpt;

/// What is wrong with a server's answer: the cause of a [`TransportError::Protocol`](plexus_transport::TransportError::Protocol).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseProblem {
    /// The `Mcp-Session-Id` of the `initialize` response cannot be sent back.
    #[error(
        "the Mcp-Session-Id header of the initialize response of {server} is empty or has characters outside \
         visible ASCII"
    )]
    SessionId {
        /// The server (its URL, redacted).
        server: String,
    },
    /// A `POST` was answered with a body that is neither JSON nor an event stream.
    #[error(
        "POST {server} answered HTTP {status} with content type {content_type:?}; expected application/json or \
         text/event-stream"
    )]
    ContentType {
        /// The server (its URL, redacted).
        server: String,
        /// The status.
        status: u16,
        /// The server's `Content-Type` (peer text).
        content_type: String,
    },
    /// A JSON response body that is not a JSON-RPC message.
    #[error("the JSON body of the response to {what} is not a JSON-RPC message")]
    NotJsonRpc {
        /// The request ("POST https://…").
        what: String,
        /// The decoder's error.
        #[source]
        source: plexus_jsonrpc::DecodeError,
    },
}

/// Reads at most [`ERROR_BODY_READ_LIMIT`] bytes of an error response before `deadline` and
/// keeps an excerpt of at most [`ERROR_BODY_EXCERPT`](crate::ERROR_BODY_EXCERPT) bytes: the `message` of a JSON-RPC error
/// body when it has one, else the start of the text.
pub(crate) async fn error_body(body: Body, deadline: &mut Deadline) -> String {
    excerpt(&read_error_bytes(body, deadline).await)
}

/// The first [`ERROR_BODY_READ_LIMIT`] bytes of an error response, or what arrived of them
/// before `deadline`.
pub(crate) async fn read_error_bytes(mut body: Body, deadline: &mut Deadline) -> Vec<u8> {
    let mut read = Vec::new();
    let reading = async {
        while read.len() < ERROR_BODY_READ_LIMIT {
            match body.chunk().await {
                Ok(Some(chunk)) => {
                    let room = ERROR_BODY_READ_LIMIT - read.len();
                    read.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) | Err(_) => break,
            }
        }
    };
    let _ = deadline.run(pin!(reading)).await;
    read
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
