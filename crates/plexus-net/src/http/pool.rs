//! The connections to one origin: at most `max_connections` open at once, at most `max_idle`
//! HTTP/1.1 connections waiting, each for at most its idle timeout (a sweeper task closes
//! expired ones while nothing else happens), handed out last in, first out and looked at before
//! use; and the origin's HTTP/2 connection, if it speaks HTTP/2, which carries every request.

use std::collections::VecDeque;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

use super::connect::{self, NetStream, Purpose};
use super::drive::{Driver, Ended};
use super::proxy::ProxyEndpoint;
use super::{HttpError, HttpSettings, MAX_HEAD_SIZE, OriginKey};
use crate::tls::TlsOptions;

/// The body of every request: bytes given whole.
pub(crate) type RequestBody = Full<Bytes>;

/// One open HTTP/1.1 connection, owned by whoever uses it (or by the pool while it waits there).
pub(crate) struct H1Conn {
    pub(crate) sender: http1::SendRequest<RequestBody>,
    pub(crate) connection: http1::Connection<TokioIo<NetStream>, RequestBody>,
    /// The connection finished (with its error, if it failed).
    pub(crate) ended: Option<Ended>,
    pub(crate) driver: Driver,
    /// It goes to a proxy that forwards requests in absolute form.
    pub(crate) forwarded: bool,
    /// Exchanges completed on it; a connection that served one is a kept-alive connection.
    pub(crate) served: u32,
    idle_timeout: Duration,
    idle_since: Instant,
    /// Its place under the pool's connection cap, given back when it closes.
    _slot: OwnedSemaphorePermit,
}

impl H1Conn {
    /// Whether it can carry a request: a look at the socket without waiting. A server that
    /// closed it (or sent something unasked) makes it unusable.
    fn is_usable(&mut self) -> bool {
        if self.ended.is_some() || self.sender.is_closed() {
            return false;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(&mut self.connection).poll(&mut cx) {
            Poll::Pending => self.sender.is_ready(),
            Poll::Ready(_) => false,
        }
    }
}

/// A connection for one request.
pub(crate) enum Conn {
    /// Boxed: hyper's connection state is large, and a request moves it several times.
    H1(Box<H1Conn>),
    H2(http2::SendRequest<RequestBody>),
}

/// The bounds and TLS settings of a pool.
#[derive(Debug, Clone)]
struct Limits {
    max_connections: usize,
    max_idle: usize,
    idle_timeout: Duration,
    connect_timeout: Duration,
    http2: bool,
    tls: TlsOptions,
}

/// The connections of one origin.
pub(crate) struct OriginPool {
    origin: OriginKey,
    proxy: Option<Arc<ProxyEndpoint>>,
    limits: Limits,
    /// One permit per connection that may be open.
    slots: Arc<Semaphore>,
    idle: Mutex<IdleList>,
    /// The origin's HTTP/2 connection, once one was negotiated.
    h2: Mutex<Option<http2::SendRequest<RequestBody>>>,
    /// Whether the origin ever spoke HTTP/2 (spares HTTP/1.1 requests the lock above).
    spoke_h2: AtomicBool,
    /// Checkouts waiting at the cap for a connection to come back.
    waiting: AtomicUsize,
    returned: Notify,
    /// Wakes the sweeper when a connection expires sooner than it planned for.
    sweep: Notify,
    sweeper_started: AtomicBool,
    /// Ends the sweeper and the HTTP/2 connection's task.
    cancel: CancellationToken,
}

#[derive(Default)]
struct IdleList {
    /// Oldest first.
    connections: VecDeque<Box<H1Conn>>,
    closed: bool,
    /// When the sweeper looks next (`None`: it has not started).
    next_sweep: Option<Instant>,
}

impl OriginPool {
    pub(crate) fn new(
        origin: OriginKey,
        proxy: Option<Arc<ProxyEndpoint>>,
        settings: &HttpSettings,
    ) -> Arc<OriginPool> {
        let limits = Limits {
            max_connections: settings.max_connections.clamp(1, Semaphore::MAX_PERMITS),
            max_idle: settings.max_idle_connections,
            idle_timeout: settings.idle_timeout,
            connect_timeout: settings.connect_timeout,
            http2: settings.http2,
            tls: settings.tls.clone(),
        };
        Arc::new(OriginPool {
            origin,
            proxy,
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            limits,
            idle: Mutex::default(),
            h2: Mutex::new(None),
            spoke_h2: AtomicBool::new(false),
            waiting: AtomicUsize::new(0),
            returned: Notify::new(),
            sweep: Notify::new(),
            sweeper_started: AtomicBool::new(false),
            cancel: CancellationToken::new(),
        })
    }

    /// The proxy's URL as errors show it, when connections go through one.
    pub(crate) fn proxy_shown(&self) -> Option<&str> {
        self.proxy.as_deref().map(|proxy| proxy.shown.as_str())
    }

    /// The `Proxy-Authorization` of the proxy requests are forwarded through.
    pub(crate) fn proxy_authorization(&self) -> Option<&http::HeaderValue> {
        self.proxy.as_ref()?.authorization.as_ref()
    }

    /// How many connections are open (in use or idle).
    pub(crate) fn open_connections(&self) -> usize {
        if self.slots.is_closed() {
            return 0;
        }
        self.limits.max_connections - self.slots.available_permits()
    }

    /// How many connections wait in the pool.
    pub(crate) fn idle_connections(&self) -> usize {
        self.lock().connections.len()
    }

    /// A connection: the origin's HTTP/2 connection, an idle one (when `reuse`) or a new one,
    /// waiting at the cap until one comes back or closes.
    pub(crate) async fn checkout(self: &Arc<Self>, reuse: bool) -> Result<Conn, HttpError> {
        // The common case, without a wait: a kept-alive connection (the rest is boxed, so that
        // the future of every request stays small).
        if let Some(h2) = self.h2_sender() {
            return Ok(Conn::H2(h2));
        }
        if reuse && let Some(connection) = self.take_idle() {
            return Ok(Conn::H1(connection));
        }
        Box::pin(self.checkout_slow(reuse)).await
    }

    /// [`checkout`](Self::checkout) when no connection is at hand.
    async fn checkout_slow(self: &Arc<Self>, reuse: bool) -> Result<Conn, HttpError> {
        loop {
            if let Some(h2) = self.h2_sender() {
                return Ok(Conn::H2(h2));
            }
            if reuse && let Some(connection) = self.take_idle() {
                return Ok(Conn::H1(connection));
            }
            match Arc::clone(&self.slots).try_acquire_owned() {
                Ok(slot) => return self.open(slot).await,
                Err(TryAcquireError::Closed) => return Err(HttpError::Closed),
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
                Some(Ok(slot)) => return self.open(slot).await,
                Some(Err(_)) => return Err(HttpError::Closed),
                None => {}
            }
        }
    }

    /// The origin's HTTP/2 connection, while it is open.
    fn h2_sender(&self) -> Option<http2::SendRequest<RequestBody>> {
        if !self.spoke_h2.load(Ordering::Acquire) {
            return None;
        }
        let mut h2 = self.h2.lock().unwrap_or_else(PoisonError::into_inner);
        match h2.as_ref() {
            Some(sender) if !sender.is_closed() => Some(sender.clone()),
            Some(_) => {
                *h2 = None;
                None
            }
            None => None,
        }
    }

    /// The most recently used idle connection that is still usable; expired ones and ones the
    /// server closed are dropped on the way.
    fn take_idle(&self) -> Option<Box<H1Conn>> {
        let now = Instant::now();
        loop {
            let mut connection = self.lock().connections.pop_back()?;
            if now.duration_since(connection.idle_since) < connection.idle_timeout && connection.is_usable() {
                return Some(connection);
            }
        }
    }

    /// Opens a connection (within the connect timeout) and makes it HTTP/1.1 or, when the
    /// server chose it, HTTP/2.
    async fn open(&self, slot: OwnedSemaphorePermit) -> Result<Conn, HttpError> {
        let timeout = self.limits.connect_timeout;
        let purpose = Purpose::Requests { h2: self.limits.http2 };
        let opening = connect::open(&self.origin, self.proxy.as_deref(), purpose, &self.limits.tls);
        let opened = match tokio::time::timeout(timeout, opening).await {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => return Err(HttpError::Connect(e)),
            Err(_) => return Err(HttpError::ConnectTimeout(timeout)),
        };
        let io = TokioIo::new(opened.stream);
        if io.inner().is_h2() {
            return self.start_h2(io, slot).await;
        }
        let (sender, connection) = http1::Builder::new()
            .max_header_size(MAX_HEAD_SIZE)
            // (`max_headers` is not set: hyper's default is MAX_HEADERS, and setting it makes
            // hyper allocate the header table on every response instead of using its stack.)
            .allow_obsolete_multiline_headers_in_responses(true)
            .handshake(io)
            .await
            .map_err(HttpError::Handshake)?;
        Ok(Conn::H1(Box::new(H1Conn {
            sender,
            connection,
            ended: None,
            driver: Driver::default(),
            forwarded: opened.forwarded,
            served: 0,
            idle_timeout: self.limits.idle_timeout,
            idle_since: Instant::now(),
            _slot: slot,
        })))
    }

    /// Runs an HTTP/2 connection in a task of its own (holding its slot) and makes it the
    /// origin's.
    async fn start_h2(&self, io: TokioIo<NetStream>, slot: OwnedSemaphorePermit) -> Result<Conn, HttpError> {
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_header_list_size(MAX_HEAD_SIZE as u32)
            .handshake(io)
            .await
            .map_err(HttpError::Handshake)?;
        let cancel = self.cancel.clone();
        tokio::spawn(async move {
            let _slot = slot;
            if let Some(Err(e)) = cancel.run_until_cancelled(connection).await {
                tracing::debug!("an HTTP/2 connection ended: {}", super::error::cause(&e));
            }
        });
        *self.h2.lock().unwrap_or_else(PoisonError::into_inner) = Some(sender.clone());
        self.spoke_h2.store(true, Ordering::Release);
        Ok(Conn::H2(sender))
    }

    /// Opens a byte stream for another protocol (the WebSocket upgrade).
    pub(crate) async fn open_stream(&self) -> Result<NetStream, HttpError> {
        let timeout = self.limits.connect_timeout;
        let opening = connect::open(&self.origin, self.proxy.as_deref(), Purpose::Stream, &self.limits.tls);
        match tokio::time::timeout(timeout, opening).await {
            Ok(Ok(opened)) => Ok(opened.stream),
            Ok(Err(e)) => Err(HttpError::Connect(e)),
            Err(_) => Err(HttpError::ConnectTimeout(timeout)),
        }
    }

    /// Takes back a connection whose response was read whole (`keep_alive` is the server's
    /// hint, `Keep-Alive: timeout=N`).
    pub(crate) fn checkin(self: &Arc<Self>, mut connection: Box<H1Conn>, keep_alive: Option<Duration>) {
        if connection.ended.is_some() {
            return;
        }
        if let Some(hint) = keep_alive {
            // Give up a second before the server does, so that a request never races its close.
            let Some(shorter) = hint.checked_sub(Duration::from_secs(1)).filter(|d| !d.is_zero()) else {
                return;
            };
            connection.idle_timeout = connection.idle_timeout.min(shorter);
        }
        connection.served += 1;
        connection.idle_since = Instant::now();
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

    /// Closes every idle connection and the HTTP/2 connection; later checkouts fail and
    /// checkins close their connection.
    pub(crate) fn close(&self) {
        let connections = {
            let mut idle = self.lock();
            idle.closed = true;
            std::mem::take(&mut idle.connections)
        };
        drop(connections);
        self.h2.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.cancel.cancel();
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
        runtime.spawn(async move { cancel.run_until_cancelled(run_sweeper(pool)).await });
    }

    /// Drops the expired idle connections; when to look again: the earliest expiry of the others,
    /// or with none idle, one idle timeout from `now` (no connection checked in from now on
    /// expires sooner, unless its server asked for less; a checkin then wakes the sweeper). Never
    /// "no sweep planned": a checkin would wake the sweeper each time, and a connection that is
    /// back in use whenever the sweeper runs would keep it so (one task wake per request).
    fn expire(&self, now: Instant) -> Instant {
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
            let earliest = idle.connections.iter().map(|c| c.idle_since + c.idle_timeout).min();
            let next = earliest.unwrap_or(now + self.limits.idle_timeout);
            idle.next_sweep = Some(next);
            next
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

/// Closes idle connections as they expire, until the pool closes.
async fn run_sweeper(pool: Arc<OriginPool>) {
    loop {
        let mut woken = pin!(pool.sweep.notified());
        woken.as_mut().enable();
        let at = pool.expire(Instant::now());
        tokio::select! {
            () = tokio::time::sleep_until(at.into()) => {}
            () = woken => {}
        }
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
