//! The same-origin rule: the configured headers and credentials go only to the event stream's
//! origin.

use reqwest::Url;

/// The origin (scheme, host and port) of a URL, as text.
pub(crate) fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Whether two URLs share an origin: only then may a request to one carry the headers and
/// credentials configured for the other.
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
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
}
