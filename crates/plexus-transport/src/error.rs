//! Transport errors and their classification.

use std::io;
use std::sync::Arc;

use plexus_jsonrpc::{FrameError, ReplyScan, RequestId};
pub use plexus_jsonrpc::{error_causes, error_chain};

use crate::{AuthCause, AuthFailure, CloseReason};

/// The environment variable with which plexus's connector sets every transport's message size
/// limit (bytes); the errors about a message over the limit name it.
pub const MAX_MESSAGE_SIZE_VAR: &str = "PLEXUS_MAX_MESSAGE_SIZE";

/// How many bytes of an error response's body a transport reads for [`TransportError::Http`]
/// (and the other errors that quote a body): 16 KiB.
pub const ERROR_BODY_READ_LIMIT: usize = 16 * 1024;

/// How many bytes of an error response's body an error keeps: 1 KiB (see [`body_excerpt`]).
pub const BODY_EXCERPT_LIMIT: usize = 1024;

/// How an error affects the connection; the pool uses it to decide on reconnection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// A terminal I/O failure (ECONNRESET, ETIMEDOUT, EPIPE, ECONNREFUSED, …): the connection is
    /// unusable; several in a row force a reconnect.
    TerminalIo,
    /// The transport is closed: the peer went away or it was shut down.
    Closed,
    /// One message exceeded a size limit; the connection goes on.
    TooLarge,
    /// The peer sent something that is not valid MCP/JSON-RPC; the connection goes on.
    Protocol,
    /// The transport could not be established (spawn failed, refused, timed out).
    Connect,
    /// The server needs a login (a 401 that refreshing could not fix).
    NeedsAuth,
    /// The server ended the session (HTTP 404 for a request with a session id): reconnect and
    /// retry once.
    SessionExpired,
}

/// An error of a transport. Cloneable: one failure is delivered to every waiting caller.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The transport could not be established (made with [`TransportError::connect`]).
    #[error("could not connect to {target}")]
    Connect {
        /// What was being connected to (a command line, a URL).
        target: String,
        /// Why it failed: the error of the layer below (a socket's, TLS's, the process spawn's)
        /// or a reason of the transport's own, each a typed error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// An I/O error (shown with its cause by [`error_chain`]).
    #[error("{context}")]
    Io {
        /// What the transport was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },
    /// The peer went away, or the transport was closed.
    #[error("the connection is closed: {reason}{}", stderr_suffix(.stderr_tail.as_deref()))]
    Closed {
        /// Why: the client closed it, the server exited or closed its output, an error ended it.
        reason: CloseReason,
        /// The last lines the server wrote to its stderr, when there is a stderr.
        stderr_tail: Option<String>,
    },
    /// A message over the size limit; it was discarded.
    #[error(
        "a message of {size} bytes from the server is larger than the {limit}-byte limit; it was discarded \
         (raise the limit with {MAX_MESSAGE_SIZE_VAR})"
    )]
    TooLarge {
        /// Its size in bytes (for a message cut short, the bytes that arrived).
        size: usize,
        /// The limit in force.
        limit: usize,
    },
    /// A reply of the server was dropped (too large, or in a form the transport refuses). With its
    /// id, that request fails at once with this error instead of waiting for its timeout; without
    /// (it could not be read), the requests that time out meanwhile say that their reply may have
    /// been dropped. The connection goes on.
    #[error("{}", match .id {
        Some(id) => format!("the server's reply to request {id} was dropped"),
        None => "a message from the server that may have been a reply (its id could not be read) was dropped".to_owned(),
    })]
    DroppedReply {
        /// The id of the request it answered, when it could be read.
        id: Option<RequestId>,
        /// Why it was dropped (never itself a `DroppedReply`).
        #[source]
        reason: Box<TransportError>,
    },
    /// The response to one request is lost, and the connection goes on (Streamable HTTP: the
    /// request's response stream ended before the response and cannot be resumed). That request
    /// fails at once with this error instead of waiting for its timeout; it may have run. Its
    /// class is [`ErrorClass::TerminalIo`], so that losses in a row count towards a reconnect.
    #[error("the response to request {id} was lost: {reason}")]
    ResponseLost {
        /// The request.
        id: RequestId,
        /// Why, in the transport's words.
        reason: String,
    },
    /// A message that is not valid JSON-RPC, or an answer the transport cannot use (made with
    /// [`TransportError::protocol`]).
    #[error("the server sent an invalid message")]
    Protocol {
        /// What was wrong: the decoder's error, or a reason of the transport's own, each a typed
        /// error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The server needs a login.
    #[error("the server needs authentication")]
    NeedsAuth {
        /// Why: the provider's error, or the transport's [`AuthProblem`](crate::AuthProblem)
        /// quoting the server's challenge.
        #[source]
        cause: AuthCause,
    },
    /// Authentication failed for a reason a login would not fix (a rejected static header, a
    /// failing headers helper).
    #[error("authentication failed")]
    AuthFailed {
        /// Why: the provider's error, or the transport's [`AuthProblem`](crate::AuthProblem).
        #[source]
        cause: AuthCause,
    },
    /// The server no longer knows the session (Streamable HTTP: 404 for a request that carried a
    /// session id). Every in-flight call fails with this error; the owner reconnects and retries
    /// the call once.
    #[error("the server ended the session {session_id:?} (it answered 404); reconnect and retry")]
    SessionExpired {
        /// The session id the server no longer knows.
        session_id: String,
    },
    /// An HTTP status the transport cannot act on.
    #[error("the server answered HTTP {status} to {what}{}", body_suffix(.body))]
    Http {
        /// The status code.
        status: u16,
        /// What was being done ("POST https://…", "opening the event stream").
        what: String,
        /// The start of the response body (at most 16 KiB read, a short excerpt kept).
        body: String,
    },
}

fn body_suffix(body: &str) -> String {
    if body.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", body.trim())
    }
}

fn stderr_suffix(tail: Option<&str>) -> String {
    match tail {
        Some(t) if !t.trim().is_empty() => format!("\n--- last stderr output of the server ---\n{}", t.trim_end()),
        _ => String::new(),
    }
}

impl From<FrameError> for TransportError {
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::TooLarge { size, limit, reply } => TransportError::TooLarge { size, limit }.about_reply(reply),
            FrameError::Decode(d) => TransportError::protocol(d),
            FrameError::InvalidReply { error, reply } => TransportError::protocol(error).about_reply(reply),
            other => TransportError::protocol(other),
        }
    }
}

impl From<AuthFailure> for TransportError {
    fn from(failure: AuthFailure) -> Self {
        match failure {
            AuthFailure::NeedsAuth { cause } => TransportError::NeedsAuth { cause },
            AuthFailure::Failed { cause } => TransportError::AuthFailed { cause },
        }
    }
}

/// The start of a response body as an error quotes it: text (invalid UTF-8 replaced), trimmed,
/// and cut on a character boundary at [`BODY_EXCERPT_LIMIT`] bytes, with `…` where it was cut.
///
/// ```
/// use plexus_transport::{BODY_EXCERPT_LIMIT, body_excerpt};
///
/// assert_eq!(body_excerpt(b"  Session not found\n"), "Session not found");
/// let long = body_excerpt("é".repeat(BODY_EXCERPT_LIMIT).as_bytes());
/// assert_eq!(long.len(), BODY_EXCERPT_LIMIT + '…'.len_utf8());
/// ```
pub fn body_excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.len() <= BODY_EXCERPT_LIMIT {
        return text.to_owned();
    }
    let mut end = BODY_EXCERPT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl TransportError {
    /// An I/O error with what the transport was doing.
    pub fn from_io(context: impl Into<String>, source: io::Error) -> Self {
        TransportError::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// This error about a dropped message, as a [`TransportError::DroppedReply`] when the message
    /// is (or may be) a reply.
    ///
    /// ```
    /// use plexus_jsonrpc::ReplyScan;
    /// use plexus_transport::{RequestId, TransportError, error_chain};
    ///
    /// let error = TransportError::TooLarge { size: 20, limit: 16 }.about_reply(ReplyScan::Reply(RequestId::Number(3)));
    /// assert_eq!(error.reply_to(), Some(&RequestId::Number(3)));
    /// assert!(!error.is_terminal());
    /// assert_eq!(
    ///     error_chain(&error),
    ///     "the server's reply to request 3 was dropped: a message of 20 bytes from the server is larger than \
    ///      the 16-byte limit; it was discarded (raise the limit with PLEXUS_MAX_MESSAGE_SIZE)"
    /// );
    /// ```
    #[must_use]
    pub fn about_reply(self, reply: ReplyScan) -> TransportError {
        let id = match (reply, &self) {
            (_, TransportError::DroppedReply { .. }) | (ReplyScan::NotAReply, _) => return self,
            (ReplyScan::Reply(id), _) => Some(id),
            (ReplyScan::Unreadable, _) => None,
        };
        TransportError::DroppedReply {
            id,
            reason: Box::new(self),
        }
    }

    /// The error about the message `bytes` that the transport refuses for `reason`, as the reply's
    /// error when the bytes are (or may be) a reply (see [`IdScanner`](plexus_jsonrpc::IdScanner)).
    #[must_use]
    pub fn about_message(bytes: &[u8], reason: TransportError) -> TransportError {
        reason.about_reply(plexus_jsonrpc::IdScanner::reply(bytes))
    }

    /// The request whose reply this error is about, for a [`TransportError::DroppedReply`] with a
    /// readable id.
    pub fn reply_to(&self) -> Option<&RequestId> {
        match self {
            TransportError::DroppedReply { id, .. } => id.as_ref(),
            TransportError::ResponseLost { id, .. } => Some(id),
            _ => None,
        }
    }

    /// Whether this error is about a message of the server that may have been a reply but whose id
    /// could not be read.
    pub fn is_unidentified_reply(&self) -> bool {
        matches!(self, TransportError::DroppedReply { id: None, .. })
    }

    /// A [`TransportError::Connect`] to `target` that failed with `cause`.
    pub fn connect(target: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        TransportError::Connect {
            target: target.into(),
            source: Arc::new(cause),
        }
    }

    /// A [`TransportError::Protocol`]: the server's message or answer is wrong, as `cause` says.
    pub fn protocol(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        TransportError::Protocol {
            source: Arc::new(cause),
        }
    }

    /// A `Closed` error without a stderr tail.
    pub fn closed(reason: CloseReason) -> Self {
        TransportError::Closed {
            reason,
            stderr_tail: None,
        }
    }

    /// The class of this error.
    pub fn class(&self) -> ErrorClass {
        match self {
            TransportError::Connect { .. } | TransportError::AuthFailed { .. } | TransportError::Http { .. } => {
                ErrorClass::Connect
            }
            TransportError::Io { source, .. } if is_terminal_io(source.kind()) => ErrorClass::TerminalIo,
            TransportError::Io { .. } | TransportError::Closed { .. } => ErrorClass::Closed,
            TransportError::TooLarge { .. } => ErrorClass::TooLarge,
            TransportError::Protocol { .. } => ErrorClass::Protocol,
            TransportError::NeedsAuth { .. } => ErrorClass::NeedsAuth,
            TransportError::SessionExpired { .. } => ErrorClass::SessionExpired,
            TransportError::DroppedReply { reason, .. } => reason.class(),
            TransportError::ResponseLost { .. } => ErrorClass::TerminalIo,
        }
    }

    /// Whether the connection is unusable after this error (everything but one bad message).
    pub fn is_terminal(&self) -> bool {
        !matches!(self, TransportError::ResponseLost { .. })
            && !matches!(self.class(), ErrorClass::TooLarge | ErrorClass::Protocol)
    }
}

/// The I/O error kinds after which a connection is dead: ECONNRESET, ECONNABORTED, EPIPE,
/// ETIMEDOUT, ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ENOTCONN and an unexpected EOF.
pub fn is_terminal_io(kind: io::ErrorKind) -> bool {
    use io::ErrorKind as K;
    matches!(
        kind,
        K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::TimedOut
            | K::ConnectionRefused
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NotConnected
            | K::UnexpectedEof
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        for kind in [
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::TimedOut,
            io::ErrorKind::BrokenPipe,
            io::ErrorKind::ConnectionRefused,
        ] {
            assert_eq!(
                TransportError::from_io("x", kind.into()).class(),
                ErrorClass::TerminalIo,
                "{kind:?}"
            );
        }
        assert_eq!(
            TransportError::from_io("x", io::ErrorKind::PermissionDenied.into()).class(),
            ErrorClass::Closed
        );
        assert_eq!(
            TransportError::TooLarge { size: 2, limit: 1 }.class(),
            ErrorClass::TooLarge
        );
        assert!(!TransportError::protocol(plexus_jsonrpc::DecodeError::Batch).is_terminal());
        assert!(TransportError::closed(CloseReason::ByClient).is_terminal());
    }

    #[test]
    fn closed_error_shows_the_stderr_tail() {
        let e = TransportError::Closed {
            reason: CloseReason::Exited(crate::ProcessExit::Code(3)),
            stderr_tail: Some("boom\n".into()),
        };
        assert_eq!(
            e.to_string(),
            "the connection is closed: the server exited with status 3\n--- last stderr output of the server ---\nboom"
        );
    }

    #[test]
    fn auth_failures_map_to_their_classes() {
        let needs: TransportError = AuthFailure::NeedsAuth {
            cause: Arc::new(io::Error::other("log in")),
        }
        .into();
        assert_eq!(needs.class(), ErrorClass::NeedsAuth);
        assert_eq!(error_chain(&needs), "the server needs authentication: log in");
        let failed: TransportError = AuthFailure::Failed {
            cause: Arc::new(crate::AuthProblem::CredentialsRejected { status: 403 }),
        }
        .into();
        assert_eq!(failed.class(), ErrorClass::Connect);
        assert_eq!(
            error_chain(&failed),
            "authentication failed: the server rejected the configured credentials (HTTP 403)"
        );
    }

    #[test]
    fn excerpts_are_trimmed_and_cut_on_a_character_boundary() {
        assert_eq!(body_excerpt(b"  oops \n"), "oops");
        assert_eq!(body_excerpt(b"\xff ok"), "\u{FFFD} ok");
        let exact = "x".repeat(BODY_EXCERPT_LIMIT);
        assert_eq!(body_excerpt(exact.as_bytes()), exact);
        let cut = body_excerpt("é".repeat(BODY_EXCERPT_LIMIT).as_bytes());
        assert!(cut.ends_with("é…"));
        assert_eq!(cut.len(), BODY_EXCERPT_LIMIT + '…'.len_utf8());
    }

    #[test]
    fn frame_errors_map_to_their_classes() {
        let too_large: TransportError = FrameError::TooLarge {
            size: 9,
            limit: 8,
            reply: ReplyScan::NotAReply,
        }
        .into();
        assert_eq!(too_large.class(), ErrorClass::TooLarge);
        assert!(matches!(too_large, TransportError::TooLarge { size: 9, limit: 8 }));
        let reply: TransportError = FrameError::TooLarge {
            size: 9,
            limit: 8,
            reply: ReplyScan::Reply(RequestId::from("r")),
        }
        .into();
        assert_eq!(
            (reply.class(), reply.reply_to()),
            (ErrorClass::TooLarge, Some(&RequestId::from("r")))
        );
        let unreadable: TransportError = FrameError::InvalidReply {
            error: plexus_jsonrpc::DecodeError::NotAnObject,
            reply: ReplyScan::Unreadable,
        }
        .into();
        assert_eq!(unreadable.class(), ErrorClass::Protocol);
        assert!(unreadable.is_unidentified_reply() && !unreadable.is_terminal());
        assert_eq!(
            error_chain(&unreadable),
            "a message from the server that may have been a reply (its id could not be read) was dropped: the server \
             sent an invalid message: the message is JSON but not an object"
        );
        let bad: TransportError = FrameError::Decode(plexus_jsonrpc::DecodeError::Batch).into();
        assert_eq!(
            error_chain(&bad),
            "the server sent an invalid message: the message is a JSON array (a JSON-RPC batch); MCP does not allow batching"
        );
    }
}
