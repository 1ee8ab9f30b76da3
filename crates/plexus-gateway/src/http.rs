//! The gateway over Streamable HTTP at `/mcp` (hyper, HTTP/1.1): `POST` carries one JSON-RPC
//! message (a `tools/call` is answered as an event stream, so that its progress and the
//! backends' requests reach the client before the result; other requests as JSON), `GET` opens
//! the session's own event stream (list changes, logs; a comment every 15 s keeps it open
//! through proxies), `DELETE` ends the session, and so does `--session-idle` time
//! without a request, an open stream or a call running.
//!
//! It listens on every address of `--http HOST:PORT` (a host name's too). Trust: while it listens
//! on loopback addresses only, the `Host` must name this gateway ([`names_this_gateway`]:
//! `localhost`, `127.0.0.1`, `[::1]`, a loopback address it listens on, or the host name `--http`
//! gave, names in any case; against DNS rebinding), an `Origin` must name it too, and with a
//! token every request must carry it as `Authorization: Bearer`. Session ids are 128 random
//! bits. A connection that does not send a request's headers within [`HEADER_TIMEOUT`]
//! (from when it is accepted, or from the end of its last response) is closed, so slow or idle
//! clients cannot hold every slot.
//!
//! A POST of the stateless era (its `MCP-Protocol-Version` names no version of the `initialize`
//! era) stands alone, without a session: see [`stateless`].

pub(crate) mod stateless;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Frame;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use plexus::jsonrpc::{IdScanner, Message, RequestId};
use plexus::protocol::methods;
use tokio::sync::mpsc;

use crate::GatewayError;
use crate::gateway::Gateway;
use crate::listen::names_this_gateway;
use crate::session::{SINK_CAPACITY, Session, random_id};

/// The largest request body (4 MiB).
const MAX_BODY: usize = 4 * 1024 * 1024;
/// How long a client may take to send a request body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The most sessions at once.
const MAX_SESSIONS: usize = 256;
/// How often an event stream that has nothing to say sends a comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The most connections at once.
const MAX_CONNECTIONS: usize = 512;
/// How long a connection may take to send a request's headers, counted from when it is
/// accepted and, while it is kept alive, from the end of each response: a connection that
/// sends nothing, or part of its headers, for this long is closed without an answer. It is
/// also the idle keep-alive limit, since hyper times both with this one timer: a kept-alive
/// connection with no request in flight is closed after this long (an event stream being
/// written, or a request being answered, is not idle). Without it, 512 clients that send half
/// their headers would hold every connection slot for as long as they liked.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

const SESSION_HEADER: &str = "mcp-session-id";

/// A response body: all at once, or an event stream of JSON-RPC messages that ends after the
/// response to `until` (never, for a session's own stream).
enum Body {
    Full(Option<Bytes>),
    Events {
        messages: mpsc::Receiver<Vec<u8>>,
        until: Option<RequestId>,
        done: bool,
        /// When a comment goes out if no message does first.
        keep_alive: Pin<Box<tokio::time::Sleep>>,
        /// A stateless request's session, closed with the stream: a client that closes the
        /// stream before the answer cancels the request.
        ends: Option<Arc<Session>>,
    },
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Body::Events {
            ends: Some(session), ..
        } = self
        {
            session.close();
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            Body::Events {
                messages,
                until,
                done,
                keep_alive,
                ..
            } => {
                if *done {
                    return Poll::Ready(None);
                }
                match messages.poll_recv(cx) {
                    Poll::Ready(Some(line)) => {
                        keep_alive.as_mut().reset(tokio::time::Instant::now() + KEEP_ALIVE);
                        if until.is_some() && IdScanner::reply_id(&line).as_ref() == until.as_ref() {
                            *done = true;
                        }
                        let mut event = Vec::with_capacity(line.len() + 24);
                        event.extend_from_slice(b"event: message\ndata: ");
                        event.extend_from_slice(&line);
                        event.extend_from_slice(b"\n\n");
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
                    }
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Pending => match keep_alive.as_mut().poll(cx) {
                        Poll::Ready(()) => {
                            keep_alive.as_mut().reset(tokio::time::Instant::now() + KEEP_ALIVE);
                            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b": keep-alive\n\n")))))
                        }
                        Poll::Pending => Poll::Pending,
                    },
                }
            }
        }
    }
}

/// The body of a gateway response: JSON all at once, or an event stream of JSON-RPC messages.
pub struct ResponseBody(Body);

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.0 {
            Body::Full(_) => "json",
            Body::Events { .. } => "event stream",
        };
        f.debug_tuple("ResponseBody").field(&kind).finish()
    }
}

impl hyper::body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().0).poll_frame(cx)
    }
}

/// What a request body must be for the gateway to read it (hyper's `Incoming`, axum's `Body`,
/// any `http-body` body whose errors are errors).
pub trait RequestBody:
    hyper::body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + 'static
{
}

impl<B> RequestBody for B where
    B: hyper::body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + 'static
{
}

fn full(status: StatusCode, content_type: Option<&'static str>, body: impl Into<Bytes>) -> Response<Body> {
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

/// A refusal: a JSON-RPC error (id `null`) with the HTTP status.
fn refuse(status: StatusCode, message: impl Into<String>) -> Response<Body> {
    let mut line = Vec::with_capacity(128);
    Message::Response(plexus::jsonrpc::Response::error(
        None,
        plexus::jsonrpc::ErrorObject::new(plexus::jsonrpc::ErrorCode::INVALID_REQUEST, message),
    ))
    .encode_line(&mut line);
    full(status, Some("application/json"), line)
}

/// [`refuse`], boxed.
fn refused(status: StatusCode, message: impl Into<String>) -> Refusal {
    Box::new(refuse(status, message))
}

/// An event stream of `messages` until the response to `until`; `ends` is closed with it.
fn events(messages: mpsc::Receiver<Vec<u8>>, until: Option<RequestId>, ends: Option<Arc<Session>>) -> Response<Body> {
    let mut response = Response::new(Body::Events {
        messages,
        until,
        done: false,
        keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
        ends,
    });
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A response that refuses a request, boxed (it travels up through `Result`s).
type Refusal = Box<Response<Body>>;

/// The HTTP side's state.
pub(crate) struct Http {
    gateway: Arc<Gateway>,
    token: Option<String>,
    /// Which `Host` and `Origin` name this gateway.
    trust: Trust,
    sessions: Mutex<HashMap<String, Open>>,
    /// How long a session may sit unused.
    idle: Duration,
}

/// Which `Host` and `Origin` headers name this gateway.
pub(crate) enum Trust {
    /// It listens itself.
    Listening {
        /// Whether every address it listens on is a loopback one (then `Host` is checked).
        loopback: bool,
        /// The loopback addresses it listens on: a `Host` or `Origin` naming one names it.
        own: Vec<IpAddr>,
        /// The host name of `--http`, if it gave one: a `Host` and `Origin` taken as this
        /// gateway's.
        name: Option<String>,
    },
    /// A host's server mounts it: the host names the authorities (`host` or `host:port`, any
    /// case) that may appear in `Host` and `Origin`; with none, `Host` is not checked and a
    /// request with an `Origin` is refused.
    Mounted(Vec<String>),
}

impl Trust {
    fn checks_host(&self) -> bool {
        match self {
            Trust::Listening { loopback, .. } => *loopback,
            Trust::Mounted(allowed) => !allowed.is_empty(),
        }
    }

    fn allows(&self, authority: &str) -> bool {
        match self {
            Trust::Listening { own, name, .. } => names_this_gateway(authority, own, name.as_deref()),
            Trust::Mounted(allowed) => {
                let host = crate::listen::host_of(authority);
                allowed.iter().any(|allowed| {
                    allowed.eq_ignore_ascii_case(authority)
                        || (crate::listen::host_of(allowed) == allowed && allowed.eq_ignore_ascii_case(host))
                })
            }
        }
    }
}

/// A session and when it was last in use (a request named it, or something of it was live).
struct Open {
    session: Arc<Session>,
    used: std::time::Instant,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The sockets the gateway listens on for Streamable HTTP, bound before it serves (so that the
/// host can say where, and a port of 0 is known).
#[derive(Debug)]
pub struct HttpListeners {
    listeners: Vec<(tokio::net::TcpListener, SocketAddr)>,
    failures: Vec<(SocketAddr, std::io::Error)>,
    /// The host name the addresses came from, if they came from one.
    name: Option<String>,
}

impl HttpListeners {
    /// Listens on each of `addresses` (one, or those a host name resolved to: then `name` is
    /// that name, which clients may send as their `Host`). Port 0 of a name's addresses is the
    /// port the first one got, on them all. An address it cannot listen on is kept in
    /// [`failures`](Self::failures); none at all is an error naming the first.
    pub async fn bind(addresses: &[SocketAddr], name: Option<String>) -> Result<HttpListeners, GatewayError> {
        let mut listeners: Vec<(tokio::net::TcpListener, SocketAddr)> = Vec::new();
        let mut failures = Vec::new();
        for address in addresses {
            let mut address = *address;
            if let Some((_, first)) = listeners.first()
                && address.port() == 0
            {
                address.set_port(SocketAddr::port(first));
            }
            match tokio::net::TcpListener::bind(address).await {
                Ok(listener) => {
                    let local = listener.local_addr().unwrap_or(address);
                    listeners.push((listener, local));
                }
                Err(e) => failures.push((address, e)),
            }
        }
        if listeners.is_empty() {
            let (address, source) = failures.into_iter().next().ok_or(GatewayError::NoAddress)?;
            return Err(GatewayError::Listen { address, source });
        }
        Ok(HttpListeners {
            listeners,
            failures,
            name,
        })
    }

    /// The addresses it listens on (the gateway is at `http://ADDRESS/mcp`).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners.iter().map(|(_, local)| *local).collect()
    }

    /// The addresses it could not listen on, and why.
    pub fn failures(&self) -> &[(SocketAddr, std::io::Error)] {
        &self.failures
    }
}

/// Serves `gateway` at `http://ADDRESS/mcp` on each of `listeners` until the task is dropped.
pub(crate) async fn serve(gateway: &Arc<Gateway>, listeners: HttpListeners, token: Option<String>, idle: Duration) {
    let HttpListeners { listeners, name, .. } = listeners;
    let trust = Trust::Listening {
        loopback: listeners.iter().all(|(_, local)| local.ip().is_loopback()),
        own: listeners
            .iter()
            .map(|(_, local)| local.ip())
            .filter(IpAddr::is_loopback)
            .collect(),
        name,
    };
    let state = Http::start(gateway, trust, token, idle);
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut accepting = Vec::new();
    for (listener, _) in listeners {
        accepting.push(tokio::spawn(accept(
            listener,
            Arc::clone(&state),
            Arc::clone(&connections),
        )));
    }
    // The accept loops end with this future: dropping it aborts them.
    let _abort = crate::AbortOnDrop(accepting.iter().map(tokio::task::JoinHandle::abort_handle).collect());
    for task in accepting {
        let _ = task.await;
    }
}

/// Takes the connections of `listener`, each served on a task of its own: at most
/// [`MAX_CONNECTIONS`] at once over every listener. While that many are open, a new one waits in
/// the listen queue (rather than being reset) until one ends, which for a connection that sends
/// no request is at most [`HEADER_TIMEOUT`].
async fn accept(listener: tokio::net::TcpListener, state: Arc<Http>, connections: Arc<tokio::sync::Semaphore>) {
    // The semaphore is never closed, so this takes connections for as long as the gateway runs.
    while let Ok(permit) = Arc::clone(&connections).acquire_owned().await {
        let stream = loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    // A response goes out in several writes (its head, then each event of a
                    // stream): with Nagle's algorithm the second waits for the client's delayed
                    // ACK, 40 ms a call.
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!("TCP_NODELAY on a gateway connection: {e}");
                    }
                    break stream;
                }
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                let state = Arc::clone(&state);
                async move {
                    if request.uri().path() != "/mcp" {
                        let text = "plexus gateway: the MCP endpoint is /mcp\n";
                        return Ok::<_, Infallible>(full(StatusCode::NOT_FOUND, None, text).map(ResponseBody));
                    }
                    Ok(state.handle(request).await)
                }
            });
            // hyper honours `header_read_timeout` only with a timer.
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            drop(permit);
        });
    }
}

/// Every `every`, ends the sessions left unused for too long, while the HTTP side lives.
async fn sweep(state: std::sync::Weak<Http>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(state) = state.upgrade() else {
            return;
        };
        state.end_unused();
    }
}

impl Http {
    /// The HTTP side of `gateway`, whose unused sessions end after `idle`. Must be called
    /// within a Tokio runtime.
    pub(crate) fn start(gateway: &Arc<Gateway>, trust: Trust, token: Option<String>, idle: Duration) -> Arc<Http> {
        let state = Arc::new(Http {
            gateway: Arc::clone(gateway),
            token,
            trust,
            sessions: Mutex::new(HashMap::new()),
            idle,
        });
        // Checks a few times per idle period; it ends with the state.
        let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
        tokio::spawn(sweep(Arc::downgrade(&state), every));
        state
    }

    /// Ends every session unused for longer than the idle limit.
    fn end_unused(&self) {
        let mut ended = Vec::new();
        lock(&self.sessions).retain(|id, open| {
            if !open.session.is_unused() {
                // In use: idle time counts from when it stops being.
                open.used = std::time::Instant::now();
                true
            } else if open.used.elapsed() >= self.idle {
                ended.push((id.clone(), Arc::clone(&open.session)));
                false
            } else {
                true
            }
        });
        for (id, session) in ended {
            tracing::info!(session = %id, "an idle gateway session ended");
            session.close();
        }
    }

    /// Answers one request, whatever its path (the listener or the host routes).
    pub(crate) async fn handle<B: RequestBody>(&self, request: Request<B>) -> Response<ResponseBody> {
        self.answer(request).await.map(ResponseBody)
    }

    async fn answer<B: RequestBody>(&self, request: Request<B>) -> Response<Body> {
        if let Err(refusal) = self.check_origin(&request) {
            return *refusal;
        }
        let stateless = stateless::is_stateless(request.headers());
        match *request.method() {
            Method::POST if stateless => self.post_stateless(request).await,
            Method::GET | Method::DELETE if stateless => stateless::refuse_method(&request),
            Method::POST => self.post(request).await,
            Method::GET => self.get(&request),
            Method::DELETE => match self.session(&request) {
                Ok((id, session)) => {
                    lock(&self.sessions).remove(&id);
                    session.close();
                    full(StatusCode::OK, None, Bytes::new())
                }
                Err(refusal) => *refusal,
            },
            _ => {
                let mut response = full(StatusCode::METHOD_NOT_ALLOWED, None, Bytes::new());
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                response
            }
        }
    }

    /// The `Host`, `Origin` and token checks.
    fn check_origin<B>(&self, request: &Request<B>) -> Result<(), Refusal> {
        let ours = |authority: &str| self.trust.allows(authority);
        if self.trust.checks_host() {
            let host = request
                .headers()
                .get(header::HOST)
                .and_then(|host| host.to_str().ok())
                .unwrap_or_default();
            if !ours(host) {
                return Err(refused(
                    StatusCode::FORBIDDEN,
                    format!("Host {host:?} is not an address or name this gateway listens on"),
                ));
            }
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or_default();
            let host = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .unwrap_or("");
            if !ours(host) {
                return Err(refused(
                    StatusCode::FORBIDDEN,
                    format!("Origin {origin:?} may not use the gateway"),
                ));
            }
        }
        if let Some(token) = &self.token {
            let given = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.strip_prefix("Bearer "))
                .unwrap_or_default();
            if !same(given.as_bytes(), token.as_bytes()) {
                let mut response = refuse(StatusCode::UNAUTHORIZED, "the gateway's token is missing or wrong");
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return Err(Box::new(response));
            }
        }
        Ok(())
    }

    /// The session a request names.
    fn session<B>(&self, request: &Request<B>) -> Result<(String, Arc<Session>), Refusal> {
        let Some(id) = request.headers().get(SESSION_HEADER).and_then(|id| id.to_str().ok()) else {
            return Err(refused(StatusCode::BAD_REQUEST, "no Mcp-Session-Id: initialize first"));
        };
        match lock(&self.sessions).get_mut(id) {
            Some(open) => {
                open.used = std::time::Instant::now();
                Ok((id.to_owned(), Arc::clone(&open.session)))
            }
            None => Err(refused(
                StatusCode::NOT_FOUND,
                "no such session (it ended); initialize again",
            )),
        }
    }

    /// `GET`: the session's own event stream (a new one replaces the old).
    fn get<B>(&self, request: &Request<B>) -> Response<Body> {
        let (_, session) = match self.session(request) {
            Ok(found) => found,
            Err(refusal) => return *refusal,
        };
        let (sink, messages) = mpsc::channel(SINK_CAPACITY);
        session.set_out(Some(sink));
        // What it missed while it had no stream: the backends that are down.
        self.gateway.tell_down(&session);
        events(messages, None, None)
    }

    async fn post<B: RequestBody>(&self, request: Request<B>) -> Response<Body> {
        let named = request.headers().contains_key(SESSION_HEADER);
        let found = if named { Some(self.session(&request)) } else { None };
        let message = match read_message(request.into_body()).await {
            Ok(message) => message,
            Err(refusal) => return *refusal,
        };
        let initialize = matches!(&message, Message::Request(request) if request.method == methods::INITIALIZE);
        let (id, session) = match (found, initialize) {
            (Some(Ok(found)), _) => found,
            (Some(Err(refusal)), _) => return *refusal,
            (None, true) => match self.open_session() {
                Ok(opened) => opened,
                Err(refusal) => return *refusal,
            },
            (None, false) => return refuse(StatusCode::BAD_REQUEST, "no Mcp-Session-Id: initialize first"),
        };
        let Message::Request(call) = &message else {
            // Notifications and the client's answers.
            let (sink, _) = mpsc::channel(1);
            self.gateway.handle(&session, message, sink);
            return full(StatusCode::ACCEPTED, None, Bytes::new());
        };
        let (request_id, streamed) = (call.id.clone(), call.method == methods::TOOLS_CALL);
        let (sink, mut messages) = mpsc::channel(SINK_CAPACITY);
        self.gateway.handle(&session, message, sink);
        let mut response = if streamed {
            events(messages, Some(request_id), None)
        } else {
            match messages.recv().await {
                Some(line) => full(StatusCode::OK, Some("application/json"), line),
                None => refuse(StatusCode::INTERNAL_SERVER_ERROR, "the request was abandoned"),
            }
        };
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        response
    }

    fn open_session(&self) -> Result<(String, Arc<Session>), Refusal> {
        if lock(&self.sessions).len() >= MAX_SESSIONS {
            self.end_unused();
        }
        let mut sessions = lock(&self.sessions);
        if sessions.len() >= MAX_SESSIONS {
            return Err(refused(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{MAX_SESSIONS} sessions are open; end one (DELETE) or wait until one is unused for {} s",
                    self.idle.as_secs()
                ),
            ));
        }
        let Some(id) = random_id() else {
            return Err(refused(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness for a session id",
            ));
        };
        let session = Session::initialize_era(None);
        #[cfg(feature = "otel")]
        session.telemetry.over_http(Some(&id));
        self.gateway.add_session(&session);
        sessions.insert(
            id.clone(),
            Open {
                session: Arc::clone(&session),
                used: std::time::Instant::now(),
            },
        );
        Ok((id, session))
    }
}

/// Reads a POST's body (within [`BODY_TIMEOUT`], at most [`MAX_BODY`] bytes) as one JSON-RPC
/// message; the refusal otherwise.
async fn read_message<B: RequestBody>(body: B) -> Result<Message, Refusal> {
    let body = match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, MAX_BODY).collect()).await {
        Ok(Ok(body)) => body.to_bytes(),
        Ok(Err(e)) => {
            return Err(refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is not readable or over {MAX_BODY} bytes: {e}"),
            ));
        }
        Err(_) => return Err(refused(StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time")),
    };
    Message::from_slice(&body).map_err(|e| {
        refused(
            StatusCode::BAD_REQUEST,
            format!("not one JSON-RPC message: {}", plexus::transport::error_chain(&e)),
        )
    })
}

/// Compares two secrets in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
