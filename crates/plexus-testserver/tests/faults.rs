//! Every fault tool and process switch, observed from outside the process: stdout, stderr, exit
//! status, signals, the event log, the process group.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use common::{BIN, Server, events, wait_for_event, wait_until};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::{Pid, getpgid};
use serde_json::{Value, json};

const GARBAGE: &[u8] = b"this line is not JSON (plexus-testserver garbage fault)\n";

#[test]
fn crash_exits_with_the_code_and_no_response() {
    let mut server = Server::start(&[]);
    server.initialize();
    server.request("tools/call", json!({"name": "crash", "arguments": {"code": 7}}));
    assert_eq!(server.wait().code(), Some(7));
    server.assert_no_more_output();
    assert_eq!(server.stderr_text(), "plexus-testserver: crashing as asked\n");
}

#[test]
fn hang_never_answers_but_the_session_goes_on() {
    let mut server = Server::start(&[]);
    server.initialize();
    let hang = server.request("tools/call", json!({"name": "hang", "arguments": {}}));
    let ping = server.request("ping", json!({}));
    let reply = server.recv();
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": ping, "result": {}}));
    assert_ne!(reply["id"], hang);
}

#[test]
fn garbage_writes_a_non_json_line_then_the_response() {
    let mut server = Server::start(&[]);
    server.initialize();
    let id = server.request("tools/call", json!({"name": "garbage", "arguments": {}}));
    assert_eq!(server.recv_line().unwrap(), GARBAGE);
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "a garbage line came before this response"}]}})
    );
}

#[test]
fn oversize_writes_one_valid_line_of_exactly_that_size() {
    let mut server = Server::start(&[]);
    server.initialize();
    let id = server.request(
        "tools/call",
        json!({"name": "oversize", "arguments": {"bytes": 100_000}}),
    );
    let line = server.recv_line().unwrap();
    assert_eq!(line.len(), 100_001);
    let message: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(message["method"], "notifications/message");
    assert_eq!(server.recv()["id"], id);
}

#[test]
fn drip_response_arrives_whole() {
    let mut server = Server::start(&[]);
    server.initialize();
    let id = server.request(
        "tools/call",
        json!({"name": "drip", "arguments": {"delay_ms": 2, "chunk": 3}}),
    );
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "this response was written 3 bytes at a time, 2 ms apart"}]}})
    );
    let error = server.call_tool("drip", json!({"delay_ms": 1, "chunk": 0}));
    assert_eq!(
        error["error"]["message"],
        "invalid arguments for tool drip: chunk must be at least 1"
    );
}

#[test]
fn stderr_tool_writes_exactly_that_many_bytes() {
    let mut server = Server::start(&[]);
    server.initialize();
    assert_eq!(
        server.tool_text("stderr", json!({"bytes": 5000})),
        "wrote 5000 bytes to stderr"
    );
    server.close_stdin();
    assert_eq!(server.wait().code(), Some(0));
    let stderr = server.stderr_text();
    assert_eq!(stderr.len(), 5000);
    assert!(
        stderr.starts_with("plexus-testserver stderr-tool 000001 ...."),
        "{stderr}"
    );
    assert!(stderr.ends_with('\n') && stderr.lines().all(|line| line.len() < 80));
}

#[test]
fn garbage_line_switch_precedes_every_response() {
    let mut server = Server::start(&["--garbage-line"]);
    server.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(server.recv_line().unwrap(), GARBAGE);
    assert!(server.recv()["result"]["protocolVersion"].is_string());
    let id = server.request(
        "tools/call",
        json!({"name": "log", "arguments": {"level": "info", "message": "m"}}),
    );
    assert_eq!(
        server.recv()["method"],
        "notifications/message",
        "notifications come without garbage"
    );
    assert_eq!(server.recv_line().unwrap(), GARBAGE);
    assert_eq!(server.recv()["id"], id);
}

#[test]
fn crash_after_exits_once_the_nth_call_is_answered() {
    let mut server = Server::start(&["--crash-after", "2"]);
    server.initialize();
    assert_eq!(server.tool_text("echo", json!({"text": "one"})), "one");
    assert_eq!(
        server.result("ping", json!({})),
        json!({}),
        "other requests do not count"
    );
    assert_eq!(
        server.call_tool("fail", json!({}))["error"]["code"],
        -32603,
        "an error answer counts"
    );
    assert_eq!(server.wait().code(), Some(1));
    server.assert_no_more_output();
    assert_eq!(
        server.stderr_text(),
        "plexus-testserver: crashing after 2 tool calls as asked (--crash-after)\n"
    );
}

#[test]
fn notify_before_init_sends_a_message_first() {
    let mut server = Server::start(&["--notify-before-init"]);
    let id = server.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(
        server.recv(),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "plexus-testserver", "data": "this notification comes before the initialize result (--notify-before-init)"}})
    );
    assert_eq!(server.recv()["id"], id);
}

#[test]
fn exit_at_start_exits_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let mut server = Server::start(&["--exit-at-start", "3", "--event-log", log.to_str().unwrap()]);
    assert_eq!(server.wait().code(), Some(3));
    server.assert_no_more_output();
    assert_eq!(
        server.stderr_text(),
        "plexus-testserver: exiting with status 3 at start as asked (--exit-at-start)\n"
    );
    assert_eq!(
        events(&log),
        [
            json!({"event": "start", "pid": server.child.id()}),
            json!({"event": "exit", "code": 3})
        ]
    );
}

#[test]
fn flood_stderr_writes_exactly_that_much_while_serving() {
    let mut server = Server::start(&["--flood-stderr", "300000"]);
    server.initialize();
    assert_eq!(server.tool_text("echo", json!({"text": "still here"})), "still here");
    wait_until("the whole flood arrives", || server.stderr_len() >= 300_000);
    server.close_stdin();
    assert_eq!(server.wait().code(), Some(0));
    let stderr = server.stderr_text();
    assert_eq!(stderr.len(), 300_000);
    assert!(
        stderr.lines().all(|line| line.starts_with("plexus-testserver flood ")),
        "every line is a flood line"
    );
}

#[test]
fn event_log_records_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let mut server = Server::start(&["--event-log", log.to_str().unwrap()]);
    server.initialize();
    server.notify("notifications/roots/list_changed", json!({}));
    assert_eq!(server.result("ping", json!({})), json!({}));
    server.close_stdin();
    assert_eq!(server.wait().code(), Some(0));
    let events = events(&log);
    let pid = server.child.id();
    assert_eq!(
        events,
        [
            json!({"event": "start", "pid": pid}),
            json!({"event": "request", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}}}),
            json!({"event": "notification", "method": "notifications/initialized", "params": {}}),
            json!({"event": "notification", "method": "notifications/roots/list_changed", "params": {}}),
            json!({"event": "request", "id": 2, "method": "ping", "params": {}}),
            json!({"event": "stdin-closed"}),
            json!({"event": "exit", "code": 0}),
        ]
    );
}

#[test]
fn ignored_signals_are_logged_and_survived() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let mut server = Server::start(&["--ignore-signals", "--event-log", log.to_str().unwrap()]);
    server.initialize();
    let pid = Pid::from_raw(server.pid());
    kill(pid, Signal::SIGINT).unwrap();
    wait_for_event(&log, |e| e["event"] == "signal" && e["signal"] == "SIGINT");
    kill(pid, Signal::SIGTERM).unwrap();
    let events = wait_for_event(&log, |e| e["event"] == "signal" && e["signal"] == "SIGTERM");
    assert_eq!(server.result("ping", json!({})), json!({}), "still serving");
    let signals: Vec<&Value> = events.iter().filter(|e| e["event"] == "signal").collect();
    assert_eq!(signals.len(), 2);
    assert!(signals.iter().all(|e| e["ms"].is_u64()), "{signals:?}");
    assert!(
        signals[0]["ms"].as_u64() <= signals[1]["ms"].as_u64(),
        "a monotonic clock"
    );
    assert!(!events.iter().any(|e| e["event"] == "exit"));
}

#[test]
fn signals_end_the_server_with_status_zero() {
    for (signal, name) in [(Signal::SIGINT, "SIGINT"), (Signal::SIGTERM, "SIGTERM")] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.jsonl");
        let mut server = Server::start(&["--event-log", log.to_str().unwrap()]);
        server.initialize();
        kill(Pid::from_raw(server.pid()), signal).unwrap();
        assert_eq!(server.wait().code(), Some(0), "{name}");
        let events = events(&log);
        let tail: Vec<&Value> = events.iter().rev().take(2).collect();
        assert_eq!(tail[1]["event"], "signal");
        assert_eq!(tail[1]["signal"], name);
        assert_eq!(tail[0], &json!({"event": "exit", "code": 0}));
    }
}

/// The set of ignored signals of `pid`, from /proc.
fn ignored_signals(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = status.lines().find_map(|line| line.strip_prefix("SigIgn:")).unwrap();
    u64::from_str_radix(mask.trim(), 16).unwrap()
}

/// Whether `pid` is gone (or a zombie nobody reaped yet).
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status
            .lines()
            .any(|line| line.starts_with("State:") && line.contains('Z')),
    }
}

/// Kills a process group when the test ends, whether it passed or not.
struct KillGroupOnDrop(i32);

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

#[test]
fn spawn_grandchild_leaves_a_stubborn_process_in_our_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let mut command = Command::new(BIN);
    command
        .args(["stdio", "--spawn-grandchild", pidfile.to_str().unwrap()])
        .process_group(0);
    let mut server = Server::spawn(&mut command);
    server.initialize();
    let grandchild: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let _cleanup = KillGroupOnDrop(server.pid());
    assert_eq!(
        getpgid(Some(Pid::from_raw(grandchild))).unwrap(),
        Pid::from_raw(server.pid()),
        "same process group as the server"
    );
    let ignored = ignored_signals(grandchild);
    let bit = |signal: Signal| 1u64 << (signal as i32 - 1);
    assert_eq!(
        ignored & (bit(Signal::SIGINT) | bit(Signal::SIGTERM)),
        bit(Signal::SIGINT) | bit(Signal::SIGTERM),
        "SigIgn {ignored:x}"
    );
    // The grandchild outlives the server ...
    server.close_stdin();
    assert_eq!(server.wait().code(), Some(0));
    assert!(!is_gone(grandchild));
    // ... until someone kills the whole group.
    killpg(Pid::from_raw(server.pid()), Signal::SIGKILL).unwrap();
    wait_until("the grandchild dies with its group", || is_gone(grandchild));
}

#[test]
fn works_with_stdin_and_stdout_that_are_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let output = dir.path().join("out.jsonl");
    // The last line has no newline: it is still handled at end of input.
    std::fs::write(&input, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"file\"}}}").unwrap();
    let status = Command::new(BIN)
        .arg("stdio")
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"file\"}]}}\n"
    );
    let status = Command::new(BIN)
        .arg("stdio")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "/dev/null is an empty input");
}

#[test]
fn a_bad_event_log_path_fails_at_start() {
    let mut server = Server::start(&["--event-log", "/nonexistent-dir/events.jsonl"]);
    assert_eq!(server.wait().code(), Some(2));
    assert_eq!(
        server.stderr_text(),
        "plexus-testserver: cannot open the event log /nonexistent-dir/events.jsonl: No such file or directory (os error 2)\n"
    );
}
