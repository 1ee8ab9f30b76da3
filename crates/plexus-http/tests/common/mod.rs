//! A scripted HTTP/1.1 server on a real 127.0.0.1 socket (each test says exactly how it answers
//! each request), and helpers for messages and bounded waits.
#![allow(dead_code, unreachable_pub)]

pub mod mcp;

use std::fmt::Write as _;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// The bound on anything a test waits for: a hang guard, not a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// Awaits `future` within the hang guard.
pub async fn guard<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(HANG_GUARD, future)
        .await
        .expect("finished within the hang guard")
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// 0-based, in arrival order over all connections.
    pub index: usize,
    /// Which TCP connection it came on (0-based, in accept order).
    pub connection: usize,
    pub method: String,
    pub path: String,
    /// Names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// Every value of a header.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The JSON body (`null` when there is none).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of a POST body.
    pub fn rpc_method(&self) -> Option<String> {
        self.json().get("method").and_then(Value::as_str).map(str::to_owned)
    }

    /// The JSON-RPC id of a POST body.
    pub fn rpc_id(&self) -> Value {
        self.json().get("id").cloned().unwrap_or(Value::Null)
    }
}

/// One step of an SSE body (written with chunked encoding).
#[derive(Clone)]
pub enum Step {
    /// Raw event-stream text, written as one chunk.
    Text(String),
    /// Waits.
    Sleep(Duration),
    /// Waits until the gate opens.
    WaitFor(Arc<Gate>),
    /// Never goes on (the connection stays open).
    Forever,
    /// The terminating chunk: the body ends cleanly and the connection stays usable.
    End,
    /// Closes the socket in the middle of the body.
    Cut,
}

/// How to answer one request.
#[derive(Clone)]
pub enum Reply {
    /// A full response: status, extra headers, body (with a content-length).
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// A chunked body, written in steps (an SSE stream unless the headers say otherwise).
    Chunked {
        status: u16,
        headers: Vec<(String, String)>,
        steps: Vec<Step>,
    },
    /// Headers with a content-length, then only part of the body, then the connection stays
    /// open and silent.
    Partial {
        status: u16,
        headers: Vec<(String, String)>,
        declared: usize,
        sent: Vec<u8>,
    },
    /// Resets the connection (RST) without answering.
    Reset,
    /// Closes the connection without answering.
    Hangup,
    /// Never answers.
    Silent,
    /// Waits, then answers.
    After(Duration, Box<Reply>),
    /// These bytes as they are, then the connection closes.
    Raw(Vec<u8>),
    /// Answers, then closes the connection (without saying so in the response).
    Closing(Box<Reply>),
}

impl Reply {
    /// A JSON body with status 200 and extra headers.
    pub fn json(body: impl Into<String>, headers: &[(&str, &str)]) -> Reply {
        Reply::Full {
            status: 200,
            headers: own(&[("content-type", "application/json")], headers),
            body: body.into().into_bytes(),
        }
    }

    /// A status with a text body.
    pub fn status(status: u16, body: impl Into<String>, headers: &[(&str, &str)]) -> Reply {
        Reply::Full {
            status,
            headers: own(&[("content-type", "text/plain")], headers),
            body: body.into().into_bytes(),
        }
    }

    /// 202 Accepted without a body.
    pub fn accepted() -> Reply {
        Reply::Full {
            status: 202,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// An SSE stream with extra headers.
    pub fn sse(headers: &[(&str, &str)], steps: Vec<Step>) -> Reply {
        Reply::Chunked {
            status: 200,
            headers: own(
                &[("content-type", "text/event-stream"), ("cache-control", "no-cache")],
                headers,
            ),
            steps,
        }
    }
}

/// The base headers (unless `extra` has one of the same name), then `extra`.
fn own(base: &[(&str, &str)], extra: &[(&str, &str)]) -> Vec<(String, String)> {
    base.iter()
        .filter(|(name, _)| !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
        .chain(extra)
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

/// An SSE event carrying `data` (one line), with an optional id.
pub fn event(id: Option<&str>, data: &str) -> Step {
    let mut text = String::new();
    if let Some(id) = id {
        text.push_str("id: ");
        text.push_str(id);
        text.push('\n');
    }
    text.push_str("data: ");
    text.push_str(data);
    text.push_str("\n\n");
    Step::Text(text)
}

/// The priming event: an id and empty data.
pub fn priming(id: &str) -> Step {
    Step::Text(format!("id: {id}\ndata:\n\n"))
}

/// A gate that steps wait for; once open it stays open.
#[derive(Default)]
pub struct Gate {
    open: std::sync::atomic::AtomicBool,
    opened: Notify,
}

impl Gate {
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    pub fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        self.opened.notify_waiters();
    }

    pub async fn wait(&self) {
        loop {
            let opened = self.opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            if self.open.load(Ordering::SeqCst) {
                return;
            }
            opened.await;
        }
    }
}

type Script = dyn Fn(&Recorded) -> Reply + Send + Sync;

#[derive(Default)]
struct Log {
    requests: Mutex<Vec<Recorded>>,
    /// Only count requests, without keeping them (for load tests).
    quiet: bool,
    count: AtomicUsize,
    changed: Notify,
    connections: AtomicUsize,
}

/// A scripted HTTP/1.1 server on 127.0.0.1.
pub struct TestServer {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    log: Arc<Log>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl TestServer {
    /// Starts a server that answers each request with `script(request)`.
    pub async fn start(script: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> TestServer {
        Self::start_with(false, script).await
    }

    /// Like [`start`](Self::start), but requests are only counted, not kept.
    pub async fn start_quiet(script: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> TestServer {
        Self::start_with(true, script).await
    }

    async fn start_with(quiet: bool, script: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Log {
            quiet,
            ..Log::default()
        });
        let script: Arc<Script> = Arc::new(script);
        let accept = tokio::spawn({
            let log = Arc::clone(&log);
            async move {
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        return;
                    };
                    let connection = log.connections.fetch_add(1, Ordering::SeqCst);
                    log.changed.notify_waiters();
                    tokio::spawn(serve(socket, connection, Arc::clone(&log), Arc::clone(&script)));
                }
            }
        });
        TestServer {
            addr,
            url: format!("http://{addr}/mcp"),
            log,
            accept,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.requests.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.log.count.load(Ordering::SeqCst)
    }

    /// How many TCP connections were accepted.
    pub fn connections(&self) -> usize {
        self.log.connections.load(Ordering::SeqCst)
    }

    /// Waits (within the hang guard) until `done` holds for the requests so far.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&[Recorded]) -> bool) -> Vec<Recorded> {
        let wait = async {
            loop {
                let changed = self.log.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                {
                    let requests = self.log.requests.lock().unwrap();
                    if done(&requests) {
                        return requests.clone();
                    }
                }
                changed.await;
            }
        };
        let waited = tokio::time::timeout(HANG_GUARD, wait).await;
        waited.unwrap_or_else(|_| panic!("the server never saw {what}; it saw {:#?}", self.requests()))
    }

    /// Waits until `count` requests with `method` arrived.
    pub async fn wait_for_method(&self, method: &str, count: usize) -> Vec<Recorded> {
        self.wait_until(&format!("{count} × {method}"), |all| {
            all.iter().filter(|r| r.method == method).count() >= count
        })
        .await
    }
}

async fn serve(mut socket: TcpStream, connection: usize, log: Arc<Log>, script: Arc<Script>) {
    let mut buffer = Vec::new();
    loop {
        let Some(recorded) = read_request(&mut socket, &mut buffer, connection, &log).await else {
            return;
        };
        let reply = script(&recorded);
        if !log.quiet {
            log.requests.lock().unwrap().push(recorded);
            log.changed.notify_waiters();
        }
        if !answer(&mut socket, reply).await {
            return;
        }
    }
}

async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>, connection: usize, log: &Log) -> Option<Recorded> {
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if socket.read_buf(buffer).await.ok()? == 0 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        if socket.read_buf(buffer).await.ok()? == 0 {
            return None;
        }
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    let index = log.count.fetch_add(1, Ordering::SeqCst);
    Some(Recorded {
        index,
        connection,
        method,
        path,
        headers,
        body,
    })
}

fn head(status: u16, headers: &[(String, String)], framing: &str) -> Vec<u8> {
    let mut text = format!("HTTP/1.1 {status} Scripted\r\n");
    for (name, value) in headers {
        let _ = write!(text, "{name}: {value}\r\n");
    }
    text.push_str(framing);
    text.push_str("\r\n");
    text.into_bytes()
}

/// Writes the reply; false when the connection is done.
async fn answer(socket: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Full { status, headers, body } => {
            let mut bytes = head(status, &headers, &format!("content-length: {}\r\n", body.len()));
            bytes.extend_from_slice(&body);
            socket.write_all(&bytes).await.is_ok()
        }
        Reply::Chunked { status, headers, steps } => {
            if socket
                .write_all(&head(status, &headers, "transfer-encoding: chunked\r\n"))
                .await
                .is_err()
            {
                return false;
            }
            for step in steps {
                match step {
                    Step::Text(text) => {
                        let chunk = format!("{:x}\r\n{text}\r\n", text.len());
                        if socket.write_all(chunk.as_bytes()).await.is_err() {
                            return false;
                        }
                    }
                    Step::Sleep(duration) => tokio::time::sleep(duration).await,
                    Step::WaitFor(gate) => gate.wait().await,
                    Step::Forever => std::future::pending::<()>().await,
                    Step::End => return socket.write_all(b"0\r\n\r\n").await.is_ok(),
                    Step::Cut => return false,
                }
            }
            // Steps without an end: close the connection mid-body.
            false
        }
        Reply::Partial {
            status,
            headers,
            declared,
            sent,
        } => {
            let mut bytes = head(status, &headers, &format!("content-length: {declared}\r\n"));
            bytes.extend_from_slice(&sent);
            let _ = socket.write_all(&bytes).await;
            std::future::pending::<()>().await;
            false
        }
        Reply::Reset => {
            let _ = socket.set_zero_linger();
            false
        }
        Reply::Hangup => false,
        Reply::Silent => {
            std::future::pending::<()>().await;
            false
        }
        Reply::After(delay, reply) => {
            tokio::time::sleep(delay).await;
            Box::pin(answer(socket, *reply)).await
        }
        Reply::Raw(bytes) => {
            let _ = socket.write_all(&bytes).await;
            false
        }
        Reply::Closing(reply) => {
            Box::pin(answer(socket, *reply)).await;
            false
        }
    }
}
