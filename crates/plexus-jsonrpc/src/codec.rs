//! Newline-delimited framing (MCP's stdio transport) with a size cap.

use std::io;

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use crate::{DecodeError, IdScanner, Message, ReplyScan};

/// The default largest message accepted: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// Why one frame (line) could not be delivered. The stream continues with the next line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A line longer than the limit; it was skipped up to its newline without being buffered,
    /// and scanned on the way for its `id` (see [`IdScanner`]).
    #[error("a message of {size} bytes is larger than the {limit}-byte limit")]
    TooLarge {
        /// Its length in bytes (without the line ending); for a line cut short by the end of the
        /// stream, the bytes that arrived.
        size: usize,
        /// The limit in force.
        limit: usize,
        /// Whether it was a reply, and to which request (read as the line went by).
        reply: ReplyScan,
    },
    /// The line is not a valid JSON-RPC 2.0 message.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The line is not a valid JSON-RPC 2.0 message, and it is (or may be) a reply: the codec
    /// yields this instead of [`FrameError::Decode`] when a scan of the line finds it is a reply
    /// (with its id) or cannot tell.
    #[error("{}", crate::error_chain(.error))]
    InvalidReply {
        /// What is wrong with it.
        error: DecodeError,
        /// What the scan of the line found ([`ReplyScan::Reply`] or [`ReplyScan::Unreadable`]).
        reply: ReplyScan,
    },
}

/// The newline-delimited JSON-RPC codec.
///
/// Decoding: `\r\n` is tolerated, blank lines are skipped, a line over the limit is dropped as
/// its bytes arrive (so the buffer never grows much past the limit) and reported once, when it
/// ends, with its size and, when it could be read on the way, its id. Every bad line yields an
/// `Ok(Some(Err(_)))` item and decoding goes on with the next line; only I/O errors end the stream.
///
/// ```
/// use bytes::BytesMut;
/// use tokio_util::codec::Decoder;
/// use plexus_jsonrpc::{LineCodec, Message};
///
/// let mut codec = LineCodec::new();
/// let mut buf = BytesMut::from(&b"\r\n{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\r\nnot json\n"[..]);
/// assert!(matches!(codec.decode(&mut buf).unwrap(), Some(Ok(Message::Notification(_)))));
/// assert!(matches!(codec.decode(&mut buf).unwrap(), Some(Err(_))));
/// assert!(codec.decode(&mut buf).unwrap().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct LineCodec {
    max_size: usize,
    /// Bytes of the buffer already searched for a newline.
    scanned: usize,
    /// Dropping the rest of an oversized line: its id scan and the bytes dropped so far.
    discarding: Option<Discarding>,
}

/// An oversized line being dropped.
#[derive(Debug, Clone)]
struct Discarding {
    scanner: IdScanner,
    dropped: usize,
    /// The last byte dropped was `\r` (not counted if the line ends right after it).
    carriage_return: bool,
}

impl Discarding {
    fn drop_bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.scanner.feed(bytes);
        self.dropped += bytes.len();
        self.carriage_return = bytes.last() == Some(&b'\r');
    }

    fn report(mut self, limit: usize) -> FrameError {
        FrameError::TooLarge {
            size: self.dropped - usize::from(self.carriage_return),
            limit,
            reply: self.scanner.finish_scan(),
        }
    }
}

impl Default for LineCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl LineCodec {
    /// A codec with the default 16 MiB limit.
    pub fn new() -> Self {
        Self::with_max_size(DEFAULT_MAX_MESSAGE_SIZE)
    }

    /// A codec accepting messages of at most `max_size` bytes (not counting the line ending).
    pub fn with_max_size(max_size: usize) -> Self {
        LineCodec {
            max_size: max_size.max(1),
            scanned: 0,
            discarding: None,
        }
    }

    /// The limit in force.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// Decodes the next complete line of `buf`, if any.
    pub fn decode_line(&mut self, buf: &mut BytesMut) -> Option<Result<Message, FrameError>> {
        loop {
            let Some(offset) = memchr::memchr(b'\n', &buf[self.scanned..]) else {
                if let Some(discarding) = &mut self.discarding {
                    discarding.drop_bytes(buf);
                    buf.clear();
                    self.scanned = 0;
                    return None;
                }
                // +1: a line of exactly `max_size` bytes may be waiting for its `\r\n`.
                if buf.len() > self.max_size + 1 {
                    let mut discarding = Discarding {
                        scanner: IdScanner::new(),
                        dropped: 0,
                        carriage_return: false,
                    };
                    discarding.drop_bytes(buf);
                    self.discarding = Some(discarding);
                    buf.clear();
                    self.scanned = 0;
                    return None;
                }
                self.scanned = buf.len();
                return None;
            };
            let end = self.scanned + offset;
            let line = buf.split_to(end + 1);
            self.scanned = 0;
            if let Some(mut discarding) = self.discarding.take() {
                discarding.drop_bytes(&line[..end]);
                return Some(Err(discarding.report(self.max_size)));
            }
            if let Some(result) = self.decode_complete(&line[..end]) {
                return Some(result);
            }
        }
    }

    /// Decodes one line without its `\n`; `None` for a blank line.
    fn decode_complete(&self, line: &[u8]) -> Option<Result<Message, FrameError>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        if line.len() > self.max_size {
            return Some(Err(FrameError::TooLarge {
                size: line.len(),
                limit: self.max_size,
                reply: IdScanner::reply(line),
            }));
        }
        Some(Message::from_slice(line).map_err(|error| match IdScanner::reply(line) {
            ReplyScan::NotAReply => FrameError::Decode(error),
            reply => FrameError::InvalidReply { error, reply },
        }))
    }
}

impl Decoder for LineCodec {
    type Item = Result<Message, FrameError>;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        Ok(self.decode_line(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        if let Some(item) = self.decode_line(buf) {
            return Ok(Some(item));
        }
        // The peer ended without a final newline: the rest is one last line.
        let rest = buf.split();
        self.scanned = 0;
        if let Some(mut discarding) = self.discarding.take() {
            discarding.drop_bytes(&rest);
            return Ok(Some(Err(discarding.report(self.max_size))));
        }
        Ok(self.decode_complete(&rest))
    }
}

impl Encoder<&Message> for LineCodec {
    type Error = io::Error;

    fn encode(&mut self, item: &Message, dst: &mut BytesMut) -> io::Result<()> {
        let mut line = Vec::with_capacity(128);
        item.encode_line(&mut line);
        dst.extend_from_slice(&line);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestId;
    use proptest::prelude::*;

    fn decode_all(codec: &mut LineCodec, input: &[u8]) -> Vec<Result<Message, FrameError>> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(item) = codec.decode(&mut buf).unwrap() {
            out.push(item);
        }
        while let Some(item) = codec.decode_eof(&mut buf).unwrap() {
            out.push(item);
        }
        out
    }

    #[test]
    fn every_bad_line_has_its_own_error_and_the_stream_goes_on() {
        let input = b"\xff\xfe\n{nope\n[1,2]\n42\n{\"jsonrpc\":\"1.0\",\"method\":\"x\"}\n{\"jsonrpc\":\"2.0\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
        let items = decode_all(&mut LineCodec::new(), input);
        assert_eq!(items.len(), 7);
        assert_eq!(
            items[0].as_ref().unwrap_err(),
            &FrameError::Decode(DecodeError::InvalidUtf8 { offset: 0 })
        );
        // An object that does not parse may have been a reply: the session is told it could not
        // read its id.
        assert!(matches!(
            items[1],
            Err(FrameError::InvalidReply {
                error: DecodeError::InvalidJson { .. },
                reply: ReplyScan::Unreadable
            })
        ));
        assert_eq!(items[2].as_ref().unwrap_err(), &FrameError::Decode(DecodeError::Batch));
        assert_eq!(
            items[3].as_ref().unwrap_err(),
            &FrameError::Decode(DecodeError::NotAnObject)
        );
        assert_eq!(
            items[4].as_ref().unwrap_err(),
            &FrameError::Decode(DecodeError::WrongVersion {
                found: "\"1.0\"".into()
            })
        );
        assert!(matches!(
            items[5],
            Err(FrameError::InvalidReply {
                error: DecodeError::Invalid { .. },
                reply: ReplyScan::Unreadable
            })
        ));
        assert!(matches!(items[6], Ok(Message::Response(_))));
    }

    #[test]
    fn an_invalid_reply_says_which_request_it_answers() {
        let items = decode_all(
            &mut LineCodec::new(),
            b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}\n",
        );
        assert!(matches!(
            &items[0],
            Err(FrameError::InvalidReply {
                reply: ReplyScan::Reply(RequestId::Number(4)),
                error: DecodeError::Invalid { .. }
            })
        ));
    }

    #[test]
    fn oversize_line_is_reported_once_when_it_ends_and_skipped_without_buffering() {
        let mut codec = LineCodec::with_max_size(64);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(br#"{"jsonrpc":"2.0","result":{"text":""#);
        buf.extend_from_slice(&[b'x'; 100]);
        assert!(codec.decode_line(&mut buf).is_none());
        assert!(buf.is_empty());
        buf.extend_from_slice(&[b'y'; 100]);
        assert!(codec.decode_line(&mut buf).is_none());
        assert!(buf.is_empty(), "discarded bytes are not kept");
        buf.extend_from_slice(b"\"},\"id\":7}\r\n{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}\n");
        let error = codec.decode_line(&mut buf).unwrap().unwrap_err();
        assert_eq!(
            error,
            FrameError::TooLarge {
                size: 35 + 200 + 10,
                limit: 64,
                reply: ReplyScan::Reply(RequestId::Number(7))
            }
        );
        assert_eq!(
            error.to_string(),
            "a message of 245 bytes is larger than the 64-byte limit"
        );
        let next = codec.decode_line(&mut buf).unwrap().unwrap();
        assert_eq!(next.method(), Some("ok"));
    }

    #[test]
    fn an_oversize_line_cut_short_by_the_end_is_reported_at_eof() {
        let mut input = br#"{"id":"a","result":""#.to_vec();
        input.extend_from_slice(&[b'x'; 100]);
        let items = decode_all(&mut LineCodec::with_max_size(64), &input);
        assert_eq!(items.len(), 1);
        assert_eq!(
            items[0].as_ref().unwrap_err(),
            &FrameError::TooLarge {
                size: input.len(),
                limit: 64,
                reply: ReplyScan::Reply(RequestId::from("a"))
            }
        );
    }

    #[test]
    fn line_at_exactly_the_limit_is_accepted_with_crlf() {
        let msg = br#"{"jsonrpc":"2.0","method":"m"}"#;
        let mut codec = LineCodec::with_max_size(msg.len());
        let mut input = msg.to_vec();
        input.extend_from_slice(b"\r\n");
        let items = decode_all(&mut codec, &input);
        assert_eq!(items.len(), 1);
        assert!(items[0].is_ok());
        let mut codec = LineCodec::with_max_size(msg.len() - 1);
        let items = decode_all(&mut codec, &input);
        assert_eq!(
            items[0].as_ref().unwrap_err(),
            &FrameError::TooLarge {
                size: msg.len(),
                limit: msg.len() - 1,
                reply: ReplyScan::NotAReply
            }
        );
    }

    #[test]
    fn final_line_without_newline_is_decoded_at_eof() {
        let items = decode_all(&mut LineCodec::new(), br#"{"jsonrpc":"2.0","method":"last"}"#);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].as_ref().unwrap().method(), Some("last"));
    }

    proptest! {
        /// Any split of a stream of valid lines decodes to the same messages in order.
        #[test]
        fn chunking_never_changes_the_result(methods in proptest::collection::vec("[a-z/]{1,12}", 1..20), cuts in proptest::collection::vec(0usize..4096, 0..8)) {
            let mut wire = Vec::new();
            for m in &methods {
                Message::Notification(crate::Notification { method: m.clone().into(), params: None }).encode_line(&mut wire);
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (wire.len() + 1)).collect();
            cuts.sort_unstable();
            let mut codec = LineCodec::new();
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            let mut last = 0;
            for cut in cuts.into_iter().chain([wire.len()]) {
                buf.extend_from_slice(&wire[last..cut]);
                last = cut;
                while let Some(item) = codec.decode(&mut buf).unwrap() {
                    got.push(item.unwrap().method().unwrap().to_owned());
                }
            }
            prop_assert_eq!(got, methods);
        }

        /// Arbitrary bytes never panic and never leave more than the limit buffered.
        #[test]
        fn garbage_never_panics(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..20)) {
            let mut codec = LineCodec::with_max_size(128);
            let mut buf = BytesMut::new();
            for chunk in chunks {
                buf.extend_from_slice(&chunk);
                while codec.decode(&mut buf).unwrap().is_some() {}
                prop_assert!(buf.len() <= 128 + 1);
            }
        }
    }
}
