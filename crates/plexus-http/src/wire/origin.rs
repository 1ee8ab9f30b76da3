//! Where connections go: the endpoint's host and port, TCP with `TCP_NODELAY`, and TLS for `https`
//! (rustls with the aws-lc-rs provider and the platform's verifier, ALPN `http/1.1`).

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;

use std::task::{Context, Poll};

use plexus_net::tls::{Alpn, server_config};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use url::{Host, Url};

/// A connection's byte stream: plain TCP or TLS over TCP.
#[derive(Debug)]
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The scheme, host and port every connection of a transport goes to (redirects stay within
/// the origin, so one is enough).
#[derive(Debug)]
pub(crate) struct Origin {
    host: Host<String>,
    port: u16,
    /// The name the server's certificate must have, for `https`.
    tls: Option<ServerName<'static>>,
    /// The CA file trusted besides the platform's roots.
    ca: Option<PathBuf>,
}

impl Origin {
    /// The origin of an `http` or `https` URL (which always has a host and a known port).
    pub(crate) fn new(url: &Url) -> Result<Origin, String> {
        let host = url.host().ok_or("the URL has no host")?.to_owned();
        let port = url.port_or_known_default().ok_or("the URL has no port")?;
        let tls = match url.scheme() {
            "https" => {
                let name = match &host {
                    Host::Domain(domain) => ServerName::try_from(domain.clone()),
                    Host::Ipv4(ip) => Ok(ServerName::from(std::net::IpAddr::V4(*ip))),
                    Host::Ipv6(ip) => Ok(ServerName::from(std::net::IpAddr::V6(*ip))),
                };
                Some(name.map_err(|e| format!("the host cannot be checked against a TLS certificate: {e}"))?)
            }
            _ => None,
        };
        Ok(Origin {
            host,
            port,
            tls,
            ca: None,
        })
    }

    /// Trusts the CA certificates of the PEM file `ca` too.
    pub(crate) fn with_ca(mut self, ca: Option<PathBuf>) -> Self {
        self.ca = ca;
        self
    }

    /// Opens a TCP connection (trying each address of the host in turn) and, for `https`, does
    /// the TLS handshake.
    pub(crate) async fn connect(&self) -> io::Result<Stream> {
        let tcp = match &self.host {
            Host::Domain(domain) => TcpStream::connect((domain.as_str(), self.port)).await?,
            Host::Ipv4(ip) => TcpStream::connect(SocketAddr::from((*ip, self.port))).await?,
            Host::Ipv6(ip) => TcpStream::connect(SocketAddr::from((*ip, self.port))).await?,
        };
        // Requests are written whole; waiting for more to send would only add latency.
        tcp.set_nodelay(true)?;
        let Some(name) = &self.tls else {
            return Ok(Stream::Plain(tcp));
        };
        let connector = TlsConnector::from(server_config(Alpn::Http1, self.ca.as_deref()).map_err(io::Error::other)?);
        let tls = connector
            .connect(name.clone(), tcp)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("TLS: {e}")))?;
        Ok(Stream::Tls(Box::new(tls)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_of_urls() {
        let origin = Origin::new(&Url::parse("https://example.com/mcp").unwrap()).unwrap();
        assert_eq!(origin.port, 443);
        assert!(origin.tls.is_some());
        let origin = Origin::new(&Url::parse("http://[::1]:8080/mcp").unwrap()).unwrap();
        assert_eq!((origin.host.to_string(), origin.port), ("[::1]".to_owned(), 8080));
        assert!(origin.tls.is_none());
        let origin = Origin::new(&Url::parse("https://127.0.0.1/mcp").unwrap()).unwrap();
        assert!(matches!(origin.tls, Some(ServerName::IpAddress(_))));
    }
}
