//! The sending half: one POST per message to the endpoint the server named.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Method};
use plexus_net::http::Target;
use plexus_net::redact::redact_url;
use plexus_transport::{BoxFuture, OutboundMessage, Response, TransportError, TransportSender};
use tokio::sync::Semaphore;
use url::Url;

use crate::config::MAX_ERROR_BODY;
use crate::receiver::Shared;
use crate::request::{Requester, http_error, read_body_prefix};
use plexus_transport::CloseReason;

/// The sending half of an [`SseTransport`](crate::SseTransport).
///
/// Each [`send`](TransportSender::send) POSTs one message (`Content-Type: application/json`) to
/// the endpoint, with the configured headers and the auth provider's, and returns when the server
/// has accepted it (any 2xx; the reply comes on the event stream). Each POST has its own timeout:
/// a request's own ([`OutboundMessage::reply_timeout`]) plus
/// [`REPLY_TIMEOUT_GRACE`](plexus_transport::REPLY_TIMEOUT_GRACE) when it has one (some servers
/// run a call before they answer its POST), else
/// [`SseConfig::request_timeout`](crate::SseConfig::request_timeout); at most
/// [`SseConfig::max_concurrent_posts`](crate::SseConfig::max_concurrent_posts) are in flight, and
/// further sends wait for a slot. A failed POST fails that send only: a 401 or 403 the provider
/// cannot resolve is [`TransportError::NeedsAuth`] or [`TransportError::AuthFailed`], another
/// status is [`TransportError::Http`] with an excerpt of the body, a request that got no answer is
/// [`TransportError::Io`]. Once the transport has ended, sends fail at once with the reason.
pub struct SseSender {
    shared: Arc<Shared>,
    requester: Arc<Requester>,
    endpoint: Target,
    /// `POST <endpoint>`, redacted, for errors.
    what: String,
    request_timeout: Duration,
    posts: Semaphore,
}

impl std::fmt::Debug for SseSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseSender")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl SseSender {
    pub(crate) fn new(
        shared: Arc<Shared>,
        requester: Arc<Requester>,
        endpoint: Target,
        request_timeout: Duration,
        max_concurrent_posts: usize,
    ) -> Self {
        SseSender {
            what: format!("POST {}", redact_url(endpoint.url().as_str())),
            shared,
            requester,
            endpoint,
            request_timeout,
            posts: Semaphore::new(max_concurrent_posts.max(1)),
        }
    }

    /// The endpoint messages are posted to.
    pub fn endpoint(&self) -> &Url {
        self.endpoint.url()
    }

    fn ended_error(&self) -> TransportError {
        self.shared
            .ended()
            .unwrap_or_else(|| TransportError::closed(CloseReason::ByClient))
    }

    /// POSTs one message, all of it (the answer included) within `timeout`.
    async fn post(&self, body: Bytes, timeout: Duration) -> Result<(), TransportError> {
        let headers = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        let exchange = async {
            let (_, mut response) = self
                .requester
                .send(&self.what, &self.endpoint, &Method::POST, &headers, Some(body))
                .await
                .map_err(|failure| failure.into_error(&self.shared.target, &self.what))?;
            let status = response.status;
            if status.is_success() {
                // Reading the (normally tiny) body lets the connection go back to the pool.
                read_body_prefix(&mut response.body, MAX_ERROR_BODY).await;
                Ok(())
            } else {
                Err(http_error(self.what.clone(), response, timeout).await)
            }
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(TransportError::from_io(
                self.what.clone(),
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no complete answer within {timeout:?}"),
                ),
            )),
        }
    }
}

impl TransportSender for SseSender {
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Option<Response>, TransportError>> {
        Box::pin(async move {
            if let Some(ended) = self.shared.ended() {
                return Err(ended);
            }
            // Some servers run a call before they answer its POST: a request's own timeout (and
            // a grace, so that its sender's timer fires first) bounds it, never less.
            let timeout = message.exchange_timeout(self.request_timeout);
            let body = Bytes::from(message.into_json());
            tokio::select! {
                biased;
                () = self.shared.ending.cancelled() => Err(self.ended_error()),
                sent = async {
                    let _slot = self.posts.acquire().await.map_err(|_| self.ended_error())?;
                    self.post(body, timeout).await
                } => sent.map(|()| None),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared.end(TransportError::closed(CloseReason::ByClient));
            tracing::debug!(server = %self.shared.name, "closed the event stream of {}", self.shared.target);
            Ok(())
        })
    }

    fn is_closed(&self) -> bool {
        self.shared.ending.is_cancelled()
    }
}
