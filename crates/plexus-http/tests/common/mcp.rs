//! MCP on both ends of the scripted server: a default script that behaves like a small
//! Streamable HTTP server, and the client's messages.

use std::future::poll_fn;

use plexus_http::{HttpConfig, HttpReceiver, HttpSender, HttpTransport, SessionInfo};
use plexus_jsonrpc::{Message, Notification, Request, RequestId, Response};
use plexus_transport::{OutboundMessage, TransportError, TransportReceiver, TransportSender};
use serde_json::{Value, json};

use super::{Recorded, Reply, guard};
use plexus_net::RemoteConfig as _;

/// The session id the default script hands out.
pub const SESSION: &str = "session-1";
/// The protocol version the default script negotiates.
pub const VERSION: &str = "2025-06-18";

/// The body of a JSON-RPC result.
pub fn result(id: &Value, result: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// The `initialize` result the default script sends.
pub fn initialize_result(id: &Value) -> String {
    result(
        id,
        &json!({"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "scripted", "version": "1"}}),
    )
}

/// Whether the request is a POST of a notification or a response (which get 202).
pub fn is_one_way(request: &Recorded) -> bool {
    let body = request.json();
    body.get("method").is_some() && body.get("id").is_none()
        || body.get("result").is_some()
        || body.get("error").is_some()
}

/// The default answer: `initialize` gets a JSON result with the session id; notifications and
/// responses 202; other requests a JSON result `{"method": …}`; GET 405; DELETE 200.
pub fn default_reply(request: &Recorded) -> Reply {
    match request.method.as_str() {
        "GET" => Reply::status(405, "", &[]),
        "DELETE" => Reply::status(200, "", &[]),
        _ if is_one_way(request) => Reply::accepted(),
        _ if request.rpc_method().as_deref() == Some("initialize") => {
            Reply::json(initialize_result(&request.rpc_id()), &[("mcp-session-id", SESSION)])
        }
        _ => Reply::json(result(&request.rpc_id(), &json!({"method": request.rpc_method()})), &[]),
    }
}

/// A script that answers with `custom` when it has an answer, else with [`default_reply`].
pub fn script(
    custom: impl Fn(&Recorded) -> Option<Reply> + Send + Sync + 'static,
) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    move |request| custom(request).unwrap_or_else(|| default_reply(request))
}

pub fn request(id: i64, method: &str) -> OutboundMessage {
    OutboundMessage::from_message(&Message::Request(Request {
        id: RequestId::Number(id),
        method: method.to_owned().into(),
        params: None,
    }))
}

pub fn notification(method: &str) -> OutboundMessage {
    OutboundMessage::from_message(&Message::Notification(Notification {
        method: method.to_owned().into(),
        params: None,
    }))
}

pub fn initialize(id: i64) -> OutboundMessage {
    let params = serde_json::value::to_raw_value(&json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "plexus-http-tests", "version": "0"}
    }))
    .unwrap();
    OutboundMessage::from_message(&Message::Request(Request {
        id: RequestId::Number(id),
        method: "initialize".into(),
        params: Some(params),
    }))
}

/// The next item of the receiver, within the hang guard.
pub async fn recv(receiver: &mut HttpReceiver) -> Result<Message, TransportError> {
    guard(poll_fn(|cx| receiver.poll_recv(cx))).await
}

/// The next item, which must be a message.
pub async fn recv_message(receiver: &mut HttpReceiver) -> Message {
    match recv(receiver).await {
        Ok(message) => message,
        Err(e) => panic!("expected a message, got the error {e}"),
    }
}

/// The next item, which must be a response.
pub async fn recv_response(receiver: &mut HttpReceiver) -> Response {
    match recv_message(receiver).await {
        Message::Response(response) => response,
        other => panic!("expected a response, got {other:?}"),
    }
}

/// The next item, which must be the loss of a request's response: the request and why.
pub async fn recv_lost(receiver: &mut HttpReceiver) -> (RequestId, String) {
    match recv(receiver).await {
        Err(TransportError::ResponseLost { id, reason }) => (id, reason),
        other => panic!("expected a lost response, got {other:?}"),
    }
}

/// Whether the receiver has nothing right now.
pub fn nothing_queued(receiver: &mut HttpReceiver) -> bool {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    receiver.poll_recv(&mut cx).is_pending()
}

/// A transport to `url` with `configure` applied.
pub fn transport(
    url: &str,
    configure: impl FnOnce(HttpConfig) -> HttpConfig,
) -> (HttpSender, HttpReceiver, SessionInfo) {
    let transport = HttpTransport::new(configure(HttpConfig::new(url).name("scripted"))).unwrap();
    let info = transport.info();
    let (sender, receiver) = transport.into_parts();
    (sender, receiver, info)
}

/// Sends a request answered with a JSON body: `send` gives its response back.
pub async fn call(sender: &HttpSender, message: OutboundMessage) -> Response {
    guard(sender.send(message))
        .await
        .unwrap()
        .expect("the response of a JSON body comes back from send")
}

/// Sends a request and returns its response: the one `send` gave back (a JSON body), else the
/// next response of the receiver (an SSE stream).
pub async fn exchange(sender: &HttpSender, receiver: &mut HttpReceiver, message: OutboundMessage) -> Response {
    match guard(sender.send(message)).await.unwrap() {
        Some(response) => response,
        None => recv_response(receiver).await,
    }
}

/// `initialize` (id 0), its response, then `notifications/initialized`.
pub async fn handshake(sender: &HttpSender, receiver: &mut HttpReceiver) {
    let response = exchange(sender, receiver, initialize(0)).await;
    assert_eq!(response.id, Some(RequestId::Number(0)));
    guard(sender.send(notification("notifications/initialized")))
        .await
        .unwrap();
}

/// The result of a response as JSON.
pub fn result_of(response: &Response) -> Value {
    match &response.outcome {
        Ok(raw) => serde_json::from_str(raw.get()).unwrap(),
        Err(e) => panic!("expected a result, got the error {e}"),
    }
}

/// The error message of a response.
pub fn error_of(response: &Response) -> String {
    match &response.outcome {
        Ok(raw) => panic!("expected an error, got the result {}", raw.get()),
        Err(e) => e.message.clone(),
    }
}
