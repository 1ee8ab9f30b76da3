//! Accepting TCP connections and serving HTTP/1.1 on each, with a way to drop a connection without
//! answering: with a TCP reset (`--reset-after`) or a plain close (`--close-after-request-ms`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use nix::sys::socket::{setsockopt, sockopt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;

use super::{App, Listener, http, until_stopped};

/// The most connections served at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 1024;
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// One accepted connection, as its requests' handlers see it.
#[derive(Default)]
pub(crate) struct Connection {
    /// Close the socket with a reset (SO_LINGER 0) when it is dropped.
    reset: AtomicBool,
    /// Tells the connection's task to drop the connection now.
    drop_now: Notify,
}

impl Connection {
    /// Makes the socket close with a TCP reset when whoever owns it drops it (an upgraded
    /// WebSocket's task).
    pub(crate) fn mark_reset(&self) {
        self.reset.store(true, Ordering::Relaxed);
    }

    /// Drops the connection with a TCP reset, without answering; never returns.
    pub(crate) async fn reset(&self) {
        self.mark_reset();
        match self.close().await {}
    }

    /// Closes the connection (a FIN once what the client sent was read), without answering;
    /// never returns.
    pub(crate) async fn close(&self) -> std::convert::Infallible {
        self.drop_now.notify_one();
        std::future::pending().await
    }
}

/// The socket, set to close with a reset when its connection says so.
struct ResettableStream {
    stream: TcpStream,
    connection: Arc<Connection>,
}

impl Drop for ResettableStream {
    fn drop(&mut self) {
        if self.connection.reset.load(Ordering::Relaxed) {
            let linger = nix::libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            if let Err(e) = setsockopt(&self.stream, sockopt::Linger, &linger) {
                eprintln!("plexus-testserver: cannot set SO_LINGER to reset a connection: {e}");
            }
        }
    }
}

impl AsyncRead for ResettableStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ResettableStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// Accepts connections on `listener` (which is `which`) until the server stops, then drops
/// every connection.
pub(crate) async fn accept_loop(app: Arc<App>, listener: TcpListener, which: Listener) {
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut stopping = app.stopping();
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = until_stopped(&mut stopping) => break,
            accepted = async {
                let permit = Arc::clone(&limit).acquire_owned().await;
                (permit, listener.accept().await)
            } => accepted,
        };
        match accepted {
            (Ok(permit), Ok((stream, _peer))) => {
                let _ = stream.set_nodelay(true);
                let app = Arc::clone(&app);
                connections.spawn(async move {
                    serve(app, stream, which).await;
                    drop(permit);
                });
            }
            (_, Err(e)) => {
                // Out of descriptors, or a connection reset before it was accepted: go on.
                eprintln!("plexus-testserver: cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            (Err(_), _) => break,
        }
        while connections.try_join_next().is_some() {}
    }
    // Dropping the set aborts every connection's task, which drops its socket.
    drop(connections);
}

/// Serves one connection until it ends, the server stops, or a handler resets it: HTTP/1.1, or
/// over TLS (`--tls-cert`, on the MCP endpoint's listener) HTTP/2 when the client chose it.
async fn serve(app: Arc<App>, stream: TcpStream, which: Listener) {
    let connection = Arc::new(Connection::default());
    let stream = ResettableStream {
        stream,
        connection: Arc::clone(&connection),
    };
    let acceptor = app.tls().filter(|_| which == Listener::Mcp).cloned();
    let Some(acceptor) = acceptor else {
        serve_io(app, stream, connection, which, false).await;
        return;
    };
    let tls = match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            app.events()
                .record(&serde_json::json!({"event": "tls", "error": e.to_string()}));
            return;
        }
        Err(_) => return,
    };
    let session = tls.get_ref().1;
    let h2 = session.alpn_protocol() == Some(b"h2");
    app.events().record(&serde_json::json!({
        "event": "tls",
        "alpn": session.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned()),
        "client_certificate": session.peer_certificates().is_some_and(|chain| !chain.is_empty()),
    }));
    serve_io(app, tls, connection, which, h2).await;
}

/// Serves HTTP/1.1 (or HTTP/2 with `h2`) on `io`.
async fn serve_io<I>(app: Arc<App>, io: I, connection: Arc<Connection>, which: Listener, h2: bool)
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let io = TokioIo::new(io);
    let service = {
        let app = Arc::clone(&app);
        let connection = Arc::clone(&connection);
        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let app = Arc::clone(&app);
            let connection = Arc::clone(&connection);
            async move {
                if app.is_crashing() {
                    // A server on its way down answers nothing more: hyper drops the connection.
                    return Err(std::io::Error::other("the server is crashing"));
                }
                http::log_request(app.events(), &request);
                let gzip = app.remote().gzip && http::accepts_gzip(request.headers());
                let mut response = app.dispatch(&connection, which, request).await;
                if gzip {
                    response = http::gzip(app.events(), response);
                }
                if let Some(ms) = app.remote().slow_headers_ms.filter(|_| app.faults_armed()) {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Ok::<_, std::io::Error>(response)
            }
        })
    };
    let mut stopping = app.stopping();
    if h2 {
        let serving = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .serve_connection(io, service);
        tokio::select! {
            _ = serving => {}
            () = connection.drop_now.notified() => {}
            () = until_stopped(&mut stopping) => {}
        }
        return;
    }
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    let serving = builder.serve_connection(io, service).with_upgrades();
    tokio::select! {
        _ = serving => {}
        // Dropping the connection drops the socket, with a reset if the handler marked it.
        () = connection.drop_now.notified() => {}
        () = until_stopped(&mut stopping) => {}
    }
}
