//! `subscriptions/listen` (the stateless era): the one way change notifications reach a client
//! of that era. A listen is a long-lived request; the gateway first sends
//! `notifications/subscriptions/acknowledged` with what it grants (the list changes asked for,
//! and the resources asked for that a backend could be subscribed to), then on the listen's own
//! stream (its SSE response over HTTP, stdout on stdio) `notifications/tools/list_changed` (and
//! prompts, resources) when the gateway's lists change, as its clients of the `initialize` era
//! hear it, and `notifications/resources/updated` of the resources granted, each with `_meta`
//! naming the subscription (the listen request's id).
//!
//! A resource is subscribed to on its backend as `resources/subscribe` does it (in whichever era
//! the backend speaks), and unsubscribed when its last listener or subscriber leaves. A listen
//! ends when its client cancels it (closes its stream over HTTP, `notifications/cancelled` on
//! stdio), or gracefully, with a `complete` result, after [`LISTEN_LIFE`]. At most
//! [`MAX_LISTENS`] are live at once, each with at most [`MAX_LISTEN_URIS`] resources.

use std::sync::{Arc, Weak};
use std::time::Duration;

use plexus::jsonrpc::{ErrorCode, ErrorObject, Request};
use plexus::protocol::envelope::set_subscription_id;
use plexus::protocol::{JsonObject, ResultType, SubscriptionFilter, SubscriptionsListenRequestParams, methods};
use serde_json::{Value, json};

use crate::gateway::{Gateway, invalid_params};
use crate::rounds::Outcome;
use crate::session::{Listen, Session, Sink};
use crate::stateless::encode_failed;

/// The most listens live at once, over every client.
pub(crate) const MAX_LISTENS: usize = 256;

/// The most resources one listen is granted (the first ones asked for that can be).
pub(crate) const MAX_LISTEN_URIS: usize = 256;

/// How long a listen lasts before the gateway ends it gracefully (a client listens again).
pub(crate) const LISTEN_LIFE: Duration = Duration::from_secs(24 * 60 * 60);

/// Unsubscribes a listen's resources when it ends, however it ends.
struct Unlisten {
    gateway: Weak<Gateway>,
    session: Arc<Session>,
    uris: Vec<String>,
}

impl Drop for Unlisten {
    fn drop(&mut self) {
        let (Some(gateway), Ok(runtime)) = (self.gateway.upgrade(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        if self.uris.is_empty() {
            return;
        }
        let (session, uris) = (Arc::clone(&self.session), std::mem::take(&mut self.uris));
        runtime.spawn(async move {
            for uri in uris {
                let params: JsonObject = [("uri".to_owned(), Value::String(uri))].into_iter().collect();
                let _ = gateway
                    .subscription(&session, methods::RESOURCES_UNSUBSCRIBE, &params)
                    .await;
            }
        });
    }
}

/// The list changes of `asked` that the gateway grants: every one asked for.
fn lists_granted(asked: &SubscriptionFilter) -> SubscriptionFilter {
    let flag = |asked: Option<bool>| (asked == Some(true)).then_some(true);
    SubscriptionFilter {
        tools_list_changed: flag(asked.tools_list_changed),
        prompts_list_changed: flag(asked.prompts_list_changed),
        resources_list_changed: flag(asked.resources_list_changed),
        resource_subscriptions: None,
        extra: JsonObject::new(),
    }
}

impl Gateway {
    /// Serves `subscriptions/listen` `request` on `sink` until it ends (see the module docs);
    /// its `complete` result, or why it was refused.
    pub(crate) async fn listen(self: &Arc<Self>, request: &Request, sink: &Sink) -> Outcome {
        let method = methods::SUBSCRIPTIONS_LISTEN;
        let params: SubscriptionsListenRequestParams = match request.params.as_deref() {
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| invalid_params(method, e))?,
            None => return Err(invalid_params(method, "no notifications")),
        };
        let live = self
            .live_sessions()
            .iter()
            .filter(|session| session.listen.is_some())
            .count();
        if live >= MAX_LISTENS {
            return Err(ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("{MAX_LISTENS} listens are live already (the limit); end one before listening again"),
            ));
        }
        let asked = params.notifications;
        let mut granted = lists_granted(&asked);
        let listen = Listen {
            id: request.id.clone(),
            granted: granted.clone(),
        };
        let session = Session::listening(sink.clone(), listen);
        let mut unlisten = Unlisten {
            gateway: Arc::downgrade(self),
            session: Arc::clone(&session),
            uris: Vec::new(),
        };
        if let Some(uris) = asked.resource_subscriptions.filter(|uris| !uris.is_empty()) {
            self.wait_ready().await;
            for uri in uris {
                if unlisten.uris.len() == MAX_LISTEN_URIS || unlisten.uris.contains(&uri) {
                    continue;
                }
                let params: JsonObject = [("uri".to_owned(), Value::String(uri.clone()))].into_iter().collect();
                match self.subscription(&session, methods::RESOURCES_SUBSCRIBE, &params).await {
                    Ok(_) => unlisten.uris.push(uri),
                    Err(e) => tracing::debug!("a listen is not granted {uri}: {}", e.message),
                }
            }
            granted.resource_subscriptions = Some(unlisten.uris.clone());
        }
        self.add_session(&session);
        let acknowledged = json!({"notifications": granted});
        let line = session
            .listen
            .as_ref()
            .map(|listen| listen.line(methods::SUBSCRIPTIONS_ACKNOWLEDGED, Some(&acknowledged)));
        if let Some(line) = line
            && sink.send(line).await.is_err()
        {
            return Err(ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                "the listen's stream closed",
            ));
        }
        // Only now: no notification goes before the acknowledgement.
        session.set_initialized();
        tokio::time::sleep(LISTEN_LIFE).await;
        drop(unlisten);
        let mut meta = JsonObject::new();
        set_subscription_id(&mut meta, &request.id).map_err(|e| invalid_params(method, e))?;
        let result = json!({"resultType": ResultType::Complete, "_meta": meta});
        serde_json::value::to_raw_value(&result).map_err(|e| encode_failed(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_change_asked_for_is_granted_and_nothing_unknown() {
        let asked: SubscriptionFilter = serde_json::from_value(json!({
            "toolsListChanged": true, "promptsListChanged": false, "logs": true,
            "resourceSubscriptions": ["plexus://demo/test://x"],
        }))
        .unwrap();
        assert_eq!(json!(lists_granted(&asked)), json!({"toolsListChanged": true}));
    }
}
