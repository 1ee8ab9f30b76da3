//! A request's deadline: one timer, armed the first time the request has to wait and shared by
//! every phase of the request (the headers, the auth provider, the body), so that a request
//! registers at most one timer however many steps it takes.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use plexus_transport::OutboundMessage;
use tokio::time::{Instant, Sleep};

/// What set a deadline, for the errors of a request that meets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// [`HttpConfig::request_timeout`](crate::HttpConfig::request_timeout).
    RequestTimeout(Duration),
    /// A request's own timeout (its reply timeout) and the grace after it: `total` in all.
    ReplyTimeout {
        /// How long the sender waits for the reply.
        reply: Duration,
        /// That and [`REPLY_TIMEOUT_GRACE`](plexus_transport::REPLY_TIMEOUT_GRACE).
        total: Duration,
    },
    /// [`CLOSE_TIMEOUT`](crate::CLOSE_TIMEOUT), for the `DELETE` that ends the session.
    Close(Duration),
}

impl Limit {
    /// The limit of `message`'s exchange: its reply timeout and a grace when it has one (so that
    /// its sender gives up first and cancels it on the server), else `request_timeout`.
    pub(crate) fn of(message: &OutboundMessage, request_timeout: Duration) -> Limit {
        match message.reply_timeout() {
            Some(reply) => Limit::ReplyTimeout {
                reply,
                total: message.exchange_timeout(request_timeout),
            },
            None => Limit::RequestTimeout(request_timeout),
        }
    }

    fn duration(self) -> Duration {
        match self {
            Limit::RequestTimeout(d) | Limit::Close(d) | Limit::ReplyTimeout { total: d, .. } => d,
        }
    }
}

impl fmt::Display for Limit {
    /// "300ms (the per-request timeout)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::RequestTimeout(d) => write!(f, "{d:?} (the per-request timeout)"),
            Limit::ReplyTimeout { reply, total } => write!(
                f,
                "{total:?} (the request's own timeout of {reply:?} and a grace of {:?})",
                total.saturating_sub(*reply)
            ),
            Limit::Close(d) => write!(f, "{d:?} (the close timeout)"),
        }
    }
}

/// The auth provider took longer than a request's deadline (the cause of the
/// [`TransportError::AuthFailed`](plexus_transport::TransportError::AuthFailed) the request
/// fails with).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProviderTimeout {
    /// It gave no headers in time.
    #[error("the auth provider gave no headers within {0}")]
    Headers(Limit),
    /// It did not decide about a 401 or 403 in time.
    #[error("the auth provider did not answer the HTTP {status} challenge within {limit}")]
    Decision {
        /// 401 or 403.
        status: u16,
        /// The deadline.
        limit: Limit,
    },
}

/// The deadline of one request.
#[derive(Debug)]
pub(crate) struct Deadline {
    at: Instant,
    limit: Limit,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    /// A deadline `limit` from now.
    pub(crate) fn new(limit: Limit) -> Self {
        Deadline {
            at: Instant::now() + limit.duration(),
            limit,
            timer: None,
        }
    }

    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// What set it (its `Display` is what errors say: "300ms (the per-request timeout)").
    pub(crate) fn limit(&self) -> Limit {
        self.limit
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

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_timer_bounds_every_phase() {
        let mut deadline = Deadline::new(Limit::RequestTimeout(Duration::from_secs(10)));
        assert_eq!(deadline.limit().to_string(), "10s (the per-request timeout)");
        let ping = plexus_jsonrpc::Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        let untimed = OutboundMessage::from_message(&ping);
        assert_eq!(
            Limit::of(&untimed, Duration::from_secs(10)),
            Limit::RequestTimeout(Duration::from_secs(10))
        );
        let timed = Limit::of(
            &untimed.with_reply_timeout(Duration::from_secs(90)),
            Duration::from_secs(10),
        );
        assert_eq!(
            timed.to_string(),
            "91s (the request's own timeout of 90s and a grace of 1s)"
        );
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
