//! Where a remote transport may send what it was configured with: the same-origin rule (the
//! configured headers and credentials go only to the configured server's origin), and the legacy
//! SSE transport's `endpoint` event resolved under it.

use url::Url;

use crate::redact::redact_url;

/// The most characters of a server's text an error quotes.
pub const MAX_QUOTED: usize = 200;

/// `text`, cut to [`MAX_QUOTED`] characters (with `…` when cut).
fn quoted(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The origin (scheme, host and port) of a URL, as text.
pub fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Whether two URLs share an origin: only then may a request to one carry the headers and
/// credentials configured for the other.
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}

/// Resolves the data of an `endpoint` event against the event stream's URL (relative endpoints
/// are the norm) and refuses one on another origin: the configured headers and credentials must
/// not go there. The error says why, quoting at most [`MAX_QUOTED`] characters of the event or
/// of the URL it resolved to (the server chooses both).
///
/// ```
/// use plexus_net::endpoint::resolve_endpoint;
/// use url::Url;
///
/// let stream = Url::parse("http://127.0.0.1:9/sse").unwrap();
/// let endpoint = resolve_endpoint(&stream, b"/messages?sessionId=7").unwrap();
/// assert_eq!(endpoint.as_str(), "http://127.0.0.1:9/messages?sessionId=7");
/// assert!(resolve_endpoint(&stream, b"http://elsewhere.example/messages").is_err());
/// ```
pub fn resolve_endpoint(stream_url: &Url, data: &[u8]) -> Result<Url, EndpointError> {
    let text = String::from_utf8_lossy(data);
    let text = text.trim();
    if text.is_empty() {
        return Err(EndpointError::Empty);
    }
    let endpoint = stream_url.join(text).map_err(|source| EndpointError::NotAUrl {
        // Escaped (no control characters reach a terminal), and cut again: escaping lengthens it.
        event: quoted(&format!("{:?}", quoted(text))),
        source,
    })?;
    if !same_origin(&endpoint, stream_url) {
        return Err(EndpointError::OtherOrigin {
            endpoint: quoted(&redact_url(endpoint.as_str())),
            origin: quoted(&origin(&endpoint)),
            stream_origin: origin(stream_url),
        });
    }
    Ok(endpoint)
}

/// Why the data of an `endpoint` event names no endpoint a transport may use. The server's text
/// in it is cut to [`MAX_QUOTED`] characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// The event holds nothing.
    #[error("the server's endpoint event is empty")]
    Empty,
    /// The event is not a URL, relative or absolute.
    #[error("the server's endpoint event {event} is not a URL")]
    NotAUrl {
        /// The event's data, quoted and escaped.
        event: String,
        /// Why it does not parse.
        #[source]
        source: url::ParseError,
    },
    /// The endpoint is on another origin than the event stream.
    #[error(
        "the server's endpoint {endpoint} is on {origin}, another origin than its event stream ({stream_origin}); \
         no message is sent there"
    )]
    OtherOrigin {
        /// The endpoint (redacted and quoted).
        endpoint: String,
        /// Its origin.
        origin: String,
        /// The event stream's origin.
        stream_origin: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let sse = Url::parse("http://127.0.0.1:9/sse").unwrap();
        assert!(same_origin(&sse, &sse.join("/messages?sessionId=1").unwrap()));
        assert!(!same_origin(&sse, &Url::parse("http://127.0.0.1:10/messages").unwrap()));
        assert!(!same_origin(&sse, &Url::parse("https://127.0.0.1:9/messages").unwrap()));
        assert!(!same_origin(&sse, &Url::parse("http://localhost:9/messages").unwrap()));
        assert_eq!(origin(&sse), "http://127.0.0.1:9");
    }

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        let sse = Url::parse("http://127.0.0.1:9/mcp/sse?key=1").unwrap();
        let cases = [
            ("/messages?sessionId=a", "http://127.0.0.1:9/messages?sessionId=a"),
            (
                "messages/?session_id=b",
                "http://127.0.0.1:9/mcp/messages/?session_id=b",
            ),
            (" http://127.0.0.1:9/x \n", "http://127.0.0.1:9/x"),
        ];
        for (data, expected) in cases {
            assert_eq!(resolve_endpoint(&sse, data.as_bytes()).unwrap().as_str(), expected);
        }
    }

    #[test]
    fn endpoints_elsewhere_are_refused() {
        let sse = Url::parse("http://127.0.0.1:9/sse").unwrap();
        assert_eq!(
            resolve_endpoint(&sse, b"https://evil.example/messages?sessionId=1")
                .unwrap_err()
                .to_string(),
            "the server's endpoint https://evil.example/messages?… is on https://evil.example, another origin than \
             its event stream (http://127.0.0.1:9); no message is sent there"
        );
        assert_eq!(
            resolve_endpoint(&sse, b"//127.0.0.1:10/m").unwrap_err().to_string(),
            "the server's endpoint http://127.0.0.1:10/m is on http://127.0.0.1:10, another origin than its event \
             stream (http://127.0.0.1:9); no message is sent there"
        );
        assert_eq!(
            resolve_endpoint(&sse, b"  ").unwrap_err().to_string(),
            "the server's endpoint event is empty"
        );
        // A server's long endpoint is quoted in part, whichever way it fails.
        for long in [
            format!("a:{}", "\u{fffd}".repeat(5000)),
            format!("https://{}.example/m", "x".repeat(5000)),
        ] {
            let error = resolve_endpoint(&sse, long.as_bytes()).unwrap_err().to_string();
            assert!(
                error.chars().count() < 3 * MAX_QUOTED + 200,
                "{} characters",
                error.chars().count()
            );
            assert!(error.contains('…'), "{error}");
        }
    }
}
