//! The lists a pool serves from its caches: tools, resources, resource templates, prompts.

use std::sync::Arc;

use plexus_protocol::{Prompt, Resource, ResourceTemplate, Tool};

use crate::cache::Listed;
use crate::error::PoolError;
use crate::pool::Pool;
use crate::slot::Slot;

impl Pool {
    /// The server's tools: from the cache while fresh, else fetched (every page) over its
    /// connection, connecting it when needed. A refresh that fails serves the last good list
    /// and keeps the error ([`list_error`](Self::list_error)); without one it is the error.
    pub async fn tools(&self, server: &str) -> Result<Arc<[Tool]>, PoolError> {
        self.list(server).await
    }

    /// The server's resources, as [`tools`](Self::tools) does.
    pub async fn resources(&self, server: &str) -> Result<Arc<[Resource]>, PoolError> {
        self.list(server).await
    }

    /// The server's resource templates, as [`tools`](Self::tools) does.
    pub async fn resource_templates(&self, server: &str) -> Result<Arc<[ResourceTemplate]>, PoolError> {
        self.list(server).await
    }

    /// The server's prompts, as [`tools`](Self::tools) does.
    pub async fn prompts(&self, server: &str) -> Result<Arc<[Prompt]>, PoolError> {
        self.list(server).await
    }

    async fn list<T: Listed>(&self, server: &str) -> Result<Arc<[T]>, PoolError> {
        let slot = self.shared.slot(server)?;
        if let Some(items) = T::cache(&self.shared.caches).fresh(server, slot.generation(T::KIND)) {
            return Ok(items);
        }
        // Boxed: the fetch's future is large and rare, and a fresh list (every tool call asks)
        // should not carry its space.
        Box::pin(self.fetch(server, &slot)).await
    }

    /// Fetches the list (the cache's miss), or serves the last good one when that fails.
    async fn fetch<T: Listed>(&self, server: &str, slot: &Slot) -> Result<Arc<[T]>, PoolError> {
        let cache = T::cache(&self.shared.caches);
        // One fetch of a list at a time: callers who waited find it fresh.
        let _turn = slot.fetching[T::KIND.index()].lock().await;
        let generation = slot.generation(T::KIND);
        if let Some(items) = cache.fresh(server, generation) {
            return Ok(items);
        }
        let client = self.ensure_connected(server).await?;
        match T::fetch(&client).await {
            Ok(listing) => {
                // A stateless session's list is fresh for its `ttlMs`, unless the server
                // acknowledged that it announces the list's changes (which then invalidate it).
                let announced = client
                    .change_notifications()
                    .is_some_and(|granted| T::announced(&granted));
                let expires = listing
                    .ttl
                    .filter(|_| !announced)
                    .and_then(|ttl| std::time::Instant::now().checked_add(ttl));
                let items: Arc<[T]> = listing.items.into();
                // An invalidation while the fetch ran (a list_changed, a lost connection) started
                // a new generation: this result may be stale and is not kept.
                if slot.generation(T::KIND) == generation {
                    cache.put(server, generation, Arc::clone(&items), expires);
                    slot.live().list_errors[T::KIND.index()] = None;
                }
                Ok(items)
            }
            Err(source) => {
                slot.live().list_errors[T::KIND.index()] = Some(source.clone());
                match cache.last_good(server) {
                    Some(items) => {
                        tracing::warn!(
                            server,
                            "refreshing {} failed; serving the last list: {source}",
                            T::KIND.method()
                        );
                        Ok(items)
                    }
                    None => Err(PoolError::List {
                        server: server.to_owned(),
                        list: T::KIND,
                        source,
                    }),
                }
            }
        }
    }
}
