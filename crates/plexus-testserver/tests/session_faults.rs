//! Every fault switch of the test server, seen through the real client stack: each ends in a
//! defined outcome, nothing hangs, and no process is left behind.

mod support;

use std::time::Duration;

use plexus_client::{ClientError, RequestOptions};
use plexus_transport::{ErrorClass, TransportError};
use serde_json::json;
use support::{args, config, connect, connect_with, events, first_text, read_pid, temp_dir, wait_for_event, wait_gone};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_fails_every_pending_call_with_the_stderr_tail() {
    let client = connect(&[]).await.unwrap();
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    client.on_close(move |reason| {
        let _ = closed_tx.send(reason.to_string());
    });
    let hanging = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("hang", None).await })
    };
    // Let the hang reach the server before the crash.
    client.ping().await.unwrap();
    let error = client.call_tool("crash", args(json!({"code": 7}))).await.unwrap_err();
    let expected = "the connection is closed: the server exited with status 7\n--- last stderr output of the server ---\nplexus-testserver: crashing as asked";
    assert_eq!(error.to_string(), expected);
    assert_eq!(error.transport_class(), Some(ErrorClass::Closed));
    let other = tokio::time::timeout(support::HANG_GUARD, hanging)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        other.to_string(),
        expected,
        "the other pending call fails with the same reason"
    );
    assert_eq!(
        tokio::time::timeout(support::HANG_GUARD, closed_rx)
            .await
            .unwrap()
            .unwrap(),
        expected
    );
    assert!(client.is_closed());
    // Later calls fail at once with the same reason.
    assert_eq!(client.ping().await.unwrap_err().to_string(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_ignoring_signals_with_a_grandchild_leaves_nothing_behind() {
    let dir = temp_dir();
    let log = dir.path().join("events.jsonl");
    let pidfile = dir.path().join("grandchild.pid");
    let client = connect(&[
        "--ignore-signals",
        "--ignore-stdin-close",
        "--event-log",
        log.to_str().unwrap(),
        "--spawn-grandchild",
        pidfile.to_str().unwrap(),
    ])
    .await
    .unwrap();
    let grandchild = read_pid(&pidfile).await;
    let server = wait_for_event(&log, |e| e["event"] == "start").await["pid"]
        .as_i64()
        .unwrap() as i32;
    client.close().await.unwrap();
    wait_gone(server).await;
    wait_gone(grandchild).await;
    let signals: Vec<String> = events(&log)
        .iter()
        .filter(|e| e["event"] == "signal")
        .map(|e| e["signal"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        signals,
        ["SIGINT", "SIGTERM"],
        "the server saw SIGINT, then SIGTERM (then SIGKILL, which it cannot log)"
    );
    // stdin is closed first, but the server may see the signal and the end of its input in the
    // same wake-up and log them in either order: only that it saw both is certain.
    assert!(
        events(&log).iter().any(|e| e["event"] == "stdin-closed"),
        "the server saw its stdin close"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_shuts_the_server_down() {
    let dir = temp_dir();
    let log = dir.path().join("events.jsonl");
    let pidfile = dir.path().join("grandchild.pid");
    let client = connect(&[
        "--event-log",
        log.to_str().unwrap(),
        "--spawn-grandchild",
        pidfile.to_str().unwrap(),
    ])
    .await
    .unwrap();
    let grandchild = read_pid(&pidfile).await;
    let server = wait_for_event(&log, |e| e["event"] == "start").await["pid"]
        .as_i64()
        .unwrap() as i32;
    drop(client);
    wait_gone(server).await;
    wait_gone(grandchild).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_oversize_lines_are_skipped_and_the_call_succeeds() {
    let client = connect(&["--garbage-line"]).await.unwrap();
    assert_eq!(
        first_text(
            &client
                .call_tool("echo", args(json!({"text": "through garbage"})))
                .await
                .unwrap()
        ),
        "through garbage"
    );
    client.close().await.unwrap();

    let small = config(&[]).max_message_size(64 * 1024);
    let client = connect_with(small, support::handshake_options("testserver"))
        .await
        .unwrap();
    let result = client
        .call_tool("oversize", args(json!({"bytes": 1_000_000})))
        .await
        .unwrap();
    assert!(!result.is_error());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_over_the_limit_fails_that_call_at_once_saying_why() {
    let small = config(&[]).max_message_size(64 * 1024);
    let client = connect_with(small, support::handshake_options("testserver"))
        .await
        .unwrap();
    // A minute to wait, but the call ends as soon as its reply is dropped.
    let options = RequestOptions::with_timeout(Duration::from_secs(60));
    let call = client.call_tool_with("large", args(json!({"bytes": 200_000})), options);
    let error = tokio::time::timeout(support::HANG_GUARD, call)
        .await
        .expect("the call fails at once, not at its timeout")
        .unwrap_err();
    let ClientError::Transport(TransportError::DroppedReply { id, reason }) = &error else {
        panic!("a dropped reply: {error:?}")
    };
    assert_eq!(id.as_ref(), Some(&plexus_jsonrpc::RequestId::Number(1)));
    let TransportError::TooLarge { size, limit } = **reason else {
        panic!("too large: {reason:?}")
    };
    assert!(size > 200_000 && limit == 64 * 1024, "{size} {limit}");
    assert_eq!(
        plexus_transport::error_chain(&error),
        format!(
            "the server's reply to request 1 was dropped: a message of {size} bytes from the server is larger than \
             the 65536-byte limit; it was discarded (raise the limit with PLEXUS_MAX_MESSAGE_SIZE)"
        )
    );
    assert_eq!(
        first_text(&client.call_tool("echo", args(json!({"text": "after"}))).await.unwrap()),
        "after"
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_times_out_after_an_unreadable_message_says_it_may_have_been_its_reply() {
    let client = connect(&[]).await.unwrap();
    // A line that looks like the start of a reply but is cut off before any id (the server
    // writes it, then never answers the hang).
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .call_tool_with("hang", None, RequestOptions::with_timeout(Duration::from_millis(800)))
                .await
        })
    };
    client.ping().await.unwrap();
    let result = client
        .call_tool(
            "garbage",
            args(json!({"line": "{\"jsonrpc\":\"2.0\",\"result\":{\"content\":"})),
        )
        .await
        .unwrap();
    assert!(!result.is_error());
    let error = waiting.await.unwrap().unwrap_err();
    let ClientError::Timeout { unidentified, .. } = &error else {
        panic!("a timeout: {error:?}")
    };
    assert_eq!(unidentified.as_ref().map(|u| u.count), Some(1), "{error}");
    assert!(
        plexus_transport::error_chain(&error).starts_with(
            "tools/call timed out after 800 ms; meanwhile a message from the server was dropped whose id could not be \
             read, so it may have been the reply (the server sent an invalid message: the message is not valid JSON: "
        ),
        "{error}"
    );
    // A request sent after the drop knows nothing of it.
    let later = client
        .call_tool_with("hang", None, RequestOptions::with_timeout(Duration::from_millis(100)))
        .await
        .unwrap_err();
    assert_eq!(later.to_string(), "tools/call timed out after 100 ms");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_drip_arrives_whole() {
    let client = connect(&[]).await.unwrap();
    let result = client.call_tool("drip", args(json!({"delay_ms": 5}))).await.unwrap();
    assert!(!result.is_error());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_exiting_at_start_is_a_connect_error_with_its_stderr() {
    let error = connect(&["--exit-at-start", "4"]).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(
            "the connection is closed: the server exited with status 4\n--- last stderr output of the server ---\n"
        ),
        "{text}"
    );
    assert!(matches!(error, ClientError::Transport(TransportError::Closed { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_stderr_neither_blocks_nor_grows() {
    let client = connect(&["--flood-stderr", "20000000"]).await.unwrap();
    for i in 0..100 {
        let text = format!("{i}");
        assert_eq!(
            first_text(&client.call_tool("echo", args(json!({ "text": text }))).await.unwrap()),
            text
        );
    }
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_call_times_out() {
    let client = connect(&[]).await.unwrap();
    let error = client
        .call_tool_with("hang", None, RequestOptions::with_timeout(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Timeout { after, .. } if after == Duration::from_millis(200)));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_n_calls_closes_the_session() {
    let client = connect(&["--crash-after", "2"]).await.unwrap();
    client.call_tool("echo", args(json!({"text": "1"}))).await.unwrap();
    let second = client.call_tool("echo", args(json!({"text": "2"}))).await;
    let third = client.call_tool("echo", args(json!({"text": "3"}))).await;
    // The server exits after answering (or while answering) its second call; the third cannot succeed.
    let error = third.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the connection is closed: the server exited with status 1"),
        "{error}; second: {second:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_and_a_json_rpc_error_are_told_apart() {
    let client = connect(&[]).await.unwrap();
    let result = client.call_tool("error", None).await.unwrap();
    assert!(result.is_error());
    let error = client.call_tool("fail", None).await.unwrap_err();
    assert!(matches!(error, ClientError::Rpc { .. }), "{error:?}");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_does_not_exist_is_named() {
    let error = connect_with(
        plexus_stdio::StdioConfig::new("plexus-no-such-command"),
        support::handshake_options("x"),
    )
    .await
    .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "could not connect to plexus-no-such-command: command not found: plexus-no-such-command"
    );
}
