//! The Streamable HTTP floor: a minimal keep-alive HTTP/1.1 client on raw sockets posting
//! JSON-RPC bodies and reading `Content-Length` replies (the test server in `--json-response`
//! mode), one connection per request in flight, in either protocol era.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::raw::RawRound;
use super::{cpu_per_call, percentile, process_cpu};

/// Ids are unique across every connection of a run (the server refuses a duplicate id in flight
/// within a session).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The echo call's params in the `initialize` era.
const ECHO: &str = r#"{"name":"echo","arguments":{"text":"hello"}}"#;

/// The stateless era's envelope, as the floor sends it in every request.
pub(crate) const ENVELOPE: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"0"}}"#;

/// What the floor's requests carry: the session of the `initialize` era, or the envelope and the
/// headers of the stateless era.
#[derive(Clone)]
pub(crate) enum Wire {
    /// The `initialize` era, in this session.
    Session(String),
    /// The stateless (2026-07-28) era.
    Stateless,
}

/// One keep-alive HTTP/1.1 connection that posts JSON-RPC bodies and reads `Content-Length` replies.
pub(crate) struct RawConnection {
    stream: BufReader<TcpStream>,
    host: String,
    path: String,
    session: Option<String>,
    stateless: bool,
    /// The last reply's body.
    pub(crate) body: Vec<u8>,
}

impl RawConnection {
    /// A connection that speaks as `wire` says.
    pub(crate) async fn open_for(url: &str, wire: &Wire) -> RawConnection {
        match wire {
            Wire::Session(session) => RawConnection::open(url, Some(session.clone())).await,
            Wire::Stateless => {
                let mut connection = RawConnection::open(url, None).await;
                connection.stateless = true;
                connection
            }
        }
    }

    /// A connection to `url` (`http://HOST:PORT/PATH`), in `session` if given.
    pub(crate) async fn open(url: &str, session: Option<String>) -> RawConnection {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (host, path) = rest.split_at(rest.find('/').expect("a URL with a path"));
        let stream = TcpStream::connect(host).await.expect("connect to the server");
        stream.set_nodelay(true).unwrap();
        RawConnection {
            stream: BufReader::new(stream),
            host: host.to_owned(),
            path: path.to_owned(),
            session,
            stateless: false,
            body: Vec::new(),
        }
    }

    /// Posts one message (of JSON-RPC `method`; `name`: the tool's, for the stateless era's
    /// `Mcp-Name`) and returns the response headers' session id, if any; the body stays in
    /// `self.body`.
    pub(crate) async fn post(&mut self, message: &str, method: &str, name: Option<&str>) -> Option<String> {
        let mut request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.host,
            message.len()
        );
        if let Some(session) = &self.session {
            let _ = write!(
                request,
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            );
        }
        if self.stateless {
            let _ = write!(request, "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
            if let Some(name) = name {
                let _ = write!(request, "Mcp-Name: {name}\r\n");
            }
        }
        request.push_str("\r\n");
        request.push_str(message);
        self.stream.get_mut().write_all(request.as_bytes()).await.unwrap();
        let mut length = 0;
        let mut session = None;
        let mut line = String::new();
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.unwrap();
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if lower.starts_with("mcp-session-id:") {
                session = Some(header[header.find(':').unwrap() + 1..].trim().to_owned());
            }
        }
        self.body.resize(length, 0);
        self.stream.read_exact(&mut self.body).await.unwrap();
        session
    }

    /// Posts a request (`method` with `params`, in the stateless era with the envelope put into
    /// `params` as `_meta`) and checks that the reply is a result.
    pub(crate) async fn request(&mut self, method: &str, params: &str, name: Option<&str>) {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let message = if self.stateless {
            let rest = params.strip_prefix('{').expect("params are an object");
            let comma = if rest.starts_with('}') { "" } else { "," };
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{ENVELOPE}{comma}{rest}}}"#)
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
        };
        self.post(&message, method, name).await;
        assert!(
            self.body.starts_with(b"{") && self.body.windows(8).any(|w| w == b"\"result\""),
            "unexpected reply to {method}: {}",
            String::from_utf8_lossy(&self.body)
        );
    }

    /// One `tools/call` of `echo` with `{"text":"hello"}`.
    pub(crate) async fn call_echo(&mut self) {
        self.request("tools/call", ECHO, Some("echo")).await;
    }
}

/// Initializes a session with the raw client (`initialize`, then `notifications/initialized`)
/// and returns its id.
pub(crate) async fn raw_session(url: &str) -> String {
    let mut connection = RawConnection::open(url, None).await;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#;
    let session = connection.post(init, "initialize", None).await.expect("a session id");
    connection.session = Some(session.clone());
    connection
        .post(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notifications/initialized",
            None,
        )
        .await;
    session
}

/// `warmup` calls, `sequential` timed one by one on one connection, then `throughput` calls over
/// `in_flight` connections at once (tasks of the runtime this runs on).
pub(crate) async fn floor_round(
    url: &str,
    wire: &Wire,
    warmup: usize,
    sequential: usize,
    in_flight: usize,
    throughput: usize,
) -> RawRound {
    let mut connection = RawConnection::open_for(url, wire).await;
    for _ in 0..warmup {
        connection.call_echo().await;
    }
    let mut times = Vec::with_capacity(sequential);
    let before = process_cpu();
    for _ in 0..sequential {
        let start = Instant::now();
        connection.call_echo().await;
        times.push(start.elapsed());
    }
    let cpu = cpu_per_call(before, sequential);
    times.sort_unstable();
    let mut connections = Vec::with_capacity(in_flight);
    for _ in 0..in_flight {
        connections.push(RawConnection::open_for(url, wire).await);
    }
    let start = Instant::now();
    let workers: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            tokio::spawn(async move {
                for _ in 0..throughput / in_flight {
                    connection.call_echo().await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    RawRound {
        p50: percentile(&times, 0.5),
        p99: percentile(&times, 0.99),
        throughput: (throughput / in_flight * in_flight) as f64 / start.elapsed().as_secs_f64(),
        cpu,
    }
}
