//! Checks shared by the fuzz targets in `fuzz_targets/`.
#![forbid(unsafe_code)]

use bytes::BytesMut;
use plexus_jsonrpc::{LineCodec, Message};
use tokio_util::codec::Decoder;

/// Encodes `message` with `encode_line` and asserts that the result is exactly one line that the
/// default `LineCodec` decodes, whole, to a message with the same id and method that encodes to the
/// same bytes again. Returns the encoded line.
///
/// # Panics
///
/// When any of those properties does not hold: that is the bug the fuzzer reports.
pub fn assert_round_trips(message: &Message) -> Vec<u8> {
    let mut line = Vec::new();
    message.encode_line(&mut line);
    let shown = String::from_utf8_lossy(&line).into_owned();
    let Some((b'\n', body)) = line.split_last() else {
        panic!("an encoded message does not end with a newline: {shown:?}")
    };
    assert!(
        !body.contains(&b'\n'),
        "an encoded message is more than one line: {shown:?}"
    );

    let mut buf = BytesMut::from(&line[..]);
    let again = match LineCodec::new().decode(&mut buf) {
        Ok(Some(Ok(again))) => again,
        other => panic!("the re-encoded line {shown:?} did not decode: {other:?}"),
    };
    assert!(buf.is_empty(), "the re-encoded line {shown:?} was not consumed whole");
    assert_eq!(again.id(), message.id(), "the id changed through {shown:?}");
    assert_eq!(again.method(), message.method(), "the method changed through {shown:?}");

    let mut line_again = Vec::new();
    again.encode_line(&mut line_again);
    assert_eq!(
        String::from_utf8_lossy(&line_again),
        shown,
        "encoding is not stable across a decode"
    );
    line
}
