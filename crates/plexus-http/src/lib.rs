//! The Streamable HTTP MCP transport (protocol 2025-11-25): one POST per message, JSON or SSE responses, the session id and protocol version headers, a resumable event stream for server-initiated messages, auth hooks, and the session's end.
//!
//! ```
//! # use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // A one-shot stand-in for a real server: it answers the first request with a JSON body.
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let url = format!("http://{}/mcp", listener.local_addr()?);
//! # tokio::spawn(async move {
//! #     let (mut socket, _) = listener.accept().await.unwrap();
//! #     let mut request = vec![0; 64 * 1024];
//! #     let _ = socket.read(&mut request).await;
//! #     let body = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}"#;
//! #     let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\n\r\n", body.len());
//! #     socket.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
//! #     let _ = socket.read(&mut request).await; // the DELETE on close
//! # });
//! use plexus_http::{HttpConfig, HttpTransport};
//! use plexus_transport::{Message, OutboundMessage, Transport};
//!
//! let transport = HttpTransport::new(HttpConfig::new(url))?; // no network yet
//! let info = transport.info();
//! let (sender, _receiver) = Box::new(transport).split();
//! let initialize = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#)?;
//! // A JSON body's response comes back from `send` (an SSE stream's would come through the receiver).
//! let response = sender.send(OutboundMessage::from_message(&initialize)).await?.expect("a JSON body");
//! assert!(response.outcome.is_ok());
//! assert_eq!(info.session_id().as_deref(), Some("s-1"));
//! assert_eq!(info.protocol_version().as_deref(), Some("2025-11-25"));
//! sender.close().await?; // DELETE with the session id, bounded by a short timeout
//! # Ok(())
//! # }
//! ```
//!
//! # Sending
//!
//! Every message is a POST to the endpoint with `Accept: application/json, text/event-stream`,
//! through plexus-net's HTTP client: pooled keep-alive HTTP/1.1 connections, or one HTTP/2
//! connection when a TLS server offers it, with the entry's proxy, CA and client certificate. For a request answered with
//! a JSON body, [`send`](plexus_transport::TransportSender::send) reads the body and gives the
//! response back (the caller completes its own call: no other task is involved). For one
//! answered with an SSE stream (a priming event with an id and no data, any requests and
//! notifications of the server, then the response), `send` returns as soon as the response
//! headers are in and a background task reads the stream into the receiver. Many requests are
//! in flight at once. For a notification or a response, `send` returns when the server accepted
//! it (202).
//!
//! # Connections
//!
//! At most [`HttpConfig::max_connections`] (100) connections are open at once; a request that
//! finds them all busy waits, within its timeout, for one to come back. At most
//! [`HttpConfig::max_idle_connections`] (32) wait for later requests, each for at most
//! [`HttpConfig::idle_timeout`] (30 s, less when the server's `Keep-Alive` header says it closes
//! sooner); a background task closes them as they expire. An HTTP/1.1 connection is driven by
//! the task that uses it, so it needs no task of its own. An idle connection that the server
//! closed, or that waited past its idle timeout, is noticed before use and dropped.
//!
//! A request whose bytes may have reached the server is never sent again (the server may have
//! acted on it: a tool must not run twice). When its connection closes or breaks before the
//! answer, it fails with [`TransportError::Io`] (a terminal I/O error) saying that the request
//! was sent and whether the server acted on it is unknown. Only a request of which nothing was
//! written (hyper gives it back: its kept-alive connection turned out closed) goes again, once,
//! on a new connection. When the server answers before it read the whole request, as with a
//! large body answered with 413 or 401 and a close, that answer is the answer.
//!
//! # The session
//!
//! The `Mcp-Session-Id` of the `initialize` response is sent on every later request. The
//! transport learns the negotiated protocol version by reading `result.protocolVersion` of the
//! `initialize` response as it passes through (back from `send`, or to the receiver; no setter
//! is needed), and sends
//! it as `MCP-Protocol-Version` on every later request. The `initialize` request itself goes
//! without either header. [`SessionInfo`] shows both.
//!
//! A 404 to a request that carried a session id means that the server ended the session: the
//! transport closes with [`TransportError::SessionExpired`], which that `send` returns, the
//! receiver yields at once (so every in-flight call fails with it) and every later `send`
//! returns. Its owner reconnects with a new transport (a new `initialize` without a session id)
//! and retries the call once.
//!
//! # Server-initiated messages
//!
//! Once the server accepted `notifications/initialized`, a GET opens the standalone event
//! stream ([`SessionInfo::event_stream`]); a 405 means that the server has none. When it ends or
//! breaks, it is reopened with `Last-Event-ID` after the server's SSE `retry:` delay if it sent
//! one, else after a capped exponential backoff with jitter ([`ReconnectPolicy`]: 1 s, ×1.5,
//! at most 30 s); after [`ReconnectPolicy::max_attempts`] reconnections in a row that brought
//! nothing, it is given up. A POST's SSE stream that ends before the response is resumed the
//! same way (`GET` with `Last-Event-ID`); when it cannot be (no event id, 405, too many
//! fruitless attempts, a server that refuses connections), that request fails with
//! [`TransportError::ResponseLost`], which says why, so that its caller does not wait for its
//! timeout.
//!
//! # Failures, timeouts and limits
//!
//! - Each request has its own timer for its response headers (and its whole body when that is
//!   JSON), derived from the request's own timeout and never shorter: that timeout
//!   ([`reply_timeout`](plexus_transport::OutboundMessage::reply_timeout)) plus
//!   [`REPLY_TIMEOUT_GRACE`](plexus_transport::REPLY_TIMEOUT_GRACE) (1 s), so that its
//!   sender's timer fires first and cancels it on the server. A message
//!   without one (a notification, a response, a request whose sender's timer restarts on
//!   progress) is bounded by [`HttpConfig::request_timeout`] (default 60 s). A request's SSE
//!   stream is bounded by the same timer when the request has a timeout of its own (past it, the
//!   request fails with a JSON-RPC error and the stream is dropped); without one, it lasts until
//!   the response, the transport's end, or the request's cancellation: a
//!   `notifications/cancelled` sent for it drops its stream, whatever the server does with it.
//!   Opening a connection (TCP and TLS) has its own timeout ([`RemoteEndpoint::connect_timeout`](plexus_net::RemoteEndpoint::connect_timeout),
//!   default 30 s).
//! - A connection failure (refused, reset, timed out, …) fails that request with
//!   [`TransportError::Io`] (a terminal I/O error) and the transport stays open: whoever owns
//!   the connection decides when enough failed (plexus-pool takes it as lost after 3 in a row,
//!   for every remote transport alike).
//! - A JSON body or SSE event larger than [`RemoteEndpoint::max_message_size`](plexus_net::RemoteEndpoint::max_message_size) (16 MiB) is never
//!   buffered past the cap, and the request it answers fails at once, told once. For a JSON
//!   body, `send` returns [`TransportError::DroppedReply`] naming the request, with
//!   [`TransportError::TooLarge`]: its size is the declared length, or what arrived (counted,
//!   not kept) until the body ended or the request's deadline passed. An SSE event over the cap
//!   reaches the receiver as `TooLarge`, wrapped in `DroppedReply` with the request's id when it
//!   is a reply (the id is scanned as the event streams by). A JSON body that is not JSON-RPC
//!   fails its request the same way (`DroppedReply` with [`TransportError::Protocol`]); one cut
//!   off or late fails it with [`TransportError::Io`]. An error response's body is read up to
//!   [`ERROR_BODY_READ_LIMIT`] (16 KiB) for [`TransportError::Http`].
//! - A response head is at most 64 KiB with at most 100 headers (hyper's parser; folded header
//!   lines are accepted). A response that is not HTTP fails its request. A compressed body
//!   (gzip, br, deflate) is decoded as it arrives; the size cap applies to the decoded bytes.
//! - Redirects are followed within the endpoint's origin only (same method, body and headers).
//!   A redirect to another origin fails with [`TransportError::Connect`]: credentials and
//!   custom headers never reach another server.
//! - A 413 says that the server refused the request as too large, with the request's size, the
//!   status and the start of the body ([`TransportError::Http`]).
//! - An `initialize` POST answered with 400, 404 or 405 fails with [`TransportError::Http`]
//!   carrying that status: the signal for the layer above to fall back to the legacy HTTP+SSE
//!   transport at the same URL (this crate does not).
//!
//! # Auth
//!
//! The configured headers go on every request, except those the transport writes itself
//! (`Accept`, `Content-Type`, `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`,
//! `Accept-Encoding` and HTTP/1.1's framing and connection headers); a configured `Host` or
//! `User-Agent` replaces the transport's. Before each request the
//! [`AuthProvider`](plexus_transport::AuthProvider) (if any) gives its headers for the request's
//! method and URL (so that it can sign them: DPoP proofs); they replace configured headers of the
//! same name. On a 401 or 403 the provider gets the parsed `WWW-Authenticate` challenges (and a
//! `DPoP-Nonce`), once per request: on `Retry` the request is retried once with fresh headers
//! (once more if that retry meets a DPoP nonce challenge); `NeedsAuth` fails it with
//! [`TransportError::NeedsAuth`], `Fail` with [`TransportError::AuthFailed`]. Without a provider,
//! or when the retry is rejected too, the rejection is the answer, quoting the challenge and the
//! start of the body: the rules of [`plexus_net::Credentials`], which every remote
//! transport shares.
//!
//! # Closing
//!
//! [`close`](plexus_transport::TransportSender::close) stops every background task, ends the
//! receiver with `the connection is closed: the transport was closed by the client`, and sends
//! a `DELETE` with the session id (a 405 is fine), bounded by [`CLOSE_TIMEOUT`]. Dropping both
//! halves does the same in the background when a Tokio runtime is at hand.
//!
//! # Runtime
//!
//! [`HttpTransport::new`] needs no runtime and touches no network; sending needs a Tokio runtime
//! with time enabled (either flavour).
//!
//! Dependencies: plexus-net's HTTP client (hyper underneath) sends every request, with its
//! settings (proxies, TLS, compression, the same-origin redirect rule); `http` names its headers;
//! `url` parses and joins URLs; `bytes` carries bodies without copies; `tokio-util` provides the
//! cancellation token that stops the background readers; `serde`/`serde_json` read the
//! negotiated `protocolVersion` and the message of JSON-RPC error bodies. SSE bodies are decoded
//! by [`plexus_net::sse`], which caps every event while it arrives; the headers and the auth logic
//! are [`plexus_net::Credentials`].
#![forbid(unsafe_code)]

mod body;
mod config;
mod deadline;
mod errors;
mod inner;
mod receiver;
mod request;
mod sender;
mod stream;

use std::sync::Arc;

use plexus_transport::{Transport, TransportError, TransportReceiver, TransportSender};

pub use config::{
    CLOSE_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_IDLE_CONNECTIONS, DEFAULT_RECEIVE_QUEUE_CAPACITY, DEFAULT_REQUEST_TIMEOUT, ERROR_BODY_EXCERPT,
    ERROR_BODY_READ_LIMIT, HttpConfig, MAX_REDIRECTS, ReconnectPolicy, STREAM_END_GRACE,
};
pub use errors::ResponseProblem;
pub use receiver::HttpReceiver;
pub use sender::HttpSender;

use crate::inner::Inner;

/// A Streamable HTTP transport to one MCP endpoint, ready to be split into its two halves.
#[derive(Debug)]
pub struct HttpTransport {
    sender: HttpSender,
    receiver: HttpReceiver,
    info: SessionInfo,
}

impl HttpTransport {
    /// Checks `config` and sets up the HTTP client; nothing is sent until the first message.
    ///
    /// Fails with [`TransportError::Connect`] naming the URL when it is not an `http` or `https`
    /// URL, when a configured header is invalid, or when the HTTP client cannot be set up.
    pub fn new(config: HttpConfig) -> Result<HttpTransport, TransportError> {
        let (inner, queue) = Inner::new(config)?;
        let handle = Arc::new(Handle {
            inner: Arc::clone(&inner),
        });
        Ok(HttpTransport {
            sender: HttpSender::new(Arc::clone(&inner), Arc::clone(&handle)),
            receiver: HttpReceiver::new(Arc::clone(&inner), queue, handle),
            info: SessionInfo { inner },
        })
    }

    /// The session's state; the handle stays valid after the split.
    pub fn info(&self) -> SessionInfo {
        self.info.clone()
    }

    /// The two halves, with their concrete types.
    pub fn into_parts(self) -> (HttpSender, HttpReceiver) {
        (self.sender, self.receiver)
    }
}

impl Transport for HttpTransport {
    /// The endpoint's URL without credentials (a query is shown as `?…`).
    fn describe(&self) -> String {
        self.info.inner.description.clone()
    }

    /// The endpoint's host and port over TCP, speaking `http`.
    fn peer(&self) -> plexus_transport::Peer {
        plexus_net::peer_of(&self.info.inner.description, "http")
    }

    fn split(self: Box<Self>) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>) {
        let (sender, receiver) = self.into_parts();
        (Box::new(sender), Box::new(receiver))
    }
}

/// The state of the standalone event stream (server-initiated messages).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventStreamState {
    /// Not opened yet: it opens once the server accepted `notifications/initialized`.
    NotStarted,
    /// The first GET is on its way.
    Connecting,
    /// Open: server messages arrive on it.
    Open,
    /// Waiting to reconnect, after `failures` reconnections in a row that brought nothing.
    Reconnecting {
        /// Fruitless reconnections so far (0 after a stream that delivered something).
        failures: u32,
    },
    /// The server offers no event stream (it answered the GET with 405).
    Unsupported,
    /// Given up (see [`ReconnectPolicy::max_attempts`]); server-initiated messages no longer
    /// arrive, requests still work.
    GaveUp {
        /// Why.
        reason: String,
    },
}

/// A view of a transport's session and activity, for diagnostics and tests. It stays valid
/// (showing the last state) after the transport ends.
#[derive(Clone)]
pub struct SessionInfo {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SessionInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionInfo")
            .field("url", &self.inner.description)
            // A session id is a credential of sorts: only whether there is one.
            .field("has_session", &self.session_id().is_some())
            .field("protocol_version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

impl SessionInfo {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        SessionInfo { inner }
    }

    /// The session id the server gave in its `initialize` response, if any.
    pub fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    /// The protocol version read from the `initialize` response (sent as
    /// `MCP-Protocol-Version` on every later request).
    pub fn protocol_version(&self) -> Option<String> {
        self.inner.protocol_version()
    }

    /// The state of the standalone event stream.
    pub fn event_stream(&self) -> EventStreamState {
        self.inner.event_stream()
    }

    /// How many `send` calls are running (each with its timer armed).
    pub fn requests_in_flight(&self) -> usize {
        self.inner.requests_in_flight.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many background tasks are running (body readers and the event stream).
    pub fn running_tasks(&self) -> usize {
        self.inner.running_tasks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many connections to the server are open (busy or idle).
    pub fn open_connections(&self) -> usize {
        self.inner.client.open_connections()
    }

    /// How many open connections wait for a request.
    pub fn idle_connections(&self) -> usize {
        self.inner.client.idle_connections()
    }

    /// Whether the transport has ended, and why.
    pub fn closed(&self) -> Option<TransportError> {
        self.inner.terminal()
    }
}

/// Ends the transport when both halves are gone.
pub(crate) struct Handle {
    inner: Arc<Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.inner
            .close_with(TransportError::closed(plexus_transport::CloseReason::Dropped));
        let needs_delete =
            self.inner.session_id().is_some() && !self.inner.session_ended.load(std::sync::atomic::Ordering::SeqCst);
        if needs_delete && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let inner = Arc::clone(&self.inner);
            runtime.spawn(async move {
                inner.end_session().await;
                inner.client.close();
            });
        } else {
            self.inner.client.close();
        }
    }
}
