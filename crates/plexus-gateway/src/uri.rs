//! The gateway's resource URIs: `plexus://<server>/<the server's own URI>`, which name the
//! server and give back the original URI exactly (server names hold only `[A-Za-z0-9_-]`, so the
//! first `/` after the server ends it).

use plexus::jsonrpc::{ErrorCode, ErrorObject};

/// The scheme and separator that start every gateway URI.
const PREFIX: &str = "plexus://";

/// The gateway's URI (or URI template) for `uri` of `server`.
pub(crate) fn to_gateway(server: &str, uri: &str) -> String {
    format!("{PREFIX}{server}/{uri}")
}

/// The server and its own URI that `given` names, or the error a client gets for a URI that is
/// not the gateway's.
pub(crate) fn owner(given: &str) -> Result<(&str, &str), ErrorObject> {
    from_gateway(given).ok_or_else(|| {
        ErrorObject::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("{given:?} is not a resource of this gateway ({PREFIX}SERVER/URI)"),
        )
    })
}

/// The server and its own URI that a gateway URI names; `None` for any other URI.
pub(crate) fn from_gateway(uri: &str) -> Option<(&str, &str)> {
    let (server, original) = uri.strip_prefix(PREFIX)?.split_once('/')?;
    let valid = !server.is_empty()
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (valid && !original.is_empty()).then_some((server, original))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn uris_name_their_server() {
        assert_eq!(to_gateway("docs", "file:///a/b.md"), "plexus://docs/file:///a/b.md");
        assert_eq!(
            from_gateway("plexus://docs/file:///a/b.md"),
            Some(("docs", "file:///a/b.md"))
        );
        assert_eq!(from_gateway("plexus://docs/"), None);
        assert_eq!(from_gateway("plexus:///x"), None);
        assert_eq!(from_gateway("file:///a"), None);
        assert_eq!(from_gateway("plexus://a.b/x"), None);
    }

    proptest! {
        /// Every URI of every server comes back exactly.
        #[test]
        fn uris_round_trip(server in "[A-Za-z0-9_-]{1,20}", uri in ".{1,100}") {
            let gateway = to_gateway(&server, &uri);
            prop_assert_eq!(from_gateway(&gateway), Some((server.as_str(), uri.as_str())));
        }
    }
}
