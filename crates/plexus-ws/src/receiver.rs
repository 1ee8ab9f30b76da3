//! The receiving half: frames read from the socket in the session's reader itself.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::Sink;
use plexus_jsonrpc::{FrameError, Message};
use plexus_transport::{TransportError, TransportReceiver};
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::connection::{ConnState, DropGuard, Shared, close_reason};
use plexus_transport::{CloseReason, ServerOutput};

/// A binary frame, which MCP does not use: the cause of the [`TransportError::Protocol`] it gives.
#[derive(Debug, thiserror::Error)]
#[error("a binary WebSocket frame ({bytes} bytes); MCP messages travel in text frames")]
pub struct BinaryFrame {
    /// The frame's size.
    pub bytes: usize,
}

/// The receiving half of a [`WsTransport`](crate::WsTransport).
///
/// [`poll_recv`](TransportReceiver::poll_recv) reads the socket itself: no task or channel sits
/// between the socket and the caller. Each text frame (a complete message, however the server
/// fragmented it) is one JSON-RPC message. A binary frame or a text frame that is not a JSON-RPC
/// message comes out as [`TransportError::Protocol`] and reading goes on; when it is a reply whose
/// id can be read, the error is that request's ([`TransportError::DroppedReply`]), so it fails at
/// once. Pings are answered and
/// pongs noted (they keep the connection alive). A message over
/// [`RemoteEndpoint::max_message_size`](plexus_net::RemoteEndpoint::max_message_size)(crate::WsConfig::max_message_size) comes out as
/// [`TransportError::TooLarge`]; since the WebSocket protocol cannot skip it, the connection is
/// closed (code 1009) and the next poll yields `Closed`.
///
/// When the connection ends, the receiver yields [`TransportError::Closed`] with the reason (the
/// server's close code and reason, "the transport was closed by the client", a broken protocol) or
/// [`TransportError::Io`] (a failed socket, a dead peer), and every later poll yields it again.
pub struct WsReceiver {
    shared: Arc<Shared>,
    max_message_size: usize,
    _guard: Arc<DropGuard>,
}

impl std::fmt::Debug for WsReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsReceiver")
            .field("target", &self.shared.target)
            .finish_non_exhaustive()
    }
}

impl WsReceiver {
    pub(crate) fn new(shared: Arc<Shared>, max_message_size: usize, guard: Arc<DropGuard>) -> Self {
        WsReceiver {
            shared,
            max_message_size,
            _guard: guard,
        }
    }

    /// Ends the connection with `later` and returns `now` (they differ when one message was
    /// too large: that is reported first, then the end).
    fn finish(
        &self,
        state: &mut ConnState,
        now: TransportError,
        later: TransportError,
    ) -> Poll<Result<Message, TransportError>> {
        Shared::end_locked(state, later);
        self.shared.ending.cancel();
        Poll::Ready(Err(now))
    }

    /// The reason the connection ended when the stream of frames ended or failed.
    fn end_reason(state: &ConnState, failure: Option<TransportError>) -> CloseReason {
        if state.closing {
            CloseReason::ByClient
        } else if let Some(reason) = &state.server_closed {
            reason.clone()
        } else if let Some(failure) = failure {
            CloseReason::Failed(Box::new(failure))
        } else {
            CloseReason::EndOfOutput {
                output: ServerOutput::WebSocket,
                mid_message: false,
            }
        }
    }
}

impl TransportReceiver for WsReceiver {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message, TransportError>> {
        let mut state = self.shared.lock();
        loop {
            if let Some(ended) = &state.ended {
                return Poll::Ready(Err(ended.clone()));
            }
            let Some(socket) = state.socket.as_mut() else {
                return Poll::Ready(Err(TransportError::closed(CloseReason::ByClient)));
            };
            let frame = match Pin::new(socket).poll_next(cx) {
                Poll::Pending => {
                    if !state.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        state.waker = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Some(Ok(frame))) => frame,
                Poll::Ready(Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size })))) => {
                    tracing::debug!(server = %self.shared.name, "a message of {size} bytes is over the limit of {max_size}");
                    let now = TransportError::TooLarge {
                        size,
                        limit: self.max_message_size,
                    };
                    // A WebSocket message cannot be skipped: every pending request ends with this.
                    let later = TransportError::closed(CloseReason::Failed(Box::new(now.clone())));
                    say_too_big(&mut state, cx);
                    return self.finish(&mut state, now, later);
                }
                // The end, with or without a close frame (tungstenite calls an end without one a reset).
                Poll::Ready(None | Some(Err(WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake)))) => {
                    let reason = TransportError::closed(Self::end_reason(&state, None));
                    return self.finish(&mut state, reason.clone(), reason);
                }
                Poll::Ready(Some(Err(e))) => {
                    let quiet = state.server_closed.is_none() && !state.closing;
                    let is_io = matches!(e, WsError::Io(_));
                    let context = format!("reading from the WebSocket {}", self.shared.target);
                    let failure = match e {
                        WsError::Io(io) => TransportError::from_io(context, io),
                        other => TransportError::from_io(context, std::io::Error::other(other)),
                    };
                    let later = TransportError::closed(Self::end_reason(&state, Some(failure.clone())));
                    let now = if quiet && is_io { failure } else { later.clone() };
                    return self.finish(&mut state, now, later);
                }
            };
            self.shared.saw_frame();
            match frame {
                Frame::Text(text) => {
                    drop(state);
                    return Poll::Ready(
                        Message::from_str(text.as_str())
                            .map_err(|e| TransportError::about_message(text.as_bytes(), FrameError::Decode(e).into())),
                    );
                }
                Frame::Binary(bytes) => {
                    drop(state);
                    let refused = TransportError::protocol(BinaryFrame { bytes: bytes.len() });
                    return Poll::Ready(Err(TransportError::about_message(&bytes, refused)));
                }
                Frame::Close(frame) => {
                    if state.closing {
                        // The answer to the client's close frame: the handshake is complete.
                        let reason = TransportError::closed(CloseReason::ByClient);
                        return self.finish(&mut state, reason.clone(), reason);
                    }
                    // tungstenite answers it; the server then closes the connection.
                    state.server_closed = Some(close_reason(frame.as_ref()));
                }
                Frame::Ping(_) | Frame::Pong(_) | Frame::Frame(_) => {}
            }
        }
    }
}

/// Tells the server, as a courtesy before the connection drops, why: close code 1009 (message too
/// big). Whatever cannot be written at once is not waited for.
fn say_too_big(state: &mut ConnState, cx: &mut Context<'_>) {
    let Some(socket) = state.socket.as_mut() else { return };
    let mut socket = Pin::new(socket);
    if let Poll::Ready(Ok(())) = socket.as_mut().poll_ready(cx) {
        let frame = Frame::Close(Some(CloseFrame {
            code: CloseCode::Size,
            reason: "message too big".into(),
        }));
        if socket.as_mut().start_send(frame).is_ok() {
            let _ = socket.poll_flush(cx);
        }
    }
}
