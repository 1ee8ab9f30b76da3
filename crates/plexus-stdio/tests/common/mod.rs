//! Helpers shared by the integration tests: messages, bounded receives, and process-group checks
//! through `killpg` and `/proc`.
#![allow(dead_code, unreachable_pub)]

use std::future::poll_fn;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use plexus_jsonrpc::{Message, Notification};
use plexus_stdio::{StdioConfig, StdioReceiver};
use plexus_transport::{OutboundMessage, TransportError, TransportReceiver};

/// The bound on anything a test waits for: a hang guard, not a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// `sh -c SCRIPT server ARGS...` (so that `$1`… are the args).
pub fn sh(script: &str, args: &[&str]) -> StdioConfig {
    StdioConfig::new("sh")
        .name("test-server")
        .arg("-c")
        .arg(script)
        .arg("server")
        .args(args)
}

/// Like [`sh`], but the shell starts with the default actions for `SIGINT` and `SIGTERM`.
///
/// A child inherits the signals its parent ignores, and a non-interactive shell ignores `SIGINT`
/// in its background jobs: tests run that way would start servers that cannot even trap
/// `SIGINT` (a shell cannot trap a signal ignored on entry). GNU `env --default-signal` resets them
/// before `exec`, so the tests that watch signals see the same thing however they are run.
pub fn sh_with_default_signals(script: &str, args: &[&str]) -> StdioConfig {
    StdioConfig::new("env")
        .name("test-server")
        .args(["--default-signal=INT,TERM", "sh", "-c", script, "server"])
        .args(args)
}

/// A notification with `method` and no params.
pub fn notification(method: &str) -> OutboundMessage {
    OutboundMessage::from_message(&Message::Notification(Notification {
        method: method.to_owned().into(),
        params: None,
    }))
}

/// The next item of the receiver, failing the test if none comes within the hang guard.
pub async fn recv(receiver: &mut StdioReceiver) -> Result<Message, TransportError> {
    tokio::time::timeout(HANG_GUARD, poll_fn(|cx| receiver.poll_recv(cx)))
        .await
        .expect("the receiver yields within the hang guard")
}

/// The next message, which must not be an error.
pub async fn recv_message(receiver: &mut StdioReceiver) -> Message {
    match recv(receiver).await {
        Ok(message) => message,
        Err(e) => panic!("expected a message, got the error: {e}"),
    }
}

/// Whether `killpg(pgid, 0)` says the group is gone.
pub fn group_is_gone(pgid: u32) -> bool {
    killpg(Pid::from_raw(i32::try_from(pgid).unwrap()), None) == Err(Errno::ESRCH)
}

/// The processes whose process group is `pgid`, as `(pid, state, command)`, read from `/proc`.
pub fn processes_in_group(pgid: u32) -> Vec<(u32, char, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(member) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = stat[stat.find('(').unwrap() + 1..close].to_owned();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            found.push((member, fields[0].chars().next().unwrap_or('?'), comm));
        }
    }
    found
}

/// The members of the group that are not zombies.
pub fn live_members(pgid: u32) -> Vec<(u32, char, String)> {
    processes_in_group(pgid)
        .into_iter()
        .filter(|(_, state, _)| !matches!(state, 'Z' | 'X'))
        .collect()
}

/// Asserts that nothing of the group is alive now, and that the group then disappears: neither
/// `killpg` nor `/proc` sees a member. (Zombies of orphaned grandchildren are reaped by init, which
/// on some machines does so lazily; the wait for them is bounded by the hang guard.)
pub fn assert_group_gone(pgid: u32) {
    assert_eq!(live_members(pgid), vec![], "members of group {pgid} are still alive");
    assert!(
        wait_for_group_gone(pgid),
        "killpg({pgid}, 0) still finds processes: {:?}",
        processes_in_group(pgid)
    );
    assert_eq!(
        processes_in_group(pgid),
        vec![],
        "/proc still lists members of group {pgid}"
    );
    assert!(
        !Path::new(&format!("/proc/{pgid}")).exists(),
        "the leader {pgid} was not reaped"
    );
}

/// Polls until the group is gone, for up to the hang guard; returns whether it went. Blocking
/// (the cleanup it waits for runs on threads of its own, not on the runtime).
pub fn wait_for_group_gone(pgid: u32) -> bool {
    let start = Instant::now();
    while start.elapsed() < HANG_GUARD {
        if group_is_gone(pgid) && processes_in_group(pgid).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}
