//! Resource subscriptions through the gateway: `resources/subscribe` and `unsubscribe` by the
//! gateway's URI go to the server that owns the resource (which is told to stop when its last
//! subscriber leaves), its `notifications/resources/updated` go to the clients subscribed, with
//! the URI as the gateway lists it, and a server that reconnects is subscribed again. A
//! stateless client's `subscriptions/listen` subscribes the same way
//! ([`listening`](crate::listening)).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use plexus::jsonrpc::{ErrorCode, ErrorObject};
use plexus::protocol::ResourceUpdatedNotificationParams;
use plexus::protocol::methods;
use serde_json::{Map, Value, json};

use crate::gateway::{Gateway, hub_error, invalid_params};
use crate::session::{Session, lock, notification};
use crate::uri;

/// The most resources subscribed to through the gateway at once, over all clients.
const MAX_SUBSCRIPTIONS: usize = 4096;

/// A backend resource: its server, and the server's own URI.
type Resource = (String, String);

/// The clients subscribed to each backend resource.
#[derive(Default)]
pub(super) struct Subscriptions {
    by_resource: Mutex<HashMap<Resource, Vec<Weak<Session>>>>,
}

impl Subscriptions {
    /// Subscribes `session` to `uri` of `server`; whether it was not already.
    fn add(&self, server: &str, uri: &str, session: &Arc<Session>) -> Result<bool, ErrorObject> {
        let mut by_resource = lock(&self.by_resource);
        let key = (server.to_owned(), uri.to_owned());
        if !by_resource.contains_key(&key) && by_resource.len() >= MAX_SUBSCRIPTIONS {
            // Those of clients that went away first. (Their servers were subscribed for them;
            // an update of theirs unsubscribes them, see `subscribers`.)
            by_resource.retain(|_, sessions| sessions.iter().any(|session| session.strong_count() > 0));
            if by_resource.len() >= MAX_SUBSCRIPTIONS {
                return Err(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("the gateway holds {MAX_SUBSCRIPTIONS} resource subscriptions already"),
                ));
            }
        }
        let sessions = by_resource.entry(key).or_default();
        sessions.retain(|known| known.strong_count() > 0);
        if sessions
            .iter()
            .any(|known| std::ptr::eq(known.as_ptr(), Arc::as_ptr(session)))
        {
            return Ok(false);
        }
        sessions.push(Arc::downgrade(session));
        Ok(true)
    }

    /// Unsubscribes `session` from `uri` of `server`; whether no client is subscribed to it any
    /// more (the server can be told).
    fn remove(&self, server: &str, uri: &str, session: &Session) -> bool {
        let mut by_resource = lock(&self.by_resource);
        let key = (server.to_owned(), uri.to_owned());
        let Some(sessions) = by_resource.get_mut(&key) else {
            return false;
        };
        sessions.retain(|known| known.strong_count() > 0 && !std::ptr::eq(known.as_ptr(), session));
        if sessions.is_empty() {
            by_resource.remove(&key);
            return true;
        }
        false
    }

    /// The clients subscribed to `updated` of `server` (or to a resource it is a part of), and
    /// the server's URIs no client is subscribed to any more (their clients went away).
    fn subscribers(&self, server: &str, updated: &str) -> (Vec<Arc<Session>>, Vec<String>) {
        let mut by_resource = lock(&self.by_resource);
        let (mut found, mut abandoned) = (Vec::<Arc<Session>>::new(), Vec::new());
        by_resource.retain(|(owner, uri), sessions| {
            if owner != server || !is_part_of(updated, uri) {
                return true;
            }
            sessions.retain(|session| session.strong_count() > 0);
            for session in sessions.iter().filter_map(Weak::upgrade) {
                if !found.iter().any(|known| Arc::ptr_eq(known, &session)) {
                    found.push(session);
                }
            }
            if sessions.is_empty() {
                abandoned.push(uri.clone());
            }
            !sessions.is_empty()
        });
        (found, abandoned)
    }

    /// The URIs of `server` some client is subscribed to.
    fn of_server(&self, server: &str) -> Vec<String> {
        lock(&self.by_resource)
            .iter()
            .filter(|((owner, _), sessions)| owner == server && sessions.iter().any(|s| s.strong_count() > 0))
            .map(|((_, uri), _)| uri.clone())
            .collect()
    }
}

/// Whether `updated` is the resource `uri` or a part of it (`uri` followed by `/`, `?` or `#`).
fn is_part_of(updated: &str, uri: &str) -> bool {
    updated
        .strip_prefix(uri)
        .is_some_and(|rest| rest.is_empty() || uri.ends_with('/') || rest.starts_with(['/', '?', '#']))
}

impl Gateway {
    /// `resources/subscribe` and `resources/unsubscribe` of `session`, by the gateway's URI.
    pub(super) async fn subscription(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, ErrorObject> {
        let given = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params(method, "no uri"))?;
        let (server, original) = uri::owner(given)?;
        if method == methods::RESOURCES_UNSUBSCRIBE {
            if self.subscriptions.remove(server, original, session)
                && let Some(client) = self.hub.pool().client(server)
            {
                client
                    .unsubscribe_resource(original)
                    .await
                    .map_err(|e| hub_error(Gateway::server_failed(server, e)))?;
            }
            return Ok(json!({}));
        }
        let client = self.backend(server).await?;
        let offers = client
            .server()
            .capabilities
            .resources
            .as_ref()
            .is_some_and(|resources| resources.subscribe == Some(true));
        if !offers {
            return Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("server {server:?} does not offer resource subscriptions"),
            ));
        }
        let new = self.subscriptions.add(server, original, session)?;
        if let Err(e) = client.subscribe_resource(original).await {
            if new {
                self.subscriptions.remove(server, original, session);
            }
            return Err(hub_error(Gateway::server_failed(server, e)));
        }
        Ok(json!({}))
    }

    /// Passes `server`'s `notifications/resources/updated` on to the clients subscribed, with
    /// the gateway's URI; a resource whose clients all went away is unsubscribed.
    pub(super) fn forward_update(&self, server: &str, mut params: ResourceUpdatedNotificationParams) {
        let (sessions, abandoned) = self.subscriptions.subscribers(server, &params.uri);
        if let Some(client) = self.hub.pool().client(server).filter(|_| !abandoned.is_empty()) {
            tokio::spawn(async move {
                for uri in abandoned {
                    let _ = client.unsubscribe_resource(&uri).await;
                }
            });
        }
        params.uri = uri::to_gateway(server, &params.uri);
        let Ok(value) = serde_json::to_value(&params) else {
            return;
        };
        let line = notification(methods::RESOURCES_UPDATED, Some(&value));
        for session in sessions {
            session.notify_change(methods::RESOURCES_UPDATED, Some(&value), &line);
        }
    }

    /// Subscribes `server`'s new session (after a reconnect) to what the clients are
    /// subscribed to.
    pub(super) fn resubscribe(&self, server: &str, client: &plexus::Client) {
        let uris = self.subscriptions.of_server(server);
        if uris.is_empty() {
            return;
        }
        let (client, server) = (client.clone(), server.to_owned());
        tokio::spawn(async move {
            for uri in uris {
                if let Err(e) = client.subscribe_resource(&uri).await {
                    tracing::info!("server {server:?} could not be subscribed to {uri} again: {e}");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_told_to_its_subscribers_until_the_last_leaves() {
        let subscriptions = Subscriptions::default();
        let (a, b) = (Session::new(None), Session::new(None));
        assert!(subscriptions.add("s", "test://x", &a).unwrap());
        assert!(!subscriptions.add("s", "test://x", &a).unwrap());
        assert!(subscriptions.add("s", "test://x", &b).unwrap());
        // An update of the resource or of a part of it; not of another server's.
        let (found, abandoned) = subscriptions.subscribers("s", "test://x/part");
        assert_eq!((found.len(), abandoned.len()), (2, 0));
        assert!(subscriptions.subscribers("t", "test://x").0.is_empty());
        assert!(subscriptions.subscribers("s", "test://y").0.is_empty());
        assert!(subscriptions.subscribers("s", "test://xy").0.is_empty());
        assert_eq!(subscriptions.of_server("s"), ["test://x"]);
        // The server is told when no client is left.
        assert!(!subscriptions.remove("s", "test://x", &a));
        assert!(subscriptions.remove("s", "test://x", &b));
        assert!(!subscriptions.remove("s", "test://x", &b));
        assert!(subscriptions.of_server("s").is_empty());
    }

    #[test]
    fn a_client_that_went_away_leaves_its_resources_abandoned() {
        let subscriptions = Subscriptions::default();
        let gone = Session::new(None);
        subscriptions.add("s", "test://x", &gone).unwrap();
        drop(gone);
        assert!(subscriptions.of_server("s").is_empty());
        let (found, abandoned) = subscriptions.subscribers("s", "test://x");
        assert_eq!((found.len(), abandoned), (0, vec!["test://x".to_owned()]));
        assert!(subscriptions.subscribers("s", "test://x").1.is_empty());
    }

    #[test]
    fn subscriptions_are_bounded() {
        let subscriptions = Subscriptions::default();
        let session = Session::new(None);
        for n in 0..MAX_SUBSCRIPTIONS {
            subscriptions.add("s", &format!("test://{n}"), &session).unwrap();
        }
        let refused = subscriptions.add("s", "test://one-more", &session).unwrap_err();
        assert_eq!(
            refused.message,
            format!("the gateway holds {MAX_SUBSCRIPTIONS} resource subscriptions already")
        );
        // Those of a client that went away make room.
        drop(session);
        let other = Session::new(None);
        assert!(subscriptions.add("s", "test://one-more", &other).unwrap());
    }
}
