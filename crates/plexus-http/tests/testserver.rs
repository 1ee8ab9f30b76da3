//! Against plexus-testserver's Streamable HTTP mode, run in-process on 127.0.0.1 through its
//! library API: a real MCP server with switchable faults.

mod common;

use std::time::Duration;

use clap::Parser;
use common::guard;
use common::mcp::{
    exchange, handshake, initialize, recv, recv_lost, recv_message, recv_response, request, result_of, transport,
};
use plexus_http::{EventStreamState, ReconnectPolicy};
use plexus_jsonrpc::{Message, Request, RequestId};
use plexus_net::RemoteConfig as _;
use plexus_testserver::EventLogFile as EventLog;
use plexus_testserver::{Cli, Command, RemoteServer};
use plexus_transport::{ErrorClass, OutboundMessage, TransportError, TransportSender, error_chain};
use serde_json::json;

/// Starts `plexus-testserver http ARGS…` in this process.
async fn serve(args: &[&str]) -> RemoteServer {
    let argv = ["plexus-testserver", "http"].iter().chain(args);
    let cli = Cli::try_parse_from(argv).unwrap();
    let Command::Http(options) = cli.command else {
        panic!("`http` parses as the http mode")
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    RemoteServer::http(listener, options).unwrap()
}

async fn wait_for_state(info: &plexus_http::SessionInfo, state: EventStreamState) {
    guard(async {
        while info.event_stream() != state {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

fn echo(id: i64, text: &str) -> OutboundMessage {
    let params = serde_json::value::to_raw_value(&json!({"name": "echo", "arguments": {"text": text}})).unwrap();
    OutboundMessage::from_message(&Message::Request(Request {
        id: RequestId::Number(id),
        method: "tools/call".into(),
        params: Some(params),
    }))
}

fn echoed(response: &plexus_jsonrpc::Response) -> String {
    result_of(response)["content"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_session_with_sse_and_json_responses() {
    for args in [&[][..], &["--json-response"][..]] {
        let server = serve(args).await;
        let (sender, mut receiver, info) = transport(server.url(), |c| c);
        handshake(&sender, &mut receiver).await;
        assert!(info.session_id().is_some(), "{args:?}");
        assert_eq!(info.protocol_version().as_deref(), Some("2025-11-25"));
        let tools = result_of(&exchange(&sender, &mut receiver, request(1, "tools/list")).await);
        assert!(tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == "echo"));
        // A JSON body's response comes back from `send`; an SSE stream's through the receiver.
        let reply = guard(sender.send(echo(2, "hello"))).await.unwrap();
        assert_eq!(reply.is_some(), args.contains(&"--json-response"), "{args:?}");
        let response = match reply {
            Some(response) => response,
            None => recv_response(&mut receiver).await,
        };
        assert_eq!(echoed(&response), "hello");
        sender.close().await.unwrap();
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_stream_closed_after_its_priming_event_is_resumed_after_the_servers_retry() {
    let server = serve(&["--sse-retry-ms", "20"]).await;
    let patient = ReconnectPolicy {
        initial_delay: Duration::from_secs(3600),
        max_delay: Duration::from_secs(3600),
        ..ReconnectPolicy::default()
    };
    let (sender, mut receiver, _info) = transport(server.url(), |c| c.reconnect(patient));
    handshake(&sender, &mut receiver).await;
    for id in 1..=3 {
        guard(sender.send(echo(id, &format!("resumed {id}")))).await.unwrap();
        let response = recv_response(&mut receiver).await;
        assert_eq!(response.id, Some(RequestId::Number(id)));
        assert_eq!(echoed(&response), format!("resumed {id}"));
    }
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_that_does_not_resume_fails_the_request_with_its_reason() {
    let server = serve(&["--sse-retry-ms", "1", "--no-resume"]).await;
    let (sender, mut receiver, _info) = transport(server.url(), |c| c);
    handshake(&sender, &mut receiver).await;
    guard(sender.send(echo(1, "lost"))).await.unwrap();
    let (_, message) = recv_lost(&mut receiver).await;
    assert!(
        message.starts_with(&format!(
            "resuming the response stream failed: the server answered HTTP 400 to GET {}: Bad Request: \
             this server does not resume streams (--no-resume)",
            server.url()
        )),
        "{message}"
    );
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn an_expired_session_ends_the_transport() {
    // initialize and one call (notifications do not count); the next request finds the session gone.
    let server = serve(&["--expire-session-after", "2", "--no-get-stream"]).await;
    let (sender, mut receiver, info) = transport(server.url(), |c| c);
    handshake(&sender, &mut receiver).await;
    guard(sender.send(echo(1, "still here"))).await.unwrap();
    assert_eq!(echoed(&recv_response(&mut receiver).await), "still here");
    let error = guard(sender.send(echo(2, "gone"))).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::SessionExpired);
    let session = info.session_id().unwrap();
    assert_eq!(
        error.to_string(),
        format!("the server ended the session {session:?} (it answered 404); reconnect and retry")
    );
    assert_eq!(
        recv(&mut receiver).await.unwrap_err().class(),
        ErrorClass::SessionExpired
    );
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn resets_fail_each_request_and_leave_the_transport_open() {
    // The first two POSTs (initialize, initialized) are served; every later one is reset.
    let server = serve(&["--reset-after", "2", "--no-get-stream"]).await;
    let (sender, mut receiver, info) = transport(server.url(), |c| c);
    handshake(&sender, &mut receiver).await;
    wait_for_state(&info, EventStreamState::Unsupported).await;
    for id in 1..=4 {
        let error = guard(sender.send(echo(id, "x"))).await.unwrap_err();
        assert_eq!(error.class(), ErrorClass::TerminalIo, "{error}");
        assert!(!sender.is_closed(), "reset {id} closed the transport");
    }
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn statuses_the_layer_above_acts_on() {
    for status in ["400", "404", "405"] {
        let server = serve(&["--http-status-on-initialize", status]).await;
        let (sender, _receiver, _info) = transport(server.url(), |c| c);
        let error = guard(sender.send(initialize(0))).await.unwrap_err();
        assert!(
            matches!(error, TransportError::Http { status: s, .. } if s.to_string() == status),
            "{error:?}"
        );
        server.shutdown().await;
    }
    let server = serve(&["--require-header", "Authorization: Bearer right"]).await;
    let (sender, _receiver, _info) = transport(server.url(), |c| c);
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::NeedsAuth, "{error}");
    let (sender, mut receiver, _info) = transport(server.url(), |c| c.header("Authorization", "Bearer right"));
    handshake(&sender, &mut receiver).await;
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn an_oversize_event_is_reported_and_the_response_still_arrives() {
    let server = serve(&["--oversize-event", "200000"]).await;
    let (sender, mut receiver, _info) = transport(server.url(), |c| c.max_message_size(64 * 1024));
    handshake(&sender, &mut receiver).await;
    guard(sender.send(echo(1, "after the big one"))).await.unwrap();
    let too_large = recv(&mut receiver).await.unwrap_err();
    assert!(
        matches!(too_large, TransportError::TooLarge { limit: 65536, .. }),
        "{too_large:?}"
    );
    assert_eq!(echoed(&recv_response(&mut receiver).await), "after the big one");
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn slow_headers_meet_the_per_request_timeout() {
    let server = serve(&["--slow-headers-ms", "5000"]).await;
    let (sender, _receiver, _info) = transport(server.url(), |c| c.request_timeout(Duration::from_millis(200)));
    let error = guard(sender.send(initialize(0))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: no response within 200ms (the per-request timeout)",
            server.url()
        )
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_get_stream_carries_server_notifications_or_is_refused() {
    let server = serve(&["--no-get-stream"]).await;
    let (sender, mut receiver, info) = transport(server.url(), |c| c);
    handshake(&sender, &mut receiver).await;
    wait_for_state(&info, EventStreamState::Unsupported).await;
    sender.close().await.unwrap();
    server.shutdown().await;

    // With --json-response, messages related to a request travel on the GET stream.
    let server = serve(&["--json-response"]).await;
    let (sender, mut receiver, info) = transport(server.url(), |c| c);
    handshake(&sender, &mut receiver).await;
    wait_for_state(&info, EventStreamState::Open).await;
    let params = serde_json::value::to_raw_value(&json!({"name": "trigger-list-changed", "arguments": {}})).unwrap();
    let call = Message::Request(Request {
        id: RequestId::Number(1),
        method: "tools/call".into(),
        params: Some(params),
    });
    // The response is the POST's JSON body; the notification comes on the event stream.
    let response = guard(sender.send(OutboundMessage::from_message(&call)))
        .await
        .unwrap()
        .expect("the JSON body's response");
    assert_eq!(response.id, Some(RequestId::Number(1)));
    match recv_message(&mut receiver).await {
        Message::Notification(n) if n.method == "notifications/tools/list_changed" => {}
        other => panic!("unexpected {other:?}"),
    }
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_session_over_json_and_sse_responses() {
    // The session engine completes a JSON body's reply in the caller's task (`send` gives it
    // back) and an SSE stream's through its reader: both work, many calls at once.
    for args in [&["--json-response"][..], &[][..]] {
        let server = serve(args).await;
        let transport = plexus_http::HttpTransport::new(plexus_http::HttpConfig::new(server.url())).unwrap();
        let client = plexus_client::Client::connect(Box::new(transport), plexus_client::ClientOptions::new("t"))
            .await
            .unwrap();
        let calls: Vec<_> = (0..32)
            .map(|n| {
                let client = client.clone();
                tokio::spawn(async move {
                    let arguments = json!({"text": format!("call {n}")}).as_object().cloned();
                    let result = client.call_tool("echo", arguments).await.unwrap();
                    serde_json::to_value(&result).unwrap()["content"][0]["text"].clone()
                })
            })
            .collect();
        for (n, call) in calls.into_iter().enumerate() {
            assert_eq!(guard(call).await.unwrap(), json!(format!("call {n}")), "{args:?}");
        }
        client.close().await.unwrap();
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_call_the_server_ran_and_then_hung_up_on_is_never_sent_again() {
    // The second tools/call runs on the server, which then closes the kept-alive connection
    // without answering. Sending it again would run the tool twice.
    let log = EventLog::new("hung-up-call");
    let server = serve(&[
        "--json-response",
        "--no-get-stream",
        "--close-after-request-ms=200",
        "--close-from-call=2",
        "--fault-times=1",
        &log.arg(),
    ])
    .await;
    let (sender, mut receiver, info) = transport(server.url(), |c| c);
    handshake(&sender, &mut receiver).await;
    let first = guard(sender.send(echo(1, "first"))).await.unwrap().unwrap();
    assert_eq!(echoed(&first), "first");
    assert_eq!(
        (info.open_connections(), info.idle_connections()),
        (1, 1),
        "the next call goes on the kept-alive connection"
    );
    let error = guard(sender.send(echo(2, "once"))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: the server closed the connection before answering (the request was sent; whether the server \
             acted on it is unknown)",
            server.url()
        )
    );
    assert_eq!(error.class(), ErrorClass::TerminalIo);
    let runs = log.matching(&json!({"event": "request", "method": "tools/call", "id": 2}));
    assert_eq!(runs.len(), 1, "the call ran exactly once: {runs:?}");
    assert_eq!(
        log.matching(&json!({"event": "fault", "fault": "close-after-request"}))
            .len(),
        1
    );
    // The transport goes on: the next call gets a new connection.
    let third = guard(sender.send(echo(3, "after"))).await.unwrap().unwrap();
    assert_eq!(echoed(&third), "after");
    sender.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_the_server_refuses_before_reading_it_gets_its_status_and_is_sent_once() {
    // 8 MiB: more than the socket buffers hold, so the server's close interrupts the writing.
    let big = "b".repeat(8 << 20);
    for (status, class) in [(413, ErrorClass::Connect), (401, ErrorClass::NeedsAuth)] {
        let log = EventLog::new(&format!("refused-body-{status}"));
        let reject = format!("--reject-large-body=100000:{status}");
        let server = serve(&["--json-response", "--no-get-stream", &reject, &log.arg()]).await;
        let (sender, mut receiver, _info) = transport(server.url(), |c| c);
        handshake(&sender, &mut receiver).await;
        let call = echo(1, &big);
        let size = call.json().len();
        let error = guard(sender.send(call)).await.unwrap_err();
        assert_eq!(error.class(), class, "{error}");
        let refusal = format!(
            "a body of {size} bytes is over the 100000 bytes let through (--reject-large-body); it was not read"
        );
        match &error {
            TransportError::Http {
                status: 413,
                what,
                body,
            } => {
                assert_eq!(
                    what,
                    &format!(
                        "POST {} (a {size}-byte request, which it refused as too large)",
                        server.url()
                    )
                );
                assert_eq!(body, &format!("plexus-testserver: {refusal}"));
            }
            TransportError::NeedsAuth { cause } => {
                let reason = plexus_transport::error_chain(&**cause);
                assert!(reason.contains(&refusal), "{reason}");
            }
            other => panic!("HTTP {status}: {other:?}"),
        }
        let posts = log.matching(&json!({"event": "fault", "fault": "reject-large-body", "status": status}));
        assert_eq!(posts.len(), 1, "HTTP {status}: the request was sent once: {posts:?}");
        let third = guard(sender.send(echo(2, "small"))).await.unwrap().unwrap();
        assert_eq!(echoed(&third), "small");
        sender.close().await.unwrap();
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_over_the_cap_fails_its_call_at_once_saying_its_size() {
    // A JSON body declares its size; an SSE event's is counted as it streams by. Either way the
    // call fails as soon as its reply is dropped, not at its timeout (a minute, past the guard).
    for args in [&["--json-response"][..], &[][..]] {
        let server = serve(args).await;
        let config = plexus_http::HttpConfig::new(server.url()).max_message_size(64 * 1024);
        let transport = plexus_http::HttpTransport::new(config).unwrap();
        let client = plexus_client::Client::connect(Box::new(transport), plexus_client::ClientOptions::new("t"))
            .await
            .unwrap();
        let arguments = json!({"bytes": 200_000}).as_object().cloned();
        let options = plexus_client::RequestOptions::with_timeout(Duration::from_secs(60));
        let error = guard(client.call_tool_with("large", arguments, options))
            .await
            .unwrap_err();
        let plexus_client::ClientError::Transport(TransportError::DroppedReply { id, reason }) = &error else {
            panic!("{args:?}: a dropped reply: {error:?}")
        };
        assert!(matches!(id, Some(RequestId::Number(_))), "{args:?}: {id:?}");
        let TransportError::TooLarge { size, limit } = **reason else {
            panic!("{args:?}: too large: {reason:?}")
        };
        assert!(
            size > 200_000 && size < 201_000 && limit == 64 * 1024,
            "{args:?}: {size} {limit}"
        );
        assert_eq!(
            plexus_transport::error_chain(&error),
            format!(
                "the server's reply to request {} was dropped: a message of {size} bytes from the server is larger \
                 than the 65536-byte limit; it was discarded (raise the limit with PLEXUS_MAX_MESSAGE_SIZE)",
                id.as_ref().unwrap()
            ),
            "{args:?}"
        );
        let arguments = json!({"text": "after"}).as_object().cloned();
        let after = client.call_tool("echo", arguments).await.unwrap();
        assert_eq!(
            serde_json::to_value(&after).unwrap()["content"][0]["text"],
            "after",
            "{args:?}"
        );
        client.close().await.unwrap();
        server.shutdown().await;
    }
}

/// A client session over Streamable HTTP to `server` with `configure` applied to the transport.
async fn client_over(
    server: &RemoteServer,
    configure: impl FnOnce(plexus_http::HttpConfig) -> plexus_http::HttpConfig,
) -> (plexus_client::Client, plexus_http::SessionInfo) {
    let transport = plexus_http::HttpTransport::new(configure(plexus_http::HttpConfig::new(server.url()))).unwrap();
    let info = transport.info();
    let client = plexus_client::Client::connect(Box::new(transport), plexus_client::ClientOptions::new("t"))
        .await
        .unwrap();
    (client, info)
}

fn slow(ms: u64) -> Option<serde_json::Map<String, serde_json::Value>> {
    json!({"ms": ms}).as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_allowed_longer_than_the_request_timeout_gets_its_reply() {
    // The transport's own 200 ms would cut the exchange short; the call's 2 s is what counts.
    for args in [&["--json-response"][..], &[][..]] {
        let server = serve(args).await;
        let (client, _info) = client_over(&server, |c| c.request_timeout(Duration::from_millis(200))).await;
        let options = plexus_client::RequestOptions::with_timeout(Duration::from_secs(2));
        let result = guard(client.call_tool_with("slow", slow(600), options)).await.unwrap();
        assert_eq!(
            serde_json::to_value(&result).unwrap()["content"][0]["text"],
            "slow: done after 600 ms",
            "{args:?}"
        );
        client.close().await.unwrap();
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_times_out_while_its_json_reply_is_pending_is_cancelled_on_the_server() {
    // The transport's own 300 ms would end the exchange first, and the server would never hear
    // that the call was given up; the call's 500 ms comes first and cancels it.
    // A server of the `initialize` era hears a notification (the stateless era closes the
    // call's stream instead: see the facade's http_eras tests).
    let log = EventLog::new("cancelled-json-call");
    let server = serve(&["--era", "legacy", "--json-response", &log.arg()]).await;
    let (client, info) = client_over(&server, |c| c.request_timeout(Duration::from_millis(300))).await;
    let options = plexus_client::RequestOptions::with_timeout(Duration::from_millis(500));
    let error = guard(client.call_tool_with("slow", slow(2000), options))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, plexus_client::ClientError::Timeout { method, after, .. }
            if method == "tools/call" && *after == Duration::from_millis(500)),
        "{error:?}"
    );
    let calls = log.matching(&json!({"event": "request", "method": "tools/call"}));
    assert_eq!(calls.len(), 1, "{calls:?}");
    let id = calls[0]["id"].clone();
    let cancelled = guard(async {
        loop {
            let cancelled = log.matching(&json!({"event": "notification", "method": "notifications/cancelled"}));
            if !cancelled.is_empty() {
                return cancelled;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], id);
    assert_eq!(cancelled[0]["params"]["reason"], "timed out after 500 ms");
    assert_eq!(info.requests_in_flight(), 0);
    client.close().await.unwrap();
    server.shutdown().await;
}

/// Answers elicitations, keeping the context of each.
struct Recorder(std::sync::Mutex<Vec<plexus_client::ServerRequestContext>>);

#[plexus_client::async_trait]
impl plexus_client::ClientHandler for Recorder {
    fn capabilities(&self) -> plexus_protocol::ClientCapabilities {
        plexus_protocol::ClientCapabilities {
            elicitation: Some(plexus_protocol::ElicitationCapability::default()),
            ..plexus_protocol::ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        _params: plexus_protocol::ElicitRequestParams,
        context: plexus_client::ServerRequestContext,
    ) -> Result<plexus_protocol::ElicitResult, plexus_jsonrpc::ErrorObject> {
        self.0.lock().unwrap().push(context);
        Ok(plexus_protocol::ElicitResult::accept(None))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_on_a_calls_response_stream_names_that_call_and_its_tag() {
    // The server (of the `initialize` era, which asks by request) asks on the response stream of
    // the call it asks for: the handler is told which request that is, and the host's tag of it.
    let server = serve(&["--era", "legacy"]).await;
    let transport = plexus_http::HttpTransport::new(plexus_http::HttpConfig::new(server.url())).unwrap();
    let recorder = std::sync::Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
    let options = plexus_client::ClientOptions::new("t").handler(recorder.clone());
    let client = plexus_client::Client::connect(Box::new(transport), options)
        .await
        .unwrap();
    let request = plexus_client::RequestOptions {
        tag: Some(42),
        ..plexus_client::RequestOptions::default()
    };
    let arguments = json!({"message": "which call?"});
    let result = guard(client.call_tool_ref("elicit", &arguments, request))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let contexts = recorder.0.lock().unwrap().clone();
    assert_eq!(contexts.len(), 1, "{contexts:?}");
    // The probe (request 0) and `initialize` (1) come first: the call is request 2.
    assert_eq!(contexts[0].related_request, Some(RequestId::Number(2)));
    assert_eq!(contexts[0].tag, Some(42));
    assert_eq!(contexts[0].server, "t");
    client.close().await.unwrap();
    server.shutdown().await;
}
