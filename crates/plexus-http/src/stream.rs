//! SSE streams into the receiver: a request's response stream (resumed with `GET` and
//! `Last-Event-ID` when the server closes it before the response; dropped when the request is
//! cancelled or its own timeout passes) and the standalone `GET` stream of server-initiated
//! messages (reconnected with backoff).

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use plexus_jsonrpc::{Message, RequestId};
use plexus_net::sse::{Decoded, EventDecoder};
use plexus_transport::{Received, TransportError, error_chain};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::EventStreamState;
use crate::config::STREAM_END_GRACE;
use crate::deadline::{Deadline, Limit};
use crate::inner::{Inner, lock};
use crate::request::RequestSpec;
use plexus_net::http::{Body, Response};

/// One logical event stream, across its reconnections.
struct EventStream {
    decoder: EventDecoder,
    /// The request whose response completes a POST stream.
    awaiting: Option<RequestId>,
    answered: bool,
    /// Events delivered so far.
    delivered: u64,
    /// Whether a POST stream that ends early is resumed (the stateless revision resumes none:
    /// its caller sends the request again).
    resumable: bool,
}

/// How one connection of a stream ended.
enum Ended {
    /// The server ended the body.
    Closed,
    /// The connection broke.
    Failed(io::Error),
    /// The reader is gone: nobody wants the messages.
    ReaderGone,
}

/// Why a stream stopped for good.
enum Stop {
    /// The response it was opened for arrived.
    Answered,
    ReaderGone,
    /// A POST stream ended before its response without an event id to resume from.
    NoEventId(String),
    /// A POST stream of the stateless revision ended before its response.
    NotResumable(String),
    /// The server answered `GET` with 405.
    Unsupported,
    /// An error that reconnecting cannot fix.
    Failed(TransportError),
    /// Too many reconnections in a row brought nothing.
    GaveUp(String),
}

impl EventStream {
    fn new(max_message_size: usize, awaiting: Option<RequestId>) -> Self {
        EventStream {
            decoder: EventDecoder::new(max_message_size),
            awaiting,
            answered: false,
            delivered: 0,
            resumable: true,
        }
    }

    /// What changes when a connection brought something new.
    fn progress(&self) -> (u64, Option<String>) {
        (self.delivered, self.decoder.last_event_id().map(str::to_owned))
    }

    /// Reads one connection's events into the receiver until it ends.
    async fn consume(&mut self, inner: &Inner, mut body: Body) -> Ended {
        let mut grace: Option<Instant> = None;
        loop {
            let next = match grace {
                None => body.chunk().await,
                Some(deadline) => match tokio::time::timeout_at(deadline, body.chunk()).await {
                    Ok(next) => next,
                    Err(_) => return Ended::Closed,
                },
            };
            let chunk = match next {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ended::Closed,
                Err(e) => return Ended::Failed(e),
            };
            let mut input = &chunk[..];
            while let Some(decoded) = self.decoder.decode(&mut input) {
                let item = match decoded {
                    Decoded::TooLarge { size, reply } => Err(TransportError::TooLarge {
                        size,
                        limit: inner.max_message_size,
                    }
                    .about_reply(reply)),
                    // Other event types, and events without a message (a priming event carries
                    // only its id), are not for the session.
                    Decoded::Event(event) if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) => {
                        continue;
                    }
                    Decoded::Event(event) => match Message::from_slice(&event.data) {
                        Ok(message) => {
                            if let (Message::Response(response), Some(awaiting)) = (&message, &self.awaiting)
                                && response.id.as_ref() == Some(awaiting)
                            {
                                self.answered = true;
                            }
                            // What a request's response stream carries relates to that request.
                            Ok(Received {
                                message,
                                related_request: self.awaiting.clone(),
                            })
                        }
                        Err(e) => Err(TransportError::protocol(e)),
                    },
                };
                self.delivered += 1;
                if !inner.deliver(item).await {
                    return Ended::ReaderGone;
                }
            }
            if self.answered && grace.is_none() {
                grace = Some(Instant::now() + STREAM_END_GRACE);
            }
        }
    }

    /// Reads the stream, reconnecting with `GET` (and `Last-Event-ID` once the server sent an
    /// event id) until it stops for good. `first` is a response already open (a POST's).
    async fn run(&mut self, inner: &Arc<Inner>, mut first: Option<Body>) -> Stop {
        let standalone = self.awaiting.is_none();
        let policy = inner.reconnect;
        // Reconnections in a row that brought nothing, and what went wrong last.
        let mut failures: u32 = 0;
        let mut last_problem = String::new();
        let mut reconnecting = first.is_some();
        loop {
            let response = if let Some(response) = first.take() {
                response
            } else {
                if !standalone && !self.resumable {
                    return Stop::NotResumable(last_problem);
                }
                if !standalone && self.decoder.last_event_id().is_none() {
                    return Stop::NoEventId(last_problem);
                }
                if reconnecting {
                    if failures >= policy.max_attempts {
                        return Stop::GaveUp(format!(
                            "{failures} connection attempts in a row brought nothing (last: {last_problem})"
                        ));
                    }
                    if standalone {
                        inner.set_event_stream(EventStreamState::Reconnecting { failures });
                    }
                    let delay = self
                        .decoder
                        .retry()
                        .unwrap_or_else(|| policy.delay(failures.saturating_sub(1), random_fraction()));
                    tokio::time::sleep(delay).await;
                }
                reconnecting = true;
                let mut deadline = Deadline::new(Limit::RequestTimeout(inner.request_timeout));
                let last_event_id = self.decoder.last_event_id().map(str::to_owned);
                match inner.execute(&RequestSpec::get(last_event_id), &mut deadline).await {
                    Ok(response) if is_event_stream(&response) => response.body,
                    Ok(response) => {
                        failures += 1;
                        last_problem =
                            format!("GET answered HTTP {} without an event stream", response.status.as_u16());
                        continue;
                    }
                    Err(TransportError::Http { status: 405, .. }) => return Stop::Unsupported,
                    Err(e) if inner.is_closed() || !worth_retrying(&e, standalone) => return Stop::Failed(e),
                    Err(e) => {
                        failures += 1;
                        last_problem = error_chain(&e);
                        continue;
                    }
                }
            };
            if standalone {
                inner.set_event_stream(EventStreamState::Open);
            }
            let before = self.progress();
            match self.consume(inner, response).await {
                Ended::ReaderGone => return Stop::ReaderGone,
                Ended::Closed => "the server ended the stream".clone_into(&mut last_problem),
                Ended::Failed(e) => last_problem = format!("the stream broke: {}", error_chain(&e)),
            }
            if self.answered {
                return Stop::Answered;
            }
            if self.progress() == before {
                failures += 1;
            } else {
                failures = 0;
            }
        }
    }
}

/// Whether a failed reconnection may succeed later: connection failures, 5xx, 408 and 429. A
/// request's stream (not `standalone`) is not
/// resumed from a server that refuses connections: nothing listens there, and a server that
/// comes back is a new process without the request's events.
fn worth_retrying(error: &TransportError, standalone: bool) -> bool {
    match error {
        TransportError::Io { source, .. } => standalone || source.kind() != std::io::ErrorKind::ConnectionRefused,
        TransportError::Http { status, .. } => *status >= 500 || *status == 408 || *status == 429,
        _ => false,
    }
}

fn is_event_stream(response: &Response) -> bool {
    response.mime().eq_ignore_ascii_case("text/event-stream")
}

/// A number in `0.0..1.0` for the jitter, different on every call (no RNG dependency: std's
/// randomly keyed hasher over a counter).
fn random_fraction() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    #[allow(clippy::cast_precision_loss, reason = "53 random bits fit an f64 exactly")]
    let fraction = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
    fraction
}

/// The response streams being read, by request id, so that a request's cancellation drops its
/// stream (a server may keep it open after the cancellation).
#[derive(Debug, Default)]
pub(crate) struct PostStreams {
    /// Each stream's number (a later request may reuse an id) and what stops its reader.
    streams: Mutex<HashMap<RequestId, (u64, CancellationToken)>>,
    next: AtomicU64,
}

impl PostStreams {
    /// Drops the response stream of request `id`, if one is being read.
    pub(crate) fn cancel(&self, id: &RequestId) {
        if let Some((_, stop)) = lock(&self.streams).remove(id) {
            stop.cancel();
        }
    }
}

/// A response stream's entry in [`PostStreams`], removed when its reader ends.
struct Watched {
    inner: Arc<Inner>,
    id: RequestId,
    number: u64,
    stop: CancellationToken,
}

impl Watched {
    fn new(inner: &Arc<Inner>, id: &RequestId) -> Watched {
        let streams = &inner.post_streams;
        let number = streams.next.fetch_add(1, Ordering::Relaxed);
        let stop = CancellationToken::new();
        lock(&streams.streams).insert(id.clone(), (number, stop.clone()));
        Watched {
            inner: Arc::clone(inner),
            id: id.clone(),
            number,
            stop,
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let mut streams = lock(&self.inner.post_streams.streams);
        if streams.get(&self.id).is_some_and(|(number, _)| *number == self.number) {
            streams.remove(&self.id);
        }
    }
}

/// Reads a request's SSE response; when the server ends it before the response, resumes it
/// with `GET` and `Last-Event-ID` (after the server's `retry:` delay, else the backoff). When it
/// cannot be resumed, request `id` fails with a JSON-RPC error that says why.
///
/// The stream lives until the response, the request's cancellation ([`PostStreams::cancel`]),
/// the transport's end, or `until` (the request's own timeout and its grace, when it has one):
/// then the request fails too, though its sender, whose timer fired first, has given up on it.
pub(crate) async fn read_post_stream(
    inner: Arc<Inner>,
    body: Body,
    id: RequestId,
    until: Option<(Instant, Limit)>,
    stateless: bool,
) {
    let watched = Watched::new(&inner, &id);
    let mut stream = EventStream::new(inner.max_message_size, Some(id.clone()));
    stream.resumable = !stateless;
    let limit = until.map(|(_, limit)| limit);
    let expired = async {
        match until {
            Some((at, _)) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    let stopped = tokio::select! {
        stopped = stream.run(&inner, Some(body)) => Some(stopped),
        () = watched.stop.cancelled() => {
            tracing::debug!(server = %inner.name, "request {id} was cancelled; its response stream is dropped");
            return;
        }
        () = expired => None,
    };
    let Some(stopped) = stopped else {
        if let Some(limit) = limit {
            let why = format!("no response within {limit}; its response stream was dropped");
            inner.fail_request(&id, &why).await;
        }
        return;
    };
    let why = match stopped {
        Stop::Answered | Stop::ReaderGone => return,
        // The terminal error fails every call.
        _ if inner.is_closed() => return,
        Stop::NoEventId(problem) => format!(
            "the response stream ended before the response ({problem}) and the server sent no event id to resume from"
        ),
        Stop::NotResumable(problem) => format!(
            "the response stream ended before the response ({problem}); the stateless revision resumes no stream"
        ),
        Stop::Unsupported => {
            "the response stream ended before the response and cannot be resumed: the server answered GET with 405"
                .to_owned()
        }
        Stop::Failed(e) => format!("resuming the response stream failed: {}", error_chain(&e)),
        Stop::GaveUp(reason) => format!("the response stream could not be resumed: {reason}"),
    };
    inner.fail_request(&id, &why).await;
}

impl Inner {
    /// Opens the standalone `GET` event stream once (after `notifications/initialized`).
    pub(crate) fn start_event_stream(self: &Arc<Self>) {
        if !self.claim_event_stream() {
            return;
        }
        self.set_event_stream(EventStreamState::Connecting);
        let inner = Arc::clone(self);
        self.spawn(async move {
            let mut stream = EventStream::new(inner.max_message_size, None);
            let state = match stream.run(&inner, None).await {
                Stop::Unsupported => {
                    tracing::debug!(server = %inner.name, "the server offers no event stream (GET answered 405)");
                    EventStreamState::Unsupported
                }
                Stop::Failed(e) => EventStreamState::GaveUp {
                    reason: error_chain(&e),
                },
                Stop::GaveUp(reason) | Stop::NoEventId(reason) | Stop::NotResumable(reason) => {
                    EventStreamState::GaveUp { reason }
                }
                Stop::Answered | Stop::ReaderGone => return,
            };
            if let EventStreamState::GaveUp { reason } = &state
                && !inner.is_closed()
            {
                tracing::warn!(server = %inner.name, "gave up the event stream of server-initiated messages: {reason}");
            }
            inner.set_event_stream(state);
        });
    }
}
