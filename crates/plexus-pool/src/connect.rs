//! Connecting and losing connections: single-flight attempts within the connect windows,
//! reconnection with backoff, the crash-loop guard, the needs-auth wait, and what a lost
//! connection clears.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use plexus_client::{Client, ClientError, RequestObserver, RequestOptions, ServerNotification};
use plexus_protocol::methods;
use plexus_transport::{ErrorClass, TransportError, error_chain};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::connector::{ConnectFailure, Connection};
use crate::error::{ConnectionLost, LossKind, PoolError};
use crate::pool::Shared;
use crate::slot::{AttemptOutcome, Current, Live, Slot};
use crate::state::{ListKind, PoolEvent, ServerState, ServerStatus};

/// How long past the entry's connect timeout the pool waits for a connector that does not keep
/// to it.
const CONNECTOR_GRACE: Duration = Duration::from_secs(5);

/// Why an attempt runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The pool starts the server: one try.
    Initial,
    /// A caller asks for the server: one try.
    OnDemand,
    /// A remote server's connection was lost: tries with backoff.
    Reconnect,
}

/// Starts an attempt; the caller holds the slot's lock and has checked that none is under way.
pub(crate) fn start(
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    live: &mut Live,
    mode: Mode,
) -> watch::Receiver<Option<AttemptOutcome>> {
    let (outcome, receiver) = watch::channel(None);
    live.attempt = Some(receiver.clone());
    let (shared, slot_ref) = (Arc::clone(shared), Arc::clone(slot));
    let own = receiver.clone();
    let task = tokio::spawn(async move {
        let result = attempts(&shared, &slot_ref, mode).await;
        let mut live = slot_ref.live();
        // Unless a connection it installed ended it already (and a newer attempt may run).
        if live.attempt.as_ref().is_some_and(|attempt| attempt.same_channel(&own)) {
            live.attempt = None;
            live.attempt_task = None;
        }
        drop(live);
        outcome.send_replace(Some(result));
    });
    live.attempt_task = Some(task.abort_handle());
    receiver
}

/// Waits for an attempt's outcome; `None` when it was stopped (shutdown, removal).
async fn outcome_of(mut receiver: watch::Receiver<Option<AttemptOutcome>>) -> Option<AttemptOutcome> {
    loop {
        if let Some(outcome) = receiver.borrow_and_update().clone() {
            return Some(outcome);
        }
        if receiver.changed().await.is_err() {
            return receiver.borrow().clone();
        }
    }
}

async fn attempts(shared: &Arc<Shared>, slot: &Arc<Slot>, mode: Mode) -> AttemptOutcome {
    let tries = if mode == Mode::Reconnect {
        shared.settings.reconnect_attempts.max(1)
    } else {
        1
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        // The first reconnect is at once (an expired session, a dropped socket); then the
        // waits grow.
        if mode == Mode::Reconnect && attempt > 1 {
            let wait = shared.settings.reconnect_wait(attempt - 1, crate::sync::random_u64());
            tracing::debug!(server = %slot.name(), "reconnecting in {} ms (attempt {attempt} of {tries})", wait.as_millis());
            tokio::time::sleep(wait).await;
        }
        let reconnect_attempt = if mode == Mode::Reconnect { attempt } else { 0 };
        match once(shared, slot, reconnect_attempt).await {
            Ok(client) => return Ok(client),
            Err(failure) => {
                let transient = matches!(failure, ConnectFailure::Failed { transient: true, .. });
                let gone = shared.closing.load(Ordering::SeqCst) || slot.removed.load(Ordering::SeqCst);
                if attempt >= tries || !transient || gone {
                    return Err(failure);
                }
            }
        }
    }
}

/// One connect, within the slot's window.
async fn once(shared: &Arc<Shared>, slot: &Arc<Slot>, reconnect_attempt: u32) -> AttemptOutcome {
    let window = if slot.spec.is_local() {
        &shared.local
    } else {
        &shared.remote
    };
    // The semaphores are never closed.
    let _permit = Arc::clone(window).acquire_owned().await.ok();
    let epoch = {
        let mut live = slot.live();
        live.epoch += 1;
        let state = slot.set_state(&mut live, ServerStatus::Connecting, |state| {
            state.reason = None;
            state.reconnect_attempt = reconnect_attempt;
        });
        let epoch = live.epoch;
        drop(live);
        announce(shared, slot, state);
        epoch
    };
    let mut options = shared.connector.client_options(&slot.spec);
    let budget = slot.spec.config.options().timeout.unwrap_or(options.initialize_timeout) + CONNECTOR_GRACE;
    options.observer = Some(Arc::new(Health {
        shared: Arc::downgrade(shared),
        slot: Arc::downgrade(slot),
        epoch,
        failures: AtomicU32::new(0),
    }));
    let started = Instant::now();
    let connect = shared.connector.connect(&slot.spec, options);
    let result = match tokio::time::timeout(budget, connect).await {
        Ok(result) => result,
        Err(_) => Err(ConnectFailure::failed(ConnectorTimeout {
            server: slot.name().to_owned(),
            after: budget,
        })),
    };
    match result {
        Ok(connection) => install(shared, slot, epoch, connection, started.elapsed()),
        Err(failure) => {
            failed(shared, slot, &failure);
            Err(failure)
        }
    }
}

/// The connector did not end within the entry's connect timeout.
#[derive(Debug, thiserror::Error)]
#[error("server \"{server}\": the connect did not end within {} ms", .after.as_millis())]
struct ConnectorTimeout {
    server: String,
    after: Duration,
}

/// Makes a new connection the slot's live one.
fn install(
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    epoch: u64,
    connection: Connection,
    took: Duration,
) -> AttemptOutcome {
    let Connection { client, note } = connection;
    let mut live = slot.live();
    if shared.closing.load(Ordering::SeqCst) || slot.removed.load(Ordering::SeqCst) || live.epoch != epoch {
        drop(live);
        close_later(client);
        return Err(ConnectFailure::Disabled {
            reason: format!("server \"{}\" left the pool while it connected", slot.name()),
        });
    }
    live.instructions = client
        .server()
        .instructions
        .as_deref()
        .map(|text| crate::text::truncate_chars(text, shared.settings.max_instructions_chars).into());
    live.list_errors = Default::default();
    // The attempt is over from here on: an explicit reconnect that comes now starts a new one
    // (it must not join this one and get the session it asked to replace).
    live.attempt = None;
    live.attempt_task = None;
    let late = std::mem::take(&mut live.late);
    let tasks = watchers(shared, slot, epoch, &client);
    live.connection = Some(Current {
        client: client.clone(),
        epoch,
        tasks,
    });
    let state = slot.set_state(&mut live, ServerStatus::Connected, |state| {
        state.error = None;
        state.reason = None;
        state.connect_time = Some(took);
        state.note = note;
        state.reconnect_attempt = 0;
    });
    drop(live);
    announce(shared, slot, state);
    if late {
        shared.emit(PoolEvent::Joined {
            server: slot.name().to_owned(),
        });
    }
    let (weak_shared, weak_slot) = (Arc::downgrade(shared), Arc::downgrade(slot));
    client.on_close(move |error| {
        if let (Some(shared), Some(slot)) = (weak_shared.upgrade(), weak_slot.upgrade()) {
            lost(&shared, &slot, epoch, LossKind::Ended, error.clone());
        }
    });
    Ok(client)
}

/// Records a failed connect in the slot's state.
fn failed(shared: &Arc<Shared>, slot: &Arc<Slot>, failure: &ConnectFailure) {
    let mut live = slot.live();
    let status = match failure {
        ConnectFailure::NeedsAuth { retry_in, .. } => {
            live.needs_auth_until = Some(Instant::now() + retry_in.unwrap_or(shared.settings.needs_auth_retry));
            ServerStatus::NeedsAuth
        }
        ConnectFailure::Disabled { .. } => ServerStatus::Disabled,
        ConnectFailure::Failed { .. } => ServerStatus::Failed,
    };
    let state = slot.set_state(&mut live, status, |state| {
        state.reason = match failure {
            ConnectFailure::Disabled { reason } => Some(reason.clone()),
            _ => None,
        };
        state.error = Some(failure.clone());
        state.note = None;
    });
    drop(live);
    announce(shared, slot, state);
}

fn announce(shared: &Shared, slot: &Slot, state: ServerState) {
    shared.emit(PoolEvent::StateChanged {
        server: slot.name().to_owned(),
        state: Box::new(state),
    });
}

/// The live connection `epoch` of `slot` ended without the pool closing it (the peer went away,
/// the session expired, repeated I/O failures, a failed ping): everything cached from it goes,
/// the state says why, a stdio server's death is counted for the crash-loop guard, and a remote
/// server is reconnected with backoff.
pub(crate) fn lost(shared: &Arc<Shared>, slot: &Arc<Slot>, epoch: u64, how: LossKind, session_error: ClientError) {
    let mut live = slot.live();
    if live.connection.as_ref().is_none_or(|current| current.epoch != epoch) {
        return;
    }
    let client = take_lost(shared, slot, &mut live, how, session_error);
    let state = live.state.clone();
    let gone = shared.closing.load(Ordering::SeqCst) || slot.removed.load(Ordering::SeqCst);
    if !slot.spec.is_local() && !gone && live.attempt.is_none() {
        start(shared, slot, &mut live, Mode::Reconnect);
    }
    drop(live);
    announce(shared, slot, state);
    announce_lists(shared, slot);
    if let Some(client) = client {
        close_later(client);
    }
}

/// The part of a loss done under the slot's lock: takes the connection out, clears its lists,
/// records the failure (and a stdio server's death); returns the client to close.
fn take_lost(
    shared: &Shared,
    slot: &Slot,
    live: &mut Live,
    how: LossKind,
    session_error: ClientError,
) -> Option<Client> {
    let client = live.connection.take().map(Current::retire);
    clear_lists(shared, slot);
    let stderr_tail = match &session_error {
        ClientError::Transport(TransportError::Closed { stderr_tail, .. }) => stderr_tail.clone(),
        _ => None,
    };
    let lost = ConnectionLost {
        server: slot.name().to_owned(),
        how,
        session_error,
    };
    tracing::info!(server = %slot.name(), "{}", error_chain(&lost));
    let failure = ConnectFailure::Failed {
        error: Arc::new(lost),
        stderr_tail,
        transient: true,
    };
    if slot.spec.is_local() {
        let now = Instant::now();
        let window = shared.settings.crash_window;
        live.crashes.push_back(now);
        while live.crashes.front().is_some_and(|&at| now.duration_since(at) > window) {
            live.crashes.pop_front();
        }
        if live.crashes.len() >= shared.settings.crash_limit.max(1) {
            live.crash_guard = true;
        }
    }
    slot.set_state(live, ServerStatus::Failed, |state| {
        state.error = Some(failure);
        state.note = None;
    });
    client
}

/// Forgets every cached list of the slot and starts new generations, so that a fetch under way
/// does not write its result.
fn clear_lists(shared: &Shared, slot: &Slot) {
    shared.caches.remove(slot.name());
    for kind in ListKind::ALL {
        slot.invalidate(kind, shared.next_generation());
    }
}

fn announce_lists(shared: &Shared, slot: &Slot) {
    for list in ListKind::ALL {
        shared.emit(PoolEvent::ListChanged {
            server: slot.name().to_owned(),
            list,
        });
    }
}

/// Takes the slot out of service (shutdown, removal): stops its attempt, clears its lists, and
/// returns its client to close.
pub(crate) fn retire(shared: &Shared, slot: &Slot) -> Option<Client> {
    let mut live = slot.live();
    if let Some(task) = live.attempt_task.take() {
        task.abort();
    }
    live.attempt = None;
    live.epoch += 1;
    let client = live.connection.take().map(Current::retire);
    drop(live);
    clear_lists(shared, slot);
    client
}

/// Closes every client at once and waits for all (each within its transport's bound).
pub(crate) async fn close_all(clients: Vec<Client>) {
    let mut closing = tokio::task::JoinSet::new();
    for client in clients {
        closing.spawn(async move {
            if let Err(e) = client.close().await {
                tracing::debug!(server = %client.name(), "closing the session: {e}");
            }
        });
    }
    while closing.join_next().await.is_some() {}
}

fn close_later(client: Client) {
    if !client.is_closed() {
        tokio::spawn(close_all(vec![client]));
    }
}

/// [`Pool::ensure_connected`](crate::Pool::ensure_connected) and, with `explicit`,
/// [`Pool::reconnect`](crate::Pool::reconnect).
pub(crate) async fn ensure(shared: &Arc<Shared>, server: &str, explicit: bool) -> Result<Client, PoolError> {
    let slot = shared.slot(server)?;
    let mut retired = None;
    let receiver = {
        let mut live = slot.live();
        if shared.closing.load(Ordering::SeqCst) {
            return Err(PoolError::ShutDown);
        }
        if let Err((status, reason)) = slot.startable() {
            return Err(PoolError::NotStarted {
                server: server.to_owned(),
                status,
                reason,
            });
        }
        if explicit {
            live.crash_guard = false;
            live.crashes.clear();
            live.needs_auth_until = None;
            if live.attempt.is_none() {
                retired = live.connection.take().map(Current::retire);
                clear_lists(shared, &slot);
            }
        } else if let Some(current) = &live.connection {
            match current.client.closed_reason() {
                None => return Ok(current.client.clone()),
                // Closed, and its close callback has not run yet: the loss is taken here.
                Some(error) => retired = take_lost(shared, &slot, &mut live, LossKind::Ended, error),
            }
        }
        match &live.attempt {
            Some(receiver) => receiver.clone(),
            None => {
                if live.crash_guard {
                    return Err(PoolError::CrashLoop {
                        server: server.to_owned(),
                        crashes: live.crashes.len(),
                        window: shared.settings.crash_window,
                    });
                }
                let held = live.needs_auth_until.is_some_and(|until| until > Instant::now());
                if let (true, Some(failure)) = (held, live.state.error.clone()) {
                    return Err(PoolError::Connect {
                        server: server.to_owned(),
                        failure,
                    });
                }
                start(shared, &slot, &mut live, Mode::OnDemand)
            }
        }
    };
    if let Some(client) = retired {
        announce_lists(shared, &slot);
        close_all(vec![client]).await;
    }
    match outcome_of(receiver).await {
        Some(Ok(client)) => Ok(client),
        Some(Err(failure)) => Err(PoolError::Connect {
            server: server.to_owned(),
            failure,
        }),
        None if shared.closing.load(Ordering::SeqCst) => Err(PoolError::ShutDown),
        None => Err(PoolError::UnknownServer {
            server: server.to_owned(),
            known: Vec::new(),
        }),
    }
}

/// The tasks that watch a live connection: its list_changed notifications and, when configured,
/// the liveness ping.
fn watchers(shared: &Arc<Shared>, slot: &Arc<Slot>, epoch: u64, client: &Client) -> Vec<AbortHandle> {
    let mut tasks = Vec::with_capacity(2);
    let mut notifications = client.subscribe();
    let (weak_shared, weak_slot) = (Arc::downgrade(shared), Arc::downgrade(slot));
    tasks.push(
        tokio::spawn(async move {
            loop {
                let lists: &[ListKind] = match notifications.recv().await {
                    Ok(ServerNotification::ToolsListChanged) => &[ListKind::Tools],
                    Ok(ServerNotification::PromptsListChanged) => &[ListKind::Prompts],
                    Ok(ServerNotification::ResourcesListChanged) => &[ListKind::Resources, ListKind::ResourceTemplates],
                    Ok(_) => continue,
                    // Missed notifications may have been list changes.
                    Err(RecvError::Lagged(_)) => &ListKind::ALL,
                    Err(RecvError::Closed) => return,
                };
                let (Some(shared), Some(slot)) = (weak_shared.upgrade(), weak_slot.upgrade()) else {
                    return;
                };
                if slot.live().connection.as_ref().map(|current| current.epoch) != Some(epoch) {
                    return;
                }
                for &list in lists {
                    slot.invalidate(list, shared.next_generation());
                    shared.emit(PoolEvent::ListChanged {
                        server: slot.name().to_owned(),
                        list,
                    });
                }
            }
        })
        .abort_handle(),
    );
    if let Some(interval) = shared.settings.ping_interval {
        let (weak_shared, weak_slot) = (Arc::downgrade(shared), Arc::downgrade(slot));
        let client = client.clone();
        tasks.push(
            tokio::spawn(async move {
                let options = RequestOptions::with_timeout(interval);
                loop {
                    tokio::time::sleep(interval).await;
                    let answer = client.request_raw::<()>(methods::PING, None, &options).await;
                    // An error reply is an answer: the server is alive.
                    let Err(error) = answer else { continue };
                    if matches!(error, ClientError::Rpc { .. }) {
                        continue;
                    }
                    if let (Some(shared), Some(slot)) = (weak_shared.upgrade(), weak_slot.upgrade()) {
                        lost(&shared, &slot, epoch, LossKind::NoPong { interval }, error);
                    }
                    return;
                }
            })
            .abort_handle(),
        );
    }
    tasks
}

/// The pool's request observer for one connection: counts terminal I/O failures in a row (a
/// reply resets the count) and takes the connection as lost at the limit, or at once when the
/// server ended the session or refused a request for want of authentication (the reconnect then
/// puts a remote server in `needs-auth` when a login is needed, as a connect's 401 does).
struct Health {
    shared: Weak<Shared>,
    slot: Weak<Slot>,
    epoch: u64,
    /// Terminal I/O failures in a row on this connection.
    failures: AtomicU32,
}

impl RequestObserver for Health {
    fn request_ended(&self, _server: &str, _method: &str, outcome: Result<(), &ClientError>) {
        let error = match outcome {
            Err(error) if !matches!(error, ClientError::Rpc { .. }) => error,
            // A reply, even an error reply: the connection works. The common path: one load.
            _ => {
                if self.failures.load(Ordering::Relaxed) != 0 {
                    self.failures.store(0, Ordering::Relaxed);
                }
                return;
            }
        };
        let (Some(shared), Some(slot)) = (self.shared.upgrade(), self.slot.upgrade()) else {
            return;
        };
        match error.transport_class() {
            Some(ErrorClass::TerminalIo) if !slot.spec.is_local() => {
                let count = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
                if count >= shared.settings.terminal_failures.max(1) {
                    lost(
                        &shared,
                        &slot,
                        self.epoch,
                        LossKind::RepeatedFailures { count },
                        error.clone(),
                    );
                }
            }
            Some(ErrorClass::SessionExpired) => {
                lost(&shared, &slot, self.epoch, LossKind::Ended, error.clone());
            }
            Some(ErrorClass::NeedsAuth) if !slot.spec.is_local() => {
                lost(&shared, &slot, self.epoch, LossKind::NeedsAuth, error.clone());
            }
            _ => {}
        }
    }
}
