//! The engine of a session: the pending-request table, the reader that completes callers
//! directly, and the dispatch of server requests and notifications.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use plexus_jsonrpc::{ErrorCode, ErrorObject, Message, Notification, RawValue, Request, RequestId, Response};
use plexus_protocol::methods;
use plexus_transport::{
    BoxFuture, OutboundKind, OutboundMessage, Received, TransportError, TransportReceiver, TransportSender, error_chain,
};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::AbortHandle;

use crate::handler::{ClientHandler, ServerRequestContext};
use crate::notifications::ServerNotification;
use crate::progress::ProgressState;
use crate::wire::StatelessWire;
use crate::{ClientError, UnidentifiedDrops};

/// At most this many server-to-client requests are handled at once; more are refused.
pub(crate) const MAX_CONCURRENT_SERVER_REQUESTS: usize = 64;
/// At most this many refusals of server requests wait to be sent; a server that floods the client
/// with requests beyond that gets no answer to the excess.
pub(crate) const MAX_QUEUED_REFUSALS: usize = 64;
/// How many notifications a slow subscriber may fall behind before it misses some.
pub(crate) const NOTIFICATION_BUFFER: usize = 128;

/// What a pending request receives.
pub(crate) enum Reply {
    Result(Box<RawValue>),
    Error(ErrorObject),
    Failed(ClientError),
}

pub(crate) struct PendingEntry {
    pub(crate) reply: oneshot::Sender<Reply>,
    pub(crate) progress: Option<Arc<ProgressState>>,
    /// The server may be told to stop working on it (every request but `initialize`).
    pub(crate) cancellable: bool,
    /// The host's tag of the request ([`RequestOptions::tag`](crate::RequestOptions::tag)).
    pub(crate) tag: Option<u64>,
}

/// Pending requests by id, hashed with foldhash: the ids are our own, and every request inserts
/// and removes one.
pub(crate) type PendingEntries = HashMap<i64, PendingEntry, foldhash::fast::RandomState>;

/// Pending requests and the closed state live under one lock so that no request can be inserted
/// after the table was drained.
#[derive(Default)]
pub(crate) struct PendingTable {
    pub(crate) entries: PendingEntries,
    pub(crate) closed: Option<ClientError>,
}

type CloseCallback = Box<dyn FnOnce(&ClientError) + Send>;

/// State shared by every handle of one session and its reader.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) sender: Box<dyn TransportSender>,
    /// What every message of a stateless-era session carries (its envelope, and its headers over
    /// HTTP); unset in the initialize era.
    stateless: std::sync::OnceLock<StatelessWire>,
    /// The tools the last `tools/list` left out because their definitions do not decode.
    pub(crate) undecodable_tools: Mutex<Vec<crate::RejectedTool>>,
    pub(crate) pending: Mutex<PendingTable>,
    next_id: AtomicI64,
    pub(crate) notifications: broadcast::Sender<ServerNotification>,
    handler: Arc<dyn ClientHandler>,
    /// Told how each request ended (see [`RequestObserver`](crate::RequestObserver)).
    pub(crate) observer: Option<Arc<dyn crate::RequestObserver>>,
    /// The server's requests being handled, by id; the number tells one handling task from a later
    /// one under the same id.
    server_requests: Mutex<HashMap<RequestId, (u64, AbortHandle)>>,
    next_server_request: AtomicU64,
    /// Refusals of server requests, sent in order by one task (bounded).
    refusals: mpsc::Sender<Response>,
    refusals_rx: Mutex<Option<mpsc::Receiver<Response>>>,
    /// Messages the transport dropped without a readable reply id, and why the last one was.
    unidentified: Mutex<(u64, Option<String>)>,
    close_callbacks: Mutex<Vec<CloseCallback>>,
    closed_tx: watch::Sender<bool>,
    /// The reader task and the refusal sender.
    tasks: Mutex<Vec<AbortHandle>>,
    /// Cancellations the server is owed (a request whose future was dropped): each is sent
    /// before any later request, and stays queued until it was sent.
    owed_cancellations: Mutex<VecDeque<(i64, String)>>,
    /// How many are queued; read without the lock on every request.
    owed_count: AtomicUsize,
    /// Held while owed cancellations are sent, so they go out once and in order.
    sending_owed: tokio::sync::Mutex<()>,
    /// The progress of calls that became tasks, by the call's token (its request id): the
    /// token outlives the call's request (see [`Shared::register_task_progress`]).
    task_progress: Mutex<HashMap<i64, Arc<ProgressState>>>,
    /// The tasks whose calls are waiting for them (see `crate::tasks`): cancelled on the server
    /// by [`Client::cancel_all`](crate::Client::cancel_all) along with the pending requests.
    pub(crate) followed_tasks: Mutex<HashMap<String, crate::CancelHandle>>,
    /// Its peer, protocol version and clock, for telemetry.
    #[cfg(feature = "otel")]
    pub(crate) telemetry: crate::telemetry::SessionTelemetry,
}

/// Keeps a task's progress token routed to its caller until dropped.
pub(crate) struct TaskProgressRegistration {
    shared: Arc<Shared>,
    token: i64,
}

impl Drop for TaskProgressRegistration {
    fn drop(&mut self) {
        lock(&self.shared.task_progress).remove(&self.token);
    }
}

/// Locks a mutex, recovering from poisoning (no invariant of ours spans a panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Records the tools a listing left out because they do not decode: `whole` for a whole
    /// list (which replaces the last one's), else one page (added to them).
    pub(crate) fn record_undecodable_tools(&self, left_out: Vec<crate::listing::LeftOut>, whole: bool) {
        let rejected = left_out.into_iter().map(|item| crate::RejectedTool {
            tool: item.name,
            problem: crate::ToolProblem::Undecodable(item.error),
        });
        let mut known = lock(&self.undecodable_tools);
        if whole {
            known.clear();
        }
        known.extend(rejected);
    }

    pub(crate) fn new(
        name: String,
        sender: Box<dyn TransportSender>,
        handler: Arc<dyn ClientHandler>,
        observer: Option<Arc<dyn crate::RequestObserver>>,
    ) -> Arc<Shared> {
        let (notifications, _) = broadcast::channel(NOTIFICATION_BUFFER);
        let (refusals, refusals_rx) = mpsc::channel(MAX_QUEUED_REFUSALS);
        Arc::new(Shared {
            name,
            sender,
            stateless: std::sync::OnceLock::new(),
            undecodable_tools: Mutex::default(),
            pending: Mutex::default(),
            next_id: AtomicI64::new(0),
            notifications,
            handler,
            observer,
            server_requests: Mutex::default(),
            next_server_request: AtomicU64::new(0),
            refusals,
            refusals_rx: Mutex::new(Some(refusals_rx)),
            unidentified: Mutex::default(),
            close_callbacks: Mutex::default(),
            closed_tx: watch::channel(false).0,
            tasks: Mutex::default(),
            owed_cancellations: Mutex::default(),
            owed_count: AtomicUsize::new(0),
            sending_owed: tokio::sync::Mutex::new(()),
            task_progress: Mutex::default(),
            followed_tasks: Mutex::default(),
            #[cfg(feature = "otel")]
            telemetry: crate::telemetry::SessionTelemetry::new(),
        })
    }

    /// The handler of the server's requests (and of the stateless era's input requests).
    pub(crate) fn handler(&self) -> &dyn ClientHandler {
        &*self.handler
    }

    /// Makes every later message carry what `wire` says (the stateless era's envelope and
    /// headers).
    pub(crate) fn set_stateless(&self, wire: StatelessWire) {
        let _ = self.stateless.set(wire);
    }

    /// What every message carries, in the stateless era.
    pub(crate) fn stateless(&self) -> Option<&StatelessWire> {
        self.stateless.get()
    }

    /// Starts the reader task and the refusal sender. Both hold only a weak reference, so
    /// dropping every handle of the session ends them (and with them the transport).
    pub(crate) fn start_reader(self: &Arc<Self>, receiver: Box<dyn TransportReceiver>) {
        let reader = tokio::spawn(read_loop(Arc::downgrade(self), receiver));
        let mut tasks = lock(&self.tasks);
        tasks.push(reader.abort_handle());
        if let Some(refusals) = lock(&self.refusals_rx).take() {
            tasks.push(tokio::spawn(send_refusals(Arc::downgrade(self), refusals)).abort_handle());
        }
    }

    /// Routes the progress of token `token` (a call that becomes a task) to `state` once the
    /// call's request is answered, until the registration is dropped.
    pub(crate) fn register_task_progress(
        self: &Arc<Self>,
        token: i64,
        state: Arc<ProgressState>,
    ) -> TaskProgressRegistration {
        lock(&self.task_progress).insert(token, state);
        TaskProgressRegistration {
            shared: Arc::clone(self),
            token,
        }
    }

    pub(crate) fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a pending request, unless the session is closed.
    pub(crate) fn register(&self, id: i64, entry: PendingEntry) -> Result<(), ClientError> {
        let mut table = lock(&self.pending);
        if let Some(reason) = &table.closed {
            return Err(reason.clone());
        }
        table.entries.insert(id, entry);
        Ok(())
    }

    /// Forgets a pending request (timed out, cancelled, or failed to send).
    pub(crate) fn forget(&self, id: i64) -> bool {
        lock(&self.pending).entries.remove(&id).is_some()
    }

    /// Fails every pending request the server may be told to stop working on with
    /// [`ClientError::Cancelled`]; their ids.
    pub(crate) fn cancel_pending_requests(&self, reason: &str) -> Vec<i64> {
        let cancelled: PendingEntries = {
            let mut table = lock(&self.pending);
            let (cancelled, kept) = std::mem::take(&mut table.entries)
                .into_iter()
                .partition(|(_, entry)| entry.cancellable);
            table.entries = kept;
            cancelled
        };
        let error = ClientError::Cancelled {
            reason: reason.to_owned(),
        };
        cancelled
            .into_iter()
            .map(|(id, entry)| {
                let _ = entry.reply.send(Reply::Failed(error.clone()));
                id
            })
            .collect()
    }

    /// The ids of the pending requests the server may be told to stop working on.
    pub(crate) fn cancellable_ids(&self) -> Vec<i64> {
        lock(&self.pending)
            .entries
            .iter()
            .filter(|(_, entry)| entry.cancellable)
            .map(|(id, _)| *id)
            .collect()
    }

    /// How many messages the transport has dropped without a readable reply id so far.
    pub(crate) fn unidentified_count(&self) -> u64 {
        lock(&self.unidentified).0
    }

    /// The messages dropped without a readable reply id since the count was `before`.
    pub(crate) fn unidentified_since(&self, before: u64) -> Option<Box<UnidentifiedDrops>> {
        let unidentified = lock(&self.unidentified);
        let count = unidentified.0 - before;
        (count > 0).then(|| {
            Box::new(UnidentifiedDrops {
                count,
                last: unidentified.1.clone().unwrap_or_default(),
            })
        })
    }

    /// One message of the server was dropped (`error`, not terminal): the request it answered
    /// fails at once when its id is known; otherwise the drop is remembered for the requests
    /// that time out meanwhile.
    fn on_dropped(&self, error: TransportError) {
        let Some(id) = error.reply_to().cloned() else {
            tracing::warn!(server = %self.name, "skipped a bad message from the server: {}", error_chain(&error));
            if let TransportError::DroppedReply { id: None, reason } = &error {
                let mut unidentified = lock(&self.unidentified);
                unidentified.0 += 1;
                unidentified.1 = Some(error_chain(&**reason));
            }
            return;
        };
        let entry = our_id(&id).and_then(|id| lock(&self.pending).entries.remove(&id));
        match entry {
            Some(entry) => {
                let _ = entry.reply.send(Reply::Failed(ClientError::Transport(error)));
            }
            None => tracing::warn!(server = %self.name, "skipped a bad message from the server: {error}"),
        }
    }

    pub(crate) fn closed_reason(&self) -> Option<ClientError> {
        lock(&self.pending).closed.clone()
    }

    /// Waits until the session is closed.
    pub(crate) async fn wait_closed(&self) {
        let mut rx = self.closed_tx.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we borrow it.
        let _ = rx.wait_for(|closed| *closed).await;
    }

    /// Adds a callback run once when the session closes (at once if it already has).
    pub(crate) fn on_close(&self, callback: CloseCallback) {
        let reason = {
            let mut callbacks = lock(&self.close_callbacks);
            match self.closed_reason() {
                Some(reason) => reason,
                None => {
                    callbacks.push(callback);
                    return;
                }
            }
        };
        callback(&reason);
    }

    /// Marks the session closed: every pending request fails at once with `reason`, the close
    /// callbacks run, and later requests fail immediately. Only the first reason counts.
    pub(crate) fn fail_all(&self, reason: &ClientError) {
        let drained = {
            let mut table = lock(&self.pending);
            if table.closed.is_some() {
                return;
            }
            table.closed = Some(reason.clone());
            std::mem::take(&mut table.entries)
        };
        for (_, entry) in drained {
            let _ = entry.reply.send(Reply::Failed(reason.clone()));
        }
        for (_, (_, task)) in lock(&self.server_requests).drain() {
            task.abort();
        }
        #[cfg(feature = "otel")]
        self.telemetry.ended(self, reason);
        let callbacks = std::mem::take(&mut *lock(&self.close_callbacks));
        for callback in callbacks {
            callback(reason);
        }
        self.closed_tx.send_replace(true);
    }

    /// Records that the server is owed a `notifications/cancelled` for request `id`.
    pub(crate) fn owe_cancellation(&self, id: i64, reason: String) {
        lock(&self.owed_cancellations).push_back((id, reason));
        self.owed_count.fetch_add(1, Ordering::AcqRel);
    }

    /// Owes the server a `notifications/cancelled` for request `id` and sends it on a task of
    /// its own (when there is a runtime); the session's next request sends it first in any case.
    pub(crate) fn cancel_in_background(self: &Arc<Self>, id: i64, reason: String) {
        self.owe_cancellation(id, reason);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let shared = Arc::clone(self);
            runtime.spawn(async move { shared.send_owed_cancellations().await });
        }
    }

    /// Whether a cancellation is owed to the server (or being sent).
    pub(crate) fn owes_cancellations(&self) -> bool {
        self.owed_count.load(Ordering::Acquire) > 0
    }

    /// Sends every owed cancellation, in order, each bounded to 1 s; returns when those owed
    /// when it was called have gone out (or failed to). One sender at a time: a caller that comes
    /// while another sends waits for it. An entry leaves the queue only once its send ended, so
    /// a sender that is dropped midway leaves it for the next.
    pub(crate) async fn send_owed_cancellations(&self) {
        if !self.owes_cancellations() {
            return;
        }
        let _sending = self.sending_owed.lock().await;
        loop {
            let Some((id, reason)) = lock(&self.owed_cancellations).front().cloned() else {
                return;
            };
            let send = crate::request::send_cancelled(self, id, &reason);
            match tokio::time::timeout(std::time::Duration::from_secs(1), send).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(server = %self.name, "could not cancel request {id}: {e}"),
                Err(_) => tracing::debug!(server = %self.name, "could not cancel request {id} within 1 s"),
            }
            lock(&self.owed_cancellations).pop_front();
            self.owed_count.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Sends a notification, best effort (used for `notifications/cancelled`).
    pub(crate) async fn notify_raw(&self, method: &'static str, params: &serde_json::Value) -> Result<(), ClientError> {
        let mut line = Vec::with_capacity(96);
        plexus_jsonrpc::encode_notification(&mut line, method, Some(params)).map_err(|e| {
            ClientError::InvalidParams {
                method: method.to_owned(),
                source: e.into(),
            }
        })?;
        let mut message = OutboundMessage::from_line(line, OutboundKind::Notification { method: method.into() });
        if let Some(wire) = self.stateless() {
            message = message.with_headers(wire.notification_headers(method));
        }
        // A notification has no reply: nothing comes back.
        self.send(message).await.map(drop).map_err(ClientError::from)
    }

    /// Sends one message through the transport, noting it for `tracing` (see [`crate::trace`]).
    pub(crate) fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Option<Response>, TransportError>> {
        crate::trace::sent(&self.name, &message);
        self.sender.send(message)
    }

    /// Completes the pending request a response answers. The one way a reply reaches its caller,
    /// whether the reader received it or the transport gave it back from `send`.
    pub(crate) fn complete(&self, response: Response) {
        let Some(id) = response.id.as_ref().and_then(our_id) else {
            if let Err(error) = &response.outcome {
                tracing::warn!(server = %self.name, "the server reported an error without a request id: {error}");
            }
            return;
        };
        let entry = lock(&self.pending).entries.remove(&id);
        let Some(entry) = entry else {
            tracing::debug!(server = %self.name, id, "a response for a request that is no longer pending (timed out or cancelled)");
            return;
        };
        let reply = match response.outcome {
            Ok(result) => Reply::Result(result),
            Err(error) => Reply::Error(error),
        };
        let _ = entry.reply.send(reply);
    }

    fn on_notification(&self, notification: Notification) {
        match notification.method.as_ref() {
            methods::PROGRESS => self.on_progress(notification.params.as_deref()),
            methods::CANCELLED => {
                let id = notification
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<plexus_protocol::CancelledNotificationParams>(p.get()).ok())
                    .and_then(|p| p.request_id);
                if let Some(id) = &id
                    && let Some((_, task)) = lock(&self.server_requests).remove(id)
                {
                    task.abort();
                }
                // In the stateless era the server cancels only a subscription it ends (stdio).
                if let Some(RequestId::Number(id)) = id
                    && self.stateless().is_some_and(|wire| wire.listening().is_live(id))
                {
                    self.complete(Response {
                        id: Some(RequestId::Number(id)),
                        outcome: Err(ErrorObject::new(
                            ErrorCode::INTERNAL_ERROR,
                            "the server ended the subscription",
                        )),
                    });
                }
            }
            methods::SUBSCRIPTIONS_ACKNOWLEDGED => {
                if let Some(wire) = self.stateless() {
                    wire.listening()
                        .on_acknowledged(&self.name, notification.params.as_deref());
                }
            }
            _ if self
                .stateless()
                .is_some_and(|wire| !wire.listening().admits(notification.params.as_deref())) =>
            {
                tracing::debug!(server = %self.name, "dropped a {} of a subscription that has ended", notification.method);
            }
            _ => {
                let parsed = ServerNotification::parse(notification);
                if let ServerNotification::LogMessage(params) = &parsed {
                    crate::trace::server_log(&self.name, params);
                }
                // No subscriber is fine: notifications are then dropped.
                let _ = self.notifications.send(parsed);
            }
        }
    }

    fn on_progress(&self, params: Option<&RawValue>) {
        let Some(params) =
            params.and_then(|p| serde_json::from_str::<plexus_protocol::ProgressNotificationParams>(p.get()).ok())
        else {
            tracing::debug!(server = %self.name, "ignored a malformed progress notification");
            return;
        };
        let token = match &params.progress_token {
            plexus_protocol::ProgressToken::Number(n) => Some(*n),
            plexus_protocol::ProgressToken::String(s) => s.parse().ok(),
        };
        let state = token.and_then(|t| {
            let pending = lock(&self.pending).entries.get(&t).and_then(|e| e.progress.clone());
            pending.or_else(|| lock(&self.task_progress).get(&t).cloned())
        });
        match state {
            Some(state) => state.record(params, Instant::now()),
            None => tracing::debug!(server = %self.name, "progress for a request that is not pending"),
        }
    }

    /// The host's tag of pending request `id` (see [`RequestOptions::tag`](crate::RequestOptions::tag)).
    fn tag_of(&self, id: &RequestId) -> Option<u64> {
        let id = our_id(id)?;
        lock(&self.pending).entries.get(&id).and_then(|entry| entry.tag)
    }

    fn on_request(self: &Arc<Self>, request: Request, related_request: Option<RequestId>) {
        let tag = related_request.as_ref().and_then(|id| self.tag_of(id));
        // Register under the lock before the task can finish and remove itself.
        let mut running = lock(&self.server_requests);
        let refusal = if running.contains_key(&request.id) {
            Some(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "the request id {} is already in use by a request the client is handling",
                    request.id
                ),
            ))
        } else if running.len() >= MAX_CONCURRENT_SERVER_REQUESTS {
            Some(ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the client is already handling {MAX_CONCURRENT_SERVER_REQUESTS} requests of this server"),
            ))
        } else {
            None
        };
        if let Some(error) = refusal {
            drop(running);
            self.refuse(Response::error(Some(request.id), error));
            return;
        }
        let id = request.id.clone();
        let number = self.next_server_request.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::clone(self);
        let handler = Arc::clone(&self.handler);
        let task = tokio::spawn(async move {
            let context = ServerRequestContext {
                server: shared.name.clone(),
                request_id: request.id.clone(),
                related_request,
                tag,
            };
            let outcome =
                crate::handler::dispatch(&*handler, request.method.as_ref(), request.params.as_deref(), context).await;
            let response = match outcome {
                Ok(result) => Response::success(request.id.clone(), result),
                Err(error) => Response::error(Some(request.id.clone()), error),
            };
            {
                let mut running = lock(&shared.server_requests);
                if running.get(&request.id).is_some_and(|(n, _)| *n == number) {
                    running.remove(&request.id);
                }
            }
            if let Err(e) = shared
                .send(OutboundMessage::from_message(&Message::Response(response)))
                .await
            {
                tracing::debug!(server = %shared.name, "could not answer the server's {}: {e}", request.method);
            }
        });
        running.insert(id, (number, task.abort_handle()));
    }

    /// Queues the refusal of a server request for the refusal sender; when too many wait, this
    /// one is dropped (the server floods the client).
    fn refuse(&self, response: Response) {
        if self.refusals.try_send(response).is_err() {
            tracing::debug!(server = %self.name, "too many refusals of server requests wait to be sent; one was dropped");
        }
    }
}

/// One of our request ids (we send integers; a server that stringifies them is accepted).
fn our_id(id: &RequestId) -> Option<i64> {
    match id {
        RequestId::Number(n) => Some(*n),
        RequestId::String(s) => s.parse().ok(),
    }
}

/// Sends the queued refusals of server requests, one at a time, until the session ends.
async fn send_refusals(shared: Weak<Shared>, mut refusals: mpsc::Receiver<Response>) {
    while let Some(response) = refusals.recv().await {
        let Some(shared) = shared.upgrade() else { return };
        let message = OutboundMessage::from_message(&Message::Response(response));
        if let Err(e) = shared.send(message).await {
            tracing::debug!(server = %shared.name, "could not refuse a request of the server: {e}");
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
        for (_, (_, task)) in lock(&self.server_requests).drain() {
            task.abort();
        }
    }
}

async fn read_loop(shared: Weak<Shared>, mut receiver: Box<dyn TransportReceiver>) {
    loop {
        let received = receiver.recv_related().await;
        let Some(shared) = shared.upgrade() else { return };
        if let Ok(received) = &received {
            crate::trace::received(&shared.name, &received.message);
        }
        match received {
            Ok(Received {
                message,
                related_request,
            }) => match message {
                Message::Response(response) => shared.complete(response),
                Message::Notification(notification) => shared.on_notification(notification),
                Message::Request(request) => shared.on_request(request, related_request),
            },
            Err(e) if !e.is_terminal() => shared.on_dropped(e),
            Err(e) => {
                tracing::debug!(server = %shared.name, "the transport closed: {e}");
                shared.fail_all(&ClientError::Transport(e));
                return;
            }
        }
    }
}
