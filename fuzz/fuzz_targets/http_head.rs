//! Fuzzes the HTTP/1.1 response head parser of the Streamable HTTP transport (status line,
//! headers, body framing, keep-alive) with server bytes.
//!
//! Input layout: the first byte's low 3 bits give `n`, the next `n` bytes give piece lengths
//! (`byte + 1`, cycled), and the rest is what the server sent, delivered in those pieces. Checked:
//! the parser never buffers more than its head limit without an error, and what it parses (or the
//! error it reports) does not depend on how the bytes were split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_http::fuzzing::parse_head;

fuzz_target!(|data: &[u8]| {
    let Some((&header, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(header & 7).min(rest.len());
    let (lengths, sent) = rest.split_at(n);
    let pieces: Vec<usize> = lengths.iter().map(|&b| usize::from(b) + 1).collect();
    let whole = parse_head(sent, &[sent.len().max(1)]);
    if !pieces.is_empty() {
        assert_eq!(parse_head(sent, &pieces), whole, "splitting the bytes changed the parse");
    }
});
