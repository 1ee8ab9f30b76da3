//! The receiving half: the event stream, decoded in the session's reader itself, and the state
//! both halves share (the stream lives there so that closing the sender drops it).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes};
use plexus_jsonrpc::{FrameError, Message};
use plexus_net::http::Body;
use plexus_net::sse::{Decoded, Event, EventDecoder};
use plexus_transport::{CloseReason, ServerOutput, TransportError, TransportReceiver};
use tokio_util::sync::CancellationToken;

/// The event stream's decoder and what is left of the body's last chunk.
#[derive(Debug)]
pub(crate) struct Events {
    decoder: EventDecoder,
    pending: Bytes,
}

impl Events {
    pub(crate) fn new(max_message_size: usize) -> Self {
        Events {
            decoder: EventDecoder::new(max_message_size),
            pending: Bytes::new(),
        }
    }

    /// Hands over the body's next chunk, once [`next`](Self::next) has returned `None`.
    pub(crate) fn feed(&mut self, chunk: Bytes) {
        debug_assert!(self.pending.is_empty(), "the previous chunk is decoded first");
        self.pending = chunk;
    }

    /// The next event of what has been fed, or `None` when the decoder needs the next chunk.
    pub(crate) fn next(&mut self) -> Option<Decoded> {
        let mut input = &self.pending[..];
        let decoded = self.decoder.decode(&mut input);
        let used = self.pending.len() - input.len();
        self.pending.advance(used);
        decoded
    }

    /// The limit of one event.
    pub(crate) fn max_message_size(&self) -> usize {
        self.decoder.max_event_size()
    }
}

/// What both halves share.
pub(crate) struct Shared {
    /// The server's name, for tracing.
    pub(crate) name: String,
    /// The event stream's URL, redacted.
    pub(crate) target: String,
    /// Cancelled when the transport ends, for any reason: in-flight POSTs stop.
    pub(crate) ending: CancellationToken,
    state: Mutex<StreamState>,
}

struct StreamState {
    /// The event stream; `None` once the transport ended.
    body: Option<Body>,
    /// Why the transport ended: what later polls and sends get.
    ended: Option<TransportError>,
    /// The receiver waiting for the stream.
    waker: Option<Waker>,
}

impl Shared {
    pub(crate) fn new(name: String, target: String, body: Body) -> Self {
        Shared {
            name,
            target,
            ending: CancellationToken::new(),
            state: Mutex::new(StreamState {
                body: Some(body),
                ended: None,
                waker: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StreamState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why the transport ended, if it has.
    pub(crate) fn ended(&self) -> Option<TransportError> {
        self.lock().ended.clone()
    }

    /// Ends the transport (the first reason wins): drops the event stream, which closes its
    /// connection, wakes the receiver and stops the POSTs in flight.
    pub(crate) fn end(&self, reason: TransportError) {
        let (body, waker) = {
            let mut state = self.lock();
            if state.ended.is_some() {
                return;
            }
            state.ended = Some(reason);
            (state.body.take(), state.waker.take())
        };
        drop(body);
        if let Some(waker) = waker {
            waker.wake();
        }
        self.ending.cancel();
    }
}

/// The receiving half of an [`SseTransport`](crate::SseTransport).
///
/// [`poll_recv`](TransportReceiver::poll_recv) reads the event stream itself: no task or channel
/// sits between the socket and the caller. Each `message` event is one JSON-RPC message; a bad
/// one comes out as [`TransportError::Protocol`], an event over the size limit as
/// [`TransportError::TooLarge`], and reading goes on. A second `endpoint` event and events of other
/// types are ignored (and logged). When the stream ends or fails, the receiver yields
/// [`TransportError::Closed`] (or [`TransportError::Io`] for a failed connection) with the reason,
/// and every later poll yields `Closed`.
pub struct SseReceiver {
    events: Events,
    /// Messages that came before the `endpoint` event.
    early: VecDeque<Result<Message, TransportError>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SseReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseReceiver")
            .field("target", &self.shared.target)
            .finish_non_exhaustive()
    }
}

impl SseReceiver {
    pub(crate) fn new(events: Events, early: VecDeque<Result<Message, TransportError>>, shared: Arc<Shared>) -> Self {
        SseReceiver { events, early, shared }
    }

    /// What one event means for the session: a message, an error to report, or nothing.
    fn on_event(&self, decoded: Decoded) -> Option<Result<Message, TransportError>> {
        match decoded {
            Decoded::TooLarge { size, reply } => Some(Err(TransportError::TooLarge {
                size,
                limit: self.events.max_message_size(),
            }
            .about_reply(reply))),
            Decoded::Event(event) => match event.event_type.as_str() {
                "message" => Some(decode_message(&event)),
                "endpoint" => {
                    tracing::warn!(server = %self.shared.name, "ignoring a second endpoint event");
                    None
                }
                other => {
                    tracing::debug!(server = %self.shared.name, "ignoring an event of type {other:?}");
                    None
                }
            },
        }
    }
}

/// The JSON-RPC message in a `message` event.
pub(crate) fn decode_message(event: &Event) -> Result<Message, TransportError> {
    Message::from_slice(&event.data)
        .map_err(|e| TransportError::about_message(&event.data, FrameError::Decode(e).into()))
}

impl TransportReceiver for SseReceiver {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message, TransportError>> {
        if let Some(early) = self.early.pop_front() {
            return Poll::Ready(early);
        }
        loop {
            while let Some(decoded) = self.events.next() {
                if let Some(result) = self.on_event(decoded) {
                    return Poll::Ready(result);
                }
            }
            let mut state = self.shared.lock();
            if let Some(ended) = &state.ended {
                return Poll::Ready(Err(ended.clone()));
            }
            let Some(body) = state.body.as_mut() else {
                return Poll::Ready(Err(TransportError::closed(CloseReason::ByClient)));
            };
            match body.poll_chunk(cx) {
                Poll::Ready(Ok(Some(chunk))) => {
                    drop(state);
                    self.events.feed(chunk);
                }
                Poll::Ready(Err(e)) => {
                    drop(state);
                    let context = format!("reading the event stream of {}", self.shared.target);
                    let error = TransportError::from_io(context, e);
                    self.shared
                        .end(TransportError::closed(CloseReason::Failed(Box::new(error.clone()))));
                    return Poll::Ready(Err(error));
                }
                Poll::Ready(Ok(None)) => {
                    drop(state);
                    let error = TransportError::closed(CloseReason::EndOfOutput {
                        output: ServerOutput::EventStream,
                        mid_message: false,
                    });
                    self.shared.end(error.clone());
                    return Poll::Ready(Err(error));
                }
                Poll::Pending => {
                    if !state.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        state.waker = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}
