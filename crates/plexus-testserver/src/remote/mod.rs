//! The remote modes: one HTTP/1.1 front on 127.0.0.1 (hyper) serving Streamable HTTP
//! ([`streamable`]), the legacy HTTP+SSE transport ([`legacy`]) or WebSocket ([`ws`]), each session
//! driven by the transport-independent [`Session`](crate::server::Session).
//!
//! [`RemoteServer`] runs a mode in-process on a listener the caller bound; `run_http`, `run_sse`
//! and `run_ws` run it as the binary does (bind, print the URL, serve until a signal).

mod connection;
mod error;
pub(crate) mod http;
mod legacy;
mod modern;
mod options;
mod stream;
mod streamable;
mod tls;
mod ws;

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use hyper::StatusCode;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use error::{OptionProblem, PathProblem, RemoteError};
pub(crate) use options::parse_path;
pub use options::{
    EndpointOptions, HttpOptions, RejectLargeBody, RemoteOptions, RequiredHeader, SessionOptions, SseOptions, WsOptions,
};

use self::connection::Connection;
use self::http::Body;
use self::legacy::Legacy;
use self::options::{DEFAULT_MCP_PATH, DEFAULT_SSE_PATH, MESSAGES_PATH};
use self::streamable::Streamable;
use self::ws::WsConfig;
use crate::events::EventLog;
use crate::oauth::{Authorized, OAuth, OAuthHandle, OAuthOptions, Routed};
use crate::process::{self, SETUP_FAILURE};
use crate::server::Server;
use crate::{ProcessOptions, ServerOptions};

/// The most sessions a mode keeps at once; initialize (or the legacy GET) beyond that gets 503.
pub(crate) const MAX_SESSIONS: usize = 1024;

/// How long a crash waits at most for the last response to reach its connection.
const CRASH_DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// What the server does when the `crash` tool or `--crash-after` asks it to crash.
#[derive(Debug, Clone, Copy)]
enum CrashPolicy {
    /// Exit the process, as a crashing server would (the binary).
    ExitProcess,
    /// Stop serving: close the listener and every connection (in-process).
    StopServer,
}

/// Which of a server's listeners a connection came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    /// The MCP endpoint's (which also serves the first authorization server unless it has its own).
    Mcp,
    /// The own listener of authorization server N.
    Authority(usize),
}

/// The mode-specific part of the server.
#[allow(clippy::large_enum_variant)] // one per server.
enum Kind {
    Http {
        streamable: Streamable,
        /// `--legacy-sse-at-same-url`.
        legacy: Option<Legacy>,
    },
    Sse(Legacy),
    Ws(WsConfig),
}

/// Everything a running remote server shares between its connections.
pub(crate) struct App {
    server: Arc<Server>,
    events: Arc<EventLog>,
    remote: RemoteOptions,
    /// The endpoint path (`--path` or the mode's default).
    path: String,
    addr: SocketAddr,
    kind: Kind,
    /// The protection of the MCP endpoint and the authorization servers (`--oauth`).
    oauth: Option<Arc<OAuth>>,
    /// POSTs seen (http, sse) or upgrade requests seen (ws), for `--fail-after` and `--reset-after`.
    requests_seen: AtomicU64,
    /// WebSocket text messages seen, for `--reset-after` in ws mode.
    ws_messages_seen: AtomicU64,
    /// Set once the server stops (shutdown, or a crash in-process).
    stop: watch::Sender<bool>,
    crash: CrashPolicy,
    /// Set once a crash is due: the server answers nothing more, as a dead process would not,
    /// while the response the crash follows drains.
    crashing: AtomicBool,
    /// TLS for the MCP endpoint's listener (`--tls-cert`).
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl App {
    pub(crate) fn events(&self) -> &EventLog {
        &self.events
    }

    pub(crate) fn server(&self) -> &Arc<Server> {
        &self.server
    }

    pub(crate) fn remote(&self) -> &RemoteOptions {
        &self.remote
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// TLS for the MCP endpoint's listener, when `--tls-cert` asks for it.
    pub(crate) fn tls(&self) -> Option<&tokio_rustls::TlsAcceptor> {
        self.tls.as_ref()
    }

    /// The refusal of a message whose request's token lacks a scope it needs (`--oauth-tool-scope`).
    pub(crate) fn oauth_refusal(
        &self,
        authorized: Option<&Authorized>,
        message: &plexus_jsonrpc::Message,
    ) -> Option<hyper::Response<Body>> {
        self.oauth.as_ref()?.message_refusal(authorized?, message)
    }

    /// The legacy transport, when this server speaks it.
    pub(crate) fn legacy(&self) -> Option<&Legacy> {
        match &self.kind {
            Kind::Http { legacy, .. } => legacy.as_ref(),
            Kind::Sse(legacy) => Some(legacy),
            Kind::Ws(_) => None,
        }
    }

    /// A receiver that sees the server stop.
    pub(crate) fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    fn is_hit(&self, n: u64, after: Option<u64>) -> bool {
        let Some(after) = after else { return false };
        if n <= after {
            return false;
        }
        // The k-th request the fault would hit, counted from 0.
        let k = n - after - 1;
        match (self.remote.fault_times, self.remote.fault_period) {
            (Some(times), Some(period)) => k % period < times,
            (Some(times), None) => k < times,
            (None, _) => true,
        }
    }

    /// Counts one POST (ws: upgrade request) and applies `--reset-after` (which resets the
    /// connection and never returns), `--fail-after` and `--fail-status`.
    pub(crate) async fn request_fault(
        &self,
        connection: &Connection,
        counts_for_reset: bool,
    ) -> Option<hyper::Response<Body>> {
        let remote = &self.remote;
        if remote.fail_status.is_none() && remote.fail_after.is_none() && remote.reset_after.is_none() {
            return None;
        }
        if !self.faults_armed() {
            return None;
        }
        let n = self.requests_seen.fetch_add(1, Ordering::Relaxed) + 1;
        if counts_for_reset && self.is_hit(n, remote.reset_after) {
            self.events
                .record(&json!({"event": "fault", "fault": "reset", "request": n}));
            connection.reset().await;
        }
        let fail_from = remote.fail_after.or(remote.fail_status.map(|_| 0));
        if self.is_hit(n, fail_from) {
            let status = remote.fail_status.unwrap_or(500);
            self.events
                .record(&json!({"event": "fault", "fault": "fail-status", "status": status, "request": n}));
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Some(http::text(
                status,
                format!(
                    "failing request {n} with status {} as asked (--fail-status, --fail-after)",
                    status.as_u16()
                ),
            ));
        }
        None
    }

    /// `--reject-large-body`: the refusal of a request whose declared body is over the limit, sent
    /// without reading the body, after which the connection closes.
    fn reject_large_body(&self, request: &hyper::Request<hyper::body::Incoming>) -> Option<hyper::Response<Body>> {
        let reject = self.remote.reject_large_body?;
        let length = request
            .headers()
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok()?.parse::<u64>().ok())
            .filter(|length| *length > reject.bytes)?;
        self.events.record(
            &json!({"event": "fault", "fault": "reject-large-body", "status": reject.status, "length": length}),
        );
        let status = StatusCode::from_u16(reject.status).unwrap_or(StatusCode::PAYLOAD_TOO_LARGE);
        let mut response = http::text(
            status,
            format!(
                "a body of {length} bytes is over the {} bytes let through (--reject-large-body); it was not read",
                reject.bytes
            ),
        );
        let headers = response.headers_mut();
        headers.insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer realm=\"plexus-testserver\""),
            );
        }
        Some(response)
    }

    /// Whether a crash is due (see [`crash_when_drained`](Self::crash_when_drained)): requests
    /// that come meanwhile get no answer, their connection is dropped.
    pub(crate) fn is_crashing(&self) -> bool {
        self.crashing.load(Ordering::Acquire)
    }

    /// Whether the faults that hit mid-session apply yet (`--faults-after-calls`).
    pub(crate) fn faults_armed(&self) -> bool {
        self.remote
            .faults_after_calls
            .is_none_or(|calls| self.server.calls_answered.load(Ordering::Relaxed) >= calls)
    }

    /// Counts one WebSocket text message; whether `--reset-after` hits it.
    pub(crate) fn ws_message_resets(&self) -> bool {
        if self.remote.reset_after.is_none() || !self.faults_armed() {
            return false;
        }
        let n = self.ws_messages_seen.fetch_add(1, Ordering::Relaxed) + 1;
        let hit = self.is_hit(n, self.remote.reset_after);
        if hit {
            self.events
                .record(&json!({"event": "fault", "fault": "reset", "message": n}));
        }
        hit
    }

    /// Crashes: says `reason` on stderr, logs `exit`, then exits the process (binary) or stops
    /// serving (in-process).
    pub(crate) fn crash(&self, code: i32, reason: &str) {
        eprintln!("plexus-testserver: {reason}");
        self.events.exit(code);
        match self.crash {
            CrashPolicy::ExitProcess => std::process::exit(code),
            CrashPolicy::StopServer => {
                self.stop.send_replace(true);
            }
        }
    }

    /// Crashes once `drained` says the last response left (or after [`CRASH_DRAIN_LIMIT`]), so that
    /// the response the crash follows reaches the client first; meanwhile no request is answered.
    pub(crate) fn crash_when_drained(
        self: &Arc<Self>,
        drained: impl Fn() -> bool + Send + 'static,
        code: i32,
        reason: String,
    ) {
        self.crashing.store(true, Ordering::Release);
        let app = Arc::downgrade(self);
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + CRASH_DRAIN_LIMIT;
            while !drained() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // Time for the connection to write what it took last.
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Some(app) = app.upgrade() {
                app.crash(code, &reason);
            }
        });
    }

    /// Ends every session (their work in flight is aborted).
    fn close_sessions(&self) {
        match &self.kind {
            Kind::Http { streamable, legacy } => {
                streamable.close_all(self);
                if let Some(legacy) = legacy {
                    legacy.close_all(self);
                }
            }
            Kind::Sse(legacy) => legacy.close_all(self),
            Kind::Ws(_) => {}
        }
    }

    /// Routes one request: to the OAuth side (`--oauth`), then to the mode.
    async fn dispatch(
        self: &Arc<Self>,
        connection: &Arc<Connection>,
        listener: Listener,
        mut request: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<Body> {
        if let Some(refusal) = self.reject_large_body(&request) {
            return refusal;
        }
        if let Err(why) = http::origin_allowed(request.headers()) {
            return http::jsonrpc_error(StatusCode::FORBIDDEN, plexus_jsonrpc::ErrorCode::INVALID_REQUEST, why);
        }
        if let Some(oauth) = &self.oauth {
            let path = request.uri().path();
            let protected = path == self.path || (self.legacy().is_some() && path == MESSAGES_PATH);
            request = match oauth.route(self, listener, request, protected).await {
                Routed::Answered(response) => return response,
                Routed::Pass(request) => request,
            };
        }
        if let Some(missing) = self.remote.require_headers.iter().find(|required| {
            request
                .headers()
                .get(&required.name)
                .is_none_or(|value| value.as_bytes() != required.value.as_bytes())
        }) {
            let response = http::text(
                StatusCode::UNAUTHORIZED,
                format!(
                    "the request lacks the header {:?} with the required value (--require-header)",
                    missing.name
                ),
            );
            return http::with_header(
                response,
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer realm=\"plexus-testserver\""),
            );
        }
        let path = request.uri().path();
        let method = request.method().clone();
        let at_endpoint = path == self.path;
        let at_messages = path == MESSAGES_PATH;
        if let (Kind::Http { .. }, true) = (&self.kind, at_endpoint)
            && let Some(refusal) = Streamable::refuse_stateless(self, &request)
        {
            return refusal;
        }
        match &self.kind {
            Kind::Http { streamable, legacy } if at_endpoint => match (method, legacy) {
                (hyper::Method::GET, Some(legacy)) => legacy.open_stream(self, &request),
                (hyper::Method::POST, _) => streamable.post(self, connection, request).await,
                (hyper::Method::GET, None) => streamable.get(&request),
                (hyper::Method::DELETE, _) => streamable.delete(self, &request),
                _ => http::method_not_allowed("GET, POST, DELETE", "the MCP endpoint takes GET, POST and DELETE"),
            },
            Kind::Http {
                legacy: Some(legacy), ..
            }
            | Kind::Sse(legacy)
                if at_messages =>
            {
                if method == hyper::Method::POST {
                    legacy.post_message(self, connection, request).await
                } else {
                    http::method_not_allowed("POST", "the message endpoint takes POST")
                }
            }
            Kind::Sse(legacy) if at_endpoint => {
                if method == hyper::Method::GET {
                    legacy.open_stream(self, &request)
                } else {
                    http::method_not_allowed(
                        "GET",
                        "this is a legacy HTTP+SSE server: GET this URL for the event stream, then POST to its endpoint",
                    )
                }
            }
            Kind::Ws(config) if at_endpoint => config.upgrade(self, connection, request).await,
            _ => http::text(StatusCode::NOT_FOUND, format!("nothing is served at {path}")),
        }
    }
}

/// A remote server running in-process on a listener the caller bound: the same server as the
/// binary's `http`, `sse` and `ws` modes. Dropping it stops it.
///
/// In-process, the process options other than `--event-log` do nothing, and a crash (the `crash`
/// tool, `--crash-after`) stops the server instead of exiting the process.
pub struct RemoteServer {
    url: String,
    addr: SocketAddr,
    app: Arc<App>,
    accept_loop: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServer")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl RemoteServer {
    /// Serves `plexus-testserver MODE ARGS…` (`http`, `sse` or `ws`, with the binary's options)
    /// on an ephemeral port of 127.0.0.1, on the current tokio runtime: a test's server.
    pub async fn from_args(mode: &str, args: &[&str]) -> Result<RemoteServer, RemoteError> {
        use clap::Parser as _;
        let argv = ["plexus-testserver", mode].into_iter().chain(args.iter().copied());
        let command = crate::Cli::try_parse_from(argv)
            .map_err(RemoteError::Arguments)?
            .command;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(RemoteError::Bind)?;
        match command {
            crate::Command::Http(options) => RemoteServer::http(listener, options),
            crate::Command::Sse(options) => RemoteServer::sse(listener, options),
            crate::Command::Ws(options) => RemoteServer::ws(listener, options),
            crate::Command::Stdio(_) | crate::Command::Proxy(_) => {
                Err(RemoteError::NotRemote { mode: mode.to_owned() })
            }
        }
    }

    /// Serves Streamable HTTP on `listener`, on the current tokio runtime.
    pub fn http(listener: TcpListener, options: HttpOptions) -> Result<RemoteServer, RemoteError> {
        let events = open_event_log(&options.process)?;
        Self::start_http(listener, options, events, CrashPolicy::StopServer)
    }

    /// Serves the legacy HTTP+SSE transport on `listener`, on the current tokio runtime.
    pub fn sse(listener: TcpListener, options: SseOptions) -> Result<RemoteServer, RemoteError> {
        let events = open_event_log(&options.process)?;
        Self::start_sse(listener, options, events, CrashPolicy::StopServer)
    }

    /// Serves WebSocket on `listener`, on the current tokio runtime.
    pub fn ws(listener: TcpListener, options: WsOptions) -> Result<RemoteServer, RemoteError> {
        let events = open_event_log(&options.process)?;
        Self::start_ws(listener, options, events, CrashPolicy::StopServer)
    }

    /// The URL clients connect to: `http://127.0.0.1:PORT/PATH` (`ws://…` for WebSocket).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OAuth side (`--oauth`): the record of requests, tokens, and the switches tests flip.
    pub fn oauth(&self) -> Option<OAuthHandle> {
        let oauth = self.app.oauth.as_ref()?;
        Some(OAuthHandle::new(Arc::clone(oauth), Arc::downgrade(&self.app)))
    }

    /// Waits until the server stops by itself (a crash) and has closed its listener.
    pub async fn stopped(&mut self) {
        until_stopped(&mut self.app.stopping()).await;
        if let Some(accept_loop) = self.accept_loop.take() {
            let _ = accept_loop.await;
        }
    }

    /// Stops accepting, closes every connection and ends every session.
    pub async fn shutdown(mut self) {
        self.app.stop.send_replace(true);
        if let Some(accept_loop) = self.accept_loop.take() {
            let _ = accept_loop.await;
        }
        if let Some(oauth) = &self.app.oauth {
            for accept_loop in oauth.take_accept_loops() {
                let _ = accept_loop.await;
            }
        }
        self.app.close_sessions();
    }

    fn start_http(
        listener: TcpListener,
        options: HttpOptions,
        events: Arc<EventLog>,
        crash: CrashPolicy,
    ) -> Result<RemoteServer, RemoteError> {
        let path = endpoint_path(&options.remote, DEFAULT_MCP_PATH)?;
        let legacy = options
            .legacy_sse_at_same_url
            .then(|| Legacy::new(&options.endpoint, &options.sessions));
        let kind = Kind::Http {
            streamable: Streamable::new(&options),
            legacy,
        };
        Self::start(
            listener,
            Mode {
                scheme: "http",
                path,
                kind,
                oauth: Some(&options.oauth),
            },
            options.server,
            options.remote,
            events,
            crash,
        )
    }

    fn start_sse(
        listener: TcpListener,
        options: SseOptions,
        events: Arc<EventLog>,
        crash: CrashPolicy,
    ) -> Result<RemoteServer, RemoteError> {
        let path = endpoint_path(&options.remote, DEFAULT_SSE_PATH)?;
        if path == MESSAGES_PATH {
            return Err(RemoteError::InvalidOption {
                option: "path",
                problem: OptionProblem::MessagesPath,
            });
        }
        let kind = Kind::Sse(Legacy::new(&options.endpoint, &options.sessions));
        Self::start(
            listener,
            Mode {
                scheme: "http",
                path,
                kind,
                oauth: Some(&options.oauth),
            },
            options.server,
            options.remote,
            events,
            crash,
        )
    }

    fn start_ws(
        listener: TcpListener,
        options: WsOptions,
        events: Arc<EventLog>,
        crash: CrashPolicy,
    ) -> Result<RemoteServer, RemoteError> {
        let path = endpoint_path(&options.remote, DEFAULT_MCP_PATH)?;
        let kind = Kind::Ws(WsConfig::new(options.no_subprotocol));
        Self::start(
            listener,
            Mode {
                scheme: "ws",
                path,
                kind,
                oauth: None,
            },
            options.server,
            options.remote,
            events,
            crash,
        )
    }

    /// The three modes' common tail.
    fn start(
        listener: TcpListener,
        mode: Mode<'_>,
        server: ServerOptions,
        remote: RemoteOptions,
        events: Arc<EventLog>,
        crash: CrashPolicy,
    ) -> Result<RemoteServer, RemoteError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| RemoteError::NoRuntime)?;
        let _entered = runtime.enter();
        let addr = listener.local_addr().map_err(RemoteError::Address)?;
        let Mode {
            scheme,
            path,
            kind,
            oauth,
        } = mode;
        let tls = tls::acceptor(&remote, scheme != "ws")?;
        let scheme = match (scheme, tls.is_some()) {
            ("ws", true) => "wss",
            (_, true) => "https",
            (scheme, false) => scheme,
        };
        let url = format!("{scheme}://{addr}{path}");
        let (oauth, authority_listener) = match oauth.filter(|oauth| oauth.enabled) {
            Some(options) => {
                let (oauth, listener) = OAuth::new(options, addr, &path, Arc::clone(&events))?;
                (Some(oauth), listener)
            }
            None => (None, None),
        };
        events.record(&json!({"event": "listening", "url": url}));
        let app = Arc::new(App {
            server: Arc::new(Server::new(server, Arc::clone(&events))),
            events,
            remote,
            path,
            addr,
            kind,
            oauth,
            requests_seen: AtomicU64::new(0),
            ws_messages_seen: AtomicU64::new(0),
            stop: watch::Sender::new(false),
            crash,
            crashing: AtomicBool::new(false),
            tls,
        });
        if let (Some(oauth), Some(listener)) = (&app.oauth, authority_listener) {
            oauth.keep_accept_loop(spawn_authority_listener(&app, listener, 0));
        }
        let accept_loop = runtime.spawn(connection::accept_loop(Arc::clone(&app), listener, Listener::Mcp));
        Ok(RemoteServer {
            url,
            addr,
            app,
            accept_loop: Some(accept_loop),
        })
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        self.app.stop.send_replace(true);
        self.app.close_sessions();
    }
}

/// What [`RemoteServer::start`] needs to know of a mode.
struct Mode<'a> {
    scheme: &'static str,
    /// The endpoint path.
    path: String,
    kind: Kind,
    /// The OAuth options of the modes that have them.
    oauth: Option<&'a OAuthOptions>,
}

/// Serves authorization server `index` on its own `listener`, until the server stops.
pub(crate) fn spawn_authority_listener(app: &Arc<App>, listener: TcpListener, index: usize) -> JoinHandle<()> {
    tokio::spawn(connection::accept_loop(
        Arc::clone(app),
        listener,
        Listener::Authority(index),
    ))
}

/// A new session id: 32 lowercase hex digits from the OS's random source.
pub(crate) fn new_session_id() -> Result<String, http::Refusal> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        Box::new(http::text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot draw a random session id: {e}"),
        ))
    })?;
    Ok(bytes.iter().fold(String::with_capacity(32), |mut id, byte| {
        use std::fmt::Write as _;
        let _ = write!(id, "{byte:02x}");
        id
    }))
}

/// Waits until the server stops (at once if it has).
pub(crate) async fn until_stopped(stopping: &mut watch::Receiver<bool>) {
    // An error means the sender is gone: the server is gone too.
    let _ = stopping.wait_for(|stopped| *stopped).await;
}

/// A weak handle that background tasks keep, so that they never keep a stopped server alive.
pub(crate) type WeakApp = Weak<App>;

fn endpoint_path(remote: &RemoteOptions, default: &str) -> Result<String, RemoteError> {
    match &remote.path {
        Some(path) => options::parse_path(path).map_err(|problem| RemoteError::InvalidOption {
            option: "path",
            problem: problem.into(),
        }),
        None => Ok(default.to_owned()),
    }
}

fn open_event_log(process: &ProcessOptions) -> Result<Arc<EventLog>, RemoteError> {
    let events = EventLog::open(process.event_log.as_deref()).map_err(|source| RemoteError::EventLog {
        path: process.event_log.clone().unwrap_or_default(),
        source,
    })?;
    Ok(Arc::new(events))
}

/// Runs `plexus-testserver http`: binds 127.0.0.1, prints `listening on URL`, serves until
/// SIGINT or SIGTERM (status 0, unless `--ignore-signals`).
pub fn run_http(options: HttpOptions) -> ExitCode {
    let process = options.process.clone();
    let port = options.remote.port;
    run_binary(&process, port, move |listener, events| {
        RemoteServer::start_http(listener, options, events, CrashPolicy::ExitProcess)
    })
}

/// Runs `plexus-testserver sse`, like [`run_http`].
pub fn run_sse(options: SseOptions) -> ExitCode {
    let process = options.process.clone();
    let port = options.remote.port;
    run_binary(&process, port, move |listener, events| {
        RemoteServer::start_sse(listener, options, events, CrashPolicy::ExitProcess)
    })
}

/// Runs `plexus-testserver ws`, like [`run_http`].
pub fn run_ws(options: WsOptions) -> ExitCode {
    let process = options.process.clone();
    let port = options.remote.port;
    run_binary(&process, port, move |listener, events| {
        RemoteServer::start_ws(listener, options, events, CrashPolicy::ExitProcess)
    })
}

fn run_binary(
    process: &ProcessOptions,
    port: u16,
    start: impl FnOnce(TcpListener, Arc<EventLog>) -> Result<RemoteServer, RemoteError>,
) -> ExitCode {
    let runtime = match process::runtime(true) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let code = runtime.block_on(async {
        let (events, mut signals) = match process::start(process) {
            Ok(started) => started,
            Err(code) => return code,
        };
        let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("plexus-testserver: cannot listen on 127.0.0.1:{port}: {e}");
                events.exit(SETUP_FAILURE.into());
                return ExitCode::from(SETUP_FAILURE);
            }
        };
        let server = match start(listener, Arc::clone(&events)) {
            Ok(server) => server,
            Err(e) => {
                eprintln!("plexus-testserver: {}", plexus_jsonrpc::error_chain(&e));
                events.exit(SETUP_FAILURE.into());
                return ExitCode::from(SETUP_FAILURE);
            }
        };
        let mut stdout = std::io::stdout().lock();
        let authority = server
            .oauth()
            .map(|oauth| format!("authorization server at {}\n", oauth.issuer()))
            .unwrap_or_default();
        let lines = format!("listening on {}\n{authority}", server.url());
        if let Err(e) = stdout.write_all(lines.as_bytes()).and_then(|()| stdout.flush()) {
            eprintln!("plexus-testserver: cannot print the URL on stdout: {e}");
        }
        drop(stdout);
        signals.until_fatal(&events, process.ignore_signals).await;
        server.shutdown().await;
        events.exit(0);
        ExitCode::SUCCESS
    });
    // Work still in flight (slow tools, open streams) is abandoned, not awaited.
    runtime.shutdown_background();
    code
}
