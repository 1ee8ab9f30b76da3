//! plexus-client following tasks (`--tasks`: the tool `research`, which runs only as a task)
//! with the server's binary over stdio, in both protocol eras: the stateless era's tasks
//! extension (the call answered with a task, polled with `tasks/get`, its question answered with
//! `tasks/update`) and 2025-11-25's experimental tasks (the call made a task, polled, its result
//! fetched with `tasks/result`, on which the question is asked). Each call runs the tool once;
//! the caller gets the report, the task's status as progress, and a task it gives up on (a
//! cancellation, a timeout, a dropped future) is cancelled on the server.

mod common;
mod support;
mod tasks_support;
mod wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use plexus_client::{CancelHandle, Client, ClientError, ClientOptions, RequestOptions};
use plexus_jsonrpc::ErrorCode;
use plexus_protocol::{CallToolResult, ProgressNotificationParams, ProtocolVersion};
use plexus_testserver::EventLogFile;
use serde_json::{Value, json};
use tasks_support::{Angler, HANG_GUARD, era_a, statuses};

/// The two sessions with `plexus-testserver stdio --tasks ARGS`, each answering the question as
/// `angle` says: the stateless era (the default probe) and the `initialize` era (2025-11-25).
async fn sessions(log: &EventLogFile, args: &[&str], angle: Option<&'static str>) -> Vec<(&'static str, Client)> {
    let mut all: Vec<String> = vec![
        "--tasks".to_owned(),
        "--task-poll-ms".to_owned(),
        "20".to_owned(),
        log.arg(),
    ];
    all.extend(args.iter().map(|arg| (*arg).to_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let handler = Arc::new(Angler {
        angle,
        asked: Mutex::new(Vec::new()),
    });
    let stateless = support::connect_with(support::config(&all), ClientOptions::new("tasks").handler(handler))
        .await
        .unwrap();
    assert_eq!(stateless.server().protocol_version, ProtocolVersion::V2026_07_28);
    let (initialize, _) = era_a(&all, angle).await;
    assert_eq!(initialize.server().protocol_version, ProtocolVersion::V2025_11_25);
    vec![("stateless", stateless), ("initialize", initialize)]
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Calls `research` with `value` as a task, within the hang guard.
async fn research(client: &Client, value: Value, options: RequestOptions) -> Result<CallToolResult, ClientError> {
    tokio::time::timeout(
        HANG_GUARD,
        client.call_tool_as_task_ref("research", &arguments(value), options),
    )
    .await
    .expect("hang guard")
}

/// The tasks the server created, by id, in order.
fn created(log: &EventLogFile) -> Vec<String> {
    log.matching(&json!({"event": "task-created"}))
        .iter()
        .map(|event| event["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits until the log has a `task-cancelled` event for the task `id`.
async fn cancelled_on_server(log: &EventLogFile, id: &str) {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while log.matching(&json!({"event": "task-cancelled", "id": id})).is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "task {id} was never cancelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_task_only_tool_runs_once_to_its_report_with_its_status_as_progress() {
    let log = EventLogFile::new("client-tasks-report");
    for (era, client) in sessions(&log, &[], None).await {
        let before = created(&log).len();
        let (callback, mut reports) = plexus_client::progress_channel(256);
        let result = research(
            &client,
            json!({"topic": "tides", "stages": 3, "stageMs": 60}),
            RequestOptions::default().progress(callback),
        )
        .await
        .unwrap();
        assert!(!result.is_error(), "{era}: {result:?}");
        assert_eq!(result.content[0].as_text(), Some("Report on tides: 3 stages"), "{era}");
        assert_eq!(
            result.structured_content,
            Some(json!({"topic": "tides", "stages": 3, "angle": null})),
            "{era}"
        );
        assert_eq!(created(&log).len(), before + 1, "{era}: the tool ran once");
        let mut messages = Vec::new();
        let mut server_progress: Vec<ProgressNotificationParams> = Vec::new();
        // The task's status comes as `task STATUS: MESSAGE`, the server's own reports as sent.
        while let Ok(report) = reports.try_recv() {
            match report.message.as_deref() {
                Some(message) if message.starts_with("task ") => messages.push(message.to_owned()),
                _ => server_progress.push(report),
            }
        }
        for stage in ["task working: stage 1/3: tides", "task working: stage 3/3: tides"] {
            assert!(messages.iter().any(|m| m == stage), "{era}: {stage} in {messages:?}");
        }
        assert_eq!(
            messages.last().map(String::as_str),
            Some("task completed: done: 3 stages"),
            "{era}"
        );
        if era == "initialize" {
            // The call's progress token stays the task's: the server's own reports arrive too.
            let progress: Vec<f64> = server_progress.iter().map(|report| report.progress).collect();
            assert_eq!(progress, [1.0, 2.0, 3.0], "{era}: {server_progress:?}");
        }
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_tasks_question_is_answered_by_the_session_handler_in_both_eras() {
    let log = EventLogFile::new("client-tasks-question");
    for (era, client) in sessions(&log, &[], Some("history")).await {
        let result = research(
            &client,
            json!({"topic": "tides", "stages": 2, "stageMs": 20, "ask": true}),
            RequestOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("Report on tides: 2 stages, angle history"),
            "{era}"
        );
        let id = created(&log).pop().unwrap();
        let seen = statuses(&log, &id);
        assert!(seen.contains(&"input_required".to_owned()), "{era}: {seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some("completed"), "{era}: {seen:?}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_failed_task_is_its_error_and_a_tool_error_its_result() {
    let log = EventLogFile::new("client-tasks-failure");
    for (era, client) in sessions(&log, &[], None).await {
        let failed = research(
            &client,
            json!({"topic": "tides", "stages": 2, "stageMs": 10, "fail": true}),
            RequestOptions::default(),
        )
        .await
        .unwrap_err();
        let ClientError::Rpc { method, error } = &failed else {
            panic!("{era}: not the task's error: {failed:?}")
        };
        assert_eq!(method, "tools/call", "{era}");
        assert_eq!(
            (error.code, error.message.as_str()),
            (ErrorCode::INTERNAL_ERROR, "research on tides failed at stage 2"),
            "{era}"
        );
        let tool_error = research(
            &client,
            json!({"topic": "tides", "stages": 1, "stageMs": 10, "toolError": true}),
            RequestOptions::default(),
        )
        .await
        .unwrap();
        assert!(tool_error.is_error(), "{era}");
        assert_eq!(
            tool_error.content[0].as_text(),
            Some("research on tides found nothing (toolError)"),
            "{era}"
        );
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_task_given_up_is_cancelled_on_the_server() {
    let log = EventLogFile::new("client-tasks-cancel");
    for (era, client) in sessions(&log, &[], None).await {
        // The host cancels: the caller hears of it after the server was told.
        let handle = CancelHandle::new();
        let cancelling = handle.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            cancelling.cancel("the user pressed Ctrl-C");
        });
        let error = research(
            &client,
            json!({"topic": "tides", "stages": 20, "stageMs": 500}),
            RequestOptions::default().cancel_with(handle),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, ClientError::Cancelled { reason } if reason == "the user pressed Ctrl-C"),
            "{era}: {error:?}"
        );
        let id = created(&log).pop().unwrap();
        assert!(
            !log.matching(&json!({"event": "task-cancelled", "id": id})).is_empty(),
            "{era}: tasks/cancel went out before the caller heard"
        );

        // A task that does not change within the call's timeout: given up and cancelled.
        let error = research(
            &client,
            json!({"topic": "tides", "stages": 2, "stageMs": 5000}),
            RequestOptions::with_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
        let id = created(&log).pop().unwrap();
        assert!(
            matches!(&error, ClientError::Timeout { method, .. } if *method == format!("tools/call (task {id})")),
            "{era}: {error:?}"
        );
        cancelled_on_server(&log, &id).await;

        // A caller that drops the call's future: the task is cancelled all the same.
        let before = created(&log).len();
        let dropped = tokio::time::timeout(
            Duration::from_millis(200),
            research(
                &client,
                json!({"topic": "tides", "stages": 20, "stageMs": 500}),
                RequestOptions::default(),
            ),
        )
        .await;
        assert!(dropped.is_err(), "{era}: the call ended early: {dropped:?}");
        assert_eq!(created(&log).len(), before + 1, "{era}");
        let id = created(&log).pop().unwrap();
        cancelled_on_server(&log, &id).await;
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_server_without_tasks_is_not_asked_to_run_one() {
    let log = EventLogFile::new("client-tasks-unsupported");
    let client = support::connect(&["--task-required-tool", &log.arg()]).await.unwrap();
    let error = client
        .call_tool_as_task_ref("task-required", &arguments(json!({})), RequestOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::TasksUnsupported { tool } if tool == "task-required"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "tool \"task-required\" must be called as a task, and the server declares no tasks for tools/call"
    );
    assert!(
        log.matching(&json!({"event": "request", "method": "tools/call"}))
            .is_empty(),
        "nothing was sent"
    );
    client.close().await.unwrap();
}
