//! `plexus-testserver proxy`: an HTTP proxy on 127.0.0.1 for the tests of clients that go
//! through one. It tunnels `CONNECT host:port` (https, ws, wss) and forwards requests in absolute
//! form (`POST http://host:port/path`), optionally requires `Proxy-Authorization` (Basic), and
//! logs each request as a `proxy` event (method, target, whether it was authorized). It reaches
//! loopback addresses only: a test's proxy never sends anything off the machine.

use std::convert::Infallible;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use clap::Args;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::ProcessOptions;
use crate::events::EventLog;
use crate::process::{self, SETUP_FAILURE};

/// How long the proxy waits for a request's headers, and for a connection to the origin.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Options of `plexus-testserver proxy`.
#[derive(Debug, Clone, Default, Args)]
pub struct ProxyOptions {
    /// The TCP port on 127.0.0.1; 0 picks a free one.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// Require `Proxy-Authorization: Basic` with these credentials; without them the proxy
    /// answers 407 with `Proxy-Authenticate: Basic realm="plexus-testserver"`.
    #[arg(long, value_name = "USER:PASSWORD")]
    pub require_auth: Option<String>,
    /// Process-level test aids (the event log).
    #[command(flatten)]
    pub process: ProcessOptions,
}

/// Why an in-process proxy could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The arguments are not a valid proxy command line.
    #[error("invalid proxy arguments")]
    Arguments(#[source] clap::Error),
    /// The arguments are those of another mode.
    #[error("not the proxy mode")]
    NotProxy,
    /// No ephemeral port of 127.0.0.1 could be bound.
    #[error("cannot listen on 127.0.0.1")]
    Bind(#[source] std::io::Error),
    /// The event log (`--event-log`) cannot be opened.
    #[error("cannot open the event log")]
    EventLog(#[source] std::io::Error),
}

/// A proxy running in-process on a listener the caller bound. Dropping it stops it.
#[derive(Debug)]
pub struct ProxyServer {
    url: String,
    accept_loop: JoinHandle<()>,
}

impl Drop for ProxyServer {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

struct Proxy {
    events: Arc<EventLog>,
    /// The `Proxy-Authorization` value required, if any.
    required: Option<HeaderValue>,
}

impl ProxyServer {
    /// Serves `plexus-testserver proxy ARGS…` on an ephemeral port of 127.0.0.1, on the current
    /// tokio runtime: a test's proxy.
    pub async fn from_args(args: &[&str]) -> Result<ProxyServer, ProxyError> {
        use clap::Parser as _;
        let argv = ["plexus-testserver", "proxy"].into_iter().chain(args.iter().copied());
        let crate::Command::Proxy(options) = crate::Cli::try_parse_from(argv).map_err(ProxyError::Arguments)?.command
        else {
            return Err(ProxyError::NotProxy);
        };
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(ProxyError::Bind)?;
        let events = EventLog::open(options.process.event_log.as_deref()).map_err(ProxyError::EventLog)?;
        Ok(ProxyServer::start(listener, &options, Arc::new(events)))
    }

    fn start(listener: TcpListener, options: &ProxyOptions, events: Arc<EventLog>) -> ProxyServer {
        let url = format!(
            "http://{}",
            listener
                .local_addr()
                .map_or_else(|_| "127.0.0.1:0".to_owned(), |a| a.to_string())
        );
        let required = options.require_auth.as_ref().map(|credentials| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
            HeaderValue::try_from(format!("Basic {encoded}")).unwrap_or(HeaderValue::from_static("Basic"))
        });
        let proxy = Arc::new(Proxy { events, required });
        let accept_loop = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(Arc::clone(&proxy), stream));
            }
        });
        ProxyServer { url, accept_loop }
    }

    /// The proxy's URL: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }
}

type ProxyBody = BoxBody<Bytes, hyper::Error>;

fn text(status: StatusCode, message: impl Into<String>) -> Response<ProxyBody> {
    let body = Full::new(Bytes::from(format!("plexus-testserver proxy: {}\n", message.into())))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

async fn serve(proxy: Arc<Proxy>, stream: TcpStream) {
    let service = service_fn(move |request: Request<Incoming>| {
        let proxy = Arc::clone(&proxy);
        async move { Ok::<_, Infallible>(proxy.handle(request).await) }
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(TIMEOUT);
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

impl Proxy {
    async fn handle(&self, request: Request<Incoming>) -> Response<ProxyBody> {
        let authorized = request.headers().get(header::PROXY_AUTHORIZATION).is_some();
        let target = if request.method() == Method::CONNECT {
            request.uri().authority().map(ToString::to_string).unwrap_or_default()
        } else {
            request.uri().to_string()
        };
        self.events.record(&json!({
            "event": "proxy",
            "method": request.method().as_str(),
            "target": target,
            "authorized": authorized,
        }));
        if let Some(required) = &self.required
            && request.headers().get(header::PROXY_AUTHORIZATION) != Some(required)
        {
            let mut response = text(
                StatusCode::PROXY_AUTHENTICATION_REQUIRED,
                "proxy credentials are required (--require-auth)",
            );
            response.headers_mut().insert(
                header::PROXY_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"plexus-testserver\""),
            );
            return response;
        }
        let Some((host, port)) = loopback_target(&request) else {
            return text(
                StatusCode::FORBIDDEN,
                format!("{target} is not a loopback address; this proxy reaches 127.0.0.1 and ::1 only"),
            );
        };
        let origin = SocketAddr::new(host, port);
        if request.method() == Method::CONNECT {
            tokio::spawn(tunnel(request, origin));
            let mut response = Response::new(Full::new(Bytes::new()).map_err(|never| match never {}).boxed());
            *response.status_mut() = StatusCode::OK;
            return response;
        }
        match forward(request, origin).await {
            Ok(response) => response,
            Err(why) => text(StatusCode::BAD_GATEWAY, why),
        }
    }
}

/// The loopback address and port a request goes to (`CONNECT host:port`, or an absolute URL).
fn loopback_target(request: &Request<Incoming>) -> Option<(IpAddr, u16)> {
    let authority = request.uri().authority()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse::<IpAddr>().ok()?
    };
    let port = authority
        .port_u16()
        .or_else(|| (request.uri().scheme_str() == Some("http")).then_some(80))?;
    ip.is_loopback().then_some((ip, port))
}

/// Copies bytes both ways between the upgraded client connection and the origin.
async fn tunnel(request: Request<Incoming>, origin: SocketAddr) {
    let Ok(upgraded) = hyper::upgrade::on(request).await else {
        return;
    };
    let Ok(Ok(mut server)) = tokio::time::timeout(TIMEOUT, TcpStream::connect(origin)).await else {
        return;
    };
    let _ = server.set_nodelay(true);
    let mut client = TokioIo::new(upgraded);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}

/// Sends a request in absolute form on to its origin (in origin form, without the proxy's
/// credentials) and gives back the origin's answer as it comes.
async fn forward(mut request: Request<Incoming>, origin: SocketAddr) -> Result<Response<ProxyBody>, String> {
    let stream = tokio::time::timeout(TIMEOUT, TcpStream::connect(origin))
        .await
        .map_err(|_| format!("{origin} did not accept a connection within {TIMEOUT:?}"))?
        .map_err(|e| format!("cannot connect to {origin}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("cannot speak HTTP to {origin}: {e}"))?;
    tokio::spawn(connection);
    let path = request
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), ToString::to_string);
    *request.uri_mut() = path.parse().map_err(|e| format!("bad path {path:?}: {e}"))?;
    request.headers_mut().remove(header::PROXY_AUTHORIZATION);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("{origin} did not answer: {e}"))?;
    Ok(response.map(BodyExt::boxed))
}

/// Runs `plexus-testserver proxy`: binds 127.0.0.1, prints `listening on URL`, serves until
/// SIGINT or SIGTERM.
pub fn run_proxy(options: &ProxyOptions) -> ExitCode {
    let runtime = match process::runtime(true) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let code = runtime.block_on(async {
        let (events, mut signals) = match process::start(&options.process) {
            Ok(started) => started,
            Err(code) => return code,
        };
        let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, options.port)).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("plexus-testserver: cannot listen on 127.0.0.1:{}: {e}", options.port);
                events.exit(SETUP_FAILURE.into());
                return ExitCode::from(SETUP_FAILURE);
            }
        };
        let server = ProxyServer::start(listener, options, Arc::clone(&events));
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = writeln!(stdout, "listening on {}", server.url()).and_then(|()| stdout.flush()) {
            eprintln!("plexus-testserver: cannot print the URL on stdout: {e}");
        }
        drop(stdout);
        signals.until_fatal(&events, options.process.ignore_signals).await;
        drop(server);
        events.exit(0);
        ExitCode::SUCCESS
    });
    runtime.shutdown_background();
    code
}
