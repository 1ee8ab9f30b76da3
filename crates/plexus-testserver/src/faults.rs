//! Fault material shared by the fault tools and the process-level switches: garbage and oversized
//! lines, stderr output, the stray grandchild.

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// The most bytes a fault writes or a tool returns in one go (`large`, `oversize`, `stderr`,
/// `--flood-stderr`): 128 MiB, far past any sane line limit and still bounded.
pub(crate) const MAX_FAULT_BYTES: usize = 128 << 20;

/// The line `garbage` and `--garbage-line` write: not JSON at all.
pub(crate) const GARBAGE_LINE: &[u8] = b"this line is not JSON (plexus-testserver garbage fault)\n";

/// How long the grandchild of `--spawn-grandchild` lives at most, in seconds.
const GRANDCHILD_LIFETIME_SECS: u32 = 3600;

const OVERSIZE_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","logger":"plexus-testserver","data":""#;
const OVERSIZE_SUFFIX: &[u8] = br#""}}"#;

/// The smallest line [`oversize_line`] can build.
pub(crate) const MIN_OVERSIZE_BYTES: usize = OVERSIZE_PREFIX.len() + OVERSIZE_SUFFIX.len();

/// A valid JSON-RPC notification line (`notifications/message` at level debug) of exactly `bytes`
/// bytes before its newline, or `None` when `bytes` is below [`MIN_OVERSIZE_BYTES`].
pub(crate) fn oversize_line(bytes: usize) -> Option<Vec<u8>> {
    let fill = bytes.checked_sub(MIN_OVERSIZE_BYTES)?;
    let mut line = Vec::with_capacity(bytes + 1);
    line.extend_from_slice(OVERSIZE_PREFIX);
    line.resize(OVERSIZE_PREFIX.len() + fill, b'x');
    line.extend_from_slice(OVERSIZE_SUFFIX);
    line.push(b'\n');
    Some(line)
}

/// Writes exactly `total` bytes of numbered lines (`plexus-testserver <what> 000001 ...`) to
/// stderr; the last line is shortened to fit and still ends with a newline.
pub(crate) fn write_stderr_bytes(total: usize, what: &str) -> io::Result<()> {
    const LINE: usize = 80;
    const CHUNK: usize = 64 * 1024;
    let stderr = io::stderr();
    let mut stderr = stderr.lock();
    let mut chunk = Vec::with_capacity(CHUNK + LINE);
    let mut written = 0;
    let mut number = 0u64;
    while written < total {
        number += 1;
        let len = LINE.min(total - written);
        let start = chunk.len();
        write!(chunk, "plexus-testserver {what} {number:06} ")?;
        chunk.resize(start + len - 1, b'.');
        chunk.push(b'\n');
        written += len;
        if chunk.len() >= CHUNK {
            stderr.write_all(&chunk)?;
            chunk.clear();
        }
    }
    stderr.write_all(&chunk)?;
    stderr.flush()
}

/// Starts writing `total` bytes to stderr on a thread of its own, so that serving goes on while the
/// reader of stderr is slow (`--flood-stderr`).
pub(crate) fn flood_stderr(total: usize) -> io::Result<()> {
    std::thread::Builder::new().name("stderr-flood".into()).spawn(move || {
        // Nobody to tell when stderr itself is closed.
        let _ = write_stderr_bytes(total, "flood");
    })?;
    Ok(())
}

/// Spawns the stray grandchild of `--spawn-grandchild`: a shell that ignores SIGINT and SIGTERM,
/// stays in this process group (or, with `own_group`, for `--spawn-escapee`, leads a group of
/// its own) and sleeps for an hour, with its stdio on /dev/null. Once it says that it ignores
/// the signals, writes its PID (and a newline) to `pidfile` and returns it; so whoever reads the
/// file can rely on the grandchild ignoring them.
pub(crate) fn spawn_grandchild(pidfile: &Path, own_group: bool) -> io::Result<u32> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "trap '' INT TERM; echo ready; exec sleep {GRANDCHILD_LIFETIME_SECS} >/dev/null"
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if own_group {
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
    }
    let mut child = command.spawn()?;
    let pid = child.id();
    let ready = child.stdout.take().map(|stdout| {
        let mut line = String::new();
        // The line is short; the shell prints it at once or dies (end of output).
        let _ = io::BufRead::read_line(&mut io::BufReader::new(stdout.take(64)), &mut line);
        line
    });
    let written = if ready.as_deref() == Some("ready\n") {
        std::fs::write(pidfile, format!("{pid}\n"))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", pidfile.display())))
    } else {
        Err(io::Error::other(format!(
            "the grandchild shell did not start (it said {ready:?})"
        )))
    };
    if let Err(e) = written {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    // Reap it whenever it ends, so that it never lingers as a zombie while we run.
    std::thread::Builder::new()
        .name("grandchild-reaper".into())
        .spawn(move || {
            let _ = child.wait();
        })?;
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversize_lines_are_exact_and_valid() {
        assert!(oversize_line(MIN_OVERSIZE_BYTES - 1).is_none());
        for bytes in [MIN_OVERSIZE_BYTES, MIN_OVERSIZE_BYTES + 1, 5000] {
            let line = oversize_line(bytes).unwrap();
            assert_eq!(line.len(), bytes + 1);
            assert_eq!(line.last(), Some(&b'\n'));
            let message = plexus_jsonrpc::Message::from_slice(&line[..bytes]).unwrap();
            assert_eq!(message.method(), Some("notifications/message"));
        }
    }

    #[test]
    fn garbage_is_not_json() {
        assert!(serde_json::from_slice::<serde_json::Value>(GARBAGE_LINE).is_err());
        assert_eq!(
            GARBAGE_LINE.iter().position(|b| *b == b'\n'),
            Some(GARBAGE_LINE.len() - 1)
        );
    }
}
