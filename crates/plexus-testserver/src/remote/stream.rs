//! The SSE streams of a Streamable HTTP session. Every event has the id `<stream>-<seq>` (the
//! priming event is seq 0), is kept for replay (the last [`MAX_STORED_EVENTS`] events, at most
//! [`MAX_STORED_BYTES`] bytes, per stream), and is read by at most one connection at a time: a
//! resuming GET takes the stream over from the connection that had it.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use plexus_jsonrpc::RequestId;
use tokio::time::{Instant, Sleep};

use crate::server::lock;

/// The most events a stream keeps for replay.
pub(crate) const MAX_STORED_EVENTS: usize = 1024;
/// The most bytes of events a stream keeps for replay (the newest event is always kept).
pub(crate) const MAX_STORED_BYTES: usize = 64 << 20;

/// Encodes one SSE event: `id: <stream>-<seq>`, an optional `retry:`, then `event: message` and
/// one `data:` line per line of `data` (the priming event has empty data and no event type).
pub(crate) fn encode_event(stream: u64, seq: u64, retry_ms: Option<u64>, data: &[u8]) -> Bytes {
    let mut event = String::with_capacity(data.len() + 48);
    let _ = writeln!(event, "id: {stream}-{seq}");
    if let Some(ms) = retry_ms {
        let _ = writeln!(event, "retry: {ms}");
    }
    let mut bytes = event.into_bytes();
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    if data.is_empty() {
        bytes.extend_from_slice(b"data: \n\n");
    } else {
        bytes.extend_from_slice(b"event: message\n");
        for line in data.split(|b| *b == b'\n') {
            bytes.extend_from_slice(b"data: ");
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        bytes.push(b'\n');
    }
    Bytes::from(bytes)
}

/// Parses a `Last-Event-ID` of this server: `(stream, seq)`.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(stream) || !digits(seq) {
        return None;
    }
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// One stored event.
struct Stored {
    seq: u64,
    bytes: Bytes,
    /// The response that ends the stream's exchange.
    response: bool,
    /// Write it `chunk` bytes at a time, `delay` apart (the `drip` fault).
    drip: Option<(usize, Duration)>,
}

struct Inner {
    events: VecDeque<Stored>,
    next_seq: u64,
    stored_bytes: usize,
    /// No more events will come.
    finished: bool,
    /// Every event below this seq went to some reader.
    delivered: u64,
    /// The generation of the attached reader; 0 when none is attached.
    reader: u64,
    generations: u64,
    waker: Option<Waker>,
}

/// One SSE stream: a POSTed request's, or the session's standalone GET stream (key 0).
pub(crate) struct EventStream {
    key: u64,
    /// The request whose response ends the stream (`None` for the standalone stream).
    request: Option<RequestId>,
    /// Whether delivered events are kept for replay (not with `--no-resume`).
    keep_delivered: bool,
    inner: Mutex<Inner>,
}

/// Why a resuming reader cannot attach where it asked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ResumeError {
    /// The id names an event this stream has not sent.
    NotSent,
    /// The events after the id are no longer stored.
    Evicted,
}

impl EventStream {
    pub(crate) fn new(key: u64, request: Option<RequestId>, keep_delivered: bool) -> Arc<Self> {
        Arc::new(EventStream {
            key,
            request,
            keep_delivered,
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                next_seq: 0,
                stored_bytes: 0,
                finished: false,
                delivered: 0,
                reader: 0,
                generations: 0,
                waker: None,
            }),
        })
    }

    pub(crate) fn key(&self) -> u64 {
        self.key
    }

    pub(crate) fn request(&self) -> Option<&RequestId> {
        self.request.as_ref()
    }

    /// Appends an event with empty data (the priming event), with `retry:` when given.
    pub(crate) fn push_priming(&self, retry_ms: Option<u64>) {
        self.push_with(|seq| encode_event(self.key, seq, retry_ms, b""), false, None);
    }

    /// Appends an event carrying the message (or raw fault bytes) `line`.
    pub(crate) fn push(&self, line: &[u8]) {
        self.push_with(|seq| encode_event(self.key, seq, None, line), false, None);
    }

    /// Appends the response `line` (dripped when `drip` says so) and finishes the stream.
    pub(crate) fn push_response(&self, line: &[u8], drip: Option<(usize, Duration)>) {
        self.push_with(|seq| encode_event(self.key, seq, None, line), true, drip);
        self.finish();
    }

    fn push_with(&self, encode: impl FnOnce(u64) -> Bytes, response: bool, drip: Option<(usize, Duration)>) {
        let waker = {
            let mut inner = lock(&self.inner);
            if inner.finished {
                return;
            }
            let seq = inner.next_seq;
            inner.next_seq += 1;
            let bytes = encode(seq);
            inner.stored_bytes += bytes.len();
            inner.events.push_back(Stored {
                seq,
                bytes,
                response,
                drip,
            });
            while inner.events.len() > 1
                && (inner.events.len() > MAX_STORED_EVENTS
                    || inner.stored_bytes > MAX_STORED_BYTES
                    || (!self.keep_delivered && inner.events.front().is_some_and(|e| e.seq < inner.delivered)))
            {
                if let Some(evicted) = inner.events.pop_front() {
                    inner.stored_bytes -= evicted.bytes.len();
                }
            }
            inner.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Marks the stream complete: its reader ends once it has read everything.
    pub(crate) fn finish(&self) {
        let waker = {
            let mut inner = lock(&self.inner);
            inner.finished = true;
            inner.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Whether every event went to a reader.
    pub(crate) fn drained(&self) -> bool {
        let inner = lock(&self.inner);
        inner.delivered == inner.next_seq
    }

    /// A new reader from the first event no reader has had yet; a reader attached before ends.
    /// With `limit`, it delivers at most that many events; with `stop_before_response`, never the
    /// response.
    pub(crate) fn reader(self: &Arc<Self>, limit: Option<u64>, stop_before_response: bool) -> EventReader {
        let inner = lock(&self.inner);
        let first = inner.events.front().map_or(inner.next_seq, |event| event.seq);
        let cursor = inner.delivered.max(first);
        self.attach(inner, cursor, limit, stop_before_response)
    }

    /// A new reader from the event after `seq` (a `Last-Event-ID`); a reader attached before ends.
    pub(crate) fn resume(self: &Arc<Self>, seq: u64) -> Result<EventReader, ResumeError> {
        let inner = lock(&self.inner);
        let first = inner.events.front().map_or(inner.next_seq, |event| event.seq);
        if seq >= inner.next_seq {
            return Err(ResumeError::NotSent);
        }
        if seq + 1 < first {
            return Err(ResumeError::Evicted);
        }
        Ok(self.attach(inner, seq + 1, None, false))
    }

    fn attach(
        self: &Arc<Self>,
        mut inner: std::sync::MutexGuard<'_, Inner>,
        cursor: u64,
        remaining: Option<u64>,
        stop_before_response: bool,
    ) -> EventReader {
        inner.generations += 1;
        inner.reader = inner.generations;
        let reader = EventReader {
            stream: Arc::clone(self),
            generation: inner.generations,
            cursor,
            remaining,
            stop_before_response,
            drip: None,
        };
        let replaced = inner.waker.take();
        drop(inner);
        // Wakes the reader that this one replaces, so that it ends.
        if let Some(waker) = replaced {
            waker.wake();
        }
        reader
    }
}

/// A response being written in pieces (the `drip` fault).
struct Drip {
    bytes: Bytes,
    written: usize,
    chunk: usize,
    delay: Duration,
    pause: Pin<Box<Sleep>>,
}

/// One connection's view of a stream: the body of a POST's or a GET's response.
pub(crate) struct EventReader {
    stream: Arc<EventStream>,
    generation: u64,
    cursor: u64,
    remaining: Option<u64>,
    stop_before_response: bool,
    drip: Option<Drip>,
}

impl EventReader {
    /// The next bytes to write; `None` ends the response (the stream is complete, this reader
    /// reached its limit or lagged behind what is stored, or another reader took over).
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(drip) = &mut self.drip {
            if drip.written > 0 {
                std::task::ready!(drip.pause.as_mut().poll(cx));
            }
            let end = (drip.written + drip.chunk).min(drip.bytes.len());
            let piece = drip.bytes.slice(drip.written..end);
            drip.written = end;
            if end == drip.bytes.len() {
                self.drip = None;
            } else {
                let deadline = Instant::now() + drip.delay;
                drip.pause.as_mut().reset(deadline);
            }
            return Poll::Ready(Some(piece));
        }
        let mut inner = lock(&self.stream.inner);
        if inner.reader != self.generation || self.remaining == Some(0) {
            return Poll::Ready(None);
        }
        let first = inner.events.front().map_or(inner.next_seq, |event| event.seq);
        if self.cursor < first {
            // Lagged behind what is stored: the client resumes from what it has.
            return Poll::Ready(None);
        }
        if self.cursor < inner.next_seq {
            let event = &inner.events[usize::try_from(self.cursor - first).unwrap_or(usize::MAX)];
            if event.response && self.stop_before_response {
                return Poll::Ready(None);
            }
            let (bytes, drip) = (event.bytes.clone(), event.drip);
            self.cursor += 1;
            inner.delivered = inner.delivered.max(self.cursor);
            if let Some(remaining) = &mut self.remaining {
                *remaining -= 1;
            }
            drop(inner);
            return match drip {
                Some((chunk, delay)) if chunk < bytes.len() => {
                    self.drip = Some(Drip {
                        bytes,
                        written: 0,
                        chunk,
                        delay,
                        pause: Box::pin(tokio::time::sleep(Duration::ZERO)),
                    });
                    self.poll_next(cx)
                }
                _ => Poll::Ready(Some(bytes)),
            };
        }
        if inner.finished {
            return Poll::Ready(None);
        }
        inner.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for EventReader {
    fn drop(&mut self) {
        let mut inner = lock(&self.stream.inner);
        if inner.reader == self.generation {
            inner.reader = 0;
            inner.waker = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(reader: &mut EventReader) -> Poll<Option<Bytes>> {
        reader.poll_next(&mut Context::from_waker(Waker::noop()))
    }

    fn text(poll: Poll<Option<Bytes>>) -> Option<String> {
        match poll {
            Poll::Ready(bytes) => bytes.map(|bytes| String::from_utf8(bytes.to_vec()).unwrap()),
            Poll::Pending => panic!("pending"),
        }
    }

    #[test]
    fn events_have_ids_types_and_data_lines() {
        assert_eq!(
            &encode_event(3, 0, Some(500), b"")[..],
            b"id: 3-0\nretry: 500\ndata: \n\n"
        );
        assert_eq!(
            &encode_event(3, 1, None, b"{\"a\":1}\n")[..],
            b"id: 3-1\nevent: message\ndata: {\"a\":1}\n\n"
        );
        assert_eq!(
            &encode_event(0, 2, None, b"a\nb")[..],
            b"id: 0-2\nevent: message\ndata: a\ndata: b\n\n"
        );
    }

    #[test]
    fn event_ids_parse_strictly() {
        assert_eq!(parse_event_id("12-0"), Some((12, 0)));
        for bad in ["", "1", "1-", "-1", "a-1", "1-1-1", "+1-2", "1- 2"] {
            assert_eq!(parse_event_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_reader_gets_events_in_order_and_ends_with_the_stream() {
        let stream = EventStream::new(1, None, true);
        stream.push_priming(None);
        let mut reader = stream.reader(None, false);
        assert_eq!(text(next(&mut reader)).unwrap(), "id: 1-0\ndata: \n\n");
        assert!(next(&mut reader).is_pending());
        stream.push(b"x\n");
        stream.push_response(b"y\n", None);
        assert_eq!(text(next(&mut reader)).unwrap(), "id: 1-1\nevent: message\ndata: x\n\n");
        assert_eq!(text(next(&mut reader)).unwrap(), "id: 1-2\nevent: message\ndata: y\n\n");
        assert_eq!(text(next(&mut reader)), None);
        assert!(stream.drained());
        stream.push(b"after the end\n");
        assert!(stream.drained(), "a finished stream takes no more events");
    }

    #[test]
    fn a_limited_reader_stops_before_the_response_and_a_resume_gets_the_rest() {
        let stream = EventStream::new(2, Some(RequestId::Number(7)), true);
        stream.push_priming(None);
        stream.push(b"p\n");
        stream.push_response(b"r\n", None);
        let mut first = stream.reader(Some(5), true);
        assert!(text(next(&mut first)).unwrap().starts_with("id: 2-0\n"));
        assert!(text(next(&mut first)).unwrap().starts_with("id: 2-1\n"));
        assert_eq!(text(next(&mut first)), None);
        let mut resumed = stream.resume(1).unwrap();
        assert!(text(next(&mut resumed)).unwrap().starts_with("id: 2-2\n"));
        assert_eq!(text(next(&mut resumed)), None);
        assert_eq!(stream.resume(3).err(), Some(ResumeError::NotSent));
        assert_eq!(stream.request(), Some(&RequestId::Number(7)));
    }

    #[test]
    fn a_new_reader_takes_over() {
        let stream = EventStream::new(0, None, true);
        let mut old = stream.reader(None, false);
        assert!(next(&mut old).is_pending());
        stream.push(b"a\n");
        let mut new = stream.reader(None, false);
        assert_eq!(text(next(&mut old)), None);
        assert!(text(next(&mut new)).unwrap().starts_with("id: 0-0\n"));
    }

    #[test]
    fn storage_is_bounded_and_evicted_events_cannot_be_resumed() {
        let stream = EventStream::new(1, None, true);
        for _ in 0..MAX_STORED_EVENTS + 10 {
            stream.push(b"e\n");
        }
        assert_eq!(stream.resume(0).err(), Some(ResumeError::Evicted));
        let mut reader = stream.resume(9).unwrap();
        assert!(text(next(&mut reader)).unwrap().starts_with("id: 1-10\n"));
        let without_replay = EventStream::new(1, None, false);
        without_replay.push(b"a\n");
        let mut reader = without_replay.reader(None, false);
        assert!(text(next(&mut reader)).is_some());
        without_replay.push(b"b\n");
        assert!(text(next(&mut reader)).is_some());
        without_replay.push(b"c\n");
        assert_eq!(without_replay.resume(0).err(), Some(ResumeError::Evicted));
        assert!(without_replay.resume(1).is_ok(), "undelivered events stay until read");
    }
}
