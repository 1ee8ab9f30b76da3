//! The matrix: the transports, the faults, which fault applies to which transport, how the test
//! server is told to commit it, and what a Hub must make of it.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

/// The wire a cell's faulty server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process on pipes.
    Stdio,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// Streamable HTTP, the `initialize` era.
    Http,
    /// Streamable HTTP, the stateless 2026-07-28 era.
    Stateless,
    /// WebSocket.
    Ws,
}

impl Transport {
    pub const ALL: [Transport; 5] = [
        Transport::Stdio,
        Transport::Sse,
        Transport::Http,
        Transport::Stateless,
        Transport::Ws,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Sse => "sse",
            Transport::Http => "http",
            Transport::Stateless => "stateless",
            Transport::Ws => "ws",
        }
    }

    pub fn is_remote(self) -> bool {
        self != Transport::Stdio
    }

    /// The test server's mode, and the arguments that pick the era.
    pub fn server_mode(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Transport::Stdio => ("stdio", &[]),
            Transport::Sse => ("sse", &[]),
            Transport::Http => ("http", &["--era", "legacy"]),
            Transport::Stateless => ("http", &["--era", "modern"]),
            Transport::Ws => ("ws", &[]),
        }
    }

    /// The config entry's `type`.
    pub fn kind(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Sse => "sse",
            Transport::Http | Transport::Stateless => "http",
            Transport::Ws => "ws",
        }
    }
}

/// Where the Hub meets the faulty server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The Hub has the faulty server as one of its own.
    Hub,
    /// The faulty server is a backend of `plexus serve --http`, which the Hub has as a server.
    Gateway,
}

/// A fault the test server commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    CrashMidCall,
    ExitAtStart,
    Hang,
    GarbageLine,
    Oversize,
    SlowDrip,
    StderrFlood,
    IgnoresSignals,
    Grandchild,
    ServerError,
    ConnectionReset,
    CloseAfterRequest,
    SlowHeaders,
    SessionExpiry,
    SseDropResumed,
    SseDropLost,
    WsCloseNoHandshake,
    Unauthorized,
    ListChangedStorm,
    ProgressFlood,
    UnknownIdReply,
    DuplicateRequestId,
    BadNotification,
    ManyTools,
    NestedSchema,
}

/// How long a hung call may wait before its timeout ends it.
pub const SHORT_TIMEOUT: Duration = Duration::from_secs(1);
/// The bound of every other call of a cell: no outcome may take longer.
pub const CALL_BOUND: Duration = Duration::from_secs(15);
/// The size of the oversize message: above the 16 MiB message limit.
pub const OVERSIZE_BYTES: u64 = 20 << 20;
/// The generated tools of the many-tools cell.
pub const MANY_TOOLS: usize = 100_000;

impl Fault {
    pub const ALL: [Fault; 25] = [
        Fault::CrashMidCall,
        Fault::ExitAtStart,
        Fault::Hang,
        Fault::GarbageLine,
        Fault::Oversize,
        Fault::SlowDrip,
        Fault::StderrFlood,
        Fault::IgnoresSignals,
        Fault::Grandchild,
        Fault::ServerError,
        Fault::ConnectionReset,
        Fault::CloseAfterRequest,
        Fault::SlowHeaders,
        Fault::SessionExpiry,
        Fault::SseDropResumed,
        Fault::SseDropLost,
        Fault::WsCloseNoHandshake,
        Fault::Unauthorized,
        Fault::ListChangedStorm,
        Fault::ProgressFlood,
        Fault::UnknownIdReply,
        Fault::DuplicateRequestId,
        Fault::BadNotification,
        Fault::ManyTools,
        Fault::NestedSchema,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Fault::CrashMidCall => "crash mid-call",
            Fault::ExitAtStart => "exit at start",
            Fault::Hang => "hang",
            Fault::GarbageLine => "garbage line or frame",
            Fault::Oversize => "oversize message",
            Fault::SlowDrip => "slow drip",
            Fault::StderrFlood => "stderr flood",
            Fault::IgnoresSignals => "ignores SIGINT and SIGTERM",
            Fault::Grandchild => "grandchild outlives it",
            Fault::ServerError => "5xx",
            Fault::ConnectionReset => "connection reset",
            Fault::CloseAfterRequest => "close after reading a request",
            Fault::SlowHeaders => "slow headers",
            Fault::SessionExpiry => "session expiry mid-call",
            Fault::SseDropResumed => "SSE drop, resumed",
            Fault::SseDropLost => "SSE drop, no resumption",
            Fault::WsCloseNoHandshake => "close without handshake",
            Fault::Unauthorized => "401 mid-session",
            Fault::ListChangedStorm => "list_changed storm",
            Fault::ProgressFlood => "progress flood",
            Fault::UnknownIdReply => "reply with an unknown id",
            Fault::DuplicateRequestId => "duplicate server-request id",
            Fault::BadNotification => "notification with a bad shape",
            Fault::ManyTools => "100 000-tool list",
            Fault::NestedSchema => "deeply nested schema",
        }
    }

    /// The name of the cell's test: `stdio::crash_mid_call`.
    pub fn slug(self) -> String {
        self.label()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect::<String>()
            .split('_')
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("_")
    }

    /// Whether the fault exists on `transport`.
    pub fn applies(self, transport: Transport) -> bool {
        use Transport::{Http, Sse, Stateless, Stdio, Ws};
        match self {
            Fault::StderrFlood | Fault::IgnoresSignals | Fault::Grandchild => transport == Stdio,
            Fault::ServerError | Fault::Unauthorized => matches!(transport, Sse | Http | Stateless),
            Fault::ConnectionReset | Fault::SlowHeaders => transport.is_remote() && transport != Ws,
            Fault::CloseAfterRequest | Fault::SseDropResumed | Fault::SseDropLost => {
                matches!(transport, Http | Stateless)
            }
            Fault::SessionExpiry => matches!(transport, Http),
            Fault::WsCloseNoHandshake => transport == Ws,
            _ => true,
        }
    }

    /// The test server's arguments that commit the fault (`pidfile`: where a grandchild's pid
    /// goes).
    pub fn server_args(self, transport: Transport, pidfile: &str) -> Vec<String> {
        let args: Vec<&str> = match self {
            Fault::ExitAtStart if transport == Transport::Stdio => vec!["--exit-at-start", "3"],
            Fault::StderrFlood => vec!["--flood-stderr", "8388608"],
            Fault::IgnoresSignals => vec!["--ignore-signals", "--ignore-stdin-close"],
            Fault::Grandchild => vec!["--spawn-grandchild", pidfile],
            Fault::ServerError => vec![
                "--faults-after-calls",
                "1",
                "--fail-status",
                "503",
                "--fault-times",
                "1",
            ],
            // Every request after the first call is refused, the reconnect's too.
            Fault::Unauthorized => vec!["--faults-after-calls", "1", "--fail-status", "401"],
            Fault::ConnectionReset | Fault::WsCloseNoHandshake => {
                vec!["--faults-after-calls", "1", "--reset-after", "0", "--fault-times", "1"]
            }
            Fault::CloseAfterRequest => vec![
                "--close-after-request-ms",
                "0",
                "--close-from-call",
                "2",
                "--fault-times",
                "1",
            ],
            Fault::SlowHeaders => vec!["--faults-after-calls", "1", "--slow-headers-ms", "3000"],
            Fault::SessionExpiry => vec![
                "--faults-after-calls",
                "1",
                "--expire-session-after",
                "0",
                "--fault-times",
                "1",
            ],
            Fault::SseDropResumed => vec!["--misbehave-tool", "--faults-after-calls", "1", "--drop-sse-after", "1"],
            Fault::SseDropLost => {
                vec![
                    "--misbehave-tool",
                    "--faults-after-calls",
                    "1",
                    "--drop-sse-after",
                    "1",
                    "--no-resume",
                ]
            }
            Fault::ListChangedStorm
            | Fault::ProgressFlood
            | Fault::UnknownIdReply
            | Fault::DuplicateRequestId
            | Fault::BadNotification => vec!["--misbehave-tool"],
            Fault::ManyTools => {
                return [
                    "--tools".to_owned(),
                    MANY_TOOLS.to_string(),
                    "--page-size".to_owned(),
                    "5000".to_owned(),
                ]
                .into();
            }
            Fault::NestedSchema => vec!["--nested-schema-depth", "1000"],
            _ => vec![],
        };
        args.into_iter().map(str::to_owned).collect()
    }

    /// The call that meets the fault: (tool, arguments, timeout).
    pub fn trigger(self) -> (&'static str, Value, Duration) {
        let misbehave = |act: &str| ("misbehave", json!({"act": act, "count": 2000}), CALL_BOUND);
        match self {
            Fault::CrashMidCall => ("crash", json!({"code": 1}), CALL_BOUND),
            Fault::Hang => ("hang", json!({}), SHORT_TIMEOUT),
            Fault::GarbageLine => ("garbage", json!({}), CALL_BOUND),
            Fault::Oversize => ("oversize", json!({"bytes": OVERSIZE_BYTES}), CALL_BOUND),
            Fault::SlowDrip => ("drip", json!({"delay_ms": 25, "chunk": 8}), CALL_BOUND),
            Fault::SlowHeaders => ("echo", json!({"text": "slow headers"}), SHORT_TIMEOUT),
            // Progress comes before the answer, so the stream has events to drop after.
            Fault::SseDropResumed | Fault::SseDropLost => {
                ("misbehave", json!({"act": "progress", "count": 3}), CALL_BOUND)
            }
            Fault::ListChangedStorm => misbehave("list-changed"),
            Fault::ProgressFlood => misbehave("progress"),
            Fault::UnknownIdReply => misbehave("unknown-id"),
            Fault::DuplicateRequestId => misbehave("duplicate-request"),
            Fault::BadNotification => misbehave("bad-notification"),
            Fault::ManyTools => ("tool-100000", json!({"last": true}), CALL_BOUND),
            Fault::NestedSchema => ("nested", json!({"next": {"next": "deep"}}), CALL_BOUND),
            _ => ("echo", json!({"text": "trigger"}), CALL_BOUND),
        }
    }

    /// Whether the test server logs a `fault` event when it commits the fault (the cell then
    /// checks that it did, so that it tests what it says).
    pub fn logs_fault(self) -> bool {
        matches!(
            self,
            Fault::ServerError
                | Fault::Unauthorized
                | Fault::ConnectionReset
                | Fault::WsCloseNoHandshake
                | Fault::CloseAfterRequest
                | Fault::SessionExpiry
                | Fault::SseDropResumed
                | Fault::SseDropLost
        )
    }

    /// The most the process's resident set may grow over the cell, in bytes.
    pub fn rss_bound(self) -> u64 {
        match self {
            // The pool keeps every tool (name, description, schema) and the tool pool's entries:
            // about 2 to 3 KiB a tool here.
            Fault::ManyTools => 512 << 20,
            _ => crate::leaks::MAX_RSS_GROWTH,
        }
    }

    /// Whether the cell's workload makes one good call before the trigger (the faults that
    /// hit mid-session need a session first).
    pub fn warm_up(self) -> bool {
        !matches!(self, Fault::ExitAtStart)
    }
}

/// One cell of the matrix.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    pub transport: Transport,
    pub fault: Fault,
    pub via: Via,
}

impl Cell {
    /// Every cell.
    pub fn all() -> Vec<Cell> {
        let mut cells = Vec::new();
        for via in [Via::Hub, Via::Gateway] {
            for transport in Transport::ALL {
                for fault in Fault::ALL {
                    if fault.applies(transport) {
                        cells.push(Cell { transport, fault, via });
                    }
                }
            }
        }
        cells
    }

    /// The test's name: `hub::stdio::crash_mid_call`.
    pub fn name(self) -> String {
        let via = match self.via {
            Via::Hub => "hub",
            Via::Gateway => "gateway",
        };
        format!("{via}::{}::{}", self.transport.label(), self.fault.slug())
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
