//! Reading a request's JSON response body, within the request's deadline and the message size
//! cap: the reply goes back to the caller of `send` directly, and so does the reason when no
//! reply comes out of the body (told once, to that caller only).

use std::io;
use std::pin::pin;
use std::sync::Arc;

use crate::deadline::Deadline;
use crate::errors::{ResponseProblem, excerpt, read_error_bytes};
use crate::inner::Inner;
use crate::request::RequestSpec;
use plexus_jsonrpc::{Message, ReplyScan, RequestId, Response};
use plexus_net::http::{Body, BodyError, Response as HttpResponse};
use plexus_transport::{Received, TransportError};

/// Reads the JSON body of request `id`'s response (to a POST) and gives back the response it
/// holds. A body holding another message (not a response) goes to the reader.
///
/// When no response comes out of it, request `id` fails with why: a body over the size cap or
/// not JSON-RPC is a [`TransportError::DroppedReply`] about `id` (the size is the declared
/// length, or what arrived until the body ended or the deadline passed); a body cut off or late
/// is a [`TransportError::Io`] (counted as a connection failure).
pub(crate) async fn read_json_response(
    inner: &Arc<Inner>,
    mut body: Body,
    id: RequestId,
    deadline: &mut Deadline,
) -> Result<Option<Response>, TransportError> {
    let what = || format!("POST {}", inner.description);
    let limit = inner.max_message_size;
    let read = deadline.run(pin!(body.read_capped(limit))).await;
    let dropped = |reason: TransportError| Err(reason.about_reply(ReplyScan::Reply(id.clone())));
    let too_large = |size: u64| TransportError::TooLarge {
        size: usize::try_from(size).unwrap_or(usize::MAX),
        limit,
    };
    let failed = match read {
        Some(Ok(bytes)) => {
            return match Message::from_slice(&bytes) {
                Ok(Message::Response(response)) => {
                    inner.observe(&response);
                    Ok(Some(response))
                }
                Ok(other) => {
                    let related_request = Some(id.clone());
                    inner
                        .deliver(Ok(Received {
                            message: other,
                            related_request,
                        }))
                        .await;
                    Ok(None)
                }
                Err(e) => dropped(TransportError::protocol(ResponseProblem::NotJsonRpc {
                    what: what(),
                    source: e,
                })),
            };
        }
        Some(Err(BodyError::TooLarge { size })) => return dropped(too_large(size)),
        // Cut short by the deadline while it was counted past the cap.
        None if body.bytes_read() > limit as u64 => return dropped(too_large(body.bytes_read())),
        Some(Err(BodyError::Failed(e))) => io::Error::new(e.kind(), format!("reading the response body failed: {e}")),
        Some(Err(other)) => io::Error::other(format!("reading the response body failed: {other}")),
        None => io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the response body did not arrive within {}", deadline.limit()),
        ),
    };
    Err(TransportError::from_io(what(), failed))
}

/// Reads the answer of a message of the stateless revision to request `id` that came with an
/// error status: a JSON-RPC error body is the request's answer (whatever id it names: a server
/// that could not read the request answers with none), read within
/// [`ERROR_BODY_READ_LIMIT`](crate::config::ERROR_BODY_READ_LIMIT); any other body is a
/// [`TransportError::Http`] with an excerpt of it (what a server of the `initialize` era gives
/// a request outside a session).
pub(crate) async fn read_error_answer(
    inner: &Arc<Inner>,
    response: HttpResponse,
    id: RequestId,
    spec: &RequestSpec,
    deadline: &mut Deadline,
) -> Result<Response, TransportError> {
    let status = response.status.as_u16();
    let bytes = read_error_bytes(response.body, deadline).await;
    if let Ok(Message::Response(Response {
        outcome: Err(error), ..
    })) = Message::from_slice(&bytes)
    {
        return Ok(Response {
            id: Some(id),
            outcome: Err(error),
        });
    }
    Err(TransportError::Http {
        status,
        what: spec.what(inner),
        body: excerpt(&bytes),
    })
}
