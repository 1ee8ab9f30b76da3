//! The stdio floor: a minimal client writing and reading lines on the test server's pipes,
//! blocking, on one thread, in either protocol era (the lines it opens with and the call it
//! repeats are given). Each line is written with one `write` (formatted into a buffer first):
//! `writeln!` on the unbuffered pipe writes each piece of the line on its own, several syscalls
//! per line, and each piece can wake the server for a partial line.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use super::{cpu_per_call, percentile, process_cpu};

/// The `initialize` request of the initialize era (its id is added).
pub(crate) const LEGACY_OPENING: &str = r#""method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}"#;
/// The notification that ends the handshake (a whole line).
pub(crate) const LEGACY_INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
/// The echo call of the initialize era (its id is added).
pub(crate) const LEGACY_ECHO: &str = r#""method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}"#;
/// The probe of the stateless era (its id is added).
pub(crate) const STATELESS_OPENING: &str = r#""method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"0"}}}"#;
/// The echo call of the stateless era, with its envelope (its id is added).
pub(crate) const STATELESS_ECHO: &str = r#""method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"0"}},"name":"echo","arguments":{"text":"hello"}}"#;

/// One round's latency (µs) and throughput (calls/s).
#[derive(Clone, Copy, Default)]
pub(crate) struct RawRound {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) throughput: f64,
    /// This thread's CPU time per sequential call (µs), when the kernel says.
    pub(crate) cpu: Option<f64>,
}

/// The floor client (see the module docs).
pub(crate) struct RawClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The line being written, whole before it goes to the pipe.
    out: Vec<u8>,
    line: String,
    next_id: u64,
    echo: &'static str,
}

impl RawClient {
    /// Starts `server stdio ARGS…` and opens the session: each of `opening` is sent (a request
    /// when it is not a whole line, then its reply read; a whole line as it is), then `echo` is
    /// the call each round repeats.
    pub(crate) fn start(server: &str, args: &[&str], opening: &[&str], echo: &'static str) -> RawClient {
        let mut command = Command::new(server);
        command.arg("stdio").args(args);
        RawClient::spawn(command, opening, echo)
    }

    /// [`start`](Self::start) with any command that serves MCP on its stdio (a gateway, for one).
    pub(crate) fn spawn(mut command: Command, opening: &[&str], echo: &'static str) -> RawClient {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = RawClient {
            child,
            stdin,
            stdout,
            out: Vec::new(),
            line: String::new(),
            next_id: 0,
            echo,
        };
        for message in opening {
            if message.starts_with('{') {
                raw.write_line(format_args!("{message}"));
            } else {
                raw.send(message);
                raw.receive();
            }
        }
        raw
    }

    /// Sends one request (`body`: its members after the id) and reads its reply, which must be a
    /// result.
    pub(crate) fn request(&mut self, body: &str) {
        self.send(body);
        self.receive();
    }

    fn send(&mut self, body: &str) {
        self.next_id += 1;
        let id = self.next_id;
        self.write_line(format_args!(r#"{{"jsonrpc":"2.0","id":{id},{body}}}"#));
    }

    /// Writes `line` and its newline to the server with one `write`.
    fn write_line(&mut self, line: std::fmt::Arguments<'_>) {
        self.out.clear();
        writeln!(self.out, "{line}").unwrap();
        self.stdin.write_all(&self.out).unwrap();
    }

    fn receive(&mut self) {
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        assert!(self.line.contains("\"result\""), "unexpected reply: {}", self.line);
    }

    /// `warmup` calls, `sequential` timed one by one, then `throughput` with `in_flight` at once.
    pub(crate) fn round(&mut self, warmup: usize, sequential: usize, in_flight: usize, throughput: usize) -> RawRound {
        let echo = self.echo;
        for _ in 0..warmup {
            self.send(echo);
            self.receive();
        }
        let mut times = Vec::with_capacity(sequential);
        let before = process_cpu();
        for _ in 0..sequential {
            let start = Instant::now();
            self.send(echo);
            self.receive();
            times.push(start.elapsed());
        }
        let cpu = cpu_per_call(before, sequential);
        times.sort_unstable();
        let start = Instant::now();
        for _ in 0..in_flight {
            self.send(echo);
        }
        for done in 0..throughput {
            self.receive();
            if done + in_flight < throughput {
                self.send(echo);
            }
        }
        RawRound {
            p50: percentile(&times, 0.5),
            p99: percentile(&times, 0.99),
            throughput: throughput as f64 / start.elapsed().as_secs_f64(),
            cpu,
        }
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
