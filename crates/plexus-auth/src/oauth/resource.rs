//! The protected resource's identity: the canonical URI of a server (RFC 8707 `resource`, the MCP
//! specification's "canonical server URI") and whether a protected resource metadata document's
//! `resource` names the server.
//!
//! ```
//! use plexus_auth::oauth::resource::{canonical_resource, resource_matches};
//! use url::Url;
//!
//! let server = Url::parse("HTTPS://MCP.Example.com:443/mcp#top").unwrap();
//! assert_eq!(canonical_resource(&server), "https://mcp.example.com/mcp");
//! assert!(resource_matches("https://mcp.example.com", &server));
//! assert!(!resource_matches("https://mcp.example.com/mc", &server));
//! assert!(!resource_matches("https://evil.example.com/mcp", &server));
//! ```

use url::Url;

/// The canonical URI of the server at `url`: scheme and host in lower case, no default port, no
/// fragment, and no trailing `/` when the path is empty (`https://mcp.example.com`, not
/// `https://mcp.example.com/`). A query is kept.
pub fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    let text = url.to_string();
    if url.path() == "/" {
        let without_slash = format!("{}{}", url.origin().ascii_serialization(), query_part(&url));
        // `origin()` is opaque for URLs without a host; those keep their form.
        if url.has_host() {
            return without_slash;
        }
    }
    text
}

fn query_part(url: &Url) -> String {
    url.query().map(|q| format!("?{q}")).unwrap_or_default()
}

/// Whether `resource` (from protected resource metadata) names the server at `server_url`: the
/// same scheme, host and port, no fragment, a path that is the server's path or one of its
/// parents (at a `/` boundary), and, when it has a query, the server's query.
pub fn resource_matches(resource: &str, server_url: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.fragment().is_some()
        || resource.scheme() != server_url.scheme()
        || resource.host_str() != server_url.host_str()
        || resource.port_or_known_default() != server_url.port_or_known_default()
        || resource.username() != ""
        || resource.password().is_some()
    {
        return false;
    }
    if resource.query().is_some() && resource.query() != server_url.query() {
        return false;
    }
    let parent = resource.path().trim_end_matches('/');
    let path = server_url.path().trim_end_matches('/');
    path == parent || path.strip_prefix(parent).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn canonical_forms() {
        let cases = [
            ("http://localhost:3000/mcp", "http://localhost:3000/mcp"),
            ("http://localhost:3000/", "http://localhost:3000"),
            ("http://LOCALHOST:80", "http://localhost"),
            ("https://a.example/mcp/", "https://a.example/mcp/"),
            ("https://a.example/?tenant=1#f", "https://a.example?tenant=1"),
            ("https://a.example/x?y=1", "https://a.example/x?y=1"),
        ];
        for (given, canonical) in cases {
            assert_eq!(canonical_resource(&url(given)), canonical, "{given}");
        }
    }

    #[test]
    fn matching_rules() {
        let server = url("http://localhost:3000/mcp");
        for good in [
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp/",
            "http://localhost:3000",
            "http://localhost:3000/",
            "HTTP://LOCALHOST:3000/mcp",
        ] {
            assert!(resource_matches(good, &server), "{good}");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "http://localhost:3001/mcp",
            "https://localhost:3000/mcp",
            "http://localhost:3000/mc",
            "http://localhost:3000/mcp/sub",
            "http://localhost:3000/mcp#x",
            "http://localhost:3000/mcp?tenant=2",
            "http://user@localhost:3000/mcp",
            "not a url",
        ] {
            assert!(!resource_matches(bad, &server), "{bad}");
        }
        assert!(resource_matches("http://h/a", &url("http://h/a/b/c")));
        assert!(resource_matches("http://h/a?t=1", &url("http://h/a?t=1")));
    }

    proptest! {
        /// A server always matches its own canonical URI, and canonicalizing is idempotent.
        #[test]
        fn a_server_matches_its_canonical_uri(
            host in "[a-z][a-z0-9]{0,8}(\\.[a-z]{2,4})?",
            port in proptest::option::of(1u16..),
            segments in proptest::collection::vec("[A-Za-z0-9_~-]{1,6}", 0..4),
            fragment in proptest::option::of("[a-z]{1,4}"),
        ) {
            let port = port.map(|port| format!(":{port}")).unwrap_or_default();
            let fragment = fragment.map(|fragment| format!("#{fragment}")).unwrap_or_default();
            let text = format!("https://{host}{port}/{}{fragment}", segments.join("/"));
            let server = url(&text);
            let canonical = canonical_resource(&server);
            prop_assert!(resource_matches(&canonical, &server), "{canonical} vs {server}");
            prop_assert!(!canonical.contains('#'));
            prop_assert_eq!(canonical_resource(&url(&canonical)), canonical.clone());
            prop_assert_eq!(canonical.ends_with('/'), false);
        }
    }
}
