//! The sending half: one POST per message, and the `DELETE` that ends the session on close.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::body::{read_error_answer, read_json_response};
use crate::config::CLOSE_TIMEOUT;
use crate::deadline::{Deadline, Limit};
use crate::errors::ResponseProblem;
use crate::errors::error_body;
use crate::inner::{Counted, Inner, closed_by_client};
use crate::request::RequestSpec;
use crate::stream::read_post_stream;
use crate::{Handle, SessionInfo};
use plexus_jsonrpc::{RequestId, Response};
use plexus_net::http::Response as HttpResponse;
use plexus_transport::{BoxFuture, OutboundKind, OutboundMessage, TransportError, TransportSender};

/// The method whose acceptance starts the standalone event stream.
const INITIALIZED: &str = "notifications/initialized";

/// The notification with which a sender gives up on a request.
const CANCELLED: &str = "notifications/cancelled";

/// The sending half of an [`HttpTransport`](crate::HttpTransport), shared by every caller.
///
/// [`send`](TransportSender::send) POSTs the message. For a request answered with a JSON body it
/// reads the body and gives the response back; for one answered with an SSE stream it returns
/// once the response headers are in (a background task then reads the stream into the
/// receiver). Many requests are in flight at once over the pooled connections. For a
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
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Option<Response>, TransportError>> {
        Box::pin(self.inner.post(message))
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.inner.close_with(closed_by_client());
            self.inner.end_session().await;
            self.inner.client.close();
            Ok(())
        })
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn carries_headers(&self) -> bool {
        true
    }

    /// The `Mcp-Session-Id` the server gave (the `initialize` era's), while there is one.
    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }
}

impl Inner {
    /// POSTs one message (see [`HttpSender`]).
    async fn post(self: &Arc<Self>, mut message: OutboundMessage) -> Result<Option<Response>, TransportError> {
        self.check_open()?;
        // A message with a protocol version of its own is one of the stateless revision.
        let stateless = message.protocol_version().is_some();
        let headers = message.take_headers();
        let _in_flight = Counted::new(self, |inner| &inner.requests_in_flight);
        // A request's own timeout, with a grace, when it has one: its sender's timer fires first
        // and cancels it on the server. Everything else is bounded by the request timeout.
        let mut deadline = Deadline::new(Limit::of(&message, self.request_timeout));
        let timed = message.reply_timeout().is_some();
        let kind = message.kind().clone();
        if let OutboundKind::Notification { method } = &kind
            && method == CANCELLED
            && let Some(id) = cancelled_request(message.json())
        {
            // Its sender gave up on it: a server may keep its response stream open regardless.
            self.post_streams.cancel(&id);
            if stateless {
                // The stateless revision cancels a request by closing its stream: that was all.
                return Ok(None);
            }
        }
        let initialize = match &kind {
            OutboundKind::Request { id, method } if method == "initialize" => {
                self.expect_initialize(id);
                true
            }
            _ => false,
        };
        let spec = if headers.is_empty() {
            RequestSpec::post(message.into_json(), initialize)
        } else {
            RequestSpec::post_with_headers(message.into_json(), headers, stateless)
        };
        let response = self.execute(&spec, &mut deadline).await?;
        if initialize {
            self.take_session_id(&response.headers)?;
        }
        if !response.status.is_success() {
            // A message of the stateless revision answered with an error status.
            return match kind {
                OutboundKind::Request { id, .. } => read_error_answer(self, response, id, &spec, &mut deadline)
                    .await
                    .map(Some),
                _ => Err(TransportError::Http {
                    status: response.status.as_u16(),
                    what: spec.what(self),
                    body: error_body(response.body, &mut deadline).await,
                }),
            };
        }
        match kind {
            OutboundKind::Request { id, .. } => {
                self.read_response(response, id, &mut deadline, timed, spec.stateless)
                    .await
            }
            OutboundKind::Notification { method } => {
                if method == INITIALIZED {
                    // Servers send requests not tied to a call (an elicitation, a sampling request)
                    // on the event stream: the session must not go on before it is open, or such a
                    // request can be sent before there is a stream to carry it.
                    self.start_event_stream();
                    Box::pin(self.event_stream_answered(deadline.at())).await;
                }
                Ok(None)
            }
            OutboundKind::Response { .. } => Ok(None),
        }
    }

    /// Keeps the `Mcp-Session-Id` of an `initialize` response (none means a session-less server).
    fn take_session_id(&self, headers: &http::HeaderMap) -> Result<(), TransportError> {
        let Some(bytes) = headers.get("mcp-session-id").map(http::HeaderValue::as_bytes) else {
            self.set_session_id(None);
            return Ok(());
        };
        if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(TransportError::protocol(ResponseProblem::SessionId {
                server: self.description.clone(),
            }));
        }
        let id = String::from_utf8_lossy(bytes).into_owned();
        tracing::debug!(server = %self.name, "the server opened session {id}");
        self.set_session_id(Some(id));
        Ok(())
    }

    /// Reads a JSON response at once and gives it back (it follows its headers; no task is worth
    /// spawning for it), and hands an SSE stream to a background reader, bounded by `deadline`
    /// when the request has a timeout of its own (`timed`), and not resumed when the request is
    /// of the stateless revision.
    async fn read_response(
        self: &Arc<Self>,
        response: HttpResponse,
        id: RequestId,
        deadline: &mut Deadline,
        timed: bool,
        stateless: bool,
    ) -> Result<Option<Response>, TransportError> {
        let mime = response.mime();
        if mime.eq_ignore_ascii_case("application/json") {
            read_json_response(self, response.body, id, deadline).await
        } else if mime.eq_ignore_ascii_case("text/event-stream") {
            let inner = Arc::clone(self);
            let until = timed.then(|| (deadline.at(), deadline.limit()));
            let body = response.body;
            self.spawn(async move { read_post_stream(inner, body, id, until, stateless).await });
            Ok(None)
        } else if matches!(response.status.as_u16(), 202 | 204) || response.body.declared_length() == Some(0) {
            // No body: the response will come on the event stream.
            Ok(None)
        } else {
            Err(TransportError::protocol(ResponseProblem::ContentType {
                server: self.description.clone(),
                status: response.status.as_u16(),
                content_type: response
                    .header_str(http::header::CONTENT_TYPE)
                    .unwrap_or_default()
                    .to_owned(),
            }))
        }
    }

    /// Sends the `DELETE` that ends the session, once, within [`CLOSE_TIMEOUT`]; a 405 (the
    /// server does not let clients end sessions) and any failure are only logged.
    pub(crate) async fn end_session(self: &Arc<Self>) {
        if self.session_ended.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(id) = self.session_id() else { return };
        match self
            .execute(&RequestSpec::delete(), &mut Deadline::new(Limit::Close(CLOSE_TIMEOUT)))
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

/// The id of the request a `notifications/cancelled` names, if it names one.
fn cancelled_request(json: &[u8]) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct Cancelled {
        params: Params,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "requestId")]
        request_id: RequestId,
    }
    serde_json::from_slice::<Cancelled>(json)
        .ok()
        .map(|c| c.params.request_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_names_its_request() {
        let cancelled =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}"#;
        assert_eq!(cancelled_request(cancelled), Some(RequestId::Number(7)));
        let named = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#;
        assert_eq!(cancelled_request(named), Some(RequestId::from("a")));
        assert_eq!(
            cancelled_request(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#),
            None
        );
    }
}
