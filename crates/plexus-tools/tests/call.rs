//! The call chain against the test server on 127.0.0.1: progress forwarded with the timeout
//! restarted, the one retry after an expired session (and no tool run twice), URL elicitation
//! rounds, a tool that needs tasks run as one in both eras (and refused before anything is sent
//! when its server declares no tasks).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use plexus::DefaultConnector;
use plexus::config::ServerConfig;
use plexus_pool::{Pool, PoolSettings, ServerSpec};
use plexus_protocol::{ElicitAction, ElicitRequestUrlParams};
use plexus_testserver::RemoteServer;
use plexus_tools::call::{CallError, CallOptions, call_tool};
use plexus_tools::{UrlElicitationError, UrlElicitationHandler};
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
        ..CallOptions::default()
    };
    let result = call_tool(&pool, "h", slow, &args(json!({"ms": 1500, "steps": 5})), &options)
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
    // Sessions are of the `initialize` era.
    let server = RemoteServer::from_args(
        "http",
        &[
            "--era",
            "legacy",
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
            &args(json!({"text": format!("call {n}")})),
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
async fn a_tool_that_needs_tasks_runs_as_one_over_http_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let server = RemoteServer::from_args(
        "http",
        &["--tasks", "--task-poll-ms", "20", "--event-log", log.to_str().unwrap()],
    )
    .await
    .unwrap();
    // The default probe (the stateless era's tasks extension), then 2025-11-25's tasks.
    for (era, version) in [("stateless", None), ("initialize", Some("2025-11-25"))] {
        let mut entry = json!({"type": "http", "url": server.url()});
        if let Some(version) = version {
            entry["protocolVersion"] = json!(version);
        }
        let (config, _) = ServerConfig::from_json(&entry).unwrap();
        let pool = Pool::new(Arc::new(DefaultConnector::new()), PoolSettings::default());
        pool.set_servers([ServerSpec::new("h", config, None)]).await;
        let tools = pool.tools("h").await.unwrap();
        let research = tools.iter().find(|t| t.name == "research").unwrap();
        let (callback, mut reports) = plexus_client::progress_channel(64);
        let options = CallOptions {
            on_progress: Some(callback),
            ..CallOptions::default()
        };
        let before = count_events(&log, "task-created");
        let result = call_tool(
            &pool,
            "h",
            research,
            &args(json!({"topic": "tides", "stages": 2, "stageMs": 40})),
            &options,
        )
        .await
        .unwrap();
        assert_eq!(result.content[0].as_text(), Some("Report on tides: 2 stages"), "{era}");
        assert_eq!(
            count_events(&log, "task-created"),
            before + 1,
            "{era}: the tool ran once"
        );
        let mut messages = Vec::new();
        while let Ok(report) = reports.try_recv() {
            messages.extend(report.message);
        }
        assert!(
            messages.iter().any(|m| m == "task completed: done: 2 stages"),
            "{era}: {messages:?}"
        );
        pool.shutdown().await;
    }
    server.shutdown().await;
}

fn count_events(log: &std::path::Path, event: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["event"] == event)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_needs_tasks_is_refused_with_a_clear_error() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let pool = pool_for(server.url()).await;
    let tool =
        serde_json::from_value(json!({"name": "batch", "inputSchema": {}, "execution": {"taskSupport": "required"}}))
            .unwrap();
    let error = call_tool(&pool, "h", &tool, &Map::new(), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(error, CallError::TaskRequired { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "calling batch of server \"h\": the tool must be called as a task (execution.taskSupport is \"required\"), \
         and the server declares no task support for tools/call"
    );
    pool.shutdown().await;
    server.shutdown().await;
}

/// Records every URL it is handed and answers `answer`, or never when `None` (so that only the
/// server's completion notification ends the wait).
struct Browser {
    seen: Mutex<Vec<(String, String)>>,
    answer: Option<ElicitAction>,
}

impl Browser {
    fn new(answer: Option<ElicitAction>) -> Arc<Browser> {
        Arc::new(Browser {
            seen: Mutex::new(Vec::new()),
            answer,
        })
    }

    fn urls(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(_, url)| url.clone()).collect()
    }
}

#[async_trait::async_trait]
impl UrlElicitationHandler for Browser {
    async fn open(&self, server: &str, elicitation: &ElicitRequestUrlParams) -> ElicitAction {
        self.seen
            .lock()
            .unwrap()
            .push((server.to_owned(), elicitation.url.clone()));
        match self.answer {
            Some(answer) => answer,
            None => std::future::pending().await,
        }
    }
}

/// A pool on a test server of the `initialize` era (whose -32042 the stateless era replaces with
/// `input_required`) that logs its requests, with its `url-elicit` tool.
async fn url_elicit_server(dir: &std::path::Path) -> (RemoteServer, Pool, plexus_protocol::Tool) {
    let log = dir.join("events.log").display().to_string();
    let server = RemoteServer::from_args("http", &["--era", "legacy", "--event-log", &log])
        .await
        .unwrap();
    let pool = pool_for(server.url()).await;
    let tools = pool.tools("h").await.unwrap();
    let tool = tools.iter().find(|t| t.name == "url-elicit").unwrap().clone();
    (server, pool, tool)
}

fn with_browser(browser: &Arc<Browser>) -> CallOptions {
    CallOptions {
        url_elicitation: Some(Arc::clone(browser) as Arc<dyn UrlElicitationHandler>),
        url_elicitation_timeout: Some(Duration::from_secs(20)),
        ..CallOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_elicitations_completed_by_the_server_are_retried_up_to_three_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let (server, pool, tool) = url_elicit_server(dir.path()).await;
    // The browser never answers: only notifications/elicitation/complete ends each wait.
    let browser = Browser::new(None);
    let result = call_tool(&pool, "h", &tool, &args(json!({"rounds": 3})), &with_browser(&browser))
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("url-elicit: done after 3 URL elicitations")
    );
    assert_eq!(
        browser.urls(),
        [1, 2, 3].map(|n| format!("https://auth.example.test/step/{n}"))
    );
    assert!(browser.seen.lock().unwrap().iter().all(|(server, _)| server == "h"));
    assert_eq!(count(&dir.path().join("events.log"), "tools/call"), 4);

    // A fourth round is one too many: the call is sent 4 times and then given up.
    let browser = Browser::new(None);
    let error = call_tool(&pool, "h", &tool, &args(json!({"rounds": 4})), &with_browser(&browser))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            CallError::UrlElicitation {
                source: UrlElicitationError::TooManyRounds,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        plexus_transport::error_chain(&error),
        "calling url-elicit of server \"h\": the server still required URL elicitation after 3 rounds"
    );
    assert_eq!(browser.urls().len(), 3);
    assert_eq!(count(&dir.path().join("events.log"), "tools/call"), 8);
    pool.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_answer_completes_a_url_elicitation_and_a_refusal_ends_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (server, pool, tool) = url_elicit_server(dir.path()).await;
    let quiet = || args(json!({"rounds": 2, "notify": false}));
    let browser = Browser::new(Some(ElicitAction::Accept));
    let result = call_tool(&pool, "h", &tool, &quiet(), &with_browser(&browser))
        .await
        .unwrap();
    assert_eq!(
        result.content[0].as_text(),
        Some("url-elicit: done after 2 URL elicitations")
    );
    assert_eq!(browser.urls().len(), 2);

    let browser = Browser::new(Some(ElicitAction::Decline));
    let error = call_tool(&pool, "h", &tool, &quiet(), &with_browser(&browser))
        .await
        .unwrap_err();
    assert_eq!(
        plexus_transport::error_chain(&error),
        "calling url-elicit of server \"h\": the user declined to open https://auth.example.test/step/1"
    );
    let error = call_tool(&pool, "h", &tool, &quiet(), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        error.reason(),
        "the server needs the user to open https://auth.example.test/step/2, and no handler for URL \
         elicitations is set"
    );
    // 3 calls for the accepted round trip, one for each refusal.
    assert_eq!(count(&dir.path().join("events.log"), "tools/call"), 5);
    pool.shutdown().await;
    server.shutdown().await;
}
