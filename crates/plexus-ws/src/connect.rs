//! The upgrade: TCP, TLS for `wss`, the handshake with the subprotocol and the headers, and one
//! retry after an auth challenge.

use plexus_net::http::{HttpClient, HttpSettings, Target};
use plexus_net::redact::redact_url;
use plexus_net::{Credentials, rejection_of};
use std::io;
use std::time::Duration;

use plexus_transport::{TransportError, body_excerpt};
use tokio_tungstenite::client_async_with_config;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::{Error as WsError, ProtocolError, SubProtocolError, TlsError, UrlError};
use tokio_tungstenite::tungstenite::handshake::client::Response;
use tokio_tungstenite::tungstenite::http::header::{LOCATION, SEC_WEBSOCKET_PROTOCOL, USER_AGENT as USER_AGENT_HEADER};
use tokio_tungstenite::tungstenite::http::{HeaderMap, HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use url::Url;

use crate::config::{SUBPROTOCOL, WsConfig};

/// The `User-Agent` of the upgrade request, unless one is configured.
const USER_AGENT: &str = concat!("plexus-ws/", env!("CARGO_PKG_VERSION"));
use crate::connection::Socket;

/// Why the WebSocket transport could not connect, in its own words (the reason of its
/// [`TransportError::Connect`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WsConnectError {
    /// The dead-peer timeout is not longer than the ping interval.
    #[error("the dead-peer timeout ({dead_peer:?}) must be longer than the ping interval ({interval:?})")]
    Timeouts {
        /// The dead-peer timeout.
        dead_peer: Duration,
        /// The ping interval.
        interval: Duration,
    },
    /// The handshake took longer than the connect timeout.
    #[error("the WebSocket handshake did not complete within {0:?}")]
    HandshakeTimeout(Duration),
    /// The server accepted without the `mcp` subprotocol.
    #[error(
        "the server accepted the WebSocket without the subprotocol `{SUBPROTOCOL}` (its answer has no \
         Sec-WebSocket-Protocol header), so it does not speak MCP over WebSocket"
    )]
    NoSubprotocol,
    /// The server chose another subprotocol.
    #[error("the server chose the WebSocket subprotocol {chosen:?} instead of `{SUBPROTOCOL}`")]
    OtherSubprotocol {
        /// The subprotocol the server chose (peer text).
        chosen: String,
    },
    /// The server chose a subprotocol it was not offered.
    #[error("the server chose a WebSocket subprotocol it was not offered")]
    UnofferedSubprotocol,
    /// The upgrade was answered with a redirect, which is not followed.
    #[error(
        "the server answered the upgrade with a redirect (HTTP {status}) to {location}; WebSocket redirects are \
         not followed"
    )]
    Redirect {
        /// The status.
        status: u16,
        /// Where it pointed (redacted), or what was wrong with its `Location`.
        location: String,
    },
    /// This build has no TLS for the handshake library.
    #[error("TLS is not available")]
    NoTls,
    /// TLS failed.
    #[error("TLS")]
    Tls(#[source] TlsError),
    /// The URL cannot be used for the handshake.
    #[error("the URL cannot be used")]
    Url(#[source] UrlError),
    /// The handshake broke the protocol.
    #[error("the WebSocket handshake failed")]
    Protocol(#[source] ProtocolError),
    /// The connection failed.
    #[error(transparent)]
    Io(io::Error),
    /// Another failure of the handshake library.
    #[error(transparent)]
    Other(WsError),
}

/// Validates the configuration, then connects within the connect timeout.
pub(crate) async fn connect(config: &WsConfig) -> Result<Socket, TransportError> {
    let target = redact_url(&config.endpoint.url);
    let fail = |cause: WsConnectError| plexus_net::connect_error(&config.endpoint.url, cause);
    let url = Url::parse(&config.endpoint.url)
        .map_err(|e| plexus_net::connect_error(&config.endpoint.url, plexus_net::ConnectProblem::InvalidUrl(e)))?;
    plexus_net::require_scheme(&config.endpoint.url, url.scheme(), &["ws", "wss"], "WebSocket")?;
    if let Some(interval) = config.ping_interval
        && config.dead_peer_timeout <= interval
    {
        return Err(fail(WsConnectError::Timeouts {
            dead_peer: config.dead_peer_timeout,
            interval,
        }));
    }
    let credentials = Credentials::new(config.endpoint.headers.clone(), config.endpoint.auth.clone())
        .map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
    // plexus-net's connections: the proxy (a CONNECT tunnel), TLS with the platform's roots and
    // the entry's CA and client certificate, ALPN `http/1.1` (the upgrade is HTTP/1.1).
    let settings = HttpSettings::new(USER_AGENT)
        .connect_timeout(config.endpoint.connect_timeout)
        .proxy(config.endpoint.proxy.clone())
        .tls(config.endpoint.tls.clone())
        .http2(false);
    let client = HttpClient::new(settings).map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
    let endpoint = client
        .target(&url)
        .map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
    let upgrade = upgrade(config, &client, &endpoint, &target, &credentials);
    tokio::time::timeout(config.endpoint.connect_timeout, upgrade)
        .await
        .map_err(|_| fail(WsConnectError::HandshakeTimeout(config.endpoint.connect_timeout)))?
}

/// The upgrade, retried once when the auth provider resolves a 401 or 403.
async fn upgrade(
    config: &WsConfig,
    client: &HttpClient,
    endpoint: &Target,
    target: &str,
    credentials: &Credentials,
) -> Result<Socket, TransportError> {
    let url = endpoint.url();
    let fail = |cause: WsConnectError| plexus_net::connect_error(url.as_str(), cause);
    let what = format!("the WebSocket upgrade of {target}");
    let limits = WebSocketConfig::default()
        .max_message_size(Some(config.endpoint.max_message_size))
        .max_frame_size(Some(config.endpoint.max_message_size));
    let mut retries = 0;
    loop {
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| fail(handshake_failure(e)))?;
        let headers = request.headers_mut();
        // The pairs were checked by `Credentials` with the rules of the `http` crate: all convert.
        for (name, value) in credentials.headers("GET", url.as_str()).await?.iter() {
            if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
                headers.append(name, value);
            }
        }
        headers.insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
        if !headers.contains_key(USER_AGENT_HEADER) {
            headers.insert(USER_AGENT_HEADER, HeaderValue::from_static(USER_AGENT));
        }
        let stream = client
            .open_stream(endpoint)
            .await
            .map_err(|e| e.into_connect_error(url.as_str()))?;
        match client_async_with_config(request, stream, Some(limits)).await {
            Ok((socket, response)) => {
                check_subprotocol(&response).map_err(fail)?;
                return Ok(socket);
            }
            Err(WsError::Http(response)) if matches!(response.status().as_u16(), 401 | 403) => {
                let body = response.body().as_deref().unwrap_or_default();
                let status = response.status().as_u16();
                let rejection = rejection_of(&what, url.as_str(), status, response.headers(), body);
                credentials.rejected(&rejection, retries).await?;
                retries += 1;
            }
            Err(WsError::Http(response)) => return Err(refused(&what, url, &response)),
            Err(e) => return Err(fail(handshake_failure(e))),
        }
    }
}

/// The server must answer with the subprotocol it was offered (tungstenite checks it too; this
/// is the last word, whatever the library version).
fn check_subprotocol(response: &Response) -> Result<(), WsConnectError> {
    let chosen = response.headers().get(SEC_WEBSOCKET_PROTOCOL);
    match chosen.map(HeaderValue::as_bytes) {
        Some(b"mcp") => Ok(()),
        None => Err(WsConnectError::NoSubprotocol),
        Some(other) => Err(WsConnectError::OtherSubprotocol {
            chosen: String::from_utf8_lossy(other).into_owned(),
        }),
    }
}

/// Why a handshake failed (an I/O error without tungstenite's prefix).
fn handshake_failure(error: WsError) -> WsConnectError {
    match error {
        WsError::Io(e) => WsConnectError::Io(e),
        WsError::Tls(e) => WsConnectError::Tls(e),
        WsError::Url(UrlError::TlsFeatureNotEnabled) => WsConnectError::NoTls,
        WsError::Url(e) => WsConnectError::Url(e),
        WsError::Protocol(ProtocolError::SecWebSocketSubProtocolError(SubProtocolError::NoSubProtocol)) => {
            WsConnectError::NoSubprotocol
        }
        WsError::Protocol(ProtocolError::SecWebSocketSubProtocolError(SubProtocolError::InvalidSubProtocol)) => {
            WsConnectError::UnofferedSubprotocol
        }
        WsError::Protocol(e) => WsConnectError::Protocol(e),
        other => WsConnectError::Other(other),
    }
}

/// The error for an answer to the upgrade other than 101, 401 and 403: a redirect is not followed
/// (the headers and credentials must not go elsewhere); another status keeps an excerpt of the body.
fn refused(
    what: &str,
    url: &Url,
    response: &tokio_tungstenite::tungstenite::http::Response<Option<Vec<u8>>>,
) -> TransportError {
    let status = response.status().as_u16();
    if response.status().is_redirection() {
        let location = location(url, response.headers());
        return plexus_net::connect_error(url.as_str(), WsConnectError::Redirect { status, location });
    }
    TransportError::Http {
        status,
        what: what.to_owned(),
        body: body_excerpt(response.body().as_deref().unwrap_or_default()),
    }
}

fn location(url: &Url, headers: &HeaderMap) -> String {
    headers
        .get(LOCATION)
        .and_then(|l| l.to_str().ok())
        .and_then(|l| url.join(l).ok())
        .map_or_else(|| "an unusable location".to_owned(), |l| redact_url(l.as_str()))
}
