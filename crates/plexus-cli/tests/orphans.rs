//! A server's daemon that left the server's process group (issue 25, point 9): the group's
//! shutdown misses it, so plexus (a child subreaper on Linux) adopts it when the server exits
//! and ends it at shutdown; while the gateway runs, it reaps those that exit. What plexus
//! starts itself (a browser) is left running. The demo server's `--spawn-escapee` grandchild
//! leads a process group of its own and ignores SIGINT and SIGTERM.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use support::gateway::RawGateway;
use support::{Workspace, demo};

/// How long the test waits for something that must happen.
const GUARD: Duration = Duration::from_secs(30);

/// Kills a process the test made, however the test ends.
struct Cleanup(i32);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

/// The pid written to `pidfile`, once it is there.
fn pid_in(pidfile: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(start.elapsed() < GUARD, "{} was never written", pidfile.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The state letter of `pid` (`Z` for a zombie), or `None` when there is no such process.
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Waits (bounded) until `pid` is no process at all: ended and reaped.
fn wait_until_reaped(pid: i32, what: &str) {
    let start = Instant::now();
    while let Some(state) = state(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what} (pid {pid}) is still there, in state {state}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A workspace whose demo server leaves a daemon behind, and the daemon's pidfile.
fn with_escapee() -> (Workspace, std::path::PathBuf) {
    let ws = Workspace::new();
    let pidfile = ws.join("escapee.pid");
    let args = ["--spawn-escapee", pidfile.to_str().unwrap()];
    ws.write_servers(ws.user_file(), &json!({"demo": demo(&args)}));
    (ws, pidfile)
}

#[test]
fn a_servers_daemon_that_left_its_group_ends_with_the_command() {
    let (ws, pidfile) = with_escapee();
    let out = ws.run(&["call", "mcp__demo__echo", "-a", "text=hi"]);
    let pid = pid_in(&pidfile);
    let _cleanup = Cleanup(pid);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "hi\n"), "{out:?}");
    // plexus has exited: its orphan was ended (it ignores SIGTERM: SIGKILL) and reaped.
    wait_until_reaped(pid, "the server's daemon");
}

#[test]
fn the_gateway_reaps_an_orphan_that_exits_and_ends_the_others_when_it_stops() {
    let (ws, pidfile) = with_escapee();
    let mut gateway = RawGateway::start(&ws);
    gateway.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    gateway.next(|message| message["id"] == 1);
    gateway.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let first = pid_in(&pidfile);
    let _first = Cleanup(first);
    // The server crashes: its daemon is the gateway's now. When the daemon dies too, the
    // gateway reaps it (it would stay a zombie otherwise: its parent runs on).
    std::fs::remove_file(&pidfile).unwrap();
    gateway.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__demo__crash", "arguments": {"code": 3}}}));
    gateway.next(|message| message["id"] == 2);
    let start = Instant::now();
    while !adopted_by(first, gateway.child.id()) {
        assert!(
            start.elapsed() < GUARD,
            "the daemon was never re-parented to the gateway"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Time for the gateway to see it running (it wakes on SIGCHLD, when the server ended).
    std::thread::sleep(Duration::from_millis(500));
    kill(Pid::from_raw(first), Signal::SIGKILL).unwrap();
    wait_until_reaped(first, "the orphan that was killed while the gateway ran");
    // The next call starts the server again, with a new daemon; the gateway's end ends it.
    gateway.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp__demo__echo", "arguments": {"text": "again"}}}));
    let answer = gateway.next(|message| message["id"] == 3);
    assert_eq!(answer["result"]["content"][0]["text"], "again", "{answer}");
    let second = pid_in(&pidfile);
    let _second = Cleanup(second);
    let RawGateway { mut child, stdin, .. } = gateway;
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    wait_until_reaped(second, "the daemon of the server that ran when the gateway stopped");
}

/// Whether `pid`'s parent is `parent`.
fn adopted_by(pid: i32, parent: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = stat.rsplit_once(')')?.1.to_owned();
            rest.split_whitespace().nth(1)?.parse::<u32>().ok()
        })
        == Some(parent)
}

#[test]
fn what_plexus_starts_itself_is_left_running() {
    // The browser command leaves a process in the background and exits, as `xdg-open` does
    // when it starts a browser: plexus adopts it too, and must not end it.
    let (ws, _) = with_escapee();
    let pidfile = ws.join("browser.pid");
    let browser = ws.write_script(
        "browser.sh",
        format!(
            "#!/bin/sh\n(trap '' HUP; exec sleep 60) >/dev/null 2>&1 &\necho $! > {0}.part && mv {0}.part {0}\n",
            pidfile.display()
        ),
    );
    let out = ws.run_on_terminal_with_env(
        &["call", "mcp__demo__url-elicit", "--arg", "notify=false"],
        b"\n\n",
        &[("BROWSER", browser.to_str().unwrap())],
    );
    let pid = pid_in(&pidfile);
    let _cleanup = Cleanup(pid);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        state(pid).filter(|state| *state != 'Z'),
        Some('S'),
        "the browser was ended"
    );
}
