//! What a cell may not leave behind: child processes (the test process is their subreaper, so
//! a grandchild whose parent died is found too), file descriptors, threads, and memory.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long the kernel may take to let go of what a finished cell closed (a thread's exit, a
/// process's reaping).
const SETTLE: Duration = Duration::from_secs(5);

/// The most the resident set may grow over a cell, in bytes: a cell's servers (in-process) and
/// Hub together, with a 20 MB oversize line among them, stay far below it; a client that
/// buffered without bound would not.
pub const MAX_RSS_GROWTH: u64 = 192 << 20;

/// Makes this process the subreaper of its descendants: a process whose parent dies is
/// re-parented here, not to init, so a leaked grandchild is seen by [`Snapshot::take`].
pub fn become_subreaper() {
    nix::sys::prctl::set_child_subreaper(true).expect("PR_SET_CHILD_SUBREAPER");
}

/// Sets up what a process sets up once and keeps for its life, so that it is part of the
/// baseline rather than a leak: tokio's signal driver (a socket pair, made the first time a
/// child process is waited for).
pub fn prime_process_globals() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let status = tokio::process::Command::new("true")
            .status()
            .await
            .expect("`true` runs");
        assert!(status.success());
    });
}

/// The process's resources at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Open file descriptors.
    pub fds: usize,
    /// What they are (`/proc/self/fd` links), for the report of a leak.
    pub fd_targets: Vec<String>,
    /// Threads.
    pub threads: usize,
    /// Live (not zombie) child processes, with their command lines.
    pub children: Vec<(i32, String)>,
}

impl Snapshot {
    /// The resources now; zombie children are reaped first (each is a child that ended).
    pub fn take() -> Snapshot {
        reap_zombies();
        Snapshot {
            fds: count_entries("/proc/self/fd"),
            fd_targets: fd_targets(),
            threads: count_entries("/proc/self/task"),
            children: live_children(),
        }
    }

    /// Waits until the resources are back to `baseline` (at most [`SETTLE`]), and says what is
    /// left when they are not; a leaked child is killed after it is reported.
    pub fn settle_to(baseline: &Snapshot) -> Result<(), String> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let now = Snapshot::take();
            if now.fds <= baseline.fds && now.threads <= baseline.threads && now.children.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                for (pid, _) in &now.children {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), nix::sys::signal::Signal::SIGKILL);
                }
                reap_zombies_for(Duration::from_secs(1));
                let new_fds: Vec<&String> = now
                    .fd_targets
                    .iter()
                    .filter(|target| !baseline.fd_targets.contains(target))
                    .collect();
                return Err(format!(
                    "left behind: {} file descriptors (of {} before; new: {new_fds:?}), {} threads (of {} before), \
                     child processes {:?}",
                    now.fds, baseline.fds, now.threads, baseline.threads, now.children
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The resident set size now, in bytes.
pub fn rss_bytes() -> u64 {
    status_kib("VmRSS:") * 1024
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn fd_targets() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| {
            let target =
                std::fs::read_link(entry.path()).map_or_else(|_| "?".to_owned(), |path| path.display().to_string());
            format!("{}: {target}", entry.file_name().to_string_lossy())
        })
        .collect()
}

fn count_entries(dir: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

/// The children of this process: (pid, state, command line).
fn children() -> Vec<(i32, char, String)> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let after = &stat[stat.rfind(')')? + 2..];
            let mut fields = after.split(' ');
            let state = fields.next()?.chars().next()?;
            let ppid = fields.next()?;
            (ppid == me).then(|| (pid, state, command_line(&entry.path())))
        })
        .collect()
}

fn command_line(proc_dir: &Path) -> String {
    std::fs::read(proc_dir.join("cmdline"))
        .map(|bytes| {
            bytes
                .split(|byte| *byte == 0)
                .map(String::from_utf8_lossy)
                .collect::<Vec<_>>()
                .join(" ")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

fn live_children() -> Vec<(i32, String)> {
    children()
        .into_iter()
        .filter(|(_, state, _)| *state != 'Z')
        .map(|(pid, _, command)| (pid, command))
        .collect()
}

/// Reaps the children that ended, each by its own pid (never `waitpid(-1)`, which could take
/// the status of a child that a runtime still waits for).
fn reap_zombies() {
    for (pid, state, _) in children() {
        if state == 'Z' {
            let _ = nix::sys::wait::waitpid(
                nix::unistd::Pid::from_raw(pid),
                Some(nix::sys::wait::WaitPidFlag::WNOHANG),
            );
        }
    }
}

fn reap_zombies_for(time: Duration) {
    let deadline = Instant::now() + time;
    while Instant::now() < deadline && !children().is_empty() {
        reap_zombies();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` exists (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = &stat[stat.rfind(')')? + 2..];
            after.chars().next()
        })
        .is_some_and(|state| state != 'Z')
}
