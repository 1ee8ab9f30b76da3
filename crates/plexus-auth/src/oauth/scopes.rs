//! Scope selection (the MCP specification's scope selection strategy) and the union of scopes on
//! step-up authorization.
//!
//! ```
//! use plexus_auth::oauth::scopes::{ScopeSources, parse, select, union};
//!
//! let sources = ScopeSources { challenge: Some("files:read"), resource_supported: &["a".into()], ..Default::default() };
//! assert_eq!(select(&sources), ["files:read"]);
//! assert_eq!(union(&parse("a b"), &parse("b c")), ["a", "b", "c"]);
//! ```

/// The scope that asks for a refresh token.
pub const OFFLINE_ACCESS: &str = "offline_access";

/// Where scopes can come from, in the order they are used.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScopeSources<'a> {
    /// The configured scopes (`oauth.scopes`).
    pub configured: &'a [String],
    /// The `scope` of the `WWW-Authenticate` challenge.
    pub challenge: Option<&'a str>,
    /// The protected resource metadata's `scopes_supported`.
    pub resource_supported: &'a [String],
    /// The authorization server metadata's `scopes_supported`, which decides whether
    /// `offline_access` is added.
    pub server_supported: &'a [String],
}

/// The scopes to request: the configured ones, else the challenge's, else the resource's
/// `scopes_supported`, else none; plus `offline_access` when some scope is requested and the
/// authorization server lists it. Duplicates are dropped, order kept.
pub fn select(sources: &ScopeSources<'_>) -> Vec<String> {
    let mut scopes = if !sources.configured.is_empty() {
        union(sources.configured, &[])
    } else if let Some(challenge) = sources.challenge.map(parse).filter(|s| !s.is_empty()) {
        challenge
    } else {
        union(sources.resource_supported, &[])
    };
    if !scopes.is_empty() && sources.server_supported.iter().any(|s| s == OFFLINE_ACCESS) {
        scopes = union(&scopes, &[OFFLINE_ACCESS.to_owned()]);
    }
    scopes
}

/// The scopes of a space-separated `scope` value.
pub fn parse(scope: &str) -> Vec<String> {
    union(
        &scope.split_ascii_whitespace().map(str::to_owned).collect::<Vec<_>>(),
        &[],
    )
}

/// `held` followed by the scopes of `more` it lacks, without duplicates or empty scopes.
pub fn union(held: &[String], more: &[String]) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::with_capacity(held.len() + more.len());
    for scope in held.iter().chain(more) {
        if !scope.is_empty() && !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    scopes
}

/// The `scope` parameter for a list of scopes (`None` when empty).
pub fn join(scopes: &[String]) -> Option<String> {
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn selection_order_and_offline_access() {
        let configured = strings(&["c"]);
        let resource = strings(&["r1", "r2"]);
        let with_offline = strings(&["x", OFFLINE_ACCESS]);
        let all = ScopeSources {
            configured: &configured,
            challenge: Some("w"),
            resource_supported: &resource,
            server_supported: &[],
        };
        assert_eq!(select(&all), ["c"]);
        assert_eq!(select(&ScopeSources { configured: &[], ..all }), ["w"]);
        let no_challenge = ScopeSources {
            configured: &[],
            challenge: Some("  "),
            ..all
        };
        assert_eq!(select(&no_challenge), ["r1", "r2"]);
        assert!(select(&ScopeSources::default()).is_empty());
        let offline = ScopeSources {
            server_supported: &with_offline,
            ..no_challenge
        };
        assert_eq!(select(&offline), ["r1", "r2", OFFLINE_ACCESS]);
        // Only offline_access would change "no scope" into a narrower request: omitted.
        let nothing = ScopeSources {
            server_supported: &with_offline,
            ..ScopeSources::default()
        };
        assert!(select(&nothing).is_empty());
        assert_eq!(join(&[]), None);
        assert_eq!(join(&strings(&["a", "b"])).as_deref(), Some("a b"));
    }

    proptest! {
        /// The union holds every scope of both sides exactly once, `held`'s first, in order.
        #[test]
        fn union_is_ordered_and_complete(
            held in proptest::collection::vec("[a-z:]{0,5}", 0..6),
            more in proptest::collection::vec("[a-z:]{0,5}", 0..6),
        ) {
            let result = union(&held, &more);
            for scope in held.iter().chain(&more).filter(|s| !s.is_empty()) {
                prop_assert_eq!(result.iter().filter(|s| *s == scope).count(), 1);
            }
            prop_assert!(result.iter().all(|s| !s.is_empty()));
            let held_part: Vec<&String> = result.iter().take_while(|s| held.contains(s)).collect();
            let distinct_held = union(&held, &[]);
            prop_assert_eq!(held_part.len(), distinct_held.len());
            prop_assert_eq!(union(&result, &more), result.clone());
            prop_assert_eq!(parse(&result.join(" ")), result);
        }
    }
}
