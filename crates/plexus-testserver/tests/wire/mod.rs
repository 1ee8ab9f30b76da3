//! A raw HTTP/1.1 client for the remote modes' tests: spawns the server binary, reads the URL it
//! prints, and speaks HTTP over plain `TcpStream`s, so that every status, header, byte, event and
//! reset is seen exactly as the server sent it.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part of the harness.
#![allow(clippy::needless_pass_by_value)] // `json!(..)` arguments by value keep the tests readable.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{BIN, HANG_GUARD};

/// `Accept` as a Streamable HTTP client sends it.
pub const ACCEPT_BOTH: (&str, &str) = ("Accept", "application/json, text/event-stream");
/// `Content-Type: application/json`.
pub const JSON_BODY: (&str, &str) = ("Content-Type", "application/json");

/// A running `plexus-testserver MODE ARGS`.
pub struct Remote {
    child: Child,
    /// The URL the server printed.
    pub url: String,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The path of the URL.
    pub path: String,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Remote {
    /// Spawns the server and reads its first line, which must be `listening on SCHEME://ADDR/PATH`.
    pub fn start(mode: &str, args: &[&str]) -> Remote {
        let mut child = Command::new(BIN)
            .arg(mode)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn plexus-testserver");
        let stdout = child.stdout.take().unwrap();
        let (line_tx, line_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = line_tx.send(line);
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut child_stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = child_stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let line = line_rx.recv_timeout(HANG_GUARD).expect("the server printed no line");
        let url = line
            .strip_prefix("listening on ")
            .and_then(|rest| rest.strip_suffix('\n'))
            .unwrap_or_else(|| {
                let stderr = String::from_utf8_lossy(&stderr.lock().unwrap()).into_owned();
                panic!("unexpected first line {line:?}; stderr: {stderr}")
            })
            .to_owned();
        let rest = url.split_once("://").expect("a scheme").1;
        let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
        Remote {
            child,
            addr: authority.parse().expect("an address"),
            path: path.to_owned(),
            url,
            stderr,
        }
    }

    /// A new connection.
    pub fn connect(&self) -> Conn {
        Conn::open(self.addr)
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Waits for the process to exit.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit within {HANG_GUARD:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The exit status, if the process has exited.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response's status line and headers.
#[derive(Debug, Clone)]
pub struct Head {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn chunked(&self) -> bool {
        self.header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    }
}

/// A whole response.
#[derive(Debug, Clone)]
pub struct Response {
    pub head: Head,
    pub body: Vec<u8>,
}

impl Response {
    pub fn status(&self) -> u16 {
        self.head.status
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.header(name)
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("a UTF-8 body")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// One SSE event.
#[derive(Debug, Clone, Default, PartialEq)]
#[allow(clippy::struct_field_names)] // the SSE field names.
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    pub retry: Option<u64>,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.data))
    }
}

/// One HTTP/1.1 connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    addr: SocketAddr,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect to the server");
        stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
            addr,
        }
    }

    /// Sends a request; `Host` and (for a body or a POST) `Content-Length` are added.
    pub fn send(&mut self, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut request = format!("{method} {target} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        for (name, value) in headers {
            let _ = write!(request, "{name}: {value}\r\n");
        }
        if !body.is_empty() || method == "POST" {
            let _ = write!(request, "Content-Length: {}\r\n", body.len());
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        self.stream.write_all(&bytes).expect("send the request");
    }

    /// Reads more bytes; `Ok(0)` at the end of the connection.
    fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    fn fill_or_panic(&mut self, what: &str) {
        match self.fill() {
            Ok(0) => panic!("the connection closed while reading {what}"),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                panic!("nothing within {HANG_GUARD:?} while reading {what}")
            }
            Err(e) => panic!("cannot read {what}: {e}"),
        }
    }

    fn line(&mut self, what: &str) -> String {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..end + 2).take(end).collect();
                return String::from_utf8(line).expect("a UTF-8 line");
            }
            self.fill_or_panic(what);
        }
    }

    fn exact(&mut self, n: usize, what: &str) -> Vec<u8> {
        while self.buf.len() < n {
            self.fill_or_panic(what);
        }
        self.buf.drain(..n).collect()
    }

    /// Reads a status line and headers.
    pub fn head(&mut self) -> Head {
        let status_line = self.line("the status line");
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let line = self.line("the headers");
            if line.is_empty() {
                return Head { status, headers };
            }
            let (name, value) = line.split_once(':').expect("a header line");
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }

    /// Reads a whole body (by length, chunked, or none).
    pub fn body(&mut self, head: &Head) -> Vec<u8> {
        if head.chunked() {
            let mut body = Vec::new();
            while let Some(chunk) = self.chunk() {
                body.extend_from_slice(&chunk);
            }
            return body;
        }
        let length = head
            .header("content-length")
            .map_or(0, |v| v.parse().expect("a length"));
        self.exact(length, "the body")
    }

    /// The next chunk of a chunked body; `None` after the last.
    pub fn chunk(&mut self) -> Option<Vec<u8>> {
        let size_line = self.line("a chunk size");
        let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16).expect("a chunk size");
        if size == 0 {
            let trailer = self.line("the end of the body");
            assert_eq!(trailer, "", "no trailers expected");
            return None;
        }
        let chunk = self.exact(size, "a chunk");
        assert_eq!(self.exact(2, "a chunk's end"), b"\r\n");
        Some(chunk)
    }

    /// A request and its whole response.
    pub fn exchange(&mut self, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        self.send(method, target, headers, body);
        let head = self.head();
        let body = self.body(&head);
        Response { head, body }
    }

    /// Reads the events of an SSE body (chunked) until it ends.
    pub fn events(&mut self, head: &Head) -> Events<'_> {
        assert!(head.chunked(), "an event stream is chunked: {head:?}");
        Events {
            conn: self,
            pending: Vec::new(),
            ended: false,
        }
    }

    /// The error the next read gets (the test expects the connection to fail).
    pub fn read_error(&mut self) -> io::Error {
        loop {
            match self.fill() {
                Ok(0) => panic!("the connection closed cleanly instead of failing"),
                Ok(_) => {}
                Err(e) => return e,
            }
        }
    }

    /// Whether the connection ended (closed or reset) without a byte from the server; a
    /// server that keeps it open without answering fails the test.
    pub fn ended_unanswered(&mut self) -> bool {
        loop {
            match self.fill() {
                Ok(0) => return self.buf.is_empty(),
                Ok(_) => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    panic!("the connection neither ended nor was answered within {HANG_GUARD:?}")
                }
                Err(_) => return self.buf.is_empty(),
            }
        }
    }

    /// Whether the server closed the connection (end of stream, nothing more).
    pub fn closed_cleanly(&mut self) -> bool {
        matches!(self.fill(), Ok(0))
    }

    /// Closes the connection from this side.
    pub fn close(self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

/// The events of one SSE response.
pub struct Events<'a> {
    conn: &'a mut Conn,
    pending: Vec<u8>,
    ended: bool,
}

impl Events<'_> {
    /// The next event; `None` when the body ends.
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.pending.drain(..end + 2).collect();
                return Some(parse_event(&String::from_utf8(block).expect("a UTF-8 event")));
            }
            if self.ended {
                assert!(
                    self.pending.is_empty(),
                    "a partial event at the end: {:?}",
                    self.pending
                );
                return None;
            }
            match self.conn.chunk() {
                Some(chunk) => self.pending.extend_from_slice(&chunk),
                None => self.ended = true,
            }
        }
    }

    /// The next event, which must exist.
    pub fn expect(&mut self) -> Event {
        self.next_event().expect("another event")
    }

    /// Every remaining event.
    pub fn rest(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.next_event()).collect()
    }
}

fn parse_event(block: &str) -> Event {
    let mut event = Event::default();
    let mut data = Vec::new();
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => event.id = Some(value.to_owned()),
            "event" => event.event = Some(value.to_owned()),
            "data" => data.push(value.to_owned()),
            "retry" => event.retry = Some(value.parse().expect("a retry in ms")),
            "" => {}
            other => panic!("unexpected field {other:?} in {block:?}"),
        }
    }
    event.data = data.join("\n");
    event
}

/// A JSON-RPC request.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A JSON-RPC notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// initialize at 2025-11-25 with `capabilities`.
pub fn initialize_request(id: i64, capabilities: Value) -> Value {
    request(
        id,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "tests", "version": "0"}}),
    )
}

/// tools/call `name` with `arguments`.
pub fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    request(id, "tools/call", json!({"name": name, "arguments": arguments}))
}

/// A Streamable HTTP client of one session, one connection per request.
pub struct Session<'a> {
    pub remote: &'a Remote,
    pub id: String,
}

impl<'a> Session<'a> {
    /// POSTs initialize (SSE answer expected), checks the result, sends notifications/initialized.
    pub fn start(remote: &'a Remote) -> Session<'a> {
        Self::start_with(remote, json!({}))
    }

    pub fn start_with(remote: &'a Remote, capabilities: Value) -> Session<'a> {
        let mut conn = remote.connect();
        let head = post(&mut conn, &remote.path, None, &initialize_request(0, capabilities));
        assert_eq!(head.status, 200, "{head:?}");
        let id = head.header("mcp-session-id").expect("a session id").to_owned();
        let events = conn.events(&head).rest();
        let response = events.last().expect("the initialize response").json();
        assert_eq!(response["result"]["protocolVersion"], "2025-11-25", "{response}");
        let session = Session { remote, id };
        let accepted = session.post(&notification("notifications/initialized", json!({})));
        assert_eq!((accepted.status(), accepted.body.len()), (202, 0));
        session
    }

    /// The headers every later request carries.
    pub fn headers(&self) -> Vec<(&str, &str)> {
        vec![
            ACCEPT_BOTH,
            JSON_BODY,
            ("Mcp-Session-Id", self.id.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]
    }

    /// POSTs `message` on a new connection and reads the whole response.
    pub fn post(&self, message: &Value) -> Response {
        self.remote.connect().exchange(
            "POST",
            &self.remote.path,
            &self.headers(),
            &serde_json::to_vec(message).unwrap(),
        )
    }

    /// POSTs a request and returns the connection with the head read, for its events.
    pub fn open(&self, message: &Value) -> (Conn, Head) {
        let mut conn = self.remote.connect();
        conn.send(
            "POST",
            &self.remote.path,
            &self.headers(),
            &serde_json::to_vec(message).unwrap(),
        );
        let head = conn.head();
        (conn, head)
    }

    /// POSTs a request and returns every event of its stream.
    pub fn events_of(&self, message: &Value) -> Vec<Event> {
        let (mut conn, head) = self.open(message);
        assert_eq!(head.status, 200, "{head:?}");
        conn.events(&head).rest()
    }

    /// POSTs a request and returns the response message (the last event of its stream).
    pub fn call(&self, message: &Value) -> Value {
        let events = self.events_of(message);
        events.last().expect("a response event").json()
    }

    /// GET on the endpoint with `extra` headers; the connection and head.
    pub fn get(&self, extra: &[(&str, &str)]) -> (Conn, Head) {
        let mut conn = self.remote.connect();
        let mut headers = vec![("Accept", "text/event-stream"), ("Mcp-Session-Id", self.id.as_str())];
        headers.extend_from_slice(extra);
        conn.send("GET", &self.remote.path, &headers, b"");
        let head = conn.head();
        (conn, head)
    }
}

/// POSTs `message` to `path` as a Streamable HTTP client would (with a session id if given),
/// and reads the head.
pub fn post(conn: &mut Conn, path: &str, session: Option<&str>, message: &Value) -> Head {
    let mut headers = vec![ACCEPT_BOTH, JSON_BODY];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    conn.send("POST", path, &headers, &serde_json::to_vec(message).unwrap());
    conn.head()
}
