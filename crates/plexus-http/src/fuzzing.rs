//! The HTTP/1.1 response parsers, opened for the cargo-fuzz targets in `fuzz/` (feature
//! `fuzzing`; not part of the stable API). Each function feeds server bytes to the parser the
//! transport uses, in the pieces a socket could deliver them in, and returns what came out, so
//! that a target can check that the result does not depend on the pieces.

use bytes::BytesMut;

use crate::wire::chunked::{ChunkedDecoder, Decoded};
use crate::wire::head::{MAX_HEAD_SIZE, take_head};

/// What parsing a response head gave: status, body framing (`Debug` form), whether the
/// connection is reusable, and the bytes left after the head; or the error's message. `None`:
/// the input ended before the head did.
pub type HeadOutcome = Option<Result<(u16, String, bool, Vec<u8>), String>>;

/// Parses a response head from `data`, delivered in pieces of the given (cycled) lengths, as
/// the transport's reader does: after each piece it tries to take a head from its buffer.
///
/// # Panics
///
/// When the buffer grows past the head size limit without an error: the bound is broken.
pub fn parse_head(data: &[u8], pieces: &[usize]) -> HeadOutcome {
    let mut buffer = BytesMut::new();
    let mut offset = 0;
    for &len in pieces.iter().cycle() {
        if offset >= data.len() {
            return None;
        }
        let end = (offset + len.max(1)).min(data.len());
        buffer.extend_from_slice(&data[offset..end]);
        offset = end;
        match take_head(&mut buffer) {
            Ok(Some(head)) => {
                buffer.extend_from_slice(&data[offset..]);
                let framing = format!("{:?}", head.framing());
                return Some(Ok((head.status(), framing, head.reusable(), buffer.to_vec())));
            }
            Ok(None) => assert!(
                buffer.len() <= MAX_HEAD_SIZE,
                "{} bytes of head buffered without an error (limit {MAX_HEAD_SIZE})",
                buffer.len()
            ),
            Err(e) => return Some(Err(e.to_string())),
        }
    }
    None
}

/// What decoding a chunked body gave: the body bytes, whether it ended, the bytes left after
/// its end; or the error's message with the body decoded before it.
pub type ChunkedOutcome = (Vec<u8>, Result<(bool, Vec<u8>), String>);

/// Decodes a chunked body from `data`, delivered in pieces of the given (cycled) lengths.
pub fn decode_chunked(data: &[u8], pieces: &[usize]) -> ChunkedOutcome {
    let mut decoder = ChunkedDecoder::new();
    let mut buffer = BytesMut::new();
    let mut body = Vec::new();
    let mut offset = 0;
    for &len in pieces.iter().cycle() {
        let end = (offset + len.max(1)).min(data.len());
        buffer.extend_from_slice(&data[offset..end]);
        offset = end;
        loop {
            match decoder.decode(&mut buffer) {
                Ok(Decoded::Data(bytes)) => body.extend_from_slice(&bytes),
                Ok(Decoded::NeedMore) => break,
                Ok(Decoded::End) => {
                    buffer.extend_from_slice(&data[offset..]);
                    return (body, Ok((true, buffer.to_vec())));
                }
                Err(e) => return (body, Err(e.to_string())),
            }
        }
        if offset >= data.len() {
            return (body, Ok((false, buffer.to_vec())));
        }
    }
    (body, Ok((false, buffer.to_vec())))
}
