//! The default connector: a configured server → its transport → an initialized session.

use plexus_client::{Client, ClientError, ClientOptions};
use plexus_config::{ServerConfig, ServerKind};

/// Why a configured server could not be connected.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectError {
    /// The entry is disabled in its config.
    #[error("server \"{server}\" is disabled in its configuration")]
    Disabled {
        /// The server's name.
        server: String,
    },
    /// This build of plexus has no transport for the entry's kind.
    #[error("server \"{server}\": {kind} servers are not supported by this build of plexus ({why})")]
    Unsupported {
        /// The server's name.
        server: String,
        /// The entry's kind.
        kind: ServerKind,
        /// What is missing.
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

/// Connects to the server `name` configured as `config`: starts its transport and runs the MCP
/// handshake. The entry's `timeout` (ms), when set, replaces `options.initialize_timeout`.
pub async fn connect(name: &str, config: &ServerConfig, mut options: ClientOptions) -> Result<Client, ConnectError> {
    if config.options().disabled {
        return Err(ConnectError::Disabled {
            server: name.to_owned(),
        });
    }
    if let Some(timeout) = config.options().timeout {
        options.initialize_timeout = timeout;
    }
    let transport = transport_for(name, config)?;
    Client::connect(transport, options)
        .await
        .map_err(|source| ConnectError::Client {
            server: name.to_owned(),
            source,
        })
}

fn transport_for(name: &str, config: &ServerConfig) -> Result<Box<dyn plexus_transport::Transport>, ConnectError> {
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
            plexus_stdio::StdioTransport::spawn(transport_config)
                .map(|t| Box::new(t) as Box<dyn plexus_transport::Transport>)
                .map_err(|e| ConnectError::Client {
                    server: name.to_owned(),
                    source: ClientError::Transport(e),
                })
        }
        #[cfg(not(feature = "stdio"))]
        ServerConfig::Stdio(_) => Err(ConnectError::Unsupported {
            server: name.to_owned(),
            kind: ServerKind::Stdio,
            why: "the `stdio` feature is off",
        }),
        other => Err(ConnectError::Unsupported {
            server: name.to_owned(),
            kind: other.kind(),
            why: "only stdio servers are supported so far; remote transports are planned",
        }),
    }
}
