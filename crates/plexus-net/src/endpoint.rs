//! Where a remote transport may send what it was configured with: the same-origin rule (the
//! configured headers and credentials go only to the configured server's origin), and the legacy
//! SSE transport's `endpoint` event resolved under it.

use url::Url;

use crate::redact::redact_url;

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
/// not go there. The error says why, quoting at most 200 characters of the event.
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
pub fn resolve_endpoint(stream_url: &Url, data: &[u8]) -> Result<Url, String> {
    let text = String::from_utf8_lossy(data);
    let text = text.trim();
    if text.is_empty() {
        return Err("the server's endpoint event is empty".to_owned());
    }
    let endpoint = stream_url.join(text).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        format!("the server's endpoint event {shown:?} is not a URL: {e}")
    })?;
    if !same_origin(&endpoint, stream_url) {
        return Err(format!(
            "the server's endpoint {} is on {}, another origin than its event stream ({}); no message is sent there",
            redact_url(endpoint.as_str()),
            origin(&endpoint),
            origin(stream_url)
        ));
    }
    Ok(endpoint)
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
            resolve_endpoint(&sse, b"https://evil.example/messages?sessionId=1").unwrap_err(),
            "the server's endpoint https://evil.example/messages?… is on https://evil.example, another origin than \
             its event stream (http://127.0.0.1:9); no message is sent there"
        );
        assert_eq!(
            resolve_endpoint(&sse, b"//127.0.0.1:10/m").unwrap_err(),
            "the server's endpoint http://127.0.0.1:10/m is on http://127.0.0.1:10, another origin than its event \
             stream (http://127.0.0.1:9); no message is sent there"
        );
        assert_eq!(
            resolve_endpoint(&sse, b"  ").unwrap_err(),
            "the server's endpoint event is empty"
        );
    }
}
