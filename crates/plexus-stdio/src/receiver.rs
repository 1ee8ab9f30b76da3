//! The receiving half: the server's stdout, framed and polled directly by the session's reader.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::BytesMut;
use futures_core::Stream;
use plexus_jsonrpc::{LineCodec, Message};
use plexus_transport::{CloseReason, TransportError, TransportReceiver};
use tokio::process::ChildStdout;
use tokio::time::Sleep;
use tokio_util::codec::FramedRead;

use crate::process::{EventsSnapshot, ProcessGuard, Shared};

/// The read buffer of stdout to start with, and to go back to once a larger message (a long
/// list, a big result) has been read and nothing more is pending: it grows up to the message
/// size limit when needed, but an idle connection keeps no more than this. Calls' messages are
/// far smaller; under load a read takes what fits and the rest comes with the next.
const READ_BUFFER: usize = 4 * 1024;

/// The receiving half of a [`StdioTransport`](crate::StdioTransport).
///
/// [`poll_recv`](TransportReceiver::poll_recv) reads the server's stdout itself: no task or
/// channel sits between the pipe and the caller. A bad line comes out as a non-terminal error and
/// reading goes on. When the server's stdout ends or the server exits, it waits a bounded time
/// ([`ShutdownTimings::exit_wait`](crate::ShutdownTimings::exit_wait)) for the exit status and
/// the last of stderr, then yields [`TransportError::Closed`] with the reason and the tail of
/// stderr; every later poll yields the same error.
#[derive(Debug)]
pub struct StdioReceiver {
    frames: FramedRead<ChildStdout, LineCodec>,
    stdout_ended: bool,
    /// Started when the end begins (stdout ended or the server exited): how long to wait for the rest.
    end_deadline: Option<Pin<Box<Sleep>>>,
    /// The terminal error, once given.
    finished: Option<TransportError>,
    guard: Arc<ProcessGuard>,
}

impl StdioReceiver {
    pub(crate) fn new(stdout: ChildStdout, max_message_size: usize, guard: Arc<ProcessGuard>) -> Self {
        StdioReceiver {
            frames: FramedRead::with_capacity(stdout, LineCodec::with_max_size(max_message_size), READ_BUFFER),
            stdout_ended: false,
            end_deadline: None,
            finished: None,
            guard,
        }
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.guard.shared
    }

    /// A fresh buffer of [`READ_BUFFER`] bytes when the one read into grew for a larger message
    /// and holds nothing more: the larger one is freed for other uses.
    fn shrink_read_buffer(&mut self) {
        let buffer = self.frames.read_buffer_mut();
        if buffer.is_empty() && buffer.capacity() > READ_BUFFER {
            *buffer = BytesMut::with_capacity(READ_BUFFER);
        }
    }

    /// Ends the stream with `error` now; later polls get a `Closed` error.
    fn finish(&mut self, error: TransportError, later: TransportError) -> TransportError {
        self.shared().mark_closed(later.clone());
        self.finished = Some(later);
        error
    }

    fn finish_closed(&mut self, events: &EventsSnapshot) -> TransportError {
        let error = self.shared().gone_error(events.exit.as_ref());
        self.finish(error.clone(), error)
    }
}

impl TransportReceiver for StdioReceiver {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message, TransportError>> {
        if let Some(closed) = &self.finished {
            return Poll::Ready(Err(closed.clone()));
        }
        // Once the end has begun, a server (or a grandchild) that keeps writing gets no more than
        // the wait.
        if self.end_deadline.as_ref().is_some_and(|deadline| deadline.is_elapsed()) {
            let events = self.shared().poll_events(cx);
            return Poll::Ready(Err(self.finish_closed(&events)));
        }
        if !self.stdout_ended {
            match Pin::new(&mut self.frames).poll_next(cx) {
                Poll::Ready(Some(Ok(Ok(message)))) => {
                    self.shrink_read_buffer();
                    if matches!(message, Message::Response(_)) {
                        self.shared().request_settled();
                    }
                    return Poll::Ready(Ok(message));
                }
                Poll::Ready(Some(Ok(Err(bad_line)))) => {
                    return Poll::Ready(Err(TransportError::from(bad_line)));
                }
                Poll::Ready(Some(Err(e))) => {
                    let error = TransportError::from_io("reading the server's stdout", e);
                    let later = TransportError::closed(CloseReason::Failed(Box::new(error.clone())));
                    return Poll::Ready(Err(self.finish(error, later)));
                }
                Poll::Ready(None) => self.stdout_ended = true,
                Poll::Pending => {}
            }
        }
        let events = self.shared().poll_events(cx);
        if !self.stdout_ended && events.exit.is_none() {
            return Poll::Pending;
        }
        let settled = self.stdout_ended && events.exit.is_some() && events.stderr_closed;
        if !settled {
            let wait = self.shared().timings.exit_wait;
            let deadline = self
                .end_deadline
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(wait)));
            if deadline.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        Poll::Ready(Err(self.finish_closed(&events)))
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::time::Duration;

    use plexus_transport::TransportSender as _;

    use super::*;
    use crate::{StdioConfig, StdioTransport};

    async fn next(receiver: &mut StdioReceiver) -> Message {
        let received = poll_fn(|cx| receiver.poll_recv(cx));
        tokio::time::timeout(Duration::from_secs(20), received)
            .await
            .expect("a message within the hang guard")
            .expect("a message")
    }

    /// A large message grows the buffer; once it is read, with nothing more pending, the
    /// connection holds a small one again (an idle connection keeps no room for its largest
    /// message), and what follows still arrives whole.
    #[tokio::test]
    async fn the_read_buffer_is_small_again_after_a_large_message() {
        let script = r#"big=$(head -c 40000 /dev/zero | tr '\0' x)
printf '{"jsonrpc":"2.0","method":"big","params":{"x":"%s"}}\n' "$big"
printf '{"jsonrpc":"2.0","method":"small"}\n'
exec cat"#;
        let config = StdioConfig::new("sh").arg("-c").arg(script);
        let (sender, mut receiver) = StdioTransport::spawn(config).unwrap().into_parts();
        let big = next(&mut receiver).await;
        assert_eq!(big.method(), Some("big"));
        let Message::Notification(note) = big else {
            panic!("a notification: {big:?}")
        };
        assert_eq!(note.params.map(|params| params.get().len()), Some(40_008));
        assert_eq!(next(&mut receiver).await.method(), Some("small"));
        let capacity = receiver.frames.read_buffer().capacity();
        assert!(capacity <= READ_BUFFER, "the read buffer kept {capacity} bytes");
        sender.close().await.unwrap();
    }
}
