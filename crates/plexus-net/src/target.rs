//! Errors about the remote server a transport connects to, which name its URL the way logs may
//! show it (see [`redact_url`]).

use plexus_transport::TransportError;

use crate::redact::redact_url;

/// Why a remote transport could not connect, in the words every remote transport shares (the
/// errors of the layers below, an [`HttpError`](crate::http::HttpError) or a TLS error, are kept
/// as they are).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectProblem {
    /// The configured URL does not parse.
    #[error("the URL is not valid")]
    InvalidUrl(#[source] url::ParseError),
    /// The URL's scheme is not one the transport speaks.
    #[error("the URL scheme is {scheme:?}; the {transport} transport needs {}", .allowed.join(" or "))]
    Scheme {
        /// The scheme of the URL.
        scheme: String,
        /// The transport ("WebSocket").
        transport: String,
        /// The schemes it speaks.
        allowed: Vec<String>,
    },
}

/// A [`TransportError::Connect`] to a URL, which it names without credentials, query or
/// fragment.
pub fn connect_error(url: &str, cause: impl std::error::Error + Send + Sync + 'static) -> TransportError {
    TransportError::connect(redact_url(url), cause)
}

/// Fails with a [`TransportError::Connect`] to `url` unless its `scheme` (as a URL parser gives
/// it) is one of `allowed`; the error names the `transport` that needs them.
///
/// ```
/// use plexus_net::require_scheme;
/// use plexus_transport::error_chain;
///
/// assert!(require_scheme("wss://h/mcp", "wss", &["ws", "wss"], "WebSocket").is_ok());
/// let error = require_scheme("http://u:p@h/mcp", "http", &["ws", "wss"], "WebSocket");
/// assert_eq!(
///     error_chain(&error.unwrap_err()),
///     r#"could not connect to http://h/mcp: the URL scheme is "http"; the WebSocket transport needs ws or wss"#
/// );
/// ```
pub fn require_scheme(url: &str, scheme: &str, allowed: &[&str], transport: &str) -> Result<(), TransportError> {
    if allowed.contains(&scheme) {
        return Ok(());
    }
    let problem = ConnectProblem::Scheme {
        scheme: scheme.to_owned(),
        transport: transport.to_owned(),
        allowed: allowed.iter().map(|&s| s.to_owned()).collect(),
    };
    Err(connect_error(url, problem))
}

/// The [`Peer`](plexus_transport::Peer) a remote transport reports for its URL `url` (for
/// telemetry): its host and port (the scheme's default when none is given) over TCP, speaking
/// `protocol`; [`Unknown`](plexus_transport::Peer::Unknown) when the URL has no host.
pub fn peer_of(url: &str, protocol: &'static str) -> plexus_transport::Peer {
    let Ok(url) = url::Url::parse(url) else {
        return plexus_transport::Peer::Unknown;
    };
    match (url.host_str(), url.port_or_known_default()) {
        (Some(host), Some(port)) => plexus_transport::Peer::tcp(protocol, host, port),
        _ => plexus_transport::Peer::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use plexus_transport::Peer;

    use super::peer_of;

    #[test]
    fn a_urls_peer_is_its_host_and_port_with_the_schemes_default() {
        assert_eq!(
            peer_of("https://mcp.example.com/mcp?…", "http"),
            Peer::tcp("http", "mcp.example.com", 443)
        );
        assert_eq!(
            peer_of("http://127.0.0.1:8080/sse", "http"),
            Peer::tcp("http", "127.0.0.1", 8080)
        );
        assert_eq!(
            peer_of("ws://[::1]:9/mcp", "websocket"),
            Peer::tcp("websocket", "::1", 9)
        );
        assert_eq!(peer_of("not a url", "http"), Peer::Unknown);
    }
}
