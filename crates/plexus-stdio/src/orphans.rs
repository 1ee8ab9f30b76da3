//! Descendants of a server that left its process group (a daemon that called `setsid()`), which
//! the group's shutdown sequence cannot reach: on Linux, a host that opts in becomes their
//! parent when the server exits, and ends them when it asks.
//!
//! # What it promises, and what it cannot
//!
//! [`adopt_orphans`] makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process
//! whose parent dies is re-parented to the nearest subreaper among its ancestors, not to `init`.
//! From then on every server is started with [`OWNER_VARIABLE`] set to a value unique to this
//! process, which its descendants inherit. [`end_orphans`] ends (`SIGTERM`, then `SIGKILL`
//! after its grace) and reaps every child of this process that carries that value and is not a
//! server's own leader: a server's descendant that outlived its parent. [`reap_orphans`] reaps
//! the ones that have already exited, which a long-running host calls now and then
//! ([`watch_orphans`] does it on every `SIGCHLD` and every [`REAP_INTERVAL`]).
//!
//! What this process starts itself (a browser through `xdg-open`, a helper command) does not
//! carry the value and is never ended, though it is re-parented here too. A descendant that
//! replaced its environment (`env -i`, a setuid program), or that belongs to another user, is not
//! recognised and is left running; so is one whose parent is still alive (it is nobody's orphan
//! yet). Nothing here reaches a process re-parented to another subreaper, such as a systemd user
//! manager. Elsewhere than Linux, [`adopt_orphans`] fails with [`std::io::ErrorKind::Unsupported`].

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::lock;

/// The variable every server is started with once this process adopts orphans; its value is
/// this process's own (its pid and a random number).
pub const OWNER_VARIABLE: &str = "PLEXUS_STDIO_OWNER";

/// How often [`watch_orphans`] looks for orphans that exited, besides each `SIGCHLD`.
pub const REAP_INTERVAL: Duration = Duration::from_secs(10);

/// The value of [`OWNER_VARIABLE`], once this process adopts orphans.
static OWNER: OnceLock<String> = OnceLock::new();

/// The leaders of the servers running now (their own waiter threads reap them), by pid, with
/// how many of them hold it (a pid may be reused by a new server before the old entry goes).
static SERVERS: Mutex<Option<HashMap<u32, usize>>> = Mutex::new(None);

/// The orphans found so far that have not been reaped.
static ADOPTED: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

/// Makes this process the parent of every server descendant whose parent dies (Linux only), and
/// starts every later server with [`OWNER_VARIABLE`]. Calling it again is harmless.
///
/// Every child this process starts is then its own to reap, as before; the orphans are reaped by
/// [`end_orphans`] and [`reap_orphans`]. Only an orphan seen running is known to be one: an
/// orphan that exits before either of them ever ran stays a zombie (a pid, no memory) until
/// this process exits, since reaping a child that is not known to be an orphan could take the
/// exit status its starter waits for.
pub fn adopt_orphans() -> io::Result<()> {
    become_subreaper()?;
    OWNER.get_or_init(|| format!("{}-{:016x}", std::process::id(), random()));
    Ok(())
}

/// Whether [`adopt_orphans`] succeeded.
pub fn adopts_orphans() -> bool {
    OWNER.get().is_some()
}

#[cfg(target_os = "linux")]
fn become_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn become_subreaper() -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "only Linux lets a process adopt its descendants' orphans",
    ))
}

/// A random number (from the standard library's per-process hash keys).
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// The variable a server is started with, when this process adopts orphans.
pub(crate) fn owner_variable() -> Option<(&'static str, &'static str)> {
    OWNER.get().map(|value| (OWNER_VARIABLE, value.as_str()))
}

/// Starts a server's leader with `spawn` and records its pid, under the lock that a search for
/// orphans takes: a leader is never mistaken for an orphan while it is being started.
pub(crate) fn spawn_server(spawn: impl FnOnce() -> io::Result<std::process::Child>) -> io::Result<std::process::Child> {
    let mut servers = lock(&SERVERS);
    let child = spawn()?;
    *servers.get_or_insert_with(HashMap::new).entry(child.id()).or_default() += 1;
    Ok(child)
}

/// Forgets a server's leader once its waiter has reaped it.
pub(crate) fn server_ended(pid: u32) {
    let mut servers = lock(&SERVERS);
    let Some(servers) = servers.as_mut() else { return };
    if let Some(count) = servers.get_mut(&pid) {
        *count -= 1;
        if *count == 0 {
            servers.remove(&pid);
        }
    }
}

/// Reaps the orphans that have exited, and takes note of new ones; returns how many are still
/// running. Does nothing (and returns 0) unless this process [adopts orphans](adopt_orphans).
pub fn reap_orphans() -> usize {
    let Some(owner) = OWNER.get() else { return 0 };
    let found = {
        let servers = lock(&SERVERS);
        find_orphans(owner, servers.as_ref())
    };
    let mut adopted = lock(&ADOPTED);
    let adopted = adopted.get_or_insert_with(HashSet::new);
    adopted.extend(found);
    adopted.retain(|pid| !reap(*pid));
    adopted.len()
}

/// Ends every orphan (see the module docs): `SIGTERM`, then `SIGKILL` to those still running
/// after `grace`, and reaps them, waiting at most twice `grace` (plus a second for their own
/// orphans, which are adopted in turn); returns how many it ended. A program calls it before it
/// exits, after its servers' shutdowns ([`wait_for_shutdowns`](crate::wait_for_shutdowns)).
pub fn end_orphans(grace: Duration) -> usize {
    if OWNER.get().is_none() {
        return 0;
    }
    let start = Instant::now();
    let give_up = start + grace * 2 + Duration::from_secs(1);
    let mut terminated: HashMap<u32, Instant> = HashMap::new();
    let mut killed: HashSet<u32> = HashSet::new();
    loop {
        let running = reap_orphans();
        let adopted: Vec<u32> = lock(&ADOPTED).iter().flatten().copied().collect();
        if running == 0 || Instant::now() >= give_up {
            if running > 0 {
                tracing::warn!("{running} orphaned server processes did not end in time");
            }
            return terminated.len();
        }
        for pid in adopted {
            let sent = *terminated.entry(pid).or_insert_with(|| {
                tracing::debug!(pid, "ending an orphaned server process");
                signal(pid, nix::sys::signal::Signal::SIGTERM);
                Instant::now()
            });
            if sent.elapsed() >= grace && killed.insert(pid) {
                signal(pid, nix::sys::signal::Signal::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaps orphans on every `SIGCHLD` and every [`REAP_INTERVAL`], until dropped: for a host that
/// runs long (a gateway). Returns at once unless this process [adopts orphans](adopt_orphans).
pub async fn watch_orphans() {
    if OWNER.get().is_none() {
        return;
    }
    let mut children = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    let mut tick = tokio::time::interval(REAP_INTERVAL);
    loop {
        match children.as_mut() {
            Some(children) => {
                tokio::select! {
                    _ = children.recv() => {}
                    _ = tick.tick() => {}
                }
            }
            None => {
                tick.tick().await;
            }
        }
        // Reading /proc blocks a little: off the runtime's threads.
        if tokio::task::spawn_blocking(reap_orphans).await.is_err() {
            return;
        }
    }
}

/// Sends `signal` to orphan `pid` (ours, unreaped: the pid cannot have been reused).
fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    if let Ok(raw) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), signal);
    }
}

/// Reaps orphan `pid` if it has exited (or is not ours any more); whether it is gone.
fn reap(pid: u32) -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let Ok(raw) = i32::try_from(pid) else { return true };
    !matches!(
        waitpid(nix::unistd::Pid::from_raw(raw), Some(WaitPidFlag::WNOHANG)),
        Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::EINTR)
    )
}

/// The children of this process that carry `owner` and are not a server's leader.
#[cfg(target_os = "linux")]
fn find_orphans(owner: &str, servers: Option<&HashMap<u32, usize>>) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let marker = format!("{OWNER_VARIABLE}={owner}");
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| servers.is_none_or(|servers| !servers.contains_key(pid)))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_of(&stat))
                == Some(me)
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|byte| *byte == 0).any(|entry| entry == marker.as_bytes()))
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn find_orphans(_owner: &str, _servers: Option<&HashMap<u32, usize>>) -> Vec<u32> {
    Vec::new()
}

/// The parent pid in the text of `/proc/PID/stat`: the second field after the command name,
/// which is in parentheses and may itself hold spaces and parentheses.
fn parent_of(stat: &[u8]) -> Option<u32> {
    let after_name = &stat[stat.iter().rposition(|byte| *byte == b')')? + 1..];
    let mut fields = after_name
        .split(u8::is_ascii_whitespace)
        .filter(|field| !field.is_empty());
    let _state = fields.next()?;
    std::str::from_utf8(fields.next()?).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_a_command_name_with_spaces_and_parentheses() {
        assert_eq!(parent_of(b"4242 (sh) S 17 4242 17 0 -1"), Some(17));
        assert_eq!(parent_of(b"4242 (a) b (c) R 1 4242 17 0 -1\n"), Some(1));
        assert_eq!(parent_of(b"4242 (sh"), None);
        assert_eq!(parent_of(b"4242 (sh) S"), None);
    }
}
