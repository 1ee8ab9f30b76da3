//! Cancelling a request from outside its future: a handle the host keeps, with a reason.

use std::sync::Arc;

use tokio::sync::watch;

/// Cancels the requests it was given to ([`RequestOptions::cancel`](crate::RequestOptions::cancel)),
/// from any task, with a reason the server is told.
///
/// A request whose handle is cancelled before it is sent is not sent; one in flight fails with
/// [`ClientError::Cancelled`](crate::ClientError::Cancelled) once the server has been sent
/// `notifications/cancelled` with the reason (bounded to 1 s), and that notification goes out
/// before any later request of the same session. Dropping the request's future instead still
/// cancels it, with a reason of the client's own.
///
/// One handle may serve several requests; it cancels once (the first reason stays). Clones
/// share the state.
#[derive(Clone, Debug)]
pub struct CancelHandle {
    reason: Arc<watch::Sender<Option<Arc<str>>>>,
}

impl Default for CancelHandle {
    fn default() -> Self {
        CancelHandle::new()
    }
}

impl CancelHandle {
    /// A handle that has not cancelled anything yet.
    pub fn new() -> CancelHandle {
        CancelHandle {
            reason: Arc::new(watch::Sender::new(None)),
        }
    }

    /// Cancels every request given this handle, now and later, for `reason`; whether this call
    /// was the one that cancelled (a second call keeps the first reason).
    pub fn cancel(&self, reason: impl Into<String>) -> bool {
        let reason: Arc<str> = Arc::from(reason.into());
        self.reason.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(reason);
            true
        })
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.reason.borrow().is_some()
    }

    /// The reason given to [`cancel`](Self::cancel), once it was called.
    pub fn reason(&self) -> Option<Arc<str>> {
        self.reason.borrow().clone()
    }

    /// Waits until the handle is cancelled; its reason.
    pub async fn cancelled(&self) -> Arc<str> {
        let mut watching = self.reason.subscribe();
        let reason = watching
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|reason| reason.clone());
        match reason {
            Some(reason) => reason,
            // The sender lives in `self`: it cannot be gone while this waits.
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_reason_stays_and_every_waiter_gets_it() {
        let handle = CancelHandle::new();
        assert!(!handle.is_cancelled());
        let waiter = tokio::spawn({
            let handle = handle.clone();
            async move { handle.cancelled().await }
        });
        tokio::task::yield_now().await;
        assert!(handle.cancel("the user pressed stop"));
        assert!(!handle.cancel("a second reason"));
        assert_eq!(&*waiter.await.unwrap(), "the user pressed stop");
        assert_eq!(handle.reason().as_deref(), Some("the user pressed stop"));
        // A waiter that comes after the cancel returns at once.
        assert_eq!(&*handle.cancelled().await, "the user pressed stop");
    }
}
