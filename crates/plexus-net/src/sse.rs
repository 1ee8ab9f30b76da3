//! A bounded, incremental decoder for `text/event-stream` bodies (the WHATWG server-sent events
//! format), which every HTTP-based MCP transport reads: chunks go in as they arrive, events come out.
//!
//! ```
//! use plexus_net::sse::{Decoded, Event, EventDecoder};
//!
//! let mut decoder = EventDecoder::new(1024);
//! let mut events = Vec::new();
//! // However the body is cut into chunks, the same events come out.
//! for chunk in [&b"event: endpoint\nda"[..], b"ta: /messages\n\nid: 7\r\ndata: {}\r\n\r\n"] {
//!     let mut input = chunk;
//!     while let Some(decoded) = decoder.decode(&mut input) {
//!         events.push(decoded);
//!     }
//! }
//! assert_eq!(
//!     events,
//!     [
//!         Decoded::Event(Event { event_type: "endpoint".into(), data: b"/messages".to_vec() }),
//!         Decoded::Event(Event { event_type: "message".into(), data: b"{}".to_vec() }),
//!     ]
//! );
//! assert_eq!(decoder.last_event_id(), Some("7"));
//! ```
//!
//! Bounded: the decoder holds at most `max_event_size` bytes of the event being read (its `data`
//! lines, its type and the line being read), plus the last event id (itself a line, so within the
//! same limit). An event that would need more is dropped as it arrives and reported once, at its
//! end, as [`Decoded::TooLarge`] with the size of its data and, when its data is a reply whose id
//! could be read on the way (see [`IdScanner`]), that id; its `id` and `retry` fields still count,
//! and the events after it decode normally. Comment lines (keep-alives) are skipped without being
//! held, however long.
//!
//! Linear: every input byte is looked at a bounded number of times, however the body is cut into
//! chunks, and the events do not depend on that cut.

use std::mem;
use std::time::Duration;

use plexus_jsonrpc::{IdScanner, ReplyScan};

/// The UTF-8 byte order mark, ignored once at the very start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A line buffer that grew past this is given back to the allocator after use.
const KEEP_CAPACITY: usize = 64 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event type: the last `event` field, `message` when the event had none.
    pub event_type: String,
    /// The data: the event's `data` lines joined by `\n` (possibly empty).
    pub data: Vec<u8>,
}

impl Event {
    /// Whether this is a `message` event (the type of every JSON-RPC message on an MCP stream).
    pub fn is_message(&self) -> bool {
        self.event_type == "message"
    }
}

/// What [`EventDecoder::decode`] produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A complete event.
    Event(Event),
    /// An event over the size limit ended; its data and type were discarded as they arrived.
    TooLarge {
        /// The size of its data (its `data` lines joined by `\n`), in bytes.
        size: usize,
        /// Whether its data was a reply, and to which request (read as it went by).
        reply: ReplyScan,
    },
}

/// An event over the limit, being dropped: its data's size and id so far.
#[derive(Debug, Clone)]
struct Oversize {
    scanner: IdScanner,
    /// Bytes of data dropped, each data line counted with the `\n` after it.
    size: usize,
    /// What the line being skipped is.
    skipped: Skipped,
}

/// A line too long to hold, skipped as it arrives: is it a `data` line, whose value feeds the id
/// scan?
#[derive(Debug, Clone)]
enum Skipped {
    /// Not known yet: its first bytes (fewer than `data: `) are kept until it is.
    Undecided(Vec<u8>),
    /// A `data` line: its value is being dropped.
    Data,
    /// Another line (or none).
    Other,
}

/// The prefix of a `data` line's value, with its optional space.
const DATA_PREFIX: &[u8] = b"data: ";

impl Oversize {
    /// Drops `bytes` of the event's data.
    fn drop_data(&mut self, bytes: &[u8]) {
        self.scanner.feed(bytes);
        self.size += bytes.len();
    }

    /// Skips the next `bytes` of the line being skipped.
    fn skip(&mut self, bytes: &[u8]) {
        match &mut self.skipped {
            Skipped::Data => self.drop_data(bytes),
            Skipped::Other => {}
            Skipped::Undecided(start) => {
                let take = (DATA_PREFIX.len() - start.len()).min(bytes.len());
                start.extend_from_slice(&bytes[..take]);
                if start.len() == DATA_PREFIX.len() || !DATA_PREFIX.starts_with(start) {
                    self.decide();
                    self.skip(&bytes[take..]);
                }
            }
        }
    }

    /// Decides what the skipped line is from its first bytes (all of them, at its end).
    fn decide(&mut self) {
        let Skipped::Undecided(start) = &mut self.skipped else {
            return;
        };
        let start = std::mem::take(start);
        self.skipped = Skipped::Other;
        if let Some(value) = data_value(&start) {
            self.skipped = Skipped::Data;
            self.drop_data(value);
        }
    }

    /// The skipped line ended.
    fn end_line(&mut self) {
        self.decide();
        if let Skipped::Data = std::mem::replace(&mut self.skipped, Skipped::Other) {
            self.drop_data(b"\n");
        }
    }
}

/// The decoder's state between chunks; see the [module docs](self).
#[derive(Debug, Clone)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent flags of the WHATWG parsing algorithm"
)]
pub struct EventDecoder {
    max_event_size: usize,
    /// The start of a line whose end has not arrived yet.
    line: Vec<u8>,
    /// The line being read is skipped (a comment, or too long to hold): its end ends nothing.
    discarding: bool,
    /// The `data` lines of the event so far, each followed by `\n`.
    data: Vec<u8>,
    event_type: String,
    /// The event being read went over the limit: only its `id` and `retry` fields still count.
    oversize: Option<Oversize>,
    /// The last `id` field seen (the spec's "last event ID buffer"); `None` for an empty one.
    id: Option<String>,
    /// The id as of the last dispatch (the spec's "last event ID string").
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// The last line ended with CR, so an LF that follows belongs to it.
    after_cr: bool,
    /// How many bytes of a byte order mark the stream started with, while that is undecided.
    bom_matched: usize,
    /// Whether the start of the stream (a possible byte order mark) is behind.
    started: bool,
}

impl EventDecoder {
    /// A decoder that holds at most `max_event_size` bytes of one event.
    pub fn new(max_event_size: usize) -> Self {
        EventDecoder {
            max_event_size,
            line: Vec::new(),
            discarding: false,
            data: Vec::new(),
            event_type: String::new(),
            oversize: None,
            id: None,
            last_event_id: None,
            retry: None,
            after_cr: false,
            bom_matched: 0,
            started: false,
        }
    }

    /// The limit this decoder was made with.
    pub fn max_event_size(&self) -> usize {
        self.max_event_size
    }

    /// The id in force after the last dispatched event (with or without data): what a client
    /// sends as `Last-Event-ID` to resume. An empty `id` field clears it; one holding a NUL is
    /// ignored, as the format requires.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection delay the server asked for with its last valid `retry` field.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// How many bytes the decoder holds for the event being read (never more than the limit).
    pub fn buffered(&self) -> usize {
        self.line.len() + self.data.len() + self.event_type.len()
    }

    /// Decodes from the front of `input`, advancing it past what was read, until an event is
    /// complete (returned; the rest of `input` is left for the next call) or `input` is used up
    /// (`None`; a partial line or event is kept for the next chunk).
    pub fn decode(&mut self, input: &mut &[u8]) -> Option<Decoded> {
        if !self.started {
            self.skip_bom(input);
        }
        while let Some(&first) = input.first() {
            if mem::replace(&mut self.after_cr, false) && first == b'\n' {
                *input = &input[1..];
                continue;
            }
            let chunk = *input;
            let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') else {
                *input = &[];
                self.hold(chunk);
                return None;
            };
            self.after_cr = chunk[end] == b'\r';
            *input = &chunk[end + 1..];
            if let Some(decoded) = self.end_line(&chunk[..end]) {
                return Some(decoded);
            }
        }
        None
    }

    /// Skips a byte order mark at the start of the stream, which may arrive split across chunks.
    fn skip_bom(&mut self, input: &mut &[u8]) {
        while !self.started {
            let Some(&byte) = input.first() else { return };
            if byte == BOM[self.bom_matched] {
                *input = &input[1..];
                self.bom_matched += 1;
                self.started = self.bom_matched == BOM.len();
            } else {
                // Not a byte order mark: what matched so far starts the first line.
                self.started = true;
                self.hold(&BOM[..self.bom_matched]);
            }
        }
    }

    /// What the event being read has left for the line being read.
    fn room(&self) -> usize {
        self.max_event_size
            .saturating_sub(self.data.len() + self.event_type.len())
    }

    /// Keeps the start of a line until its end arrives, within the limit.
    fn hold(&mut self, part: &[u8]) {
        if self.discarding {
            if let Some(oversize) = self.oversize.as_mut() {
                oversize.skip(part);
            }
            return;
        }
        if part.is_empty() {
            return;
        }
        if self.line.is_empty() && part[0] == b':' {
            self.discarding = true; // a comment
            return;
        }
        let length = self.line.len() + part.len();
        if length > self.room() {
            self.line_too_long(length, part);
            if self.discarding {
                return;
            }
        }
        self.line.extend_from_slice(part);
    }

    /// A line of `length` bytes does not fit in what the event has left: the event is over the
    /// limit, and a line that does not fit in the whole limit either is skipped (`part` is the
    /// part of it that is not in `self.line`; a `data` line's value feeds the id scan).
    fn line_too_long(&mut self, length: usize, part: &[u8]) {
        self.go_over_limit();
        if length > self.max_event_size {
            self.discarding = true;
            let start = mem::take(&mut self.line);
            if let Some(oversize) = self.oversize.as_mut() {
                oversize.skipped = Skipped::Undecided(Vec::with_capacity(DATA_PREFIX.len()));
                oversize.skip(&start);
                oversize.skip(part);
            }
            if start.capacity() <= KEEP_CAPACITY {
                self.line = start;
                self.line.clear();
            }
        }
    }

    /// Drops what the event holds; its remaining lines count only for `id` and `retry`.
    fn go_over_limit(&mut self) {
        if self.oversize.is_none() {
            let mut oversize = Oversize {
                scanner: IdScanner::new(),
                size: 0,
                skipped: Skipped::Other,
            };
            oversize.drop_data(&self.data);
            self.oversize = Some(oversize);
        }
        self.data = Vec::new();
        self.event_type = String::new();
    }

    /// The end of a skipped line.
    fn end_discarded_line(&mut self) {
        self.discarding = false;
        if let Some(oversize) = self.oversize.as_mut() {
            oversize.end_line();
        }
    }

    /// Ends the line whose last part (without its terminator) is `part`.
    fn end_line(&mut self, part: &[u8]) -> Option<Decoded> {
        if self.line.is_empty() && !self.discarding {
            // The whole line is in this chunk: no copy.
            if part.is_empty() {
                return self.dispatch();
            }
            if part[0] == b':' {
                return None; // a comment
            }
            if part.len() > self.room() {
                self.line_too_long(part.len(), part);
            }
            if self.discarding {
                self.end_discarded_line();
            } else {
                self.field(part);
            }
            return None;
        }
        self.hold(part);
        if self.discarding {
            self.end_discarded_line();
            return None;
        }
        let line = mem::take(&mut self.line);
        self.field(&line);
        if line.capacity() <= KEEP_CAPACITY {
            self.line = line;
            self.line.clear();
        }
        None
    }

    /// Processes one complete, non-empty line that fits in the event.
    fn field(&mut self, line: &[u8]) {
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.oversize.is_none()
                    && self.data.len() + self.event_type.len() + value.len() + 1 > self.max_event_size
                {
                    self.go_over_limit();
                }
                match self.oversize.as_mut() {
                    Some(oversize) => {
                        oversize.drop_data(value);
                        oversize.drop_data(b"\n");
                    }
                    None => {
                        self.data.extend_from_slice(value);
                        self.data.push(b'\n');
                    }
                }
            }
            b"event" if self.oversize.is_none() => {
                let event_type = String::from_utf8_lossy(value).into_owned();
                if self.data.len() + event_type.len() > self.max_event_size {
                    self.go_over_limit();
                } else {
                    self.event_type = event_type;
                }
            }
            b"id" if !value.contains(&0) => {
                self.id = (!value.is_empty()).then(|| String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits, so valid UTF-8; a number too large for a u64 is ignored.
                if let Some(millis) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.retry = Some(Duration::from_millis(millis));
                }
            }
            // Unknown fields (and `data`/`event` of an event over the limit) are ignored.
            _ => {}
        }
    }

    /// Ends the current event at a blank line.
    fn dispatch(&mut self) -> Option<Decoded> {
        if self.last_event_id != self.id {
            self.last_event_id.clone_from(&self.id);
        }
        if let Some(mut oversize) = self.oversize.take() {
            return Some(Decoded::TooLarge {
                // Without the `\n` after the last data line.
                size: oversize.size.saturating_sub(1),
                reply: oversize.scanner.finish_scan(),
            });
        }
        let event_type = mem::take(&mut self.event_type);
        if self.data.is_empty() {
            return None; // no data: nothing is dispatched (the type is reset)
        }
        let mut data = mem::take(&mut self.data);
        data.pop(); // the `\n` after the last data line
        let event_type = if event_type.is_empty() {
            "message".to_owned()
        } else {
            event_type
        };
        Some(Decoded::Event(Event { event_type, data }))
    }
}

/// The value of a `data` line (or of the start of one), after `data:` and one optional space.
fn data_value(line: &[u8]) -> Option<&[u8]> {
    let value = line.strip_prefix(b"data:")?;
    Some(value.strip_prefix(b" ").unwrap_or(value))
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use plexus_jsonrpc::RequestId;
    use proptest::prelude::*;

    use super::*;

    /// Decodes `chunks` in order, checking the bound after every call.
    fn decode_chunks(decoder: &mut EventDecoder, chunks: &[&[u8]]) -> Vec<Decoded> {
        let mut out = Vec::new();
        for chunk in chunks {
            let mut input = *chunk;
            loop {
                let decoded = decoder.decode(&mut input);
                let max = decoder.max_event_size();
                assert!(decoder.buffered() <= max, "buffered {} > {max}", decoder.buffered());
                match decoded {
                    Some(decoded) => out.push(decoded),
                    None => break,
                }
            }
            assert!(input.is_empty());
        }
        out
    }

    fn decode(max: usize, chunks: &[&[u8]]) -> (Vec<Decoded>, EventDecoder) {
        let mut decoder = EventDecoder::new(max);
        let out = decode_chunks(&mut decoder, chunks);
        (out, decoder)
    }

    fn event(event_type: &str, data: &str) -> Decoded {
        Decoded::Event(Event {
            event_type: event_type.to_owned(),
            data: data.as_bytes().to_vec(),
        })
    }

    #[test]
    fn fields_comments_and_defaults() {
        let body = b"\xEF\xBB\xBF: keep-alive\nevent: endpoint\ndata: /messages?sessionId=1\n\ndata:{\"a\":1}\ndata:  two\nid: 7\nretry: 10\nunknown\n\nevent: nothing\n\ndata\n\n";
        let (out, decoder) = decode(1024, &[body]);
        assert_eq!(
            out,
            [
                event("endpoint", "/messages?sessionId=1"),
                event("message", "{\"a\":1}\n two"),
                event("message", "")
            ]
        );
        assert_eq!(decoder.last_event_id(), Some("7"));
        assert_eq!(decoder.retry(), Some(Duration::from_millis(10)));
    }

    #[test]
    fn crlf_split_between_chunks() {
        let (out, _) = decode(64, &[b"data: a\r", b"\ndata: b\r", b"\r", b"\n", b"data: c\r\r"]);
        assert_eq!(out, [event("message", "a\nb"), event("message", "c")]);
    }

    #[test]
    fn a_priming_event_sets_the_id_and_yields_nothing() {
        let (out, decoder) = decode(1024, &[b"id: prime-1\n\n"]);
        assert_eq!(out, []);
        assert_eq!(decoder.last_event_id(), Some("prime-1"));
    }

    #[test]
    fn the_id_counts_from_the_blank_line_on() {
        let mut decoder = EventDecoder::new(1024);
        assert_eq!(decode_chunks(&mut decoder, &[b"id: 1\ndata: x\n"]), []);
        assert_eq!(decoder.last_event_id(), None);
        assert_eq!(decode_chunks(&mut decoder, &[b"\n"]), [event("message", "x")]);
        assert_eq!(decoder.last_event_id(), Some("1"));
    }

    #[test]
    fn bad_retry_and_nul_ids_are_ignored_and_an_empty_id_resets() {
        let (_, decoder) = decode(
            1024,
            &[b"retry: 12a\nretry: 99999999999999999999999\nid: a\0b\ndata: 1\n\n"],
        );
        assert_eq!(decoder.retry(), None);
        assert_eq!(decoder.last_event_id(), None);
        let (_, decoder) = decode(1024, &[b"id: 1\ndata: 1\n\nid\ndata: 2\n\n"]);
        assert_eq!(decoder.last_event_id(), None);
    }

    #[test]
    fn an_oversize_event_is_reported_once_and_the_next_one_decodes() {
        let big = format!("data: {}\n\n", "x".repeat(100));
        let body = format!("data: small\n\n{big}event: e\ndata: after\n\n");
        for split in [1, 7, 50, body.len()] {
            let chunks: Vec<&[u8]> = body.as_bytes().chunks(split).collect();
            assert_eq!(
                decode(32, &chunks).0,
                [event("message", "small"), too_large(100, None), event("e", "after")],
                "chunks of {split}"
            );
        }
    }

    #[test]
    fn many_short_data_lines_over_the_limit() {
        let body = format!("{}\ndata: ok\n\n", "data: 12345678\n".repeat(10));
        assert_eq!(
            decode(40, &[body.as_bytes()]).0,
            [too_large(10 * 9 - 1, None), event("message", "ok")]
        );
    }

    fn too_large(size: usize, reply: Option<RequestId>) -> Decoded {
        let reply = match reply {
            Some(id) => ReplyScan::Reply(id),
            None => ReplyScan::NotAReply,
        };
        Decoded::TooLarge { size, reply }
    }

    #[test]
    fn an_oversize_reply_keeps_its_size_and_id_however_it_is_cut() {
        // The id after the result (as the TypeScript SDK writes it), in a long line and in short ones.
        let long = format!(
            r#"{{"jsonrpc":"2.0","result":{{"text":"{}"}},"id":17}}"#,
            "y".repeat(200)
        );
        let body = format!(
            "event: message\ndata: {long}\n\ndata: {{\"result\":\ndata: {}\ndata: ,\"id\":\"s\"}}\n\ndata: ok\n\n",
            "1".repeat(60)
        );
        let second_size = r#"{"result":"#.len() + 1 + 60 + 1 + r#","id":"s"}"#.len();
        for split in [1, 3, 16, 64, body.len()] {
            let chunks: Vec<&[u8]> = body.as_bytes().chunks(split).collect();
            assert_eq!(
                decode(48, &chunks).0,
                [
                    too_large(long.len(), Some(RequestId::Number(17))),
                    too_large(second_size, Some(RequestId::from("s"))),
                    event("message", "ok")
                ],
                "chunks of {split}"
            );
        }
    }

    #[test]
    fn the_id_of_an_oversize_event_still_counts() {
        let body = format!(
            "id: 1\ndata: ok\n\ndata: {}\nevent: big\nid: 2\nretry: 5\n\n",
            "x".repeat(100)
        );
        let (out, decoder) = decode(64, &[body.as_bytes()]);
        assert_eq!(out, [event("message", "ok"), too_large(100, None)]);
        assert_eq!(decoder.last_event_id(), Some("2"));
        assert_eq!(decoder.retry(), Some(Duration::from_millis(5)));
    }

    #[test]
    fn a_huge_line_is_never_buffered_and_a_huge_comment_is_no_event() {
        let mut decoder = EventDecoder::new(1024);
        let chunk = vec![b'y'; 64 * 1024];
        for start in [&b"data: "[..], b": "] {
            let mut chunks = vec![start];
            chunks.extend(std::iter::repeat_n(&chunk[..], 64));
            decode_chunks(&mut decoder, &chunks);
            assert!(decoder.line.capacity() <= 2 * 1024, "{}", decoder.line.capacity());
            assert_eq!(
                decode_chunks(&mut decoder, &[b"\n\n"]).len(),
                usize::from(start == b"data: ")
            );
        }
        assert_eq!(
            decode_chunks(&mut decoder, &[b"data: ok\n\n"]),
            [event("message", "ok")]
        );
    }

    #[test]
    fn a_split_bom_and_a_false_bom_start() {
        assert_eq!(
            decode(64, &[b"\xEF", b"\xBB", b"\xBFdata: 1\n\n"]).0,
            [event("message", "1")]
        );
        assert_eq!(
            decode(64, &[b"\xEF", b"data: 2\n\n"]).0,
            [],
            "a broken first line is an unknown field"
        );
        assert_eq!(
            decode(64, &[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: 3\n\n"]).0,
            [],
            "only one mark is skipped"
        );
        assert_eq!(decode(64, &[b"d", b"ata: 4\n\n"]).0, [event("message", "4")]);
    }

    #[test]
    fn decoding_stops_after_each_event() {
        let mut decoder = EventDecoder::new(64);
        let mut input = &b"data: 1\n\ndata: 2\n\ndata: 3"[..];
        assert_eq!(decoder.decode(&mut input), Some(event("message", "1")));
        assert_eq!(input, b"data: 2\n\ndata: 3");
        assert_eq!(decoder.decode(&mut input), Some(event("message", "2")));
        assert_eq!(decoder.decode(&mut input), None);
        assert!(input.is_empty());
        assert_eq!(decoder.buffered(), b"data: 3".len());
    }

    /// One event per entry: an optional type, an optional id and its data lines.
    type Events = Vec<(Option<String>, Option<u16>, Vec<String>)>;

    fn events_strategy() -> impl Strategy<Value = Events> {
        let text = "[a-zA-Z0-9 :{}\"é]{0,12}";
        let lines = prop::collection::vec(text, 1..4);
        prop::collection::vec(
            (prop::option::of("[a-z]{1,8}"), prop::option::of(any::<u16>()), lines),
            0..8,
        )
    }

    fn encode(events: &Events, endings: &[&str]) -> Vec<u8> {
        let mut out = String::new();
        let mut n = 0;
        let mut last = "";
        // Mixed endings, except a CR followed by an empty LF line, which is one CRLF.
        let mut eol = || {
            n += 1;
            let mut next = endings[n % endings.len()];
            if last == "\r" && next == "\n" {
                next = "\r\n";
            }
            last = next;
            next
        };
        for (event_type, id, lines) in events {
            write!(out, ": comment{}", eol()).unwrap();
            if let Some(t) = event_type {
                write!(out, "event: {t}{}", eol()).unwrap();
            }
            if let Some(id) = id {
                write!(out, "id: {id}{}", eol()).unwrap();
            }
            for line in lines {
                write!(out, "data: {line}{}", eol()).unwrap();
            }
            out.push_str(eol());
        }
        out.into_bytes()
    }

    fn cut<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(body.len())).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([body.len()]) {
            chunks.push(&body[start..cut]);
            start = cut;
        }
        chunks
    }

    /// A case proptest once found: a typed event with one empty data line, CR and LF endings.
    #[test]
    fn an_empty_data_line_of_a_typed_event_with_mixed_endings() {
        let body = encode(&vec![(Some("a".to_owned()), None, vec![String::new()])], &["\n", "\r"]);
        assert_eq!(decode(64, &[&body]).0, [event("a", "")]);
    }

    proptest! {
        #[test]
        fn any_chunking_and_line_endings_decode_the_same(
            events in events_strategy(),
            endings in prop::sample::subsequence(vec!["\n", "\r", "\r\n"], 1..=3),
            cuts in prop::collection::vec(0usize..400, 0..12),
        ) {
            let body = encode(&events, &endings);
            let (out, decoder) = decode(1 << 20, &cut(&body, &cuts));
            let expected: Vec<Decoded> = events
                .iter()
                .map(|(t, _, lines)| event(t.as_deref().unwrap_or("message"), &lines.join("\n")))
                .collect();
            prop_assert_eq!(out, expected);
            let last_id = events.iter().rev().find_map(|(_, id, _)| *id).map(|id| id.to_string());
            prop_assert_eq!(decoder.last_event_id(), last_id.as_deref());
        }

        /// Any bytes, any limit, any chunking: the bound holds (checked after every call), no
        /// event reaches the limit, and the outcome is that of the whole body in one chunk.
        #[test]
        fn the_limit_holds_and_chunking_does_not_matter_for_any_input(
            body in prop::collection::vec(prop::sample::select(b"data: event:id\r\n\xEF\xBB\xBFx\0".to_vec()), 0..600),
            max in 1usize..64,
            cuts in prop::collection::vec(0usize..600, 0..20),
        ) {
            let (whole, whole_decoder) = decode(max, &[&body]);
            let (chunked, chunked_decoder) = decode(max, &cut(&body, &cuts));
            for decoded in &chunked {
                if let Decoded::Event(e) = decoded {
                    prop_assert!(e.data.len() < max);
                }
            }
            prop_assert_eq!(whole, chunked);
            prop_assert_eq!(whole_decoder.last_event_id(), chunked_decoder.last_event_id());
            prop_assert_eq!(whole_decoder.retry(), chunked_decoder.retry());
        }

        #[test]
        fn arbitrary_bytes_stay_within_the_limit(body in prop::collection::vec(any::<u8>(), 0..600), max in 1usize..64, split in 1usize..40) {
            let chunks: Vec<&[u8]> = body.chunks(split).collect();
            let (whole, _) = decode(max, &[&body]);
            prop_assert_eq!(decode(max, &chunks).0, whole);
        }
    }
}
