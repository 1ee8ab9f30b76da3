//! One server's record in the pool: its spec, its state, its live connection and the attempt
//! under way, the generations of its lists.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use plexus_client::{Client, ClientError};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::connector::{Admission, ConnectFailure, ServerSpec};
use crate::state::{ListKind, ServerState, ServerStatus};
use crate::sync::lock;

/// How an attempt ended, as its waiters see it.
pub(crate) type AttemptOutcome = Result<Client, ConnectFailure>;

/// The live connection.
pub(crate) struct Current {
    pub(crate) client: Client,
    /// Which connection of the slot this is: the tasks and callbacks of an older one see a
    /// different number and do nothing.
    pub(crate) epoch: u64,
    /// Its watcher tasks (notifications, ping), aborted when it goes.
    pub(crate) tasks: Vec<AbortHandle>,
}

impl Current {
    /// Stops the watchers and hands the client over to be closed.
    pub(crate) fn retire(self) -> Client {
        for task in &self.tasks {
            task.abort();
        }
        self.client
    }
}

/// What changes under the slot's lock.
pub(crate) struct Live {
    pub(crate) state: ServerState,
    pub(crate) connection: Option<Current>,
    /// The attempt under way: its outcome arrives on this channel.
    pub(crate) attempt: Option<watch::Receiver<Option<AttemptOutcome>>>,
    pub(crate) attempt_task: Option<AbortHandle>,
    /// The last epoch handed out.
    pub(crate) epoch: u64,
    /// A needs-auth server is not tried again before this.
    pub(crate) needs_auth_until: Option<Instant>,
    /// When a stdio server died, within the crash window.
    pub(crate) crashes: VecDeque<Instant>,
    /// The crash-loop guard tripped: no restart on demand.
    pub(crate) crash_guard: bool,
    /// A readiness wait gave up on this server: its connect is announced as a join.
    pub(crate) late: bool,
    /// The server's instructions, cut to the pool's limit.
    pub(crate) instructions: Option<Arc<str>>,
    /// The last failed refresh of each list (cleared by a good one).
    pub(crate) list_errors: [Option<ClientError>; 4],
}

/// One server.
pub(crate) struct Slot {
    pub(crate) spec: ServerSpec,
    pub(crate) key: String,
    live: Mutex<Live>,
    /// Each list's generation: bumped when the list is invalidated; a fetch that started in an
    /// older generation does not write its result.
    generations: [AtomicU64; 4],
    /// One fetch of each list at a time.
    pub(crate) fetching: [tokio::sync::Mutex<()>; 4],
    /// The slot left the pool.
    pub(crate) removed: AtomicBool,
    /// Tells waiters that the state changed.
    changed: watch::Sender<u64>,
}

impl Slot {
    pub(crate) fn new(spec: ServerSpec, generation: impl Fn() -> u64, changed: watch::Sender<u64>) -> Slot {
        let state = match &spec.admission {
            Admission::Start => ServerState::new(ServerStatus::Pending, None),
            Admission::AwaitingApproval { reason } => ServerState::new(ServerStatus::Pending, Some(reason.clone())),
            Admission::Disabled { reason } => ServerState::new(ServerStatus::Disabled, Some(reason.clone())),
        };
        Slot {
            key: spec.cache_key(),
            spec,
            live: Mutex::new(Live {
                state,
                connection: None,
                attempt: None,
                attempt_task: None,
                epoch: 0,
                needs_auth_until: None,
                crashes: VecDeque::new(),
                crash_guard: false,
                late: false,
                instructions: None,
                list_errors: Default::default(),
            }),
            generations: std::array::from_fn(|_| AtomicU64::new(generation())),
            fetching: std::array::from_fn(|_| tokio::sync::Mutex::new(())),
            removed: AtomicBool::new(false),
            changed,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    pub(crate) fn live(&self) -> MutexGuard<'_, Live> {
        lock(&self.live)
    }

    /// The current generation of `kind`'s list.
    pub(crate) fn generation(&self, kind: ListKind) -> u64 {
        self.generations[kind.index()].load(Ordering::SeqCst)
    }

    /// Starts a new generation of `kind`'s list.
    pub(crate) fn invalidate(&self, kind: ListKind, generation: u64) {
        self.generations[kind.index()].store(generation, Ordering::SeqCst);
    }

    /// Sets the state (under the caller's lock) and tells the waiters; returns the new state
    /// for the event.
    pub(crate) fn set_state(
        &self,
        live: &mut Live,
        status: ServerStatus,
        change: impl FnOnce(&mut ServerState),
    ) -> ServerState {
        let state = &mut live.state;
        if state.status != status {
            state.changed_at = SystemTime::now();
        }
        state.status = status;
        change(state);
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
        state.clone()
    }

    /// Whether the slot may be started: `Err` with its status and reason when it may not.
    pub(crate) fn startable(&self) -> Result<(), (ServerStatus, String)> {
        match &self.spec.admission {
            Admission::Start => Ok(()),
            Admission::AwaitingApproval { reason } => Err((ServerStatus::Pending, reason.clone())),
            Admission::Disabled { reason } => Err((ServerStatus::Disabled, reason.clone())),
        }
    }
}
