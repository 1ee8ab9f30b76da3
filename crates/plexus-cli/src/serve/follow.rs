//! How the gateway follows its backends: list changes told to the clients, each connected
//! backend's notifications passed on, and servers that died started again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use plexus::Client;
use plexus::client::ServerNotification;
use plexus::pool::ServerStatus;
use tokio::sync::{broadcast, watch};

use super::gateway::Gateway;

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

/// Follows the pool: tells the clients when a list changed (a server's list, or a server that
/// joined, left, failed or reconnected with other tools), and passes each server's log messages on.
pub(super) async fn watch_servers(gateway: Arc<Gateway>, mut ready: watch::Receiver<bool>) {
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
