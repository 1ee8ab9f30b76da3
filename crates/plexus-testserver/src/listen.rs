//! `subscriptions/listen` (the stateless 2026-07-28 era): the only way change notifications reach
//! a client of that era.
//!
//! - A listen opens a subscription whose id is the listen request's id. The server first sends
//!   `notifications/subscriptions/acknowledged` with the subset of the [`SubscriptionFilter`] it
//!   honours: what was asked for and `--listen-honours` allows ([`ListenKind`]), resource URIs
//!   the server does not have left out of `resourceSubscriptions` (256 URIs at most).
//! - Each change the server makes ([`Change`]: the `trigger-list-changed` and `update-resource`
//!   tools) goes to every live subscription that honours it, its `_meta` naming the subscription.
//!   On a connection (stdio, ws) the notification joins the session's own output; over
//!   Streamable HTTP it goes on the listen POST's SSE stream (at most
//!   [`OUTBOX_CAPACITY`](crate::server::OUTBOX_CAPACITY) wait for a stream that is not read;
//!   more are dropped), which sends a keep-alive comment every 15 s.
//! - Subscriptions are per connection on stdio and ws ([`MAX_PER_CONNECTION`]), server-wide over
//!   HTTP ([`MAX_PER_SERVER`]), so that a change made through any POST reaches every listen.
//! - The client ends one with `notifications/cancelled` (stdio) or by closing the stream (HTTP);
//!   the server ends each after `--end-listen-after-ms` (the listen's `complete` result) or
//!   `--cancel-listen-after-ms` (stdio: `notifications/cancelled`; HTTP: the stream ends
//!   without a response).
//! - The event log records `listen` (`id`, `asked`, `honoured`) and `listen-end` (`id`, `how`:
//!   [`Ending`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::ValueEnum;
use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue, RequestId};
use plexus_protocol::JsonObject;
use plexus_protocol::envelope::set_subscription_id;
use plexus_protocol::methods::SUBSCRIPTIONS_ACKNOWLEDGED;
use plexus_protocol::{SubscriptionFilter, SubscriptionsListenRequestParams};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::catalog;
use crate::era;
use crate::server::{Emitted, Output, Session, lock, notification_line};

/// The most live subscriptions of one connection (stdio, ws); one more is refused with -32603.
pub(crate) const MAX_PER_CONNECTION: usize = 16;
/// The most live subscriptions of one Streamable HTTP server, all clients together.
pub(crate) const MAX_PER_SERVER: usize = 256;
/// The most resource URIs one subscription honours (the first ones the server has).
const MAX_RESOURCE_URIS: usize = 256;

/// A kind of change notification a subscription can ask for (`--listen-honours`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListenKind {
    /// `toolsListChanged`: `notifications/tools/list_changed`.
    Tools,
    /// `promptsListChanged`: `notifications/prompts/list_changed`.
    Prompts,
    /// `resourcesListChanged`: `notifications/resources/list_changed`.
    Resources,
    /// `resourceSubscriptions`: `notifications/resources/updated`.
    Updates,
}

impl ListenKind {
    /// Every kind (what the server honours by default).
    pub const ALL: [ListenKind; 4] = [
        ListenKind::Tools,
        ListenKind::Prompts,
        ListenKind::Resources,
        ListenKind::Updates,
    ];
}

/// A change the server made, which subscriptions may have asked to hear of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change<'a> {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource list changed.
    ResourcesListChanged,
    /// The resource with this URI changed.
    ResourceUpdated(&'a str),
}

impl Change<'_> {
    /// The notification that tells of it.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Change::ToolsListChanged => "notifications/tools/list_changed",
            Change::PromptsListChanged => "notifications/prompts/list_changed",
            Change::ResourcesListChanged => "notifications/resources/list_changed",
            Change::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }

    /// The notification's params, without `_meta`.
    pub(crate) fn params(self) -> JsonObject {
        let mut params = JsonObject::new();
        if let Change::ResourceUpdated(uri) = self {
            params.insert("uri".to_owned(), Value::String(uri.to_owned()));
        }
        params
    }

    /// Whether a subscription granted `honoured` hears of it.
    fn heard_by(self, honoured: &SubscriptionFilter) -> bool {
        match self {
            Change::ToolsListChanged => honoured.tools_list_changed == Some(true),
            Change::PromptsListChanged => honoured.prompts_list_changed == Some(true),
            Change::ResourcesListChanged => honoured.resources_list_changed == Some(true),
            Change::ResourceUpdated(uri) => honoured
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|listened| listened == uri)),
        }
    }
}

/// How a subscription ended: the `how` of a `listen-end` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The client cancelled it (`notifications/cancelled` on a connection).
    Client,
    /// The server answered the listen (`--end-listen-after-ms`).
    Graceful,
    /// The server cancelled it (`--cancel-listen-after-ms`).
    Cancelled,
    /// Its HTTP stream went away (the client closed it, or the server stopped).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))] // only the remote modes have streams.
    Closed,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Client => "client",
            Ending::Graceful => "graceful",
            Ending::Cancelled => "cancelled",
            Ending::Closed => "closed",
        }
    }
}

/// Why a `subscriptions/listen` is refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListenError {
    /// The params are not a listen's (`notifications` missing or not a filter object): -32602.
    #[error("invalid params for subscriptions/listen: {0}")]
    InvalidParams(#[source] serde_json::Error),
    /// As many subscriptions as allowed are live: -32603.
    #[error("{limit} subscriptions are already live {scope} (the limit); end one before listening again")]
    TooMany { limit: usize, scope: &'static str },
    /// A live subscription has the listen's id already: -32600.
    #[error("subscription {id} is live already: a listen needs an id of its own")]
    Duplicate { id: RequestId },
}

impl From<ListenError> for ErrorObject {
    fn from(error: ListenError) -> Self {
        let code = match error {
            ListenError::InvalidParams(_) => ErrorCode::INVALID_PARAMS,
            ListenError::TooMany { .. } => ErrorCode::INTERNAL_ERROR,
            ListenError::Duplicate { .. } => ErrorCode::INVALID_REQUEST,
        };
        ErrorObject::new(code, error.to_string())
    }
}

/// One live subscription.
#[derive(Debug)]
struct Subscription {
    /// The listen request's id.
    id: RequestId,
    /// What the server granted it.
    honoured: SubscriptionFilter,
    /// The outbox of the session that listens (on a connection, the one session's).
    outbox: mpsc::Sender<Emitted>,
    /// The task that ends it (`--end-listen-after-ms`, `--cancel-listen-after-ms`), on a connection.
    timer: Option<AbortHandle>,
}

impl Subscription {
    fn is(&self, id: &RequestId, outbox: &mpsc::Sender<Emitted>) -> bool {
        self.id == *id && self.outbox.same_channel(outbox)
    }
}

/// The live subscriptions of a connection, or of a whole Streamable HTTP server; at most `limit`.
#[derive(Debug)]
pub(crate) struct Listeners {
    limit: usize,
    /// Where they live, for the refusal's message.
    scope: &'static str,
    live: Mutex<Vec<Subscription>>,
}

impl Listeners {
    /// The subscriptions of one connection (stdio, ws).
    pub(crate) fn for_connection() -> Self {
        Listeners {
            limit: MAX_PER_CONNECTION,
            scope: "on this connection",
            live: Mutex::new(Vec::new()),
        }
    }

    /// The subscriptions of a Streamable HTTP server, whichever client opened them.
    pub(crate) fn for_server() -> Self {
        Listeners {
            limit: MAX_PER_SERVER,
            scope: "on this server",
            live: Mutex::new(Vec::new()),
        }
    }

    fn open(
        &self,
        id: &RequestId,
        honoured: SubscriptionFilter,
        outbox: mpsc::Sender<Emitted>,
    ) -> Result<(), ListenError> {
        let mut live = lock(&self.live);
        if live.iter().any(|subscription| subscription.is(id, &outbox)) {
            return Err(ListenError::Duplicate { id: id.clone() });
        }
        if live.len() >= self.limit {
            return Err(ListenError::TooMany {
                limit: self.limit,
                scope: self.scope,
            });
        }
        live.push(Subscription {
            id: id.clone(),
            honoured,
            outbox,
            timer: None,
        });
        Ok(())
    }

    fn attach_timer(&self, id: &RequestId, outbox: &mpsc::Sender<Emitted>, timer: AbortHandle) {
        match lock(&self.live)
            .iter_mut()
            .find(|subscription| subscription.is(id, outbox))
        {
            Some(subscription) => subscription.timer = Some(timer),
            // Ended already (on a multi-threaded runtime, by the timer itself).
            None => timer.abort(),
        }
    }

    fn remove(&self, id: &RequestId, outbox: &mpsc::Sender<Emitted>) -> Option<Subscription> {
        let mut live = lock(&self.live);
        let at = live.iter().position(|subscription| subscription.is(id, outbox))?;
        Some(live.swap_remove(at))
    }

    /// Sends `change` to every subscription that honours it: into `out` for those of the session
    /// whose outbox is `own`, into their session's outbox for the others (dropped when it is
    /// full). Returns how many were sent.
    fn deliver(&self, change: Change<'_>, own: &mpsc::Sender<Emitted>, out: &mut Vec<Output>) -> usize {
        let live = lock(&self.live);
        let mut sent = 0;
        for subscription in live
            .iter()
            .filter(|subscription| change.heard_by(&subscription.honoured))
        {
            let line = subscription_line(change.method(), &subscription.id, change.params());
            if subscription.outbox.same_channel(own) {
                out.push(Output::Message(line));
                sent += 1;
            } else if subscription
                .outbox
                .try_send(Emitted {
                    origin: None,
                    output: Output::Message(line),
                })
                .is_ok()
            {
                sent += 1;
            }
        }
        sent
    }
}

/// The `_meta` naming subscription `id`.
fn subscription_meta(id: &RequestId) -> JsonObject {
    let mut meta = JsonObject::new();
    set_subscription_id(&mut meta, id).expect("a request id always serializes");
    meta
}

/// A notification line of `method` with `params` and the `_meta` naming subscription `id`.
fn subscription_line(method: &str, id: &RequestId, mut params: JsonObject) -> Vec<u8> {
    params.insert("_meta".to_owned(), Value::Object(subscription_meta(id)));
    notification_line(method, Some(&Value::Object(params)))
}

/// What the server grants of `asked`, honouring `honours`: the flags asked for (true) of the kinds
/// honoured, and `resourceSubscriptions` (when asked for and honoured) with the URIs the server
/// has, each once, 256 at most. Fields it does not know are not granted.
fn grant(asked: &SubscriptionFilter, honours: &[ListenKind]) -> SubscriptionFilter {
    let flag = |kind, asked: Option<bool>| (asked == Some(true) && honours.contains(&kind)).then_some(true);
    let resource_subscriptions = asked
        .resource_subscriptions
        .as_ref()
        .filter(|_| honours.contains(&ListenKind::Updates))
        .map(|uris| {
            let mut known: Vec<String> = Vec::new();
            for uri in uris {
                if known.len() < MAX_RESOURCE_URIS && !known.contains(uri) && catalog::read_resource(uri).is_some() {
                    known.push(uri.clone());
                }
            }
            known
        });
    SubscriptionFilter {
        tools_list_changed: flag(ListenKind::Tools, asked.tools_list_changed),
        prompts_list_changed: flag(ListenKind::Prompts, asked.prompts_list_changed),
        resources_list_changed: flag(ListenKind::Resources, asked.resources_list_changed),
        resource_subscriptions,
        extra: JsonObject::new(),
    }
}

/// The result that ends subscription `id` gracefully: `{"resultType":"complete","_meta":{…}}`.
fn complete_result(id: &RequestId) -> Result<Box<RawValue>, ErrorObject> {
    let meta = Value::Object(subscription_meta(id));
    RawValue::from_string(format!("{{{},\"_meta\":{meta}}}", era::COMPLETE))
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot write the result: {e}")))
}

impl Session {
    /// Handles `subscriptions/listen` `id` of a modern session: opens the subscription and
    /// acknowledges it into `out`, or refuses it.
    pub(crate) fn listen(self: &Arc<Self>, id: RequestId, params: &str, out: &mut Vec<Output>) {
        let asked = match serde_json::from_str::<SubscriptionsListenRequestParams>(params) {
            Ok(params) => params.notifications,
            Err(e) => return self.respond(id, Err(ListenError::InvalidParams(e).into()), out),
        };
        let honoured = grant(&asked, &self.options().listen_honours);
        let granted = json!(honoured);
        if let Err(error) = self.listeners.open(&id, honoured, self.outbox.clone()) {
            return self.respond(id, Err(error.into()), out);
        }
        if self.server.events.enabled() {
            self.record(json!({"event": "listen", "id": id, "asked": asked, "honoured": granted}));
        }
        let mut acknowledged = JsonObject::new();
        acknowledged.insert("notifications".to_owned(), granted);
        out.push(Output::Message(subscription_line(
            SUBSCRIPTIONS_ACKNOWLEDGED,
            &id,
            acknowledged,
        )));
        // Over HTTP, the listen's stream ends it (`ListenStream`).
        if !self.routed {
            self.start_server_end(&id);
        }
    }

    /// Sends `change` to the subscriptions that honour it (see [`Listeners::deliver`]).
    pub(crate) fn notify_change(&self, change: Change<'_>, out: &mut Vec<Output>) -> usize {
        self.listeners.deliver(change, &self.outbox, out)
    }

    /// Ends this session's subscription `id`, if it is live, as the client did (`how`: `client`
    /// or `closed`); whether it was.
    pub(crate) fn end_listen(&self, id: &RequestId, how: Ending) -> bool {
        let Some(subscription) = self.listeners.remove(id, &self.outbox) else {
            return false;
        };
        if let Some(timer) = subscription.timer {
            timer.abort();
        }
        self.record_end(id, how);
        true
    }

    /// When and how the server ends each subscription, if it does.
    fn server_ending(&self) -> Option<(Duration, Ending)> {
        let options = self.options();
        let ending = |ms: Option<u64>, how| ms.map(|ms| (Duration::from_millis(ms), how));
        ending(options.end_listen_after_ms, Ending::Graceful)
            .or(ending(options.cancel_listen_after_ms, Ending::Cancelled))
    }

    /// Ends this session's subscription `id` as the server does (`how`: `graceful` or
    /// `cancelled`), if it is still live: the outputs that tell the client, the listen's result
    /// or (when `notify`: on a connection) `notifications/cancelled`.
    fn server_end_listen(&self, id: &RequestId, how: Ending, notify: bool) -> Option<Vec<Output>> {
        self.listeners.remove(id, &self.outbox)?;
        self.record_end(id, how);
        let mut outputs = Vec::with_capacity(1);
        match how {
            Ending::Graceful => self.respond(id.clone(), complete_result(id), &mut outputs),
            Ending::Cancelled if notify => {
                let params =
                    json!({"requestId": id, "reason": "the server ended the subscription (--cancel-listen-after-ms)"});
                outputs.push(Output::Message(notification_line(
                    "notifications/cancelled",
                    Some(&params),
                )));
            }
            Ending::Cancelled | Ending::Client | Ending::Closed => {}
        }
        Some(outputs)
    }

    /// On a connection, ends subscription `id` when `--end-listen-after-ms` or
    /// `--cancel-listen-after-ms` says, from a task of its own.
    fn start_server_end(self: &Arc<Self>, id: &RequestId) {
        let Some((after, how)) = self.server_ending() else {
            return;
        };
        let session = Arc::clone(self);
        let ended = id.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(after).await;
            for output in session.server_end_listen(&ended, how, true).into_iter().flatten() {
                session.emit(output).await;
            }
        });
        self.listeners.attach_timer(id, &self.outbox, timer.abort_handle());
    }

    fn record_end(&self, id: &RequestId, how: Ending) {
        if self.server.events.enabled() {
            self.record(json!({"event": "listen-end", "id": id, "how": how.as_str()}));
        }
    }
}

#[cfg(feature = "remote")]
pub(crate) use remote::{KEEP_ALIVE_FRAME, ListenStream, ListenTick, tick};

/// The server's side of a listen POST's SSE stream (Streamable HTTP).
#[cfg(feature = "remote")]
mod remote {
    use std::pin::Pin;

    use bytes::Bytes;
    use tokio::time::{Instant, Interval, Sleep};

    use super::{Arc, Duration, Ending, Output, RequestId, Session};

    /// How often a listen stream with nothing to say sends a comment.
    const KEEP_ALIVE: Duration = Duration::from_secs(15);

    /// The SSE comment a listen stream sends every 15 s.
    pub(crate) const KEEP_ALIVE_FRAME: Bytes = Bytes::from_static(b": keep-alive\n\n");

    /// What a listen stream waits for besides the subscription's notifications: its keep-alive,
    /// and the server ending the subscription. Dropped with the stream: a subscription still
    /// live then ends as `closed`.
    pub(crate) struct ListenStream {
        session: Arc<Session>,
        id: RequestId,
        keep_alive: Interval,
        ending: Option<(Pin<Box<Sleep>>, Ending)>,
    }

    /// What a listen stream does next.
    pub(crate) enum ListenTick {
        /// Send [`KEEP_ALIVE_FRAME`].
        KeepAlive,
        /// The server ended the subscription: send this output (the listen's result), if any,
        /// then end the stream.
        End(Option<Output>),
    }

    impl ListenStream {
        /// The stream of subscription `id`, which `session` (the listen POST's) opened.
        pub(crate) fn new(session: &Arc<Session>, id: RequestId) -> Self {
            let mut keep_alive = tokio::time::interval_at(Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
            keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ListenStream {
                ending: session
                    .server_ending()
                    .map(|(after, how)| (Box::pin(tokio::time::sleep(after)), how)),
                session: Arc::clone(session),
                id,
                keep_alive,
            }
        }

        async fn next(&mut self) -> ListenTick {
            let ListenStream { keep_alive, ending, .. } = self;
            let end = async {
                match ending {
                    Some((sleep, how)) => {
                        sleep.as_mut().await;
                        *how
                    }
                    None => std::future::pending().await,
                }
            };
            let how = tokio::select! {
                _ = keep_alive.tick() => return ListenTick::KeepAlive,
                how = end => how,
            };
            self.ending = None;
            let outputs = self.session.server_end_listen(&self.id, how, false);
            ListenTick::End(outputs.and_then(|outputs| outputs.into_iter().next()))
        }
    }

    impl Drop for ListenStream {
        fn drop(&mut self) {
            self.session.end_listen(&self.id, Ending::Closed);
        }
    }

    /// The next thing `listening` does; never, for a stream that is no listen's.
    pub(crate) async fn tick(listening: &mut Option<ListenStream>) -> ListenTick {
        match listening {
            Some(listening) => listening.next().await,
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::{Cli, Command};

    fn parse(args: &[&str]) -> Result<crate::ServerOptions, clap::Error> {
        let argv = ["plexus-testserver", "stdio"].iter().chain(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Stdio(options) => Ok(options.server),
            #[cfg(feature = "remote")]
            _ => unreachable!("stdio"),
        }
    }

    #[test]
    fn the_listen_flags_parse() {
        let options = parse(&[]).unwrap();
        assert_eq!(options.listen_honours, ListenKind::ALL);
        assert_eq!(
            (options.end_listen_after_ms, options.cancel_listen_after_ms),
            (None, None)
        );
        let options = parse(&["--listen-honours=tools,updates", "--end-listen-after-ms=5"]).unwrap();
        assert_eq!(options.listen_honours, [ListenKind::Tools, ListenKind::Updates]);
        assert_eq!(options.end_listen_after_ms, Some(5));
        assert!(parse(&["--end-listen-after-ms=5", "--cancel-listen-after-ms=5"]).is_err());
        assert!(parse(&["--listen-honours=logs"]).is_err());
        assert!(parse(&["--cancel-listen-after-ms=0"]).is_err());
    }

    #[test]
    fn a_grant_keeps_what_is_asked_honoured_and_known() {
        let asked = SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(false),
            resources_list_changed: Some(true),
            resource_subscriptions: Some(vec![
                catalog::HELLO_URI.to_owned(),
                "test://nope".to_owned(),
                catalog::HELLO_URI.to_owned(),
            ]),
            extra: [("logs".to_owned(), Value::Bool(true))].into_iter().collect(),
        };
        let granted = grant(&asked, &ListenKind::ALL);
        assert_eq!(
            json!(granted),
            json!({"toolsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": [catalog::HELLO_URI]})
        );
        assert_eq!(json!(grant(&asked, &[ListenKind::Prompts])), json!({}));
        assert!(Change::ResourceUpdated(catalog::HELLO_URI).heard_by(&granted));
        assert!(!Change::PromptsListChanged.heard_by(&granted));
    }
}
