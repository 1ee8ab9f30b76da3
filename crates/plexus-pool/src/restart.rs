//! Restarting the servers that died, for a host whose users cannot ask for a server themselves
//! (a gateway: a server whose tools left the list cannot be called back). Unsupervised, the pool
//! starts a server again only when someone asks for it ([`Pool::ensure_connected`]), and a stdio
//! server that died [`crash_limit`](crate::PoolSettings::crash_limit) times within the crash
//! window stays off until [`Pool::reconnect`].
//!
//! A [`Supervisor`] ([`Pool::supervise`]) starts again every server that was connected and
//! failed, at most once per [`RestartPolicy::min_interval`]; one the crash-loop guard stopped
//! waits a pause first (the first [`RestartPolicy::crash_pause`], each next one twice as long, at
//! most [`RestartPolicy::max_crash_pause`]), announced by [`PoolEvent::RestartScheduled`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use crate::{Pool, PoolError, PoolEvent, ServerStatus};

/// How a [`Supervisor`] starts servers again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// At most one start of a server per this long (default 5 s): one that comes sooner waits
    /// for its turn (it is never dropped, or the server would stay off).
    pub min_interval: Duration,
    /// The first pause before a server the crash-loop guard stopped is started again (default
    /// 60 s); each next pause of that server is twice as long.
    pub crash_pause: Duration,
    /// The longest pause (default 15 minutes).
    pub max_crash_pause: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            min_interval: Duration::from_secs(5),
            crash_pause: Duration::from_secs(60),
            max_crash_pause: Duration::from_secs(15 * 60),
        }
    }
}

impl RestartPolicy {
    /// The default policy with the first crash pause `crash_pause`.
    pub fn with_crash_pause(crash_pause: Duration) -> Self {
        RestartPolicy {
            crash_pause,
            ..RestartPolicy::default()
        }
    }

    /// The pause before start `round` (from 0) of a server the crash-loop guard stopped.
    pub fn crash_pause_of(&self, round: u32) -> Duration {
        self.crash_pause
            .saturating_mul(2u32.saturating_pow(round.min(16)))
            .min(self.max_crash_pause)
    }
}

/// Restarts a pool's failed servers (see the module docs) until it is dropped.
#[derive(Debug)]
pub struct Supervisor {
    task: tokio::task::AbortHandle,
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Pool {
    /// Starts a [`Supervisor`] of this pool with `policy`. Must be called within a Tokio runtime.
    pub fn supervise(&self, policy: RestartPolicy) -> Supervisor {
        let state = Arc::new(Supervised {
            pool: self.clone(),
            policy,
            last_start: Mutex::new(HashMap::new()),
            crash_rounds: Mutex::new(HashMap::new()),
            crash_waits: Mutex::new(HashSet::new()),
        });
        let events = self.subscribe();
        let task = tokio::spawn(supervise(state, events));
        Supervisor {
            task: task.abort_handle(),
        }
    }
}

/// What a supervisor keeps.
struct Supervised {
    pool: Pool,
    policy: RestartPolicy,
    /// When each server was last started (or is due to be).
    last_start: Mutex<HashMap<String, Instant>>,
    /// How many crash pauses each server has had.
    crash_rounds: Mutex<HashMap<String, u32>>,
    /// The servers stopped for crashing that wait for their pause to end.
    crash_waits: Mutex<HashSet<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Follows the pool's events until it closes: every server seen connected that fails is started
/// again.
async fn supervise(state: Arc<Supervised>, mut events: broadcast::Receiver<PoolEvent>) {
    let mut were_connected: HashSet<String> = HashSet::new();
    loop {
        for (name, server) in state.pool.states() {
            match server.status {
                ServerStatus::Connected => {
                    were_connected.insert(name);
                }
                ServerStatus::Failed if were_connected.contains(&name) => {
                    if state.pool.is_crash_stopped(&name) {
                        after_crash_stop(&state, &name);
                    } else {
                        restart(&state, &name);
                    }
                }
                _ => {}
            }
        }
        match events.recv().await {
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Starts `server` again, at most once per [`RestartPolicy::min_interval`].
fn restart(state: &Arc<Supervised>, server: &str) {
    let now = Instant::now();
    let at = {
        let mut last = lock(&state.last_start);
        let at = last
            .get(server)
            .map_or(now, |last| (*last + state.policy.min_interval).max(now));
        if last.get(server).is_some_and(|last| *last > now) {
            // A start is already due later: that one will do.
            return;
        }
        last.insert(server.to_owned(), at);
        at
    };
    let (state, server) = (Arc::clone(state), server.to_owned());
    tokio::spawn(async move {
        tokio::time::sleep_until(at.into()).await;
        match state.pool.ensure_connected(&server).await {
            // Stopped by the crash-loop guard: its pause comes next.
            Ok(_) | Err(PoolError::CrashLoop { .. }) => {}
            Err(e) => tracing::info!(server, "the server could not be started again: {e}"),
        }
    });
}

/// A server the crash-loop guard stopped: started again after its pause (once per stop), which
/// is announced first.
fn after_crash_stop(state: &Arc<Supervised>, server: &str) {
    if !lock(&state.crash_waits).insert(server.to_owned()) {
        return;
    }
    let round = {
        let mut rounds = lock(&state.crash_rounds);
        let round = rounds.entry(server.to_owned()).or_insert(0);
        *round += 1;
        *round - 1
    };
    let pause = state.policy.crash_pause_of(round);
    state.pool.announce(PoolEvent::RestartScheduled {
        server: server.to_owned(),
        after: pause,
    });
    let (state, server) = (Arc::clone(state), server.to_owned());
    tokio::spawn(async move {
        tokio::time::sleep(pause).await;
        if let Err(e) = state.pool.reconnect(&server).await {
            tracing::info!(server, "the server could not be started again: {e}");
        }
        lock(&state.crash_waits).remove(&server);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_pauses_double_up_to_the_longest() {
        let policy = RestartPolicy::with_crash_pause(Duration::from_secs(60));
        let pauses: Vec<u64> = (0..6).map(|round| policy.crash_pause_of(round).as_secs()).collect();
        assert_eq!(pauses, [60, 120, 240, 480, 900, 900]);
        assert_eq!(policy.crash_pause_of(u32::MAX), Duration::from_secs(900));
    }
}
