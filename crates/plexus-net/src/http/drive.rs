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
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use atomic_waker::AtomicWaker;

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
    /// The task's waker. Not behind a mutex: a thread that woke the task while holding one made
    /// the task, running at once, wait for that thread to let go of it (two more context
    /// switches per request when both share a CPU).
    task: AtomicWaker,
}

impl Wake for Filter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.state.fetch_or(WOKEN, Ordering::AcqRel) & POLLING == 0 {
            self.task.wake();
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
    /// Polls `other`, and unless it is ready, `connection` (unless it has `ended`) and `other`
    /// again, at once as long as one of them woke the task while polled, until `other` is ready,
    /// the connection ends, or both wait for something else.
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
        self.filter.task.register(cx.waker());
        let mut filtered = Context::from_waker(&self.waker);
        // `other` first: what it waits for is often there already (the bytes of a body that came
        // with its head, the body's end), and then the connection need not be polled at all
        // (which spares a whole pass of hyper's dispatcher, two of the five per request). A wake
        // it causes is not lost: the loop polls the connection regardless.
        self.filter.state.store(POLLING, Ordering::Release);
        let first = other(&mut filtered);
        self.filter.state.store(0, Ordering::Release);
        if let Poll::Ready(value) = first {
            return Poll::Ready(Driven::Ready(value));
        }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A task waker that counts its wakes.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Counting {
        /// A counter and a waker that counts into it.
        fn task() -> (Arc<Counting>, Waker) {
            let task = Arc::new(Counting::default());
            (Arc::clone(&task), Waker::from(task))
        }
    }

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A connection that stays open and keeps the waker it was last polled with.
    #[derive(Default)]
    struct Idle(Option<Waker>);

    impl Future for Idle {
        type Output = hyper::Result<()>;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            self.0 = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    /// A driver over an idle connection, polled by a task that counts its wakes.
    struct Harness {
        task: Arc<Counting>,
        waker: Waker,
        driver: Driver,
        connection: Idle,
        ended: Option<Ended>,
    }

    impl Harness {
        fn new() -> Harness {
            let (task, waker) = Counting::task();
            Harness {
                task,
                waker,
                driver: Driver::default(),
                connection: Idle::default(),
                ended: None,
            }
        }

        /// One poll of the driver by the task, with `other` beside the connection.
        fn poll<T>(&mut self, other: impl FnMut(&mut Context<'_>) -> Poll<T>) -> Poll<Driven<T>> {
            let mut cx = Context::from_waker(&self.waker);
            self.driver.poll(&mut cx, &mut self.connection, &mut self.ended, other)
        }

        fn task_wakes(&self) -> usize {
            self.task.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn a_wake_while_polling_is_one_more_poll_and_not_a_wake_of_the_task() {
        let mut harness = Harness::new();
        let mut polls = 0;
        // `other` wakes itself on its first two polls (as a response sent over hyper's channel
        // does) and is ready on its third. The first poll comes before the loop, which polls
        // `other` once regardless; only the wake of the second makes the third happen.
        let driven = harness.poll(|cx| {
            polls += 1;
            if polls < 3 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(7)
            }
        });
        assert!(matches!(driven, Poll::Ready(Driven::Ready(7))));
        assert_eq!(polls, 3);
        assert_eq!(harness.task_wakes(), 0);
    }

    #[test]
    fn what_is_ready_at_once_leaves_the_connection_unpolled() {
        let mut harness = Harness::new();
        let driven = harness.poll(|_| Poll::Ready("frame"));
        assert!(matches!(driven, Poll::Ready(Driven::Ready("frame"))));
        assert!(harness.connection.0.is_none(), "the connection was polled");
        assert_eq!(harness.task_wakes(), 0);
    }

    #[test]
    fn a_wake_from_another_thread_reaches_the_task_once() {
        let mut harness = Harness::new();
        assert!(harness.poll(|_| Poll::<()>::Pending).is_pending());
        // The socket becomes readable: the I/O driver wakes what the connection registered.
        let registered = harness.connection.0.take().expect("the connection was polled");
        std::thread::spawn(move || {
            registered.wake_by_ref();
            registered.wake_by_ref();
        })
        .join()
        .unwrap();
        // The second wake finds the task already woken (and not yet polled again).
        assert_eq!(harness.task_wakes(), 1);
    }
}
