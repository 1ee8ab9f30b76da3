//! The `chunked` transfer coding of response bodies (RFC 9112 §7.1), decoded in place: chunk data
//! is split off the connection's read buffer without a copy. Size lines and trailers are bounded.

use bytes::{Buf, Bytes, BytesMut};

/// The longest chunk-size line (size, extensions, CRLF): 4 KiB.
const MAX_LINE: usize = 4096;

/// The most bytes of trailer fields after the last chunk: 16 KiB.
const MAX_TRAILERS: usize = 16 * 1024;

/// What one step of decoding gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// Body data.
    Data(Bytes),
    /// The buffer holds no complete step: read more.
    NeedMore,
    /// The body ended (after the last chunk and the trailers).
    End,
}

/// Why a chunked body cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChunkedError(pub(crate) &'static str);

impl std::fmt::Display for ChunkedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the server's chunked response body is invalid: {}", self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes to go.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one; bytes seen so far.
    Trailers(usize),
    Done,
}

/// The decoder's position in a chunked body.
#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
}

impl ChunkedDecoder {
    pub(crate) fn new() -> Self {
        ChunkedDecoder { state: State::Size }
    }

    /// Decodes from the start of `buffer`, consuming what it decoded.
    pub(crate) fn decode(&mut self, buffer: &mut BytesMut) -> Result<Decoded, ChunkedError> {
        loop {
            match self.state {
                State::Done => return Ok(Decoded::End),
                State::Size => {
                    let Some(line) = take_line(buffer)? else {
                        return Ok(Decoded::NeedMore);
                    };
                    let size = chunk_size(&line)?;
                    self.state = if size == 0 {
                        State::Trailers(0)
                    } else {
                        State::Data(size)
                    };
                }
                State::Data(remaining) => {
                    if buffer.is_empty() {
                        return Ok(Decoded::NeedMore);
                    }
                    let take = usize::try_from(remaining).unwrap_or(usize::MAX).min(buffer.len());
                    let left = remaining - take as u64;
                    self.state = if left == 0 { State::DataEnd } else { State::Data(left) };
                    return Ok(Decoded::Data(buffer.split_to(take).freeze()));
                }
                State::DataEnd => {
                    if buffer.len() < 2 {
                        return Ok(Decoded::NeedMore);
                    }
                    if &buffer[..2] != b"\r\n" {
                        return Err(ChunkedError("a chunk's data is not followed by CRLF"));
                    }
                    buffer.advance(2);
                    self.state = State::Size;
                }
                State::Trailers(seen) => {
                    let Some(line) = take_line(buffer)? else {
                        if seen + buffer.len() > MAX_TRAILERS {
                            return Err(ChunkedError("the trailer fields are larger than 16 KiB"));
                        }
                        return Ok(Decoded::NeedMore);
                    };
                    let seen = seen + line.len() + 2;
                    if seen > MAX_TRAILERS {
                        return Err(ChunkedError("the trailer fields are larger than 16 KiB"));
                    }
                    self.state = if line.is_empty() {
                        State::Done
                    } else {
                        State::Trailers(seen)
                    };
                }
            }
        }
    }
}

/// Takes one CRLF-terminated line off `buffer` (without the CRLF), if a whole one is there.
fn take_line(buffer: &mut BytesMut) -> Result<Option<Bytes>, ChunkedError> {
    let window = &buffer[..buffer.len().min(MAX_LINE)];
    let Some(newline) = window.iter().position(|&b| b == b'\n') else {
        if buffer.len() >= MAX_LINE {
            return Err(ChunkedError("a chunk-size or trailer line is longer than 4 KiB"));
        }
        return Ok(None);
    };
    if newline == 0 || buffer[newline - 1] != b'\r' {
        return Err(ChunkedError("a line does not end with CRLF"));
    }
    let line = buffer.split_to(newline + 1).freeze();
    Ok(Some(line.slice(..newline - 1)))
}

/// The size of a chunk-size line (hexadecimal, then optional whitespace and `;` extensions).
fn chunk_size(line: &[u8]) -> Result<u64, ChunkedError> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(ChunkedError("a chunk size is not a hexadecimal number"));
    }
    if digits > 15 {
        return Err(ChunkedError("a chunk size is too large"));
    }
    let rest = line[digits..].trim_ascii_start();
    if !rest.is_empty() && rest[0] != b';' {
        return Err(ChunkedError("a chunk size is not a hexadecimal number"));
    }
    let size = line[..digits].iter().fold(0u64, |size, &digit| {
        // `digits` are hexadecimal digits, at most 15 of them: no overflow.
        size * 16 + u64::from(char::from(digit).to_digit(16).unwrap_or_default())
    });
    Ok(size)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Feeds `input` in pieces of `sizes` and collects the body.
    fn decode_in_pieces(input: &[u8], sizes: &[usize]) -> Result<(Vec<u8>, bool, usize), ChunkedError> {
        let mut decoder = ChunkedDecoder::new();
        let mut buffer = BytesMut::new();
        let mut body = Vec::new();
        let mut fed = 0;
        let mut pieces = sizes.iter().copied().chain(std::iter::repeat(usize::MAX));
        loop {
            match decoder.decode(&mut buffer)? {
                Decoded::Data(data) => body.extend_from_slice(&data),
                Decoded::End => return Ok((body, true, buffer.len())),
                Decoded::NeedMore if fed == input.len() => return Ok((body, false, buffer.len())),
                Decoded::NeedMore => {
                    let take = pieces.next().unwrap_or(1).clamp(1, input.len() - fed);
                    buffer.extend_from_slice(&input[fed..fed + take]);
                    fed += take;
                }
            }
        }
    }

    #[test]
    fn chunks_extensions_and_trailers() {
        let input = b"5;name=value\r\nhello\r\n6 \r\n world\r\n0\r\nExpires: never\r\n\r\nNEXT";
        let (body, ended, left) = decode_in_pieces(input, &[1]).unwrap();
        assert_eq!(body, b"hello world");
        assert!(ended);
        assert_eq!(left, 4, "what follows the body stays in the buffer");
    }

    #[test]
    fn bad_framing_is_an_error() {
        let cases: [(&[u8], &str); 6] = [
            (b"zz\r\n", "a chunk size is not a hexadecimal number"),
            (b"5 x\r\nhello\r\n", "a chunk size is not a hexadecimal number"),
            (b"5\nhello\r\n", "a line does not end with CRLF"),
            (b"5\r\nhelloXX", "a chunk's data is not followed by CRLF"),
            (b"1000000000000000\r\n", "a chunk size is too large"),
            (b"0\r\nX-Trailer: 1\n\r\n", "a line does not end with CRLF"),
        ];
        for (input, why) in cases {
            assert_eq!(
                decode_in_pieces(input, &[]).unwrap_err(),
                ChunkedError(why),
                "{input:?}"
            );
        }
        let long_line = [b"5;".as_slice(), &[b'x'; MAX_LINE]].concat();
        assert_eq!(
            decode_in_pieces(&long_line, &[]).unwrap_err().to_string(),
            "the server's chunked response body is invalid: a chunk-size or trailer line is longer than 4 KiB"
        );
        let trailers = [b"0\r\n".as_slice(), &b"X-T: 1\r\n".repeat(MAX_TRAILERS / 8 + 1)].concat();
        assert_eq!(
            decode_in_pieces(&trailers, &[]).unwrap_err(),
            ChunkedError("the trailer fields are larger than 16 KiB")
        );
    }

    proptest! {
        /// Any body, cut into any chunks and delivered in any pieces, decodes to itself.
        #[test]
        fn a_body_survives_any_chunking_and_any_delivery(
            body in proptest::collection::vec(any::<u8>(), 0..2000),
            cuts in proptest::collection::vec(1usize..300, 0..20),
            pieces in proptest::collection::vec(1usize..64, 0..64),
        ) {
            let mut encoded = Vec::new();
            let mut rest = &body[..];
            let mut cuts = cuts.into_iter();
            while !rest.is_empty() {
                let take = cuts.next().unwrap_or(rest.len()).min(rest.len());
                encoded.extend_from_slice(format!("{take:X}\r\n").as_bytes());
                encoded.extend_from_slice(&rest[..take]);
                encoded.extend_from_slice(b"\r\n");
                rest = &rest[take..];
            }
            encoded.extend_from_slice(b"0\r\n\r\n");
            let (decoded, ended, left) = decode_in_pieces(&encoded, &pieces).unwrap();
            prop_assert_eq!(decoded, body);
            prop_assert!(ended);
            prop_assert_eq!(left, 0);
        }

        /// Garbage never panics; it decodes, waits or fails.
        #[test]
        fn garbage_never_panics(input in proptest::collection::vec(any::<u8>(), 0..600), pieces in proptest::collection::vec(1usize..32, 0..32)) {
            let _ = decode_in_pieces(&input, &pieces);
        }
    }
}
