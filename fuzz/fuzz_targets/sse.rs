//! Fuzzes the `text/event-stream` decoder every HTTP-based transport (legacy SSE, Streamable HTTP)
//! reads server bytes with.
//!
//! Input layout: the first byte's low 3 bits give `n`, its high 5 bits the event size limit
//! (`bits + 1`, small so that the over-limit path is hit often), the next `n` bytes give chunk
//! lengths (`byte + 1`, cycled), and the rest is the body, fed in those chunks the way a socket
//! delivers it. Checked: the decoder never holds more than the limit; no event's data reaches
//! the limit; every call consumes its whole input or stops right after an event; and the events,
//! the last event id and the retry delay do not depend on how the body was chunked.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use plexus_net::sse::{Decoded, EventDecoder};

/// What a run must agree on, whatever the chunking.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    decoded: Vec<Decoded>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

fuzz_target!(|data: &[u8]| {
    let Some((&header, rest)) = data.split_first() else {
        return;
    };
    let max = usize::from(header >> 3) + 1;
    let n = usize::from(header & 7).min(rest.len());
    let (lengths, body) = rest.split_at(n);
    let lengths: Vec<usize> = if lengths.is_empty() {
        vec![body.len().max(1)]
    } else {
        lengths.iter().map(|&b| usize::from(b) + 1).collect()
    };

    let chunked = decode_in_chunks(body, &lengths, max);
    let whole = decode_in_chunks(body, &[body.len().max(1)], max);
    assert_eq!(chunked, whole, "chunking changed what was decoded");
});

/// Decodes `body` with a fresh decoder in chunks of the given (cycled) lengths.
fn decode_in_chunks(body: &[u8], lengths: &[usize], max: usize) -> Outcome {
    let mut decoder = EventDecoder::new(max);
    let mut decoded = Vec::new();
    let mut offset = 0;
    for &len in lengths.iter().cycle() {
        if offset >= body.len() {
            break;
        }
        let end = (offset + len).min(body.len());
        let mut input = &body[offset..end];
        offset = end;
        while !input.is_empty() {
            let before = input.len();
            let next = decoder.decode(&mut input);
            assert!(
                decoder.buffered() <= max,
                "{} bytes buffered (limit {max})",
                decoder.buffered()
            );
            match next {
                Some(event) => {
                    assert!(input.len() < before, "an event came out of no input");
                    if let Decoded::Event(event) = &event {
                        assert!(
                            event.data.len() < max,
                            "an event of {} bytes (limit {max})",
                            event.data.len()
                        );
                    }
                    decoded.push(event);
                }
                None => assert!(input.is_empty(), "decoding stopped before the end of its input"),
            }
        }
    }
    Outcome {
        decoded,
        last_event_id: decoder.last_event_id().map(str::to_owned),
        retry: decoder.retry(),
    }
}
