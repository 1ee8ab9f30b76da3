//! HTTP plumbing shared by the remote modes: the response body type, response builders, header
//! checks, bounded request bodies, and the `http` event of the event log.

use std::convert::Infallible;
use std::fmt::Display;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use plexus_jsonrpc::{ErrorObject, Message};
use serde_json::{Map, Value, json};

use super::legacy::ChannelReader;
use super::stream::EventReader;
use crate::events::EventLog;

/// `Mcp-Session-Id`.
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`.
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// `application/json`.
pub(crate) const JSON: &str = "application/json";
/// `text/event-stream`.
pub(crate) const EVENT_STREAM: &str = "text/event-stream";

/// How long a client may take to send a request body once its headers are in.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Header values the event log never records, only their presence.
const SECRET_HEADERS: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

/// The body of every response: a fixed buffer, a Streamable HTTP event stream, or a legacy SSE
/// stream; any of them compressed (`--gzip`).
pub(crate) enum Body {
    /// All of it at once (`None` once sent).
    Full(Option<Bytes>),
    /// Events of a Streamable HTTP stream.
    Events(EventReader),
    /// Events of a legacy SSE stream.
    Channel(ChannelReader),
    /// Events of a stateless request's stream, until its writer is done (the writer sees the
    /// reader go: the client closing the stream cancels the request).
    Frames(tokio::sync::mpsc::Receiver<Bytes>),
    /// Another body, gzip-compressed as it goes.
    Gzip(Box<GzipBody>),
}

/// A body compressed with gzip piece by piece: each piece is flushed (a sync flush), so that an
/// event reaches the client when it is sent.
pub(crate) struct GzipBody {
    inner: Body,
    encoder: Option<flate2::write::GzEncoder<Vec<u8>>>,
}

impl GzipBody {
    /// The next compressed piece.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        use std::io::Write as _;
        loop {
            let Some(encoder) = self.encoder.as_mut() else {
                return Poll::Ready(None);
            };
            match std::task::ready!(hyper::body::Body::poll_frame(Pin::new(&mut self.inner), cx)) {
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else { continue };
                    let data: Bytes = data;
                    // Writing to a Vec cannot fail.
                    let _ = encoder.write_all(&data).and_then(|()| encoder.flush());
                    let out = std::mem::take(encoder.get_mut());
                    if !out.is_empty() {
                        return Poll::Ready(Some(Bytes::from(out)));
                    }
                }
                Some(Err(never)) => match never {},
                None => {
                    let Some(encoder) = self.encoder.take() else {
                        return Poll::Ready(None);
                    };
                    let out = encoder.finish().unwrap_or_default();
                    return Poll::Ready((!out.is_empty()).then(|| Bytes::from(out)));
                }
            }
        }
    }
}

/// Whether a request's `Accept-Encoding` allows gzip.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .flat_map(|value| value.to_str().unwrap_or_default().split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|p| p.trim().replace(' ', "") == "q=0");
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// `--gzip`: the response with its body compressed (not an upgrade, an empty body, or one that
/// is already encoded), logged as a `compressed` event.
pub(crate) fn gzip(events: &EventLog, response: Response<Body>) -> Response<Body> {
    let compressible = response.status() != StatusCode::SWITCHING_PROTOCOLS
        && !matches!(response.body(), Body::Full(None))
        && !response.headers().contains_key(header::CONTENT_ENCODING);
    if !compressible {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    events.record(&json!({"event": "compressed", "encoding": "gzip", "status": parts.status.as_u16()}));
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    Response::from_parts(
        parts,
        Body::Gzip(Box::new(GzipBody {
            inner: body,
            encoder: Some(encoder),
        })),
    )
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take()),
            Body::Events(reader) => reader.poll_next(cx),
            Body::Channel(reader) => reader.poll_next(cx),
            Body::Frames(frames) => frames.poll_recv(cx),
            Body::Gzip(gzip) => gzip.poll_next(cx),
        };
        next.map(|bytes| bytes.map(|bytes| Ok(Frame::data(bytes))))
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |bytes| bytes.len() as u64)),
            Body::Events(_) | Body::Channel(_) | Body::Frames(_) | Body::Gzip(_) => SizeHint::default(),
        }
    }
}

/// A response that refuses a request, boxed: handlers pass it up through `Result`s.
pub(crate) type Refusal = Box<Response<Body>>;

/// A response with `body` (no body when empty) and its content type.
pub(crate) fn full(status: StatusCode, content_type: Option<&'static str>, body: impl Into<Bytes>) -> Response<Body> {
    let body: Bytes = body.into();
    let mut response = Response::new(Body::Full((!body.is_empty()).then_some(body)));
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    response
}

/// A response without a body.
pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    full(status, None, Bytes::new())
}

/// A plain-text response: `plexus-testserver: TEXT` and a newline.
pub(crate) fn text(status: StatusCode, text: impl Display) -> Response<Body> {
    full(
        status,
        Some("text/plain; charset=utf-8"),
        format!("plexus-testserver: {text}\n"),
    )
}

/// An `application/json` response holding one JSON-RPC message line.
pub(crate) fn json(status: StatusCode, line: Vec<u8>) -> Response<Body> {
    full(status, Some(JSON), line)
}

/// An `application/json` response holding a JSON-RPC error whose id is `null`.
pub(crate) fn jsonrpc_error(
    status: StatusCode,
    code: plexus_jsonrpc::ErrorCode,
    message: impl Into<String>,
) -> Response<Body> {
    let mut line = Vec::with_capacity(128);
    Message::Response(plexus_jsonrpc::Response::error(None, ErrorObject::new(code, message))).encode_line(&mut line);
    json(status, line)
}

/// A 405 naming the methods the path allows.
pub(crate) fn method_not_allowed(allow: &'static str, why: impl Display) -> Response<Body> {
    with_header(
        text(StatusCode::METHOD_NOT_ALLOWED, why),
        header::ALLOW,
        HeaderValue::from_static(allow),
    )
}

/// A 200 `text/event-stream` response whose events come from `body`.
pub(crate) fn event_stream(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `response` with one more header.
pub(crate) fn with_header(mut response: Response<Body>, name: HeaderName, value: HeaderValue) -> Response<Body> {
    response.headers_mut().insert(name, value);
    response
}

/// The value of header `name` as text, if present and visible ASCII.
pub(crate) fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Whether an `Accept` header lists `media` (exactly, ignoring parameters and case).
pub(crate) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| range.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(media))
}

/// Whether the request body is declared as `application/json`.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(JSON))
}

/// Why a request body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// It is larger than the limit.
    TooLarge { limit: usize },
    /// The client did not send it in time.
    Stalled,
    /// The connection failed.
    Failed(String),
}

impl BodyError {
    /// The status that answers it: 413, 408 or 400.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::Stalled => StatusCode::REQUEST_TIMEOUT,
            BodyError::Failed(_) => StatusCode::BAD_REQUEST,
        }
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => write!(f, "the request body exceeds the limit of {limit} bytes"),
            BodyError::Stalled => write!(f, "the request body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
            BodyError::Failed(e) => write!(f, "cannot read the request body: {e}"),
        }
    }
}

/// Reads a request body of at most `limit` bytes, waiting at most 30 s for it.
pub(crate) async fn read_body_limited(request: Request<Incoming>, limit: usize) -> Result<Bytes, BodyError> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    match tokio::time::timeout(BODY_TIMEOUT, Limited::new(request.into_body(), limit).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(BodyError::TooLarge { limit }),
        Ok(Err(e)) => Err(BodyError::Failed(e.to_string())),
        Err(_) => Err(BodyError::Stalled),
    }
}

/// Reads a request body of at most `limit` bytes, or the response that refuses it: 413 when too
/// large, 408 when the client stalls, 400 when the connection fails.
pub(crate) async fn read_body(request: Request<Incoming>, limit: usize) -> Result<Bytes, Refusal> {
    read_body_limited(request, limit).await.map_err(|e| {
        Box::new(match e {
            BodyError::TooLarge { limit } => jsonrpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                plexus_jsonrpc::ErrorCode::INVALID_REQUEST,
                format!("Payload Too Large: the request body exceeds the limit of {limit} bytes (--max-body-bytes)"),
            ),
            other => text(other.status(), other),
        })
    })
}

/// Whether the `Origin` header, when present, names this machine (127.0.0.1, localhost or
/// [::1]), as the transport spec asks servers to check against DNS rebinding.
pub(crate) fn origin_allowed(headers: &HeaderMap) -> Result<(), String> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let text = origin.to_str().unwrap_or("");
    let host = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
        .map(|rest| rest.split('/').next().unwrap_or(""));
    let local = host.is_some_and(|host| {
        let name = if host.starts_with('[') {
            host.split_inclusive(']').next().unwrap_or("")
        } else {
            host.split(':').next().unwrap_or("")
        };
        matches!(name, "127.0.0.1" | "localhost" | "[::1]")
    });
    if local {
        Ok(())
    } else {
        Err(format!(
            "Forbidden: the Origin {text:?} is not this machine (127.0.0.1, localhost, [::1])"
        ))
    }
}

/// Records `{"event":"http", method, path, query, headers}` (secret header values redacted).
pub(crate) fn log_request(events: &EventLog, request: &Request<Incoming>) {
    if !events.enabled() {
        return;
    }
    let mut headers = Map::new();
    for (name, value) in request.headers() {
        let value = if SECRET_HEADERS.contains(&name.as_str()) {
            "<redacted>".to_owned()
        } else {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        };
        match headers.get_mut(name.as_str()) {
            Some(Value::String(previous)) => {
                previous.push_str(", ");
                previous.push_str(&value);
            }
            _ => {
                headers.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    events.record(&json!({
        "event": "http",
        "method": request.method().as_str(),
        "path": request.uri().path(),
        "query": request.uri().query(),
        "headers": headers,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn accept_lists_are_split_and_parameters_ignored() {
        let map = headers(&[("accept", "application/json;q=0.9, Text/Event-Stream")]);
        assert!(accepts(&map, JSON) && accepts(&map, EVENT_STREAM));
        let map = headers(&[("accept", "application/json"), ("accept", "text/event-stream")]);
        assert!(accepts(&map, JSON) && accepts(&map, EVENT_STREAM));
        let map = headers(&[("accept", "*/*")]);
        assert!(!accepts(&map, JSON));
        assert!(!accepts(&HeaderMap::new(), JSON));
    }

    #[test]
    fn only_local_origins_pass() {
        for origin in [
            "http://127.0.0.1:8080",
            "http://localhost",
            "https://[::1]:3000",
            "http://localhost:1/x",
        ] {
            assert_eq!(origin_allowed(&headers(&[("origin", origin)])), Ok(()), "{origin}");
        }
        assert_eq!(origin_allowed(&HeaderMap::new()), Ok(()));
        assert_eq!(
            origin_allowed(&headers(&[("origin", "http://evil.example")])).unwrap_err(),
            "Forbidden: the Origin \"http://evil.example\" is not this machine (127.0.0.1, localhost, [::1])"
        );
        assert!(origin_allowed(&headers(&[("origin", "http://localhost.evil.example")])).is_err());
        assert!(origin_allowed(&headers(&[("origin", "null")])).is_err());
    }

    #[test]
    fn content_types_are_matched_without_parameters() {
        assert!(is_json(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
        assert!(!is_json(&HeaderMap::new()));
    }
}
