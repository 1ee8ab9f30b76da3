//! How the gateway follows its backends: the grace period for those starting with it, list
//! changes told to the clients, the backends that go down reported, each backend's
//! notifications passed on (from the Hub's one stream), and the clients told when a backend that
//! kept crashing starts again (the pool's supervisor starts servers that died).

use std::sync::Arc;
use std::time::Duration;

use plexus::ServerMessage;
use plexus::client::ServerNotification;
use plexus::pool::PoolEvent;
use plexus::protocol::LoggingLevel;
use plexus::protocol::methods;
use tokio::sync::{broadcast, watch};

use crate::gateway::Gateway;

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
    loop {
        gateway.follow_health();
        if !settling && told.is_none() {
            // Only now: every server that is up has its notifications followed before a client
            // can call it. The lists are taken first: a change a client's first call makes
            // (the calls wait for `ready`) is one from these lists, and is told.
            told = Some(lists(&gateway).await);
            let _ = ready.send(true);
        } else if let Some(told) = &mut told {
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
            event = events.recv() => if gateway.on_event(event) { break },
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
                event = events.recv() => if gateway.on_event(event) { break },
            }
        }
    }
}

impl Gateway {
    /// Tells the clients when a server the crash-loop guard stopped starts again; whether the
    /// pool's events ended.
    fn on_event(&self, event: Result<PoolEvent, broadcast::error::RecvError>) -> bool {
        match event {
            Ok(PoolEvent::RestartScheduled { server, after }) => {
                let settings = self.hub().pool().settings();
                let text = format!(
                    "server {server:?} crashed {} times within {} s; plexus serve starts it again in {} s",
                    settings.crash_limit,
                    settings.crash_window.as_secs(),
                    after.as_secs()
                );
                tracing::warn!("{text}");
                self.log_to_clients(&server, LoggingLevel::Warning, &text);
                false
            }
            Ok(PoolEvent::StateChanged { server, state }) => {
                self.follow_state(&server, &state);
                false
            }
            Err(broadcast::error::RecvError::Closed) => true,
            _ => false,
        }
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
                ServerNotification::LogMessage(params) => gateway.forward_log(&server, *params),
                ServerNotification::ResourceUpdated(params) => gateway.forward_update(&server, *params),
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
