//! The command's Hub: the selected servers in it (the others of the config are read, not
//! started), the CLI's answers to server requests, progress on stderr while they connect, and
//! every server closed at the end of the command or on Ctrl-C.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plexus::auth::FileWarnings;
use plexus::client::ClientHandler;
use plexus::pool::{Admission, Pool};
use plexus::tools::UrlElicitationHandler;
use plexus::{Hub, HubOptions};

use crate::interact::Interactive;
use crate::progress::{Progress, View};
use crate::sources::{Configured, Server};

/// Prints what the token store and the needs-auth cache had to repair since the last call (a
/// corrupt file set aside, a file readable by others made 0600), one `plexus: ...` line each.
pub(crate) fn report_file_warnings(warnings: &FileWarnings) {
    for warning in warnings.take() {
        crate::terminal::say(format_args!("{warning}"));
    }
}

/// Starts a Hub over the `configured` servers with only `servers` in its pool (at most 3 local
/// and 20 remote connect at once, or `MCP_SERVER_CONNECTION_BATCH_SIZE` /
/// `MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE`), and waits until every one that may run has
/// connected or failed (each within its connect timeout), showing `view` on a terminal. The
/// CLI declares roots (the project directory) and, on a terminal, elicitation. Then reports the
/// connector's file warnings.
pub(crate) async fn start(configured: &Configured, servers: &[&Server], view: View) -> Result<Hub, crate::Outcome> {
    let interactive = Arc::new(Interactive::new(&configured.discovery.start_dir));
    // Without a person to send to the URLs, a -32042 answer is an error that lists them.
    let urls = interactive
        .is_interactive()
        .then(|| Arc::clone(&interactive) as Arc<dyn UrlElicitationHandler>);
    let hub = launch(configured, servers, interactive, urls).await?;
    let pool = hub.pool();
    let starting: Vec<String> = pool
        .names()
        .into_iter()
        .filter(|name| pool.spec(name).is_some_and(|spec| spec.admission == Admission::Start))
        .collect();
    let progress = Progress::start(pool, starting, hub.subscribe(), view);
    pool.settle(Duration::MAX).await;
    progress.finish().await;
    report_file_warnings(hub.connector().file_warnings());
    Ok(hub)
}

/// Starts a Hub over the `configured` servers with only `servers` in its pool, answering the
/// servers' requests with `handler` (and URL elicitations with `urls`), without waiting for
/// them. An interrupt closes them.
pub(crate) async fn launch(
    configured: &Configured,
    servers: &[&Server],
    handler: Arc<dyn ClientHandler>,
    urls: Option<Arc<dyn UrlElicitationHandler>>,
) -> Result<Hub, crate::Outcome> {
    let mut options = HubOptions::new(configured.discovery.clone()).handler(handler);
    // Every configured server: no choice to keep, so that one added by a later edit of the
    // config joins when the Hub reads it again (`plexus serve` follows the files).
    let every = servers.len() == configured.servers.len() && servers.iter().all(|server| server.scope.is_some());
    if !every {
        options = options.only(servers.iter().map(|server| server.name.clone()));
    }
    if let Some(urls) = urls {
        options = options.url_elicitation(urls);
    }
    // The demo and --stdio / --url servers are the command's own.
    for server in servers.iter().filter(|server| server.scope.is_none()) {
        if let Some(config) = &server.config {
            options = options.ad_hoc(&server.name, config.clone());
        }
    }
    let hub = Hub::start_with_config(options, configured.merged.clone())
        .await
        .map_err(|e| {
            crate::terminal::say_error(&e);
            crate::Outcome::Usage
        })?;
    set_live(Some(hub.pool().clone()));
    Ok(hub)
}

/// Closes every server of `hub` (each within its transport's shutdown bound), then reports the
/// file warnings of what the sessions did meanwhile (a token refresh reads the store).
pub(crate) async fn close(hub: &Hub) {
    set_live(None);
    hub.shutdown().await;
    report_file_warnings(hub.connector().file_warnings());
}

/// Where a running command keeps the pool of its Hub, so that an interrupt can cancel and close
/// its servers wherever the command was: one per command (see [`run_job`]), not per process.
pub(crate) type Live = Arc<Mutex<Option<Pool>>>;

tokio::task_local! {
    /// The running command's [`Live`].
    static LIVE: Live;
}

/// Keeps `pool` (or forgets it) as the running command's, if it runs under [`run_job`].
fn set_live(pool: Option<Pool>) {
    let _ = LIVE.try_with(|live| *live.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = pool);
}

/// Runs `job` with `live` as where its Hub's pool is kept.
pub(crate) async fn run_job<T>(live: Live, job: impl Future<Output = T>) -> T {
    LIVE.scope(live, job).await
}

/// The user interrupted the command: every pending request of the command's servers is
/// cancelled on the server, then every server is closed.
pub(crate) async fn interrupt_all(live: &Live) {
    let pool = live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    let Some(pool) = pool else { return };
    pool.cancel_all("the user interrupted plexus").await;
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
