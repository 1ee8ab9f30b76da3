//! `plexus serve`: the Hub served as one MCP server (gateway mode), over stdio or Streamable
//! HTTP. Its tools are the tool pool (qualified names, truncated descriptions, annotations,
//! schemas as sent), calls go through the call chain, prompts and resources are every server's,
//! list changes and logs are passed on, and the backends' requests go to the client.

mod forward;
mod gateway;
mod http;
mod stdio;
mod uri;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use plexus::Client;
use plexus::client::ServerNotification;
use plexus::pool::ServerStatus;
use tokio::sync::{broadcast, watch};

use crate::Outcome;
use crate::connect::{close, launch};
use crate::sources::{Configured, Server};
use forward::Forwarder;
use gateway::Gateway;

/// How long list changes are gathered before the clients are told (one notification for a burst).
const DEBOUNCE: Duration = Duration::from_millis(50);

/// How `plexus serve` serves.
#[derive(Debug, Clone)]
pub(crate) struct ServeOptions {
    /// `--http ADDR`: Streamable HTTP on ADDR instead of stdio.
    pub(crate) http: Option<std::net::SocketAddr>,
    /// The bearer token clients must send over HTTP (required off loopback).
    pub(crate) token: Option<String>,
    /// How long an HTTP session may sit unused before it ends.
    pub(crate) session_idle: Duration,
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
        None => match std::env::var(TOKEN_VAR) {
            Ok(token) => token.trim().to_owned(),
            Err(_) => return Ok(None),
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
    if let Some(address) = options.http
        && !address.ip().is_loopback()
        && options.token.is_none()
    {
        crate::terminal::say(format_args!(
            "--http {address} is not a loopback address: give clients a token to send (--token-file FILE or \
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
    let settling = Arc::clone(&hub);
    tokio::spawn(async move {
        settling.pool().settle(gateway::READY_BUDGET).await;
        let _ = ready_tx.send(true);
    });
    let gateway = Gateway::new(Arc::clone(&hub), ready.clone());
    forwarder.attach(&gateway);
    let watcher = tokio::spawn(watch_servers(Arc::clone(&gateway), ready));
    let anchor = tokio::spawn(anchor_timers());
    let outcome = match options.http {
        // In a task: on worker threads, a request's task then starts on the same worker, not
        // after a wake.
        None => {
            let serving = Arc::clone(&gateway);
            tokio::spawn(async move { stdio::serve(&serving).await })
                .await
                .unwrap_or(Outcome::Connection)
        }
        Some(address) => http::serve(&gateway, address, options.token, options.session_idle).await,
    };
    watcher.abort();
    anchor.abort();
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

/// What the clients were last told the lists hold.
#[derive(Debug, Default, PartialEq)]
struct Lists {
    tools: Vec<String>,
    prompts: Vec<String>,
    resources: Vec<String>,
}

async fn lists(gateway: &Gateway) -> Lists {
    let hub = gateway.hub();
    let tools = hub.tool_pool().await.names().map(str::to_owned).collect();
    let prompts = hub
        .prompts()
        .await
        .entries
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    let mut resources: Vec<String> = hub
        .resources()
        .await
        .entries
        .into_iter()
        .map(|entry| entry.reference)
        .collect();
    resources.extend(
        hub.resource_templates()
            .await
            .entries
            .into_iter()
            .map(|entry| format!("@{}:{}", entry.server, entry.template.uri_template)),
    );
    Lists {
        tools,
        prompts,
        resources,
    }
}

/// Follows the pool: tells the clients when a list changed (a server's list, or a server that
/// joined, left, failed or reconnected with other tools), and passes each server's log messages on.
async fn watch_servers(gateway: Arc<Gateway>, mut ready: watch::Receiver<bool>) {
    let mut events = gateway.hub().subscribe();
    let _ = ready.wait_for(|ready| *ready).await;
    let mut logs: HashMap<String, (Client, tokio::task::AbortHandle)> = HashMap::new();
    follow_logs(&gateway, &mut logs);
    let mut told = lists(&gateway).await;
    let mut connected = connected_servers(&gateway);
    let mut revived: HashMap<String, std::time::Instant> = HashMap::new();
    loop {
        match events.recv().await {
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => break,
        }
        // A burst of events (a reconnect: connecting, connected, list changed) is one change.
        let quiet = tokio::time::sleep(DEBOUNCE);
        tokio::pin!(quiet);
        loop {
            tokio::select! {
                () = &mut quiet => break,
                event = events.recv() => if matches!(event, Err(broadcast::error::RecvError::Closed)) { break },
            }
        }
        follow_logs(&gateway, &mut logs);
        revive(&gateway, &connected, &mut revived);
        connected = connected_servers(&gateway);
        let now = lists(&gateway).await;
        if now.tools != told.tools {
            gateway.broadcast("notifications/tools/list_changed");
        }
        if now.prompts != told.prompts {
            gateway.broadcast("notifications/prompts/list_changed");
        }
        if now.resources != told.resources {
            gateway.broadcast("notifications/resources/list_changed");
        }
        told = now;
    }
    for (_, (_, task)) in logs {
        task.abort();
    }
}

/// The servers connected now.
fn connected_servers(gateway: &Gateway) -> Vec<String> {
    gateway
        .hub()
        .pool()
        .states()
        .into_iter()
        .filter(|(_, state)| state.status == ServerStatus::Connected)
        .map(|(name, _)| name)
        .collect()
}

/// How often one server that died is started again by the gateway (the pool restarts a stdio
/// server on demand only, and stops after 3 deaths in a minute).
const REVIVE_EVERY: Duration = Duration::from_secs(5);

/// Starts again the servers that were connected and have failed since: a client of the gateway
/// cannot ask for a server whose tools left the list.
fn revive(gateway: &Arc<Gateway>, were_connected: &[String], revived: &mut HashMap<String, std::time::Instant>) {
    let pool = gateway.hub().pool();
    for name in were_connected {
        let failed = pool
            .state(name)
            .is_some_and(|state| state.status == ServerStatus::Failed);
        let recently = revived.get(name).is_some_and(|at| at.elapsed() < REVIVE_EVERY);
        if !failed || recently {
            continue;
        }
        revived.insert(name.clone(), std::time::Instant::now());
        let (pool, name) = (pool.clone(), name.clone());
        tokio::spawn(async move {
            if let Err(e) = pool.ensure_connected(&name).await {
                tracing::info!("server {name:?} could not be started again: {e}");
            }
        });
    }
}

/// Keeps one watcher per connected server's session, passing on its log messages and its
/// elicitation completions.
fn follow_logs(gateway: &Arc<Gateway>, logs: &mut HashMap<String, (Client, tokio::task::AbortHandle)>) {
    let pool = gateway.hub().pool();
    for (name, state) in pool.states() {
        let client = (state.status == ServerStatus::Connected)
            .then(|| pool.client(&name))
            .flatten();
        let current = logs
            .get(&name)
            .is_some_and(|(watched, _)| client.as_ref().is_some_and(|client| client.is_same_session(watched)));
        if current {
            continue;
        }
        if let Some((_, task)) = logs.remove(&name) {
            task.abort();
        }
        let Some(client) = client else { continue };
        let mut notifications = client.subscribe();
        let (target, server) = (Arc::downgrade(gateway), name.clone());
        let task = tokio::spawn(async move {
            loop {
                match notifications.recv().await {
                    Ok(ServerNotification::LogMessage(params)) => match target.upgrade() {
                        Some(gateway) => gateway.forward_log(&server, params),
                        None => return,
                    },
                    Ok(ServerNotification::ElicitationComplete(params)) => match target.upgrade() {
                        Some(gateway) => {
                            if let Ok(params) = serde_json::to_value(&params) {
                                gateway.forward_completion(&server, &params);
                            }
                        }
                        None => return,
                    },
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        logs.insert(name, (client, task.abort_handle()));
    }
}
