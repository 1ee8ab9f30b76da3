//! A client for the tests: spawns the built server over real pipes and speaks JSON lines to it.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part of the harness.
#![allow(clippy::needless_pass_by_value)] // `json!(..)` arguments by value keep the tests readable.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any single wait may take before the test gives up (a hang guard, not a timing check).
pub const HANG_GUARD: Duration = Duration::from_secs(30);

pub const BIN: &str = env!("CARGO_BIN_EXE_plexus-testserver");

/// One running server and the client end of its pipes.
pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: Option<JoinHandle<()>>,
    next_id: i64,
    /// Messages that arrived while waiting for a response to something else, in order.
    pub unsolicited: Vec<Value>,
}

impl Server {
    /// Spawns `plexus-testserver stdio ARGS`.
    pub fn start(args: &[&str]) -> Server {
        Self::spawn(Command::new(BIN).arg("stdio").args(args))
    }

    /// Spawns `command` with piped stdio.
    pub fn spawn(command: &mut Command) -> Server {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn plexus-testserver");
        let stdout = child.stdout.take().unwrap();
        let (line_tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if line_tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut child_stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = child_stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            stderr_reader: Some(stderr_reader),
            next_id: 0,
            unsolicited: Vec::new(),
        }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// Sends a request and returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next raw line (with its newline); `None` at end of output.
    pub fn recv_line(&mut self) -> Option<Vec<u8>> {
        match self.lines.recv_timeout(HANG_GUARD) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no output from the server within {HANG_GUARD:?}; stderr: {}",
                self.stderr_text()
            ),
        }
    }

    /// The next message.
    pub fn recv(&mut self) -> Value {
        let line = self
            .recv_line()
            .unwrap_or_else(|| panic!("the server closed stdout; stderr: {}", self.stderr_text()));
        serde_json::from_slice(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&line)))
    }

    /// Waits for the response to `id`, keeping other messages in `unsolicited`.
    pub fn response(&mut self, id: i64) -> Value {
        loop {
            let message = self.recv();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            self.unsolicited.push(message);
        }
    }

    /// Sends a request and waits for its response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id)
    }

    /// The result of a request that must succeed.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// The error of a request that must fail.
    pub fn error(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("result").is_none(), "{method} succeeded: {response}");
        response["error"].clone()
    }

    /// initialize (at 2025-11-25 with `capabilities`) + notifications/initialized; the result.
    pub fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
        let result = self.result("initialize", json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "tests", "version": "0"}}));
        self.notify("notifications/initialized", json!({}));
        result
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with("2025-11-25", json!({}))
    }

    /// tools/call `name` with `arguments`: the whole response.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// The text of the first content of a successful tools/call result.
    pub fn tool_text(&mut self, name: &str, arguments: Value) -> String {
        let response = self.call_tool(name, arguments);
        let text = response["result"]["content"][0]["text"].as_str();
        text.unwrap_or_else(|| panic!("no text result from {name}: {response}"))
            .to_owned()
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit (closing nothing), then for its stderr to end.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if let Some(reader) = self.stderr_reader.take() {
                    // stderr may be held open by a grandchild; give up on it then.
                    let reader_deadline = Instant::now() + Duration::from_secs(5);
                    while !reader.is_finished() && Instant::now() < reader_deadline {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit within {HANG_GUARD:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn stderr_len(&self) -> usize {
        self.stderr.lock().unwrap().len()
    }

    /// Asserts that stdout ends with no further output.
    pub fn assert_no_more_output(&mut self) {
        if let Some(line) = self.recv_line() {
            panic!("unexpected output: {}", String::from_utf8_lossy(&line));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The events of an event log file so far.
pub fn events(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("bad event line {line:?}: {e}")))
        .collect()
}

/// Waits until the event log has an event that `matches`, and returns all events.
pub fn wait_for_event(path: &Path, matches: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let events = events(path);
        if events.iter().any(&matches) {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "no matching event within {HANG_GUARD:?}; events: {events:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `condition` holds (a hang guard, not a timing check).
pub fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {HANG_GUARD:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
