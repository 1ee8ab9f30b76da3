//! Opening a connection to an origin: TCP (`TCP_NODELAY`), through a proxy (a `CONNECT` tunnel
//! made with hyper's upgrade, or the proxy itself for plain `http`), and TLS with the settings'
//! roots, client certificate and ALPN.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::proxy::ProxyEndpoint;
use super::{MAX_HEAD_SIZE, OriginKey, TCP_KEEPALIVE};
use crate::tls::{Alpn, TlsOptions, server_config};

/// A byte stream a boxed [`NetStream`] holds (a tunnel, TLS over a tunnel).
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// An open connection's byte stream: TCP, TLS over TCP, or either through a proxy's tunnel.
pub struct NetStream(Kind);

enum Kind {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    Tunneled(Box<dyn Io>, /* the server chose h2 */ bool),
}

impl std::fmt::Debug for NetStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.0 {
            Kind::Tcp(_) => "tcp",
            Kind::Tls(_) => "tls",
            Kind::Tunneled(..) => "tunneled",
        };
        f.debug_tuple("NetStream").field(&kind).finish()
    }
}

impl NetStream {
    /// Whether the server chose HTTP/2 in the TLS handshake.
    pub(crate) fn is_h2(&self) -> bool {
        match &self.0 {
            Kind::Tcp(_) => false,
            Kind::Tls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
            Kind::Tunneled(_, h2) => *h2,
        }
    }
}

impl AsyncRead for NetStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Kind::Tcp(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Kind::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
            Kind::Tunneled(io, _) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for NetStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Kind::Tcp(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Kind::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
            Kind::Tunneled(io, _) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Kind::Tcp(tcp) => Pin::new(tcp).poll_write_vectored(cx, bufs),
            Kind::Tls(tls) => Pin::new(tls.as_mut()).poll_write_vectored(cx, bufs),
            Kind::Tunneled(io, _) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            Kind::Tcp(tcp) => tcp.is_write_vectored(),
            Kind::Tls(tls) => tls.is_write_vectored(),
            Kind::Tunneled(io, _) => io.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Kind::Tcp(tcp) => Pin::new(tcp).poll_flush(cx),
            Kind::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
            Kind::Tunneled(io, _) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Kind::Tcp(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Kind::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
            Kind::Tunneled(io, _) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }
}

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// HTTP requests; `h2` offers HTTP/2 to a TLS server.
    Requests { h2: bool },
    /// A byte stream for another protocol (the WebSocket upgrade, which is HTTP/1.1).
    Stream,
}

/// How a connection reached the origin.
pub(crate) struct Opened {
    pub(crate) stream: NetStream,
    /// The stream goes to a proxy that forwards plain `http` requests (absolute form).
    pub(crate) forwarded: bool,
}

/// Opens a connection to `origin` for `purpose`, through `proxy` if one applies.
pub(crate) async fn open(
    origin: &OriginKey,
    proxy: Option<&ProxyEndpoint>,
    purpose: Purpose,
    tls: &TlsOptions,
) -> io::Result<Opened> {
    let alpn = match purpose {
        Purpose::Requests { h2: true } => Alpn::Http2OrHttp1,
        Purpose::Requests { h2: false } | Purpose::Stream => Alpn::Http1,
    };
    let Some(proxy) = proxy else {
        let tcp = tcp(&origin.host, origin.port).await?;
        let stream = if origin.tls {
            NetStream(Kind::Tls(Box::new(handshake(tcp, &origin.host, alpn, tls).await?)))
        } else {
            NetStream(Kind::Tcp(tcp))
        };
        return Ok(Opened {
            stream,
            forwarded: false,
        });
    };
    let through = |e: io::Error| io::Error::new(e.kind(), format!("through the proxy {}: {e}", proxy.shown));
    let tcp = tcp(&proxy.host, proxy.port).await.map_err(through)?;
    let to_proxy = if proxy.tls {
        NetStream(Kind::Tls(Box::new(
            handshake(tcp, &proxy.host, Alpn::Http1, tls).await.map_err(through)?,
        )))
    } else {
        NetStream(Kind::Tcp(tcp))
    };
    if !origin.tls && purpose != Purpose::Stream {
        return Ok(Opened {
            stream: to_proxy,
            forwarded: true,
        });
    }
    let tunnel = tunnel(to_proxy, proxy, origin).await?;
    let stream = if origin.tls {
        let config = server_config(alpn, tls).map_err(io::Error::other)?;
        let name = server_name(&origin.host)?;
        let tls = TlsConnector::from(config)
            .connect(name, tunnel)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("TLS: {e}")))?;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        NetStream(Kind::Tunneled(Box::new(tls), h2))
    } else {
        NetStream(Kind::Tunneled(Box::new(tunnel), false))
    };
    Ok(Opened {
        stream,
        forwarded: false,
    })
}

/// A TCP connection to `host` (each of its addresses in turn), with `TCP_NODELAY` (requests
/// are written whole, and waiting for more to send would only add latency) and TCP keepalive
/// after [`TCP_KEEPALIVE`] (a silent event stream whose peer vanished is noticed).
async fn tcp(host: &str, port: u16) -> io::Result<TcpStream> {
    let tcp = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => TcpStream::connect((ip, port)).await?,
        Err(_) => TcpStream::connect((host, port)).await?,
    };
    tcp.set_nodelay(true)?;
    socket2::SockRef::from(&tcp).set_tcp_keepalive(&socket2::TcpKeepalive::new().with_time(TCP_KEEPALIVE))?;
    Ok(tcp)
}

/// The name the server's certificate must have.
fn server_name(host: &str) -> io::Result<ServerName<'static>> {
    ServerName::try_from(host.to_owned()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the host cannot be checked against a TLS certificate: {e}"),
        )
    })
}

/// The TLS handshake with `host` over `tcp`.
async fn handshake(tcp: TcpStream, host: &str, alpn: Alpn, options: &TlsOptions) -> io::Result<TlsStream<TcpStream>> {
    let config = server_config(alpn, options).map_err(io::Error::other)?;
    let name = server_name(host)?;
    TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("TLS: {e}")))
}

/// Asks `proxy` for a tunnel to `origin` (`CONNECT host:port`, with the proxy's credentials)
/// and returns the tunnel once the proxy answered 2xx.
async fn tunnel(
    stream: NetStream,
    proxy: &ProxyEndpoint,
    origin: &OriginKey,
) -> io::Result<TokioIo<hyper::upgrade::Upgraded>> {
    let failed = |reason: String| io::Error::other(format!("the proxy {} {reason}", proxy.shown));
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .max_header_size(MAX_HEAD_SIZE)
        .handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
        .await
        .map_err(|e| failed(format!("could not be spoken to: {e}")))?;
    let authority = if origin.host.contains(':') {
        format!("[{}]:{}", origin.host, origin.port)
    } else {
        format!("{}:{}", origin.host, origin.port)
    };
    let mut request = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(authority.as_str())
        .header(http::header::HOST, authority.as_str());
    if let Some(authorization) = &proxy.authorization {
        request = request.header(http::header::PROXY_AUTHORIZATION, authorization.clone());
    }
    let request = request
        .body(Empty::new())
        .map_err(|e| failed(format!("cannot be asked for a tunnel to {authority}: {e}")))?;
    let mut connection = connection.with_upgrades();
    let mut answer = std::pin::pin!(sender.send_request(request));
    let mut finished = None;
    let response = tokio::select! {
        biased;
        response = &mut answer => response,
        done = &mut connection => {
            finished = Some(done);
            answer.await
        }
    }
    .map_err(|e| {
        failed(format!(
            "did not open a tunnel to {authority}: {}",
            super::error::cause(&e)
        ))
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!(
            "refused the tunnel to {authority}: HTTP {}{}",
            status.as_u16(),
            status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default()
        )));
    }
    if finished.is_none() {
        connection
            .await
            .map_err(|e| failed(format!("broke the tunnel to {authority}: {e}")))?;
    }
    let upgraded = hyper::upgrade::on(response)
        .await
        .map_err(|e| failed(format!("did not hand over the tunnel to {authority}: {e}")))?;
    Ok(TokioIo::new(upgraded))
}
