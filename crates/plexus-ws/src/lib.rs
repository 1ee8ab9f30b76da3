//! The WebSocket MCP transport: subprotocol `mcp`, one JSON-RPC message per text frame, ping keepalive with dead-peer detection, and a close handshake on shutdown.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // A stand-in server that accepts the `mcp` subprotocol and echoes text frames.
//! # use futures_util::{SinkExt, StreamExt};
//! # use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let url = format!("ws://{}/mcp", listener.local_addr()?);
//! # tokio::spawn(async move {
//! #     let (socket, _) = listener.accept().await.unwrap();
//! #     let accept = |_: &Request, mut response: Response| {
//! #         response.headers_mut().insert("sec-websocket-protocol", "mcp".parse().unwrap());
//! #         Ok(response)
//! #     };
//! #     let mut ws = tokio_tungstenite::accept_hdr_async(socket, accept).await.unwrap();
//! #     while let Some(Ok(frame)) = ws.next().await {
//! #         if frame.is_text() { ws.send(frame).await.unwrap(); }
//! #     }
//! # });
//! use plexus_transport::{Message, OutboundMessage, Transport};
//! use plexus_net::RemoteConfig as _;
//! use plexus_ws::{WsConfig, WsTransport};
//!
//! // `url` is the server's, e.g. "ws://127.0.0.1:8080/mcp".
//! let transport = WsTransport::connect(WsConfig::new(url).header("Authorization", "Bearer t")).await?;
//! let (sender, mut receiver) = Box::new(transport).split();
//! let ping = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)?;
//! sender.send(OutboundMessage::from_message(&ping)).await?; // one text frame
//! assert_eq!(receiver.recv().await?.method(), Some("ping")); // the server echoed it
//! sender.close().await?; // close frame 1000, the server's answer, then the TCP connection closes
//! # Ok(())
//! # }
//! ```
//!
//! # Connecting
//!
//! [`WsTransport::connect`] opens TCP (through the proxy's `CONNECT` tunnel when one applies,
//! and TLS for `wss`, through rustls with the platform's trust store) and sends the upgrade
//! request with `Sec-WebSocket-Protocol: mcp`, the configured headers
//! and the [`AuthProvider`](plexus_transport::AuthProvider)'s; all of it within
//! [`RemoteEndpoint::connect_timeout`](plexus_net::RemoteEndpoint::connect_timeout). The server must answer with the subprotocol `mcp`: a server that
//! leaves it out (or picks another) is refused with a [`TransportError::Connect`] that says so. A
//! 401 or 403 answer goes to the provider's
//! [`on_rejection`](plexus_transport::AuthProvider::on_rejection) once, and the upgrade is retried
//! once with fresh headers when it says [`Retry`](plexus_transport::AuthDecision::Retry); without a
//! provider, or when the retry is rejected too, a 401 is [`TransportError::NeedsAuth`] and a 403
//! [`TransportError::AuthFailed`], each quoting the `WWW-Authenticate` challenge and the start of
//! the body (the rules of [`plexus_net::Credentials`]). A redirect is not followed; any other status is
//! [`TransportError::Http`] with an excerpt of the body. Errors name the URL without its query and
//! user information. The `ws-ide` server kind is this transport with its IDE token header.
//!
//! # Messages and liveness
//!
//! See [`WsSender`] (one text frame per message, frames never interleaved, a write timeout, the
//! close handshake) and [`WsReceiver`] (frames read in the session's reader itself; binary frames
//! and non-JSON text are non-terminal protocol errors; a message over
//! [`RemoteEndpoint::max_message_size`](plexus_net::RemoteEndpoint::max_message_size) is reported and ends the connection, since a WebSocket cannot
//! skip it, and is never buffered past the limit).
//!
//! A keepalive task pings the server every [`WsConfig::ping_interval`] (default
//! [`DEFAULT_PING_INTERVAL`], 30 s). Any frame from the server proves it alive; when it has sent
//! nothing, not even a pong, for [`WsConfig::dead_peer_timeout`] (default
//! [`DEFAULT_DEAD_PEER_TIMEOUT`], 60 s: at least one ping left unanswered for 30 s), the connection
//! is presumed dead and ends with a [`TransportError::Io`] of kind `TimedOut`. The server's own
//! pings are answered. The task ends with the connection.
//!
//! Dropping both halves without closing drops the TCP connection at once, without the close
//! handshake, and stops the keepalive. [`WsTransport::connect`] must be called within a Tokio
//! runtime with IO and time enabled (the keepalive task is spawned there); either flavour works.
//!
//! Dependencies: `tokio-tungstenite` speaks the WebSocket protocol (frames, masking, fragments,
//! limits, the handshake) over a connection plexus-net opens (through the proxy's `CONNECT`
//! tunnel when one applies, TLS for `wss` with the entry's CA and client certificate, ALPN
//! `http/1.1`); `plexus-net` also gives the credentials and the one path a 401 or 403 takes; `futures-util` and `futures-core` are the
//! `Sink` and `Stream` traits the socket is driven through; `url` parses the URL;
//! `tokio-util` provides the cancellation token that stops writers and the keepalive when the
//! connection ends.
#![forbid(unsafe_code)]

mod config;
mod connect;
mod connection;
mod receiver;
mod sender;

use std::sync::Arc;

use plexus_transport::{Transport, TransportError, TransportReceiver, TransportSender};

pub use config::{
    DEFAULT_CLOSE_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DEAD_PEER_TIMEOUT, DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_PING_INTERVAL, DEFAULT_WRITE_TIMEOUT, SUBPROTOCOL, WsConfig,
};
pub use connect::WsConnectError;
pub use receiver::{BinaryFrame, WsReceiver};
pub use sender::WsSender;

use crate::connection::{DropGuard, Shared, Timings};

/// A connected WebSocket transport: the upgrade succeeded with the subprotocol `mcp`.
#[derive(Debug)]
pub struct WsTransport {
    target: String,
    sender: WsSender,
    receiver: WsReceiver,
}

impl WsTransport {
    /// Connects and upgrades (see the crate docs), then starts the keepalive.
    pub async fn connect(config: WsConfig) -> Result<WsTransport, TransportError> {
        let socket = connect::connect(&config).await?;
        let target = plexus_net::redact::redact_url(&config.endpoint.url);
        let timings = Timings {
            write_timeout: config.write_timeout,
            close_timeout: config.close_timeout,
        };
        let shared = Arc::new(Shared::new(config.endpoint.name, target.clone(), socket, timings));
        if let Some(interval) = config.ping_interval {
            tokio::spawn(connection::keepalive(
                Arc::clone(&shared),
                interval,
                config.dead_peer_timeout,
            ));
        }
        tracing::debug!(server = %shared.name, "connected to {target}");
        let guard = Arc::new(DropGuard {
            shared: Arc::clone(&shared),
        });
        Ok(WsTransport {
            target,
            sender: WsSender::new(Arc::clone(&shared), Arc::clone(&guard)),
            receiver: WsReceiver::new(shared, config.endpoint.max_message_size, guard),
        })
    }

    /// The two halves, with their concrete types.
    pub fn into_parts(self) -> (WsSender, WsReceiver) {
        (self.sender, self.receiver)
    }
}

impl Transport for WsTransport {
    /// The URL, without query or user information.
    fn describe(&self) -> String {
        self.target.clone()
    }

    /// The URL's host and port over TCP, speaking `websocket`.
    fn peer(&self) -> plexus_transport::Peer {
        plexus_net::peer_of(&self.target, "websocket")
    }

    fn split(self: Box<Self>) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>) {
        let (sender, receiver) = self.into_parts();
        (Box::new(sender), Box::new(receiver))
    }
}
