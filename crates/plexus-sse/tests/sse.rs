//! The SSE transport against real HTTP servers on 127.0.0.1 that script each behaviour.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plexus_net::RemoteConfig as _;
use plexus_net::StaticHeaders;
use plexus_net::challenge::AuthChallenge;
use plexus_sse::{SseConfig, SseTransport};
use plexus_transport::{
    AuthDecision, AuthFailure, AuthHeaders, AuthProvider, BoxFuture, ErrorClass, Message, OutboundMessage, Rejection,
    Transport, TransportError, error_chain,
};
use support::{Bystander, EventStream, HANG_GUARD, HttpServer, Reply, Request};

/// A legacy server: the event stream names `endpoint`; each POSTed request is answered on the
/// stream with `{"echo": params}`.
async fn legacy_server(endpoint: &'static str) -> (HttpServer, EventStream) {
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |request| match request.method.as_str() {
        "GET" => events.open(&format!("event: endpoint\ndata: {endpoint}\n\n")),
        "POST" => {
            echo(&events, request);
            Reply::status(202).with_body("Accepted")
        }
        _ => Reply::status(405),
    })
    .await;
    (server, stream)
}

fn echo(events: &EventStream, request: &Request) {
    let message: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    if let Some(id) = message.get("id") {
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"echo": message["params"]}});
        events.message(&reply.to_string());
    }
}

fn request(id: i64, method: &str) -> OutboundMessage {
    let json = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"n":{id}}}}}"#);
    OutboundMessage::from_message(&Message::from_slice(json.as_bytes()).unwrap())
}

async fn recv(receiver: &mut dyn plexus_transport::TransportReceiver) -> Result<Message, TransportError> {
    tokio::time::timeout(HANG_GUARD, receiver.recv())
        .await
        .expect("hang guard")
}

fn result_text(message: &Message) -> String {
    match message {
        Message::Response(r) => r.outcome.as_ref().unwrap().get().to_owned(),
        other => panic!("not a response: {other:?}"),
    }
}

async fn connect(config: SseConfig) -> Result<SseTransport, TransportError> {
    tokio::time::timeout(HANG_GUARD, SseTransport::connect(config))
        .await
        .expect("hang guard")
}

#[tokio::test]
async fn messages_round_trip_through_a_relative_endpoint_with_the_custom_headers() {
    let (server, _stream) = legacy_server("messages?sessionId=abc").await;
    let config = SseConfig::new(server.url("/mcp/sse")).header("X-Api-Key", "k1");
    let transport = connect(config).await.unwrap();
    assert_eq!(
        transport.endpoint().as_str(),
        format!("{}/mcp/messages?sessionId=abc", server.origin())
    );
    assert_eq!(transport.describe(), server.url("/mcp/sse"));
    let (sender, mut receiver) = Box::new(transport).split();
    sender.send(request(1, "tools/list")).await.unwrap();
    sender.send(request(2, "ping")).await.unwrap();
    assert_eq!(result_text(&recv(&mut *receiver).await.unwrap()), r#"{"echo":{"n":1}}"#);
    assert_eq!(result_text(&recv(&mut *receiver).await.unwrap()), r#"{"echo":{"n":2}}"#);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let get = &requests[0];
    assert_eq!((get.method.as_str(), get.target.as_str()), ("GET", "/mcp/sse"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    for post in &requests[1..] {
        assert_eq!(
            (post.method.as_str(), post.target.as_str()),
            ("POST", "/mcp/messages?sessionId=abc")
        );
        assert_eq!(post.header("content-type"), Some("application/json"));
    }
    assert_eq!(
        String::from_utf8(requests[1].body.clone()).unwrap(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"n":1}}"#
    );
    for request in &requests {
        assert_eq!(
            request.header("x-api-key"),
            Some("k1"),
            "{} {}",
            request.method,
            request.target
        );
    }
    sender.close().await.unwrap();
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_and_never_contacted() {
    let bystander = Bystander::new();
    let endpoint: &'static str = format!("http://{}/messages?sessionId=1", bystander.addr).leak();
    let (server, _stream) = legacy_server(endpoint).await;
    let error = connect(SseConfig::new(server.url("/sse")).header("Authorization", "Bearer secret"))
        .await
        .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {}: the server's endpoint http://{addr}/messages?… is on http://{addr}, another \
             origin than its event stream ({}); no message is sent there",
            server.url("/sse"),
            server.origin(),
            addr = bystander.addr
        )
    );
    assert_eq!(error.class(), ErrorClass::Connect);
    assert!(!bystander.contacted(), "the foreign endpoint was contacted");
}

#[tokio::test]
async fn no_endpoint_event_in_time_is_a_connect_error() {
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |_| events.open(": nothing to see\n\nevent: other\ndata: x\n\n")).await;
    let config = SseConfig::new(server.url("/sse")).endpoint_timeout(Duration::from_millis(300));
    let error = connect(config).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {}: the server sent no endpoint event within 300ms of opening the event stream",
            server.url("/sse")
        )
    );
    // The abandoned stream's connection is closed.
    server.stream_ended().await;
}

#[tokio::test]
async fn a_stream_that_ends_before_the_endpoint_is_a_connect_error() {
    let server = HttpServer::start(|_| {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tx.send(b": bye\n\n".to_vec()).unwrap();
        Reply::Stream(rx)
    })
    .await;
    let error = connect(SseConfig::new(server.url("/sse"))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {}: the server closed the event stream before sending the endpoint event",
            server.url("/sse")
        )
    );
}

#[tokio::test]
async fn a_server_that_does_not_stream_events_is_named_as_such() {
    let server = HttpServer::start(|_| {
        Reply::status(200)
            .with_header("content-type", "application/json")
            .with_body("{}")
    })
    .await;
    let error = connect(SseConfig::new(server.url("/mcp"))).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {}: the server answered the GET with Content-Type \"application/json\", not \
             text/event-stream (a server of the newer Streamable HTTP transport needs the type `http`)",
            server.url("/mcp")
        )
    );
}

#[tokio::test]
async fn an_unexpected_status_keeps_a_bounded_excerpt_of_the_body() {
    let server = HttpServer::start(|_| Reply::status(404).with_body("no such stream ".repeat(5000))).await;
    let error = connect(SseConfig::new(server.url("/sse"))).await.unwrap_err();
    let TransportError::Http { status, what, body } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(
        (*status, what.as_str()),
        (404, format!("GET {}", server.url("/sse")).as_str())
    );
    assert_eq!(body.len(), plexus_transport::BODY_EXCERPT_LIMIT + '…'.len_utf8());
    assert!(
        body.starts_with("no such stream no such stream") && body.ends_with('…'),
        "{body}"
    );
}

#[tokio::test]
async fn an_oversize_event_is_skipped_and_reading_goes_on() {
    let (server, stream) = legacy_server("/messages").await;
    let config = SseConfig::new(server.url("/sse")).max_message_size(1024);
    let (_sender, mut receiver) = Box::new(connect(config).await.unwrap()).split();
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"big","params":{{"x":"{}"}}}}"#,
        "y".repeat(5000)
    );
    assert!(stream.message(&big));
    assert!(stream.message(r#"{"jsonrpc":"2.0","method":"small"}"#));
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "a message of {} bytes from the server is larger than the 1024-byte limit; it was discarded (raise the \
             limit with PLEXUS_MAX_MESSAGE_SIZE)",
            big.len()
        )
    );
    assert!(!error.is_terminal());
    assert_eq!(recv(&mut *receiver).await.unwrap().method(), Some("small"));
}

#[tokio::test]
async fn a_bad_message_is_reported_and_reading_goes_on() {
    let (server, stream) = legacy_server("/messages").await;
    let (_sender, mut receiver) = Box::new(connect(SseConfig::new(server.url("/sse"))).await.unwrap()).split();
    assert!(stream.message("not json"));
    assert!(stream.push("event: endpoint\ndata: /elsewhere\n\nevent: ping\ndata: 1\n\n"));
    assert!(stream.push("data: {\"jsonrpc\":\"2.0\",\n: a comment inside\ndata: \"method\":\"fine\"}\n\n"));
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Protocol, "{error}");
    assert!(
        plexus_transport::error_chain(&error).starts_with("the server sent an invalid message: "),
        "{error}"
    );
    assert_eq!(recv(&mut *receiver).await.unwrap().method(), Some("fine"));
}

#[tokio::test]
async fn messages_before_the_endpoint_are_delivered_first() {
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |_| {
        events.open(concat!(
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"early\"}\n\n",
            "event: endpoint\ndata: /messages\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"late\"}\n\n",
        ))
    })
    .await;
    let (_sender, mut receiver) = Box::new(connect(SseConfig::new(server.url("/sse"))).await.unwrap()).split();
    assert_eq!(recv(&mut *receiver).await.unwrap().method(), Some("early"));
    assert_eq!(recv(&mut *receiver).await.unwrap().method(), Some("late"));
}

#[tokio::test]
async fn losing_the_stream_closes_the_transport_with_the_reason() {
    let (server, stream) = legacy_server("/messages").await;
    let (sender, mut receiver) = Box::new(connect(SseConfig::new(server.url("/sse"))).await.unwrap()).split();
    assert!(stream.message(r#"{"jsonrpc":"2.0","method":"last words"}"#));
    stream.end();
    assert_eq!(recv(&mut *receiver).await.unwrap().method(), Some("last words"));
    let expected = "the connection is closed: the server closed the event stream";
    let error = recv(&mut *receiver).await.unwrap_err();
    assert_eq!(error.to_string(), expected);
    assert!(error.is_terminal());
    assert!(sender.is_closed());
    assert_eq!(sender.send(request(1, "ping")).await.unwrap_err().to_string(), expected);
    assert_eq!(recv(&mut *receiver).await.unwrap_err().to_string(), expected);
    // Nothing was posted after the end.
    assert!(server.requests().iter().all(|r| r.method == "GET"));
}

#[tokio::test]
async fn close_drops_the_stream_and_later_sends_fail() {
    let (server, _stream) = legacy_server("/messages").await;
    let (sender, mut receiver) = Box::new(connect(SseConfig::new(server.url("/sse"))).await.unwrap()).split();
    let reading = tokio::spawn(async move { recv(&mut *receiver).await });
    sender.close().await.unwrap();
    server.stream_ended().await;
    let expected = "the connection is closed: the transport was closed by the client";
    assert_eq!(reading.await.unwrap().unwrap_err().to_string(), expected);
    assert!(sender.is_closed());
    assert_eq!(sender.send(request(1, "ping")).await.unwrap_err().to_string(), expected);
    sender.close().await.unwrap(); // twice is harmless
}

#[tokio::test]
async fn a_401_with_a_challenge_is_needs_auth() {
    let server = HttpServer::start(|_| {
        Reply::status(401).with_header(
            "www-authenticate",
            r#"Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource""#,
        )
    })
    .await;
    let error = connect(SseConfig::new(server.url("/sse"))).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::NeedsAuth);
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server needs authentication: GET {} answered HTTP 401 (WWW-Authenticate: Bearer \
             resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource\")",
            server.url("/sse")
        )
    );
}

/// A provider whose token changes at each challenge; it records the challenges.
struct Renewing {
    token: AtomicUsize,
    challenges: Mutex<Vec<AuthChallenge>>,
    decision: AuthDecision,
}

impl Renewing {
    fn new(decision: AuthDecision) -> Arc<Renewing> {
        Arc::new(Renewing {
            token: AtomicUsize::new(0),
            challenges: Mutex::new(Vec::new()),
            decision,
        })
    }
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
        Box::pin(async move { self.decision.clone() })
    }
}

#[tokio::test]
async fn the_provider_renews_credentials_after_a_challenge_on_the_get_and_on_a_post() {
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |request| {
        let wanted = if request.method == "GET" {
            "Bearer t1"
        } else {
            "Bearer t2"
        };
        if request.header("authorization") != Some(wanted) {
            return Reply::status(401).with_header("www-authenticate", r#"Bearer error="invalid_token", scope="mcp""#);
        }
        if request.method == "GET" {
            return events.open("event: endpoint\ndata: /messages\n\n");
        }
        echo(&events, request);
        Reply::status(202)
    })
    .await;
    let provider = Renewing::new(AuthDecision::Retry);
    let config = SseConfig::new(server.url("/sse"))
        .header("Authorization", "Bearer configured")
        .auth(provider.clone());
    let (sender, mut receiver) = Box::new(connect(config).await.unwrap()).split();
    sender.send(request(7, "tools/list")).await.unwrap();
    assert_eq!(result_text(&recv(&mut *receiver).await.unwrap()), r#"{"echo":{"n":7}}"#);

    let seen: Vec<_> = server
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.header("authorization").unwrap_or("-")))
        .collect();
    // The provider's header replaces the configured one of the same name.
    assert_eq!(
        seen,
        ["GET Bearer t0", "GET Bearer t1", "POST Bearer t1", "POST Bearer t2"]
    );
    let challenges = provider.challenges.lock().unwrap();
    assert_eq!(challenges.len(), 2);
    assert_eq!(challenges[0].status, 401);
    assert_eq!(challenges[0].url, server.url("/sse"));
    assert_eq!(challenges[0].bearer().unwrap().param("error"), Some("invalid_token"));
    assert_eq!(challenges[1].url, server.url("/messages"));
}

#[tokio::test]
async fn a_rejection_after_the_retry_or_from_the_provider_fails_the_send() {
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |request| match request.method.as_str() {
        "GET" => events.open("event: endpoint\ndata: /messages\n\n"),
        _ => Reply::status(403),
    })
    .await;
    let post = server.url("/messages");

    let always_retry = Renewing::new(AuthDecision::Retry);
    let config = SseConfig::new(server.url("/sse")).auth(always_retry.clone());
    let (sender, _receiver) = Box::new(connect(config).await.unwrap()).split();
    let error = sender.send(request(1, "ping")).await.unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!("authentication failed: POST {post} answered HTTP 403 again after the credentials were renewed")
    );
    assert_eq!(
        always_retry.challenges.lock().unwrap().len(),
        1,
        "the provider is asked once"
    );

    let login = Renewing::new(AuthDecision::NeedsAuth {
        cause: Arc::new(std::io::Error::other("log in with `plexus login`")),
    });
    let config = SseConfig::new(server.url("/sse")).auth(login);
    let (sender, _receiver) = Box::new(connect(config).await.unwrap()).split();
    let error = sender.send(request(1, "ping")).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        "the server needs authentication: log in with `plexus login`"
    );

    let config = SseConfig::new(server.url("/sse")).auth(Arc::new(StaticHeaders(vec![("X-Key".into(), "v".into())])));
    let (sender, _receiver) = Box::new(connect(config).await.unwrap()).split();
    let error = sender.send(request(1, "ping")).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        "authentication failed: the server rejected the configured credentials (HTTP 403)"
    );
}

#[tokio::test]
async fn a_failing_post_fails_its_send_only() {
    let stream = EventStream::default();
    let events = stream.clone();
    let posts = Arc::new(AtomicUsize::new(0));
    let server = HttpServer::start(move |request| {
        if request.method == "GET" {
            return events.open("event: endpoint\ndata: /messages?sessionId=s\n\n");
        }
        if posts.fetch_add(1, Ordering::SeqCst) == 0 {
            return Reply::status(500).with_body("x".repeat(100_000));
        }
        echo(&events, request);
        Reply::status(202)
    })
    .await;
    let (sender, mut receiver) = Box::new(connect(SseConfig::new(server.url("/sse"))).await.unwrap()).split();
    let error = sender.send(request(1, "ping")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the server answered HTTP 500 to POST {}/messages?…: {}…",
            server.origin(),
            "x".repeat(plexus_transport::BODY_EXCERPT_LIMIT)
        )
    );
    assert!(!sender.is_closed());
    sender.send(request(2, "ping")).await.unwrap();
    assert_eq!(result_text(&recv(&mut *receiver).await.unwrap()), r#"{"echo":{"n":2}}"#);
}

#[tokio::test]
async fn each_post_has_its_own_timeout() {
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |request| match request.method.as_str() {
        "GET" => events.open("event: endpoint\ndata: /messages\n\n"),
        _ => Reply::Silence,
    })
    .await;
    let config = SseConfig::new(server.url("/sse")).request_timeout(Duration::from_millis(300));
    let (sender, _receiver) = Box::new(connect(config).await.unwrap()).split();
    let error = tokio::time::timeout(HANG_GUARD, sender.send(request(1, "ping")))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!("POST {}: no complete answer within 300ms", server.url("/messages"))
    );
    assert_eq!(error.class(), ErrorClass::TerminalIo);
    assert!(!sender.is_closed(), "a slow POST does not end the transport");
}

#[tokio::test]
async fn a_post_the_server_answers_late_waits_as_long_as_its_request_may() {
    // A legacy server that runs a call before it answers the POST: the call's own 2 s count, not
    // the transport's 200 ms; a message without a timeout of its own still gets the 200 ms.
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |request| match request.method.as_str() {
        "GET" => events.open("event: endpoint\ndata: /messages\n\n"),
        _ => {
            echo(&events, request);
            Reply::After(Duration::from_millis(600), Box::new(Reply::status(202)))
        }
    })
    .await;
    let config = SseConfig::new(server.url("/sse")).request_timeout(Duration::from_millis(200));
    let (sender, mut receiver) = Box::new(connect(config).await.unwrap()).split();
    let call = request(1, "tools/call").with_reply_timeout(Duration::from_secs(2));
    let sent = tokio::time::timeout(HANG_GUARD, sender.send(call)).await.unwrap();
    assert!(sent.unwrap().is_none());
    assert_eq!(result_text(&recv(&mut *receiver).await.unwrap()), r#"{"echo":{"n":1}}"#);
    let error = tokio::time::timeout(HANG_GUARD, sender.send(request(2, "ping")))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!("POST {}: no complete answer within 200ms", server.url("/messages"))
    );
    assert!(!sender.is_closed());
}

#[tokio::test]
async fn redirects_are_followed_within_the_origin_only() {
    let bystander = Bystander::new();
    let elsewhere = format!("http://{}/sse", bystander.addr);
    let stream = EventStream::default();
    let events = stream.clone();
    let server = HttpServer::start(move |request| match request.target.as_str() {
        "/old" => Reply::status(307).with_header("location", "/sse"),
        "/moved" => Reply::status(302).with_header("location", &elsewhere),
        _ => events.open("event: endpoint\ndata: /messages\n\n"),
    })
    .await;
    let transport = connect(SseConfig::new(server.url("/old")).header("X-Api-Key", "k"))
        .await
        .unwrap();
    assert_eq!(transport.endpoint().as_str(), server.url("/messages"));
    let requests = server.requests();
    assert_eq!(requests[1].target, "/sse");
    assert_eq!(requests[1].header("x-api-key"), Some("k"));

    let error = connect(SseConfig::new(server.url("/moved")).header("X-Api-Key", "k"))
        .await
        .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "could not connect to {}: GET {}: was redirected (HTTP 302) to http://{addr}/sse, another origin; \
             redirects are followed only within the same origin, so that credentials and custom headers never \
             reach another server (configure the new URL if it is right)",
            server.url("/moved"),
            server.url("/moved"),
            addr = bystander.addr
        )
    );
    assert!(!bystander.contacted());
}

#[tokio::test]
async fn connect_failures_name_the_url() {
    let bystander = Bystander::new();
    let closed_port = format!("http://{}/sse", bystander.addr);
    drop(bystander);
    let error = connect(SseConfig::new(&closed_port)).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Connect);
    assert!(
        plexus_transport::error_chain(&error)
            .starts_with(&format!("could not connect to {closed_port}: Connection refused")),
        "{error}"
    );

    let error = connect(SseConfig::new("ws://127.0.0.1:1/sse?token=secret"))
        .await
        .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "could not connect to ws://127.0.0.1:1/sse?…: the URL scheme is \"ws\"; the SSE transport needs http or https"
    );
    let error = connect(SseConfig::new("http://127.0.0.1:1/sse").header("Bad Name", "v"))
        .await
        .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "could not connect to http://127.0.0.1:1/sse: the header name \"Bad Name\" is not a valid HTTP header name"
    );
}

#[tokio::test]
async fn https_to_a_plain_server_fails_the_tls_handshake_cleanly() {
    // A plain HTTP server answers the TLS greeting with a plain 400, as real ones do.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/sse", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let (mut socket, _) = listener.accept().await.unwrap();
        socket
            .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
    });
    let error = connect(SseConfig::new(&url)).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Connect, "{error}");
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!("could not connect to {url}: TLS: received corrupt message of type InvalidContentType")
    );
    server.await.unwrap();
}
