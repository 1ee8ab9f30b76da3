//! Reading a request's JSON response body into the receiver, within the request's deadline and
//! the message size cap.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use plexus_jsonrpc::{Message, RequestId};
use plexus_transport::TransportError;
use tokio::time::Instant;

use crate::errors::io_error;
use crate::inner::Inner;

/// Why a body could not be read whole.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// It is larger than the cap (declared or as read); reading stopped at the cap.
    TooLarge,
    /// The connection failed.
    Failed(std::io::Error),
}

/// Reads a whole body, but never more than `limit` bytes (a body that declares more is not read
/// at all). A body that arrives in one chunk is kept without a copy.
pub(crate) async fn read_capped(response: &mut reqwest::Response, limit: usize) -> Result<Bytes, BodyError> {
    if response.content_length().is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut single: Option<Bytes> = None;
    let mut joined = BytesMut::new();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(single.unwrap_or_else(|| joined.freeze())),
            Err(e) => return Err(BodyError::Failed(io_error(&e))),
        };
        if single.as_ref().map_or(0, Bytes::len) + joined.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge);
        }
        match single.take() {
            None if joined.is_empty() => single = Some(chunk),
            None => joined.extend_from_slice(&chunk),
            Some(first) => {
                joined.reserve(first.len() + chunk.len());
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&chunk);
            }
        }
    }
}

/// Reads the JSON body of request `id`'s response and delivers the message it holds. When no
/// message comes out of it (too large, cut off, not JSON-RPC, past the deadline), the reader
/// gets the error (when it is about the message) and request `id` fails with a JSON-RPC error.
pub(crate) async fn read_json_response(
    inner: Arc<Inner>,
    mut response: reqwest::Response,
    id: RequestId,
    deadline: Instant,
) {
    let limit = inner.max_message_size;
    let read = tokio::time::timeout_at(deadline, read_capped(&mut response, limit)).await;
    let why = match read {
        Ok(Ok(body)) => match Message::from_slice(&body) {
            Ok(message) => {
                inner.deliver(Ok(message)).await;
                return;
            }
            Err(e) => {
                let error = TransportError::Protocol { reason: e.to_string() };
                let why = format!("the response body is not a JSON-RPC message: {e}");
                if !inner.deliver(Err(error)).await {
                    return;
                }
                why
            }
        },
        Ok(Err(BodyError::TooLarge)) => {
            if !inner.deliver(Err(TransportError::TooLarge { limit })).await {
                return;
            }
            format!("the response body is larger than the {limit}-byte limit; it was discarded")
        }
        Ok(Err(BodyError::Failed(e))) => format!("reading the response body failed: {e}"),
        Err(_) => format!(
            "the response body did not arrive within {:?} (the per-request timeout)",
            inner.request_timeout
        ),
    };
    inner.fail_request(&id, &why).await;
}
