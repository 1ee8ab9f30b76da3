//! Fuzzes `LineCodec`, the newline framing every stdio server's output goes through.
//!
//! Input layout: the first byte's low 3 bits give `n`, the next `n` bytes give chunk lengths
//! (`byte + 1`, cycled), and the rest is the stream, fed to the codec in those chunks the way a pipe
//! delivers it. Checked: the buffer never holds more than `max + 1` bytes once `decode` has no
//! complete line; every decoded message re-encodes to exactly one line that decodes to the same
//! message; and the messages and decode errors do not depend on how the stream was chunked.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use plexus_jsonrpc::{FrameError, LineCodec, Message};
use tokio_util::codec::Decoder;

/// Small enough that the oversize path (report once, discard to the newline) is hit often.
const MAX_SIZE: usize = 256;

/// What a chunking-independent run must agree on: each message (as its encoding) or decode error,
/// in order. `TooLarge` items are left out: a whitespace-only line longer than the limit is skipped
/// as blank when it arrives whole but reported as too large when it arrives in pieces.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Message(Vec<u8>),
    DecodeError(String),
}

fuzz_target!(|data: &[u8]| {
    let Some((&header, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(header & 7).min(rest.len());
    let (lengths, stream) = rest.split_at(n);
    let lengths: Vec<usize> = if lengths.is_empty() {
        vec![stream.len().max(1)]
    } else {
        lengths.iter().map(|&b| usize::from(b) + 1).collect()
    };

    let chunked = decode_in_chunks(stream, &lengths);
    let whole = decode_in_chunks(stream, &[stream.len().max(1)]);
    assert_eq!(chunked, whole, "chunking changed what was decoded");
});

/// Feeds `stream` to a fresh codec in chunks of the given (cycled) lengths, then ends it.
fn decode_in_chunks(stream: &[u8], lengths: &[usize]) -> Vec<Seen> {
    let mut codec = LineCodec::with_max_size(MAX_SIZE);
    let mut buf = BytesMut::new();
    let mut seen = Vec::new();
    let mut offset = 0;
    for &len in lengths.iter().cycle() {
        if offset >= stream.len() {
            break;
        }
        let end = (offset + len).min(stream.len());
        buf.extend_from_slice(&stream[offset..end]);
        offset = end;
        while let Some(item) = codec
            .decode(&mut buf)
            .expect("LineCodec::decode never fails with an I/O error")
        {
            record(item, &mut seen);
        }
        assert!(
            buf.len() <= MAX_SIZE + 1,
            "{} bytes buffered with no complete line (limit {MAX_SIZE})",
            buf.len()
        );
    }
    while let Some(item) = codec
        .decode_eof(&mut buf)
        .expect("LineCodec::decode_eof never fails with an I/O error")
    {
        record(item, &mut seen);
    }
    assert!(
        buf.is_empty(),
        "{} bytes left in the buffer after the end of the stream",
        buf.len()
    );
    seen
}

/// Checks one decoded item and notes what must not depend on chunking.
fn record(item: Result<Message, FrameError>, seen: &mut Vec<Seen>) {
    match item {
        Ok(message) => seen.push(Seen::Message(plexus_fuzz::assert_round_trips(&message))),
        Err(FrameError::TooLarge { size, limit, .. }) => {
            assert_eq!(limit, MAX_SIZE);
            assert!(size > MAX_SIZE, "a line of {size} bytes reported as over the {MAX_SIZE}-byte limit");
        }
        Err(FrameError::Decode(e) | FrameError::InvalidReply { error: e, .. }) => {
            seen.push(Seen::DecodeError(e.to_string()));
        }
        Err(other) => panic!("the codec reported a frame error it does not document: {other}"),
    }
}
