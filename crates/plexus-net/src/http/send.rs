//! One exchange: a request written on a pooled connection (or a new one) and the response head
//! read; the body is read later by whoever holds the [`Response`].

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, HOST, PROXY_AUTHORIZATION, USER_AGENT};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Version};
use http_body_util::Full;

use super::body::{Body, Lease, RawBody};
use super::drive::Driven;
use super::error::{OUTCOME_UNKNOWN, exchange_failed};
use super::pool::{Conn, H1Conn, RequestBody};
use super::{HttpClient, HttpError, Target};

/// What to send: the method, the headers (the client adds `Host`, a `User-Agent` unless there
/// is one, and `Accept-Encoding`, which it always chooses itself), and the body.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, if there is one.
    pub body: Option<Bytes>,
}

impl Request {
    /// A request with no headers and no body.
    pub fn new(method: Method) -> Request {
        Request {
            method,
            headers: HeaderMap::new(),
            body: None,
        }
    }
}

/// A response: its head, and its body still on the wire.
#[derive(Debug)]
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The HTTP version it came in.
    pub version: Version,
    /// The body.
    pub body: Body,
}

impl Response {
    /// The value of header `name` as text, if it has one that is.
    pub fn header_str(&self, name: impl http::header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether it is a redirect to follow: a 3xx with a `Location`.
    pub fn is_redirect(&self) -> bool {
        self.status.is_redirection() && self.headers.contains_key(http::header::LOCATION)
    }

    /// The media type of the `Content-Type` header (without parameters), or "".
    pub fn mime(&self) -> &str {
        self.header_str(http::header::CONTENT_TYPE)
            .and_then(|v| v.split(';').next())
            .map_or("", str::trim)
    }
}

/// An exchange that failed; `Unsent` gives the request back: none of it was written.
enum Failed {
    /// Boxed: a rare path, and the request is large.
    Unsent(Box<http::Request<RequestBody>>),
    Error(HttpError),
}

impl HttpClient {
    /// Sends `request` to `target` and reads the response head (no redirect is followed: see
    /// [`follow_redirects`](super::follow_redirects)). The caller bounds the wait.
    ///
    /// A request is never sent twice once any of it may have reached the server; one that a
    /// kept-alive connection gave back unsent goes once more, on a new connection.
    pub async fn send(&self, target: &Target, request: Request) -> Result<Response, HttpError> {
        let conn = target.pool.checkout(true).await?;
        let kept_alive = matches!(&conn, Conn::H1(h1) if h1.served > 0);
        let prepared = self.prepare(target, &conn, request);
        let outcome = match conn {
            Conn::H1(h1) => exchange_h1(target, h1, prepared).await,
            Conn::H2(sender) => Box::pin(exchange_h2(sender, prepared)).await,
        };
        match outcome {
            Ok(response) => Ok(response),
            Err(Failed::Unsent(request)) if kept_alive => Box::pin(self.resend(target, *request)).await,
            Err(Failed::Unsent(_)) => Err(unsent_error()),
            Err(Failed::Error(e)) => Err(e),
        }
    }

    /// Sends again, on a new connection, a request that a kept-alive connection gave back unsent.
    async fn resend(&self, target: &Target, request: http::Request<RequestBody>) -> Result<Response, HttpError> {
        tracing::debug!(
            "a kept-alive connection closed before any of a request was written; sending it on a new connection"
        );
        let fresh = target.pool.checkout(false).await?;
        let (parts, body) = request.into_parts();
        let request = Request {
            method: parts.method,
            headers: parts.headers,
            body: Some(body_bytes(body)),
        };
        let prepared = self.prepare(target, &fresh, request);
        let outcome = match fresh {
            Conn::H1(h1) => exchange_h1(target, h1, prepared).await,
            Conn::H2(sender) => exchange_h2(sender, prepared).await,
        };
        outcome.map_err(|failed| match failed {
            Failed::Error(e) => e,
            Failed::Unsent(_) => unsent_error(),
        })
    }

    /// The request as hyper sends it on `conn`: origin form with `Host` to the origin over
    /// HTTP/1.1, absolute form to a forwarding proxy (with its credentials) and over HTTP/2.
    fn prepare(&self, target: &Target, conn: &Conn, request: Request) -> http::Request<RequestBody> {
        let Request {
            method,
            mut headers,
            body,
        } = request;
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static(super::ACCEPT_ENCODING));
        if !headers.contains_key(USER_AGENT) {
            headers.insert(USER_AGENT, self.shared.user_agent.clone());
        }
        let uri = match conn {
            Conn::H1(h1) => {
                if !headers.contains_key(HOST) {
                    headers.insert(HOST, target.host.clone());
                }
                if h1.forwarded {
                    if let Some(authorization) = target.pool.proxy_authorization() {
                        headers.insert(PROXY_AUTHORIZATION, authorization.clone());
                    }
                    target.absolute.clone()
                } else {
                    target.origin_form.clone()
                }
            }
            Conn::H2(_) => {
                // `:authority` says it.
                headers.remove(HOST);
                target.absolute.clone()
            }
        };
        let mut prepared = http::Request::new(Full::new(body.unwrap_or_default()));
        *prepared.method_mut() = method;
        *prepared.uri_mut() = uri;
        *prepared.headers_mut() = headers;
        prepared
    }
}

/// The bytes of a request body hyper gave back (a `Full` gives its one frame at once).
fn body_bytes(body: RequestBody) -> Bytes {
    use hyper::body::Body as _;
    let mut body = pin!(body);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match body.as_mut().poll_frame(&mut cx) {
        std::task::Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
        _ => Bytes::new(),
    }
}

fn unsent_error() -> HttpError {
    HttpError::Exchange(std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "the connection closed before the request was sent",
    ))
}

/// An HTTP/1.1 exchange, the connection driven by this task.
async fn exchange_h1(
    target: &Target,
    mut h1: Box<H1Conn>,
    request: http::Request<RequestBody>,
) -> Result<Response, Failed> {
    let mut answer = pin!(h1.sender.try_send_request(request));
    let H1Conn {
        driver,
        connection,
        ended,
        ..
    } = &mut *h1;
    let driven = poll_fn(|cx| driver.poll(cx, connection, ended, |cx| answer.as_mut().poll(cx))).await;
    h1_outcome(target, h1, driven)
}

/// An HTTP/2 exchange (its connection runs in a task of its own).
async fn exchange_h2(
    mut sender: hyper::client::conn::http2::SendRequest<RequestBody>,
    request: http::Request<RequestBody>,
) -> Result<Response, Failed> {
    match sender.try_send_request(request).await {
        Ok(response) => Ok(response_of(response, None)),
        Err(mut e) => match e.take_message() {
            Some(request) => Err(Failed::Unsent(Box::new(request))),
            None => Err(Failed::Error(failure(e.error()))),
        },
    }
}

/// What a failed exchange means: a connection the server's TLS refused, or an exchange that
/// failed after the request was written.
fn failure(error: &hyper::Error) -> HttpError {
    match super::error::tls_refusal(error) {
        Some(refused) => HttpError::Connect(refused),
        None => HttpError::Exchange(exchange_failed(error)),
    }
}

/// What an HTTP/1.1 exchange on `h1` gave: the response (its body holding the connection), or
/// why not.
fn h1_outcome(
    target: &Target,
    h1: Box<H1Conn>,
    driven: Driven<
        Result<http::Response<hyper::body::Incoming>, hyper::client::conn::TrySendError<http::Request<RequestBody>>>,
    >,
) -> Result<Response, Failed> {
    match driven {
        Driven::Ready(Ok(response))
            if h1.forwarded && response.status() == http::StatusCode::PROXY_AUTHENTICATION_REQUIRED =>
        {
            // Only the proxy answers 407: its refusal is a connect failure, not the server's answer.
            Err(Failed::Error(HttpError::Connect(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the proxy {} refused the request: HTTP 407 Proxy Authentication Required",
                    target.pool.proxy_shown().unwrap_or("in use")
                ),
            ))))
        }
        Driven::Ready(Ok(response)) => {
            let keep_alive = keep_alive_timeout(response.headers());
            let lease = Lease {
                conn: h1,
                pool: Arc::clone(&target.pool),
                keep_alive,
            };
            Ok(response_of(response, Some(lease)))
        }
        Driven::Ready(Err(mut e)) => match e.take_message() {
            Some(request) => Err(Failed::Unsent(Box::new(request))),
            None => Err(Failed::Error(failure(e.error()))),
        },
        Driven::ConnectionEnded(error) => Err(Failed::Error(HttpError::Exchange(match error {
            Some(e) => return Err(Failed::Error(failure(&e))),
            None => std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the server closed the connection before answering ({OUTCOME_UNKNOWN})"),
            ),
        }))),
    }
}

fn response_of(response: http::Response<hyper::body::Incoming>, lease: Option<Lease>) -> Response {
    let (parts, incoming) = response.into_parts();
    let body = Body::new(RawBody::new(incoming, lease), &parts.headers);
    Response {
        status: parts.status,
        headers: parts.headers,
        version: parts.version,
        body,
    }
}

/// The `timeout` of a `Keep-Alive` header (`timeout=5, max=100`): how long the server keeps an
/// idle connection.
fn keep_alive_timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("keep-alive")?.to_str().ok()?;
    value.split(',').find_map(|part| {
        let (name, seconds) = part.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("timeout")
            .then(|| seconds.trim().parse().ok().map(Duration::from_secs))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_alive_timeouts() {
        let mut headers = HeaderMap::new();
        assert_eq!(keep_alive_timeout(&headers), None);
        headers.insert("keep-alive", HeaderValue::from_static("max=100, Timeout=5"));
        assert_eq!(keep_alive_timeout(&headers), Some(Duration::from_secs(5)));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=x"));
        assert_eq!(keep_alive_timeout(&headers), None);
    }
}
