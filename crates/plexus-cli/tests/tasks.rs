//! `plexus call` of a tool that must run as a task (the demo server's `research`, with `--tasks`),
//! in both protocol eras: the report on stdout, the task's status on stderr, and Ctrl-C
//! cancelling the task on its server before plexus exits 130; and `plexus serve` running it for
//! its client, which calls it as a plain tool and sees the task's status as progress.

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use support::gateway::{args, client_of, stdio_entry};
use support::{Workspace, demo, events};

/// How long the test waits for something that must happen.
const GUARD: Duration = Duration::from_secs(30);

/// The demo server with tasks and an event log, in the stateless era (the default probe) or
/// pinned to the `initialize` era's 2025-11-25.
fn workspace(era: &str) -> (Workspace, std::path::PathBuf) {
    let ws = Workspace::new();
    let log = ws.join("events.jsonl");
    let mut entry = demo(&["--tasks", "--task-poll-ms", "20", "--event-log", log.to_str().unwrap()]);
    if era == "initialize" {
        entry["protocolVersion"] = json!("2025-11-25");
    }
    ws.write_servers(ws.user_file(), &json!({"demo": entry}));
    (ws, log)
}

#[test]
fn a_task_only_tool_prints_its_report_and_its_status() {
    for era in ["stateless", "initialize"] {
        let (ws, log) = workspace(era);
        let out = ws.run(&[
            "call",
            "mcp__demo__research",
            r#"{"topic": "tides", "stages": 2, "stageMs": 400}"#,
        ]);
        assert_eq!(out.code, Some(0), "{era}: {out:?}");
        assert_eq!(
            out.stdout,
            "Report on tides: 2 stages\nstructured content:\n{\n  \"topic\": \"tides\",\n  \"stages\": 2,\n  \"angle\": null\n}\n",
            "{era}"
        );
        assert!(
            // Lines come at most 4 a second: the second stage's, 400 ms on (or, in the
            // `initialize` era, the server's own progress report of it), then the end.
            out.stderr.contains("stage 2/2: tides\n")
                && out.stderr.ends_with(if era == "stateless" {
                    "plexus: mcp__demo__research: task completed: done: 2 stages\n"
                } else {
                    "plexus: mcp__demo__research: 2/2: task completed: done: 2 stages\n"
                }),
            "{era}: {out:?}"
        );
        let created = events(&log)
            .iter()
            .filter(|event| event["event"] == "task-created")
            .count();
        assert_eq!(created, 1, "{era}: the tool ran once");
    }
}

#[test]
fn ctrl_c_cancels_the_task_on_its_server_and_exits_130() {
    for era in ["stateless", "initialize"] {
        let (ws, log) = workspace(era);
        let child = ws
            .command(
                ws.path(),
                &[
                    "call",
                    "mcp__demo__research",
                    r#"{"topic": "tides", "stages": 20, "stageMs": 1000}"#,
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let id = loop {
            if let Some(event) = events(&log).into_iter().find(|event| event["event"] == "task-created") {
                break event["id"].clone();
            }
            assert!(start.elapsed() < GUARD, "{era}: no task was created");
            std::thread::sleep(Duration::from_millis(20));
        };
        kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), Signal::SIGINT).unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(130), "{era}: {stderr}");
        // plexus exited after the server heard: the event is in the log already.
        let cancelled = events(&log)
            .iter()
            .filter(|event| event["event"] == "task-cancelled" && event["id"] == id)
            .count();
        assert_eq!(cancelled, 1, "{era}: one tasks/cancel for {id}: {:?}", events(&log));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_runs_a_task_only_tool_for_its_client() {
    for era in ["stateless", "initialize"] {
        let (ws, log) = workspace(era);
        let client = client_of(&stdio_entry(&ws, &[]), None).await;
        let tools = client.list_tools().await.unwrap();
        let research = tools.iter().find(|tool| tool.name == "mcp__demo__research").unwrap();
        assert_eq!(research.execution, None, "{era}: served as a plain tool");
        let (callback, mut reports) = plexus::client::progress_channel(64);
        let result = client
            .call_tool_with(
                "mcp__demo__research",
                args(json!({"topic": "tides", "stages": 2, "stageMs": 30})),
                plexus::client::RequestOptions::default().progress(callback),
            )
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("Report on tides: 2 stages"), "{era}");
        let mut messages = Vec::new();
        while let Ok(report) = reports.try_recv() {
            messages.extend(report.message);
        }
        assert_eq!(
            messages.last().map(String::as_str),
            Some("task completed: done: 2 stages"),
            "{era}: {messages:?}"
        );
        let created = events(&log)
            .iter()
            .filter(|event| event["event"] == "task-created")
            .count();
        assert_eq!(created, 1, "{era}: the tool ran once");
        client.close().await.unwrap();
    }
}
