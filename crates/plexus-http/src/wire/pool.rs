//! The keep-alive pool of one transport: at most `max_connections` open at once, at most
//! `max_idle` waiting, each waiting at most its idle timeout (a sweeper task closes expired ones
//! while nothing else happens). Connections are handed out last in, first out, and looked at
//! before use: one the server closed while it waited, or that waited past its idle timeout, is
//! dropped. A request whose bytes may have reached the server is never sent again; one that a
//! kept-alive connection refused before any of it was written goes again once on a new
//! connection.

use std::collections::VecDeque;
use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

use super::{Connection, Head, Origin, Request, WireError};

/// The bounds of a pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolLimits {
    pub(crate) max_connections: usize,
    pub(crate) max_idle: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) connect_timeout: Duration,
}

/// The connections of one transport.
#[derive(Debug)]
pub(crate) struct Pool {
    origin: Origin,
    limits: PoolLimits,
    /// One permit per connection that may be open.
    slots: Arc<Semaphore>,
    idle: Mutex<IdleList>,
    /// Checkouts waiting at the cap for a connection to come back.
    waiting: AtomicUsize,
    returned: Notify,
    /// Wakes the sweeper when a connection expires sooner than it planned for.
    sweep: Notify,
    sweeper_started: AtomicBool,
    /// Ends the sweeper (the transport's end).
    cancel: CancellationToken,
}

#[derive(Debug, Default)]
struct IdleList {
    /// Oldest first.
    connections: VecDeque<Connection>,
    closed: bool,
    /// When the sweeper looks next (`None`: it waits for a connection).
    next_sweep: Option<Instant>,
}

impl Pool {
    pub(crate) fn new(origin: Origin, limits: PoolLimits, cancel: CancellationToken) -> Arc<Pool> {
        let limits = PoolLimits {
            max_connections: limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
            ..limits
        };
        Arc::new(Pool {
            origin,
            limits,
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            idle: Mutex::default(),
            waiting: AtomicUsize::new(0),
            returned: Notify::new(),
            sweep: Notify::new(),
            sweeper_started: AtomicBool::new(false),
            cancel,
        })
    }

    /// How many connections are open (in use or idle).
    pub(crate) fn open_connections(&self) -> usize {
        self.limits.max_connections - self.slots.available_permits()
    }

    /// How many connections wait in the pool.
    pub(crate) fn idle_connections(&self) -> usize {
        self.lock().connections.len()
    }

    /// Sends `request` on a pooled connection (or a new one) and reads the response head.
    pub(crate) async fn round_trip(self: &Arc<Self>, request: &Request<'_>) -> Result<(Connection, Head), WireError> {
        let mut connection = self.checkout(true).await?;
        match connection.round_trip(request).await {
            Ok(head) => Ok((connection, head)),
            Err(failed) if connection.served > 0 && failed.unsent => {
                tracing::debug!(
                    "a kept-alive connection failed before any of a request was written ({}); sending it on a new \
                     connection",
                    failed.error
                );
                drop(connection);
                Box::pin(self.round_trip_fresh(request)).await
            }
            Err(failed) => Err(WireError::Exchange(failed.error)),
        }
    }

    /// Sends `request` on a new connection.
    async fn round_trip_fresh(self: &Arc<Self>, request: &Request<'_>) -> Result<(Connection, Head), WireError> {
        let mut fresh = self.checkout(false).await?;
        match fresh.round_trip(request).await {
            Ok(head) => Ok((fresh, head)),
            Err(failed) => Err(WireError::Exchange(failed.error)),
        }
    }

    /// A connection: an idle one (when `reuse`) or a new one, waiting at the cap until one comes
    /// back or closes.
    async fn checkout(self: &Arc<Self>, reuse: bool) -> Result<Connection, WireError> {
        loop {
            if reuse && let Some(connection) = self.take_idle() {
                return Ok(connection);
            }
            match Arc::clone(&self.slots).try_acquire_owned() {
                // Boxed: connecting (DNS, TCP, TLS) is rare and its future large.
                Ok(slot) => return Box::pin(self.open(slot)).await,
                Err(TryAcquireError::Closed) => return Err(closed()),
                Err(TryAcquireError::NoPermits) => {}
            }
            if !reuse {
                // At the cap: the oldest idle connection gives its slot to the new one.
                let oldest = self.lock().connections.pop_front();
                if oldest.is_some() {
                    continue;
                }
            }
            let _waiting = Waiting::new(&self.waiting);
            let waited = async {
                let mut returned = pin!(self.returned.notified());
                returned.as_mut().enable();
                if self.lock().connections.is_empty() {
                    tokio::select! {
                        slot = Arc::clone(&self.slots).acquire_owned() => return Some(slot),
                        () = returned => {}
                    }
                }
                None
            }
            .await;
            match waited {
                Some(Ok(slot)) => return Box::pin(self.open(slot)).await,
                Some(Err(_)) => return Err(closed()),
                None => {}
            }
        }
    }

    /// The most recently used idle connection that is still usable; expired ones and ones the
    /// server closed are dropped on the way.
    fn take_idle(&self) -> Option<Connection> {
        let now = Instant::now();
        loop {
            let mut connection = self.lock().connections.pop_back()?;
            if now.duration_since(connection.idle_since) < connection.idle_timeout && connection.is_alive() {
                return Some(connection);
            }
        }
    }

    async fn open(&self, slot: OwnedSemaphorePermit) -> Result<Connection, WireError> {
        let timeout = self.limits.connect_timeout;
        match tokio::time::timeout(timeout, self.origin.connect()).await {
            Ok(Ok(stream)) => Ok(Connection::new(stream, slot, self.limits.idle_timeout)),
            Ok(Err(e)) => Err(WireError::Connect(e)),
            Err(_) => Err(WireError::ConnectTimeout(timeout)),
        }
    }

    /// Takes back a connection whose response was read whole (`keep_alive` is the server's hint).
    pub(crate) fn checkin(self: &Arc<Self>, mut connection: Connection, keep_alive: Option<Duration>) {
        if !connection.prepare_for_idle(keep_alive) {
            return;
        }
        let expires = connection.idle_since + connection.idle_timeout;
        let mut evicted = None;
        let sooner = {
            let mut idle = self.lock();
            if idle.closed {
                None
            } else {
                if idle.connections.len() >= self.limits.max_idle {
                    evicted = idle.connections.pop_front();
                }
                idle.connections.push_back(connection);
                let sooner = idle.next_sweep.is_none_or(|at| expires < at);
                if sooner {
                    idle.next_sweep = Some(expires);
                }
                Some(sooner)
            }
        };
        drop(evicted);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.returned.notify_one();
        }
        if sooner == Some(true) {
            self.wake_sweeper();
        }
    }

    /// Closes every idle connection; later checkouts fail and checkins close their connection.
    pub(crate) fn close(&self) {
        let connections = {
            let mut idle = self.lock();
            idle.closed = true;
            std::mem::take(&mut idle.connections)
        };
        drop(connections);
        self.slots.close();
    }

    fn wake_sweeper(self: &Arc<Self>) {
        if self.sweeper_started.swap(true, Ordering::SeqCst) {
            self.sweep.notify_one();
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.sweeper_started.store(false, Ordering::SeqCst);
            return;
        };
        let pool = Arc::clone(self);
        let cancel = self.cancel.clone();
        runtime.spawn(async move { cancel.run_until_cancelled(pool.run_sweeper()).await });
    }

    /// Closes idle connections as they expire, until the transport ends.
    async fn run_sweeper(&self) {
        loop {
            let mut woken = pin!(self.sweep.notified());
            woken.as_mut().enable();
            match self.expire(Instant::now()) {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at.into()) => {}
                        () = woken => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// Drops the expired idle connections; the earliest expiry of the others.
    fn expire(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let next = {
            let mut idle = self.lock();
            let mut kept = VecDeque::with_capacity(idle.connections.len());
            for connection in idle.connections.drain(..) {
                if now.duration_since(connection.idle_since) >= connection.idle_timeout {
                    expired.push(connection);
                } else {
                    kept.push_back(connection);
                }
            }
            idle.connections = kept;
            idle.next_sweep = idle.connections.iter().map(|c| c.idle_since + c.idle_timeout).min();
            idle.next_sweep
        };
        if !expired.is_empty() {
            tracing::debug!(
                "closed {} idle connection(s) that waited their idle timeout",
                expired.len()
            );
        }
        next
    }

    fn lock(&self) -> MutexGuard<'_, IdleList> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts a checkout waiting at the cap, until it stops waiting (or is dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn closed() -> WireError {
    WireError::Exchange(io::Error::new(io::ErrorKind::NotConnected, "the transport was closed"))
}
