//! The call chain against the test server on 127.0.0.1: progress forwarded with the timeout
//! restarted, the one retry after an expired session (and no tool run twice), a tool that needs
//! tasks refused before anything is sent.

use std::sync::Arc;
use std::time::Duration;

use plexus::DefaultConnector;
use plexus::config::ServerConfig;
use plexus_pool::{Pool, PoolSettings, ServerSpec};
use plexus_testserver::RemoteServer;
use plexus_tools::call::{CallError, CallOptions, call_tool};
use serde_json::{Map, Value, json};

async fn pool_for(url: &str) -> Pool {
    let (config, _) = ServerConfig::from_json(&json!({"type": "http", "url": url})).unwrap();
    let pool = Pool::new(Arc::new(DefaultConnector::new()), PoolSettings::default());
    pool.set_servers([ServerSpec::new("h", config, None)]).await;
    pool
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn count(log: &std::path::Path, method: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "request" && event["method"] == method)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_caller_and_restarts_the_timeout() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let pool = pool_for(server.url()).await;
    let tools = pool.tools("h").await.unwrap();
    let slow = tools.iter().find(|t| t.name == "slow").unwrap();
    let (callback, mut reports) = plexus_client::progress_channel(64);
    // 5 steps over 1.5 s, with a timeout of 700 ms that each report restarts.
    let options = CallOptions {
        timeout: Some(Duration::from_millis(700)),
        on_progress: Some(callback),
        max_total: Some(Duration::from_secs(20)),
    };
    let result = call_tool(&pool, "h", slow, args(json!({"ms": 1500, "steps": 5})), &options)
        .await
        .unwrap();
    assert!(!result.is_error());
    let mut seen = 0;
    while reports.try_recv().is_ok() {
        seen += 1;
    }
    assert!(seen >= 4, "{seen} progress reports");
    pool.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_reopened_once_and_no_call_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.log");
    let log_arg = log.display().to_string();
    let server = RemoteServer::from_args(
        "http",
        &[
            "--expire-session-after",
            "4",
            "--no-get-stream",
            "--event-log",
            &log_arg,
        ],
    )
    .await
    .unwrap();
    let pool = pool_for(server.url()).await;
    let tools = pool.tools("h").await.unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    for n in 0..6 {
        let result = call_tool(
            &pool,
            "h",
            echo,
            args(json!({"text": format!("call {n}")})),
            &CallOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("call {n}: {e}"));
        assert!(!result.is_error());
    }
    assert_eq!(count(&log, "tools/call"), 6, "every call ran exactly once");
    assert!(count(&log, "initialize") >= 2, "a new session was opened");
    pool.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_needs_tasks_is_refused_with_a_clear_error() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let pool = pool_for(server.url()).await;
    let tool =
        serde_json::from_value(json!({"name": "batch", "inputSchema": {}, "execution": {"taskSupport": "required"}}))
            .unwrap();
    let error = call_tool(&pool, "h", &tool, Map::new(), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, CallError::TaskRequired { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "calling batch of server \"h\": the tool must be called as a task (execution.taskSupport is \"required\"), \
         which this client does not support"
    );
    pool.shutdown().await;
    server.shutdown().await;
}
