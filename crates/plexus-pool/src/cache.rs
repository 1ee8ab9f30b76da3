//! The list caches: per list kind, an LRU of the last servers' lists, each stamped with the
//! generation of the server's list it was fetched in and, in the stateless era, when its `ttlMs`
//! runs out (unless the session's `subscriptions/listen` was granted that list's change
//! notifications, which then invalidate it as the initialize era's do).
//!
//! A list marked `cacheScope: private` is reusable only within the authorization context it was
//! fetched in: the pool keeps every list for the one session (one set of credentials) it was
//! fetched in, and drops them all when the connection ends, so no list reaches another one.

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use foldhash::fast::RandomState;
use lru::LruCache;
use plexus_client::{Client, ClientError, Listing};
use plexus_protocol::{Prompt, Resource, ResourceTemplate, SubscriptionFilter, Tool};

use crate::state::ListKind;
use crate::sync::lock;

/// A list, the generation it was fetched in, and when its `ttlMs` runs out (never: `None`).
struct Stamped<T> {
    generation: u64,
    expires: Option<Instant>,
    items: Arc<[T]>,
}

/// One kind's cache: server name → its list and the generation it was fetched in.
pub(crate) struct ListCache<T> {
    lru: Mutex<LruCache<String, Stamped<T>, RandomState>>,
}

impl<T> ListCache<T> {
    fn new(capacity: usize) -> ListCache<T> {
        ListCache {
            lru: Mutex::new(LruCache::with_hasher(
                NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN),
                RandomState::default(),
            )),
        }
    }

    /// The list of `server` when it was fetched in `generation` (the current one) and its
    /// `ttlMs` has not run out: fresh.
    pub(crate) fn fresh(&self, server: &str, generation: u64) -> Option<Arc<[T]>> {
        match lock(&self.lru).get(server) {
            Some(stamped)
                if stamped.generation == generation && stamped.expires.is_none_or(|at| Instant::now() < at) =>
            {
                Some(Arc::clone(&stamped.items))
            }
            _ => None,
        }
    }

    /// The last list fetched for `server`, fresh or not.
    pub(crate) fn last_good(&self, server: &str) -> Option<Arc<[T]>> {
        lock(&self.lru).peek(server).map(|stamped| Arc::clone(&stamped.items))
    }

    /// Keeps `items` as `server`'s list of `generation`, fresh until `expires` (`None`: until the
    /// generation changes).
    pub(crate) fn put(&self, server: &str, generation: u64, items: Arc<[T]>, expires: Option<Instant>) {
        let stamped = Stamped {
            generation,
            expires,
            items,
        };
        lock(&self.lru).put(server.to_owned(), stamped);
    }

    /// Forgets `server`'s list.
    pub(crate) fn remove(&self, server: &str) {
        lock(&self.lru).pop(server);
    }

    /// How many servers' lists are kept.
    pub(crate) fn len(&self) -> usize {
        lock(&self.lru).len()
    }
}

/// The four caches.
pub(crate) struct Caches {
    tools: ListCache<Tool>,
    resources: ListCache<Resource>,
    templates: ListCache<ResourceTemplate>,
    prompts: ListCache<Prompt>,
}

impl Caches {
    pub(crate) fn new(capacity: usize) -> Caches {
        Caches {
            tools: ListCache::new(capacity),
            resources: ListCache::new(capacity),
            templates: ListCache::new(capacity),
            prompts: ListCache::new(capacity),
        }
    }

    /// Forgets every list of `server`.
    pub(crate) fn remove(&self, server: &str) {
        self.tools.remove(server);
        self.resources.remove(server);
        self.templates.remove(server);
        self.prompts.remove(server);
    }

    /// How many servers' lists of `kind` are kept.
    pub(crate) fn len(&self, kind: ListKind) -> usize {
        match kind {
            ListKind::Tools => self.tools.len(),
            ListKind::Resources => self.resources.len(),
            ListKind::ResourceTemplates => self.templates.len(),
            ListKind::Prompts => self.prompts.len(),
        }
    }
}

/// An item of a list a pool caches: which cache, and how the list is fetched (every page).
pub(crate) trait Listed: Sized + Send + Sync + 'static {
    /// Which list.
    const KIND: ListKind;

    /// Its cache.
    fn cache(caches: &Caches) -> &ListCache<Self>;

    /// Fetches the whole list, with its caching hints.
    fn fetch(client: &Client) -> impl Future<Output = Result<Listing<Self>, ClientError>> + Send;

    /// Whether `granted` (what a `subscriptions/listen` was acknowledged) includes this list's
    /// change notifications.
    fn announced(granted: &SubscriptionFilter) -> bool;
}

impl Listed for Tool {
    const KIND: ListKind = ListKind::Tools;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.tools
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Listing<Self>, ClientError>> + Send {
        client.tools_listing()
    }

    fn announced(granted: &SubscriptionFilter) -> bool {
        granted.tools_list_changed == Some(true)
    }
}

impl Listed for Resource {
    const KIND: ListKind = ListKind::Resources;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.resources
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Listing<Self>, ClientError>> + Send {
        client.resources_listing()
    }

    fn announced(granted: &SubscriptionFilter) -> bool {
        granted.resources_list_changed == Some(true)
    }
}

impl Listed for ResourceTemplate {
    const KIND: ListKind = ListKind::ResourceTemplates;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.templates
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Listing<Self>, ClientError>> + Send {
        client.resource_templates_listing()
    }

    fn announced(granted: &SubscriptionFilter) -> bool {
        granted.resources_list_changed == Some(true)
    }
}

impl Listed for Prompt {
    const KIND: ListKind = ListKind::Prompts;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.prompts
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Listing<Self>, ClientError>> + Send {
        client.prompts_listing()
    }

    fn announced(granted: &SubscriptionFilter) -> bool {
        granted.prompts_list_changed == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_fresh_only_in_its_generation_and_the_least_recent_server_goes_first() {
        let cache: ListCache<u32> = ListCache::new(2);
        cache.put("a", 1, Arc::from([1]), None);
        cache.put("b", 1, Arc::from([2]), None);
        assert_eq!(cache.fresh("a", 1).as_deref(), Some(&[1][..]));
        assert_eq!(cache.fresh("a", 2), None, "a newer generation makes it stale");
        assert_eq!(cache.last_good("a").as_deref(), Some(&[1][..]));
        cache.put("c", 1, Arc::from([3]), None);
        assert_eq!(cache.last_good("b"), None, "b was used least recently");
        assert_eq!(cache.len(), 2);
        cache.remove("a");
        assert_eq!(cache.last_good("a"), None);
    }

    #[test]
    fn a_list_whose_ttl_ran_out_is_stale_but_still_the_last_good_one() {
        let cache: ListCache<u32> = ListCache::new(2);
        let now = Instant::now();
        cache.put("a", 1, Arc::from([1]), Some(now));
        cache.put("b", 1, Arc::from([2]), Some(now + std::time::Duration::from_secs(3600)));
        assert_eq!(cache.fresh("a", 1), None, "its ttlMs ran out");
        assert_eq!(cache.last_good("a").as_deref(), Some(&[1][..]));
        assert_eq!(cache.fresh("b", 1).as_deref(), Some(&[2][..]));
    }
}
