//! Opening the event stream and waiting for the `endpoint` event.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::Arc;

use plexus_transport::{Message, TransportError};
use reqwest::Url;
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};

use crate::config::{MAX_EARLY_MESSAGES, SseConfig};
use plexus_net::redact::redact_url;
use plexus_net::sse::Decoded;

use crate::receiver::{BodyStream, Events, Shared, SseReceiver, decode_message};
use crate::request::{Requester, error_chain, http_error, redirect_refused};
use crate::sender::SseSender;
use crate::target::{origin, same_origin};

/// The halves of a connected transport.
pub(crate) struct Connected {
    pub(crate) target: String,
    pub(crate) sender: SseSender,
    pub(crate) receiver: SseReceiver,
}

/// Opens the event stream, waits for the endpoint and checks it (see the crate docs).
pub(crate) async fn connect(config: SseConfig) -> Result<Connected, TransportError> {
    let target = redact_url(&config.url);
    let fail = |reason: String| plexus_net::connect_error(&config.url, reason);
    let url = Url::parse(&config.url).map_err(|e| fail(format!("the URL is not valid: {e}")))?;
    plexus_net::require_scheme(&config.url, url.scheme(), &["http", "https"], "SSE")?;
    let requester = Arc::new(Requester::new(&config).map_err(&fail)?);
    let what = format!("GET {target}");
    let get = requester.send(
        &what,
        ("GET", &url),
        |headers| {
            requester
                .client
                .get(url.clone())
                .headers(headers)
                .header(ACCEPT, "text/event-stream")
                .header(CACHE_CONTROL, "no-cache")
        },
        |e| fail(error_chain(&e)),
    );
    let response = tokio::time::timeout(config.connect_timeout, get).await.map_err(|_| {
        fail(format!(
            "the server did not answer the event stream's GET within {:?}",
            config.connect_timeout
        ))
    })??;
    let status = response.status();
    if status.is_redirection() {
        return Err(redirect_refused(&target, &url, &response));
    }
    if !status.is_success() {
        return Err(http_error(what, response, config.connect_timeout).await);
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("text/event-stream") {
        return Err(fail(format!(
            "the server answered the GET with Content-Type {content_type:?}, not text/event-stream (a server of the \
             newer Streamable HTTP transport needs the type `http`)"
        )));
    }
    let stream_url = response.url().clone();
    let mut body: BodyStream = Box::pin(response.bytes_stream());
    let mut events = Events::new(config.max_event_size);
    let mut early = VecDeque::new();
    let endpoint_data = tokio::time::timeout(
        config.endpoint_timeout,
        wait_for_endpoint(&mut body, &mut events, &mut early),
    )
    .await
    .map_err(|_| {
        fail(format!(
            "the server sent no endpoint event within {:?} of opening the event stream",
            config.endpoint_timeout
        ))
    })?
    .map_err(&fail)?;
    let endpoint = resolve_endpoint(&stream_url, &endpoint_data).map_err(&fail)?;
    tracing::debug!(server = %config.name, "the event stream of {target} names the endpoint {}", redact_url(endpoint.as_str()));
    let shared = Arc::new(Shared::new(config.name, target.clone(), body));
    Ok(Connected {
        target,
        sender: SseSender::new(
            Arc::clone(&shared),
            requester,
            endpoint,
            config.request_timeout,
            config.max_concurrent_posts,
        ),
        receiver: SseReceiver::new(events, early, shared),
    })
}

/// Reads events until the `endpoint` event and returns its data. `message` events before it are
/// kept (at most [`MAX_EARLY_MESSAGES`]); other events are ignored.
async fn wait_for_endpoint(
    body: &mut BodyStream,
    events: &mut Events,
    early: &mut VecDeque<Result<Message, TransportError>>,
) -> Result<Vec<u8>, String> {
    loop {
        while let Some(decoded) = events.next() {
            let kept = match decoded {
                Decoded::Event(event) if event.event_type == "endpoint" => return Ok(event.data),
                Decoded::Event(event) if event.is_message() => decode_message(&event),
                Decoded::Event(_) => continue,
                Decoded::TooLarge { size, reply } => Err(TransportError::TooLarge {
                    size,
                    limit: events.max_event_size(),
                }
                .about_reply(reply)),
            };
            if early.len() == MAX_EARLY_MESSAGES {
                return Err(format!(
                    "the server sent more than {MAX_EARLY_MESSAGES} messages before its endpoint event"
                ));
            }
            early.push_back(kept);
        }
        match poll_fn(|cx| body.as_mut().poll_next(cx)).await {
            Some(Ok(chunk)) => events.feed(chunk),
            Some(Err(e)) => {
                return Err(format!(
                    "the event stream failed before the endpoint event: {}",
                    error_chain(&e)
                ));
            }
            None => return Err("the server closed the event stream before sending the endpoint event".to_owned()),
        }
    }
}

/// Resolves the endpoint against the event stream's URL (relative endpoints are the norm) and
/// refuses one on another origin: the configured headers and credentials must not go there.
fn resolve_endpoint(stream_url: &Url, data: &[u8]) -> Result<Url, String> {
    let text = String::from_utf8_lossy(data);
    let text = text.trim();
    if text.is_empty() {
        return Err("the server's endpoint event is empty".to_owned());
    }
    let endpoint = stream_url.join(text).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        format!("the server's endpoint event {shown:?} is not a URL: {e}")
    })?;
    if !same_origin(&endpoint, stream_url) {
        return Err(format!(
            "the server's endpoint {} is on {}, another origin than its event stream ({}); no message is sent there",
            redact_url(endpoint.as_str()),
            origin(&endpoint),
            origin(stream_url)
        ));
    }
    Ok(endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        let sse = Url::parse("http://127.0.0.1:9/mcp/sse?key=1").unwrap();
        let cases = [
            ("/messages?sessionId=a", "http://127.0.0.1:9/messages?sessionId=a"),
            (
                "messages/?session_id=b",
                "http://127.0.0.1:9/mcp/messages/?session_id=b",
            ),
            (" http://127.0.0.1:9/x \n", "http://127.0.0.1:9/x"),
        ];
        for (data, expected) in cases {
            assert_eq!(resolve_endpoint(&sse, data.as_bytes()).unwrap().as_str(), expected);
        }
    }

    #[test]
    fn endpoints_elsewhere_are_refused() {
        let sse = Url::parse("http://127.0.0.1:9/sse").unwrap();
        assert_eq!(
            resolve_endpoint(&sse, b"https://evil.example/messages?sessionId=1").unwrap_err(),
            "the server's endpoint https://evil.example/messages?… is on https://evil.example, another origin than \
             its event stream (http://127.0.0.1:9); no message is sent there"
        );
        assert_eq!(
            resolve_endpoint(&sse, b"//127.0.0.1:10/m").unwrap_err(),
            "the server's endpoint http://127.0.0.1:10/m is on http://127.0.0.1:10, another origin than its event \
             stream (http://127.0.0.1:9); no message is sent there"
        );
        assert_eq!(
            resolve_endpoint(&sse, b"  ").unwrap_err(),
            "the server's endpoint event is empty"
        );
    }
}
