//! Event streams against a scripted server: the standalone GET stream (405, reconnection with
//! `Last-Event-ID`, the server's `retry:`, bounded attempts) and the resumption of a POST's SSE
//! stream that the server closes before the response.

mod common;

use std::time::Duration;

use common::mcp::{
    SESSION, VERSION, handshake, recv_lost, recv_message, recv_response, request, result, script, transport,
};
use common::{Recorded, Reply, Step, TestServer, event, guard, priming};
use plexus_http::{EventStreamState, ReconnectPolicy, SessionInfo};
use plexus_jsonrpc::{Message, RequestId};
use plexus_transport::TransportSender;
use serde_json::json;

/// A policy whose own delay would outlast the hang guard: a reconnection that happens anyway
/// followed the server's `retry:`.
fn patient() -> ReconnectPolicy {
    ReconnectPolicy {
        initial_delay: Duration::from_secs(3600),
        max_delay: Duration::from_secs(3600),
        ..ReconnectPolicy::default()
    }
}

/// A policy that retries at once, three times.
fn hasty() -> ReconnectPolicy {
    ReconnectPolicy {
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_attempts: 3,
        ..ReconnectPolicy::default()
    }
}

fn is_resume(r: &Recorded) -> bool {
    r.method == "GET" && r.header("last-event-id").is_some()
}

async fn wait_for_state(info: &SessionInfo, done: impl Fn(&EventStreamState) -> bool) -> EventStreamState {
    guard(async {
        loop {
            let state = info.event_stream();
            if done(&state) {
                return state;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
}

async fn wait_for_idle(info: &SessionInfo) {
    guard(async {
        while info.running_tasks() != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

fn notification_text(n: u32) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}).to_string()
}

fn n_of(message: &Message) -> u64 {
    let Message::Notification(notification) = message else {
        panic!("expected a notification, got {message:?}")
    };
    let params: serde_json::Value = serde_json::from_str(notification.params.as_ref().unwrap().get()).unwrap();
    params["n"].as_u64().unwrap()
}

#[tokio::test]
async fn the_get_stream_resumes_with_last_event_id_after_the_servers_retry() {
    let server = TestServer::start(script(|r| {
        (r.method == "GET").then(|| match r.header("last-event-id") {
            None => Reply::sse(
                &[],
                vec![
                    Step::Text("retry: 10\n".to_owned()),
                    priming("g-0"),
                    event(Some("g-1"), &notification_text(1)),
                    Step::End,
                ],
            ),
            Some("g-1") => Reply::sse(&[], vec![event(Some("g-2"), &notification_text(2)), Step::Forever]),
            Some(other) => Reply::status(400, format!("unexpected Last-Event-ID {other}"), &[]),
        })
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.reconnect(patient()));
    assert_eq!(info.event_stream(), EventStreamState::NotStarted);
    handshake(&sender, &mut receiver).await;
    assert_eq!(n_of(&recv_message(&mut receiver).await), 1);
    assert_eq!(n_of(&recv_message(&mut receiver).await), 2);
    assert_eq!(info.event_stream(), EventStreamState::Open);
    let gets: Vec<Recorded> = server.requests().into_iter().filter(|r| r.method == "GET").collect();
    assert_eq!(gets.len(), 2);
    assert_eq!(gets[0].header("last-event-id"), None);
    assert_eq!(gets[1].header("last-event-id"), Some("g-1"));
    for get in &gets {
        assert_eq!(get.header("accept"), Some("text/event-stream"));
        assert_eq!(get.header("mcp-session-id"), Some(SESSION));
        assert_eq!(get.header("mcp-protocol-version"), Some(VERSION));
    }
    sender.close().await.unwrap();
    wait_for_idle(&info).await;
}

#[tokio::test]
async fn a_405_means_the_server_has_no_event_stream() {
    let server = TestServer::start(script(|_| None)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    wait_for_state(&info, |s| *s == EventStreamState::Unsupported).await;
    wait_for_idle(&info).await;
    assert_eq!(server.requests().iter().filter(|r| r.method == "GET").count(), 1);
    sender.close().await.unwrap();
}

#[tokio::test]
async fn the_get_stream_is_given_up_after_the_attempts() {
    let server = TestServer::start(script(|r| (r.method == "GET").then(|| Reply::status(503, "busy", &[])))).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.reconnect(hasty()));
    handshake(&sender, &mut receiver).await;
    let state = wait_for_state(&info, |s| matches!(s, EventStreamState::GaveUp { .. })).await;
    assert_eq!(
        state,
        EventStreamState::GaveUp {
            reason: format!(
                "3 connection attempts in a row brought nothing (last: the server answered HTTP 503 to GET {}: busy)",
                server.url
            )
        }
    );
    wait_for_idle(&info).await;
    assert_eq!(server.requests().iter().filter(|r| r.method == "GET").count(), 3);
    // Requests still work.
    assert_eq!(
        common::mcp::call(&sender, request(1, "ping")).await.id,
        Some(RequestId::Number(1))
    );
    sender.close().await.unwrap();
}

/// The server answers `tools/call` with an SSE stream that `post_steps` describes, and a GET
/// carrying a `Last-Event-ID` with `resume(last_event_id, call_id)`.
fn resumable_server(
    post_steps: fn() -> Vec<Step>,
    resume: fn(&str) -> Reply,
) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    script(move |r| {
        if r.rpc_method().as_deref() == Some("tools/call") {
            return Some(Reply::sse(&[], post_steps()));
        }
        if r.method == "GET" {
            return Some(match r.header("last-event-id") {
                Some(id) => resume(id),
                None => Reply::status(405, "", &[]),
            });
        }
        None
    })
}

#[tokio::test]
async fn a_post_stream_closed_before_the_response_is_resumed_by_get() {
    fn post_steps() -> Vec<Step> {
        vec![
            Step::Text("retry: 5\n".to_owned()),
            priming("c-0"),
            event(Some("c-1"), &notification_text(1)),
            Step::End,
        ]
    }
    fn resume(last: &str) -> Reply {
        if last == "c-1" {
            Reply::sse(
                &[],
                vec![
                    event(Some("c-2"), &result(&json!(9), &json!({"done": true}))),
                    Step::End,
                ],
            )
        } else {
            Reply::status(400, format!("unexpected Last-Event-ID {last}"), &[])
        }
    }
    let server = TestServer::start(resumable_server(post_steps, resume)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.reconnect(patient()));
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(9, "tools/call"))).await.unwrap();
    assert_eq!(n_of(&recv_message(&mut receiver).await), 1);
    let response = recv_response(&mut receiver).await;
    assert_eq!(response.id, Some(RequestId::Number(9)));
    assert_eq!(common::mcp::result_of(&response), json!({"done": true}));
    let resumes: Vec<Recorded> = server.requests().into_iter().filter(is_resume).collect();
    assert_eq!(resumes.len(), 1);
    assert_eq!(resumes[0].header("last-event-id"), Some("c-1"));
    assert_eq!(resumes[0].header("mcp-session-id"), Some(SESSION));
    wait_for_idle(&info).await;
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_post_stream_cut_mid_body_is_resumed_too() {
    fn post_steps() -> Vec<Step> {
        vec![priming("x-0"), Step::Text("retry: 1\n\n".to_owned()), Step::Cut]
    }
    fn resume(last: &str) -> Reply {
        Reply::sse(
            &[],
            vec![
                event(Some("x-1"), &result(&json!(3), &json!({"from": last}))),
                Step::End,
            ],
        )
    }
    let server = TestServer::start(resumable_server(post_steps, resume)).await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c.reconnect(patient()));
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(3, "tools/call"))).await.unwrap();
    let response = recv_response(&mut receiver).await;
    assert_eq!(common::mcp::result_of(&response), json!({"from": "x-0"}));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_post_stream_without_an_event_id_fails_its_request() {
    fn post_steps() -> Vec<Step> {
        vec![event(None, &notification_text(1)), Step::End]
    }
    fn resume(_: &str) -> Reply {
        Reply::status(500, "never asked", &[])
    }
    let server = TestServer::start(resumable_server(post_steps, resume)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(4, "tools/call"))).await.unwrap();
    assert_eq!(n_of(&recv_message(&mut receiver).await), 1);
    let (id, reason) = recv_lost(&mut receiver).await;
    assert_eq!(id, RequestId::Number(4));
    assert_eq!(
        reason,
        "the response stream ended before the response (the server ended the stream) and the server \
         sent no event id to resume from"
    );
    wait_for_idle(&info).await;
    assert!(!server.requests().iter().any(is_resume));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_resume_that_keeps_failing_gives_up_after_the_attempts() {
    fn post_steps() -> Vec<Step> {
        vec![priming("f-0"), Step::End]
    }
    fn resume(_: &str) -> Reply {
        Reply::status(500, "busy", &[])
    }
    let server = TestServer::start(resumable_server(post_steps, resume)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.reconnect(hasty()));
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(5, "tools/call"))).await.unwrap();
    let (id, reason) = recv_lost(&mut receiver).await;
    assert_eq!(id, RequestId::Number(5));
    assert_eq!(
        reason,
        format!(
            "the response stream could not be resumed: 3 connection attempts in a row brought nothing \
             (last: the server answered HTTP 500 to GET {}: busy)",
            server.url
        )
    );
    wait_for_idle(&info).await;
    let resumes: Vec<Recorded> = server.requests().into_iter().filter(is_resume).collect();
    assert_eq!(resumes.len(), 3);
    assert!(resumes.iter().all(|r| r.header("last-event-id") == Some("f-0")));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_resume_whose_streams_bring_nothing_gives_up_too() {
    fn post_steps() -> Vec<Step> {
        vec![priming("e-0"), Step::End]
    }
    fn resume(_: &str) -> Reply {
        Reply::sse(&[], vec![Step::Text(": nothing new\n\n".to_owned()), Step::End])
    }
    let server = TestServer::start(resumable_server(post_steps, resume)).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.reconnect(hasty()));
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(6, "tools/call"))).await.unwrap();
    let (id, reason) = recv_lost(&mut receiver).await;
    assert_eq!(id, RequestId::Number(6));
    assert_eq!(
        reason,
        "the response stream could not be resumed: 3 connection attempts in a row brought nothing \
         (last: the server ended the stream)"
    );
    wait_for_idle(&info).await;
    assert_eq!(server.requests().iter().filter(|r| is_resume(r)).count(), 3);
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_resume_answered_405_fails_the_request() {
    fn post_steps() -> Vec<Step> {
        vec![priming("n-0"), Step::End]
    }
    fn resume(_: &str) -> Reply {
        Reply::status(405, "", &[])
    }
    let server = TestServer::start(resumable_server(post_steps, resume)).await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c.reconnect(hasty()));
    handshake(&sender, &mut receiver).await;
    guard(sender.send(request(8, "tools/call"))).await.unwrap();
    assert_eq!(
        recv_lost(&mut receiver).await,
        (
            RequestId::Number(8),
            "the response stream ended before the response and cannot be resumed: the server answered GET \
             with 405"
                .to_owned()
        )
    );
    sender.close().await.unwrap();
}

/// A script whose `tools/call` gets an SSE stream that primes and then never ends.
fn never_answered() -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
    script(|r| {
        (r.rpc_method().as_deref() == Some("tools/call")).then(|| Reply::sse(&[], vec![priming("0"), Step::Forever]))
    })
}

#[tokio::test]
async fn a_response_stream_outliving_its_requests_timeout_is_dropped_and_the_request_fails() {
    let server = TestServer::start(never_answered()).await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let call = request(1, "tools/call").with_reply_timeout(Duration::from_millis(200));
    assert!(guard(sender.send(call)).await.unwrap().is_none());
    let (id, reason) = recv_lost(&mut receiver).await;
    assert_eq!(id, RequestId::Number(1));
    assert_eq!(
        reason,
        "no response within 1.2s (the request's own timeout of 200ms and a grace of 1s); its response \
         stream was dropped"
    );
    wait_for_idle(&info).await;
    sender.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_drops_its_response_stream() {
    // The server ignores the cancellation and keeps the stream open: the client lets it go.
    let server = TestServer::start(never_answered()).await;
    let transport = plexus_http::HttpTransport::new(plexus_http::HttpConfig::new(&server.url)).unwrap();
    let info = transport.info();
    let client = plexus_client::Client::connect(Box::new(transport), plexus_client::ClientOptions::new("t"))
        .await
        .unwrap();
    // Resets on progress without a cap: the transport is given no timeout and must not set one.
    let options = plexus_client::RequestOptions::with_timeout(Duration::from_millis(300)).reset_on_progress(None);
    let error = guard(client.call_tool_with("anything", None, options))
        .await
        .unwrap_err();
    assert!(matches!(error, plexus_client::ClientError::Timeout { .. }), "{error:?}");
    let cancelled = server
        .wait_until("notifications/cancelled", |all| {
            all.iter()
                .any(|r| r.rpc_method().as_deref() == Some("notifications/cancelled"))
        })
        .await;
    let cancel = cancelled
        .iter()
        .find(|r| r.rpc_method().as_deref() == Some("notifications/cancelled"))
        .unwrap();
    let call = cancelled
        .iter()
        .find(|r| r.rpc_method().as_deref() == Some("tools/call"))
        .unwrap();
    assert_eq!(cancel.json()["params"]["requestId"], call.rpc_id());
    wait_for_idle(&info).await;
    client.close().await.unwrap();
}
