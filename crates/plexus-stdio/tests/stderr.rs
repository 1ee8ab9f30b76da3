//! A server flooding stderr while messages flow: nothing blocks, memory stays bounded.

mod common;

use std::time::{Duration, Instant};

use common::{HANG_GUARD, notification, recv_message, sh};
use plexus_stdio::{DEFAULT_STDERR_CAPACITY, StdioTransport};
use plexus_transport::TransportSender;

const FLOOD_BYTES: u64 = 10_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stderr_flood_neither_blocks_the_server_nor_grows_the_ring() {
    // 10 MB of stderr lines in the background while `cat` echoes the messages.
    let script =
        format!("yes 'a noisy line of server logging that goes on and on' | head -c {FLOOD_BYTES} >&2 & exec cat");
    let transport = StdioTransport::spawn(sh(&script, &[])).unwrap();
    let stderr = transport.stderr_log();
    assert_eq!(stderr.capacity(), DEFAULT_STDERR_CAPACITY);
    let (sender, mut receiver) = transport.into_parts();
    for i in 0..500 {
        sender.send(notification(&format!("during-flood/{i}"))).await.unwrap();
        assert_eq!(
            recv_message(&mut receiver).await.method(),
            Some(format!("during-flood/{i}").as_str())
        );
        assert!(stderr.len() <= DEFAULT_STDERR_CAPACITY);
    }
    // The whole flood is read (the writer of it is never blocked for good) …
    let start = Instant::now();
    while stderr.total_bytes() < FLOOD_BYTES {
        assert!(
            start.elapsed() < HANG_GUARD,
            "only {} bytes of stderr were read",
            stderr.total_bytes()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(stderr.total_bytes(), FLOOD_BYTES);
    // … and only the last 64 KiB of it, in whole lines, are kept.
    assert!(
        stderr.len() <= DEFAULT_STDERR_CAPACITY && stderr.len() > DEFAULT_STDERR_CAPACITY - 100,
        "{}",
        stderr.len()
    );
    let kept = stderr.contents();
    assert!(kept.starts_with("a noisy line"), "the ring starts at a line boundary");
    assert!(
        kept.lines()
            .all(|line| "a noisy line of server logging that goes on and on".starts_with(line))
    );
    let tail = stderr.tail(plexus_stdio::STDERR_TAIL_BYTES);
    assert!(
        tail.len() <= plexus_stdio::STDERR_TAIL_BYTES && tail.starts_with("a noisy line"),
        "{tail}"
    );
    sender.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ring_capacity_is_configurable() {
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo \"line $i\" >&2; done; echo '{\"jsonrpc\":\"2.0\",\"method\":\"done\"}'; exec cat";
    let transport = StdioTransport::spawn(sh(script, &[]).stderr_capacity(20)).unwrap();
    let stderr = transport.stderr_log();
    let (sender, mut receiver) = transport.into_parts();
    assert_eq!(recv_message(&mut receiver).await.method(), Some("done"));
    sender.close().await.unwrap();
    // The stderr task has read everything once the group is gone and the pipe is at EOF.
    let start = Instant::now();
    while stderr.total_bytes() < 71 {
        assert!(start.elapsed() < HANG_GUARD);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(stderr.contents(), "line 9\nline 10\n", "whole lines within 20 bytes");
}

/// A `tracing` writer that keeps what it is given.
#[derive(Clone, Default)]
struct CapturedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_stderr_line_goes_to_tracing_tagged_with_the_server_and_cut_when_long() {
    let captured = CapturedLog::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .without_time()
        .with_writer(move || writer.clone())
        .finish();
    // The runtime has one thread, so the stderr task logs through this subscriber.
    let _default = tracing::subscriber::set_default(subscriber);
    let script = format!(
        "echo 'warming up' >&2; head -c {} /dev/zero | tr '\\0' y >&2; echo >&2; exec cat",
        plexus_stdio::MAX_LOGGED_STDERR_LINE + 500
    );
    let transport = StdioTransport::spawn(sh(&script, &[]).name("weather")).unwrap();
    let stderr = transport.stderr_log();
    let (sender, _receiver) = transport.into_parts();
    let start = Instant::now();
    while stderr.total_bytes() < (plexus_stdio::MAX_LOGGED_STDERR_LINE + 512) as u64 {
        assert!(start.elapsed() < HANG_GUARD);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    sender.close().await.unwrap();
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let stderr_lines: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("plexus_stdio::stderr"))
        .collect();
    assert_eq!(stderr_lines.len(), 2, "{log}");
    assert!(
        stderr_lines[0].ends_with("plexus_stdio::stderr: warming up server=weather"),
        "{}",
        stderr_lines[0]
    );
    let cut = format!(
        "{}… (500 more bytes) server=weather",
        "y".repeat(plexus_stdio::MAX_LOGGED_STDERR_LINE)
    );
    assert!(stderr_lines[1].ends_with(&cut), "{}", stderr_lines[1]);
}
