//! The WebSocket transport against real tokio-tungstenite servers on 127.0.0.1 that script each
//! behaviour.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use plexus_net::RemoteConfig as _;
use plexus_net::challenge::AuthChallenge;
use plexus_transport::{
    AuthDecision, AuthFailure, AuthHeaders, AuthProvider, BoxFuture, ErrorClass, Message, OutboundMessage, Rejection,
    Transport, TransportError, TransportReceiver, error_chain,
};
use plexus_ws::{WsConfig, WsTransport};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// A generous bound for anything a test waits for: a hang guard, never a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(20);

type ServerSocket = WebSocketStream<TcpStream>;

/// How the scripted server answers the upgrade.
enum Answer {
    /// 101 with this subprotocol (or none).
    Accept(Option<&'static str>),
    /// This status, with these headers.
    Reject(u16, Vec<(&'static str, String)>),
}

async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/mcp", listener.local_addr().unwrap());
    (listener, url)
}

/// Accepts one connection and answers its upgrade; returns the request's headers (lower-cased
/// names) and the socket when accepted.
async fn accept(listener: &TcpListener, answer: Answer) -> (Vec<(String, String)>, Option<ServerSocket>) {
    let (tcp, _) = tokio::time::timeout(HANG_GUARD, listener.accept())
        .await
        .unwrap()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&seen);
    #[allow(clippy::result_large_err)] // the callback's type is tungstenite's
    let callback = move |request: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
        *recorded.lock().unwrap() = request
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        match answer {
            Answer::Accept(protocol) => {
                if let Some(protocol) = protocol {
                    response
                        .headers_mut()
                        .insert("sec-websocket-protocol", protocol.parse().unwrap());
                }
                Ok(response)
            }
            Answer::Reject(status, headers) => {
                let mut error = ErrorResponse::new(Some("go away".to_owned()));
                *error.status_mut() = status.try_into().unwrap();
                for (name, value) in headers {
                    error.headers_mut().insert(name, value.parse().unwrap());
                }
                Err(error)
            }
        }
    };
    let socket = tokio_tungstenite::accept_hdr_async(tcp, callback).await.ok();
    let headers = seen.lock().unwrap().clone();
    (headers, socket)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn request(id: i64, method: &str) -> OutboundMessage {
    let json = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#);
    OutboundMessage::from_message(&Message::from_slice(json.as_bytes()).unwrap())
}

async fn recv(receiver: &mut dyn TransportReceiver) -> Result<Message, TransportError> {
    tokio::time::timeout(HANG_GUARD, receiver.recv())
        .await
        .expect("hang guard")
}

async fn next_frame(socket: &mut ServerSocket) -> Option<Frame> {
    tokio::time::timeout(HANG_GUARD, socket.next())
        .await
        .expect("hang guard")
        .map(Result::unwrap)
}

/// Connects `config` while the server answers with `answer`.
async fn connect_with(
    listener: &TcpListener,
    config: WsConfig,
    answer: Answer,
) -> (
    Result<WsTransport, TransportError>,
    Vec<(String, String)>,
    Option<ServerSocket>,
) {
    let (client, (headers, socket)) = tokio::join!(WsTransport::connect(config), accept(listener, answer));
    (client, headers, socket)
}

#[tokio::test]
async fn one_message_per_text_frame_with_the_subprotocol_and_the_headers() {
    let (listener, url) = listen().await;
    let config = WsConfig::new(&url)
        .header("X-Claude-Code-Ide-Authorization", "ide-token")
        .auth(Arc::new(plexus_net::StaticHeaders(vec![(
            "Authorization".into(),
            "Bearer p".into(),
        )])));
    let (client, headers, socket) = connect_with(&listener, config, Answer::Accept(Some("mcp"))).await;
    let transport = client.unwrap();
    assert_eq!(transport.describe(), url);
    let mut server = socket.unwrap();
    assert_eq!(header(&headers, "sec-websocket-protocol"), Some("mcp"));
    assert_eq!(header(&headers, "x-claude-code-ide-authorization"), Some("ide-token"));
    assert_eq!(header(&headers, "authorization"), Some("Bearer p"));

    let (sender, mut receiver) = Box::new(transport).split();
    sender.send(request(1, "tools/list")).await.unwrap();
    sender.send(request(2, "ping")).await.unwrap();
    for id in 1..=2 {
        let Some(Frame::Text(text)) = next_frame(&mut server).await else {
            panic!("not a text frame")
        };
        let method = if id == 1 { "tools/list" } else { "ping" };
        assert_eq!(
            text.as_str(),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#)
        );
        let reply = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        server.send(Frame::text(reply)).await.unwrap();
    }
    for id in 1..=2 {
        let Message::Response(response) = recv(&mut *receiver).await.unwrap() else {
            panic!("not a response")
        };
        assert_eq!(response.id, Some(plexus_jsonrpc::RequestId::Number(id)));
    }
    let closing = tokio::spawn(async move { next_frame(&mut server).await });
    sender.close().await.unwrap();
    assert!(matches!(closing.await.unwrap(), Some(Frame::Close(_))));
}

#[tokio::test]
async fn a_server_without_the_subprotocol_is_refused() {
    let (listener, url) = listen().await;
    let (client, headers, _socket) = connect_with(&listener, WsConfig::new(&url), Answer::Accept(None)).await;
    assert_eq!(header(&headers, "sec-websocket-protocol"), Some("mcp"), "offered");
    let error = client.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Connect);
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {url}: the server accepted the WebSocket without the subprotocol `mcp` (its \
             answer has no Sec-WebSocket-Protocol header), so it does not speak MCP over WebSocket"
        )
    );

    let (client, _, _socket) = connect_with(&listener, WsConfig::new(&url), Answer::Accept(Some("graphql-ws"))).await;
    assert_eq!(
        plexus_transport::error_chain(&client.unwrap_err()),
        format!("could not connect to {url}: the server chose a WebSocket subprotocol it was not offered")
    );
}

#[tokio::test]
async fn a_401_on_the_upgrade_is_needs_auth() {
    let (listener, url) = listen().await;
    let challenge = r#"Bearer realm="ide", error="invalid_token""#.to_owned();
    let answer = Answer::Reject(401, vec![("www-authenticate", challenge)]);
    let (client, _, _) = connect_with(&listener, WsConfig::new(&url), answer).await;
    let error = client.unwrap_err();
    assert_eq!(error.class(), ErrorClass::NeedsAuth);
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server needs authentication: the WebSocket upgrade of {url} answered HTTP 401 (WWW-Authenticate: \
             Bearer realm=\"ide\", error=\"invalid_token\"): go away"
        )
    );
}

/// A provider whose token changes at each challenge; it records the challenges.
struct Renewing {
    token: AtomicUsize,
    challenges: Mutex<Vec<AuthChallenge>>,
}

impl AuthProvider for Renewing {
    fn headers(&self, _: &str, _: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let token = self.token.load(Ordering::SeqCst);
        Box::pin(async move { Ok(vec![("Authorization".to_owned(), format!("Bearer t{token}"))]) })
    }

    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        let challenge = &AuthChallenge::of(rejection);
        self.challenges.lock().unwrap().push(challenge.clone());
        self.token.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { AuthDecision::Retry })
    }
}

#[tokio::test]
async fn the_provider_renews_credentials_and_the_upgrade_is_retried_once() {
    let (listener, url) = listen().await;
    let provider = Arc::new(Renewing {
        token: AtomicUsize::new(0),
        challenges: Mutex::new(Vec::new()),
    });
    let config = WsConfig::new(&url).auth(provider.clone());
    let server = async {
        let rejected = accept(&listener, Answer::Reject(403, vec![])).await;
        let accepted = accept(&listener, Answer::Accept(Some("mcp"))).await;
        (rejected.0, accepted)
    };
    let (client, (first, (second, socket))) = tokio::join!(WsTransport::connect(config), server);
    client.unwrap();
    assert!(socket.is_some());
    assert_eq!(header(&first, "authorization"), Some("Bearer t0"));
    assert_eq!(header(&second, "authorization"), Some("Bearer t1"));
    let challenges = provider.challenges.lock().unwrap().clone();
    assert_eq!(challenges.len(), 1);
    assert_eq!((challenges[0].status, challenges[0].url.as_str()), (403, url.as_str()));

    // Rejected again after the retry: final, the provider is not asked twice; renewed credentials
    // that are not a login's are a failure, not "needs authentication".
    let config = WsConfig::new(&url).auth(provider.clone());
    let server = async {
        accept(&listener, Answer::Reject(401, vec![])).await;
        accept(&listener, Answer::Reject(401, vec![])).await;
    };
    let (client, ()) = tokio::join!(WsTransport::connect(config), server);
    assert_eq!(
        plexus_transport::error_chain(&client.unwrap_err()),
        format!(
            "authentication failed: the WebSocket upgrade of {url} answered HTTP 401 again after the credentials \
             were renewed: go away"
        )
    );
    assert_eq!(provider.challenges.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn other_answers_to_the_upgrade_are_reported() {
    let (listener, url) = listen().await;
    let answer = Answer::Reject(302, vec![("location", "ws://127.0.0.1:1/elsewhere".to_owned())]);
    let (client, _, _) = connect_with(&listener, WsConfig::new(&url), answer).await;
    assert_eq!(
        plexus_transport::error_chain(&client.unwrap_err()),
        format!(
            "could not connect to {url}: the server answered the upgrade with a redirect (HTTP 302) to \
             ws://127.0.0.1:1/elsewhere; WebSocket redirects are not followed"
        )
    );
    let (client, _, _) = connect_with(&listener, WsConfig::new(&url), Answer::Reject(503, vec![])).await;
    assert_eq!(
        plexus_transport::error_chain(&client.unwrap_err()),
        format!("the server answered HTTP 503 to the WebSocket upgrade of {url}: go away")
    );
}

async fn connected(config: WsConfig, listener: &TcpListener) -> (WsTransport, ServerSocket) {
    let (client, _, socket) = connect_with(listener, config, Answer::Accept(Some("mcp"))).await;
    (client.unwrap(), socket.unwrap())
}

#[tokio::test]
async fn binary_and_non_json_frames_are_protocol_errors_and_reading_goes_on() {
    let (listener, url) = listen().await;
    let (transport, mut server) = connected(WsConfig::new(&url), &listener).await;
    let (_sender, mut receiver) = Box::new(transport).split();
    server.send(Frame::binary(vec![1, 2, 3])).await.unwrap();
    server.send(Frame::text("hello")).await.unwrap();
    server
        .send(Frame::text(
            r#"{"jsonrpc":"2.0","method":"a"}{"jsonrpc":"2.0","method":"b"}"#,
        ))
        .await
        .unwrap();
    server
        .send(Frame::text(r#"{"jsonrpc":"2.0","method":"fine"}"#))
        .await
        .unwrap();
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "the server sent an invalid message: a binary WebSocket frame (3 bytes); MCP messages travel in text frames"
    );
    assert!(!error.is_terminal());
    for _ in 0..2 {
        let error = recv(&mut *receiver).await.unwrap_err();
        assert_eq!(error.class(), ErrorClass::Protocol, "{error}");
    }
    assert_eq!(recv(&mut *receiver).await.unwrap().method(), Some("fine"));
}

#[tokio::test]
async fn a_reply_in_a_binary_frame_is_the_error_of_its_request() {
    let (listener, url) = listen().await;
    let (transport, mut server) = connected(WsConfig::new(&url), &listener).await;
    let (_sender, mut receiver) = Box::new(transport).split();
    let reply = br#"{"jsonrpc":"2.0","result":{"tools":[]},"id":12}"#;
    server.send(Frame::binary(reply.to_vec())).await.unwrap();
    server
        .send(Frame::text(r#"{"jsonrpc":"2.0","id":13,"result":{"#))
        .await
        .unwrap();
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(error.reply_to(), Some(&plexus_jsonrpc::RequestId::Number(12)));
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server's reply to request 12 was dropped: the server sent an invalid message: a binary WebSocket \
             frame ({} bytes); MCP messages travel in text frames",
            reply.len()
        )
    );
    assert!(!error.is_terminal());
    // A reply cut short after its id still names its request.
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(error.reply_to(), Some(&plexus_jsonrpc::RequestId::Number(13)));
}

#[tokio::test]
async fn an_oversize_message_is_reported_then_the_connection_closes() {
    let (listener, url) = listen().await;
    let (transport, mut server) = connected(WsConfig::new(&url).max_message_size(1024), &listener).await;
    let (sender, mut receiver) = Box::new(transport).split();
    let big = format!(r#"{{"jsonrpc":"2.0","method":"big","params":"{}"}}"#, "x".repeat(4000));
    let size = big.len();
    server.send(Frame::text(big)).await.unwrap();
    let error = recv(&mut *receiver).await.unwrap_err();
    let too_large = format!(
        "a message of {size} bytes from the server is larger than the 1024-byte limit; it was discarded (raise the \
         limit with PLEXUS_MAX_MESSAGE_SIZE)"
    );
    assert_eq!(error.to_string(), too_large);
    let closed = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(closed.to_string(), format!("the connection is closed: {too_large}"));
    assert!(sender.is_closed());
    // The server is told why.
    let Some(Frame::Close(Some(frame))) = next_frame(&mut server).await else {
        panic!("no close frame")
    };
    assert_eq!(
        (frame.code, frame.reason.as_str()),
        (CloseCode::Size, "message too big")
    );
}

#[tokio::test]
async fn a_server_that_answers_no_ping_is_detected_as_dead() {
    let (listener, url) = listen().await;
    let config = WsConfig::new(&url)
        .ping_interval(Some(Duration::from_millis(100)))
        .dead_peer_timeout(Duration::from_millis(400));
    // The server never reads, so it never answers a ping.
    let (transport, _server) = connected(config, &listener).await;
    let (sender, mut receiver) = Box::new(transport).split();
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "keeping the WebSocket {url} alive: the server sent nothing, not even a pong, for 400ms (pinged every \
             100ms)"
        )
    );
    assert_eq!(error.class(), ErrorClass::TerminalIo);
    assert!(sender.is_closed());
    let TransportError::Io { source, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(source.kind(), std::io::ErrorKind::TimedOut);
    assert!(sender.send(request(1, "ping")).await.is_err());
}

#[tokio::test]
async fn pongs_keep_a_quiet_server_alive() {
    let (listener, url) = listen().await;
    let config = WsConfig::new(&url)
        .ping_interval(Some(Duration::from_millis(50)))
        .dead_peer_timeout(Duration::from_millis(200));
    let (transport, mut server) = connected(config, &listener).await;
    let (sender, mut receiver) = Box::new(transport).split();
    let reader = tokio::spawn(async move { recv(&mut *receiver).await });
    // Eight pings at 50 ms span twice the dead-peer timeout: the pongs kept the connection.
    let mut pings = 0;
    while pings < 8 {
        match next_frame(&mut server).await {
            Some(Frame::Ping(_)) => pings += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    sender.send(request(1, "ping")).await.unwrap();
    assert!(matches!(next_frame(&mut server).await, Some(Frame::Text(_))));
    server
        .send(Frame::text(r#"{"jsonrpc":"2.0","method":"alive"}"#))
        .await
        .unwrap();
    assert_eq!(reader.await.unwrap().unwrap().method(), Some("alive"));
    assert!(!sender.is_closed());
}

#[tokio::test]
async fn close_performs_the_close_handshake() {
    let (listener, url) = listen().await;
    let (transport, mut server) = connected(WsConfig::new(&url), &listener).await;
    let (sender, mut receiver) = Box::new(transport).split();
    let observed = tokio::spawn(async move {
        let frame = next_frame(&mut server).await;
        // The server answers (tungstenite does it) and then sees the end.
        let end = next_frame(&mut server).await;
        (frame, end)
    });
    tokio::time::timeout(HANG_GUARD, sender.close()).await.unwrap().unwrap();
    let (frame, end) = observed.await.unwrap();
    let Some(Frame::Close(Some(frame))) = frame else {
        panic!("no close frame: {frame:?}")
    };
    assert_eq!(frame.code, CloseCode::Normal);
    assert!(end.is_none(), "{end:?}");
    let expected = "the connection is closed: the transport was closed by the client";
    assert_eq!(recv(&mut *receiver).await.unwrap_err().to_string(), expected);
    assert_eq!(sender.send(request(1, "ping")).await.unwrap_err().to_string(), expected);
    sender.close().await.unwrap(); // twice is harmless
}

#[tokio::test]
async fn the_server_closing_gives_its_code_and_reason() {
    let (listener, url) = listen().await;
    let (transport, mut server) = connected(WsConfig::new(&url), &listener).await;
    let (sender, mut receiver) = Box::new(transport).split();
    server
        .close(Some(CloseFrame {
            code: CloseCode::Away,
            reason: "restarting".into(),
        }))
        .await
        .unwrap();
    let server_end = tokio::spawn(async move { next_frame(&mut server).await });
    let expected = "the connection is closed: the server closed the WebSocket (code 1001, going away): restarting";
    assert_eq!(recv(&mut *receiver).await.unwrap_err().to_string(), expected);
    assert_eq!(recv(&mut *receiver).await.unwrap_err().to_string(), expected);
    assert_eq!(sender.send(request(1, "ping")).await.unwrap_err().to_string(), expected);
    // The client answered the close frame.
    assert!(matches!(server_end.await.unwrap(), Some(Frame::Close(_)) | None));
}

#[tokio::test]
async fn losing_the_connection_closes_the_transport_with_the_reason() {
    let (listener, url) = listen().await;
    let (transport, server) = connected(WsConfig::new(&url), &listener).await;
    let (sender, mut receiver) = Box::new(transport).split();
    drop(server);
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the connection is closed: the server closed the connection without a WebSocket close frame"
    );
    assert!(sender.is_closed());
}

#[tokio::test]
async fn connect_failures_name_the_url() {
    let unused = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/mcp", unused.local_addr().unwrap());
    drop(unused);
    let error = WsTransport::connect(WsConfig::new(&url)).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!("could not connect to {url}: Connection refused (os error 111)")
    );

    let error = WsTransport::connect(WsConfig::new("http://127.0.0.1:1/mcp?token=secret"))
        .await
        .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "could not connect to http://127.0.0.1:1/mcp?…: the URL scheme is \"http\"; the WebSocket transport needs \
         ws or wss"
    );
    let config = WsConfig::new("ws://127.0.0.1:1/")
        .ping_interval(Some(Duration::from_secs(30)))
        .dead_peer_timeout(Duration::from_secs(30));
    assert_eq!(
        plexus_transport::error_chain(&WsTransport::connect(config).await.unwrap_err()),
        "could not connect to ws://127.0.0.1:1/: the dead-peer timeout (30s) must be longer than the ping \
         interval (30s)"
    );
    let config = WsConfig::new("ws://127.0.0.1:1/").header("X-Key", "a\nb");
    assert_eq!(
        plexus_transport::error_chain(&WsTransport::connect(config).await.unwrap_err()),
        "could not connect to ws://127.0.0.1:1/: the value of the header \"X-Key\" contains a control character \
         (such as a line break), which HTTP does not allow"
    );
}

#[tokio::test]
async fn wss_to_a_plain_server_fails_the_tls_handshake_cleanly() {
    // A plain HTTP server answers the TLS greeting with a plain 400, as real ones do.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("wss://{}/mcp", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let (mut socket, _) = listener.accept().await.unwrap();
        socket
            .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
    });
    let error = tokio::time::timeout(HANG_GUARD, WsTransport::connect(WsConfig::new(&url)))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.class(), ErrorClass::Connect, "{error}");
    assert!(
        plexus_transport::error_chain(&error).starts_with(&format!("could not connect to {url}: ")),
        "{error}"
    );
    server.await.unwrap();
}
