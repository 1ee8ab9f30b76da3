//! The pool's errors.

use std::time::Duration;

use plexus_client::ClientError;

use crate::connector::ConnectFailure;
use crate::state::{ListKind, ServerStatus};

/// Why the pool could not give what was asked.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// No server of that name is in the pool.
    #[error("no server named {server:?} is configured{}", known_names(.known))]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// The servers the pool has.
        known: Vec<String>,
    },
    /// The server is not started: waiting for approval, or turned off.
    #[error("server \"{server}\" is {status}: {reason}")]
    NotStarted {
        /// The server.
        server: String,
        /// `pending` or `disabled`.
        status: ServerStatus,
        /// Why, and what the user can do.
        reason: String,
    },
    /// The server could not be connected (its message names the server).
    #[error("{failure}")]
    Connect {
        /// The server.
        server: String,
        /// What failed, classified.
        failure: ConnectFailure,
    },
    /// The stdio server died too often to be restarted on demand.
    #[error(
        "server \"{server}\" stopped {crashes} times within {} s; it is not restarted until asked to reconnect",
        .window.as_secs()
    )]
    CrashLoop {
        /// The server.
        server: String,
        /// How many times it died.
        crashes: usize,
        /// Within how long.
        window: Duration,
    },
    /// Fetching a list failed and no earlier list was kept.
    #[error("server \"{server}\": fetching {} failed", .list.method())]
    List {
        /// The server.
        server: String,
        /// Which list.
        list: ListKind,
        /// What failed.
        #[source]
        source: ClientError,
    },
    /// A required server (`"required": true`) could not connect while the host waited for
    /// readiness.
    #[error("required server \"{server}\" could not connect: {failure}")]
    Required {
        /// The server.
        server: String,
        /// Its failure.
        failure: ConnectFailure,
    },
    /// The pool is shutting down.
    #[error("the connection pool is shut down")]
    ShutDown,
}

fn known_names(known: &[String]) -> String {
    if known.is_empty() {
        String::new()
    } else {
        format!(" (configured: {})", known.join(", "))
    }
}

impl PoolError {
    /// The server the error is about, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            PoolError::UnknownServer { server, .. }
            | PoolError::NotStarted { server, .. }
            | PoolError::Connect { server, .. }
            | PoolError::CrashLoop { server, .. }
            | PoolError::List { server, .. }
            | PoolError::Required { server, .. } => Some(server),
            PoolError::ShutDown => None,
        }
    }

    /// The connect failure, when the error is one.
    pub fn connect_failure(&self) -> Option<&ConnectFailure> {
        match self {
            PoolError::Connect { failure, .. } | PoolError::Required { failure, .. } => Some(failure),
            _ => None,
        }
    }
}

/// A live connection ended without the pool closing it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("server \"{server}\": the connection was lost{how}")]
pub struct ConnectionLost {
    /// The server.
    pub server: String,
    /// How the pool found out.
    pub how: LossKind,
    /// The session's error (the last one, for repeated failures).
    #[source]
    pub session_error: ClientError,
}

/// How the pool found out that a connection was lost (a [`ConnectionLost`]); its text, empty or
/// starting with `: `, follows "the connection was lost".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LossKind {
    /// The session ended, or the server ended the session.
    #[error("")]
    Ended,
    /// The server did not answer a ping in time.
    #[error(": it did not answer a ping within {} ms", .interval.as_millis())]
    NoPong {
        /// The ping interval (and the time a ping may take).
        interval: Duration,
    },
    /// Requests failed with connection errors several times in a row.
    #[error(": {count} connection failures in a row; the last")]
    RepeatedFailures {
        /// How many.
        count: u32,
    },
    /// A request was refused for want of authentication (HTTP 401): the session's credentials
    /// no longer work. The reconnect that follows finds out whether a login is needed.
    #[error(": the server asked for authentication again")]
    NeedsAuth,
}
