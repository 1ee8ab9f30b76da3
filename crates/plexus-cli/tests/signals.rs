//! Ctrl-C, SIGTERM and SIGHUP during a call: the server is told to stop (notifications/cancelled),
//! every server and its children are shut down, and plexus exits 130, 143 or 129. The server is
//! the demo server with an event log and a grandchild that ignores SIGINT and SIGTERM.

mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use support::{Workspace, demo, events};

/// How long the test waits for something that must happen.
const GUARD: Duration = Duration::from_secs(30);

/// Waits until `predicate` holds of the event log.
fn wait_for(log: &Path, what: &str, predicate: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let seen = events(log);
        if predicate(&seen) {
            return seen;
        }
        assert!(start.elapsed() < GUARD, "never saw {what}: {seen:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is gone (or a zombie waiting for its reaper).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn interrupted_call(signal: Signal, code: i32) {
    let ws = Workspace::new();
    let log = ws.join("events.jsonl");
    let pidfile = ws.join("grandchild.pid");
    let args = [
        "--event-log",
        log.to_str().unwrap(),
        "--spawn-grandchild",
        pidfile.to_str().unwrap(),
    ];
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&args)}));
    let child = ws
        .command(ws.path(), &["call", "mcp__demo__slow", r#"{"ms": 60000}"#])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = wait_for(&log, "the call", |seen| {
        seen.iter()
            .any(|e| e["event"] == "request" && e["method"] == "tools/call")
    });
    let server = i32::try_from(seen[0]["pid"].as_i64().unwrap()).unwrap();
    let call = seen
        .iter()
        .find(|e| e["method"] == "tools/call")
        .map(|e| e["id"].clone())
        .unwrap();
    let grandchild: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();

    let sent = Instant::now();
    kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), signal).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(sent.elapsed() < GUARD, "plexus took {:?} to end", sent.elapsed());

    // The server heard that the call is cancelled before its shutdown began (its stdin closed or
    // a signal came, whichever it noticed first).
    let seen = events(&log);
    let cancelled = seen
        .iter()
        .position(|e| e["method"] == "notifications/cancelled" && e["params"]["requestId"] == call);
    let shutdown = seen
        .iter()
        .position(|e| ["stdin-closed", "signal", "exit"].contains(&e["event"].as_str().unwrap_or_default()));
    assert!(
        cancelled.is_some_and(|cancelled| shutdown.is_some_and(|shutdown| cancelled < shutdown)),
        "no cancellation before the shutdown: {seen:?}"
    );
    // Nothing is left: not the server, not its grandchild that ignores SIGINT and SIGTERM.
    let start = Instant::now();
    while !(gone(server) && gone(grandchild)) {
        assert!(
            start.elapsed() < GUARD,
            "server {server} or grandchild {grandchild} survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_cancels_the_call_closes_the_servers_and_exits_130() {
    interrupted_call(Signal::SIGINT, 130);
}

#[test]
fn sigterm_does_the_same_and_exits_143() {
    interrupted_call(Signal::SIGTERM, 143);
}

#[test]
fn sighup_does_the_same_and_exits_129() {
    interrupted_call(Signal::SIGHUP, 129);
}
