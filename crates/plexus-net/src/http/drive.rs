//! Driving an HTTP/1.1 connection from the task that uses it.
//!
//! hyper's client connection talks to its request and body handles through channels: sending a
//! response wakes whoever waits for it, a body asking for data wakes the connection. When the
//! caller's own task drives the connection, each of those wakes is the task waking itself, which
//! makes the runtime schedule it again for nothing (and on a multi-thread runtime, may wake
//! another worker to steal it). The [`Filter`] waker catches wakes that happen while the task is
//! polling the connection and turns them into one more poll, at once; wakes from elsewhere (the
//! socket becoming readable) go to the task as usual.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

/// Set while the task polls through the filter.
const POLLING: u8 = 1;
/// Set when a wake came while polling.
const WOKEN: u8 = 2;

/// The most polls in a row within one of the task's polls, before it yields to other tasks.
const MAX_POLLS: usize = 32;

/// A waker that forwards to the task's, except while the task itself is polling.
#[derive(Default)]
struct Filter {
    state: AtomicU8,
    task: Mutex<Option<Waker>>,
}

impl Wake for Filter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.state.fetch_or(WOKEN, Ordering::AcqRel) & POLLING == 0
            && let Some(task) = self.task.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
        {
            task.wake_by_ref();
        }
    }
}

/// What polls a connection on behalf of the task that uses it.
pub(crate) struct Driver {
    filter: Arc<Filter>,
    waker: Waker,
}

impl Default for Driver {
    fn default() -> Self {
        let filter = Arc::new(Filter::default());
        let waker = Waker::from(Arc::clone(&filter));
        Driver { filter, waker }
    }
}

/// A connection that finished: closed, or failed with this error.
pub(crate) struct Ended(pub(crate) Option<hyper::Error>);

/// What [`Driver::poll`] gives: `other`'s output, or that the connection ended first.
pub(crate) enum Driven<T> {
    Ready(T),
    /// The connection finished (closed, or failed with this error) and `other` is still
    /// waiting.
    ConnectionEnded(Option<hyper::Error>),
}

impl Driver {
    /// Polls `connection` (unless it has `ended`) and then `other`, again at once as long as
    /// one of them woke the task while polled, until `other` is ready, the connection ends, or
    /// both wait for something else.
    pub(crate) fn poll<C, T>(
        &self,
        cx: &mut Context<'_>,
        connection: &mut C,
        ended: &mut Option<Ended>,
        mut other: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<Driven<T>>
    where
        C: Future<Output = hyper::Result<()>> + Unpin,
    {
        {
            let mut task = self.filter.task.lock().unwrap_or_else(PoisonError::into_inner);
            if !task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        let mut filtered = Context::from_waker(&self.waker);
        for _ in 0..MAX_POLLS {
            self.filter.state.store(POLLING, Ordering::Release);
            if ended.is_none()
                && let Poll::Ready(result) = Pin::new(&mut *connection).poll(&mut filtered)
            {
                *ended = Some(Ended(result.err()));
            }
            let polled = other(&mut filtered);
            let woken = self.filter.state.swap(0, Ordering::AcqRel) & WOKEN != 0;
            if let Poll::Ready(value) = polled {
                return Poll::Ready(Driven::Ready(value));
            }
            if let Some(Ended(error)) = ended {
                // `other` was polled after the connection ended: it will not be woken again.
                return Poll::Ready(Driven::ConnectionEnded(error.take()));
            }
            if !woken {
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
