//! A request's deadline: one timer, armed the first time the request has to wait and shared by
//! every phase of the request (the headers, the auth provider, the body), so that a request
//! registers at most one timer however many steps it takes.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

use tokio::time::{Instant, Sleep};

/// The deadline of one request.
#[derive(Debug)]
pub(crate) struct Deadline {
    at: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    pub(crate) fn new(at: Instant) -> Self {
        Deadline { at, timer: None }
    }

    /// A deadline `after` from now.
    pub(crate) fn after(after: std::time::Duration) -> Self {
        Self::new(Instant::now() + after)
    }

    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// Runs `future` until it completes (`Some`) or the deadline passes (`None`). A future that
    /// completes at once arms no timer. The future is pinned by the caller (`run(pin!(…))`), so
    /// that it is not moved, nor stored twice in the caller's state.
    pub(crate) async fn run<F: Future>(&mut self, mut future: Pin<&mut F>) -> Option<F::Output> {
        let at = self.at;
        poll_fn(|cx| {
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready(Some(output));
            }
            let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_timer_bounds_every_phase() {
        let mut deadline = Deadline::after(Duration::from_secs(10));
        assert_eq!(deadline.run(pin!(async { 1 })).await, Some(1));
        assert!(deadline.timer.is_none(), "a ready future arms nothing");
        let slept = deadline.run(pin!(tokio::time::sleep(Duration::from_secs(4)))).await;
        assert_eq!(slept, Some(()));
        assert!(deadline.timer.is_some());
        // The second phase gets what is left: 6 s, not 10.
        assert_eq!(
            deadline.run(pin!(tokio::time::sleep(Duration::from_secs(7)))).await,
            None
        );
        assert_eq!(deadline.run(pin!(std::future::pending::<()>())).await, None);
        assert_eq!(
            deadline.run(pin!(async { 2 })).await,
            Some(2),
            "a ready future still completes"
        );
    }
}
