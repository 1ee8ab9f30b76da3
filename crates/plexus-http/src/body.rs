//! Reading a request's JSON response body, within the request's deadline and the message size
//! cap: the reply goes back to the caller of `send` directly.

use std::pin::pin;
use std::sync::Arc;

use crate::deadline::Deadline;
use crate::inner::Inner;
use crate::wire::{Body, BodyError};
use plexus_jsonrpc::{Message, RequestId, Response};
use plexus_transport::TransportError;

/// Reads the JSON body of request `id`'s response and gives back the response it holds. When no
/// response comes out of it (too large, cut off, not JSON-RPC, past the deadline), the reader
/// gets the error (when it is about the message) and the request gets a JSON-RPC error that says
/// why. A body holding another message (not a response) goes to the reader.
pub(crate) async fn read_json_response(
    inner: &Arc<Inner>,
    mut body: Body,
    id: RequestId,
    deadline: &mut Deadline,
) -> Option<Response> {
    let limit = inner.max_message_size;
    let read = deadline.run(pin!(body.read_capped(limit))).await;
    let why = match read {
        Some(Ok(bytes)) => match Message::from_slice(&bytes) {
            Ok(Message::Response(response)) => {
                inner.observe(&response);
                return Some(response);
            }
            Ok(other) => {
                inner.deliver(Ok(other)).await;
                return None;
            }
            Err(e) => {
                inner
                    .deliver(Err(TransportError::Protocol { reason: e.to_string() }))
                    .await;
                format!("the response body is not a JSON-RPC message: {e}")
            }
        },
        Some(Err(BodyError::TooLarge)) => {
            // The size read so far: the body is not read past the limit.
            inner
                .deliver(Err(TransportError::TooLarge { size: limit + 1, limit }))
                .await;
            format!("the response body is larger than the {limit}-byte limit; it was discarded")
        }
        Some(Err(BodyError::Failed(e))) => format!("reading the response body failed: {e}"),
        None => format!(
            "the response body did not arrive within {:?} (the per-request timeout)",
            inner.request_timeout
        ),
    };
    Some(inner.failure(&id, &why))
}
