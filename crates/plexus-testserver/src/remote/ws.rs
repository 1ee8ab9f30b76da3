//! WebSocket: an upgrade that must offer the subprotocol `mcp` (echoed back unless
//! `--no-subprotocol`), then one session per connection with one JSON-RPC message per text frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use plexus_jsonrpc::{FrameError, Message};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Utf8Bytes};

use super::connection::Connection;
use super::http::{self, Body};
use super::{App, until_stopped};
use crate::server::{Emitted, OUTBOX_CAPACITY, Output, Session};

/// The subprotocol MCP clients offer.
const SUBPROTOCOL: &str = "mcp";
/// How long the server waits for the client's answer to its close frame.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// The WebSocket mode's switches.
pub(crate) struct WsConfig {
    no_subprotocol: bool,
    /// Numbers the sessions for the event log (`ws-1`, `ws-2`, …).
    sessions_started: AtomicU64,
}

/// Whether a comma-separated header lists `token` (case-insensitive).
fn lists(headers: &HeaderMap, name: &header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|item| item.trim().eq_ignore_ascii_case(token))
}

impl WsConfig {
    pub(crate) fn new(no_subprotocol: bool) -> Self {
        WsConfig {
            no_subprotocol,
            sessions_started: AtomicU64::new(0),
        }
    }

    /// Answers an upgrade request: 101 and a session on the upgraded connection, or the reason
    /// it is refused.
    pub(crate) async fn upgrade(
        &self,
        app: &Arc<App>,
        connection: &Arc<Connection>,
        request: Request<Incoming>,
    ) -> Response<Body> {
        if let Some(response) = app.request_fault(connection, false).await {
            return response;
        }
        let headers = request.headers();
        if !lists(headers, &header::UPGRADE, "websocket") || !lists(headers, &header::CONNECTION, "upgrade") {
            return http::with_header(
                http::text(
                    StatusCode::UPGRADE_REQUIRED,
                    "this endpoint speaks WebSocket only: send a GET with Upgrade: websocket",
                ),
                header::UPGRADE,
                HeaderValue::from_static("websocket"),
            );
        }
        if headers.get(header::SEC_WEBSOCKET_VERSION).map(HeaderValue::as_bytes) != Some(b"13") {
            return http::with_header(
                http::text(StatusCode::UPGRADE_REQUIRED, "only WebSocket version 13 is spoken"),
                header::SEC_WEBSOCKET_VERSION,
                HeaderValue::from_static("13"),
            );
        }
        let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
            return http::text(StatusCode::BAD_REQUEST, "the upgrade request lacks Sec-WebSocket-Key");
        };
        if !lists(headers, &header::SEC_WEBSOCKET_PROTOCOL, SUBPROTOCOL) {
            return http::text(
                StatusCode::BAD_REQUEST,
                "the WebSocket subprotocol \"mcp\" is required: offer it in Sec-WebSocket-Protocol",
            );
        }
        let accept = derive_accept_key(key.as_bytes());
        let number = self.sessions_started.fetch_add(1, Ordering::Relaxed) + 1;
        let app = Arc::clone(app);
        let connection = Arc::clone(connection);
        let mut response = http::empty(StatusCode::SWITCHING_PROTOCOLS);
        let response_headers = response.headers_mut();
        response_headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        response_headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        if let Ok(accept) = HeaderValue::from_str(&accept) {
            response_headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
        }
        if !self.no_subprotocol {
            response_headers.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
        }
        tokio::spawn(async move {
            match hyper::upgrade::on(request).await {
                Ok(upgraded) => serve(app, connection, upgraded, format!("ws-{number}")).await,
                Err(e) => eprintln!("plexus-testserver: the WebSocket upgrade failed: {e}"),
            }
        });
        response
    }
}

/// Why a session's loop ended.
enum End {
    /// The client closed, or the connection broke.
    Closed,
    /// The server closes with this code and reason.
    Close(CloseCode, String),
    /// `--reset-after`: drop the connection with a reset.
    Reset,
    /// The crash tool or `--crash-after`.
    Crash(i32, String),
}

/// Serves one MCP session on an upgraded connection.
async fn serve(app: Arc<App>, connection: Arc<Connection>, upgraded: hyper::upgrade::Upgraded, label: String) {
    let max = app.remote().max_body_bytes;
    let config = WebSocketConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max));
    let mut socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
    let (outbox, mut emitted) = mpsc::channel(OUTBOX_CAPACITY);
    let session = Session::new(Arc::clone(app.server()), outbox, Some(label.clone()));
    app.events()
        .record(&json!({"event": "session-start", "session": label, "transport": "ws"}));
    let mut stopping = app.stopping();
    let mut outputs = Vec::new();
    let end = loop {
        let step = tokio::select! {
            biased;
            () = until_stopped(&mut stopping) => Err(End::Close(CloseCode::Away, "the server is shutting down".to_owned())),
            frame = socket.next() => match frame {
                Some(Ok(tungstenite::Message::Text(text))) => {
                    if app.ws_message_resets() {
                        Err(End::Reset)
                    } else {
                        match Message::from_str(&text) {
                            Ok(message) => session.handle(message, &mut outputs),
                            Err(e) => Session::handle_frame_error(&FrameError::Decode(e), &mut outputs),
                        }
                        write_all(&mut socket, outputs.drain(..)).await
                    }
                }
                Some(Ok(tungstenite::Message::Binary(_))) => Err(End::Close(
                    CloseCode::Unsupported,
                    "binary frames carry no MCP messages; send text frames".to_owned(),
                )),
                // Pings are answered by the reader; make sure the pong leaves now.
                Some(Ok(tungstenite::Message::Ping(_))) => socket.flush().await.map_err(|_| End::Closed),
                Some(Ok(_)) => Ok(()),
                Some(Err(tungstenite::Error::Capacity(e))) => Err(End::Close(
                    CloseCode::Size,
                    format!("{e} (--max-body-bytes {max})"),
                )),
                Some(Err(_)) | None => Err(End::Closed),
            },
            Some(Emitted { output, .. }) = emitted.recv() => write_all(&mut socket, std::iter::once(output)).await,
        };
        if let Err(end) = step {
            break end;
        }
    };
    session.abort_all();
    let reason = match end {
        End::Closed => "closed",
        End::Close(code, reason) => {
            close(&mut socket, code, reason).await;
            "closed by the server"
        }
        End::Reset => {
            connection.mark_reset();
            "reset"
        }
        End::Crash(code, reason) => {
            app.crash(code, &reason);
            "crashed"
        }
    };
    app.events()
        .record(&json!({"event": "session-end", "session": label, "reason": reason}));
    // Dropping the socket closes the connection (with a reset when marked).
    drop(socket);
}

/// Writes outputs as text frames, then flushes.
async fn write_all(socket: &mut Socket, outputs: impl Iterator<Item = Output>) -> Result<(), End> {
    for output in outputs {
        let line = match output {
            Output::Message(line) | Output::Response(line) | Output::SessionNotification(line) | Output::Raw(line) => {
                line
            }
            // A frame cannot be dripped: the response goes whole, after the whole delay.
            Output::Drip { line, chunk, delay } => {
                let pauses = u32::try_from(line.len().div_ceil(chunk).saturating_sub(1)).unwrap_or(u32::MAX);
                socket.flush().await.map_err(|_| End::Closed)?;
                tokio::time::sleep(delay.saturating_mul(pauses)).await;
                line
            }
            Output::Exit { code, reason } => {
                socket.flush().await.map_err(|_| End::Closed)?;
                return Err(End::Crash(code, reason));
            }
        };
        let mut line = line;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let text = String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let text = Utf8Bytes::from(text);
        socket
            .feed(tungstenite::Message::Text(text))
            .await
            .map_err(|_| End::Closed)?;
    }
    socket.flush().await.map_err(|_| End::Closed)
}

/// Sends a close frame and waits (bounded) for the client's.
async fn close(socket: &mut Socket, code: CloseCode, reason: String) {
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(reason),
    };
    if socket.close(Some(frame)).await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, async { while let Some(Ok(_)) = socket.next().await {} }).await;
}
