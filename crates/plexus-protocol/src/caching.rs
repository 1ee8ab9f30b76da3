//! Caching hints of the stateless era: `ttlMs` and `cacheScope` on the results of `server/discover`,
//! the list methods and `resources/read`.
//!
//! Both are optional here (an initialize-era server never sends them, and an absent field is not
//! written back), although 2026-07-28 requires them on those results.

use std::time::Duration;

open_string_enum! {
    /// Who may reuse a cached result (`cacheScope`). A value this crate does not know is kept as
    /// `Other` (so that the result still decodes and encodes back unchanged), and treated as
    /// [`CacheScope::Private`] by [`CacheScope::is_shared`]: the conservative reading.
    pub enum CacheScope {
        /// Shareable across authorization contexts (e.g. between users of a gateway).
        Public = "public",
        /// Reusable only within the authorization context it was fetched in (the same access token).
        Private = "private",
    }
}

impl CacheScope {
    /// Whether the result may be served to another authorization context: only for `public`.
    pub fn is_shared(&self) -> bool {
        matches!(self, CacheScope::Public)
    }
}

/// The freshness lifetime a `ttlMs` field gives, in milliseconds: an absent or negative value means
/// 0 (stale at once), as the specification tells clients to read it.
pub fn effective_ttl_ms(ttl_ms: Option<i64>) -> u64 {
    ttl_ms.map_or(0, |ttl| u64::try_from(ttl).unwrap_or(0))
}

/// The accessors of a result with caching hints (`ttl_ms: Option<i64>`, `cache_scope:
/// Option<CacheScope>`).
macro_rules! cacheable {
    ($($name:ty),+ $(,)?) => {
        $(
            impl $name {
                /// How long the result stays fresh, in milliseconds: `ttlMs`, with an absent or
                /// negative value read as 0 (stale at once).
                pub fn ttl_ms(&self) -> u64 {
                    $crate::caching::effective_ttl_ms(self.ttl_ms)
                }

                /// [`ttl_ms`](Self::ttl_ms) as a duration.
                pub fn ttl(&self) -> ::std::time::Duration {
                    $crate::caching::ttl_duration(self.ttl_ms)
                }
            }
        )+
    };
}

/// [`effective_ttl_ms`] as a duration.
pub(crate) fn ttl_duration(ttl_ms: Option<i64>) -> Duration {
    Duration::from_millis(effective_ttl_ms(ttl_ms))
}

cacheable!(
    crate::ListToolsResult,
    crate::ListPromptsResult,
    crate::ListResourcesResult,
    crate::ListResourceTemplatesResult,
    crate::ReadResourceResult,
    crate::DiscoverResult,
    crate::skills::ListSkillsResult,
    crate::skills::GetSkillResult,
);
