//! Where to connect, with which headers, and the limits and timings of the transport.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use plexus_net::http::ProxyChoice;
use plexus_net::redact::{debug_remote_config, redact_url};
use plexus_net::tls::TlsOptions;
use plexus_transport::AuthProvider;

/// The WebSocket subprotocol MCP uses; offered on the upgrade and required in the answer.
pub const SUBPROTOCOL: &str = "mcp";

/// How long [`WsTransport::connect`](crate::WsTransport::connect) may take in all (TCP, TLS, the
/// upgrade, and one retry after an auth challenge): 30 s (the reference `MCP_TIMEOUT`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest message accepted from the server: 16 MiB (the same as the stdio line limit).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE;

/// How often the client pings the server: every 30 s.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);

/// How long the server may stay silent (no frame at all, not even a pong) before the connection
/// is presumed dead: 60 s, so that with the default interval at least one ping went unanswered
/// for 30 s.
pub const DEFAULT_DEAD_PEER_TIMEOUT: Duration = Duration::from_secs(60);

/// How long writing one message (or a ping) may take before the connection is presumed stuck:
/// 30 s.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`close`](plexus_transport::TransportSender::close) waits for the server to answer
/// the close frame before it drops the connection anyway: 2 s.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How to reach a WebSocket MCP server, and the limits of its transport.
///
/// ```
/// use std::time::Duration;
/// use plexus_ws::WsConfig;
///
/// let config = WsConfig::new("ws://127.0.0.1:8080/mcp")
///     .header("X-Claude-Code-Ide-Authorization", "token")
///     .ping_interval(Some(Duration::from_secs(10)))
///     .dead_peer_timeout(Duration::from_secs(25));
/// assert_eq!(config.name, "ws://127.0.0.1:8080/mcp");
/// // Header values stay out of debug output.
/// assert!(format!("{config:?}").contains(r#"("X-Claude-Code-Ide-Authorization", "<redacted>")"#));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct WsConfig {
    /// The server's name, used to tag tracing output (default: the URL, without query or credentials).
    pub name: String,
    /// The URL (`ws` or `wss`).
    pub url: String,
    /// Headers sent with the upgrade request. A header that the [`auth`](Self::auth) provider also
    /// gives is replaced by the provider's; `Sec-WebSocket-Protocol` is always `mcp`.
    pub headers: Vec<(String, String)>,
    /// Supplies authentication headers for the upgrade and handles a 401 or 403 answer to it
    /// (none: a 401 is [`TransportError::NeedsAuth`](plexus_transport::TransportError::NeedsAuth)).
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// TLS for this server (`wss`): a PEM file of CA certificates trusted besides the platform's
    /// roots and `NODE_EXTRA_CA_CERTS` (an entry's `ca`), a client certificate (an entry's
    /// `clientCert` and `clientKey`); see [`plexus_net::tls::server_config`].
    pub tls: TlsOptions,
    /// Which proxy the connection goes through, as a `CONNECT` tunnel (default: as the
    /// environment says).
    pub proxy: ProxyChoice,
    /// See [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// See [`DEFAULT_MAX_MESSAGE_SIZE`]. A larger message (or frame) ends the connection, since
    /// the WebSocket protocol cannot skip it: the receiver reports
    /// [`TransportError::TooLarge`](plexus_transport::TransportError::TooLarge), then `Closed`.
    pub max_message_size: usize,
    /// See [`DEFAULT_PING_INTERVAL`]; `None` sends no pings and detects no dead peer.
    pub ping_interval: Option<Duration>,
    /// See [`DEFAULT_DEAD_PEER_TIMEOUT`]; must be longer than the ping interval.
    pub dead_peer_timeout: Duration,
    /// See [`DEFAULT_WRITE_TIMEOUT`].
    pub write_timeout: Duration,
    /// See [`DEFAULT_CLOSE_TIMEOUT`].
    pub close_timeout: Duration,
}

impl WsConfig {
    /// A configuration for the server at `url`, with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        let url = url.into();
        WsConfig {
            name: redact_url(&url),
            url,
            headers: Vec::new(),
            auth: None,
            tls: TlsOptions::default(),
            proxy: ProxyChoice::Environment,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            ping_interval: Some(DEFAULT_PING_INTERVAL),
            dead_peer_timeout: DEFAULT_DEAD_PEER_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
        }
    }

    plexus_net::header_and_auth_setters!();

    plexus_net::tls_and_proxy_setters!();

    plexus_net::setters! {
        /// Sets the name that tags tracing output.
        name: impl Into<String>,
        /// Sets the connect timeout.
        connect_timeout: Duration,
        /// Sets the largest message accepted.
        max_message_size: usize,
        /// Sets the ping interval (`None`: no pings).
        ping_interval: Option<Duration>,
        /// Sets how long a silent server is given before it is presumed dead.
        dead_peer_timeout: Duration,
        /// Sets how long writing one message may take.
        write_timeout: Duration,
        /// Sets how long closing waits for the server's close frame.
        close_timeout: Duration,
    }
}

impl fmt::Debug for WsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_remote_config(f, "WsConfig", &self.name, &self.url, &self.headers, self.auth.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_size", &self.max_message_size)
            .field("ping_interval", &self.ping_interval)
            .field("dead_peer_timeout", &self.dead_peer_timeout)
            .field("write_timeout", &self.write_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("tls", &self.tls)
            .field("proxy", &self.proxy)
            .finish()
    }
}
