//! Where to connect, with which headers, and the limits and timings of the transport.

use std::fmt;
use std::time::Duration;

use plexus_net::{RemoteConfig, RemoteEndpoint};

/// The WebSocket subprotocol MCP uses; offered on the upgrade and required in the answer.
pub const SUBPROTOCOL: &str = "mcp";

/// How long [`WsTransport::connect`](crate::WsTransport::connect) may take in all (TCP, TLS, the
/// upgrade, and one retry after an auth challenge): 30 s (the reference `MCP_TIMEOUT`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = plexus_net::DEFAULT_CONNECT_TIMEOUT;

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
/// use plexus_net::RemoteConfig as _;
/// use plexus_ws::WsConfig;
///
/// let config = WsConfig::new("ws://127.0.0.1:8080/mcp")
///     .header("X-Claude-Code-Ide-Authorization", "token")
///     .ping_interval(Some(Duration::from_secs(10)))
///     .dead_peer_timeout(Duration::from_secs(25));
/// assert_eq!(config.endpoint.name, "127.0.0.1");
/// // Header values stay out of debug output.
/// assert!(format!("{config:?}").contains(r#"("X-Claude-Code-Ide-Authorization", "<redacted>")"#));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct WsConfig {
    /// The server's endpoint (`ws` or `wss`): its name, URL, headers (sent with the upgrade
    /// request; one the auth provider also gives is replaced by the provider's;
    /// `Sec-WebSocket-Protocol` is always `mcp`), auth (for the upgrade; none: a 401 is
    /// [`TransportError::NeedsAuth`](plexus_transport::TransportError::NeedsAuth)), TLS, proxy
    /// (a `CONNECT` tunnel), connect timeout ([`DEFAULT_CONNECT_TIMEOUT`]) and the largest
    /// message accepted ([`DEFAULT_MAX_MESSAGE_SIZE`]; a larger message or frame ends the
    /// connection, since the WebSocket protocol cannot skip it: the receiver reports
    /// [`TransportError::TooLarge`](plexus_transport::TransportError::TooLarge), then `Closed`).
    pub endpoint: RemoteEndpoint,
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
    /// A configuration for the server at `endpoint` (a URL, or a [`RemoteEndpoint`]), with the
    /// defaults.
    pub fn new(endpoint: impl Into<RemoteEndpoint>) -> Self {
        WsConfig {
            endpoint: endpoint.into(),
            ping_interval: Some(DEFAULT_PING_INTERVAL),
            dead_peer_timeout: DEFAULT_DEAD_PEER_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
        }
    }

    plexus_net::setters! {
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

impl RemoteConfig for WsConfig {
    fn endpoint(&self) -> &RemoteEndpoint {
        &self.endpoint
    }

    fn endpoint_mut(&mut self) -> &mut RemoteEndpoint {
        &mut self.endpoint
    }
}

impl fmt::Debug for WsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.endpoint
            .debug_struct(f, "WsConfig")
            .field("ping_interval", &self.ping_interval)
            .field("dead_peer_timeout", &self.dead_peer_timeout)
            .field("write_timeout", &self.write_timeout)
            .field("close_timeout", &self.close_timeout)
            .finish()
    }
}
