//! The `Transport` trait that every MCP transport implements, the `AuthProvider` hook of the remote ones, `TransportError` with its classification, and `OutboundMessage`.
//!
//! Like `tower-service`, this crate is tiny and stable: transports (stdio, SSE, Streamable HTTP,
//! WebSocket) implement it, the session layer consumes it, and neither knows the other.
//!
//! A transport splits into two halves that work concurrently with no lock held across an await:
//! a [`TransportSender`] shared by every caller (bounded: `send` waits when the transport's queue is
//! full) and a [`TransportReceiver`] polled by one reader. When the peer goes away the receiver
//! yields a terminal [`TransportError`] that says why (for a child process: its exit status and the
//! tail of its stderr); after that it keeps yielding [`TransportError::Closed`].
//!
//! ```
//! use plexus_transport::{ErrorClass, TransportError};
//!
//! let err = TransportError::from_io("writing to the server", std::io::ErrorKind::BrokenPipe.into());
//! assert_eq!(err.class(), ErrorClass::TerminalIo);
//! assert!(err.is_terminal());
//! ```
//!
//! The remote transports authenticate through an [`AuthProvider`]: the headers of each request,
//! and what a 401 or 403 ([`Rejection`]) means. What they share beyond these traits (credentials,
//! challenge parsing, the SSE decoder, the HTTP client) lives in `plexus-net`, one layer up.
//!
//! Dependencies: `plexus-jsonrpc` (messages and ids) and `thiserror`; nothing else, so that a
//! transport or a host can depend on this crate at no cost.
#![forbid(unsafe_code)]

mod auth;
mod close;
mod error;
mod outbound;
mod peer;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use auth::{
    AuthCause, AuthDecision, AuthFailure, AuthHeaders, AuthProblem, AuthProvider, MAX_REJECTION_HEADERS, Rejection,
};
pub use close::{CloseReason, ProcessExit, ServerOutput, close_code_meaning};
pub use error::{
    BODY_EXCERPT_LIMIT, ERROR_BODY_READ_LIMIT, ErrorClass, MAX_MESSAGE_SIZE_VAR, TransportError, body_excerpt,
    error_causes, error_chain, is_terminal_io,
};
pub use outbound::{MessageHeader, OutboundKind, OutboundMessage, PROTOCOL_VERSION_HEADER, REPLY_TIMEOUT_GRACE};
pub use peer::Peer;
pub use plexus_jsonrpc::{Message, RequestId, Response};

/// A boxed, sendable future (what the object-safe methods of this crate return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A connected MCP transport, ready to be split into its two halves.
pub trait Transport: Send + 'static {
    /// A short description of the peer for logs and errors (a command line or a URL).
    fn describe(&self) -> String;

    /// How it reaches its peer, for telemetry (OpenTelemetry's `network.transport`,
    /// `server.address` and `server.port`). The default: [`Peer::Unknown`].
    fn peer(&self) -> Peer {
        Peer::Unknown
    }

    /// Splits the transport into its sending and receiving halves. The session keeps the sender
    /// (shared by every caller) and moves the receiver into its reader.
    fn split(self: Box<Self>) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>);
}

/// The sending half: shared by every caller, concurrently.
pub trait TransportSender: Send + Sync + 'static {
    /// Queues one message for the peer. Waits (bounded by the transport's queue) when the peer is
    /// slower than the callers; fails at once when the transport is closed.
    ///
    /// For a request, a transport that has the peer's reply in hand when the send completes (an
    /// HTTP transport that read a JSON response body) gives it back as `Some`: that reply does
    /// not also come through the [`TransportReceiver`], so the caller must handle it as it
    /// handles the replies the receiver yields. Every other send gives back `None` (stream
    /// transports always do: their replies come through the receiver).
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Option<Response>, TransportError>>;

    /// Shuts the transport down gracefully and waits until it is down (each transport documents
    /// its own bounded shutdown sequence). Closing twice is harmless.
    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>>;

    /// Whether the transport has closed (by [`close`](Self::close) or because the peer went away).
    fn is_closed(&self) -> bool;

    /// Begins closing the transport at once, without waiting, for an owner that cannot wait (one
    /// being dropped): what dropping the transport does, but now, while other handles may still
    /// hold it. The default does nothing; a transport with a shutdown sequence of its own (stdio)
    /// starts it.
    fn close_now(&self) {}

    /// Whether this transport sends a message's own HTTP headers
    /// ([`OutboundMessage::with_headers`]): Streamable HTTP does. A session of the 2026-07-28
    /// revision works them out (and checks its tools' `x-mcp-header` annotations) only for a
    /// transport that does. The default: no.
    fn carries_headers(&self) -> bool {
        false
    }

    /// The session id the server gave this transport, for telemetry (`mcp.session.id`):
    /// Streamable HTTP's `Mcp-Session-Id` in the `initialize` era. The default: none.
    fn session_id(&self) -> Option<String> {
        None
    }
}

/// The receiving half: polled by one reader.
pub trait TransportReceiver: Send + 'static {
    /// Polls for the next message from the peer.
    ///
    /// `Err` with a non-terminal error (see [`TransportError::is_terminal`]) reports one bad message
    /// (garbage, too large) and the stream goes on. A terminal error says why the peer went away;
    /// every later poll returns [`TransportError::Closed`].
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message, TransportError>>;

    /// [`poll_recv`](Self::poll_recv), with what the transport knows of the request each message
    /// relates to. Streamable HTTP knows it: a message that arrives on the event stream of a
    /// `POST` relates to the request that `POST` carried. Other transports cannot tell (the
    /// default gives no relation).
    fn poll_recv_related(&mut self, cx: &mut Context<'_>) -> Poll<Result<Received, TransportError>> {
        self.poll_recv(cx).map_ok(Received::unrelated)
    }
}

/// A message from the peer and the request of ours it relates to, when the transport can tell.
#[derive(Debug)]
pub struct Received {
    /// The message.
    pub message: Message,
    /// The id of the request (sent by this side) on whose behalf the peer sent it: for
    /// Streamable HTTP, the request whose `POST` response stream carried it.
    pub related_request: Option<RequestId>,
}

impl Received {
    /// A message the transport cannot relate to any request.
    pub fn unrelated(message: Message) -> Self {
        Received {
            message,
            related_request: None,
        }
    }
}

impl dyn TransportReceiver {
    /// Waits for the next message (see [`TransportReceiver::poll_recv`]).
    pub fn recv(&mut self) -> impl Future<Output = Result<Message, TransportError>> + Send + '_ {
        std::future::poll_fn(move |cx| self.poll_recv(cx))
    }

    /// Waits for the next message with its relation (see
    /// [`TransportReceiver::poll_recv_related`]).
    pub fn recv_related(&mut self) -> impl Future<Output = Result<Received, TransportError>> + Send + '_ {
        std::future::poll_fn(move |cx| self.poll_recv_related(cx))
    }
}
