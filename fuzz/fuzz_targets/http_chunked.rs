//! Fuzzes the `chunked` body decoder of the Streamable HTTP transport with server bytes.
//!
//! Input layout: the first byte's low 3 bits give `n`, the next `n` bytes give piece lengths
//! (`byte + 1`, cycled), and the rest is the body as the server sent it, delivered in those
//! pieces. Checked: the decoded body, where it ends and the error it reports do not depend on how
//! the bytes were split, and the body is never longer than the bytes sent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_http::fuzzing::decode_chunked;

fuzz_target!(|data: &[u8]| {
    let Some((&header, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(header & 7).min(rest.len());
    let (lengths, sent) = rest.split_at(n);
    let pieces: Vec<usize> = lengths.iter().map(|&b| usize::from(b) + 1).collect();
    let whole = decode_chunked(sent, &[sent.len().max(1)]);
    assert!(whole.0.len() <= sent.len(), "more body than bytes sent");
    if !pieces.is_empty() {
        assert_eq!(decode_chunked(sent, &pieces), whole, "splitting the bytes changed the body");
    }
});
