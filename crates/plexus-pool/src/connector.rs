//! The seam between the pool and the transports: the servers a pool is given, the [`Connector`]
//! trait that connects one, and how a connect fails.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use plexus_client::{Client, ClientOptions};
use plexus_config::{Scope, ServerConfig, ServerKind};

/// An error kept by the pool and shown to hosts: cheap to clone, its source chain intact.
pub type SharedError = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Whether a server may be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// It may run: the pool starts it.
    Start,
    /// It waits for the user's approval (a project server): shown as `pending`, never started.
    AwaitingApproval {
        /// What the user can do, e.g. `run plexus approve NAME`.
        reason: String,
    },
    /// It is turned off (its entry, managed policy, the user's rejection): shown as `disabled`,
    /// never started.
    Disabled {
        /// Which rule, in a sentence.
        reason: String,
    },
}

/// One configured server as the pool holds it.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The server's configured name.
    pub name: String,
    /// Its (expanded) entry.
    pub config: ServerConfig,
    /// The config scope the entry comes from; `None` for the host's own entries.
    pub scope: Option<Scope>,
    /// Whether it may be started.
    pub admission: Admission,
}

impl ServerSpec {
    /// A server that may run.
    pub fn new(name: impl Into<String>, config: ServerConfig, scope: Option<Scope>) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            config,
            scope,
            admission: Admission::Start,
        }
    }

    /// The same server with another admission.
    #[must_use]
    pub fn with_admission(mut self, admission: Admission) -> ServerSpec {
        self.admission = admission;
        self
    }

    /// The connection's identity: the name and the canonical JSON of the entry
    /// ([`plexus_config::cache_key`]). A changed entry is a new connection.
    pub fn cache_key(&self) -> String {
        plexus_config::cache_key(&self.name, &self.config)
    }

    /// Whether the server runs on this machine (a stdio child process): it counts against the
    /// local connect window, and is restarted on demand rather than reconnected with backoff.
    pub fn is_local(&self) -> bool {
        self.config.kind() == ServerKind::Stdio
    }

    /// The entry's `"required": true`: waiting for readiness fails when it cannot connect.
    pub fn is_required(&self) -> bool {
        self.config.options().required
    }
}

/// A connected server.
#[derive(Debug, Clone)]
pub struct Connection {
    /// The live session.
    pub client: Client,
    /// How the connection differs from what the entry asked for, for the user (a fallback from
    /// Streamable HTTP to legacy SSE), if it does.
    pub note: Option<String>,
}

/// Why a server could not be connected, classified for the pool's decisions.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The server needs a login: it is not tried again for `retry_in` (else the pool's
    /// [`needs_auth_retry`](crate::PoolSettings::needs_auth_retry)), or until
    /// [`Pool::reconnect`](crate::Pool::reconnect) after a login.
    NeedsAuth {
        /// What the server or the needs-auth cache said.
        error: SharedError,
        /// How long until it is worth trying again, when the connector knows.
        retry_in: Option<Duration>,
    },
    /// The connect failed.
    Failed {
        /// What failed, naming the server.
        error: SharedError,
        /// A stdio server's last stderr lines, when it died.
        stderr_tail: Option<String>,
        /// Whether trying again may help (a refused or reset connection, a timeout); false for a
        /// setting this build cannot use or credentials that cannot be had.
        transient: bool,
    },
    /// The connector refuses the entry as turned off.
    Disabled {
        /// Why, in a sentence.
        reason: String,
    },
}

impl ConnectFailure {
    /// A transient failure with no stderr tail.
    pub fn failed(error: impl std::error::Error + Send + Sync + 'static) -> ConnectFailure {
        ConnectFailure::Failed {
            error: Arc::new(error),
            stderr_tail: None,
            transient: true,
        }
    }

    /// The error, when there is one (not for [`Disabled`](Self::Disabled)).
    pub fn error(&self) -> Option<&SharedError> {
        match self {
            ConnectFailure::NeedsAuth { error, .. } | ConnectFailure::Failed { error, .. } => Some(error),
            ConnectFailure::Disabled { .. } => None,
        }
    }

    /// Whether the server needs a login.
    pub fn needs_auth(&self) -> bool {
        matches!(self, ConnectFailure::NeedsAuth { .. })
    }
}

impl fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectFailure::NeedsAuth { error, .. } | ConnectFailure::Failed { error, .. } => {
                f.write_str(&plexus_transport::error_chain(&**error))
            }
            ConnectFailure::Disabled { reason } => f.write_str(reason),
        }
    }
}

/// Connects one configured server: a config entry and session options in, a live client or a
/// classified failure out. The pool depends on this trait, never on a transport; the facade
/// crate's default connector maps every server kind to its transport and auth.
#[async_trait::async_trait]
pub trait Connector: Send + Sync + 'static {
    /// Connects `server` (its [`admission`](ServerSpec::admission) is
    /// [`Start`](Admission::Start)) with `options`, which carry the pool's request observer:
    /// pass them to the session unchanged apart from what the entry sets (its timeout). The
    /// connect must end within the entry's connect timeout.
    async fn connect(&self, server: &ServerSpec, options: ClientOptions) -> Result<Connection, ConnectFailure>;

    /// The session options for `server` before the pool adds its observer: by default
    /// [`ClientOptions::from_env`] (`MCP_TIMEOUT`, `MCP_TOOL_TIMEOUT`, `PLEXUS_REQUEST_TIMEOUT`).
    fn client_options(&self, server: &ServerSpec) -> ClientOptions {
        ClientOptions::from_env(&server.name)
    }
}
