//! The session's error type.

use std::sync::Arc;
use std::time::Duration;

use plexus_jsonrpc::ErrorObject;
use plexus_protocol::NegotiationError;
use plexus_transport::{ErrorClass, TransportError};

/// Why a request or the session failed. Cloneable, so that one transport failure reaches every
/// waiting caller.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The transport failed or closed (for a child process, with its exit status and stderr tail).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// No response within the request's timeout; the server was sent `notifications/cancelled`.
    #[error("{method} timed out after {}{}", format_duration(*.after), unidentified_note(.unidentified.as_deref()))]
    Timeout {
        /// The method of the request.
        method: String,
        /// The timeout that expired.
        after: Duration,
        /// Messages of the server that the transport dropped while the request waited and whose
        /// id could not be read: one of them may have been its reply.
        unidentified: Option<Box<UnidentifiedDrops>>,
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
    #[error("{method}: the server's result is malformed")]
    InvalidResult {
        /// The method of the request.
        method: String,
        /// What did not fit.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// The server speaks no protocol version we support.
    #[error(transparent)]
    Negotiation(#[from] NegotiationError),
    /// A paginated list repeated a cursor, never ended, or grew past what one list may hold.
    #[error("{method}: the server's list does not end or is too long ({problem})")]
    Pagination {
        /// The list method.
        method: String,
        /// The repeated cursor, or the page or size limit that was reached.
        problem: ListProblem,
    },
    /// The caller's parameters could not be serialized.
    #[error("{method}: the request parameters cannot be encoded")]
    InvalidParams {
        /// The method of the request.
        method: String,
        /// Why.
        #[source]
        source: ParamsProblem,
    },
    /// The session was closed by its owner.
    #[error("the session is closed")]
    SessionClosed,
    /// The server's result names a `resultType` this client does not know (the stateless era
    /// defines `complete` and `input_required`).
    #[error("{method}: the server's result is of an unknown type {found:?}")]
    UnknownResultType {
        /// The method of the request.
        method: String,
        /// The `resultType` the server gave.
        found: String,
    },
    /// The server asked for input (`input_required`) that the client's handler could not give.
    #[error("{method}: the client could not answer the server's input request {key:?}")]
    InputRequest {
        /// The method of the request.
        method: String,
        /// The input request's key.
        key: String,
        /// What the handler answered.
        #[source]
        error: Box<ErrorObject>,
    },
    /// The server kept asking for input past [`MAX_INPUT_ROUNDS`](crate::MAX_INPUT_ROUNDS).
    #[error("{method}: the server still asked for input after {limit} rounds")]
    InputRounds {
        /// The method of the request.
        method: String,
        /// The limit.
        limit: usize,
    },
    /// The connection ended while the `server/discover` probe waited (a stdio server of the
    /// initialize era that exits on a request it does not know): whoever owns the transport
    /// starts the server again and speaks the initialize era to it.
    #[error("the server closed the connection on the server/discover probe")]
    ProbeClosed {
        /// How the connection ended.
        #[source]
        source: TransportError,
    },
    /// A tool call the server ran as a task ended without a result of its own: the server
    /// cancelled the task, or its final state is malformed.
    #[error("task {task_id}: {problem}")]
    Task {
        /// The task's id.
        task_id: String,
        /// What happened.
        problem: String,
    },
    /// The tool must run as a task, and the server declares no task-augmented `tools/call` (the
    /// `tasks` capability of 2025-11-25, or the stateless era's tasks extension).
    #[error("tool {tool:?} must be called as a task, and the server declares no tasks for tools/call")]
    TasksUnsupported {
        /// The tool.
        tool: String,
    },
    /// The host cancelled the request ([`Client::cancel_all`](crate::Client::cancel_all)); the
    /// server was told.
    #[error("cancelled: {reason}")]
    Cancelled {
        /// The host's words.
        reason: String,
    },
}

/// What is wrong with a paginated list (a [`ClientError::Pagination`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListProblem {
    /// The pages add up to more bytes than one list may hold.
    #[error("its pages add up to more than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The server gave a cursor a second time.
    #[error("the cursor {cursor:?} came back a second time")]
    RepeatedCursor {
        /// The cursor (the server's text).
        cursor: String,
    },
    /// The list has more pages than one list may have.
    #[error("more than {limit} pages")]
    TooManyPages {
        /// The limit of pages.
        limit: usize,
    },
}

/// Why request parameters could not be encoded (a [`ClientError::InvalidParams`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ParamsProblem {
    /// serde_json could not serialize them.
    #[error(transparent)]
    Json(Arc<serde_json::Error>),
    /// They are not a JSON object, so they cannot carry a progress token or the envelope.
    #[error("params must be an object to carry a progress token or the request envelope")]
    NotAnObject,
    /// The stateless revision's envelope could not be written into them.
    #[error("the request envelope cannot be written")]
    Envelope(#[source] Arc<plexus_protocol::envelope::EnvelopeError>),
}

impl From<serde_json::Error> for ParamsProblem {
    fn from(error: serde_json::Error) -> Self {
        ParamsProblem::Json(Arc::new(error))
    }
}

/// Messages of the server that were dropped (too large, invalid) without a readable id while a
/// request waited: one of them may have been its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnidentifiedDrops {
    /// How many.
    pub count: u64,
    /// Why the last one was dropped.
    pub last: String,
}

fn unidentified_note(drops: Option<&UnidentifiedDrops>) -> String {
    match drops {
        None => String::new(),
        Some(UnidentifiedDrops { count: 1, last }) => format!(
            "; meanwhile a message from the server was dropped whose id could not be read, so it may have been the \
             reply ({last})"
        ),
        Some(UnidentifiedDrops { count, last }) => format!(
            "; meanwhile {count} messages from the server were dropped whose ids could not be read, so one may have \
             been the reply (the last: {last})"
        ),
    }
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
            unidentified: None,
        };
        assert_eq!(e.to_string(), "tools/call timed out after 1 min");
        let e = ClientError::Timeout {
            method: "tools/list".into(),
            after: Duration::from_secs(2),
            unidentified: Some(Box::new(UnidentifiedDrops {
                count: 1,
                last: "too large".into(),
            })),
        };
        assert_eq!(
            e.to_string(),
            "tools/list timed out after 2 s; meanwhile a message from the server was dropped whose id could not be \
             read, so it may have been the reply (too large)"
        );
    }
}
