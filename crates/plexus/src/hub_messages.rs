//! One stream of every server's notifications, each with its server: the Hub follows each
//! session from the moment it is connected (before the pool hands it to anyone), so a host that
//! passes notifications on (log messages, resource updates, elicitation completions) needs no
//! task per session of its own, and misses none sent during a call that started the server.

use std::sync::Arc;

use plexus_client::{Client, ClientOptions, ServerNotification};
use plexus_pool::{ConnectFailure, Connection, Connector, ServerSpec};
use tokio::sync::broadcast;

/// How many messages wait for a slow reader of [`Hub::server_messages`](crate::Hub::server_messages)
/// before the oldest are dropped (it then gets `Lagged`).
pub const SERVER_MESSAGES_CAPACITY: usize = 1024;

/// A message of one of the Hub's servers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerMessage {
    /// A new session of `server` began (its first, or after a reconnect): what the host asked
    /// of the old one (resource subscriptions) must be asked of this one.
    SessionStarted {
        /// The server.
        server: Arc<str>,
        /// The new session.
        client: Client,
    },
    /// A notification of `server`'s session.
    Notification {
        /// The server.
        server: Arc<str>,
        /// The notification.
        notification: ServerNotification,
    },
}

/// A connector that starts following each session it connects.
pub(crate) struct Following {
    inner: Arc<dyn Connector>,
    messages: broadcast::Sender<ServerMessage>,
}

impl Following {
    /// Follows the sessions `inner` connects, telling `messages`.
    pub(crate) fn new(inner: Arc<dyn Connector>, messages: broadcast::Sender<ServerMessage>) -> Self {
        Following { inner, messages }
    }
}

#[async_trait::async_trait]
impl Connector for Following {
    async fn connect(&self, server: &ServerSpec, options: ClientOptions) -> Result<Connection, ConnectFailure> {
        let connection = self.inner.connect(server, options).await?;
        let name: Arc<str> = Arc::from(server.name.as_str());
        // Subscribed before anyone can send the session a request.
        let notifications = connection.client.subscribe();
        let _ = self.messages.send(ServerMessage::SessionStarted {
            server: Arc::clone(&name),
            client: connection.client.clone(),
        });
        tokio::spawn(pass_on(name, notifications, self.messages.downgrade()));
        Ok(connection)
    }

    fn client_options(&self, server: &ServerSpec) -> ClientOptions {
        self.inner.client_options(server)
    }
}

/// Tells `messages` every notification of `server`'s session until the session ends (or the
/// Hub is gone).
async fn pass_on(
    server: Arc<str>,
    mut notifications: broadcast::Receiver<ServerNotification>,
    messages: broadcast::WeakSender<ServerMessage>,
) {
    loop {
        let notification = match notifications.recv().await {
            Ok(notification) => notification,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(server = %server, "{missed} notifications were dropped: the Hub's reader is slow");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(messages) = messages.upgrade() else { return };
        let _ = messages.send(ServerMessage::Notification {
            server: Arc::clone(&server),
            notification,
        });
    }
}
