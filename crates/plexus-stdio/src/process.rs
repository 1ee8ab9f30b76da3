//! The life of the child process: its exit, the state the halves share, and the shutdown of its
//! process group.
//!
//! One owner reaps the child: a small thread per server that blocks in `waitpid` on it (through
//! [`std::process::Child::wait`]) and publishes the exit status the moment the process ends. The
//! child is spawned with `std::process::Command`, not `tokio::process::Command`, so that Tokio's
//! own reaper (its orphan queue, driven by `SIGCHLD`) never knows the pid and cannot race this
//! thread. Because the leader is reaped at once, `killpg(pgid, 0)` failing with `ESRCH` means the
//! whole group is gone, zombie leader included.
//!
//! The shutdown sequence runs at most once per transport, on a thread of its own, so that it
//! needs no Tokio runtime: dropping the transport from anywhere (even after the runtime is gone)
//! cleans up. It is claimed by whichever comes first: [`close`](crate::StdioSender), dropping both
//! halves, or the leader's own exit (then it ends whatever the server left in its group). It stops
//! signalling at the first `ESRCH`, so a pgid is never signalled once the group is known empty.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Waker};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use plexus_transport::{CloseReason, ProcessExit, ServerOutput, TransportError};
use tokio::sync::watch;

use crate::config::ShutdownTimings;
use crate::lock;
use crate::stderr::StderrLog;

/// The stack of the waiter and shutdown threads: they only wait, sleep, signal and log.
const THREAD_STACK: usize = 256 * 1024;

/// How long `close` waits for the writer to write what is queued and drop the server's stdin
/// before it signals the group.
const STDIN_CLOSE_WAIT: Duration = crate::writer::FLUSH_ON_CLOSE.saturating_add(Duration::from_millis(20));

/// How the server's leader process ended.
#[derive(Debug, Clone)]
pub(crate) enum ExitInfo {
    /// Its exit status.
    Status(ExitStatus),
    /// `waitpid` failed (for example because the host ignores `SIGCHLD`, so the kernel reaps).
    Unavailable(Arc<std::io::Error>),
}

impl ExitInfo {
    /// "the server exited with status N", "the server was killed by signal SIGKILL", …
    pub(crate) fn reason(&self) -> ProcessExit {
        match self {
            ExitInfo::Status(status) => {
                if let Some(code) = status.code() {
                    ProcessExit::Code(code)
                } else if let Some(number) = status.signal() {
                    ProcessExit::Signal {
                        number,
                        name: Signal::try_from(number).ok().map(Signal::as_str),
                    }
                } else {
                    ProcessExit::Other(*status)
                }
            }
            ExitInfo::Unavailable(why) => ProcessExit::Unavailable(Arc::clone(why)),
        }
    }
}

/// What the receiver waits for at the end: the exit and the end of stderr.
#[derive(Debug, Default)]
struct Events {
    exit: Option<ExitInfo>,
    stderr_closed: bool,
    /// The receiver's waker (there is one receiver).
    waker: Option<Waker>,
}

/// A copy of the end events seen so far.
#[derive(Debug, Clone)]
pub(crate) struct EventsSnapshot {
    pub(crate) exit: Option<ExitInfo>,
    pub(crate) stderr_closed: bool,
}

/// The state shared by both halves, the writer and stderr tasks, the waiter thread and the
/// shutdown thread. It does nothing when dropped: [`ProcessGuard`] does the cleanup.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The server's name, for tracing.
    pub(crate) name: String,
    /// The process group (the leader's pid).
    pub(crate) pgid: Pid,
    pub(crate) timings: ShutdownTimings,
    pub(crate) stderr: StderrLog,
    events: Mutex<Events>,
    closed: AtomicBool,
    /// The first reason the transport closed; later sends fail with it.
    close_reason: Mutex<Option<TransportError>>,
    /// Whether the client's `close` was that first reason.
    closed_by_client: AtomicBool,
    /// Tells the writer to drop the server's stdin and stop.
    stop_writing: watch::Sender<bool>,
    /// Set by the writer once the server's stdin is closed.
    stdin_closed: watch::Sender<bool>,
    shutdown_claimed: AtomicBool,
    /// Set when the shutdown sequence has ended (normally: the group is empty).
    shutdown_done: watch::Sender<bool>,
    /// Requests sent whose response has not come (nor their cancellation been sent): while
    /// any is, a new line goes through the writer task, which coalesces what callers queue into
    /// one write (see the `writer` module).
    awaiting: AtomicUsize,
}

impl Shared {
    /// Counts a request being sent; how many others await their response.
    pub(crate) fn request_sent(&self) -> usize {
        self.awaiting.fetch_add(1, Ordering::AcqRel)
    }

    /// Counts a request answered (its response read) or given up (its cancellation sent, or its
    /// line never taken).
    pub(crate) fn request_settled(&self) {
        let _ = self
            .awaiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    pub(crate) fn new(name: String, pgid: Pid, timings: ShutdownTimings, stderr: StderrLog) -> Self {
        Shared {
            name,
            pgid,
            timings,
            stderr,
            events: Mutex::new(Events::default()),
            closed: AtomicBool::new(false),
            close_reason: Mutex::new(None),
            closed_by_client: AtomicBool::new(false),
            stop_writing: watch::Sender::new(false),
            stdin_closed: watch::Sender::new(false),
            shutdown_claimed: AtomicBool::new(false),
            shutdown_done: watch::Sender::new(false),
            awaiting: AtomicUsize::new(0),
        }
    }

    /// Whether the transport has closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the transport closed (the first reason wins) and stops the writer. Returns whether
    /// this was the first reason.
    pub(crate) fn mark_closed(&self, reason: TransportError) -> bool {
        let first = {
            let mut slot = lock(&self.close_reason);
            let first = slot.is_none();
            if first {
                *slot = Some(reason);
            }
            first
        };
        self.closed.store(true, Ordering::Release);
        self.stop_writing.send_replace(true);
        first
    }

    /// Why the server went away, as far as is known: the client closed it, or its exit status
    /// (else that it closed its stdout), with the tail of its stderr.
    pub(crate) fn gone_error(&self, exit: Option<&ExitInfo>) -> TransportError {
        let reason = if self.closed_by_client() {
            CloseReason::ByClient
        } else if let Some(exit) = exit {
            CloseReason::Exited(exit.reason())
        } else {
            CloseReason::EndOfOutput {
                output: ServerOutput::Stdout,
                mid_message: false,
            }
        };
        TransportError::Closed {
            reason,
            stderr_tail: Some(self.stderr.tail(crate::config::STDERR_TAIL_BYTES)),
        }
    }

    /// Waits (at most the exit wait) for the server's exit and the end of its stderr; returns
    /// how it exited, if it has.
    async fn wait_settled(&self) -> Option<ExitInfo> {
        let deadline = tokio::time::Instant::now() + self.timings.exit_wait;
        loop {
            let (exit, stderr_closed) = {
                let events = lock(&self.events);
                (events.exit.clone(), events.stderr_closed)
            };
            // The stderr tail is complete once stderr is closed (or the wait is over).
            if (exit.is_some() && stderr_closed) || tokio::time::Instant::now() >= deadline {
                return exit;
            }
            tokio::time::sleep(self.timings.poll_interval).await;
        }
    }

    /// The error a send gets once the transport is closed: unless the client closed it, why the
    /// server went away (its status and stderr tail, after a bounded wait for them).
    pub(crate) async fn send_error(&self) -> TransportError {
        if !self.closed_by_client()
            && let Some(exit) = self.wait_settled().await
        {
            return self.gone_error(Some(&exit));
        }
        self.closed_error()
    }

    /// After a failed write to stdin: a broken pipe usually means the server is gone, so the
    /// error says why (status and stderr, after a bounded wait) rather than "broken pipe".
    pub(crate) async fn write_failure(&self, error: std::io::Error) -> TransportError {
        if error.kind() == std::io::ErrorKind::BrokenPipe
            && let Some(exit) = self.wait_settled().await
        {
            return self.gone_error(Some(&exit));
        }
        TransportError::from_io("writing to the server's stdin", error)
    }

    /// The first reason the transport closed for.
    pub(crate) fn closed_error(&self) -> TransportError {
        lock(&self.close_reason)
            .clone()
            .unwrap_or_else(|| TransportError::closed(CloseReason::ByClient))
    }

    pub(crate) fn closed_by_client(&self) -> bool {
        self.closed_by_client.load(Ordering::Acquire)
    }

    pub(crate) fn stop_writing_signal(&self) -> watch::Receiver<bool> {
        self.stop_writing.subscribe()
    }

    pub(crate) fn set_stdin_closed(&self) {
        self.stdin_closed.send_replace(true);
    }

    /// The end events so far; registers the receiver's waker for the ones still to come.
    pub(crate) fn poll_events(&self, cx: &mut Context<'_>) -> EventsSnapshot {
        let mut events = lock(&self.events);
        let waiting = events.exit.is_none() || !events.stderr_closed;
        if waiting && !events.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            events.waker = Some(cx.waker().clone());
        }
        EventsSnapshot {
            exit: events.exit.clone(),
            stderr_closed: events.stderr_closed,
        }
    }

    fn update_events(&self, update: impl FnOnce(&mut Events)) {
        let waker = {
            let mut events = lock(&self.events);
            update(&mut events);
            events.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    pub(crate) fn set_stderr_closed(&self) {
        self.update_events(|events| events.stderr_closed = true);
    }

    /// The client's graceful close: stdin first, then the signal sequence; returns when the
    /// group is gone (or the sequence has given up on survivors).
    pub(crate) async fn close(self: &Arc<Self>) {
        if self.mark_closed(TransportError::closed(CloseReason::ByClient)) {
            self.closed_by_client.store(true, Ordering::Release);
        }
        let mut stdin_closed = self.stdin_closed.subscribe();
        // Bounded: the writer drops stdin at its next poll; a stalled runtime must not stall us.
        let _ = tokio::time::timeout(STDIN_CLOSE_WAIT, stdin_closed.wait_for(|closed| *closed)).await;
        self.start_shutdown();
        let mut done = self.shutdown_done.subscribe();
        // The sequence bounds itself; this bound only guards against a thread that never ran.
        let bound = self.timings.total() + Duration::from_secs(1);
        if tokio::time::timeout(bound, done.wait_for(|done| *done)).await.is_err() {
            tracing::warn!(server = %self.name, "the shutdown of the server's process group did not finish in {bound:?}");
        }
    }

    /// Claims the one shutdown sequence of this transport.
    fn claim_shutdown(&self) -> bool {
        !self.shutdown_claimed.swap(true, Ordering::AcqRel)
    }

    /// Starts the shutdown sequence on a thread of its own, unless it was claimed before. Never
    /// blocks and needs no runtime. Counted in [`SHUTDOWNS`] until it ends.
    pub(crate) fn start_shutdown(self: &Arc<Self>) {
        if !self.claim_shutdown() {
            return;
        }
        SHUTDOWNS.started();
        let shared = Arc::clone(self);
        let spawned = thread::Builder::new()
            .name(format!("plexus-stdio-shutdown-{}", self.pgid))
            .stack_size(THREAD_STACK)
            .spawn(move || {
                shared.run_shutdown();
                SHUTDOWNS.ended();
            });
        if let Err(e) = spawned {
            tracing::warn!(server = %self.name, "could not start the shutdown thread ({e}); killing the process group at once");
            let _ = killpg(self.pgid, Signal::SIGKILL);
            self.shutdown_done.send_replace(true);
            SHUTDOWNS.ended();
        }
    }

    /// Runs the sequence on the calling thread (it blocks for up to the three graces).
    fn run_shutdown(&self) {
        if !self.escalate() {
            match live_members(self.pgid) {
                // Orphaned grandchildren are reaped by init (or a subreaper), which some inits do
                // lazily; until then their zombies keep the group visible to `killpg`.
                Some(0) => tracing::debug!(
                    server = %self.name,
                    pgid = self.pgid.as_raw(),
                    "only zombies are left in the server's group, waiting for their parent to reap them"
                ),
                live => tracing::warn!(
                    server = %self.name,
                    pgid = self.pgid.as_raw(),
                    live_members = live,
                    "processes of the server's group survived SIGKILL for {:?} (uninterruptible sleep?)",
                    self.timings.kill_grace
                ),
            }
        }
        self.shutdown_done.send_replace(true);
    }

    /// `SIGINT`, `SIGTERM`, `SIGKILL` to the whole group, each followed by its grace, until the
    /// group is empty. Returns whether it is.
    fn escalate(&self) -> bool {
        let timings = &self.timings;
        let steps = [
            (Signal::SIGINT, timings.interrupt_grace),
            (Signal::SIGTERM, timings.terminate_grace),
            (Signal::SIGKILL, timings.kill_grace),
        ];
        for (signal, grace) in steps {
            if group_is_gone(self.pgid) {
                return true;
            }
            tracing::debug!(server = %self.name, pgid = self.pgid.as_raw(), "sending {} to the server's process group", signal.as_str());
            if killpg(self.pgid, signal) == Err(Errno::ESRCH) {
                return true;
            }
            if wait_for_group_gone(self.pgid, grace, timings.poll_interval) {
                return true;
            }
        }
        false
    }
}

/// Whether no process (a zombie included) is left in the group.
fn group_is_gone(pgid: Pid) -> bool {
    killpg(pgid, None) == Err(Errno::ESRCH)
}

/// How many members of the group are not zombies, read from `/proc` (Linux; `None` elsewhere or
/// when `/proc` cannot be read). Only used to explain a group that outlives `SIGKILL`.
fn live_members(pgid: Pid) -> Option<usize> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let mut live = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        if !entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp …": comm may hold anything, so split after its last ')'.
        let Some((_, fields)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = fields.split_whitespace();
        let (Some(state), Some(_ppid), Some(pgrp)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if pgrp.parse::<i32>() == Ok(pgid.as_raw()) && state != "Z" && state != "X" {
            live += 1;
        }
    }
    Some(live)
}

/// Polls the group every `interval` for up to `grace`.
fn wait_for_group_gone(pgid: Pid, grace: Duration, interval: Duration) -> bool {
    let deadline = Instant::now() + grace;
    loop {
        if group_is_gone(pgid) {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        thread::sleep(interval.min(deadline - now).max(Duration::from_millis(1)));
    }
}

/// Starts the thread that owns and reaps the child. On failure the child is handed back.
pub(crate) fn start_waiter(
    child: std::process::Child,
    shared: Arc<Shared>,
) -> Result<(), (std::process::Child, io::Error)> {
    // The child goes through a channel so that it is still ours if the thread cannot start.
    let (handoff, handed) = std::sync::mpsc::sync_channel::<std::process::Child>(1);
    let spawned = thread::Builder::new()
        .name(format!("plexus-stdio-wait-{}", child.id()))
        .stack_size(THREAD_STACK)
        .spawn(move || {
            if let Ok(child) = handed.recv() {
                wait_for_exit(child, &shared);
            }
        });
    match spawned {
        Ok(_) => handoff
            .send(child)
            .map_err(|unsent| (unsent.0, io::Error::other("the waiter thread ended at once"))),
        Err(e) => Err((child, e)),
    }
}

/// Reaps the leader, publishes how it ended, then ends whatever it left in its group.
fn wait_for_exit(mut child: std::process::Child, shared: &Arc<Shared>) {
    let exit = match child.wait() {
        Ok(status) => ExitInfo::Status(status),
        Err(e) => ExitInfo::Unavailable(Arc::new(e)),
    };
    crate::orphans::server_ended(child.id());
    let reason = exit.reason();
    tracing::debug!(server = %shared.name, "{reason}");
    shared.mark_closed(TransportError::closed(CloseReason::Exited(reason)));
    shared.update_events(|events| events.exit = Some(exit));
    if shared.claim_shutdown() {
        shared.run_shutdown();
    }
}

/// Held by both halves (and the unsplit transport): when the last holder goes, the transport is
/// closed and the shutdown sequence starts on its own thread, without blocking the dropper.
#[derive(Debug)]
pub(crate) struct ProcessGuard {
    pub(crate) shared: Arc<Shared>,
}

/// The shutdown sequences under way in this process.
static SHUTDOWNS: Shutdowns = Shutdowns {
    running: Mutex::new(0),
    ended: Condvar::new(),
};

/// A count of running shutdown sequences, and a way to wait for it to reach zero.
struct Shutdowns {
    running: Mutex<usize>,
    ended: Condvar,
}

impl Shutdowns {
    fn started(&self) {
        *lock(&self.running) += 1;
    }

    fn ended(&self) {
        let mut running = lock(&self.running);
        *running = running.saturating_sub(1);
        if *running == 0 {
            self.ended.notify_all();
        }
    }
}

/// Waits, at most `timeout`, until every shutdown sequence this process has started (by
/// [`close`](crate::StdioSender), or by dropping a transport) has ended; returns whether they
/// all did. A program calls it before it exits: a sequence runs on a thread of its own, which the
/// end of the process would cut short, leaving a server (or its children) running.
pub fn wait_for_shutdowns(timeout: Duration) -> bool {
    let running = lock(&SHUTDOWNS.running);
    let (running, _) = SHUTDOWNS
        .ended
        .wait_timeout_while(running, timeout, |running| *running > 0)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *running == 0
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        self.shared.mark_closed(TransportError::closed(CloseReason::Dropped));
        self.shared.start_shutdown();
    }
}
