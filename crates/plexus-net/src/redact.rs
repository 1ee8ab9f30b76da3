//! What a remote transport shows of its configuration in logs, errors, `describe()` and `Debug`:
//! URLs without the parts that often hold credentials, header names without their values.
//!
//! ```
//! use plexus_net::redact::{RedactedHeaders, redact_url};
//!
//! assert_eq!(redact_url("https://user:pw@example.com:8443/sse?token=abc#x"), "https://example.com:8443/sse?…");
//! let headers = [("X-Api-Key".to_owned(), "secret".to_owned())];
//! assert_eq!(format!("{:?}", RedactedHeaders(&headers)), r#"[("X-Api-Key", "<redacted>")]"#);
//! ```

use std::fmt;

/// What a header value is shown as.
const REDACTED: &str = "<redacted>";

/// A URL for display: without user name, password, query or fragment; a query is shown as `?…`.
/// The text is not parsed as a URL (it need not be a valid one): everything up to the last `@`
/// of the authority goes, and everything from the first `?` or `#` after it. Text without
/// `scheme://` keeps its start.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let rest = if scheme.is_empty() {
        rest
    } else {
        let authority_end = rest.find('/').unwrap_or(rest.len());
        match rest[..authority_end].rfind('@') {
            Some(at) => &rest[at + 1..],
            None => rest,
        }
    };
    let (shown, query) = match rest.find(['?', '#']) {
        Some(at) => (&rest[..at], rest[at..].starts_with('?')),
        None => (rest, false),
    };
    let mut text = String::with_capacity(scheme.len() + shown.len() + 4);
    text.push_str(scheme);
    text.push_str(shown);
    if query {
        text.push_str("?…");
    }
    text
}

/// Shows configured headers as `[("Name", "<redacted>"), …]`: values are often credentials.
#[derive(Clone, Copy)]
pub struct RedactedHeaders<'a>(pub &'a [(String, String)]);

impl fmt::Debug for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| (name, REDACTED)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn credentials_queries_and_fragments_are_hidden() {
        let cases = [
            (
                "https://user:pw@example.com:8443/sse?token=abc#x",
                "https://example.com:8443/sse?…",
            ),
            ("http://127.0.0.1:9/sse", "http://127.0.0.1:9/sse"),
            ("ws://127.0.0.1:9/", "ws://127.0.0.1:9/"),
            ("http://[::1]:80/mcp#top", "http://[::1]:80/mcp"),
            ("http://a@b@host?x", "http://host?…"),
            // An invalid URL with an unencoded `?` in the password still loses it.
            ("http://u:p?ss@host/x?q=@", "http://host/x?…"),
            ("http://host/path?email=a@b", "http://host/path?…"),
            ("not a url", "not a url"),
            ("host:1/x?key=1", "host:1/x?…"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    proptest! {
        /// Whatever the text, nothing of a user name or password (after `scheme://`, before the
        /// last `@` of the authority) or of a query survives.
        #[test]
        fn secrets_never_survive(user in "[a-z]{1,8}", secret in "[A-Z]{8}", host in "[a-z.]{1,10}", path in "(/[a-z]{0,4}){0,3}") {
            let url = format!("https://{user}:{secret}@{host}{path}?key={secret}#{secret}");
            let shown = redact_url(&url);
            prop_assert!(!shown.contains(&secret), "{}", shown);
            prop_assert_eq!(shown, format!("https://{host}{path}?…"));
        }
    }
}
