//! A configured server → its transport, with the auth provider the connector chose → an
//! initialized session; and the errors of connecting.

#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use plexus_client::{Client, ClientError, ClientOptions};
use plexus_config::{ServerConfig, ServerKind};
#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
use plexus_net::RemoteEndpoint;
#[cfg(any(feature = "http", feature = "auth"))]
use plexus_transport::TransportError;
use plexus_transport::{AuthProvider, ErrorClass, Transport};

use crate::DefaultConnector;

/// The auth provider of one connection, shared by every transport it tries.
pub(crate) type Auth = Option<Arc<dyn AuthProvider>>;

/// Why the connector could not connect, in its own words (the cause of the
/// [`TransportError::Connect`] it gives).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectorReason {
    /// A Streamable HTTP server answered like a legacy one, and this build cannot fall back.
    #[cfg_attr(not(all(feature = "http", not(feature = "sse"))), allow(dead_code))]
    #[error(
        "the server answered initialize with HTTP {status} (a legacy SSE server?) and this build has no `sse` \
         feature to fall back to"
    )]
    NoFallback {
        /// The status of the answer to `initialize`.
        status: u16,
    },
    /// Streamable HTTP and the legacy fallback both failed.
    #[cfg_attr(not(all(feature = "http", feature = "sse")), allow(dead_code))]
    #[error(
        "the server answered the Streamable HTTP initialize with HTTP {status}, and legacy HTTP+SSE at the same URL \
         failed too"
    )]
    FallbackFailed {
        /// The status of the answer to `initialize`.
        status: u16,
        /// Why the fallback failed.
        #[source]
        source: ClientError,
    },
    /// The whole connect took longer than its budget.
    #[error(
        "the connect did not finish within its timeout of {} ms (the entry's `timeout`, else MCP_TIMEOUT, else 30 s)",
        .budget.as_millis()
    )]
    TimedOut {
        /// The connect's budget.
        budget: Duration,
    },
}

/// Why a configured server could not be connected.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The entry is disabled in its config.
    #[error("server \"{server}\" is disabled in its configuration")]
    Disabled {
        /// The server's name.
        server: String,
    },
    /// This build of plexus cannot connect this entry (a kind or a setting it has no support for).
    #[error("server \"{server}\": {kind} servers {why}")]
    Unsupported {
        /// The server's name.
        server: String,
        /// The entry's kind.
        kind: ServerKind,
        /// What is missing, as the end of a sentence.
        why: &'static str,
    },
    /// The credentials the entry asks for could not be had (an IDE lockfile, a session ingress
    /// token file); the server was not contacted.
    #[error("server \"{server}\"")]
    Credentials {
        /// The server's name.
        server: String,
        /// Why, naming the file or variable: the auth crate's error (an `IdeError`, an
        /// `IngressError`, an `OAuthError`).
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A recent connect found that the server needs authentication, and the needs-auth cache
    /// still says so: the server was not contacted.
    #[error(
        "server \"{server}\": the server needs authentication{} (remembered from an earlier connect; plexus tries \
         again in {})",
        .reason.as_deref().map(|reason| format!(": {reason}")).unwrap_or_default(),
        show_wait(*.retry_in)
    )]
    NeedsAuth {
        /// The server's name.
        server: String,
        /// Why, as the connect that failed said.
        reason: Option<String>,
        /// How long until the cache entry expires.
        retry_in: Duration,
    },
    /// The entry's `protocolVersion` names a revision this build does not speak; the server was
    /// not contacted.
    #[error("server \"{server}\": its protocolVersion is no revision plexus speaks")]
    ProtocolVersion {
        /// The server's name.
        server: String,
        /// The revision given, and the ones there are.
        #[source]
        source: plexus_protocol::ParseVersionError,
    },
    /// The transport or the MCP handshake failed.
    #[error("server \"{server}\"")]
    Client {
        /// The server's name.
        server: String,
        /// What failed.
        #[source]
        source: ClientError,
    },
}

/// `12 min` (rounded up), `40 s`.
fn show_wait(wait: Duration) -> String {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    if secs >= 60 {
        format!("{} min", secs.div_ceil(60))
    } else {
        format!("{secs} s")
    }
}

impl ConnectError {
    /// The server's name.
    pub fn server(&self) -> &str {
        match self {
            ConnectError::Disabled { server }
            | ConnectError::Unsupported { server, .. }
            | ConnectError::Credentials { server, .. }
            | ConnectError::NeedsAuth { server, .. }
            | ConnectError::ProtocolVersion { server, .. }
            | ConnectError::Client { server, .. } => server,
        }
    }

    /// The message without the `server "NAME": ` it starts with, for a place that already names
    /// the server (a row of a table).
    pub fn reason(&self) -> String {
        plexus_pool::text::without_server(self.server(), &plexus_transport::error_chain(self)).to_owned()
    }

    /// The session error, when the failure came from the transport or the handshake.
    pub fn client_error(&self) -> Option<&ClientError> {
        match self {
            ConnectError::Client { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether the server needs a login: a 401 that no credential fixed, now or (from the
    /// needs-auth cache) in the last 15 minutes.
    pub fn needs_auth(&self) -> bool {
        match self {
            ConnectError::NeedsAuth { .. } => true,
            ConnectError::Client { source, .. } => source.transport_class() == Some(ErrorClass::NeedsAuth),
            _ => false,
        }
    }

    /// The transport's reason, when the transport said the server needs authentication.
    #[cfg(feature = "auth")]
    pub(crate) fn transport_needs_auth_reason(&self) -> Option<String> {
        match self {
            ConnectError::Client {
                source: ClientError::Transport(TransportError::NeedsAuth { cause }),
                ..
            } => Some(plexus_transport::error_chain(&**cause)),
            _ => None,
        }
    }
}

/// A live session and how it was reached.
#[derive(Debug, Clone)]
pub struct Connected {
    /// The session.
    pub client: Client,
    /// Set when the connector used another transport than the entry's kind names, and why
    /// (an `http` server that only speaks legacy SSE).
    pub fallback: Option<String>,
}

/// Connects to the server `name` configured as `config`: starts its transport and runs the MCP
/// handshake. The entry's `timeout` (ms), when set, replaces `options.initialize_timeout`, which
/// also bounds establishing a remote transport.
///
/// This is [`DefaultConnector::new`]'s [`connect`](DefaultConnector::connect): the process environment, no
/// plexus home (so no needs-auth cache). Use [`DefaultConnector::from_env`] for the process's home.
pub async fn connect(name: &str, config: &ServerConfig, options: ClientOptions) -> Result<Client, ConnectError> {
    DefaultConnector::new().connect(name, config, options).await
}

/// Like [`connect`], and says whether a fallback transport was used.
///
/// An `http` entry whose server answers the `initialize` POST with 400, 404 or 405 is a server
/// of the 2024-11-05 era: following the specification's backwards-compatibility rule, the
/// connector then tries legacy HTTP+SSE at the same URL, and [`Connected::fallback`] says so.
pub async fn connect_detailed(
    name: &str,
    config: &ServerConfig,
    options: ClientOptions,
) -> Result<Connected, ConnectError> {
    DefaultConnector::new().connect_detailed(name, config, options).await
}

/// What the connector sets on every transport it starts, beyond the entry (unread in a build
/// without transports).
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(
    not(any(feature = "stdio", feature = "http", feature = "sse", feature = "ws")),
    allow(dead_code)
)]
pub(crate) struct Limits {
    /// The largest message accepted from the server (`PLEXUS_MAX_MESSAGE_SIZE`); `None`: the
    /// transport's default (16 MiB).
    pub(crate) max_message_size: Option<usize>,
}

/// What the connector's environment says of the network: its proxy variables and its
/// `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE` and `SSL_CERT_DIR` (the Hub's environment, not
/// necessarily the process's).
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(any(feature = "http", feature = "sse", feature = "ws")), allow(dead_code))]
pub(crate) struct NetworkEnv {
    pub(crate) proxy: plexus_net::http::ProxyVariables,
    pub(crate) tls: Option<plexus_net::tls::TlsEnvironment>,
}

impl NetworkEnv {
    /// What `env` says.
    pub(crate) fn of(env: &plexus_config::Environment) -> NetworkEnv {
        NetworkEnv {
            proxy: plexus_net::http::ProxyVariables::from_lookup(|name| env.get(name)),
            tls: Some(plexus_net::tls::TlsEnvironment::from_lookup(|name| env.get(name))),
        }
    }
}

/// Starts the transport of `config` with `auth` and `limits` and runs the handshake. The caller
/// has handled `disabled` and the `timeout`.
// With transports compiled out, their arms (which use these values, and reach the end) are gone.
#[cfg_attr(
    not(all(
        feature = "stdio",
        feature = "http",
        feature = "sse",
        feature = "ws",
        feature = "auth"
    )),
    allow(unused_variables, unreachable_code)
)]
pub(crate) async fn connect_entry(
    name: &str,
    config: &ServerConfig,
    options: ClientOptions,
    auth: Auth,
    limits: Limits,
    network: &NetworkEnv,
) -> Result<Connected, ConnectError> {
    let failed = |source: ClientError| ConnectError::Client {
        server: name.to_owned(),
        source,
    };
    // Only the remote kinds take an auth provider.
    #[cfg(not(any(feature = "http", feature = "sse", feature = "ws")))]
    let _ = auth;
    // Every kind but `http` (which may fall back to legacy SSE) starts its transport, then the
    // session.
    let transport: Result<Box<dyn Transport>, ClientError> = match config {
        #[cfg(feature = "stdio")]
        ServerConfig::Stdio(stdio) => {
            let transport = spawn_stdio(name, stdio, limits).map_err(failed)?;
            return match Client::connect(transport, options.clone()).await {
                Ok(client) => Ok(Connected { client, fallback: None }),
                // A server of the initialize era that exits on the server/discover probe is
                // started again and spoken to with the handshake.
                Err(ClientError::ProbeClosed { source }) => {
                    tracing::info!(
                        server = name,
                        "the server ended on the server/discover probe ({}); starting it again for the initialize era",
                        plexus_transport::error_chain(&source)
                    );
                    let legacy = ClientOptions {
                        era: plexus_client::EraChoice::InitializeAfterProbe,
                        ..options
                    };
                    let transport = spawn_stdio(name, stdio, limits).map_err(failed)?;
                    session(transport, legacy).await.map_err(failed)
                }
                Err(e) => Err(failed(e)),
            };
        }
        #[cfg(feature = "http")]
        ServerConfig::Http(http) => {
            let remote = Remote::new(&http.headers, &http.network, network);
            let transport = http_transport(name, http.url.as_str(), remote.clone(), auth.clone(), &options, limits)
                .map_err(failed)?;
            // A stateless revision pinned: an error status is the server's answer, not a sign of
            // the 2024-11-05 era.
            let pinned_stateless = matches!(options.era, plexus_client::EraChoice::Stateless(_));
            return match Client::connect(transport, options.clone()).await {
                Ok(client) => Ok(Connected { client, fallback: None }),
                Err(ClientError::Transport(TransportError::Http {
                    status: status @ (400 | 404 | 405),
                    ..
                })) if !pinned_stateless => {
                    legacy_fallback(name, http.url.as_str(), remote, auth, status, options, limits)
                        .await
                        .map_err(failed)
                }
                Err(e) => Err(failed(e)),
            };
        }
        #[cfg(all(feature = "http", feature = "auth"))]
        ServerConfig::ClaudeAiProxy(proxy) => {
            http_transport(name, proxy.url.as_str(), Remote::plain(network), auth, &options, limits)
        }
        #[cfg(feature = "sse")]
        ServerConfig::Sse(sse) => {
            let remote = Remote::new(&sse.headers, &sse.network, network);
            sse_transport(name, sse.url.as_str(), remote, auth, &options, limits).await
        }
        #[cfg(feature = "sse")]
        ServerConfig::SseIde(ide) => {
            sse_transport(name, ide.url.as_str(), Remote::ide(network), auth, &options, limits).await
        }
        #[cfg(feature = "ws")]
        ServerConfig::Ws(ws) => {
            let remote = Remote::new(&ws.headers, &ws.network, network);
            ws_transport(name, ws.url.as_str(), remote, auth, &options, limits).await
        }
        #[cfg(feature = "ws")]
        ServerConfig::WsIde(ide) => {
            ws_transport(name, ide.url.as_str(), Remote::ide(network), auth, &options, limits).await
        }
        // Reachable when a feature is off.
        #[allow(unreachable_patterns)]
        other => {
            return Err(ConnectError::Unsupported {
                server: name.to_owned(),
                kind: other.kind(),
                why: unsupported_reason(other.kind()),
            });
        }
    };
    session(transport.map_err(failed)?, options).await.map_err(failed)
}

/// Starts the child process of a `stdio` entry.
#[cfg(feature = "stdio")]
fn spawn_stdio(
    name: &str,
    stdio: &plexus_config::StdioEntry,
    limits: Limits,
) -> Result<Box<dyn Transport>, ClientError> {
    let mut transport_config = plexus_stdio::StdioConfig::new(&stdio.command)
        .name(name)
        .args(&stdio.args);
    for (key, value) in &stdio.env {
        transport_config = transport_config.env(key, value);
    }
    for secret in crate::SECRET_VARIABLES {
        transport_config = transport_config.without_env(secret);
    }
    if let Some(cwd) = &stdio.cwd {
        transport_config = transport_config.cwd(cwd);
    }
    if let Some(limit) = limits.max_message_size {
        transport_config = transport_config.max_message_size(limit);
    }
    plexus_stdio::StdioTransport::spawn(transport_config)
        .map(|transport| Box::new(transport) as Box<dyn Transport>)
        .map_err(Into::into)
}

/// `options` with the era the entry's `protocolVersion` asks for (`auto`: probe; a stateless
/// revision: that one, pinned; an earlier one: the handshake offering it); without one, the
/// host's choice stands (by default a probe). A legacy SSE entry (`sse`, `sse-ide`) gets the
/// handshake without a probe unless it pins a version. The entry's `probeTimeout` is how long
/// any probe of it waits.
pub(crate) fn with_era(
    name: &str,
    config: &ServerConfig,
    mut options: ClientOptions,
) -> Result<ClientOptions, ConnectError> {
    use plexus_client::EraChoice;
    use plexus_protocol::ProtocolVersion;
    let entry = config.options();
    // Legacy HTTP+SSE is a transport of the `initialize` era only: nothing to probe.
    let legacy_sse = matches!(config.kind(), ServerKind::Sse | ServerKind::SseIde);
    match entry.protocol_version.as_deref() {
        None | Some("auto") if legacy_sse => options.era = EraChoice::Initialize,
        None => {}
        Some("auto") => options.era = EraChoice::PROBE,
        Some(given) => {
            let version: ProtocolVersion = given.parse().map_err(|source| ConnectError::ProtocolVersion {
                server: name.to_owned(),
                source,
            })?;
            if version.is_stateless() {
                options.era = EraChoice::Stateless(version);
            } else {
                options.era = EraChoice::Initialize;
                options.protocol_version = version;
            }
        }
    }
    if let (EraChoice::Probe { probe_timeout }, Some(configured)) = (&mut options.era, entry.probe_timeout) {
        *probe_timeout = configured;
    }
    Ok(options)
}

/// Why a kind cannot be connected by this build.
fn unsupported_reason(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Stdio => "need the `stdio` feature of plexus",
        ServerKind::Http => "need the `http` feature of plexus",
        ServerKind::Sse | ServerKind::SseIde => "need the `sse` feature of plexus",
        ServerKind::Ws | ServerKind::WsIde => "need the `ws` feature of plexus",
        ServerKind::ClaudeAiProxy if cfg!(feature = "auth") => "need the `http` feature of plexus",
        ServerKind::ClaudeAiProxy => crate::entry_auth::CLAUDEAI_PROXY_UNSUPPORTED,
        ServerKind::InProcess => crate::in_process::NOT_REGISTERED,
    }
}

#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
fn header_pairs(headers: &BTreeMap<String, String>) -> Vec<(String, String)> {
    headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

async fn session(transport: Box<dyn Transport>, options: ClientOptions) -> Result<Connected, ClientError> {
    Client::connect(transport, options)
        .await
        .map(|client| Connected { client, fallback: None })
}

/// What an entry says about a remote server besides its URL: its headers, and how it is reached
/// (its CA file, client certificate and proxy).
#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
#[derive(Debug, Clone, Default)]
struct Remote {
    headers: Vec<(String, String)>,
    tls: plexus_net::tls::TlsOptions,
    proxy: plexus_net::http::ProxyChoice,
}

#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
impl Remote {
    /// An entry's headers and network settings, in the connector's environment `env`.
    fn new(
        headers: &std::collections::BTreeMap<String, String>,
        network: &plexus_config::NetworkConfig,
        env: &NetworkEnv,
    ) -> Self {
        use plexus_net::http::ProxyChoice;
        Remote {
            headers: header_pairs(headers),
            tls: plexus_net::tls::TlsOptions {
                ca: network.ca.clone(),
                client_identity: network
                    .client_identity
                    .as_ref()
                    .map(|identity| plexus_net::tls::ClientIdentity {
                        cert: identity.cert.clone(),
                        key: identity.key.clone(),
                    }),
                environment: env.tls.clone(),
            },
            proxy: match &network.proxy {
                None => ProxyChoice::Variables(env.proxy.clone()),
                Some(plexus_config::ProxySetting::None) => ProxyChoice::Disabled,
                Some(plexus_config::ProxySetting::Url(url)) => ProxyChoice::Url(url.as_str().to_owned()),
            },
        }
    }

    /// No headers and no settings of the entry's own, in the connector's environment `env`.
    #[cfg_attr(
        not(any(all(feature = "http", feature = "auth"), feature = "sse", feature = "ws")),
        allow(dead_code)
    )]
    fn plain(env: &NetworkEnv) -> Self {
        Remote::new(
            &std::collections::BTreeMap::new(),
            &plexus_config::NetworkConfig::default(),
            env,
        )
    }

    /// An IDE's server, on this machine: never through a proxy, whatever the environment says.
    #[cfg(any(feature = "sse", feature = "ws"))]
    fn ide(env: &NetworkEnv) -> Self {
        Remote {
            proxy: plexus_net::http::ProxyChoice::Disabled,
            ..Remote::plain(env)
        }
    }
}

/// The endpoint of server `name` at `url` as every remote transport takes it: what the entry
/// says of it ([`Remote`]), its auth provider, the connect timeout of `options` and the
/// connector's message size cap.
#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
fn endpoint(
    name: &str,
    url: &str,
    remote: Remote,
    auth: Auth,
    options: &ClientOptions,
    limits: Limits,
) -> RemoteEndpoint {
    let Remote { headers, tls, proxy } = remote;
    let mut endpoint = RemoteEndpoint::new(url);
    name.clone_into(&mut endpoint.name);
    endpoint.headers = headers;
    endpoint.auth = auth;
    endpoint.tls = tls;
    endpoint.proxy = proxy;
    endpoint.connect_timeout = options.initialize_timeout;
    if let Some(limit) = limits.max_message_size {
        endpoint.max_message_size = limit;
    }
    endpoint
}

#[cfg(feature = "http")]
fn http_transport(
    name: &str,
    url: &str,
    remote: Remote,
    auth: Auth,
    options: &ClientOptions,
    limits: Limits,
) -> Result<Box<dyn Transport>, ClientError> {
    let config = plexus_http::HttpConfig::new(endpoint(name, url, remote, auth, options, limits));
    Ok(Box::new(plexus_http::HttpTransport::new(config)?))
}

#[cfg(feature = "ws")]
async fn ws_transport(
    name: &str,
    url: &str,
    remote: Remote,
    auth: Auth,
    options: &ClientOptions,
    limits: Limits,
) -> Result<Box<dyn Transport>, ClientError> {
    let config = plexus_ws::WsConfig::new(endpoint(name, url, remote, auth, options, limits));
    Ok(Box::new(plexus_ws::WsTransport::connect(config).await?))
}

/// A legacy SSE transport: the connect budget bounds the wait for the `endpoint` event too.
#[cfg(feature = "sse")]
async fn sse_transport(
    name: &str,
    url: &str,
    remote: Remote,
    auth: Auth,
    options: &ClientOptions,
    limits: Limits,
) -> Result<Box<dyn Transport>, ClientError> {
    let config = plexus_sse::SseConfig::new(endpoint(name, url, remote, auth, options, limits))
        .endpoint_timeout(options.initialize_timeout);
    Ok(Box::new(plexus_sse::SseTransport::connect(config).await?))
}

#[cfg(all(feature = "http", feature = "sse"))]
async fn legacy_fallback(
    name: &str,
    url: &str,
    remote: Remote,
    auth: Auth,
    status: u16,
    options: ClientOptions,
    limits: Limits,
) -> Result<Connected, ClientError> {
    let note = format!(
        "the server answered the Streamable HTTP initialize with HTTP {status}; using legacy HTTP+SSE at the same URL"
    );
    // The legacy transport has one era: no probe over it.
    let options = ClientOptions {
        era: plexus_client::EraChoice::Initialize,
        ..options
    };
    let transport = sse_transport(name, url, remote, auth, &options, limits)
        .await
        .map_err(|e| fallback_failed(status, e))?;
    let client = Client::connect(transport, options)
        .await
        .map_err(|e| fallback_failed(status, e))?;
    Ok(Connected {
        client,
        fallback: Some(note),
    })
}

/// Without the `sse` feature there is nothing to fall back to (async like the real one, which
/// its caller awaits).
#[cfg(all(feature = "http", not(feature = "sse")))]
#[allow(clippy::unused_async)]
async fn legacy_fallback(
    _: &str,
    url: &str,
    _: Remote,
    _: Auth,
    status: u16,
    _: ClientOptions,
    _: Limits,
) -> Result<Connected, ClientError> {
    Err(ClientError::Transport(TransportError::connect(
        url,
        ConnectorReason::NoFallback { status },
    )))
}

/// Both attempts failed: say so, with the second failure's reason. An auth failure of the
/// fallback is kept as it is: it says what the server wants.
#[cfg(all(feature = "http", feature = "sse"))]
fn fallback_failed(status: u16, error: ClientError) -> ClientError {
    if let ClientError::Transport(TransportError::NeedsAuth { .. } | TransportError::AuthFailed { .. }) = error {
        return error;
    }
    ClientError::Transport(TransportError::connect(
        "the legacy SSE fallback",
        ConnectorReason::FallbackFailed { status, source: error },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_read_in_whole_minutes_or_seconds() {
        assert_eq!(show_wait(Duration::from_secs(15 * 60)), "15 min");
        assert_eq!(show_wait(Duration::from_millis(14 * 60 * 1000 + 1)), "15 min");
        assert_eq!(show_wait(Duration::from_secs(60)), "1 min");
        assert_eq!(show_wait(Duration::from_millis(59_001)), "1 min");
        assert_eq!(show_wait(Duration::from_millis(58_500)), "59 s");
        assert_eq!(show_wait(Duration::from_millis(1)), "1 s");
    }
}
