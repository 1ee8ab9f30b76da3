//! The list caches: per list kind, an LRU of the last servers' lists, each stamped with the
//! generation of the server's list it was fetched in.

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use foldhash::fast::RandomState;
use lru::LruCache;
use plexus_client::{Client, ClientError};
use plexus_protocol::{Prompt, Resource, ResourceTemplate, Tool};

use crate::state::ListKind;
use crate::sync::lock;

/// A list and the generation it was fetched in.
type Stamped<T> = (u64, Arc<[T]>);

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

    /// The list of `server` when it was fetched in `generation` (the current one): fresh.
    pub(crate) fn fresh(&self, server: &str, generation: u64) -> Option<Arc<[T]>> {
        match lock(&self.lru).get(server) {
            Some((fetched_in, items)) if *fetched_in == generation => Some(Arc::clone(items)),
            _ => None,
        }
    }

    /// The last list fetched for `server`, fresh or not.
    pub(crate) fn last_good(&self, server: &str) -> Option<Arc<[T]>> {
        lock(&self.lru).peek(server).map(|(_, items)| Arc::clone(items))
    }

    /// Keeps `items` as `server`'s list of `generation`.
    pub(crate) fn put(&self, server: &str, generation: u64, items: Arc<[T]>) {
        lock(&self.lru).put(server.to_owned(), (generation, items));
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

    /// Fetches the whole list.
    fn fetch(client: &Client) -> impl Future<Output = Result<Vec<Self>, ClientError>> + Send;
}

impl Listed for Tool {
    const KIND: ListKind = ListKind::Tools;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.tools
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Vec<Self>, ClientError>> + Send {
        client.list_tools()
    }
}

impl Listed for Resource {
    const KIND: ListKind = ListKind::Resources;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.resources
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Vec<Self>, ClientError>> + Send {
        client.list_resources()
    }
}

impl Listed for ResourceTemplate {
    const KIND: ListKind = ListKind::ResourceTemplates;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.templates
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Vec<Self>, ClientError>> + Send {
        client.list_resource_templates()
    }
}

impl Listed for Prompt {
    const KIND: ListKind = ListKind::Prompts;

    fn cache(caches: &Caches) -> &ListCache<Self> {
        &caches.prompts
    }

    fn fetch(client: &Client) -> impl Future<Output = Result<Vec<Self>, ClientError>> + Send {
        client.list_prompts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_fresh_only_in_its_generation_and_the_least_recent_server_goes_first() {
        let cache: ListCache<u32> = ListCache::new(2);
        cache.put("a", 1, Arc::from([1]));
        cache.put("b", 1, Arc::from([2]));
        assert_eq!(cache.fresh("a", 1).as_deref(), Some(&[1][..]));
        assert_eq!(cache.fresh("a", 2), None, "a newer generation makes it stale");
        assert_eq!(cache.last_good("a").as_deref(), Some(&[1][..]));
        cache.put("c", 1, Arc::from([3]));
        assert_eq!(cache.last_good("b"), None, "b was used least recently");
        assert_eq!(cache.len(), 2);
        cache.remove("a");
        assert_eq!(cache.last_good("a"), None);
    }
}
