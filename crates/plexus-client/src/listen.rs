//! Change notifications of the stateless era: `subscriptions/listen`, one long-lived request on
//! whose stream the server sends the notifications the client asked for, each tagged with the
//! listen request's id.
//!
//! A stateless session listens as soon as it starts, for the lists whose changes the server says
//! it announces (`listChanged` in its capabilities) and the resources the host subscribed to
//! ([`Client::subscribe_resource`](crate::Client::subscribe_resource)). The notifications reach
//! [`Client::subscribe`](crate::Client::subscribe) exactly as the initialize era's do, so the
//! pool's cache invalidation works alike. Notifications are demultiplexed by their subscription
//! id: one of a subscription that has ended, or was never acknowledged, is dropped.
//!
//! A subscription is renewed after [`LISTEN_RENEWAL`] (every wait is bounded), and listened
//! again when the server ends it (with a result, or a `notifications/cancelled` over stdio),
//! after a backoff from 1 s to 60 s; a server that does not know the method is not asked again.
//! A changed filter opens the new subscription first and ends the old one once the new one is
//! acknowledged, so that no notification falls between the two. A new session (a reconnect)
//! listens again by itself. Ending a subscription is cancelling its request: closing its stream
//! over HTTP, `notifications/cancelled` over stdio.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use plexus_jsonrpc::{ErrorCode, RequestId};
use plexus_protocol::{
    ServerCapabilities, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, methods,
};
use tokio::task::AbortHandle;

use crate::ClientError;
use crate::request::{Call, RequestOptions, send_call};
use crate::session::{Shared, lock};
use crate::wire::StatelessWire;

/// How long one subscription lasts before it is renewed.
pub const LISTEN_RENEWAL: Duration = Duration::from_secs(3600);

/// The first and the longest wait before listening again after the server ended a subscription.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));

/// The listening state of a stateless session.
#[derive(Default)]
pub(crate) struct Listening {
    state: Mutex<State>,
    /// Bumped on each acknowledgement.
    acknowledged: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    /// The lists whose changes are asked for (from the server's capabilities).
    lists: SubscriptionFilter,
    /// The resources subscribed to.
    uris: BTreeSet<String>,
    /// Which filter is current: bumped on each change.
    generation: u64,
    /// The subscriptions whose requests are out, by id: their filter's generation and what the
    /// server acknowledged (none yet: its notifications are not taken).
    live: HashMap<i64, (u64, Option<SubscriptionFilter>)>,
    /// The task of each generation still running.
    tasks: Vec<(u64, AbortHandle)>,
    /// The server does not know the method: never asked again.
    unsupported: bool,
}

impl State {
    /// What the server acknowledged to a live subscription of `generation`'s filter.
    fn acknowledged_in(&self, generation: u64) -> Option<SubscriptionFilter> {
        self.live
            .values()
            .find(|(of, subset)| *of == generation && subset.is_some())
            .and_then(|(_, subset)| subset.clone())
    }

    fn filter(&self) -> SubscriptionFilter {
        let mut filter = self.lists.clone();
        if !self.uris.is_empty() {
            filter.resource_subscriptions = Some(self.uris.iter().cloned().collect());
        }
        filter
    }
}

impl Listening {
    /// Starts listening for what `capabilities` announce, if anything.
    pub(crate) fn start(shared: &Arc<Shared>, capabilities: &ServerCapabilities) {
        let Some(listening) = shared.stateless().map(StatelessWire::listening) else {
            return;
        };
        let flag = |announced: bool| announced.then_some(true);
        let lists = SubscriptionFilter {
            tools_list_changed: flag(
                capabilities
                    .tools
                    .as_ref()
                    .is_some_and(|c| c.list_changed == Some(true)),
            ),
            prompts_list_changed: flag(
                capabilities
                    .prompts
                    .as_ref()
                    .is_some_and(|c| c.list_changed == Some(true)),
            ),
            resources_list_changed: flag(
                capabilities
                    .resources
                    .as_ref()
                    .is_some_and(|c| c.list_changed == Some(true)),
            ),
            ..SubscriptionFilter::default()
        };
        let generation = {
            let mut state = lock(&listening.state);
            state.lists = lists;
            if state.filter().is_empty() {
                return;
            }
            state.generation += 1;
            state.generation
        };
        spawn(shared, generation);
    }

    /// Changes the resources subscribed to and waits (at most `timeout`) for the server to
    /// acknowledge the new filter; what it acknowledged. The previous subscription ends once
    /// the new one is acknowledged.
    pub(crate) async fn change_resources(
        shared: &Arc<Shared>,
        change: impl FnOnce(&mut BTreeSet<String>),
        timeout: Duration,
    ) -> Result<SubscriptionFilter, ClientError> {
        let Some(listening) = shared.stateless().map(StatelessWire::listening) else {
            return Err(ClientError::SessionClosed);
        };
        let generation = {
            let mut state = lock(&listening.state);
            if state.unsupported {
                return Err(ClientError::Rpc {
                    method: methods::SUBSCRIPTIONS_LISTEN.to_owned(),
                    error: plexus_jsonrpc::ErrorObject::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        "the server does not know subscriptions/listen",
                    ),
                });
            }
            change(&mut state.uris);
            state.generation += 1;
            state.generation
        };
        spawn(shared, generation);
        let mut acknowledgements = listening.acknowledged.subscribe();
        let acknowledged = tokio::time::timeout(timeout, async {
            loop {
                if let Some(subset) = listening.acknowledged_in(generation) {
                    return Some(subset);
                }
                if acknowledgements.changed().await.is_err() {
                    return None;
                }
            }
        })
        .await;
        match acknowledged {
            Ok(Some(subset)) => Ok(subset),
            Ok(None) => Err(ClientError::SessionClosed),
            Err(_) => Err(ClientError::Timeout {
                method: methods::SUBSCRIPTIONS_LISTEN.to_owned(),
                after: timeout,
                unidentified: None,
            }),
        }
    }

    /// What the server acknowledged to the live subscription of the current filter, if it did.
    pub(crate) fn current(&self) -> Option<SubscriptionFilter> {
        let state = lock(&self.state);
        state.acknowledged_in(state.generation)
    }

    fn acknowledged_in(&self, generation: u64) -> Option<SubscriptionFilter> {
        lock(&self.state).acknowledged_in(generation)
    }

    /// Notes the server's acknowledgement of a subscription; once the current filter's is in,
    /// the tasks of older filters end.
    pub(crate) fn on_acknowledged(&self, server: &str, params: Option<&plexus_jsonrpc::RawValue>) {
        let Some(params) =
            params.and_then(|p| serde_json::from_str::<SubscriptionsAcknowledgedNotificationParams>(p.get()).ok())
        else {
            tracing::debug!(server, "ignored a malformed subscription acknowledgement");
            return;
        };
        let Ok(Some(RequestId::Number(id))) = params.subscription_id() else {
            tracing::debug!(
                server,
                "ignored a subscription acknowledgement without a subscription id of ours"
            );
            return;
        };
        let mut state = lock(&self.state);
        let current = state.generation;
        let asked = state.filter();
        let Some(entry) = state.live.get_mut(&id) else {
            return;
        };
        entry.1 = Some(params.notifications.clone());
        if entry.0 == current {
            let missing = asked.not_granted_by(&params.notifications);
            if !missing.is_empty() {
                tracing::info!(
                    server,
                    "the server does not send every notification asked for: {missing:?}"
                );
            }
            state.tasks.retain(|(generation, task)| {
                let keep = *generation >= current;
                if !keep {
                    task.abort();
                }
                keep
            });
        }
        drop(state);
        self.acknowledged.send_modify(|n| *n += 1);
    }

    /// Whether a notification whose params carry `params` is taken: one without a subscription
    /// id is (a server of the initialize era, or one that does not tag), one of a live,
    /// acknowledged subscription is, any other is a late one of an ended subscription.
    pub(crate) fn admits(&self, params: Option<&plexus_jsonrpc::RawValue>) -> bool {
        let value = params.and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok());
        match plexus_protocol::envelope::notification_subscription_id(value.as_ref()) {
            Ok(None) => true,
            Ok(Some(RequestId::Number(id))) => lock(&self.state)
                .live
                .get(&id)
                .is_some_and(|(_, acknowledged)| acknowledged.is_some()),
            Ok(Some(_)) | Err(_) => false,
        }
    }

    /// Whether `id` is a live subscription's (the server ended it with `notifications/cancelled`).
    pub(crate) fn is_live(&self, id: i64) -> bool {
        lock(&self.state).live.contains_key(&id)
    }

    /// Stops every subscription (the last handle of the session is gone).
    pub(crate) fn stop(&self) {
        for (_, task) in lock(&self.state).tasks.drain(..) {
            task.abort();
        }
    }
}

/// Spawns the task that listens with the filter of `generation`.
fn spawn(shared: &Arc<Shared>, generation: u64) {
    let task = tokio::spawn(listen(Arc::downgrade(shared), generation));
    if let Some(wire) = shared.stateless() {
        lock(&wire.listening().state)
            .tasks
            .push((generation, task.abort_handle()));
    }
}

/// Listens with the filter of `generation` until a newer one replaces it, the session ends or
/// the server does not know the method.
async fn listen(weak: Weak<Shared>, generation: u64) {
    let mut backoff = BACKOFF.0;
    loop {
        let Some(shared) = weak.upgrade() else { return };
        let outcome = subscribe_once(&shared, generation).await;
        let name = shared.name.clone();
        drop(shared);
        match outcome {
            // Superseded, or the session is gone.
            None | Some(Err(ClientError::SessionClosed | ClientError::Transport(_))) => return,
            // Renewed at once: the subscription lasted its time.
            Some(Err(ClientError::Timeout { .. })) => backoff = BACKOFF.0,
            Some(Err(ClientError::Rpc { error, .. })) if error.code == ErrorCode::METHOD_NOT_FOUND => {
                tracing::info!(server = %name, "the server does not know subscriptions/listen: no change notifications");
                if let Some(shared) = weak.upgrade()
                    && let Some(wire) = shared.stateless()
                {
                    lock(&wire.listening().state).unsupported = true;
                }
                return;
            }
            Some(ended) => {
                tracing::debug!(server = %name, "the server ended a subscription ({ended:?}); listening again in {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF.1);
            }
        }
    }
}

/// One subscription: its request, until it ends. `None` when the filter of `generation` is no
/// longer the current one (a newer subscription took over).
async fn subscribe_once(shared: &Arc<Shared>, generation: u64) -> Option<Result<(), ClientError>> {
    let wire = shared.stateless()?;
    let listening = wire.listening();
    let id = shared.next_id();
    let filter = {
        let mut state = lock(&listening.state);
        if state.generation != generation {
            return None;
        }
        state.live.insert(id, (generation, None));
        state.filter()
    };
    let params = SubscriptionsListenRequestParams::new(filter);
    let options = RequestOptions::with_timeout(LISTEN_RENEWAL);
    let call = Call {
        id: Some(id),
        wire: Some(wire),
        method: methods::SUBSCRIPTIONS_LISTEN,
        options: &options,
        default_timeout: LISTEN_RENEWAL,
        cancellable: true,
    };
    let outcome = send_call(shared, &call, Some(&params)).await.map(drop);
    lock(&listening.state).live.remove(&id);
    Some(outcome)
}
