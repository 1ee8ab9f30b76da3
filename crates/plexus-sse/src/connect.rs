//! Opening the event stream and waiting for the `endpoint` event.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Method};
use plexus_net::http::Body;
use plexus_transport::{Message, TransportError};
use url::Url;

use crate::config::{MAX_EARLY_MESSAGES, SseConfig};
use plexus_net::endpoint::resolve_endpoint;
use plexus_net::redact::redact_url;
use plexus_net::sse::Decoded;

use crate::receiver::{Events, Shared, SseReceiver, decode_message};
use crate::request::{Failure, Requester, http_error};
use crate::sender::SseSender;

/// The halves of a connected transport.
pub(crate) struct Connected {
    pub(crate) target: String,
    pub(crate) sender: SseSender,
    pub(crate) receiver: SseReceiver,
}

/// Why the legacy SSE transport could not connect, in its own words (the reason of its
/// [`TransportError::Connect`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseConnectError {
    /// The event stream's `GET` had no answer within the connect timeout.
    #[error("the server did not answer the event stream's GET within {0:?}")]
    NoAnswer(Duration),
    /// The `GET` was answered with a redirect that cannot be followed.
    #[error("the server answered the GET with HTTP {0} without a usable Location header")]
    RedirectWithoutLocation(u16),
    /// The `GET` was answered with something else than an event stream.
    #[error(
        "the server answered the GET with Content-Type {content_type:?}, not text/event-stream (a server of the \
         newer Streamable HTTP transport needs the type `http`)"
    )]
    NotAnEventStream {
        /// The server's `Content-Type` (peer text).
        content_type: String,
    },
    /// No `endpoint` event within the endpoint timeout.
    #[error("the server sent no endpoint event within {0:?} of opening the event stream")]
    NoEndpoint(Duration),
    /// Too many messages came before the `endpoint` event.
    #[error("the server sent more than {MAX_EARLY_MESSAGES} messages before its endpoint event")]
    TooManyEarlyMessages,
    /// The event stream broke before the `endpoint` event.
    #[error("the event stream failed before the endpoint event")]
    StreamFailed(#[source] io::Error),
    /// The event stream ended before the `endpoint` event.
    #[error("the server closed the event stream before sending the endpoint event")]
    ClosedBeforeEndpoint,
}

/// Opens the event stream, waits for the endpoint and checks it (see the crate docs).
pub(crate) async fn connect(config: SseConfig) -> Result<Connected, TransportError> {
    let target = redact_url(&config.endpoint.url);
    let fail = |cause: SseConnectError| plexus_net::connect_error(&config.endpoint.url, cause);
    let url = Url::parse(&config.endpoint.url)
        .map_err(|e| plexus_net::connect_error(&config.endpoint.url, plexus_net::ConnectProblem::InvalidUrl(e)))?;
    plexus_net::require_scheme(&config.endpoint.url, url.scheme(), &["http", "https"], "SSE")?;
    let requester = Arc::new(Requester::new(&config)?);
    let stream_target = requester
        .target(&url)
        .map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
    let what = format!("GET {target}");
    let headers = [
        (ACCEPT, HeaderValue::from_static("text/event-stream")),
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ];
    let get = requester.send(&what, &stream_target, &Method::GET, &headers, None);
    let (stream_url, response) = tokio::time::timeout(config.endpoint.connect_timeout, get)
        .await
        .map_err(|_| fail(SseConnectError::NoAnswer(config.endpoint.connect_timeout)))?
        .map_err(|failure| match failure {
            Failure::Exchange(e) => e.into_connect_error(&config.endpoint.url),
            other => other.into_error(&target, &what),
        })?;
    let status = response.status;
    if status.is_redirection() {
        return Err(fail(SseConnectError::RedirectWithoutLocation(status.as_u16())));
    }
    if !status.is_success() {
        return Err(http_error(what, response, config.endpoint.connect_timeout).await);
    }
    let content_type = response
        .headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("text/event-stream") {
        return Err(fail(SseConnectError::NotAnEventStream { content_type }));
    }
    let mut body = response.body;
    let mut events = Events::new(config.endpoint.max_message_size);
    let mut early = VecDeque::new();
    let endpoint_data = tokio::time::timeout(
        config.endpoint_timeout,
        wait_for_endpoint(&mut body, &mut events, &mut early),
    )
    .await
    .map_err(|_| fail(SseConnectError::NoEndpoint(config.endpoint_timeout)))?
    .map_err(fail)?;
    let endpoint = resolve_endpoint(&stream_url, &endpoint_data)
        .map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
    let endpoint_target = requester
        .target(&endpoint)
        .map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
    tracing::debug!(server = %config.endpoint.name, "the event stream of {target} names the endpoint {}", redact_url(endpoint.as_str()));
    let shared = Arc::new(Shared::new(config.endpoint.name, target.clone(), body));
    Ok(Connected {
        target,
        sender: SseSender::new(
            Arc::clone(&shared),
            requester,
            endpoint_target,
            config.request_timeout,
            config.max_concurrent_posts,
        ),
        receiver: SseReceiver::new(events, early, shared),
    })
}

/// Reads events until the `endpoint` event and returns its data. `message` events before it are
/// kept (at most [`MAX_EARLY_MESSAGES`]); other events are ignored.
async fn wait_for_endpoint(
    body: &mut Body,
    events: &mut Events,
    early: &mut VecDeque<Result<Message, TransportError>>,
) -> Result<Vec<u8>, SseConnectError> {
    loop {
        while let Some(decoded) = events.next() {
            let kept = match decoded {
                Decoded::Event(event) if event.event_type == "endpoint" => return Ok(event.data),
                Decoded::Event(event) if event.is_message() => decode_message(&event),
                Decoded::Event(_) => continue,
                Decoded::TooLarge { size, reply } => Err(TransportError::TooLarge {
                    size,
                    limit: events.max_message_size(),
                }
                .about_reply(reply)),
            };
            if early.len() == MAX_EARLY_MESSAGES {
                return Err(SseConnectError::TooManyEarlyMessages);
            }
            early.push_back(kept);
        }
        match body.chunk().await {
            Ok(Some(chunk)) => events.feed(chunk),
            Err(e) => return Err(SseConnectError::StreamFailed(e)),
            Ok(None) => return Err(SseConnectError::ClosedBeforeEndpoint),
        }
    }
}
