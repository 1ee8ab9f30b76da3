//! What every remote transport's configuration has, written once: the server's name and URL,
//! the headers and auth of its requests, how it is reached (TLS, proxy), the connect timeout
//! and the cap on one message ([`RemoteEndpoint`]); and the chainable setters of those fields
//! on a transport's configuration ([`RemoteConfig`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use plexus_transport::AuthProvider;

use crate::http::ProxyChoice;
use crate::redact::{RedactedHeaders, redact_url};
use crate::tls::{ClientIdentity, TlsEnvironment, TlsOptions};

/// The default bound on opening a connection to a remote server (TCP, a proxy's tunnel, TLS,
/// and for WebSocket the upgrade): 30 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = crate::http::DEFAULT_CONNECT_TIMEOUT;

/// A remote MCP server's endpoint as every remote transport (Streamable HTTP, legacy SSE,
/// WebSocket) takes it. `Debug` shows the URL without credentials and no header values.
///
/// ```
/// use plexus_net::RemoteEndpoint;
///
/// let endpoint = RemoteEndpoint::new("https://mcp.example.com/mcp");
/// assert_eq!(endpoint.name, "mcp.example.com");
/// assert_eq!(endpoint.max_message_size, 16 * 1024 * 1024);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct RemoteEndpoint {
    /// The server's name, used to tag tracing output (default: the URL's host).
    pub name: String,
    /// The endpoint: `http`/`https` (Streamable HTTP, legacy SSE) or `ws`/`wss` (WebSocket).
    pub url: String,
    /// Headers sent with every request (or the upgrade), in order; the protocol's own headers
    /// cannot be overridden.
    pub headers: Vec<(String, String)>,
    /// Asked for headers before every request and consulted on a 401 or 403.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// TLS for this server: a PEM file of CA certificates trusted besides the platform's roots
    /// and `NODE_EXTRA_CA_CERTS` (an entry's `ca`), a client certificate (an entry's
    /// `clientCert` and `clientKey`); see [`crate::tls::server_config`].
    pub tls: TlsOptions,
    /// Which proxy this server's requests go through (default: as the environment says).
    pub proxy: ProxyChoice,
    /// How long opening a connection may take (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub connect_timeout: Duration,
    /// The largest message (a JSON body, an SSE event, a WebSocket message) accepted from the
    /// server, in bytes (default [`plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE`]); a larger one is
    /// discarded and reported as
    /// [`TransportError::TooLarge`](plexus_transport::TransportError::TooLarge).
    pub max_message_size: usize,
}

impl RemoteEndpoint {
    /// The endpoint `url`, with the defaults.
    pub fn new(url: impl Into<String>) -> RemoteEndpoint {
        let url = url.into();
        let name = url::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| url.clone());
        RemoteEndpoint {
            name,
            url,
            headers: Vec::new(),
            auth: None,
            tls: TlsOptions::default(),
            proxy: ProxyChoice::Environment,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_message_size: plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// The endpoint's fields for a `Debug` of the configuration that holds it, as `type_name`.
    pub fn debug_struct<'a, 'b>(&self, f: &'a mut fmt::Formatter<'b>, type_name: &str) -> fmt::DebugStruct<'a, 'b> {
        let mut debug = f.debug_struct(type_name);
        debug
            .field("name", &self.name)
            .field("url", &redact_url(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("auth", &self.auth.is_some().then_some("<provider>"))
            .field("tls", &self.tls)
            .field("proxy", &self.proxy)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_size", &self.max_message_size);
        debug
    }
}

impl fmt::Debug for RemoteEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.debug_struct(f, "RemoteEndpoint").finish()
    }
}

impl From<&str> for RemoteEndpoint {
    fn from(url: &str) -> Self {
        RemoteEndpoint::new(url)
    }
}

impl From<String> for RemoteEndpoint {
    fn from(url: String) -> Self {
        RemoteEndpoint::new(url)
    }
}

impl From<&String> for RemoteEndpoint {
    fn from(url: &String) -> Self {
        RemoteEndpoint::new(url.as_str())
    }
}

/// A remote transport's configuration: the chainable setters of its [`RemoteEndpoint`]'s
/// fields, written once for every transport (bring the trait into scope to use them).
///
/// ```
/// use plexus_net::http::ProxyChoice;
/// use plexus_net::{RemoteConfig, RemoteEndpoint};
///
/// struct Config {
///     endpoint: RemoteEndpoint,
/// }
///
/// impl RemoteConfig for Config {
///     fn endpoint(&self) -> &RemoteEndpoint {
///         &self.endpoint
///     }
///     fn endpoint_mut(&mut self) -> &mut RemoteEndpoint {
///         &mut self.endpoint
///     }
/// }
///
/// let config = Config { endpoint: RemoteEndpoint::new("http://127.0.0.1:9/mcp") }
///     .name("local")
///     .header("X-Api-Key", "k")
///     .proxy(ProxyChoice::Disabled);
/// assert_eq!(config.endpoint().name, "local");
/// assert_eq!(config.endpoint().headers.len(), 1);
/// ```
pub trait RemoteConfig: Sized {
    /// The endpoint.
    fn endpoint(&self) -> &RemoteEndpoint;

    /// The endpoint, to change.
    fn endpoint_mut(&mut self) -> &mut RemoteEndpoint;

    /// Sets the name that tags tracing output.
    #[must_use]
    fn name(mut self, name: impl Into<String>) -> Self {
        self.endpoint_mut().name = name.into();
        self
    }

    /// Adds a header to the configured headers.
    #[must_use]
    fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.endpoint_mut().headers.push((name.into(), value.into()));
        self
    }

    /// Adds headers to the configured headers.
    #[must_use]
    fn headers<N: Into<String>, V: Into<String>>(mut self, headers: impl IntoIterator<Item = (N, V)>) -> Self {
        let added = headers.into_iter().map(|(name, value)| (name.into(), value.into()));
        self.endpoint_mut().headers.extend(added);
        self
    }

    /// Sets the authentication provider.
    #[must_use]
    fn auth(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.endpoint_mut().auth = Some(provider);
        self
    }

    /// Trusts the CA certificates of this PEM file for the server's TLS, besides the platform's
    /// roots and `NODE_EXTRA_CA_CERTS`.
    #[must_use]
    fn ca(mut self, ca: Option<PathBuf>) -> Self {
        self.endpoint_mut().tls.ca = ca;
        self
    }

    /// Takes what trust the environment says (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`,
    /// `SSL_CERT_DIR`) from a host's own environment instead of the process's.
    #[must_use]
    fn tls_environment(mut self, environment: TlsEnvironment) -> Self {
        self.endpoint_mut().tls.environment = Some(environment);
        self
    }

    /// Presents this client certificate when the server asks for one.
    #[must_use]
    fn client_identity(mut self, identity: Option<ClientIdentity>) -> Self {
        self.endpoint_mut().tls.client_identity = identity;
        self
    }

    /// Sets which proxy the server's requests go through.
    #[must_use]
    fn proxy(mut self, proxy: ProxyChoice) -> Self {
        self.endpoint_mut().proxy = proxy;
        self
    }

    /// Sets the connect timeout.
    #[must_use]
    fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint_mut().connect_timeout = timeout;
        self
    }

    /// Sets the largest message accepted from the server.
    #[must_use]
    fn max_message_size(mut self, bytes: usize) -> Self {
        self.endpoint_mut().max_message_size = bytes;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_defaults_to_the_host_and_debug_hides_secrets() {
        let mut endpoint = RemoteEndpoint::new("http://u:pw@127.0.0.1:9/mcp?key=k");
        endpoint.headers.push(("Authorization".into(), "Bearer hunter2".into()));
        assert_eq!(endpoint.name, "127.0.0.1");
        let shown = format!("{endpoint:?}");
        assert!(shown.contains(r#"url: "http://127.0.0.1:9/mcp?…""#), "{shown}");
        assert!(
            shown.contains(r#"headers: [("Authorization", "<redacted>")]"#),
            "{shown}"
        );
        assert!(
            !shown.contains("hunter2") && !shown.contains("pw") && !shown.contains("key"),
            "{shown}"
        );
        assert_eq!(RemoteEndpoint::new("not a url").name, "not a url");
    }
}
