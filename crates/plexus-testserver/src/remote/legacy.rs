//! The legacy HTTP+SSE transport (2024-11-05): a GET opens an SSE stream whose first event,
//! `endpoint`, names where to POST messages (`/messages?sessionId=…`); every POST is answered 202
//! and everything the server sends arrives, in order, as `message` events on that stream. The
//! session lives as long as its stream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header;
use hyper::{Request, Response, StatusCode};
use plexus_jsonrpc::{ErrorCode, FrameError, Message};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::connection::Connection;
use super::http::{self, Body, EVENT_STREAM, accepts};
use super::options::{EndpointOptions, MESSAGES_PATH, SessionOptions};
use super::{App, MAX_SESSIONS, WeakApp, new_session_id};
use crate::oauth::Authorized;
use crate::server::{Emitted, OUTBOX_CAPACITY, Output, Session, frame_error_line, lock};

/// How many events may wait for a slow client before the server waits for it.
const EVENT_QUEUE: usize = 256;

/// The legacy transport: its sessions by id.
pub(crate) struct Legacy {
    endpoint_origin: Option<String>,
    endpoint_absolute: bool,
    drop_sse_after: Option<u64>,
    expire_session_after: Option<u64>,
    sessions: Mutex<HashMap<String, Arc<LegacySession>>>,
}

struct LegacySession {
    mcp: Arc<Session>,
    /// Where the POST handler queues what handling a message produced, in order with the
    /// background outputs.
    outbox: mpsc::Sender<Emitted>,
    requests_seen: AtomicU64,
    pump: Mutex<Option<AbortHandle>>,
}

/// The body of a legacy SSE response. Dropping it (the client went away, or the stream ended)
/// ends the session.
pub(crate) struct ChannelReader {
    frames: mpsc::Receiver<Bytes>,
    _end: EndOnDrop,
}

impl ChannelReader {
    /// The next bytes to write; `None` once the session's pump ended.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        self.frames.poll_recv(cx)
    }
}

struct EndOnDrop {
    app: WeakApp,
    id: String,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if let Some(app) = self.app.upgrade() {
            if let Some(legacy) = app.legacy() {
                legacy.end_session(&app, &self.id, "closed");
            }
        }
    }
}

/// One `message` event (no id: such streams are not resumed).
pub(crate) fn message_event(line: &[u8]) -> Bytes {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut event = Vec::with_capacity(line.len() + 24);
    event.extend_from_slice(b"event: message\n");
    for piece in line.split(|b| *b == b'\n') {
        event.extend_from_slice(b"data: ");
        event.extend_from_slice(piece);
        event.push(b'\n');
    }
    event.push(b'\n');
    Bytes::from(event)
}

impl Legacy {
    pub(crate) fn new(endpoint: &EndpointOptions, sessions: &SessionOptions) -> Self {
        Legacy {
            endpoint_origin: endpoint.endpoint_origin.clone(),
            endpoint_absolute: endpoint.endpoint_absolute,
            drop_sse_after: sessions.drop_sse_after,
            expire_session_after: sessions.expire_session_after,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// GET: a new session and its event stream, which starts with the `endpoint` event.
    pub(crate) fn open_stream(&self, app: &Arc<App>, request: &Request<Incoming>) -> Response<Body> {
        let headers = request.headers();
        if headers.contains_key(header::ACCEPT)
            && !(accepts(headers, EVENT_STREAM) || accepts(headers, "*/*") || accepts(headers, "text/*"))
        {
            return http::text(
                StatusCode::NOT_ACCEPTABLE,
                "this URL serves text/event-stream, which the Accept header does not allow",
            );
        }
        let id = match new_session_id() {
            Ok(id) => id,
            Err(response) => return *response,
        };
        let (outbox, emitted) = mpsc::channel(OUTBOX_CAPACITY);
        let session = Arc::new(LegacySession {
            mcp: Session::new(Arc::clone(app.server()), outbox.clone(), Some(id.clone())),
            outbox,
            requests_seen: AtomicU64::new(0),
            pump: Mutex::new(None),
        });
        {
            let mut sessions = lock(&self.sessions);
            if sessions.len() >= MAX_SESSIONS {
                return http::text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("{MAX_SESSIONS} sessions are open; close a stream first"),
                );
            }
            sessions.insert(id.clone(), Arc::clone(&session));
        }
        app.events()
            .record(&json!({"event": "session-start", "session": id, "transport": "sse"}));
        let endpoint = match (&self.endpoint_origin, self.endpoint_absolute) {
            (Some(origin), _) => format!("{origin}{MESSAGES_PATH}?sessionId={id}"),
            (None, true) => format!("http://{}{MESSAGES_PATH}?sessionId={id}", app.addr()),
            (None, false) => format!("{MESSAGES_PATH}?sessionId={id}"),
        };
        let (frames_tx, frames) = mpsc::channel(EVENT_QUEUE);
        let pump = tokio::spawn(pump(
            Arc::downgrade(app),
            id.clone(),
            emitted,
            frames_tx,
            endpoint,
            self.drop_sse_after,
        ));
        *lock(&session.pump) = Some(pump.abort_handle());
        http::event_stream(Body::Channel(ChannelReader {
            frames,
            _end: EndOnDrop {
                app: Arc::downgrade(app),
                id,
            },
        }))
    }

    /// POST /messages?sessionId=…: one JSON-RPC message, answered 202; what it produces goes to
    /// the session's stream.
    pub(crate) async fn post_message(
        &self,
        app: &Arc<App>,
        connection: &Connection,
        request: Request<Incoming>,
    ) -> Response<Body> {
        if let Some(response) = app.request_fault(connection, true).await {
            return response;
        }
        let id = request
            .uri()
            .query()
            .unwrap_or("")
            .split('&')
            .find_map(|pair| pair.strip_prefix("sessionId="))
            .map(str::to_owned);
        let Some(id) = id else {
            return http::text(StatusCode::BAD_REQUEST, "the sessionId query parameter is required");
        };
        let Some(session) = lock(&self.sessions).get(&id).cloned() else {
            return session_not_found(&id);
        };
        if !http::is_json(request.headers()) {
            return http::text(StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be application/json");
        }
        let authorized = request.extensions().get::<Authorized>().cloned();
        let body = match http::read_body(request, app.remote().max_body_bytes).await {
            Ok(body) => body,
            Err(response) => return *response,
        };
        let message = match Message::from_slice(&body) {
            Ok(message) => message,
            Err(e) => return http::json(StatusCode::BAD_REQUEST, frame_error_line(&FrameError::Decode(e))),
        };
        if let Some(refusal) = app.oauth_refusal(authorized.as_ref(), &message) {
            return refusal;
        }
        if matches!(message, Message::Request(_)) {
            let seen = session.requests_seen.fetch_add(1, Ordering::Relaxed) + 1;
            if self.expire_session_after.is_some_and(|limit| seen > limit) {
                app.events()
                    .record(&json!({"event": "fault", "fault": "expire-session", "session": id, "after": seen - 1}));
                self.end_session(app, &id, "expired");
                return session_not_found(&id);
            }
        }
        let mut outputs = Vec::new();
        session.mcp.handle(message, &mut outputs);
        for output in outputs {
            if session.outbox.send(Emitted { origin: None, output }).await.is_err() {
                return session_not_found(&id);
            }
        }
        http::empty(StatusCode::ACCEPTED)
    }

    /// Ends every session.
    pub(crate) fn close_all(&self, app: &App) {
        let ids: Vec<String> = lock(&self.sessions).keys().cloned().collect();
        for id in ids {
            self.end_session(app, &id, "shutdown");
        }
    }

    /// Forgets session `id`, aborts its work and ends its stream.
    fn end_session(&self, app: &App, id: &str, reason: &str) {
        let Some(session) = lock(&self.sessions).remove(id) else {
            return;
        };
        session.mcp.abort_all();
        if let Some(pump) = lock(&session.pump).take() {
            pump.abort();
        }
        app.events()
            .record(&json!({"event": "session-end", "session": id, "reason": reason}));
    }
}

/// 404 with a JSON-RPC error -32001.
fn session_not_found(id: &str) -> Response<Body> {
    http::jsonrpc_error(
        StatusCode::NOT_FOUND,
        ErrorCode::SESSION_NOT_FOUND,
        format!("Session not found: {id}"),
    )
}

/// Writes the endpoint event, then every output of the session as `message` events, in order,
/// until the client goes away, the session ends, or `--drop-sse-after` ends the stream.
async fn pump(
    app: WeakApp,
    id: String,
    mut emitted: mpsc::Receiver<Emitted>,
    frames: mpsc::Sender<Bytes>,
    endpoint: String,
    drop_after: Option<u64>,
) {
    if frames
        .send(Bytes::from(format!("event: endpoint\ndata: {endpoint}\n\n")))
        .await
        .is_err()
    {
        return;
    }
    let mut sent = 1u64;
    loop {
        if drop_after.is_some_and(|limit| sent >= limit) {
            if let Some(app) = app.upgrade() {
                app.events()
                    .record(&json!({"event": "fault", "fault": "drop-sse", "session": id, "after": sent}));
                if let Some(legacy) = app.legacy() {
                    legacy.end_session(&app, &id, "dropped");
                }
            }
            return;
        }
        let Some(Emitted { output, .. }) = emitted.recv().await else {
            return;
        };
        let delivered = match output {
            Output::Message(line) | Output::Response(line) | Output::SessionNotification(line) | Output::Raw(line) => {
                frames.send(message_event(&line)).await.is_ok()
            }
            Output::Drip { line, chunk, delay } => {
                let event = message_event(&line);
                let mut delivered = true;
                for (i, piece) in event.chunks(chunk).enumerate() {
                    if i > 0 {
                        tokio::time::sleep(delay).await;
                    }
                    delivered = frames.send(event.slice_ref(piece)).await.is_ok();
                    if !delivered {
                        break;
                    }
                }
                delivered
            }
            Output::Exit { code, reason } => {
                if let Some(app) = app.upgrade() {
                    let queue = frames.clone();
                    app.crash_when_drained(move || queue.capacity() == queue.max_capacity(), code, reason);
                }
                continue;
            }
        };
        if !delivered {
            return;
        }
        sent += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_events_carry_one_data_line_per_line() {
        assert_eq!(
            &message_event(b"{\"a\":1}\n")[..],
            b"event: message\ndata: {\"a\":1}\n\n"
        );
        assert_eq!(&message_event(b"x\ny")[..], b"event: message\ndata: x\ndata: y\n\n");
    }
}
