//! Why a transport is closed: [`CloseReason`], the typed reason of every
//! [`TransportError::Closed`], and [`ProcessExit`], how a server process ended.

use std::io;
use std::process::ExitStatus;
use std::sync::Arc;

use crate::{TransportError, error_chain};

/// Why a transport is closed. Every transport gives the same reason for the same event, so a
/// host can tell "the client closed it" from "the server went away" without reading text.
///
/// ```
/// use plexus_transport::{CloseReason, ProcessExit, ServerOutput, TransportError};
///
/// assert_eq!(
///     TransportError::closed(CloseReason::ByClient).to_string(),
///     "the connection is closed: the transport was closed by the client"
/// );
/// assert_eq!(
///     CloseReason::Exited(ProcessExit::Code(3)).to_string(),
///     "the server exited with status 3"
/// );
/// let cut = CloseReason::EndOfOutput { output: ServerOutput::EventStream, mid_message: true };
/// assert_eq!(cut.to_string(), "the server closed the event stream in the middle of a message");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CloseReason {
    /// The client closed the transport.
    #[error("the transport was closed by the client")]
    ByClient,
    /// The transport's owner dropped it without closing it.
    #[error("the transport was dropped")]
    Dropped,
    /// The server process ended (stdio).
    #[error("{0}")]
    Exited(ProcessExit),
    /// The server ended what it sends: its stdout, the event stream, the connection.
    #[error("the server closed {output}{}", if *.mid_message { " in the middle of a message" } else { "" })]
    EndOfOutput {
        /// What it ended.
        output: ServerOutput,
        /// Whether it ended inside a message (the part that came was discarded).
        mid_message: bool,
    },
    /// The server sent a WebSocket close frame.
    #[error("the server closed the WebSocket ({}){}", close_code(*.code), close_text(.text))]
    WebSocketClose {
        /// The close code, when the frame had one.
        code: Option<u16>,
        /// The server's close reason text (empty when it gave none).
        text: String,
    },
    /// An error ended the transport (reading or writing failed, a message over the limit on a
    /// stream that cannot skip one): the calls made later fail with this reason.
    #[error("{}", error_chain(.0))]
    Failed(Box<TransportError>),
    /// The transport's own tasks ended before it was closed (a panic in one of them).
    #[error("the transport's tasks are gone")]
    TasksGone,
}

impl CloseReason {
    /// Whether the client closed the transport (rather than the server going away).
    pub fn is_by_client(&self) -> bool {
        matches!(self, CloseReason::ByClient)
    }
}

fn close_code(code: Option<u16>) -> String {
    match code {
        None => "without a close code".to_owned(),
        Some(code) => match close_code_meaning(code) {
            Some(meaning) => format!("code {code}, {meaning}"),
            None => format!("code {code}"),
        },
    }
}

/// What RFC 6455 (§7.4.1) says a WebSocket close code means, for the codes it names that an
/// endpoint may send.
pub fn close_code_meaning(code: u16) -> Option<&'static str> {
    Some(match code {
        1000 => "normal closure",
        1001 => "going away",
        1002 => "protocol error",
        1003 => "unsupported data",
        1007 => "invalid payload data",
        1008 => "policy violation",
        1009 => "message too big",
        1010 => "missing extension",
        1011 => "internal error",
        1012 => "service restart",
        1013 => "try again later",
        _ => return None,
    })
}

fn close_text(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// What the server sends on, for [`CloseReason::EndOfOutput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerOutput {
    /// A stdio server's stdout.
    #[error("its stdout")]
    Stdout,
    /// A legacy SSE server's event stream.
    #[error("the event stream")]
    EventStream,
    /// A WebSocket connection, ended without a close frame.
    #[error("the connection without a WebSocket close frame")]
    WebSocket,
    /// An in-process server's end of the pipe.
    #[error("its end of the in-process pipe")]
    Pipe,
}

/// How a server process ended.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessExit {
    /// It exited with this status code.
    #[error("the server exited with status {0}")]
    Code(i32),
    /// A signal killed it.
    #[error("the server was killed by signal {}", signal_name(*.number, *.name))]
    Signal {
        /// The signal's number.
        number: i32,
        /// The signal's name (`SIGKILL`), when it is known.
        name: Option<&'static str>,
    },
    /// It ended in another way the platform reports.
    #[error("the server exited ({0})")]
    Other(ExitStatus),
    /// Its exit status could not be read (for example because the host ignores `SIGCHLD`, so the
    /// kernel reaps it).
    #[error("the server exited (its exit status is unavailable: {0})")]
    Unavailable(Arc<io::Error>),
}

fn signal_name(number: i32, name: Option<&str>) -> String {
    name.map_or_else(|| number.to_string(), str::to_owned)
}
