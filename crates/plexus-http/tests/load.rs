//! 100 000 requests through one transport, each with its timer armed: afterwards no request,
//! timer or task is left behind (counted, not timed).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::mcp::{handshake, recv_response, request, result, script, transport};
use common::{Reply, Step, TestServer, event};
use plexus_jsonrpc::RequestId;
use plexus_transport::TransportSender;
use serde_json::json;

const REQUESTS: usize = 100_000;
const CONCURRENCY: usize = 32;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_requests_leave_nothing_behind() {
    // Every tenth request is answered with an SSE stream, the rest with JSON.
    let server = TestServer::start_quiet(script(|r| {
        let id = r.rpc_id();
        (id.as_i64().is_some_and(|n| n % 10 == 0) && r.rpc_method().as_deref() == Some("tools/call"))
            .then(|| Reply::sse(&[], vec![event(Some("1"), &result(&id, &json!({}))), Step::End]))
    }))
    .await;
    let (sender, mut receiver, info) = transport(&server.url, |c| c.request_timeout(Duration::from_secs(60)));
    handshake(&sender, &mut receiver).await;
    wait_until_idle(&info).await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks_before = metrics.num_alive_tasks();
    let connections_before = server.connections();

    // The JSON bodies' responses come back from `send`, the streams' through the receiver.
    let seen = Arc::new(std::sync::Mutex::new(vec![false; REQUESTS]));
    let mark = |seen: &std::sync::Mutex<Vec<bool>>, response: &plexus_jsonrpc::Response| {
        assert!(response.outcome.is_ok(), "{response:?}");
        let Some(RequestId::Number(id)) = response.id else {
            panic!("{response:?}")
        };
        let mut seen = seen.lock().unwrap();
        let slot = &mut seen[usize::try_from(id).unwrap() - 1];
        assert!(!*slot, "response {id} arrived twice");
        *slot = true;
    };
    let reader = tokio::spawn({
        let seen = Arc::clone(&seen);
        async move {
            for _ in 0..REQUESTS / 10 {
                mark(&seen, &recv_response(&mut receiver).await);
            }
            receiver
        }
    });
    let sender = Arc::new(sender);
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|worker| {
            let sender = Arc::clone(&sender);
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                for n in (worker..REQUESTS).step_by(CONCURRENCY) {
                    let id = i64::try_from(n + 1).unwrap();
                    let reply = sender.send(request(id, "tools/call")).await.unwrap();
                    assert_eq!(reply.is_none(), id % 10 == 0, "request {id}");
                    if let Some(response) = reply {
                        mark(&seen, &response);
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(600), worker)
            .await
            .unwrap()
            .unwrap();
    }
    let mut receiver = tokio::time::timeout(Duration::from_secs(600), reader)
        .await
        .unwrap()
        .unwrap();
    assert!(seen.lock().unwrap().iter().all(|&seen| seen), "every response arrived");
    assert!(common::mcp::nothing_queued(&mut receiver), "and nothing else");
    wait_until_idle(&info).await;

    assert_eq!(
        info.requests_in_flight(),
        0,
        "a request (and its timer) outlived its send"
    );
    assert_eq!(info.running_tasks(), 0, "a body reader outlived its body");
    assert!(info.closed().is_none());
    // Pooled connections, not one per request: a sender's next request may start while a
    // reader still finishes the previous body, so about two per concurrent sender when the
    // machine is quiet; a loaded machine (other tests in parallel) delays the return of
    // connections to the pool, so the bound only has to show reuse: under 1 % of the requests.
    let new_connections = server.connections() - connections_before;
    assert!(
        new_connections <= REQUESTS / 100,
        "{new_connections} new connections for {REQUESTS} requests"
    );
    // What is still alive: each new connection's client task and server task, nothing per request.
    let tasks_after = metrics.num_alive_tasks();
    assert!(
        tasks_after <= tasks_before + 2 * new_connections,
        "{tasks_before} tasks before, {tasks_after} after, {new_connections} new connections"
    );
    assert_eq!(server.request_count(), 2 + 1 + REQUESTS, "handshake, GET, requests");
    sender.close().await.unwrap();
}

async fn wait_until_idle(info: &plexus_http::SessionInfo) {
    common::guard(async {
        while info.running_tasks() != 0 || info.requests_in_flight() != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}
