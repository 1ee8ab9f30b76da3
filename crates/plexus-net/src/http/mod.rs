//! The HTTP client of every remote transport and of OAuth: hyper's client connections (HTTP/1.1,
//! and HTTP/2 when a TLS server offers it by ALPN), pooled per origin, with the settings every
//! remote request shares, defined once: proxies, TLS roots and client certificates, compression,
//! the connect timeout, the user agent, body caps and the redirect rule.
//!
//! # Connections
//!
//! An [`HttpClient`] keeps one pool per origin (scheme, host, port). HTTP/1.1 connections are
//! reused last in, first out: at most [`HttpSettings::max_connections`] open per origin, at most
//! [`HttpSettings::max_idle_connections`] waiting, each for at most
//! [`HttpSettings::idle_timeout`] (less when the server's `Keep-Alive` header says it closes
//! sooner). An HTTP/1.1 connection is driven by the task that uses it: no task per connection,
//! and no hop between tasks between a caller and its answer. An HTTP/2 connection carries every
//! request to its origin at once; it runs in a task of its own, as HTTP/2 needs.
//!
//! A request whose bytes may have reached the server is never sent again (the server may have
//! acted on it: a tool must not run twice). Only a request that hyper gives back unsent (its
//! kept-alive connection turned out closed before any of it was written) goes again, once, on a
//! new connection.
//!
//! # Proxies
//!
//! `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (and their lowercase forms) are read
//! as curl reads them (hyper-util's matcher), when the client is made; a server's own `proxy`
//! setting replaces them ([`ProxyChoice`]). `https`, `ws` and `wss` go through a `CONNECT`
//! tunnel; plain `http` requests are sent to the proxy in absolute form. Credentials in the
//! proxy's URL go as `Proxy-Authorization` (Basic) to the proxy only. `http://` and `https://`
//! proxies are spoken to.
//!
//! # Compression
//!
//! Every request asks for `gzip`, `br` and `deflate` (`Accept-Encoding`, which callers cannot set:
//! a client must not ask for what it cannot decode) and bodies so encoded are decoded as they are
//! read; size caps apply to the decoded bytes.
#![allow(clippy::module_name_repetitions)]

mod body;
mod connect;
mod drive;
mod error;
mod pool;
mod proxy;
mod redirect;
mod send;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::{HeaderValue, Uri};
use url::Url;

use crate::tls::TlsOptions;

pub use body::{Body, BodyError};
pub use connect::NetStream;
pub use error::{HttpError, UrlProblem};
pub use redirect::{RedirectError, Redirected, follow_redirects};
pub use send::{Request, Response};

use pool::OriginPool;
use proxy::Proxies;

/// The default bound on opening a connection (TCP, a proxy's tunnel, TLS): 30 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default number of connections open at once to one origin: 100.
pub const DEFAULT_MAX_CONNECTIONS: usize = 100;
/// The default number of idle connections kept per origin: 32.
pub const DEFAULT_MAX_IDLE_CONNECTIONS: usize = 32;
/// The default time an idle connection is kept: 30 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection may be silent before TCP keepalive probes it: 30 s.
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// The largest response head read (status line and headers): 64 KiB.
pub const MAX_HEAD_SIZE: usize = 64 * 1024;
/// What every request asks for: the encodings this client decodes.
pub const ACCEPT_ENCODING: &str = "gzip, br, deflate";

/// Which proxy a server's requests go through. `Debug` shows a proxy's URL without its
/// credentials.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub enum ProxyChoice {
    /// As the environment says (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, and their
    /// lowercase forms).
    #[default]
    Environment,
    /// No proxy, whatever the environment says (an entry's `"proxy": "none"`).
    Disabled,
    /// This proxy, for every request (an entry's `"proxy": "http://…"`); `NO_PROXY` does not
    /// apply to it.
    Url(String),
    /// As these variables say, by the same rules as [`Environment`](Self::Environment): a
    /// host's own environment rather than the process's (the facade's Hub gives its own).
    Variables(ProxyVariables),
}

/// The proxy variables of an environment: `ALL_PROXY`, `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`
/// (each upper case first, then lower case, as curl reads them) and whether `REQUEST_METHOD` is
/// set (a CGI program, where `HTTP_PROXY` may come from a request's header, takes no proxy
/// from the environment). `Debug` shows proxy URLs without their credentials.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ProxyVariables {
    /// `ALL_PROXY`: the proxy of every scheme that has none of its own.
    pub all: String,
    /// `HTTP_PROXY`: the proxy of `http` (and `ws`) destinations.
    pub http: String,
    /// `HTTPS_PROXY`: the proxy of `https` (and `wss`) destinations.
    pub https: String,
    /// `NO_PROXY`: hosts, domains and networks reached directly.
    pub no: String,
    /// `REQUEST_METHOD` is set.
    pub cgi: bool,
}

impl ProxyVariables {
    /// The variables as `lookup` gives them.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> ProxyVariables {
        let first = |names: [&str; 2]| names.into_iter().find_map(&lookup).unwrap_or_default();
        ProxyVariables {
            all: first(["ALL_PROXY", "all_proxy"]),
            http: first(["HTTP_PROXY", "http_proxy"]),
            https: first(["HTTPS_PROXY", "https_proxy"]),
            no: first(["NO_PROXY", "no_proxy"]),
            cgi: lookup("REQUEST_METHOD").is_some(),
        }
    }
}

impl std::fmt::Debug for ProxyVariables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyVariables")
            .field("all", &crate::redact::redact_url(&self.all))
            .field("http", &crate::redact::redact_url(&self.http))
            .field("https", &crate::redact::redact_url(&self.https))
            .field("no", &self.no)
            .field("cgi", &self.cgi)
            .finish()
    }
}

impl std::fmt::Debug for ProxyChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyChoice::Environment => f.write_str("Environment"),
            ProxyChoice::Disabled => f.write_str("Disabled"),
            ProxyChoice::Url(url) => f.debug_tuple("Url").field(&crate::redact::redact_url(url)).finish(),
            ProxyChoice::Variables(variables) => f.debug_tuple("Variables").field(variables).finish(),
        }
    }
}

/// The settings of an [`HttpClient`]: what every request it sends shares.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The `User-Agent` of requests that do not set one.
    pub user_agent: String,
    /// The bound on opening one connection (TCP, a proxy's tunnel, TLS).
    pub connect_timeout: Duration,
    /// At most this many connections open at once per origin; a request that finds them all
    /// busy waits for one.
    pub max_connections: usize,
    /// At most this many idle connections kept per origin.
    pub max_idle_connections: usize,
    /// How long an idle connection is kept.
    pub idle_timeout: Duration,
    /// Which proxy.
    pub proxy: ProxyChoice,
    /// TLS: extra CA certificates and a client certificate.
    pub tls: TlsOptions,
    /// Whether HTTP/2 is offered to TLS servers (ALPN `h2`); a WebSocket client turns it off.
    pub http2: bool,
}

impl HttpSettings {
    /// The defaults, with `user_agent`.
    pub fn new(user_agent: impl Into<String>) -> Self {
        HttpSettings {
            user_agent: user_agent.into(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_idle_connections: DEFAULT_MAX_IDLE_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            proxy: ProxyChoice::Environment,
            tls: TlsOptions::default(),
            http2: true,
        }
    }

    crate::setters! {
        /// Sets the connect timeout.
        connect_timeout: Duration,
        /// Sets the per-origin connection cap.
        max_connections: usize,
        /// Sets the per-origin idle connection cap.
        max_idle_connections: usize,
        /// Sets how long idle connections are kept.
        idle_timeout: Duration,
        /// Sets the TLS options (extra CA certificates, a client certificate).
        tls: TlsOptions,
        /// Offers HTTP/2 to TLS servers, or not.
        http2: bool,
        /// Sets which proxy the requests go through.
        proxy: ProxyChoice,
    }
}

/// An HTTP client: pooled connections per origin, with one set of [`HttpSettings`]. Cheap to
/// clone (the pools are shared).
#[derive(Clone)]
pub struct HttpClient {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("user_agent", &self.shared.settings.user_agent)
            .finish_non_exhaustive()
    }
}

struct Shared {
    settings: HttpSettings,
    proxies: Proxies,
    user_agent: HeaderValue,
    pools: Mutex<HashMap<OriginKey, Arc<OriginPool>>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        for pool in self.pools.get_mut().unwrap_or_else(PoisonError::into_inner).values() {
            pool.close();
        }
    }
}

/// Scheme (`http` or `https`; `ws` and `wss` count as these), host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct OriginKey {
    pub(crate) tls: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// Where requests go: a URL checked once and its origin's pool, for requests sent again and
/// again (a transport's endpoint).
#[derive(Clone)]
pub struct Target {
    pub(crate) url: Url,
    pub(crate) pool: Arc<OriginPool>,
    /// `/path?query`, what HTTP/1.1 sends to the origin.
    pub(crate) origin_form: Uri,
    /// The whole URL, what HTTP/2 and a forward proxy get.
    pub(crate) absolute: Uri,
    /// The `Host` header: the host, and the port unless it is the scheme's default.
    pub(crate) host: HeaderValue,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Target")
            .field(&crate::redact::redact_url(self.url.as_str()))
            .finish()
    }
}

impl Target {
    /// The URL.
    pub fn url(&self) -> &Url {
        &self.url
    }
}

impl HttpClient {
    /// A client with `settings`; nothing is opened yet (TLS is set up by the first `https`
    /// connection, which says what is wrong with a CA or certificate file).
    pub fn new(settings: HttpSettings) -> Result<HttpClient, HttpError> {
        let user_agent = HeaderValue::try_from(settings.user_agent.as_str()).map_err(|_| HttpError::UserAgent {
            user_agent: settings.user_agent.clone(),
        })?;
        let proxies = Proxies::new(&settings.proxy)?;
        Ok(HttpClient {
            shared: Arc::new(Shared {
                settings,
                proxies,
                user_agent,
                pools: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Checks `url` (an `http`, `https`, `ws` or `wss` URL with a host) and finds its origin's
    /// pool, for requests to it.
    pub fn target(&self, url: &Url) -> Result<Target, HttpError> {
        let bad = |problem: UrlProblem| HttpError::Url {
            url: crate::redact::redact_url(url.as_str()),
            problem,
        };
        let tls = match url.scheme() {
            "https" | "wss" => true,
            "http" | "ws" => false,
            _ => return Err(bad(UrlProblem::Scheme)),
        };
        let host = url.host_str().ok_or_else(|| bad(UrlProblem::NoHost))?;
        let port = url.port_or_known_default().ok_or_else(|| bad(UrlProblem::NoPort))?;
        let key = OriginKey {
            tls,
            // An IPv6 address without its brackets, as sockets and TLS names take it.
            host: host.trim_start_matches('[').trim_end_matches(']').to_owned(),
            port,
        };
        let pool = {
            let mut pools = self.shared.pools.lock().unwrap_or_else(PoisonError::into_inner);
            match pools.get(&key) {
                Some(pool) => Arc::clone(pool),
                None => {
                    let route = self.shared.proxies.route(&key)?;
                    let pool = OriginPool::new(key.clone(), route, &self.shared.settings);
                    pools.insert(key, Arc::clone(&pool));
                    pool
                }
            }
        };
        let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let origin_form =
            Uri::try_from(if path.is_empty() { "/" } else { path }).map_err(|e| bad(UrlProblem::Path(e)))?;
        let mut absolute_text = url.clone();
        absolute_text.set_fragment(None);
        // A WebSocket URL's requests (if any) are HTTP's.
        let _ = absolute_text.set_scheme(if tls { "https" } else { "http" });
        let absolute = Uri::try_from(absolute_text.as_str()).map_err(|e| bad(UrlProblem::Uri(e)))?;
        let host_value = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let host = HeaderValue::try_from(host_value).map_err(|_| bad(UrlProblem::Host))?;
        Ok(Target {
            url: url.clone(),
            pool,
            origin_form,
            absolute,
            host,
        })
    }

    /// Closes every idle connection of every origin; later requests fail.
    pub fn close(&self) {
        let pools: Vec<_> = self
            .shared
            .pools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for pool in pools {
            pool.close();
        }
    }

    /// How many connections are open (busy or idle), over every origin.
    pub fn open_connections(&self) -> usize {
        self.each_pool(OriginPool::open_connections)
    }

    /// How many open connections wait for a request, over every origin.
    pub fn idle_connections(&self) -> usize {
        self.each_pool(OriginPool::idle_connections)
    }

    fn each_pool(&self, count: impl Fn(&OriginPool) -> usize) -> usize {
        self.shared
            .pools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|pool| count(pool))
            .sum()
    }

    /// Opens a byte stream to `target`'s origin for a protocol of its own over it (the
    /// WebSocket upgrade): TCP, through the proxy's tunnel if there is one, and TLS (ALPN
    /// `http/1.1`) for `https` and `wss`. Bounded by the connect timeout.
    pub async fn open_stream(&self, target: &Target) -> Result<NetStream, HttpError> {
        target.pool.open_stream().await
    }
}
