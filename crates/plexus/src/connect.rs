//! The default connector: a configured server → its transport → an initialized session.

use std::collections::BTreeMap;

use plexus_client::{Client, ClientError, ClientOptions};
use plexus_config::{ServerConfig, ServerKind};
use plexus_transport::{Transport, TransportError};

/// Why a configured server could not be connected.
#[derive(Debug, Clone, thiserror::Error)]
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
    /// The transport or the MCP handshake failed.
    #[error("server \"{server}\": {source}")]
    Client {
        /// The server's name.
        server: String,
        /// What failed.
        #[source]
        source: ClientError,
    },
}

impl ConnectError {
    /// The session error, when the failure came from the transport or the handshake.
    pub fn client_error(&self) -> Option<&ClientError> {
        match self {
            ConnectError::Client { source, .. } => Some(source),
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
pub async fn connect(name: &str, config: &ServerConfig, options: ClientOptions) -> Result<Client, ConnectError> {
    connect_detailed(name, config, options)
        .await
        .map(|connected| connected.client)
}

/// Like [`connect`], and says whether a fallback transport was used.
///
/// An `http` entry whose server answers the `initialize` POST with 400, 404 or 405 is a server
/// of the 2024-11-05 era: following the specification's backwards-compatibility rule, the
/// connector then tries legacy HTTP+SSE at the same URL, and [`Connected::fallback`] says so.
pub async fn connect_detailed(
    name: &str,
    config: &ServerConfig,
    mut options: ClientOptions,
) -> Result<Connected, ConnectError> {
    if config.options().disabled {
        return Err(ConnectError::Disabled {
            server: name.to_owned(),
        });
    }
    if let Some(timeout) = config.options().timeout {
        options.initialize_timeout = timeout;
    }
    let failed = |source: ClientError| ConnectError::Client {
        server: name.to_owned(),
        source,
    };
    let unsupported = |why| ConnectError::Unsupported {
        server: name.to_owned(),
        kind: config.kind(),
        why,
    };
    match config {
        #[cfg(feature = "stdio")]
        ServerConfig::Stdio(stdio) => {
            let mut transport_config = plexus_stdio::StdioConfig::new(&stdio.command)
                .name(name)
                .args(&stdio.args);
            for (key, value) in &stdio.env {
                transport_config = transport_config.env(key, value);
            }
            if let Some(cwd) = &stdio.cwd {
                transport_config = transport_config.cwd(cwd);
            }
            let transport = plexus_stdio::StdioTransport::spawn(transport_config).map_err(|e| failed(e.into()))?;
            session(Box::new(transport), options).await.map_err(failed)
        }
        #[cfg(feature = "http")]
        ServerConfig::Http(http) => {
            refuse_auth_settings(http.headers_helper.as_deref(), http.oauth.is_some()).map_err(unsupported)?;
            let headers = header_pairs(&http.headers);
            let mut transport_config = plexus_http::HttpConfig::new(http.url.as_str()).name(name);
            transport_config.headers.clone_from(&headers);
            transport_config.connect_timeout = options.initialize_timeout;
            let transport = plexus_http::HttpTransport::new(transport_config).map_err(|e| failed(e.into()))?;
            match Client::connect(Box::new(transport), options.clone()).await {
                Ok(client) => Ok(Connected { client, fallback: None }),
                Err(ClientError::Transport(TransportError::Http {
                    status: status @ (400 | 404 | 405),
                    ..
                })) => legacy_fallback(name, http.url.as_str(), headers, status, options)
                    .await
                    .map_err(failed),
                Err(e) => Err(failed(e)),
            }
        }
        #[cfg(feature = "sse")]
        ServerConfig::Sse(sse) => {
            refuse_auth_settings(sse.headers_helper.as_deref(), sse.oauth.is_some()).map_err(unsupported)?;
            let transport = sse_transport(name, sse.url.as_str(), header_pairs(&sse.headers), &options)
                .await
                .map_err(failed)?;
            session(transport, options).await.map_err(failed)
        }
        #[cfg(feature = "ws")]
        ServerConfig::Ws(ws) => {
            refuse_auth_settings(ws.headers_helper.as_deref(), false).map_err(unsupported)?;
            let mut transport_config = plexus_ws::WsConfig::new(ws.url.as_str()).name(name);
            transport_config.headers = header_pairs(&ws.headers);
            transport_config.connect_timeout = options.initialize_timeout;
            let transport = plexus_ws::WsTransport::connect(transport_config)
                .await
                .map_err(|e| failed(e.into()))?;
            session(Box::new(transport), options).await.map_err(failed)
        }
        other => Err(unsupported(unsupported_reason(other.kind()))),
    }
}

/// Why a kind cannot be connected by this build.
fn unsupported_reason(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Stdio => "need the `stdio` feature of plexus",
        ServerKind::Http => "need the `http` feature of plexus",
        ServerKind::Sse => "need the `sse` feature of plexus",
        ServerKind::Ws => "need the `ws` feature of plexus",
        _ => "are not supported yet (their IDE or proxy authentication is not implemented)",
    }
}

/// Settings whose authentication is not implemented yet are refused rather than ignored: a
/// server would otherwise be contacted without the credentials its entry asks for.
fn refuse_auth_settings(headers_helper: Option<&str>, oauth: bool) -> Result<(), &'static str> {
    if headers_helper.is_some() {
        return Err("with a `headersHelper` are not supported yet (only static `headers`)");
    }
    if oauth {
        return Err("with an `oauth` setting are not supported yet (only static `headers`)");
    }
    Ok(())
}

fn header_pairs(headers: &BTreeMap<String, String>) -> Vec<(String, String)> {
    headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

async fn session(transport: Box<dyn Transport>, options: ClientOptions) -> Result<Connected, ClientError> {
    Client::connect(transport, options)
        .await
        .map(|client| Connected { client, fallback: None })
}

#[cfg(feature = "sse")]
async fn sse_transport(
    name: &str,
    url: &str,
    headers: Vec<(String, String)>,
    options: &ClientOptions,
) -> Result<Box<dyn Transport>, ClientError> {
    let mut config = plexus_sse::SseConfig::new(url).name(name);
    config.headers = headers;
    config.connect_timeout = options.initialize_timeout;
    let transport = plexus_sse::SseTransport::connect(config).await?;
    Ok(Box::new(transport))
}

#[cfg(all(feature = "http", feature = "sse"))]
async fn legacy_fallback(
    name: &str,
    url: &str,
    headers: Vec<(String, String)>,
    status: u16,
    options: ClientOptions,
) -> Result<Connected, ClientError> {
    let note = format!(
        "the server answered the Streamable HTTP initialize with HTTP {status}; using legacy HTTP+SSE at the same URL"
    );
    let transport = sse_transport(name, url, headers, &options)
        .await
        .map_err(|e| fallback_failed(status, &e))?;
    let client = Client::connect(transport, options)
        .await
        .map_err(|e| fallback_failed(status, &e))?;
    Ok(Connected {
        client,
        fallback: Some(note),
    })
}

#[cfg(all(feature = "http", not(feature = "sse")))]
async fn legacy_fallback(
    _: &str,
    url: &str,
    _: Vec<(String, String)>,
    status: u16,
    _: ClientOptions,
) -> Result<Connected, ClientError> {
    Err(ClientError::Transport(TransportError::Connect {
        target: url.to_owned(),
        reason: format!(
            "the server answered initialize with HTTP {status} (a legacy SSE server?) and this build has no `sse` feature to fall back to"
        ),
    }))
}

/// Both attempts failed: say so, with the second failure's reason.
#[cfg(all(feature = "http", feature = "sse"))]
fn fallback_failed(status: u16, error: &ClientError) -> ClientError {
    ClientError::Transport(TransportError::Connect {
        target: "the legacy SSE fallback".to_owned(),
        reason: format!(
            "the server answered the Streamable HTTP initialize with HTTP {status}, and legacy HTTP+SSE at the same URL failed too: {error}"
        ),
    })
}
