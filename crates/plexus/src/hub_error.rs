//! The Hub's one error type, and the questions a host asks of it.

use plexus_client::ClientError;
use plexus_jsonrpc::{ErrorCode, ErrorObject};
use plexus_pool::{ConnectFailure, PoolError};
use plexus_tools::{CallError, ResultError};
use plexus_transport::{ErrorClass, TransportError};

/// Why the Hub could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The plexus home or the working directory cannot be found.
    #[error(transparent)]
    Discovery(plexus_config::DiscoveryError),
    /// No MCP tool of the pool has this name (a built-in's name included: the host runs those).
    #[error("no MCP tool is named {name:?}")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The call failed (it names server and tool).
    #[error(transparent)]
    Call(Box<CallError>),
    /// A tool-pool lockfile holds the tool out of the pool (see [`crate::hub_lock`]): it is
    /// not called until approved (`plexus lock --update NAME`, [`Hub::relock`](crate::Hub::relock)).
    #[error("tool {name} is held out of the tool pool: {reason}; approve it with `plexus lock --update {name}`")]
    ToolHeld {
        /// The name asked for.
        name: String,
        /// Why it is held.
        reason: plexus_tools::lock::HoldReason,
    },
    /// A tool-pool lockfile could not be read or written (an unreadable one is never
    /// overwritten).
    #[error(transparent)]
    ToolLock(std::sync::Arc<plexus_tools::lock::LockError>),
    /// A name given to lock is neither a connected server nor one of its tools.
    #[error("cannot lock {name:?}: {why}")]
    NotLockable {
        /// The name given.
        name: String,
        /// Why.
        why: String,
    },
    /// No prompt of the Hub has this name.
    #[error("no prompt is named {name:?} (the Hub has {count} prompts)")]
    UnknownPrompt {
        /// The name asked for.
        name: String,
        /// How many prompts there are.
        count: usize,
    },
    /// A resource reference is not `@server:uri`.
    #[error("{reference:?} is not a resource reference (@server:uri)")]
    BadReference {
        /// What was given.
        reference: String,
    },
    /// A server could not be reached, or its request failed.
    #[error("a request to server \"{server}\" failed")]
    Server {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: Box<ServerFailure>,
    },
    /// A server's skills could not be listed, or a skill could not be loaded (one that fails
    /// verification included).
    #[error("the skills of server \"{server}\"")]
    Skill {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: plexus_client::SkillError,
    },
    /// Waiting for the servers failed (a required server could not connect, or the pool is
    /// closed).
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A config file exists but could not be loaded (read again by
    /// [`Hub::reload`](crate::Hub::reload)).
    #[error("the config file {} could not be loaded", .path.display())]
    Config {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::sync::Arc<plexus_config::ConfigError>,
    },
    /// Only a server of the project's file is approved or rejected.
    #[error("there is no project server {name:?}; only the project's servers need approval")]
    NotAProjectServer {
        /// The name given.
        name: String,
    },
    /// The approval or rejection could not be recorded.
    #[error("the approval could not be recorded")]
    Approval {
        /// Why.
        #[source]
        source: plexus_config::WriteError,
    },
    /// The result could not be processed.
    #[error("the result of {name} could not be processed")]
    Result {
        /// The tool's qualified name.
        name: String,
        /// Why.
        #[source]
        source: ResultError,
    },
}

/// Why a server's request failed: it could not be reached, or it answered with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerFailure {
    /// The pool could not give a connection.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// The request failed.
    #[error(transparent)]
    Request(#[from] plexus_client::ClientError),
}

impl From<CallError> for HubError {
    fn from(error: CallError) -> Self {
        HubError::Call(Box::new(error))
    }
}

impl HubError {
    /// The server the error is about, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            HubError::Server { server, .. } => Some(server),
            HubError::Call(call) => Some(call.server()),
            HubError::Pool(error) => error.server(),
            _ => None,
        }
    }

    /// The tool the error is about, when there is one: its qualified name in the tool pool
    /// when the Hub knows it, else the server's own name of it.
    pub fn tool(&self) -> Option<&str> {
        match self {
            HubError::UnknownTool { name } | HubError::Result { name, .. } => Some(name),
            HubError::Call(call) => Some(call.tool()),
            _ => None,
        }
    }

    /// The JSON-RPC error the server answered with, when it answered with one.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self.client_error()? {
            ClientError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The code of [`rpc_error`](Self::rpc_error).
    pub fn rpc_code(&self) -> Option<ErrorCode> {
        self.rpc_error().map(|error| error.code)
    }

    /// Whether the request ran out of time: the call's timeout, or a connect that timed out.
    pub fn is_timeout(&self) -> bool {
        if matches!(self.client_error(), Some(ClientError::Timeout { .. })) {
            return true;
        }
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(error) = cause {
            if let Some(io) = error.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::TimedOut
            {
                return true;
            }
            cause = error.source();
        }
        false
    }

    /// Whether the host cancelled the call ([`CancelHandle`](crate::CancelHandle),
    /// [`Hub::interrupt`](crate::Hub::interrupt)).
    pub fn is_cancelled(&self) -> bool {
        matches!(self.client_error(), Some(ClientError::Cancelled { .. }))
    }

    /// Whether the server needs the user to log in first (`plexus login`,
    /// [`DefaultConnector::login`](crate::DefaultConnector::login)).
    pub fn needs_auth(&self) -> bool {
        matches!(self.connect_failure(), Some(ConnectFailure::NeedsAuth { .. }))
            || self.transport_class() == Some(ErrorClass::NeedsAuth)
    }

    /// Whether the same request may succeed if tried again later, unchanged: a timeout, a
    /// connection that failed or was lost, a server that could not be reached for a reason
    /// that may pass. An answer of the server (a JSON-RPC error), a name that is not known, a
    /// cancellation, a needed login or a setting that cannot work are not.
    pub fn is_retryable(&self) -> bool {
        if self.is_cancelled() || self.needs_auth() {
            return false;
        }
        if self.is_timeout() {
            return true;
        }
        if let Some(failure) = self.connect_failure() {
            return matches!(failure, ConnectFailure::Failed { transient: true, .. });
        }
        match self.client_error() {
            Some(ClientError::SessionClosed) => true,
            Some(error) => matches!(
                error.transport_class(),
                Some(ErrorClass::TerminalIo | ErrorClass::Closed | ErrorClass::Connect | ErrorClass::SessionExpired)
            ),
            None => matches!(self.pool_error(), Some(PoolError::CrashLoop { .. })),
        }
    }

    /// The session's error under this one, when a request reached a session.
    pub fn client_error(&self) -> Option<&ClientError> {
        match self {
            HubError::Call(call) => match call.as_ref() {
                CallError::Failed { source, .. } => Some(source),
                CallError::Unavailable { source, .. } => pool_client_error(source),
                _ => None,
            },
            HubError::Server { source, .. } => match source.as_ref() {
                ServerFailure::Request(error) => Some(error),
                ServerFailure::Pool(error) => pool_client_error(error),
            },
            HubError::Pool(error) => pool_client_error(error),
            _ => None,
        }
    }

    /// The pool's error under this one, when the pool could not give a connection or a list.
    pub fn pool_error(&self) -> Option<&PoolError> {
        match self {
            HubError::Pool(error) => Some(error),
            HubError::Server { source, .. } => match source.as_ref() {
                ServerFailure::Pool(error) => Some(error),
                ServerFailure::Request(_) => None,
            },
            HubError::Call(call) => match call.as_ref() {
                CallError::Unavailable { source, .. } => Some(source),
                _ => None,
            },
            _ => None,
        }
    }

    fn connect_failure(&self) -> Option<&ConnectFailure> {
        self.pool_error().and_then(PoolError::connect_failure)
    }

    fn transport_class(&self) -> Option<ErrorClass> {
        if let Some(class) = self.client_error().and_then(ClientError::transport_class) {
            return Some(class);
        }
        let (ConnectFailure::Failed { error, .. } | ConnectFailure::NeedsAuth { error, .. }) =
            self.connect_failure()?
        else {
            return None;
        };
        error.downcast_ref::<TransportError>().map(TransportError::class)
    }
}

fn pool_client_error(error: &PoolError) -> Option<&ClientError> {
    match error {
        PoolError::List { source, .. } => Some(source),
        _ => None,
    }
}
