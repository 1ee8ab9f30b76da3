//! `plexus serve`: the Hub served as one MCP server (gateway mode), over stdio or Streamable
//! HTTP. Its tools are the tool pool (qualified names, truncated descriptions, annotations,
//! schemas and execution as sent), calls go through the call chain, prompts and resources are
//! every server's, completions and resource subscriptions go to the server that owns them, list
//! changes and logs are passed on, a backend that cannot serve is reported, and the backends'
//! requests go to the client.

mod content;
mod follow;
mod forward;
mod gateway;
mod health;
mod http;
mod listen;
mod session;
mod stdio;
mod subscriptions;
mod tools;
mod uri;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::Outcome;
use crate::connect::{close, launch};
use crate::sources::{Configured, Server};
use forward::Forwarder;
use gateway::Gateway;
pub(crate) use listen::ListenAddress;

/// How `plexus serve` serves.
#[derive(Debug, Clone)]
pub(crate) struct ServeOptions {
    /// `--http HOST:PORT`: Streamable HTTP there instead of stdio.
    pub(crate) http: Option<ListenAddress>,
    /// The bearer token clients must send over HTTP (required off loopback).
    pub(crate) token: Option<String>,
    /// How long an HTTP session may sit unused before it ends.
    pub(crate) session_idle: Duration,
    /// `--ready-grace`: how long `initialize` and the first lists wait for the servers still
    /// starting; those that start later join with a `list_changed` notification.
    pub(crate) ready_grace: Duration,
    /// `--crash-pause`: how long a server the pool stopped for crashing too often stays off
    /// before the gateway starts it again (doubled each time, up to [`follow::MAX_CRASH_PAUSE`]).
    pub(crate) crash_pause: Duration,
}

/// The environment variable that may hold the HTTP clients' token.
pub(crate) const TOKEN_VAR: &str = "PLEXUS_GATEWAY_TOKEN";

/// The HTTP clients' bearer token: the first line of `file`, else `PLEXUS_GATEWAY_TOKEN`.
pub(crate) fn token(file: Option<&std::path::Path>) -> Result<Option<String>, String> {
    let token = match file {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("--token-file {}: {e}", file.display()))?;
            text.lines().next().unwrap_or_default().trim().to_owned()
        }
        None => match crate::secrets::get(TOKEN_VAR) {
            Some(token) => token.trim().to_owned(),
            None => return Ok(None),
        },
    };
    if token.is_empty() {
        return Err("the gateway's token is empty".to_owned());
    }
    if token.chars().any(|c| c.is_control() || c == ' ') {
        return Err("the gateway's token holds spaces or control characters".to_owned());
    }
    Ok(Some(token))
}

/// `plexus serve`: over HTTP on worker threads (many clients), over stdio on this thread alone
/// (see [`block_on_one_thread`](crate::block_on_one_thread)).
pub(crate) fn run(configured: Configured, options: ServeOptions) -> Outcome {
    if options.http.is_some() {
        crate::block_on(serve_command(configured, options))
    } else {
        crate::block_on_one_thread(serve_command(configured, options))
    }
}

/// Runs the gateway until its client goes (stdio: end of input) or the process is interrupted.
async fn serve_command(configured: Configured, options: ServeOptions) -> Outcome {
    let servers: Vec<&Server> = configured.servers.iter().collect();
    for server in &servers {
        server.report_diagnostics();
        if server.runnable().is_none() {
            crate::terminal::say(format_args!("{}", server.not_started()));
        }
    }
    // Resolved before any server starts: a name that does not resolve is a usage error.
    let listen = match &options.http {
        None => None,
        Some(given) => match given.resolve().await {
            Ok(addresses) => Some((given, addresses)),
            Err(e) => {
                crate::terminal::say(format_args!("--http {given}: {e}"));
                return Outcome::Usage;
            }
        },
    };
    if let Some((given, addresses)) = &listen
        && let Some(address) = listen::off_loopback(addresses)
        && options.token.is_none()
    {
        let which = match given.name() {
            Some(_) => format!("--http {given} resolves to {address}, which"),
            None => format!("--http {given}"),
        };
        crate::terminal::say(format_args!(
            "{which} is not a loopback address: give clients a token to send (--token-file FILE or \
             PLEXUS_GATEWAY_TOKEN)"
        ));
        return Outcome::Usage;
    }
    let forwarder = Arc::new(Forwarder::default());
    let hub = match launch(
        &configured,
        &servers,
        Arc::clone(&forwarder) as Arc<dyn plexus::client::ClientHandler>,
        Some(Arc::clone(&forwarder) as Arc<dyn plexus::tools::UrlElicitationHandler>),
    )
    .await
    {
        Ok(hub) => Arc::new(hub),
        Err(outcome) => return outcome,
    };
    let (ready_tx, ready) = watch::channel(false);
    let gateway = Gateway::new(Arc::clone(&hub), ready, options.crash_pause);
    forwarder.attach(&gateway);
    let watcher = tokio::spawn(follow::watch_servers(
        Arc::clone(&gateway),
        options.ready_grace,
        ready_tx,
    ));
    let anchor = tokio::spawn(anchor_timers());
    // The servers' daemons orphaned while the gateway runs are reaped as they exit.
    let orphans = tokio::spawn(plexus::stdio::orphans::watch_orphans());
    let outcome = match listen {
        // In a task: on worker threads, a request's task then starts on the same worker, not
        // after a wake.
        None => {
            let serving = Arc::clone(&gateway);
            tokio::spawn(async move { stdio::serve(&serving).await })
                .await
                .unwrap_or(Outcome::Connection)
        }
        Some((given, addresses)) => {
            let listen = http::Listen {
                addresses,
                name: given.name().map(str::to_owned),
            };
            http::serve(&gateway, listen, options.token, options.session_idle).await
        }
    };
    watcher.abort();
    anchor.abort();
    orphans.abort();
    close(&hub).await;
    outcome
}

/// How often [`anchor_timers`] wakes: well within the tool timeout (60 s by default).
const ANCHOR_PERIOD: Duration = Duration::from_secs(20);

/// Keeps a timer in the runtime's timer wheel that is due before any call's timeout. tokio
/// wakes its driver (a write to its eventfd, then one more `epoll_wait`) whenever a timer is
/// registered that is due before the driver's next wake (tokio 1.54, `runtime/time/mod.rs`,
/// `reregister`); with the wheel otherwise empty, every call's timeout was such a timer. With
/// this one due first, it is not: the gateway makes 6 syscalls per `tools/call` (a read and a
/// write on each side, two `epoll_wait`s) instead of 7.5 (strace over 1 000 calls). Costs one
/// wake every [`ANCHOR_PERIOD`] when idle.
async fn anchor_timers() {
    loop {
        tokio::time::sleep(ANCHOR_PERIOD).await;
    }
}
