//! The command's connection pool: the selected servers in it, progress on stderr while they
//! connect, and every server closed at the end of the command or on Ctrl-C.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plexus::DefaultConnector;
use plexus::auth::FileWarnings;
use plexus::pool::{Admission, Pool, PoolSettings, ServerSpec};

use crate::progress::{Progress, View};
use crate::sources::Server;

/// The process's connector: its plexus home holds the token store and the needs-auth cache.
pub(crate) fn connector() -> Arc<DefaultConnector> {
    Arc::new(DefaultConnector::from_env())
}

/// Prints what the token store and the needs-auth cache had to repair since the last call (a
/// corrupt file set aside, a file readable by others made 0600), one `plexus: ...` line each.
pub(crate) fn report_file_warnings(warnings: &FileWarnings) {
    for warning in warnings.take() {
        crate::terminal::say(format_args!("{warning}"));
    }
}

/// The pool's entry for a configured server, with its admission; none for an invalid entry.
fn spec(server: &Server) -> Option<ServerSpec> {
    let config = server.config.clone()?;
    let admission = plexus::hub::admission(server.status.as_ref()?, || server.reason().unwrap_or_default());
    Some(ServerSpec::new(&server.name, config, server.scope).with_admission(admission))
}

/// Puts `servers` in a new pool (at most 3 local and 20 remote connect at once, or
/// `MCP_SERVER_CONNECTION_BATCH_SIZE` / `MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE`) and waits
/// until every one that may run has connected or failed (each within its connect timeout),
/// showing `view` on a terminal. Then reports the connector's file warnings.
pub(crate) async fn connect(connector: &Arc<DefaultConnector>, servers: &[&Server], view: View) -> Pool {
    let pool = Pool::new(
        Arc::clone(connector) as Arc<dyn plexus::pool::Connector>,
        PoolSettings::from_env(),
    );
    *lock_live() = Some(pool.clone());
    let specs: Vec<ServerSpec> = servers.iter().filter_map(|server| spec(server)).collect();
    let starting: Vec<String> = specs
        .iter()
        .filter(|spec| spec.admission == Admission::Start)
        .map(|spec| spec.name.clone())
        .collect();
    let progress = Progress::start(&pool, starting, pool.subscribe(), view);
    pool.set_servers(specs).await;
    pool.settle(Duration::MAX).await;
    progress.finish().await;
    report_file_warnings(connector.file_warnings());
    pool
}

/// Closes every server of `pool` (each within its transport's shutdown bound), then reports the
/// file warnings of what the sessions did meanwhile (a token refresh reads the store).
pub(crate) async fn close(connector: &DefaultConnector, pool: &Pool) {
    lock_live().take();
    pool.shutdown().await;
    report_file_warnings(connector.file_warnings());
}

/// The pool of the running command, so that an interrupt can cancel and close its servers
/// wherever the command was.
static LIVE: Mutex<Option<Pool>> = Mutex::new(None);

fn lock_live() -> std::sync::MutexGuard<'static, Option<Pool>> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The user interrupted the command: every live session's pending requests are cancelled on the
/// server, then every server is closed.
pub(crate) async fn interrupt_all() {
    let Some(pool) = lock_live().take() else { return };
    let cancels: Vec<_> = pool
        .names()
        .iter()
        .filter_map(|name| pool.client(name))
        .map(|client| tokio::spawn(async move { client.cancel_pending("the user interrupted plexus").await }))
        .collect();
    for cancel in cancels {
        let _ = cancel.await;
    }
    pool.shutdown().await;
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
