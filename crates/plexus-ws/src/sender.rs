//! The sending half: one text frame per message.

use std::sync::Arc;

use plexus_transport::{BoxFuture, OutboundMessage, Response, TransportError, TransportSender};
use tokio_tungstenite::tungstenite::Message as Frame;

use crate::connection::{DropGuard, Shared};

/// The sending half of a [`WsTransport`](crate::WsTransport).
///
/// Each [`send`](TransportSender::send) writes one message as one text frame and returns when it
/// is flushed to the socket. Concurrent sends take turns (frames never interleave); a send waits
/// while the socket is full, at most [`WsConfig::write_timeout`](crate::WsConfig::write_timeout),
/// after which the connection is presumed stuck and ends. Once the connection has ended, sends
/// fail at once with the reason.
///
/// [`close`](TransportSender::close) performs the close handshake: a close frame with code 1000
/// (normal closure), then up to [`WsConfig::close_timeout`](crate::WsConfig::close_timeout) for the
/// server's answer, then the connection is dropped. Closing twice is harmless.
pub struct WsSender {
    shared: Arc<Shared>,
    _guard: Arc<DropGuard>,
}

impl std::fmt::Debug for WsSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsSender")
            .field("target", &self.shared.target)
            .finish_non_exhaustive()
    }
}

impl WsSender {
    pub(crate) fn new(shared: Arc<Shared>, guard: Arc<DropGuard>) -> Self {
        WsSender { shared, _guard: guard }
    }
}

impl TransportSender for WsSender {
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Option<Response>, TransportError>> {
        Box::pin(async move {
            if let Some(ended) = self.shared.ended() {
                return Err(ended);
            }
            // The encoders write JSON, which is UTF-8; a violation is a bug of the caller's encoder.
            let text = String::from_utf8(message.into_json()).map_err(|e| {
                TransportError::from_io(
                    "encoding a message for the WebSocket",
                    std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                )
            })?;
            self.shared.write(Frame::text(text)).await.map(|()| None)
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared.close().await;
            tracing::debug!(server = %self.shared.name, "closed the WebSocket {}", self.shared.target);
            Ok(())
        })
    }

    fn is_closed(&self) -> bool {
        self.shared.ending.is_cancelled()
    }
}
