//! Connecting every selected server at once, bounded, with progress on stderr.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plexus::auth::FileWarnings;
use plexus::config::{Scope, ServerConfig, ServerKind};
use plexus::{Client, ConnectError, Connector};
use tokio::sync::Semaphore;

/// How many stdio servers start at once (`MCP_SERVER_CONNECTION_BATCH_SIZE`).
const DEFAULT_LOCAL_BATCH: usize = 3;
/// How many remote servers connect at once (`MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE`).
const DEFAULT_REMOTE_BATCH: usize = 20;

/// Whether a connect failure means the server needs a login (a 401 that no credential fixed, now
/// or, by the needs-auth cache, in the last 15 minutes).
pub(crate) fn needs_auth(error: &ConnectError) -> bool {
    error.needs_auth()
}

/// The state of one server after the connect attempt.
pub(crate) enum Connection {
    /// A live session, and the fallback note when another transport than the entry's kind was used.
    Connected(Client, Option<String>),
    Failed(ConnectError),
}

/// One configured server and its connection.
pub(crate) struct Attempt {
    pub(crate) name: String,
    pub(crate) connection: Connection,
}

fn batch_size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n: &usize| *n > 0)
        .unwrap_or(default)
}

/// The process's connector: its plexus home holds the token store and the needs-auth cache.
pub(crate) fn connector() -> Arc<Connector> {
    Arc::new(Connector::from_env())
}

/// Prints what the token store and the needs-auth cache had to repair since the last call (a
/// corrupt file set aside, a file readable by others made 0600), one `plexus: ...` line each.
pub(crate) fn report_file_warnings(warnings: &FileWarnings) {
    for warning in warnings.take() {
        crate::terminal::say(format_args!("{warning}"));
    }
}

/// A server that may run: its name, its entry and the scope the entry comes from (`None` for the
/// demo server).
pub(crate) type Startable = (String, ServerConfig, Option<Scope>);

/// Connects every server of `servers` (only servers that may run are given), at most 3 local and
/// 20 remote at once, with `connector`; results come back in the order given. Then reports the
/// connector's file warnings.
pub(crate) async fn connect_all(connector: &Arc<Connector>, servers: &[Startable]) -> Vec<Attempt> {
    let local = Arc::new(Semaphore::new(batch_size(
        "MCP_SERVER_CONNECTION_BATCH_SIZE",
        DEFAULT_LOCAL_BATCH,
    )));
    let remote = Arc::new(Semaphore::new(batch_size(
        "MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE",
        DEFAULT_REMOTE_BATCH,
    )));
    let done = Arc::new(AtomicUsize::new(0));
    let spinner = Spinner::start(servers.len(), Arc::clone(&done));
    let mut tasks = Vec::with_capacity(servers.len());
    for (name, config, scope) in servers {
        let (name, config, scope) = (name.clone(), config.clone(), *scope);
        let gate = if config.kind() == ServerKind::Stdio {
            Arc::clone(&local)
        } else {
            Arc::clone(&remote)
        };
        let done = Arc::clone(&done);
        let connector = Arc::clone(connector);
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            let options = plexus::ClientOptions::from_env(&name);
            let connection = match connector.connect_in_scope(&name, &config, scope, options).await {
                Ok(connected) => Connection::Connected(connected.client, connected.fallback),
                Err(e) => Connection::Failed(e),
            };
            done.fetch_add(1, Ordering::Relaxed);
            Attempt { name, connection }
        }));
    }
    let mut attempts = Vec::with_capacity(tasks.len());
    for task in tasks {
        match task.await {
            Ok(attempt) => {
                if let Connection::Connected(client, _) = &attempt.connection {
                    lock_live().push(client.clone());
                }
                attempts.push(attempt);
            }
            Err(e) => tracing::error!("a connect task failed: {e}"),
        }
    }
    spinner.stop().await;
    report_file_warnings(connector.file_warnings());
    attempts
}

/// Closes every connected session (each bounded by its transport's shutdown), then reports the
/// file warnings of what the sessions did meanwhile (a token refresh reads the store).
pub(crate) async fn close_all(connector: &Connector, attempts: &[Attempt]) {
    let clients: Vec<Client> = attempts
        .iter()
        .filter_map(|a| match &a.connection {
            Connection::Connected(client, _) => Some(client.clone()),
            Connection::Failed(_) => None,
        })
        .collect();
    lock_live().retain(|live| !clients.iter().any(|client| live.is_same_session(client)));
    close_clients(clients, None).await;
    report_file_warnings(connector.file_warnings());
}

/// Cancels (when `cancel` gives a reason) and closes `clients`, all at once; each close is
/// bounded by its transport's shutdown.
async fn close_clients(clients: Vec<Client>, cancel: Option<&'static str>) {
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| {
            tokio::spawn(async move {
                if let Some(reason) = cancel {
                    client.cancel_pending(reason).await;
                }
                client.close().await
            })
        })
        .collect();
    for task in tasks {
        if let Ok(Err(e)) = task.await {
            tracing::debug!("closing a session: {e}");
        }
    }
}

/// The sessions this command has open, so that an interrupt can cancel and close them wherever
/// the command was.
static LIVE: Mutex<Vec<Client>> = Mutex::new(Vec::new());

fn lock_live() -> std::sync::MutexGuard<'static, Vec<Client>> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The user interrupted the command: every live session's pending requests are cancelled on the
/// server, then every session is closed.
pub(crate) async fn interrupt_all() {
    let live = std::mem::take(&mut *lock_live());
    close_clients(live, Some("the user interrupted plexus")).await;
}

/// The signals that end a command early: SIGINT (Ctrl-C), SIGTERM, SIGHUP.
pub(crate) struct Interrupt {
    sigint: tokio::signal::unix::Signal,
    sigterm: tokio::signal::unix::Signal,
    sighup: tokio::signal::unix::Signal,
}

impl Interrupt {
    /// Starts listening (from now on, these signals no longer end the process by themselves).
    pub(crate) fn listen() -> std::io::Result<Interrupt> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Interrupt {
            sigint: signal(SignalKind::interrupt())?,
            sigterm: signal(SignalKind::terminate())?,
            sighup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for one of them; the outcome is the exit status it calls for.
    pub(crate) async fn received(mut self) -> crate::Outcome {
        let outcome = tokio::select! {
            _ = self.sigint.recv() => crate::Outcome::Interrupted,
            _ = self.sigterm.recv() => crate::Outcome::Terminated,
            _ = self.sighup.recv() => crate::Outcome::HungUp,
        };
        if std::io::stderr().is_terminal() {
            // Past whatever the spinner or the command was writing.
            eprintln!();
        }
        crate::terminal::say(match outcome {
            crate::Outcome::Terminated => "terminated; cancelling and closing the servers",
            crate::Outcome::HungUp => "hung up; cancelling and closing the servers",
            _ => "interrupted; cancelling and closing the servers",
        });
        outcome
    }
}

/// "connecting N servers" on stderr: a spinner on a terminal, one line otherwise, nothing for
/// zero servers.
struct Spinner {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: Arc<tokio::sync::Notify>,
}

impl Spinner {
    fn start(total: usize, done: Arc<AtomicUsize>) -> Spinner {
        let stop = Arc::new(tokio::sync::Notify::new());
        if total == 0 {
            return Spinner { task: None, stop };
        }
        let noun = if total == 1 { "server" } else { "servers" };
        if !std::io::stderr().is_terminal() {
            eprintln!("connecting {total} {noun}…");
            return Spinner { task: None, stop };
        }
        let signal = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
            let mut frame = 0;
            loop {
                let finished = done.load(Ordering::Relaxed);
                eprint!(
                    "\r{} connecting {total} {noun} ({finished} done)",
                    FRAMES[frame % FRAMES.len()]
                );
                let _ = std::io::stderr().flush();
                frame += 1;
                tokio::select! {
                    () = signal.notified() => break,
                    () = tokio::time::sleep(Duration::from_millis(80)) => {}
                }
            }
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        });
        Spinner { task: Some(task), stop }
    }

    async fn stop(mut self) {
        self.stop.notify_one();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// A spinner dropped with its command (an interrupt) stops spinning too.
impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}
