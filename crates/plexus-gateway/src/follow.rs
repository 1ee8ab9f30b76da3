//! How the gateway follows its backends: the grace period for those starting with it, list
//! changes told to the clients, the backends that go down reported, each connected backend's
//! notifications passed on, and servers that died started again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use plexus::ServerMessage;
use plexus::client::ServerNotification;
use plexus::pool::{PoolError, ServerStatus};
use plexus::protocol::LoggingLevel;
use plexus::protocol::methods;
use tokio::sync::{broadcast, watch};

use crate::gateway::Gateway;
use crate::session::lock;

/// How long list changes are gathered before the clients are told (one notification for a burst).
const DEBOUNCE: Duration = Duration::from_millis(50);

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

/// Follows the pool until it closes: tells the clients of the backends that go down (from the
/// start), ends the grace period (`ready`, once the servers starting with the gateway have
/// connected or failed, or `grace` is up), and from then on tells them when a list changed (a
/// server's list, or a server that joined late, left, failed or reconnected with other tools);
/// passes each server's notifications on, and starts again the servers that died.
pub(super) async fn watch_servers(gateway: Arc<Gateway>, grace: Duration, ready: watch::Sender<bool>) {
    let mut events = gateway.hub().subscribe();
    let settled = gateway.hub().pool().settle(grace);
    tokio::pin!(settled);
    let mut settling = true;
    // What the clients were told the lists hold, from the end of the grace period on.
    let mut told: Option<Lists> = None;
    let mut connected = Vec::new();
    let mut revived: HashMap<String, std::time::Instant> = HashMap::new();
    loop {
        gateway.follow_health();
        if !settling && told.is_none() {
            // Only now: every server that is up has its notifications followed before a client
            // can call it.
            let _ = ready.send(true);
            told = Some(lists(&gateway).await);
            connected = connected_servers(&gateway);
        } else if let Some(told) = &mut told {
            revive(&gateway, &connected, &mut revived);
            gateway.follow_crash_stops();
            connected = connected_servers(&gateway);
            let now = lists(&gateway).await;
            if now.tools != told.tools {
                gateway.broadcast(methods::TOOLS_LIST_CHANGED);
            }
            if now.prompts != told.prompts {
                gateway.broadcast(methods::PROMPTS_LIST_CHANGED);
            }
            if now.resources != told.resources {
                gateway.broadcast(methods::RESOURCES_LIST_CHANGED);
            }
            *told = now;
        }
        tokio::select! {
            event = events.recv() => if matches!(event, Err(broadcast::error::RecvError::Closed)) { break },
            _ = &mut settled, if settling => {
                settling = false;
                continue;
            }
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
        if !failed {
            continue;
        }
        // At most one start every REVIVE_EVERY: one that comes sooner waits for its turn (it is
        // never dropped, or the server would stay off).
        let now = std::time::Instant::now();
        let at = revived.get(name).map_or(now, |last| (*last + REVIVE_EVERY).max(now));
        revived.insert(name.clone(), at);
        let (gateway, name) = (Arc::clone(gateway), name.clone());
        tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            match gateway.hub().pool().ensure_connected(&name).await {
                // Stopped by the crash-loop guard: `follow_crash_stops` starts it again later.
                Ok(_) | Err(PoolError::CrashLoop { .. }) => {}
                Err(e) => tracing::info!("server {name:?} could not be started again: {e}"),
            }
        });
    }
}

/// The longest pause before a server that keeps crashing is started again.
pub(super) const MAX_CRASH_PAUSE: Duration = Duration::from_secs(15 * 60);

impl Gateway {
    /// Starts [`after_crash_stop`](Self::after_crash_stop) once for each server the pool's
    /// crash-loop guard has stopped, and forgets a server that is up again.
    fn follow_crash_stops(self: &Arc<Self>) {
        let pool = self.hub().pool();
        let mut waiting = lock(&self.crash_waits);
        for (name, _) in pool.states() {
            if !pool.is_crash_stopped(&name) {
                waiting.remove(&name);
            } else if waiting.insert(name.clone()) {
                let gateway = Arc::clone(self);
                tokio::spawn(async move { gateway.after_crash_stop(&name).await });
            }
        }
    }

    /// A server the pool stopped for crashing too often: no client can ask for it (its tools
    /// left the list), so after a pause (the first `--crash-pause`, each next one twice as long,
    /// at most [`MAX_CRASH_PAUSE`]) the gateway starts it again, and tells the clients when.
    async fn after_crash_stop(&self, server: &str) {
        let settings = self.hub().pool().settings();
        let (crashes, window) = (settings.crash_limit, settings.crash_window);
        let round = {
            let mut pauses = lock(&self.crash_pauses);
            let round = pauses.entry(server.to_owned()).or_insert(0);
            *round += 1;
            *round - 1
        };
        let pause = self
            .crash_pause
            .saturating_mul(2u32.saturating_pow(round.min(16)))
            .min(MAX_CRASH_PAUSE);
        let text = format!(
            "server {server:?} crashed {crashes} times within {} s; plexus serve starts it again in {} s",
            window.as_secs(),
            pause.as_secs()
        );
        tracing::warn!("{text}");
        self.log_to_clients(server, LoggingLevel::Warning, &text);
        tokio::time::sleep(pause).await;
        if let Err(e) = self.hub().pool().reconnect(server).await {
            tracing::info!("server {server:?} could not be started again: {e}");
        }
        lock(&self.crash_waits).remove(server);
    }

    /// Sends `text` to every client that wants `level`, as a log message of `server`.
    fn log_to_clients(&self, server: &str, level: LoggingLevel, text: &str) {
        let params = serde_json::from_value(serde_json::json!({"level": level, "data": text}));
        if let Ok(params) = params {
            self.forward_log(server, params);
        }
    }
}

/// Passes the backends' notifications on to the clients (log messages, resource updates,
/// elicitation completions), and asks a backend's new session for the resource subscriptions
/// the clients hold, while the gateway lives.
pub(super) async fn pass_on(gateway: std::sync::Weak<Gateway>, mut messages: broadcast::Receiver<ServerMessage>) {
    loop {
        let message = match messages.recv().await {
            Ok(message) => message,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!("{missed} notifications of the servers were not passed on: the gateway fell behind");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(gateway) = gateway.upgrade() else { return };
        match message {
            ServerMessage::SessionStarted { server, client } => gateway.resubscribe(&server, &client),
            ServerMessage::Notification { server, notification } => match notification {
                ServerNotification::LogMessage(params) => gateway.forward_log(&server, params),
                ServerNotification::ResourceUpdated(params) => gateway.forward_update(&server, params),
                ServerNotification::ElicitationComplete(params) => {
                    if let Ok(params) = serde_json::to_value(&params) {
                        gateway.forward_completion(&server, &params);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}
