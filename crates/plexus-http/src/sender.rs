//! The sending half: one POST per message, and the `DELETE` that ends the session on close.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use plexus_transport::{BoxFuture, OutboundKind, OutboundMessage, TransportError, TransportSender};
use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use tokio::time::Instant;

use crate::body::read_json_response;
use crate::config::CLOSE_TIMEOUT;
use crate::inner::{Counted, Inner, closed_by_client};
use crate::request::{MCP_SESSION_ID, RequestSpec};
use crate::stream::read_post_stream;
use crate::{Handle, SessionInfo};

/// The method whose acceptance starts the standalone event stream.
const INITIALIZED: &str = "notifications/initialized";

/// The sending half of an [`HttpTransport`](crate::HttpTransport), shared by every caller.
///
/// [`send`](TransportSender::send) POSTs the message. For a request it returns once the response
/// headers are in (a background task then reads the JSON body or the SSE stream into the
/// receiver), so that many requests are in flight at once over the pooled connections; for a
/// notification or a response it returns once the server accepted it (202).
pub struct HttpSender {
    inner: Arc<Inner>,
    _handle: Arc<Handle>,
}

impl std::fmt::Debug for HttpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSender")
            .field("url", &self.inner.description)
            .finish_non_exhaustive()
    }
}

impl HttpSender {
    pub(crate) fn new(inner: Arc<Inner>, handle: Arc<Handle>) -> Self {
        HttpSender { inner, _handle: handle }
    }

    /// The session's state (its id, the negotiated version, the event stream, counters); the
    /// handle stays valid after the transport ends.
    pub fn info(&self) -> SessionInfo {
        SessionInfo::new(Arc::clone(&self.inner))
    }
}

impl TransportSender for HttpSender {
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(self.inner.post(message))
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.inner.close_with(closed_by_client());
            self.inner.end_session().await;
            Ok(())
        })
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

impl Inner {
    /// POSTs one message (see [`HttpSender`]).
    async fn post(self: &Arc<Self>, message: OutboundMessage) -> Result<(), TransportError> {
        self.check_open()?;
        let _in_flight = Counted::new(self, |inner| &inner.requests_in_flight);
        let deadline = Instant::now() + self.request_timeout;
        let kind = message.kind().clone();
        let initialize = match &kind {
            OutboundKind::Request { id, method } if method == "initialize" => {
                self.expect_initialize(id);
                true
            }
            _ => false,
        };
        let response = self
            .execute(
                &RequestSpec::post(Bytes::from(message.into_json()), initialize),
                deadline,
            )
            .await?;
        if initialize {
            self.take_session_id(&response)?;
        }
        match kind {
            OutboundKind::Request { id, .. } => self.read_response(response, id, deadline).await,
            OutboundKind::Notification { method } => {
                if method == INITIALIZED {
                    // Servers send requests not tied to a call (an elicitation, a sampling request)
                    // on the event stream: the session must not go on before it is open, or such a
                    // request can be sent before there is a stream to carry it.
                    self.start_event_stream();
                    self.event_stream_answered(deadline).await;
                }
                Ok(())
            }
            OutboundKind::Response { .. } => Ok(()),
        }
    }

    /// Keeps the `Mcp-Session-Id` of an `initialize` response (none means a session-less server).
    fn take_session_id(&self, response: &reqwest::Response) -> Result<(), TransportError> {
        let Some(value) = response.headers().get(MCP_SESSION_ID) else {
            self.set_session_id(None);
            return Ok(());
        };
        let bytes = value.as_bytes();
        if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(TransportError::Protocol {
                reason: format!(
                    "the Mcp-Session-Id header of the initialize response of {} is empty or has characters \
                     outside visible ASCII",
                    self.description
                ),
            });
        }
        let id = String::from_utf8_lossy(bytes).into_owned();
        tracing::debug!(server = %self.name, "the server opened session {id}");
        self.set_session_id(Some((id, value.clone())));
        Ok(())
    }

    /// Reads a JSON response at once (it follows its headers; no task is worth spawning for it)
    /// and hands an SSE stream to a background reader.
    async fn read_response(
        self: &Arc<Self>,
        response: reqwest::Response,
        id: plexus_jsonrpc::RequestId,
        deadline: Instant,
    ) -> Result<(), TransportError> {
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let mime = content_type.split(';').next().unwrap_or_default().trim();
        if mime.eq_ignore_ascii_case("text/event-stream") {
            let inner = Arc::clone(self);
            self.spawn(async move { read_post_stream(inner, response, id).await });
        } else if mime.eq_ignore_ascii_case("application/json") {
            read_json_response(Arc::clone(self), response, id, deadline).await;
        } else if status == StatusCode::ACCEPTED
            || status == StatusCode::NO_CONTENT
            || response.content_length() == Some(0)
        {
            // No body: the response will come on the event stream.
        } else {
            return Err(TransportError::Protocol {
                reason: format!(
                    "POST {} answered HTTP {} with content type {content_type:?}; expected application/json or \
                     text/event-stream",
                    self.description,
                    status.as_u16()
                ),
            });
        }
        Ok(())
    }

    /// Sends the `DELETE` that ends the session, once, within [`CLOSE_TIMEOUT`]; a 405 (the
    /// server does not let clients end sessions) and any failure are only logged.
    pub(crate) async fn end_session(self: &Arc<Self>) {
        if self.session_ended.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some((id, _)) = self.session_id() else { return };
        match self
            .execute(&RequestSpec::delete(), Instant::now() + CLOSE_TIMEOUT)
            .await
        {
            Ok(_) => tracing::debug!(server = %self.name, "ended session {id}"),
            Err(TransportError::Http { status: 405, .. }) => {
                tracing::debug!(server = %self.name, "the server does not let clients end session {id} (405)");
            }
            Err(e) => tracing::debug!(server = %self.name, "could not end session {id}: {e}"),
        }
    }
}
