//! Resident memory (Linux `/proc`): of this process, and of another process such as the test
//! server, which the soak finds among its children.

use std::path::Path;

/// The resident set size (`VmRSS`) of process `pid`, or of this process for `None`, in KiB;
/// `None` when the kernel does not say (no `/proc`, or the process has ended).
pub(crate) fn rss_kib_of(pid: Option<u32>) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
}

/// The resident set size of this process, in KiB (0 where the kernel does not say).
pub(crate) fn rss_kib() -> u64 {
    rss_kib_of(None).unwrap_or(0)
}

/// The process ids of this process's children that run the executable `exe` (the test server
/// that a stdio connection started, for one), from `/proc/*/stat` and `/proc/*/exe`.
pub(crate) fn children_running(exe: &Path) -> Vec<u32> {
    let me = std::process::id();
    let Ok(exe) = exe.canonicalize() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|running| running == exe))
        .collect()
}

/// The parent process id of `pid` (the field after the command name in `/proc/PID/stat`; the
/// name is in parentheses and may hold spaces, so the fields are read after its last `)`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}
