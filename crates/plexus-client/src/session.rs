//! The engine of a session: the pending-request table, the reader that completes callers
//! directly, and the dispatch of server requests and notifications.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use plexus_jsonrpc::{ErrorCode, ErrorObject, Message, Notification, RawValue, Request, RequestId, Response};
use plexus_protocol::methods;
use plexus_transport::{OutboundKind, OutboundMessage, TransportReceiver, TransportSender};
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::AbortHandle;

use crate::ClientError;
use crate::handler::{ClientHandler, ServerRequestContext};
use crate::notifications::ServerNotification;
use crate::progress::ProgressState;

/// At most this many server-to-client requests are handled at once; more are refused.
pub(crate) const MAX_CONCURRENT_SERVER_REQUESTS: usize = 64;
/// How many notifications a slow subscriber may fall behind before it misses some.
pub(crate) const NOTIFICATION_BUFFER: usize = 256;

/// What a pending request receives.
pub(crate) enum Reply {
    Result(Box<RawValue>),
    Error(ErrorObject),
    Failed(ClientError),
}

pub(crate) struct PendingEntry {
    pub(crate) reply: oneshot::Sender<Reply>,
    pub(crate) progress: Option<Arc<ProgressState>>,
}

/// Pending requests and the closed state live under one lock so that no request can be inserted
/// after the table was drained.
#[derive(Default)]
pub(crate) struct PendingTable {
    pub(crate) entries: HashMap<i64, PendingEntry>,
    pub(crate) closed: Option<ClientError>,
}

type CloseCallback = Box<dyn FnOnce(&ClientError) + Send>;

/// State shared by every handle of one session and its reader.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) sender: Box<dyn TransportSender>,
    pub(crate) pending: Mutex<PendingTable>,
    next_id: AtomicI64,
    pub(crate) notifications: broadcast::Sender<ServerNotification>,
    handler: Arc<dyn ClientHandler>,
    server_requests: Mutex<HashMap<RequestId, AbortHandle>>,
    server_request_count: AtomicUsize,
    close_callbacks: Mutex<Vec<CloseCallback>>,
    closed_tx: watch::Sender<bool>,
    reader: Mutex<Option<AbortHandle>>,
}

/// Locks a mutex, recovering from poisoning (no invariant of ours spans a panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(name: String, sender: Box<dyn TransportSender>, handler: Arc<dyn ClientHandler>) -> Arc<Shared> {
        let (notifications, _) = broadcast::channel(NOTIFICATION_BUFFER);
        Arc::new(Shared {
            name,
            sender,
            pending: Mutex::default(),
            next_id: AtomicI64::new(0),
            notifications,
            handler,
            server_requests: Mutex::default(),
            server_request_count: AtomicUsize::new(0),
            close_callbacks: Mutex::default(),
            closed_tx: watch::channel(false).0,
            reader: Mutex::new(None),
        })
    }

    /// Starts the reader task. It holds only a weak reference, so dropping every handle of the
    /// session ends it (and with it the transport).
    pub(crate) fn start_reader(self: &Arc<Self>, receiver: Box<dyn TransportReceiver>) {
        let task = tokio::spawn(read_loop(Arc::downgrade(self), receiver));
        *lock(&self.reader) = Some(task.abort_handle());
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
        for (_, task) in lock(&self.server_requests).drain() {
            task.abort();
        }
        let callbacks = std::mem::take(&mut *lock(&self.close_callbacks));
        for callback in callbacks {
            callback(reason);
        }
        self.closed_tx.send_replace(true);
    }

    /// Sends a notification, best effort (used for `notifications/cancelled`).
    pub(crate) async fn notify_raw(&self, method: &'static str, params: &serde_json::Value) -> Result<(), ClientError> {
        let mut line = Vec::with_capacity(96);
        plexus_jsonrpc::encode_notification(&mut line, method, Some(params)).map_err(|e| {
            ClientError::InvalidParams {
                method: method.to_owned(),
                reason: e.to_string(),
            }
        })?;
        let message = OutboundMessage::from_line(line, OutboundKind::Notification { method: method.into() });
        // A notification has no reply: nothing comes back.
        self.sender.send(message).await.map(drop).map_err(ClientError::from)
    }

    /// Completes the pending request a response answers. The one way a reply reaches its caller,
    /// whether the reader received it or the transport gave it back from `send`.
    pub(crate) fn complete(&self, response: Response) {
        let id = match &response.id {
            Some(RequestId::Number(n)) => Some(*n),
            // Lenient: a server that stringifies our integer ids.
            Some(RequestId::String(s)) => s.parse().ok(),
            None => None,
        };
        let Some(id) = id else {
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
                if let Some(id) = id
                    && let Some(task) = lock(&self.server_requests).remove(&id)
                {
                    task.abort();
                    self.server_request_count.fetch_sub(1, Ordering::Relaxed);
                }
            }
            _ => {
                let parsed = ServerNotification::parse(notification);
                if let ServerNotification::LogMessage(params) = &parsed {
                    tracing::debug!(server = %self.name, level = ?params.level, logger = ?params.logger, "server log: {}", params.data);
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
        let state = token.and_then(|t| lock(&self.pending).entries.get(&t).and_then(|e| e.progress.clone()));
        match state {
            Some(state) => state.record(params, Instant::now()),
            None => tracing::debug!(server = %self.name, "progress for a request that is not pending"),
        }
    }

    fn on_request(self: &Arc<Self>, request: Request) {
        if self.server_request_count.fetch_add(1, Ordering::Relaxed) >= MAX_CONCURRENT_SERVER_REQUESTS {
            self.server_request_count.fetch_sub(1, Ordering::Relaxed);
            let error = ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the client is already handling {MAX_CONCURRENT_SERVER_REQUESTS} requests of this server"),
            );
            self.spawn_reply(Response::error(Some(request.id), error));
            return;
        }
        let id = request.id.clone();
        let shared = Arc::clone(self);
        let handler = Arc::clone(&self.handler);
        // Register under the lock before the task can finish and remove itself.
        let mut running = lock(&self.server_requests);
        let task = tokio::spawn(async move {
            let context = ServerRequestContext {
                server: shared.name.clone(),
                request_id: request.id.clone(),
            };
            let outcome =
                crate::handler::dispatch(&*handler, request.method.as_ref(), request.params.as_deref(), context).await;
            let response = match outcome {
                Ok(result) => Response::success(request.id.clone(), result),
                Err(error) => Response::error(Some(request.id.clone()), error),
            };
            if lock(&shared.server_requests).remove(&request.id).is_some() {
                shared.server_request_count.fetch_sub(1, Ordering::Relaxed);
            }
            if let Err(e) = shared
                .sender
                .send(OutboundMessage::from_message(&Message::Response(response)))
                .await
            {
                tracing::debug!(server = %shared.name, "could not answer the server's {}: {e}", request.method);
            }
        });
        running.insert(id, task.abort_handle());
    }

    fn spawn_reply(self: &Arc<Self>, response: Response) {
        let shared = Arc::clone(self);
        tokio::spawn(async move {
            let _ = shared
                .sender
                .send(OutboundMessage::from_message(&Message::Response(response)))
                .await;
        });
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(reader) = lock(&self.reader).take() {
            reader.abort();
        }
        for (_, task) in lock(&self.server_requests).drain() {
            task.abort();
        }
    }
}

async fn read_loop(shared: Weak<Shared>, mut receiver: Box<dyn TransportReceiver>) {
    loop {
        let received = receiver.recv().await;
        let Some(shared) = shared.upgrade() else { return };
        match received {
            Ok(Message::Response(response)) => shared.complete(response),
            Ok(Message::Notification(notification)) => shared.on_notification(notification),
            Ok(Message::Request(request)) => shared.on_request(request),
            Err(e) if !e.is_terminal() => {
                tracing::warn!(server = %shared.name, "skipped a bad message from the server: {e}");
            }
            Err(e) => {
                tracing::debug!(server = %shared.name, "the transport closed: {e}");
                shared.fail_all(&ClientError::Transport(e));
                return;
            }
        }
    }
}
