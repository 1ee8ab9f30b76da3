//! Where to connect, with which headers, and the limits and timeouts of the transport.

use std::fmt;
use std::time::Duration;

use plexus_net::{RemoteConfig, RemoteEndpoint};

/// How long [`SseTransport::connect`](crate::SseTransport::connect) waits for the TCP and TLS
/// connection and for the event stream's response headers: 30 s (the reference `MCP_TIMEOUT`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = plexus_net::DEFAULT_CONNECT_TIMEOUT;

/// How long the server has to send the `endpoint` event once the event stream is open: 10 s.
/// plexus's connector sets it, as it sets the connect timeout, to the connect budget (the entry's
/// `timeout`, else `MCP_TIMEOUT`, else 30 s).
pub const DEFAULT_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one POST of a message without a timeout of its own (a notification, a response, a
/// request without [`reply_timeout`](plexus_transport::OutboundMessage::reply_timeout)) may take,
/// from sending to the end of the server's answer: 30 s. A request with a timeout of its own gets
/// that and [`REPLY_TIMEOUT_GRACE`](plexus_transport::REPLY_TIMEOUT_GRACE) instead (some servers
/// run a call before they answer its POST). The server's reply to the message comes later, on the
/// event stream; each POST has its own timer.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest event accepted on the event stream: 16 MiB (the same as the stdio line limit).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE;

/// How many POSTs may be in flight at once before `send` waits: 32.
pub const DEFAULT_MAX_CONCURRENT_POSTS: usize = 32;

/// How many bytes of an error response's body are read (the error keeps a short excerpt): 16 KiB.
pub const MAX_ERROR_BODY: usize = plexus_transport::ERROR_BODY_READ_LIMIT;

/// How many `message` events the server may send before its `endpoint` event; they are delivered
/// first. More is a connect error (a server that floods before saying where to post is broken).
pub const MAX_EARLY_MESSAGES: usize = 64;

/// How many same-origin redirects are followed; a redirect to another origin is never followed.
pub const MAX_REDIRECTS: usize = 10;

/// An idle connection is probed by TCP keepalive after this long, so that a silent event stream
/// whose peer vanished is eventually noticed: 30 s (plexus-net's, for every connection).
pub const TCP_KEEPALIVE: Duration = plexus_net::http::TCP_KEEPALIVE;

/// How to reach a legacy HTTP+SSE MCP server, and the limits of its transport.
///
/// ```
/// use std::time::Duration;
/// use plexus_net::RemoteConfig as _;
/// use plexus_sse::SseConfig;
///
/// let config = SseConfig::new("http://127.0.0.1:8080/sse")
///     .name("weather")
///     .header("X-Api-Key", "secret")
///     .endpoint_timeout(Duration::from_secs(5));
/// assert_eq!(config.endpoint.name, "weather");
/// // Header values stay out of debug output.
/// assert!(format!("{config:?}").contains(r#"("X-Api-Key", "<redacted>")"#));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct SseConfig {
    /// The event stream's endpoint (`http` or `https`): its name, URL, headers (sent with the
    /// event stream's GET and with every POST; one the auth provider also gives is replaced by
    /// the provider's), auth (none: a 401 is
    /// [`TransportError::NeedsAuth`](plexus_transport::TransportError::NeedsAuth)), TLS, proxy,
    /// connect timeout ([`DEFAULT_CONNECT_TIMEOUT`]) and the largest event accepted
    /// ([`DEFAULT_MAX_MESSAGE_SIZE`]).
    pub endpoint: RemoteEndpoint,
    /// See [`DEFAULT_ENDPOINT_TIMEOUT`].
    pub endpoint_timeout: Duration,
    /// See [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Duration,
    /// See [`DEFAULT_MAX_CONCURRENT_POSTS`] (at least 1).
    pub max_concurrent_posts: usize,
}

impl SseConfig {
    /// A configuration for the event stream at `endpoint` (a URL, or a [`RemoteEndpoint`]), with
    /// the defaults.
    pub fn new(endpoint: impl Into<RemoteEndpoint>) -> Self {
        SseConfig {
            endpoint: endpoint.into(),
            endpoint_timeout: DEFAULT_ENDPOINT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_concurrent_posts: DEFAULT_MAX_CONCURRENT_POSTS,
        }
    }

    plexus_net::setters! {
        /// Sets how long to wait for the `endpoint` event.
        endpoint_timeout: Duration,
        /// Sets the timeout of each POST of a message without a timeout of its own.
        request_timeout: Duration,
        /// Sets how many POSTs may be in flight at once.
        max_concurrent_posts: usize,
    }
}

impl RemoteConfig for SseConfig {
    fn endpoint(&self) -> &RemoteEndpoint {
        &self.endpoint
    }

    fn endpoint_mut(&mut self) -> &mut RemoteEndpoint {
        &mut self.endpoint
    }
}

impl fmt::Debug for SseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.endpoint
            .debug_struct(f, "SseConfig")
            .field("endpoint_timeout", &self.endpoint_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_concurrent_posts", &self.max_concurrent_posts)
            .finish()
    }
}
