//! What a server is doing, as hosts and their users see it, and the pool's events.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::connector::ConnectFailure;

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerStatus {
    /// Not started yet: waiting for its turn in the connect window, or for the user's approval
    /// (then [`ServerState::reason`] says so).
    Pending,
    /// A connect is under way.
    Connecting,
    /// A live session.
    Connected,
    /// The last connect failed, or the connection was lost; [`ServerState::error`] says why.
    Failed,
    /// The server needs a login.
    NeedsAuth,
    /// Turned off; [`ServerState::reason`] says by which rule.
    Disabled,
}

impl ServerStatus {
    /// `pending`, `connecting`, `connected`, `failed`, `needs-auth`, `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerStatus::Pending => "pending",
            ServerStatus::Connecting => "connecting",
            ServerStatus::Connected => "connected",
            ServerStatus::Failed => "failed",
            ServerStatus::NeedsAuth => "needs-auth",
            ServerStatus::Disabled => "disabled",
        }
    }

    /// Whether the status can still change without anyone asking (pending or connecting).
    pub fn is_settling(self) -> bool {
        matches!(self, ServerStatus::Pending | ServerStatus::Connecting)
    }
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One server's state: its status and what goes with it.
#[derive(Debug, Clone)]
pub struct ServerState {
    /// Where the server is.
    pub status: ServerStatus,
    /// Why a `pending` or `disabled` server is not started (none while waiting for its turn).
    pub reason: Option<String>,
    /// The last failure (kept while a reconnect is under way, cleared on success).
    pub error: Option<ConnectFailure>,
    /// When the status last changed.
    pub changed_at: SystemTime,
    /// How long the last successful connect took.
    pub connect_time: Option<Duration>,
    /// How the connection differs from the entry (a transport fallback), while connected.
    pub note: Option<String>,
    /// Which attempt of a reconnection is under way (0 outside one).
    pub reconnect_attempt: u32,
}

impl ServerState {
    pub(crate) fn new(status: ServerStatus, reason: Option<String>) -> ServerState {
        ServerState {
            status,
            reason,
            error: None,
            changed_at: SystemTime::now(),
            connect_time: None,
            note: None,
            reconnect_attempt: 0,
        }
    }
}

/// Which of a server's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    /// Every kind, in the order of the pool's tables.
    pub const ALL: [ListKind; 4] = [
        ListKind::Tools,
        ListKind::Resources,
        ListKind::ResourceTemplates,
        ListKind::Prompts,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The list method, e.g. `tools/list`.
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Resources => "resources/list",
            ListKind::ResourceTemplates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }
}

/// Something that happened in the pool, for UIs and for hosts that rebuild their tool pool.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PoolEvent {
    /// A server's state changed.
    StateChanged {
        /// The server.
        server: String,
        /// Its new state (boxed: events wait in a broadcast buffer whose every slot is as large
        /// as the largest event).
        state: Box<ServerState>,
    },
    /// A server connected after a readiness wait gave up on it: its tools are new to the host.
    Joined {
        /// The server.
        server: String,
    },
    /// A server's list changed (its `list_changed` notification, or the connection that served
    /// it is gone): what the host built from it must be fetched again.
    ListChanged {
        /// The server.
        server: String,
        /// Which list.
        list: ListKind,
    },
    /// A server left the pool (its entry was removed or replaced).
    Removed {
        /// The server.
        server: String,
    },
    /// A [`Supervisor`](crate::Supervisor) starts again, after `after`, a server the crash-loop
    /// guard stopped.
    RestartScheduled {
        /// The server.
        server: String,
        /// How long it stays off first.
        after: std::time::Duration,
    },
}
