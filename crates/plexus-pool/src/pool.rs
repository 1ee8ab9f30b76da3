//! The pool's public face: the servers it holds, their states, readiness, connections on demand,
//! shutdown.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use foldhash::fast::RandomState;
use plexus_client::Client;
use tokio::sync::{Semaphore, broadcast, watch};

use crate::cache::Caches;
use crate::connector::{ConnectFailure, Connector, ServerSpec};
use crate::error::PoolError;
use crate::settings::PoolSettings;
use crate::slot::Slot;
use crate::state::{ListKind, PoolEvent, ServerState, ServerStatus};
use crate::sync::lock;

/// The owner of every connection's life. Cheap to clone; every clone is the same pool. Use it
/// inside a Tokio runtime (it starts connects in the background).
///
/// ```no_run
/// # async fn demo(connector: std::sync::Arc<dyn plexus_pool::Connector>, servers: Vec<plexus_pool::ServerSpec>) -> Result<(), plexus_pool::PoolError> {
/// use std::time::Duration;
/// use plexus_pool::{Pool, PoolSettings};
///
/// let pool = Pool::new(connector, PoolSettings::from_env());
/// pool.set_servers(servers).await; // every server starts connecting in the background
/// let ready = pool.wait_ready(Duration::from_secs(5)).await?;
/// for server in &ready.connected {
///     for tool in pool.tools(server).await?.iter() {
///         println!("{server}: {}", tool.name);
///     }
/// }
/// pool.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Pool {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("servers", &self.names())
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

/// What every clone of a pool shares.
pub(crate) struct Shared {
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) settings: PoolSettings,
    /// The connections, by cache key (name + canonical entry).
    pub(crate) connections: DashMap<String, Arc<Slot>, RandomState>,
    /// Server name → cache key, and the names in the order the host gave them.
    names: DashMap<String, String, RandomState>,
    order: Mutex<Vec<String>>,
    /// Serializes changes of the server set.
    configuring: tokio::sync::Mutex<()>,
    pub(crate) local: Arc<Semaphore>,
    pub(crate) remote: Arc<Semaphore>,
    pub(crate) events: broadcast::Sender<PoolEvent>,
    pub(crate) caches: Caches,
    generation: AtomicU64,
    pub(crate) closing: AtomicBool,
    /// Bumped on every state change, for readiness waits.
    pub(crate) changed: watch::Sender<u64>,
}

impl Shared {
    /// A list generation no slot has used.
    pub(crate) fn next_generation(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub(crate) fn emit(&self, event: PoolEvent) {
        // No subscriber is fine.
        let _ = self.events.send(event);
    }

    pub(crate) fn slot(&self, server: &str) -> Result<Arc<Slot>, PoolError> {
        self.find_slot(server).ok_or_else(|| PoolError::UnknownServer {
            server: server.to_owned(),
            known: lock(&self.order).clone(),
        })
    }

    /// The slot of `server`, if it has one. Takes no lock of `order`, so that a caller holding
    /// it may look servers up (`set_servers` removes a slot before it updates `order`).
    fn find_slot(&self, server: &str) -> Option<Arc<Slot>> {
        // Two maps, never locked the other way round: no deadlock, and no key copied.
        self.names
            .get(server)
            .and_then(|key| self.connections.get(key.value()).map(|slot| Arc::clone(slot.value())))
    }

    fn slots(&self) -> Vec<Arc<Slot>> {
        lock(&self.order)
            .iter()
            .filter_map(|name| self.find_slot(name))
            .collect()
    }
}

/// Which servers were ready when a readiness wait ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Connected.
    pub connected: Vec<String>,
    /// Failed to connect.
    pub failed: Vec<String>,
    /// Need a login.
    pub needs_auth: Vec<String>,
    /// Still connecting when the budget ran out: each joins later with a
    /// [`PoolEvent::Joined`].
    pub still_connecting: Vec<String>,
    /// Why each server of [`failed`](Self::failed) and [`needs_auth`](Self::needs_auth) is
    /// not connected, by server.
    pub reasons: std::collections::BTreeMap<String, String>,
}

impl Pool {
    /// An empty pool that connects with `connector`.
    pub fn new(connector: Arc<dyn Connector>, settings: PoolSettings) -> Pool {
        let (events, _) = broadcast::channel(settings.event_capacity.max(1));
        Pool {
            shared: Arc::new(Shared {
                connector,
                local: Arc::new(Semaphore::new(settings.local_connects.max(1))),
                remote: Arc::new(Semaphore::new(settings.remote_connects.max(1))),
                caches: Caches::new(settings.list_cache_servers),
                settings,
                connections: DashMap::default(),
                names: DashMap::default(),
                order: Mutex::new(Vec::new()),
                configuring: tokio::sync::Mutex::new(()),
                events,
                generation: AtomicU64::new(0),
                closing: AtomicBool::new(false),
                changed: watch::channel(0).0,
            }),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &PoolSettings {
        &self.shared.settings
    }

    /// Makes `servers` the pool's servers: a new server (or one whose entry changed: a new cache
    /// key, or whose admission changed) is added and, when it may run, starts connecting in the
    /// background, within the connect windows; a server whose entry and admission are unchanged
    /// keeps its connection; a changed or absent one is removed and its connection closed
    /// (awaited, within its transport's shutdown bound). Of two servers with one name, the first
    /// is kept.
    pub async fn set_servers(&self, servers: impl IntoIterator<Item = ServerSpec>) {
        let shared = &self.shared;
        let _configuring = shared.configuring.lock().await;
        if shared.closing.load(Ordering::SeqCst) {
            return;
        }
        let mut wanted: Vec<ServerSpec> = Vec::new();
        for spec in servers {
            if wanted.iter().any(|w| w.name == spec.name) {
                tracing::warn!("server \"{}\" is given twice; the first entry is kept", spec.name);
            } else {
                wanted.push(spec);
            }
        }
        let keys: Vec<String> = wanted.iter().map(ServerSpec::cache_key).collect();
        // A server stays when its entry and its admission are the same (an approval given or
        // taken back makes a new slot, like a changed entry).
        let stale: Vec<Arc<Slot>> = shared
            .connections
            .iter()
            .filter(|entry| {
                !wanted
                    .iter()
                    .zip(&keys)
                    .any(|(spec, key)| key == entry.key() && spec.admission == entry.value().spec.admission)
            })
            .map(|entry| Arc::clone(entry.value()))
            .collect();
        let mut closing = Vec::new();
        for slot in stale {
            shared.connections.remove(&slot.key);
            if shared.names.get(slot.name()).is_some_and(|key| *key == slot.key) {
                shared.names.remove(slot.name());
            }
            slot.removed.store(true, Ordering::SeqCst);
            closing.extend(crate::connect::retire(shared, &slot));
            shared.emit(PoolEvent::Removed {
                server: slot.name().to_owned(),
            });
        }
        let mut order = Vec::with_capacity(wanted.len());
        for (spec, key) in wanted.into_iter().zip(keys) {
            order.push(spec.name.clone());
            if shared.connections.contains_key(&key) {
                continue;
            }
            let slot = Arc::new(Slot::new(spec, || shared.next_generation(), shared.changed.clone()));
            shared.names.insert(slot.name().to_owned(), key.clone());
            shared.connections.insert(key, Arc::clone(&slot));
            if slot.startable().is_ok() {
                let mut live = slot.live();
                crate::connect::start(shared, &slot, &mut live, crate::connect::Mode::Initial);
            }
        }
        *lock(&shared.order) = order;
        crate::connect::close_all(closing).await;
    }

    /// The servers' names, in the order given.
    pub fn names(&self) -> Vec<String> {
        lock(&self.shared.order).clone()
    }

    /// A server's entry.
    pub fn spec(&self, server: &str) -> Option<ServerSpec> {
        self.shared.slot(server).ok().map(|slot| slot.spec.clone())
    }

    /// A server's state.
    pub fn state(&self, server: &str) -> Option<ServerState> {
        self.shared.slot(server).ok().map(|slot| slot.live().state.clone())
    }

    /// Whether the crash-loop guard stopped `server` (a stdio server that died
    /// [`crash_limit`](crate::PoolSettings::crash_limit) times within the crash window): it is not
    /// restarted on demand, only by [`reconnect`](Self::reconnect).
    pub fn is_crash_stopped(&self, server: &str) -> bool {
        self.shared.slot(server).is_ok_and(|slot| slot.live().crash_guard)
    }

    /// Every server's state, in the order given.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        self.shared
            .slots()
            .into_iter()
            .map(|slot| (slot.name().to_owned(), slot.live().state.clone()))
            .collect()
    }

    /// A server's live session, without connecting.
    pub fn client(&self, server: &str) -> Option<Client> {
        let slot = self.shared.slot(server).ok()?;
        let live = slot.live();
        live.connection
            .as_ref()
            .filter(|current| !current.client.is_closed())
            .map(|current| current.client.clone())
    }

    /// The server's instructions from its last `initialize`, cut to
    /// [`max_instructions_chars`](PoolSettings::max_instructions_chars).
    pub fn instructions(&self, server: &str) -> Option<Arc<str>> {
        self.shared.slot(server).ok()?.live().instructions.clone()
    }

    /// Why the last refresh of `server`'s `list` failed, while the list served is an older one.
    pub fn list_error(&self, server: &str, list: ListKind) -> Option<plexus_client::ClientError> {
        self.shared.slot(server).ok()?.live().list_errors[list.index()].clone()
    }

    /// Tells the subscribers `event` (a supervisor's).
    pub(crate) fn announce(&self, event: PoolEvent) {
        self.shared.emit(event);
    }

    /// The pool's events from now on (a subscriber that falls more than
    /// [`event_capacity`](PoolSettings::event_capacity) behind misses the oldest and is told so).
    pub fn subscribe(&self) -> broadcast::Receiver<PoolEvent> {
        self.shared.events.subscribe()
    }

    /// Waits until every server that may run has connected or failed, or until `budget` has
    /// passed; servers still connecting then join later, each with a [`PoolEvent::Joined`].
    /// A server whose entry says `"required": true` is waited for until its connect ends
    /// (bounded by its connect timeout), whatever the budget, and the wait fails with
    /// [`PoolError::Required`] as soon as one could not connect ([`PoolError::NotStarted`] when
    /// one may not run).
    pub async fn wait_ready(&self, budget: Duration) -> Result<Readiness, PoolError> {
        self.wait(budget, true).await
    }

    /// Like [`wait_ready`](Self::wait_ready), but a required server's failure does not end the
    /// wait: every server is waited for (within `budget`), and the host looks at the states.
    pub async fn settle(&self, budget: Duration) -> Readiness {
        // Only a shutdown ends this wait early: nothing is ready then.
        self.wait(budget, false).await.unwrap_or_default()
    }

    async fn wait(&self, budget: Duration, fail_on_required: bool) -> Result<Readiness, PoolError> {
        let now = tokio::time::Instant::now();
        // A budget too large for the clock waits for every server.
        let deadline = now
            .checked_add(budget)
            .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
        let mut changes = self.shared.changed.subscribe();
        let mut past_budget = false;
        loop {
            changes.borrow_and_update();
            let slots = self.shared.slots();
            if fail_on_required {
                Self::check_required(&slots)?;
            }
            let settling = |slot: &&Arc<Slot>| slot.startable().is_ok() && slot.live().state.status.is_settling();
            let waiting_for_required = slots.iter().filter(settling).any(|slot| slot.spec.is_required());
            let done = !slots.iter().any(|slot| settling(&slot));
            if done || (past_budget && !waiting_for_required) {
                return Ok(Self::readiness(&slots, past_budget));
            }
            if self.shared.closing.load(Ordering::SeqCst) {
                return Err(PoolError::ShutDown);
            }
            if past_budget {
                if changes.changed().await.is_err() {
                    return Err(PoolError::ShutDown);
                }
            } else {
                match tokio::time::timeout_at(deadline, changes.changed()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Err(PoolError::ShutDown),
                    Err(_) => past_budget = true,
                }
            }
        }
    }

    /// Fails when a required server may not run or could not connect.
    fn check_required(slots: &[Arc<Slot>]) -> Result<(), PoolError> {
        for slot in slots.iter().filter(|slot| slot.spec.is_required()) {
            if let Err((status, reason)) = slot.startable() {
                return Err(PoolError::NotStarted {
                    server: slot.name().to_owned(),
                    status,
                    reason,
                });
            }
            let live = slot.live();
            if matches!(
                live.state.status,
                ServerStatus::Failed | ServerStatus::NeedsAuth | ServerStatus::Disabled
            ) {
                let failure = live.state.error.clone().unwrap_or_else(|| ConnectFailure::Disabled {
                    reason: "it could not connect".into(),
                });
                return Err(PoolError::Required {
                    server: slot.name().to_owned(),
                    failure,
                });
            }
        }
        Ok(())
    }

    fn readiness(slots: &[Arc<Slot>], past_budget: bool) -> Readiness {
        let mut readiness = Readiness::default();
        for slot in slots.iter().filter(|slot| slot.startable().is_ok()) {
            let mut live = slot.live();
            let name = slot.name().to_owned();
            let why = || {
                live.state
                    .error
                    .as_ref()
                    .map(ToString::to_string)
                    .or_else(|| live.state.reason.clone())
            };
            match live.state.status {
                ServerStatus::Connected => readiness.connected.push(name),
                ServerStatus::Failed | ServerStatus::Disabled | ServerStatus::NeedsAuth => {
                    if let Some(why) = why() {
                        readiness.reasons.insert(name.clone(), why);
                    }
                    if live.state.status == ServerStatus::NeedsAuth {
                        readiness.needs_auth.push(name);
                    } else {
                        readiness.failed.push(name);
                    }
                }
                ServerStatus::Pending | ServerStatus::Connecting => {
                    if past_budget {
                        live.late = true;
                    }
                    readiness.still_connecting.push(name);
                }
            }
        }
        readiness
    }

    /// The server's live session, connecting it when it has none: one attempt joins the one
    /// under way (however many callers ask at once, one connect runs). A server that may not
    /// run, needs a login (within its needs-auth time) or crashed too often fails at once,
    /// without a connect.
    pub async fn ensure_connected(&self, server: &str) -> Result<Client, PoolError> {
        crate::connect::ensure(&self.shared, server, false).await
    }

    /// Closes the server's connection (if any) and connects it again, lifting its crash-loop
    /// guard and its needs-auth wait: what a user's explicit "reconnect" or a finished login
    /// asks for.
    pub async fn reconnect(&self, server: &str) -> Result<Client, PoolError> {
        crate::connect::ensure(&self.shared, server, true).await
    }

    /// Cancels every request in flight on every connected server: each caller gets
    /// `ClientError::Cancelled` with `reason`, and each server is told
    /// (`notifications/cancelled`). The sessions stay open.
    pub async fn cancel_all(&self, reason: &str) {
        let cancels: Vec<_> = self
            .names()
            .iter()
            .filter_map(|name| self.client(name))
            .map(|client| {
                let reason = reason.to_owned();
                tokio::spawn(async move { client.cancel_all(&reason).await })
            })
            .collect();
        for cancel in cancels {
            let _ = cancel.await;
        }
    }

    /// Closes every connection at once (each within its transport's shutdown bound: 600 ms for
    /// a child process group), stops every connect under way, and refuses further work.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        let _configuring = shared.configuring.lock().await;
        shared.closing.store(true, Ordering::SeqCst);
        let clients: Vec<Client> = shared
            .slots()
            .iter()
            .filter_map(|slot| crate::connect::retire(shared, slot))
            .collect();
        crate::connect::close_all(clients).await;
        shared.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// [`shutdown`](Self::shutdown) without waiting, for an owner that is being dropped: every
    /// connect attempt is stopped and every connection closed at once
    /// ([`Client::close_now`]: a stdio server's shutdown sequence starts on a thread of its own;
    /// see `plexus_stdio::wait_for_shutdowns`). Later requests fail with
    /// [`PoolError::ShutDown`].
    pub fn close_now(&self) {
        let shared = &self.shared;
        shared.closing.store(true, Ordering::SeqCst);
        for slot in shared.slots() {
            if let Some(client) = crate::connect::retire(shared, &slot) {
                client.close_now();
            }
        }
        shared.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// How many servers' lists of `list` the cache holds.
    pub fn cached_lists(&self, list: ListKind) -> usize {
        self.shared.caches.len(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connector::{Admission, Connection};

    /// Never asked: every server of these tests is disabled.
    struct NoConnector;

    #[async_trait::async_trait]
    impl Connector for NoConnector {
        async fn connect(
            &self,
            server: &ServerSpec,
            _options: plexus_client::ClientOptions,
        ) -> Result<Connection, ConnectFailure> {
            Err(ConnectFailure::failed(std::io::Error::other(format!(
                "{} is disabled",
                server.name
            ))))
        }
    }

    /// `set_servers` removes a server's slot before it updates the order: a walk over the
    /// slots meanwhile (the gateway lists the states on every pool event) must skip the name,
    /// not lock the order a second time (which deadlocked both).
    #[test]
    fn a_name_in_the_order_without_a_slot_is_skipped_not_a_deadlock() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let pool = Pool::new(Arc::new(NoConnector), PoolSettings::default());
        let config = plexus_config::ServerConfig::from_json(&serde_json::json!({"command": "true"}))
            .unwrap()
            .0;
        let disabled = Admission::Disabled {
            reason: "off".to_owned(),
        };
        runtime.block_on(pool.set_servers([ServerSpec::new("kept", config, None).with_admission(disabled)]));
        lock(&pool.shared.order).push("removed".to_owned());
        let (done, finished) = std::sync::mpsc::channel();
        let walker = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let names: Vec<String> = pool.states().into_iter().map(|(name, _)| name).collect();
                let _ = done.send(names);
            })
        };
        let names = finished
            .recv_timeout(Duration::from_secs(10))
            .expect("walking the slots deadlocked");
        assert_eq!(names, ["kept"]);
        walker.join().unwrap();
    }
}
