//! The client stack end to end against the test server: handshake, negotiation, pagination,
//! ordering, concurrency, timeouts, cancellation, progress, server requests and notifications.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use plexus_client::{
    CancelHandle, ClientError, ClientHandler, RequestOptions, ServerNotification, ServerRequestContext,
};
use plexus_jsonrpc::ErrorObject;
use plexus_protocol::{ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability, ProtocolVersion};
use serde_json::json;
use support::{args, connect, connect_with, first_text, temp_dir, wait_for_event};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_negotiates_the_newest_version() {
    let client = connect(&[]).await.unwrap();
    let details = client.server();
    assert_eq!(details.protocol_version, ProtocolVersion::LATEST);
    assert_eq!(details.server_info.name, "plexus-testserver");
    assert!(details.capabilities.tools.is_some());
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_supported_version_is_accepted() {
    for version in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let client = connect(&["--protocol-version", version]).await.unwrap();
        assert_eq!(client.server().protocol_version.as_str(), version);
        client.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_version_is_a_clear_error_and_the_server_is_stopped() {
    let log = temp_dir();
    let log_path = log.path().join("events.jsonl");
    let error = connect(&[
        "--protocol-version",
        "1999-01-01",
        "--event-log",
        log_path.to_str().unwrap(),
    ])
    .await
    .unwrap_err();
    assert!(matches!(error, ClientError::Negotiation(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the server answered initialize with protocol version \"1999-01-01\", which this client does not support (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"
    );
    // The transport was closed: the server saw its stdin close (or a signal) and exited.
    wait_for_event(&log_path, |e| e["event"] == "exit").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_before_the_initialize_result_are_fine() {
    let client = connect(&["--notify-before-init"]).await.unwrap();
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pagination_collects_every_page_once() {
    let client = connect(&["--tools", "25", "--page-size", "7"]).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    let generated: Vec<_> = tools
        .iter()
        .filter(|t| t.name.starts_with("tool-"))
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(generated.len(), 25);
    let mut unique = tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), tools.len(), "no tool listed twice");
    assert!(tools.iter().any(|t| t.name == "echo"));
    let page = client.list_tools_page(None).await.unwrap();
    assert_eq!(page.tools.len(), 7);
    assert!(page.next_cursor.is_some());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_cursor_is_an_error_not_a_loop() {
    let client = connect(&["--page-size", "3", "--repeat-cursor"]).await.unwrap();
    let error = client.list_tools().await.unwrap_err();
    assert!(matches!(error, ClientError::Pagination { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("tools/list: the server's list does not end or is too long (the cursor "),
        "{error}"
    );
    assert!(error.to_string().ends_with(" came back a second time)"), "{error}");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_out_of_order_reach_their_callers() {
    let client = connect(&[]).await.unwrap();
    let slow_client = client.clone();
    let slow = tokio::spawn(async move {
        slow_client
            .call_tool("slow", args(json!({"ms": 3000, "steps": 0})))
            .await
    });
    // The fast call is answered while the slow one is still running.
    let echo = client.call_tool("echo", args(json!({"text": "first"}))).await.unwrap();
    assert_eq!(first_text(&echo), "first");
    assert!(
        !slow.is_finished(),
        "the slow call cannot have finished before the echo"
    );
    let slow = slow.await.unwrap().unwrap();
    assert_eq!(first_text(&slow), "slow: done after 3000 ms");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_pipelined_calls_are_none_lost_or_mismatched() {
    let client = connect(&[]).await.unwrap();
    let tasks: Vec<_> = (0..10_000)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let text = format!("call {i}");
                let result = client.call_tool("echo", args(json!({ "text": text }))).await.unwrap();
                (text, first_text(&result))
            })
        })
        .collect();
    let mut matched = 0;
    for task in tasks {
        let (sent, received) = task.await.unwrap();
        assert_eq!(sent, received);
        matched += 1;
    }
    assert_eq!(matched, 10_000);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_fails_the_call_and_the_server_sees_cancelled() {
    let log = temp_dir();
    let log_path = log.path().join("events.jsonl");
    let client = connect(&["--event-log", log_path.to_str().unwrap()]).await.unwrap();
    let options = RequestOptions::with_timeout(Duration::from_millis(300));
    let error = client.call_tool_with("hang", None, options).await.unwrap_err();
    assert_eq!(error.to_string(), "tools/call timed out after 300 ms");
    let cancelled = wait_for_event(&log_path, |e| {
        e["event"] == "notification" && e["method"] == "notifications/cancelled"
    })
    .await;
    assert_eq!(cancelled["params"]["reason"], "timed out after 300 ms");
    assert!(cancelled["params"]["requestId"].is_i64(), "{cancelled}");
    // The session goes on.
    assert_eq!(
        first_text(
            &client
                .call_tool("echo", args(json!({"text": "still here"})))
                .await
                .unwrap()
        ),
        "still here"
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_call_cancels_it_on_the_server() {
    let log = temp_dir();
    let log_path = log.path().join("events.jsonl");
    let client = connect(&["--event-log", log_path.to_str().unwrap()]).await.unwrap();
    let call = client.call_tool("hang", None);
    // Our own deadline drops the future while the server works on it.
    assert!(tokio::time::timeout(Duration::from_millis(200), call).await.is_err());
    let cancelled = wait_for_event(&log_path, |e| e["method"] == "notifications/cancelled").await;
    assert_eq!(cancelled["params"]["reason"], "the caller cancelled the request");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_handle_ends_a_call_with_its_reason_once_the_server_was_told() {
    let log = temp_dir();
    let log_path = log.path().join("events.jsonl");
    let client = connect(&["--event-log", log_path.to_str().unwrap()]).await.unwrap();
    let handle = CancelHandle::new();
    let call = tokio::spawn({
        let client = client.clone();
        let options = RequestOptions::default().cancel_with(handle.clone());
        async move { client.call_tool_with("hang", None, options).await }
    });
    wait_for_event(&log_path, |e| e["event"] == "request" && e["params"]["name"] == "hang").await;
    assert!(handle.cancel("the user pressed stop"));
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(&error, ClientError::Cancelled { reason } if reason == "the user pressed stop"),
        "{error:?}"
    );
    let cancelled = wait_for_event(&log_path, |e| e["method"] == "notifications/cancelled").await;
    assert_eq!(cancelled["params"]["reason"], "the user pressed stop");

    // A handle cancelled already sends nothing.
    let options = RequestOptions::default().cancel_with(handle);
    let error = client
        .call_tool_with("echo", args(json!({"text": "never"})), options)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Cancelled { .. }), "{error:?}");
    client.ping().await.unwrap();
    let echoes = support::events(&log_path)
        .into_iter()
        .filter(|e| e["event"] == "request" && e["params"]["name"] == "echo")
        .count();
    assert_eq!(echoes, 0);
    client.close().await.unwrap();
}

/// On one thread, the task a dropped call spawns to tell the server cannot run before the
/// caller's next request is sent: that request sends the cancellation first.
#[tokio::test(flavor = "current_thread")]
async fn the_cancellation_of_a_dropped_call_goes_out_before_the_next_request() {
    let log = temp_dir();
    let log_path = log.path().join("events.jsonl");
    let client = connect(&["--event-log", log_path.to_str().unwrap()]).await.unwrap();
    let call = client.call_tool("hang", None);
    assert!(tokio::time::timeout(Duration::from_millis(200), call).await.is_err());
    let result = client.call_tool("echo", args(json!({"text": "next"}))).await.unwrap();
    assert_eq!(first_text(&result), "next");
    let order: Vec<String> = support::events(&log_path)
        .into_iter()
        .filter_map(|e| match (e["event"].as_str(), e["method"].as_str()) {
            (Some("notification"), Some(method)) if method == "notifications/cancelled" => Some(method.to_owned()),
            (Some("request"), Some("tools/call")) => e["params"]["name"].as_str().map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["hang", "notifications/cancelled", "echo"]);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_caller_and_can_extend_the_timeout() {
    let client = connect(&[]).await.unwrap();
    let (callback, mut reports) = plexus_client::progress_channel(64);
    let options = RequestOptions::default().progress(callback);
    let result = client
        .call_tool_with("slow", args(json!({"ms": 200, "steps": 4})), options)
        .await
        .unwrap();
    assert_eq!(first_text(&result), "slow: done after 200 ms");
    let mut seen = Vec::new();
    while let Ok(report) = reports.try_recv() {
        seen.push((report.progress, report.total, report.message.clone()));
    }
    assert_eq!(
        seen,
        vec![
            (1.0, Some(4.0), Some("step 1 of 4".to_owned())),
            (2.0, Some(4.0), Some("step 2 of 4".to_owned())),
            (3.0, Some(4.0), Some("step 3 of 4".to_owned())),
            (4.0, Some(4.0), Some("step 4 of 4".to_owned()))
        ]
    );

    // 3 s of work reporting every 100 ms: a 1 s timeout fails without resets and passes with them.
    let long = || args(json!({"ms": 3000, "steps": 30}));
    let plain = RequestOptions::with_timeout(Duration::from_secs(1));
    assert!(matches!(
        client.call_tool_with("slow", long(), plain).await,
        Err(ClientError::Timeout { .. })
    ));
    let resetting = RequestOptions::with_timeout(Duration::from_secs(1)).reset_on_progress(None);
    client.call_tool_with("slow", long(), resetting).await.unwrap();
    // …but never beyond the maximum total.
    let capped =
        RequestOptions::with_timeout(Duration::from_secs(1)).reset_on_progress(Some(Duration::from_millis(1500)));
    let error = client.call_tool_with("slow", long(), capped).await.unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error:?}");
    client.close().await.unwrap();
}

/// Accepts every form elicitation with a fixed name, and counts the requests.
struct Answering(AtomicUsize);

#[plexus_client::async_trait]
impl ClientHandler for Answering {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        _context: ServerRequestContext,
    ) -> Result<ElicitResult, ErrorObject> {
        self.0.fetch_add(1, Ordering::SeqCst);
        assert!(matches!(params, ElicitRequestParams::Form(_)), "{params:?}");
        let content = json!({"name": "Ada", "confirm": true}).as_object().cloned().unwrap();
        Ok(serde_json::from_value(json!({"action": "accept", "content": content})).unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_reach_the_handler_for_declared_capabilities_only() {
    let handler = Arc::new(Answering(AtomicUsize::new(0)));
    let options = support::handshake_options("testserver").handler(handler.clone());
    let client = connect_with(support::config(&[]), options).await.unwrap();
    let result = client
        .call_tool("elicit", args(json!({"message": "Who are you?"})))
        .await
        .unwrap();
    assert!(!result.is_error());
    let answer: serde_json::Value = serde_json::from_str(&first_text(&result)).unwrap();
    assert_eq!(
        answer,
        json!({"action": "accept", "content": {"name": "Ada", "confirm": true}})
    );
    assert_eq!(handler.0.load(Ordering::SeqCst), 1);
    // Sampling was not declared: the server is told so and reports it as a tool error.
    let sampled = client.call_tool("sample", args(json!({"prompt": "hi"}))).await.unwrap();
    assert!(sampled.is_error());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_reach_subscribers() {
    let client = connect(&[]).await.unwrap();
    let mut notifications = client.subscribe();
    client.call_tool("trigger-list-changed", None).await.unwrap();
    let first = tokio::time::timeout(support::HANG_GUARD, notifications.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(first, ServerNotification::ToolsListChanged), "{first:?}");
    client
        .call_tool("log", args(json!({"level": "warning", "message": "careful"})))
        .await
        .unwrap();
    let log = tokio::time::timeout(support::HANG_GUARD, notifications.recv())
        .await
        .unwrap()
        .unwrap();
    let ServerNotification::LogMessage(params) = log else {
        panic!("{log:?}")
    };
    assert_eq!(params.data, json!("careful"));
    client.subscribe_resource("test://static/hello.txt").await.unwrap();
    client
        .call_tool("update-resource", args(json!({"uri": "test://static/hello.txt"})))
        .await
        .unwrap();
    let updated = tokio::time::timeout(support::HANG_GUARD, notifications.recv())
        .await
        .unwrap()
        .unwrap();
    let ServerNotification::ResourceUpdated(params) = updated else {
        panic!("{updated:?}")
    };
    assert_eq!(params.uri, "test://static/hello.txt");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_prompts_completion_and_logging() {
    let client = connect(&["--page-size", "2"]).await.unwrap();
    let resources = client.list_resources().await.unwrap();
    assert_eq!(
        resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        [
            "test://static/hello.txt",
            "test://static/data.bin",
            "test://static/readme.md"
        ]
    );
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 2);
    let read = client.read_resource("test://static/hello.txt").await.unwrap();
    let contents = serde_json::to_value(&read.contents).unwrap();
    assert_eq!(contents[0]["text"], "Hello from plexus-testserver!\n");
    let prompts = client.list_prompts().await.unwrap();
    assert_eq!(
        prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["simple", "greeting", "code-review"]
    );
    let prompt = client
        .get_prompt("greeting", Some([("name".to_owned(), "Ada".to_owned())].into()))
        .await
        .unwrap();
    assert!(serde_json::to_string(&prompt.messages).unwrap().contains("Ada"));
    let missing = client.read_resource("test://nowhere").await.unwrap_err();
    assert!(matches!(missing, ClientError::Rpc { .. }), "{missing:?}");
    assert!(missing.to_string().starts_with("resources/read failed: "), "{missing}");
    client
        .set_logging_level(plexus_protocol::LoggingLevel::Debug)
        .await
        .unwrap();
    client.close().await.unwrap();
}
