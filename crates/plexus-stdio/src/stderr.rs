//! Bounded capture of the server's stderr: a ring of the most recent bytes, and each line
//! forwarded to `tracing`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

use crate::config::MAX_LOGGED_STDERR_LINE;
use crate::process::Shared;

/// The `tracing` target of the server's stderr lines (logged at `DEBUG`, with a `server` field).
pub const STDERR_TRACING_TARGET: &str = "plexus_stdio::stderr";

/// How many bytes one read of stderr takes at most.
const READ_CHUNK: usize = 8 * 1024;

/// The most recent stderr output of a server, bounded by its capacity.
///
/// A cheap handle (cloning shares the same ring); it stays readable after the server is gone.
#[derive(Debug, Clone)]
pub struct StderrLog {
    ring: Arc<Mutex<StderrRing>>,
}

impl StderrLog {
    pub(crate) fn new(capacity: usize) -> Self {
        StderrLog {
            ring: Arc::new(Mutex::new(StderrRing::new(capacity))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StderrRing> {
        crate::lock(&self.ring)
    }

    pub(crate) fn push(&self, chunk: &[u8]) {
        self.lock().push(chunk);
    }

    /// Everything the ring holds (lossy UTF-8).
    pub fn contents(&self) -> String {
        self.tail(usize::MAX)
    }

    /// The last lines, at most `max_bytes` bytes of them (lossy UTF-8). A line cut by the limit
    /// is left out unless it is the only one.
    pub fn tail(&self, max_bytes: usize) -> String {
        self.lock().tail(max_bytes)
    }

    /// How many bytes the ring holds now (never more than its capacity).
    pub fn len(&self) -> usize {
        self.lock().bytes.len()
    }

    /// Whether the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most bytes the ring keeps.
    pub fn capacity(&self) -> usize {
        self.lock().capacity
    }

    /// How many bytes the server has written to stderr in all.
    pub fn total_bytes(&self) -> u64 {
        self.lock().total
    }
}

/// The bytes of the ring, trimmed to a line boundary when bytes have to go.
#[derive(Debug)]
struct StderrRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl StderrRing {
    fn new(capacity: usize) -> Self {
        StderrRing {
            // Grown as the server writes: one that says nothing costs no memory here.
            bytes: VecDeque::new(),
            capacity,
            total: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if self.capacity == 0 || chunk.is_empty() {
            return;
        }
        // A chunk bigger than the ring replaces it with its own end.
        let skip = chunk.len().saturating_sub(self.capacity);
        let mut cut_mid_line = false;
        if skip > 0 {
            self.bytes.clear();
            cut_mid_line = chunk[skip - 1] != b'\n';
        }
        self.bytes.extend(&chunk[skip..]);
        let overflow = self.bytes.len().saturating_sub(self.capacity);
        if overflow > 0 {
            cut_mid_line = self.bytes[overflow - 1] != b'\n';
            self.bytes.drain(..overflow);
        }
        if cut_mid_line {
            // Drop the rest of the cut line, unless it is all there is.
            if let Some(newline) = self.bytes.iter().position(|&b| b == b'\n') {
                if newline + 1 < self.bytes.len() {
                    self.bytes.drain(..=newline);
                }
            }
        }
    }

    fn tail(&self, max_bytes: usize) -> String {
        let start = self.bytes.len().saturating_sub(max_bytes);
        let mut tail: Vec<u8> = self.bytes.range(start..).copied().collect();
        if start > 0 && self.bytes[start - 1] != b'\n' {
            if let Some(newline) = tail.iter().position(|&b| b == b'\n') {
                if newline + 1 < tail.len() {
                    tail.drain(..=newline);
                }
            }
        }
        String::from_utf8_lossy(&tail).into_owned()
    }
}

/// Splits stderr into lines and logs each one, cut at [`MAX_LOGGED_STDERR_LINE`] bytes.
struct LineLogger<'a> {
    server: &'a str,
    line: Vec<u8>,
    cut_bytes: usize,
}

impl<'a> LineLogger<'a> {
    fn new(server: &'a str) -> Self {
        LineLogger {
            server,
            line: Vec::new(),
            cut_bytes: 0,
        }
    }

    fn feed(&mut self, mut chunk: &[u8]) {
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            self.append(&chunk[..newline]);
            self.emit();
            chunk = &chunk[newline + 1..];
        }
        self.append(chunk);
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = MAX_LOGGED_STDERR_LINE - self.line.len();
        let taken = room.min(bytes.len());
        self.line.extend_from_slice(&bytes[..taken]);
        self.cut_bytes += bytes.len() - taken;
    }

    fn emit(&mut self) {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        if !line.is_empty() || self.cut_bytes > 0 {
            let text = String::from_utf8_lossy(line);
            if self.cut_bytes > 0 {
                tracing::debug!(target: STDERR_TRACING_TARGET, server = %self.server, "{text}… ({} more bytes)", self.cut_bytes);
            } else {
                tracing::debug!(target: STDERR_TRACING_TARGET, server = %self.server, "{text}");
            }
        }
        self.line.clear();
        self.cut_bytes = 0;
    }
}

/// Reads the server's stderr until it ends: fast enough that the server never blocks on it,
/// keeping only what the ring holds and one line being logged.
pub(crate) async fn capture_stderr(mut stderr: ChildStderr, shared: Arc<Shared>) {
    // Room for a whole chunk once the server first writes (the first read takes what a small
    // room holds): a server that says nothing costs no memory here, for every connection.
    let mut chunk = Vec::new();
    let mut logger = LineLogger::new(&shared.name);
    loop {
        match stderr.read_buf(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => {
                shared.stderr.push(&chunk[..n]);
                logger.feed(&chunk[..n]);
                // Emptied first, so that the room stays `READ_CHUNK` however much a read took.
                chunk.clear();
                chunk.reserve(READ_CHUNK);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::debug!(server = %shared.name, "reading the server's stderr failed: {e}");
                break;
            }
        }
    }
    logger.emit();
    shared.set_stderr_closed();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(capacity: usize, chunks: &[&[u8]]) -> StderrRing {
        let mut ring = StderrRing::new(capacity);
        for chunk in chunks {
            ring.push(chunk);
        }
        ring
    }

    #[test]
    fn the_ring_keeps_whole_lines_when_it_must_drop_bytes() {
        let ring = ring(10, &[b"aaaa\nbbbb\n", b"cc\n"]);
        assert_eq!(ring.tail(usize::MAX), "bbbb\ncc\n");
        assert_eq!(ring.total, 13);
    }

    #[test]
    fn a_chunk_bigger_than_the_ring_keeps_its_end() {
        let ring = ring(8, &[b"old\n", b"0123456789\nxyz\n"]);
        assert_eq!(ring.tail(usize::MAX), "xyz\n");
        let ring = ring_one_line();
        assert_eq!(
            ring.tail(usize::MAX),
            "23456789",
            "a single line longer than the ring keeps its end"
        );
    }

    fn ring_one_line() -> StderrRing {
        ring(8, &[b"0123456789"])
    }

    #[test]
    fn the_ring_never_exceeds_its_capacity() {
        let mut ring = StderrRing::new(100);
        for i in 0..1000 {
            ring.push(format!("line {i} {}\n", "x".repeat(i % 37)).as_bytes());
            assert!(ring.bytes.len() <= 100);
        }
        assert!(ring.tail(usize::MAX).starts_with("line "));
        assert!(ring.tail(usize::MAX).ends_with('\n'));
    }

    #[test]
    fn tail_gives_the_last_whole_lines() {
        let ring = ring(100, &[b"first line\nsecond\nthird\n"]);
        assert_eq!(ring.tail(14), "second\nthird\n");
        assert_eq!(ring.tail(13), "second\nthird\n");
        assert_eq!(ring.tail(12), "third\n");
        assert_eq!(
            ring.tail(3),
            "rd\n",
            "a line longer than the limit is cut rather than dropped"
        );
        assert_eq!(StderrRing::new(0).tail(10), "");
    }

    #[test]
    fn a_zero_capacity_ring_keeps_nothing_but_counts() {
        let ring = ring(0, &[b"abc\n"]);
        assert_eq!(ring.tail(usize::MAX), "");
        assert_eq!(ring.total, 4);
    }

    #[test]
    fn the_logger_bounds_a_line() {
        let mut logger = LineLogger::new("s");
        logger.feed(&vec![b'x'; MAX_LOGGED_STDERR_LINE * 3]);
        assert_eq!(logger.line.len(), MAX_LOGGED_STDERR_LINE);
        assert_eq!(logger.cut_bytes, MAX_LOGGED_STDERR_LINE * 2);
        logger.feed(b"\nnext");
        assert_eq!(logger.line, b"next");
        assert_eq!(logger.cut_bytes, 0);
    }
}
