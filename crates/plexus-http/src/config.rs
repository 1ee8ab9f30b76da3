//! What to connect to, and the limits and timings of the transport.

use std::fmt;
use std::time::Duration;

use plexus_net::{RemoteConfig, RemoteEndpoint};

/// How long one HTTP request of a message without a timeout of its own may wait for its
/// response (and, for a JSON body, for the whole body) by default: 60 s. A request that carries
/// its own timeout ([`OutboundMessage::reply_timeout`](plexus_transport::OutboundMessage::reply_timeout))
/// gets that and [`REPLY_TIMEOUT_GRACE`](plexus_transport::REPLY_TIMEOUT_GRACE) instead.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long opening a connection (TCP, a proxy's tunnel, TLS) may take by default: 30 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = plexus_net::DEFAULT_CONNECT_TIMEOUT;

/// How long the `DELETE` that ends the session on close may take: 2 s. Its outcome is ignored.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// The most bytes of an error response's body that are read: 16 KiB.
pub const ERROR_BODY_READ_LIMIT: usize = plexus_transport::ERROR_BODY_READ_LIMIT;

/// The most bytes of an error response's body kept in the error: 1 KiB.
pub const ERROR_BODY_EXCERPT: usize = plexus_transport::BODY_EXCERPT_LIMIT;

/// How many received messages may wait for the reader before the body readers pause: 256.
pub const DEFAULT_RECEIVE_QUEUE_CAPACITY: usize = 256;

/// After a stream delivered the response it was opened for, how long its reader waits for the
/// server to end it (so that the connection goes back to the pool) before dropping it: 1 s.
pub const STREAM_END_GRACE: Duration = Duration::from_secs(1);

/// The most redirects followed for one request: 10 (same origin only).
pub const MAX_REDIRECTS: usize = 10;

/// How many connections one transport may have open at once by default: 100. A request that
/// finds them all busy waits (within its timeout) for one to come back.
pub const DEFAULT_MAX_CONNECTIONS: usize = plexus_net::http::DEFAULT_MAX_CONNECTIONS;

/// How many idle connections one transport keeps for later requests by default: 32.
pub const DEFAULT_MAX_IDLE_CONNECTIONS: usize = plexus_net::http::DEFAULT_MAX_IDLE_CONNECTIONS;

/// How long an idle connection is kept by default: 30 s (less when the server's `Keep-Alive`
/// header says it closes sooner).
pub const DEFAULT_IDLE_TIMEOUT: Duration = plexus_net::http::DEFAULT_IDLE_TIMEOUT;

/// How the event streams are reconnected and resumed: capped exponential backoff with jitter,
/// unless the server's SSE `retry:` field says how long to wait (the server wins).
///
/// The delay before attempt `n` (0-based) is `min(initial_delay × multiplier^n, max_delay)`,
/// reduced by a random fraction of at most [`jitter`](Self::jitter). After
/// [`max_attempts`](Self::max_attempts) reconnections in a row that brought nothing new (an
/// error, a status other than 2xx, or a stream that ended without a new event), the stream is
/// given up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReconnectPolicy {
    /// The delay before the first reconnection (default 1 s).
    pub initial_delay: Duration,
    /// The factor by which the delay grows after each attempt (default 1.5).
    pub multiplier: f64,
    /// The longest delay (default 30 s).
    pub max_delay: Duration,
    /// How many reconnections in a row may fail before the stream is given up (default 5).
    pub max_attempts: u32,
    /// The largest fraction taken off a delay at random, in `0.0..=1.0` (default 0.25), so that
    /// many clients do not reconnect in step.
    pub jitter: f64,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            initial_delay: Duration::from_secs(1),
            multiplier: 1.5,
            max_delay: Duration::from_secs(30),
            max_attempts: 5,
            jitter: 0.25,
        }
    }
}

impl ReconnectPolicy {
    /// The delay before attempt `attempt` (0-based) with `random` in `0.0..1.0` picking the jitter.
    pub fn delay(&self, attempt: u32, random: f64) -> Duration {
        let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
        let max = self.max_delay.as_secs_f64();
        let base = (self.initial_delay.as_secs_f64() * self.multiplier.max(1.0).powi(exponent)).min(max);
        let jitter = self.jitter.clamp(0.0, 1.0) * random.clamp(0.0, 1.0);
        let seconds = base * (1.0 - jitter);
        if seconds.is_finite() && seconds >= 0.0 {
            Duration::from_secs_f64(seconds)
        } else {
            self.max_delay
        }
    }
}

/// Where the Streamable HTTP server is, and the limits and timings of its transport.
///
/// ```
/// use std::time::Duration;
/// use plexus_http::HttpConfig;
/// use plexus_net::RemoteConfig as _;
///
/// let config = HttpConfig::new("https://mcp.example.com/mcp")
///     .name("example")
///     .header("X-Api-Key", "secret")
///     .request_timeout(Duration::from_secs(120));
/// assert_eq!(config.endpoint.name, "example");
/// assert_eq!(config.endpoint.headers, [("X-Api-Key".to_owned(), "secret".to_owned())]);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint (`http` or `https`): its name, URL, headers, auth, TLS, proxy, connect
    /// timeout and the largest message (a JSON body or one SSE event) accepted.
    pub endpoint: RemoteEndpoint,
    /// How long a message without a timeout of its own (a notification, a response, a request
    /// without [`reply_timeout`](plexus_transport::OutboundMessage::reply_timeout)) may wait for
    /// its response headers, and for its whole body when that is JSON (default
    /// [`DEFAULT_REQUEST_TIMEOUT`]). A request with a timeout of its own is bounded by that and
    /// [`REPLY_TIMEOUT_GRACE`](plexus_transport::REPLY_TIMEOUT_GRACE) instead, never by this.
    pub request_timeout: Duration,
    /// How many received messages may wait for the reader (default
    /// [`DEFAULT_RECEIVE_QUEUE_CAPACITY`]; at least 1).
    pub receive_queue_capacity: usize,
    /// How event streams are reconnected and resumed.
    pub reconnect: ReconnectPolicy,
    /// The most connections open at once, busy or idle (default [`DEFAULT_MAX_CONNECTIONS`];
    /// at least 1). Each open event stream holds one.
    pub max_connections: usize,
    /// The most idle connections kept (default [`DEFAULT_MAX_IDLE_CONNECTIONS`]).
    pub max_idle_connections: usize,
    /// How long an idle connection is kept (default [`DEFAULT_IDLE_TIMEOUT`]).
    pub idle_timeout: Duration,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.endpoint
            .debug_struct(f, "HttpConfig")
            .field("request_timeout", &self.request_timeout)
            .field("receive_queue_capacity", &self.receive_queue_capacity)
            .field("reconnect", &self.reconnect)
            .field("max_connections", &self.max_connections)
            .field("max_idle_connections", &self.max_idle_connections)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl HttpConfig {
    /// A configuration for `endpoint` (a URL, or a [`RemoteEndpoint`]) with the defaults.
    pub fn new(endpoint: impl Into<RemoteEndpoint>) -> Self {
        HttpConfig {
            endpoint: endpoint.into(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            receive_queue_capacity: DEFAULT_RECEIVE_QUEUE_CAPACITY,
            reconnect: ReconnectPolicy::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_idle_connections: DEFAULT_MAX_IDLE_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }

    plexus_net::setters! {
        /// Sets the timeout of messages without one of their own.
        request_timeout: Duration,
        /// Sets how many received messages may wait for the reader.
        receive_queue_capacity: usize,
        /// Sets the reconnection policy of the event streams.
        reconnect: ReconnectPolicy,
        /// Sets the most connections open at once.
        max_connections: usize,
        /// Sets the most idle connections kept.
        max_idle_connections: usize,
        /// Sets how long an idle connection is kept.
        idle_timeout: Duration,
    }
}

impl RemoteConfig for HttpConfig {
    fn endpoint(&self) -> &RemoteEndpoint {
        &self.endpoint
    }

    fn endpoint_mut(&mut self) -> &mut RemoteEndpoint {
        &mut self.endpoint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_backoff_grows_by_half_and_stops_at_30_s() {
        let policy = ReconnectPolicy::default();
        let delays: Vec<u128> = (0..12).map(|n| policy.delay(n, 0.0).as_millis()).collect();
        assert_eq!(
            delays,
            [
                1000, 1500, 2250, 3375, 5062, 7593, 11390, 17085, 25628, 30000, 30000, 30000
            ]
        );
        assert_eq!(policy.delay(u32::MAX, 0.0), Duration::from_secs(30));
    }

    #[test]
    fn jitter_only_shortens_a_delay() {
        let policy = ReconnectPolicy::default();
        assert_eq!(policy.delay(0, 1.0), Duration::from_millis(750));
        assert_eq!(policy.delay(20, 0.5).as_millis(), 26_250);
        let wild = ReconnectPolicy {
            jitter: 7.0,
            multiplier: f64::NAN,
            ..policy
        };
        assert!(wild.delay(3, 0.9) <= wild.max_delay);
    }
}
