//! The receiving half: a bounded queue fed by the body readers and the event stream.

use std::sync::Arc;
use std::task::{Context, Poll};

use plexus_jsonrpc::Message;
use plexus_transport::{CloseReason, Received, TransportError, TransportReceiver};
use tokio::sync::mpsc;

use crate::Handle;
use crate::inner::{Inbound, Inner};

/// The receiving half of an [`HttpTransport`](crate::HttpTransport).
///
/// Messages arrive from the response bodies (JSON or SSE) and the standalone event stream,
/// through a bounded queue ([`HttpConfig::receive_queue_capacity`](crate::HttpConfig)): when the
/// reader falls behind, the body readers wait. A message that is too large or not JSON-RPC comes
/// out as a non-terminal error. When the transport ends (closed, the session expired) the
/// next poll yields that error at once, ahead of anything still
/// queued; later polls yield [`TransportError::Closed`].
pub struct HttpReceiver {
    inner: Arc<Inner>,
    queue: mpsc::Receiver<Inbound>,
    /// What later polls yield once the terminal error was given.
    finished: Option<TransportError>,
    _handle: Arc<Handle>,
}

impl std::fmt::Debug for HttpReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpReceiver")
            .field("url", &self.inner.description)
            .finish_non_exhaustive()
    }
}

impl HttpReceiver {
    pub(crate) fn new(inner: Arc<Inner>, queue: mpsc::Receiver<Inbound>, handle: Arc<Handle>) -> Self {
        HttpReceiver {
            inner,
            queue,
            finished: None,
            _handle: handle,
        }
    }

    fn finish(&mut self, error: TransportError) -> Poll<Result<Received, TransportError>> {
        let later = match &error {
            TransportError::Closed { .. } => error.clone(),
            other => TransportError::closed(CloseReason::Failed(Box::new(other.clone()))),
        };
        self.finished = Some(later);
        self.queue.close();
        Poll::Ready(Err(error))
    }
}

impl TransportReceiver for HttpReceiver {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message, TransportError>> {
        self.poll_recv_related(cx).map_ok(|received| received.message)
    }

    /// Each message with the request whose `POST` carried it (the response stream's request, or
    /// the request of a JSON body that held another message); none for the standalone stream.
    fn poll_recv_related(&mut self, cx: &mut Context<'_>) -> Poll<Result<Received, TransportError>> {
        if let Some(finished) = &self.finished {
            return Poll::Ready(Err(finished.clone()));
        }
        if let Some(error) = self.inner.terminal() {
            return self.finish(error);
        }
        match self.queue.poll_recv(cx) {
            Poll::Ready(Some(item)) => Poll::Ready(item),
            Poll::Ready(None) => self.finish(TransportError::closed(CloseReason::TasksGone)),
            Poll::Pending => {
                if self.inner.register_reader(cx.waker())
                    && let Some(error) = self.inner.terminal()
                {
                    return self.finish(error);
                }
                Poll::Pending
            }
        }
    }
}
