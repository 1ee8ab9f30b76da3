//! A small, real HTTP/1.1 server on 127.0.0.1 whose answers each test scripts: full responses,
//! event streams the test pushes events into, or silence. It records every request.

#![allow(dead_code, unreachable_pub)]

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A generous bound for anything a test waits for: a hang guard, never a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path and query.
    pub target: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with a request.
pub enum Reply {
    /// A complete response (the connection stays open for the next request).
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// A `text/event-stream` response: the chunks the test sends, until it drops the sender.
    Stream(mpsc::UnboundedReceiver<Vec<u8>>),
    /// No answer at all; the connection stays open.
    Silence,
    /// This reply, after a while (a server that works on a message before it answers the POST).
    After(Duration, Box<Reply>),
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply::Full {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Full { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    pub fn with_body(mut self, text: impl Into<Vec<u8>>) -> Reply {
        if let Reply::Full { body, .. } = &mut self {
            *body = text.into();
        }
        self
    }
}

/// The server's side of one event stream: push events, or drop it to end the stream.
#[derive(Clone, Default)]
pub struct EventStream {
    sender: Arc<Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>>,
}

impl EventStream {
    /// Opens the stream with its first chunk; the reply to give the GET.
    pub fn open(&self, first: &str) -> Reply {
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(first.as_bytes().to_vec()).unwrap();
        *self.sender.lock().unwrap() = Some(tx);
        Reply::Stream(rx)
    }

    /// Sends raw text down the stream (false when there is no open stream).
    pub fn push(&self, text: &str) -> bool {
        match &*self.sender.lock().unwrap() {
            Some(tx) => tx.send(text.as_bytes().to_vec()).is_ok(),
            None => false,
        }
    }

    /// Sends one `message` event.
    pub fn message(&self, json: &str) -> bool {
        self.push(&format!("event: message\ndata: {json}\n\n"))
    }

    /// Ends the stream (the server closes the connection).
    pub fn end(&self) {
        self.sender.lock().unwrap().take();
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// The running server; stops when dropped.
pub struct HttpServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    /// One item per event stream whose client went away (or that the test ended).
    streams_ended: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
    task: JoinHandle<()>,
}

impl HttpServer {
    pub async fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (ended_tx, ended_rx) = mpsc::unbounded_channel();
        let handler: Arc<Handler> = Arc::new(handler);
        let task = {
            let requests = Arc::clone(&requests);
            tokio::spawn(async move {
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        return;
                    };
                    tokio::spawn(serve_connection(
                        socket,
                        Arc::clone(&handler),
                        Arc::clone(&requests),
                        ended_tx.clone(),
                    ));
                }
            })
        };
        HttpServer {
            addr,
            requests,
            streams_ended: tokio::sync::Mutex::new(ended_rx),
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits (hang-guarded) until an event stream's connection is gone.
    pub async fn stream_ended(&self) {
        tokio::time::timeout(HANG_GUARD, self.streams_ended.lock().await.recv())
            .await
            .expect("the event stream did not end")
            .expect("the server stopped");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_connection(
    mut socket: TcpStream,
    handler: Arc<Handler>,
    requests: Arc<Mutex<Vec<Request>>>,
    ended: mpsc::UnboundedSender<()>,
) {
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut socket, &mut buffer).await else {
            return;
        };
        requests.lock().unwrap().push(request.clone());
        let mut reply = handler(&request);
        while let Reply::After(delay, later) = reply {
            tokio::time::sleep(delay).await;
            reply = *later;
        }
        match reply {
            Reply::Full { status, headers, body } => {
                let mut head = format!("HTTP/1.1 {status} Whatever\r\ncontent-length: {}\r\n", body.len());
                for (name, value) in headers {
                    write!(head, "{name}: {value}\r\n").unwrap();
                }
                head.push_str("\r\n");
                if socket.write_all(head.as_bytes()).await.is_err() || socket.write_all(&body).await.is_err() {
                    return;
                }
            }
            Reply::Stream(chunks) => {
                stream_events(socket, chunks).await;
                let _ = ended.send(());
                return;
            }
            Reply::Silence => {
                // Hold the connection until the client gives up.
                let mut sink = [0; 1024];
                while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
                return;
            }
            Reply::After(..) => unreachable!("waited for above"),
        }
    }
}

/// Writes the stream's head and chunks until the test ends the stream or the client goes away.
async fn stream_events(socket: TcpStream, mut chunks: mpsc::UnboundedReceiver<Vec<u8>>) {
    let (mut reader, mut writer) = socket.into_split();
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
    if writer.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut sink = [0; 1024];
    loop {
        tokio::select! {
            chunk = chunks.recv() => match chunk {
                Some(chunk) => if writer.write_all(&chunk).await.is_err() { return },
                None => return,
            },
            read = reader.read(&mut sink) => if !matches!(read, Ok(n) if n > 0) { return },
        }
    }
}

/// Reads one request (head and a `Content-Length` body); `None` when the client is gone.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Request> {
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        assert!(buffer.len() < 64 * 1024, "request head too long");
        let mut chunk = [0; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap().split(' ');
    let method = request_line.next().unwrap().to_owned();
    let target = request_line.next().unwrap().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    buffer.drain(..head_end + 4);
    while buffer.len() < length {
        let mut chunk = [0; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer.drain(..length).collect();
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

/// A listener that counts the connections made to it, to prove that nothing was sent there.
pub struct Bystander {
    listener: std::net::TcpListener,
    pub addr: SocketAddr,
}

impl Bystander {
    pub fn new() -> Bystander {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        Bystander { listener, addr }
    }

    /// Whether anyone has connected (the kernel completes connections before `accept`).
    pub fn contacted(&self) -> bool {
        match self.listener.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept failed: {e}"),
        }
    }
}
