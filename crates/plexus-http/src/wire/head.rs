//! Response heads: the status line and headers (parsed by `httparse`), and what they say about
//! the body's framing (RFC 9112 §6.3) and about reusing the connection.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

/// The most headers a response may have: 100.
pub(crate) const MAX_HEADERS: usize = 100;

/// The largest response head (status line and headers): 64 KiB.
pub(crate) const MAX_HEAD_SIZE: usize = 64 * 1024;

/// How a response's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (1xx, 204, 304).
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// A parsed response head. The header names and values stay in the received bytes.
#[derive(Debug)]
pub(crate) struct Head {
    bytes: Bytes,
    status: u16,
    headers: Vec<(Range<usize>, Range<usize>)>,
    framing: Framing,
    /// Whether the connection may carry another request once the body is read.
    reusable: bool,
    /// The server's `Keep-Alive: timeout=N`, if it sent one.
    keep_alive: Option<Duration>,
}

impl Head {
    pub(crate) fn status(&self) -> u16 {
        self.status
    }

    pub(crate) fn framing(&self) -> Framing {
        self.framing
    }

    pub(crate) fn reusable(&self) -> bool {
        self.reusable
    }

    pub(crate) fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// The first value of header `name` (case-insensitive).
    pub(crate) fn get(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| self.bytes[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &self.bytes[v.clone()])
    }

    /// Every header, in order (names are tokens, so they are text).
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.headers.iter().map(|(n, v)| {
            let name = std::str::from_utf8(&self.bytes[n.clone()]).unwrap_or_default();
            (name, &self.bytes[v.clone()])
        })
    }

    /// The first value of header `name` as text, if it is visible ASCII.
    pub(crate) fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The media type of `Content-Type` without its parameters, trimmed (empty without one).
    pub(crate) fn mime(&self) -> &str {
        let content_type = self.get_str("content-type").unwrap_or_default();
        content_type.split(';').next().unwrap_or_default().trim()
    }
}

/// Why a response head is unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// Not HTTP/1.x (httparse's reason).
    Malformed(String),
    TooLarge,
    TooManyHeaders,
    /// A `Content-Length` that is not one number.
    BadLength(String),
    /// `101 Switching Protocols`, which was never asked for.
    Upgrade,
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::Malformed(reason) => write!(f, "the server's response is not valid HTTP/1.1: {reason}"),
            HeadError::TooLarge => write!(f, "the server's response head is larger than {MAX_HEAD_SIZE} bytes"),
            HeadError::TooManyHeaders => write!(f, "the server's response has more than {MAX_HEADERS} headers"),
            HeadError::BadLength(value) => {
                write!(f, "the server's response has an invalid Content-Length: {value:?}")
            }
            HeadError::Upgrade => write!(f, "the server switched protocols (HTTP 101) without being asked to"),
        }
    }
}

/// Parses the response head at the start of `buffer`. `Ok(None)`: it is not complete yet. A head
/// is split off `buffer`; an interim (1xx) response is skipped, and the next head parsed.
pub(crate) fn take_head(buffer: &mut BytesMut) -> Result<Option<Head>, HeadError> {
    loop {
        let Some(parsed) = parse(buffer)? else {
            return Ok(None);
        };
        let bytes = buffer.split_to(parsed.length).freeze();
        if (100..200).contains(&parsed.status) {
            if parsed.status == 101 {
                return Err(HeadError::Upgrade);
            }
            continue;
        }
        return Ok(Some(Head {
            bytes,
            status: parsed.status,
            headers: parsed.headers,
            framing: parsed.framing,
            reusable: parsed.reusable,
            keep_alive: parsed.keep_alive,
        }));
    }
}

struct Parsed {
    length: usize,
    status: u16,
    headers: Vec<(Range<usize>, Range<usize>)>,
    framing: Framing,
    reusable: bool,
    keep_alive: Option<Duration>,
}

fn parse(buffer: &[u8]) -> Result<Option<Parsed>, HeadError> {
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let length =
        match httparse::ParserConfig::default().parse_response_with_uninit_headers(&mut response, buffer, &mut slots) {
            Ok(httparse::Status::Complete(length)) if length > MAX_HEAD_SIZE => return Err(HeadError::TooLarge),
            Ok(httparse::Status::Complete(length)) => length,
            Ok(httparse::Status::Partial) if buffer.len() > MAX_HEAD_SIZE => return Err(HeadError::TooLarge),
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
            Err(e) => return Err(HeadError::Malformed(e.to_string())),
        };
    // A complete parse always has both.
    let status = response.code.unwrap_or_default();
    let http11 = response.version == Some(1);
    let base = buffer.as_ptr() as usize;
    let range = |part: &[u8]| {
        let start = part.as_ptr() as usize - base;
        start..start + part.len()
    };
    let headers: Vec<_> = response
        .headers
        .iter()
        .map(|h| (range(h.name.as_bytes()), range(h.value)))
        .collect();
    let values = |name: &'static str| {
        response
            .headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    // No collections: a response head costs no allocation but its header list.
    let last_coding = values("transfer-encoding").flat_map(tokens).last();
    let has_length = values("content-length").next().is_some();
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if let Some(last) = last_coding {
        if last.eq_ignore_ascii_case(b"chunked") {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else if has_length {
        Framing::Length(content_length(&values("content-length"))?)
    } else {
        Framing::UntilClose
    };
    let says = |token: &[u8]| {
        values("connection")
            .flat_map(tokens)
            .any(|t| t.eq_ignore_ascii_case(token))
    };
    // Both framings at once is a sign of request smuggling: use the body, not the connection.
    let ambiguous = last_coding.is_some() && has_length;
    let persistent = if http11 { !says(b"close") } else { says(b"keep-alive") };
    let reusable = persistent && !ambiguous && framing != Framing::UntilClose;
    let keep_alive = values("keep-alive").find_map(keep_alive_timeout);
    Ok(Some(Parsed {
        length,
        status,
        headers,
        framing,
        reusable,
        keep_alive,
    }))
}

/// The comma-separated, trimmed, non-empty tokens of a header value.
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// One length from every `Content-Length` value (a list of equal numbers counts as one).
fn content_length<'a>(values: &(impl Iterator<Item = &'a [u8]> + Clone)) -> Result<u64, HeadError> {
    let bad = || {
        let shown: Vec<_> = values.clone().map(String::from_utf8_lossy).collect();
        HeadError::BadLength(shown.join(", "))
    };
    let mut length = None;
    for value in values.clone() {
        for part in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
                return Err(bad());
            }
            let parsed: u64 = std::str::from_utf8(part)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(bad)?;
            if length.is_some_and(|l| l != parsed) {
                return Err(bad());
            }
            length = Some(parsed);
        }
    }
    length.ok_or_else(bad)
}

/// `timeout=N` of a `Keep-Alive` header value.
fn keep_alive_timeout(value: &[u8]) -> Option<Duration> {
    tokens(value).find_map(|param| {
        let (name, seconds) = std::str::from_utf8(param).ok()?.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("timeout") {
            return None;
        }
        seconds.trim().parse::<u64>().ok().map(Duration::from_secs)
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn head(text: &str) -> Result<Option<Head>, HeadError> {
        take_head(&mut BytesMut::from(text))
    }

    #[test]
    fn framing_and_reuse_follow_rfc_9112() {
        let cases: [(&str, Framing, bool); 9] = [
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n",
                Framing::Length(12),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 3, 3\r\n\r\n",
                Framing::Length(3),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                Framing::Chunked,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                Framing::UntilClose,
                false,
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", Framing::UntilClose, false),
            (
                "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
                Framing::Empty,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: keep-alive, Close\r\n\r\n",
                Framing::Length(1),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
                Framing::Length(1),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\n",
                Framing::Length(1),
                true,
            ),
        ];
        for (text, framing, reusable) in cases {
            let parsed = head(text).unwrap().unwrap();
            assert_eq!((parsed.framing(), parsed.reusable()), (framing, reusable), "{text:?}");
        }
        let smuggled = head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((smuggled.framing(), smuggled.reusable()), (Framing::Chunked, false));
    }

    #[test]
    fn headers_are_found_by_name_in_any_case() {
        let text = "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer a\r\nContent-Type: Application/JSON; charset=utf-8\r\nwww-authenticate: Basic\r\nKeep-Alive: max=5, timeout=7\r\nContent-Length: 0\r\n\r\nrest";
        let mut buffer = BytesMut::from(text);
        let parsed = take_head(&mut buffer).unwrap().unwrap();
        assert_eq!(&buffer[..], b"rest");
        assert_eq!(parsed.status(), 401);
        assert_eq!(
            parsed
                .pairs()
                .filter(|(n, _)| n.eq_ignore_ascii_case("www-authenticate"))
                .map(|(_, v)| v)
                .collect::<Vec<_>>(),
            [&b"Bearer a"[..], b"Basic"]
        );
        assert_eq!(parsed.mime(), "Application/JSON");
        assert_eq!(parsed.get("x-missing"), None);
        assert_eq!(parsed.keep_alive(), Some(Duration::from_secs(7)));
    }

    #[test]
    fn interim_responses_are_skipped_and_partial_heads_wait() {
        let mut buffer =
            BytesMut::from("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 2");
        assert!(take_head(&mut buffer).unwrap().is_none());
        buffer.extend_from_slice(b"02 Accepted\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(take_head(&mut buffer).unwrap().unwrap().status(), 202);
        assert!(buffer.is_empty());
        assert_eq!(
            head("HTTP/1.1 101 Switching Protocols\r\n\r\n").unwrap_err(),
            HeadError::Upgrade
        );
    }

    #[test]
    fn bad_heads_say_why() {
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n")
                .unwrap_err()
                .to_string(),
            "the server's response has an invalid Content-Length: \"3, 4\""
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n").unwrap_err(),
            HeadError::BadLength("-1".into())
        );
        assert_eq!(
            head("SSH-2.0-OpenSSH_9.6\r\n\r\n").unwrap_err().to_string(),
            "the server's response is not valid HTTP/1.1: invalid HTTP version"
        );
        let many = format!("HTTP/1.1 200 OK\r\n{}\r\n", "X-A: 1\r\n".repeat(MAX_HEADERS + 1));
        assert_eq!(head(&many).unwrap_err(), HeadError::TooManyHeaders);
        let endless = format!("HTTP/1.1 200 OK\r\nX-Big: {}", "a".repeat(MAX_HEAD_SIZE));
        assert_eq!(head(&endless).unwrap_err(), HeadError::TooLarge);
    }

    proptest! {
        /// Whatever the server sends, parsing ends with a head, a wait or an error, never a panic.
        #[test]
        fn any_bytes_parse_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut buffer = BytesMut::from(&b"HTTP/1.1 200 OK\r\n"[..]);
            buffer.extend_from_slice(&bytes);
            let _ = take_head(&mut buffer);
            let _ = take_head(&mut BytesMut::from(&bytes[..]));
        }
    }
}
