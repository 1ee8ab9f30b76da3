//! The legacy HTTP+SSE MCP transport (protocol 2024-11-05): server messages arrive as events of one long-lived event stream, client messages are POSTed to the endpoint the stream names.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // A one-connection stand-in for a server: the endpoint event, then one message.
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let url = format!("http://{}/sse", listener.local_addr()?);
//! # tokio::spawn(async move {
//! #     use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! #     let (mut socket, _) = listener.accept().await.unwrap();
//! #     let mut request = [0; 4096];
//! #     let _ = socket.read(&mut request).await;
//! #     let events = "event: endpoint\ndata: /messages?sessionId=1\n\n\
//! #         data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
//! #     let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
//! #     socket.write_all(format!("{head}{events}").as_bytes()).await.unwrap();
//! #     let _ = socket.read(&mut request).await; // until the client hangs up
//! # });
//! use plexus_net::RemoteConfig as _;
//! use plexus_sse::{SseConfig, SseTransport};
//! use plexus_transport::Transport;
//!
//! // `url` is the server's event stream, e.g. "http://127.0.0.1:8080/sse".
//! let transport = SseTransport::connect(SseConfig::new(url).header("X-Api-Key", "secret")).await?;
//! // The server named a relative endpoint; it was resolved against the stream's URL.
//! assert!(transport.endpoint().as_str().ends_with("/messages?sessionId=1"));
//! let (sender, mut receiver) = Box::new(transport).split();
//! assert_eq!(receiver.recv().await?.method(), Some("notifications/tools/list_changed"));
//! sender.close().await?; // drops the event stream
//! # Ok(())
//! # }
//! ```
//!
//! # Connecting
//!
//! [`SseTransport::connect`] GETs [`RemoteEndpoint::url`](plexus_net::RemoteEndpoint::url) (`Accept: text/event-stream`) with the
//! configured headers and the [`AuthProvider`](plexus_transport::AuthProvider)'s, waits up to
//! [`RemoteEndpoint::connect_timeout`](plexus_net::RemoteEndpoint::connect_timeout) for the answer and then up to [`SseConfig::endpoint_timeout`] for
//! the `endpoint` event (plexus's connector sets both to the connect budget: the entry's
//! `timeout`, else `MCP_TIMEOUT`, else 30 s). Its data is resolved against the event stream's URL (relative endpoints
//! such as `/messages?sessionId=…` are the norm); an endpoint on another origin (scheme, host and
//! port) is refused and never contacted, because every POST carries the configured headers and
//! credentials. Every failure is a [`TransportError`] naming the URL (without its query and user
//! information, which often hold secrets): a [`TransportError::Connect`] saying what went wrong
//! (refused, timed out, no endpoint, wrong content type, endpoint elsewhere),
//! [`TransportError::Http`] for an unexpected status with an excerpt of the body (at most
//! [`MAX_ERROR_BODY`] read), [`TransportError::NeedsAuth`] or [`TransportError::AuthFailed`].
//!
//! # Authentication
//!
//! The provider's headers go on the GET and on every POST, on top of the configured ones. On a
//! 401 or 403 the provider's [`on_rejection`](plexus_transport::AuthProvider::on_rejection) is
//! called once with the parsed `WWW-Authenticate` challenges; when it answers
//! [`Retry`](plexus_transport::AuthDecision::Retry), the request is sent once more with fresh
//! headers. Without a provider, or when the retry is rejected too, a 401 is
//! [`TransportError::NeedsAuth`] and a 403 [`TransportError::AuthFailed`], each quoting the
//! challenge and the start of the body (the rules of [`plexus_net::Credentials`], which
//! every remote transport shares).
//!
//! Redirects are followed only within the origin (at most [`MAX_REDIRECTS`]); a redirect to
//! another origin is not followed and is reported, so that headers and credentials never reach
//! another origin.
//!
//! # Messages
//!
//! See [`SseSender`] (one POST per message, each with its own timeout, never shorter than the
//! request's own, a bounded number in flight) and [`SseReceiver`] (`message` events decoded in the reader itself, events over
//! [`RemoteEndpoint::max_message_size`](plexus_net::RemoteEndpoint::max_message_size) discarded without being buffered past the limit). When the event
//! stream ends or fails, the transport is over: the receiver yields the reason and every send
//! fails with it. This transport does not reconnect: a new event stream is a new session, which the
//! owner of the transport decides on. [`close`](plexus_transport::TransportSender::close) drops the
//! event stream, which closes its connection, and stops the POSTs in flight; the 2024-11-05
//! transport has no session to DELETE.
//!
//! Dependencies: plexus-net's HTTP client (hyper underneath: pooled connections, proxies, TLS
//! with the platform's roots and the entry's CA and client certificate, compressed bodies, the
//! same-origin redirect rule), `http` for its header types, `url` for the endpoint; `bytes` holds
//! the stream's chunks without copying; `tokio-util` provides the cancellation token that stops
//! in-flight POSTs when the transport ends. The event stream is decoded by
//! [`plexus_net::sse`], which bounds an event's size and stays linear in it (the available
//! parsers do neither); the auth logic is [`plexus_net::Credentials`].
#![forbid(unsafe_code)]

mod config;
mod connect;
mod receiver;
mod request;
mod sender;

use plexus_transport::{Transport, TransportError, TransportReceiver, TransportSender};
use url::Url;

pub use config::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_ENDPOINT_TIMEOUT, DEFAULT_MAX_CONCURRENT_POSTS, DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_REQUEST_TIMEOUT, MAX_EARLY_MESSAGES, MAX_ERROR_BODY, MAX_REDIRECTS, SseConfig, TCP_KEEPALIVE,
};
pub use connect::SseConnectError;
pub use receiver::SseReceiver;
pub use sender::SseSender;

/// A connected legacy HTTP+SSE transport: its event stream is open and the server has named its
/// endpoint.
#[derive(Debug)]
pub struct SseTransport {
    target: String,
    sender: SseSender,
    receiver: SseReceiver,
}

impl SseTransport {
    /// Opens the event stream and waits for the endpoint (see the crate docs). Must be called
    /// within a Tokio runtime with time enabled; either flavour works.
    pub async fn connect(config: SseConfig) -> Result<SseTransport, TransportError> {
        let connected = connect::connect(config).await?;
        Ok(SseTransport {
            target: connected.target,
            sender: connected.sender,
            receiver: connected.receiver,
        })
    }

    /// The endpoint the server named, resolved: where messages are POSTed.
    pub fn endpoint(&self) -> &Url {
        self.sender.endpoint()
    }

    /// The two halves, with their concrete types.
    pub fn into_parts(self) -> (SseSender, SseReceiver) {
        (self.sender, self.receiver)
    }
}

impl Transport for SseTransport {
    /// The event stream's URL, without query or user information.
    fn describe(&self) -> String {
        self.target.clone()
    }

    /// The event stream's host and port over TCP, speaking `http`.
    fn peer(&self) -> plexus_transport::Peer {
        plexus_net::peer_of(&self.target, "http")
    }

    fn split(self: Box<Self>) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>) {
        let (sender, receiver) = self.into_parts();
        (Box::new(sender), Box::new(receiver))
    }
}
