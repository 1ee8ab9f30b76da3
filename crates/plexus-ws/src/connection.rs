//! The connection both halves share: the socket behind a lock held only for one poll, the writer
//! permit, the end of the connection with its reason, the keepalive task and the close handshake.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use futures_util::Sink;
use plexus_net::http::NetStream;
use plexus_transport::{CloseReason, TransportError};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_util::sync::CancellationToken;

/// The WebSocket over TCP (and TLS for `wss`).
pub(crate) type Socket = WebSocketStream<NetStream>;

/// The timings the connection needs after connect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timings {
    pub(crate) write_timeout: Duration,
    pub(crate) close_timeout: Duration,
}

/// What both halves (and the keepalive task) share.
pub(crate) struct Shared {
    /// The server's name, for tracing.
    pub(crate) name: String,
    /// The URL, redacted.
    pub(crate) target: String,
    state: Mutex<ConnState>,
    /// One writer at a time: the socket wakes only the last task that waited to write.
    writing: tokio::sync::Mutex<()>,
    /// Cancelled when the connection ends, for any reason: waiting writers and the keepalive stop.
    pub(crate) ending: CancellationToken,
    /// When the connection was made; `last_seen_ms` counts from here.
    started: Instant,
    /// When the server last sent a frame (any frame), in milliseconds since `started`.
    last_seen_ms: AtomicU64,
    timings: Timings,
}

pub(crate) struct ConnState {
    /// The socket; `None` once the connection ended (dropping it closes the TCP connection).
    pub(crate) socket: Option<Socket>,
    /// Why the connection ended: what later polls and sends get.
    pub(crate) ended: Option<TransportError>,
    /// The receiver waiting for a frame.
    pub(crate) waker: Option<Waker>,
    /// The client sent its close frame.
    pub(crate) closing: bool,
    /// Why the server closed, from its close frame.
    pub(crate) server_closed: Option<CloseReason>,
}

impl Shared {
    pub(crate) fn new(name: String, target: String, socket: Socket, timings: Timings) -> Self {
        Shared {
            name,
            target,
            state: Mutex::new(ConnState {
                socket: Some(socket),
                ended: None,
                waker: None,
                closing: false,
                server_closed: None,
            }),
            writing: tokio::sync::Mutex::new(()),
            ending: CancellationToken::new(),
            started: Instant::now(),
            last_seen_ms: AtomicU64::new(0),
            timings,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, ConnState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why the connection ended, if it has.
    pub(crate) fn ended(&self) -> Option<TransportError> {
        self.lock().ended.clone()
    }

    fn ended_error(&self) -> TransportError {
        self.ended()
            .unwrap_or_else(|| TransportError::closed(CloseReason::ByClient))
    }

    /// Ends the connection (the first reason wins): drops the socket, wakes the receiver, stops
    /// the writers and the keepalive.
    pub(crate) fn end(&self, reason: TransportError) {
        let mut state = self.lock();
        Self::end_locked(&mut state, reason);
        drop(state);
        self.ending.cancel();
    }

    /// [`end`](Self::end) with the lock held; the caller cancels `ending` after unlocking.
    pub(crate) fn end_locked(state: &mut ConnState, reason: TransportError) {
        if state.ended.is_some() {
            return;
        }
        state.ended = Some(reason);
        drop(state.socket.take());
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    /// Notes that the server sent a frame (it is alive).
    pub(crate) fn saw_frame(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        self.last_seen_ms.store(now, Ordering::Relaxed);
    }

    /// When the server last sent a frame.
    fn last_seen(&self) -> Instant {
        self.started + Duration::from_millis(self.last_seen_ms.load(Ordering::Relaxed))
    }

    /// Writes one frame and flushes it, as the only writer, within the write timeout. A failure or
    /// a timeout ends the connection (a frame may be half-written).
    pub(crate) async fn write(&self, frame: Frame) -> Result<(), TransportError> {
        let write = async {
            let _permit = self.writing.lock().await;
            let mut pending = Some(frame);
            tokio::time::timeout(
                self.timings.write_timeout,
                poll_fn(|cx| self.poll_write(cx, &mut pending)),
            )
            .await
        };
        let result = tokio::select! {
            biased;
            () = self.ending.cancelled() => return Err(self.ended_error()),
            result = write => result,
        };
        match result {
            Ok(written) => written,
            Err(_) => {
                let after = self.timings.write_timeout;
                let error = TransportError::from_io(
                    format!("writing to the WebSocket {}", self.target),
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the write did not complete within {after:?}"),
                    ),
                );
                self.end(TransportError::closed(CloseReason::Failed(Box::new(error.clone()))));
                Err(error)
            }
        }
    }

    fn poll_write(&self, cx: &mut Context<'_>, pending: &mut Option<Frame>) -> Poll<Result<(), TransportError>> {
        let mut state = self.lock();
        if let Some(ended) = &state.ended {
            return Poll::Ready(Err(ended.clone()));
        }
        let Some(socket) = state.socket.as_mut() else {
            return Poll::Ready(Err(TransportError::closed(CloseReason::ByClient)));
        };
        let mut socket = Pin::new(socket);
        let written = (|| {
            if pending.is_some() {
                ready!(socket.as_mut().poll_ready(cx))?;
                if let Some(frame) = pending.take() {
                    socket.as_mut().start_send(frame)?;
                }
            }
            socket.as_mut().poll_flush(cx)
        })();
        match written {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => {
                let (error, later) = self.write_failure(e);
                Self::end_locked(&mut state, later);
                drop(state);
                self.ending.cancel();
                Poll::Ready(Err(error))
            }
        }
    }

    /// The error for a failed write, and the reason the connection then ended.
    fn write_failure(&self, error: WsError) -> (TransportError, TransportError) {
        let context = format!("writing to the WebSocket {}", self.target);
        let is_io = matches!(error, WsError::Io(_));
        let failure = match error {
            WsError::Io(e) => TransportError::from_io(context, e),
            other => TransportError::from_io(context, io::Error::other(other)),
        };
        let later = TransportError::closed(CloseReason::Failed(Box::new(failure.clone())));
        let now = if is_io { failure } else { later.clone() };
        (now, later)
    }

    /// The close handshake: sends a close frame (1000, normal closure), waits up to the close
    /// timeout for the server's answer (read here or by the receiver), then drops the connection.
    pub(crate) async fn close(&self) {
        {
            let mut state = self.lock();
            if state.ended.is_some() {
                return;
            }
            state.closing = true;
        }
        let handshake = async {
            let frame = Frame::Close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            }));
            if self.write(frame).await.is_ok() {
                poll_fn(|cx| self.poll_close_answer(cx)).await;
            }
        };
        let finished = tokio::select! {
            () = self.ending.cancelled() => true,
            timed = tokio::time::timeout(self.timings.close_timeout, handshake) => timed.is_ok(),
        };
        if !finished {
            tracing::debug!(server = %self.name, "the server did not answer the close frame in time");
        }
        self.end(TransportError::closed(CloseReason::ByClient));
    }

    /// Reads (and drops) frames until the server's close frame or the end of the connection. The
    /// receiver may read concurrently: whichever sees the answer ends the connection, which wakes
    /// the other.
    fn poll_close_answer(&self, cx: &mut Context<'_>) -> Poll<()> {
        use futures_core::Stream;
        let mut state = self.lock();
        loop {
            let Some(socket) = state.socket.as_mut() else {
                return Poll::Ready(());
            };
            match ready!(Pin::new(socket).poll_next(cx)) {
                Some(Ok(Frame::Close(_)) | Err(_)) | None => return Poll::Ready(()),
                Some(Ok(_)) => self.saw_frame(),
            }
        }
    }
}

/// Pings the server every `interval` and ends the connection when it has sent nothing for
/// `dead_after`. Stops when the connection ends.
pub(crate) async fn keepalive(shared: Arc<Shared>, interval: Duration, dead_after: Duration) {
    let mut next_ping = Instant::now() + interval;
    let mut sequence: u64 = 0;
    loop {
        let dead_at = shared.last_seen() + dead_after;
        tokio::select! {
            () = shared.ending.cancelled() => return,
            () = tokio::time::sleep_until(next_ping.min(dead_at)) => {}
        }
        let now = Instant::now();
        if now >= shared.last_seen() + dead_after {
            tracing::debug!(server = %shared.name, "no frame from the server for {dead_after:?}; presumed dead");
            shared.end(TransportError::from_io(
                format!("keeping the WebSocket {} alive", shared.target),
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the server sent nothing, not even a pong, for {dead_after:?} (pinged every {interval:?})"),
                ),
            ));
            return;
        }
        if now >= next_ping {
            next_ping = now + interval;
            // A writer that is busy keeps the ping waiting; a stuck one ends by its own timeout.
            if shared.writing.try_lock().is_err() {
                continue;
            }
            sequence += 1;
            let payload = sequence.to_be_bytes().to_vec();
            if let Err(e) = shared.write(Frame::Ping(payload.into())).await {
                tracing::debug!(server = %shared.name, "pinging the server failed: {e}");
                return;
            }
        }
    }
}

/// Stops everything when both halves are dropped without a close: the socket is dropped (the
/// TCP connection closes, without a close handshake) and the keepalive ends.
pub(crate) struct DropGuard {
    pub(crate) shared: Arc<Shared>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.shared.end(TransportError::closed(CloseReason::ByClient));
    }
}

/// Why the server closed, from its close frame.
pub(crate) fn close_reason(frame: Option<&CloseFrame>) -> CloseReason {
    let Some(frame) = frame else {
        return CloseReason::WebSocketClose {
            code: None,
            text: String::new(),
        };
    };
    let code = u16::from(frame.code);
    CloseReason::WebSocketClose {
        code: Some(code),
        text: frame.reason.as_str().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_reasons() {
        let frame = |code: u16, reason: &str| CloseFrame {
            code: CloseCode::from(code),
            reason: reason.to_owned().into(),
        };
        assert_eq!(
            close_reason(Some(&frame(1001, "restarting"))).to_string(),
            "the server closed the WebSocket (code 1001, going away): restarting"
        );
        assert_eq!(
            close_reason(Some(&frame(4000, ""))).to_string(),
            "the server closed the WebSocket (code 4000)"
        );
        assert_eq!(
            close_reason(None).to_string(),
            "the server closed the WebSocket (without a close code)"
        );
    }
}
