//! The stdio MCP transport: a server run as a child process in its own process group, newline-delimited JSON-RPC over its stdin and stdout, its stderr captured in a bounded ring, and a shutdown that escalates signals to the whole group.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use plexus_stdio::{StdioConfig, StdioTransport};
//! use plexus_transport::{Message, OutboundMessage, Transport};
//!
//! // `cat` echoes every line back: a stand-in for a real server.
//! let transport = StdioTransport::spawn(StdioConfig::new("cat"))?;
//! assert_eq!(transport.describe(), "cat");
//! let (sender, mut receiver) = Box::new(transport).split();
//! let ping = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)?;
//! sender.send(OutboundMessage::from_message(&ping)).await?;
//! assert_eq!(receiver.recv().await?.method(), Some("ping"));
//! sender.close().await?; // stdin closed, then SIGINT, SIGTERM, SIGKILL as needed
//! # Ok(())
//! # }
//! ```
//!
//! # The child
//!
//! The command runs with the host's environment plus [`StdioConfig::env`], in
//! [`StdioConfig::cwd`] if given, as the leader of a new process group (so that the shutdown
//! reaches everything it starts: `npx`, `uv` and shell wrappers spawn the real server as a
//! grandchild). Its stdin, stdout and stderr are pipes; stderr is never inherited into the
//! host's terminal. A command that cannot be started is a [`TransportError::Connect`] naming it,
//! for example `could not connect to nonexistent-cmd: command not found: nonexistent-cmd`.
//!
//! # Sending and receiving
//!
//! [`StdioSender::send`](plexus_transport::TransportSender::send) writes the encoded line straight
//! to stdin when nothing is queued (no task hop on the common path). When the pipe is full, or
//! lines are already waiting, the line joins a bounded queue ([`StdioConfig::send_queue_capacity`])
//! that one writer task drains, coalescing what is queued (up to [`WRITE_BATCH_BYTES`]) into one
//! write; lines never overtake each other. The receiver
//! reads stdout directly in [`poll_recv`](plexus_transport::TransportReceiver::poll_recv), framed
//! by [`plexus_jsonrpc::LineCodec`] with [`StdioConfig::max_message_size`].
//!
//! When the server goes away, the receiver yields [`TransportError::Closed`] with a reason such as
//! `the server exited with status 3`, `the server was killed by signal SIGKILL` or `the server
//! closed its stdout`, and the last lines of its stderr (at most [`STDERR_TAIL_BYTES`]).
//!
//! # Stderr
//!
//! A task reads stderr as fast as the server writes it, keeps the most recent
//! [`StdioConfig::stderr_capacity`] bytes (default 64 KiB) in a ring readable through
//! [`StdioTransport::stderr_log`], and logs each line at `DEBUG` with target
//! [`STDERR_TRACING_TARGET`] and field `server` (the config's name), cut at
//! [`MAX_LOGGED_STDERR_LINE`] bytes. A server flooding stderr neither blocks nor grows memory.
//!
//! # Shutdown
//!
//! [`close`](plexus_transport::TransportSender::close) closes stdin, sends `SIGINT` to the whole
//! process group, waits up to [`INTERRUPT_GRACE`] (100 ms), sends `SIGTERM`, waits up to
//! [`TERMINATE_GRACE`] (400 ms), sends `SIGKILL` and waits up to [`KILL_GRACE`] (100 ms): 600 ms at
//! most. It checks every [`GROUP_POLL_INTERVAL`] whether the group is empty and stops as soon as
//! it is, so a server that exits on stdin EOF or `SIGINT` ends the sequence early; a grandchild
//! that ignores `SIGINT` and `SIGTERM` still dies by `SIGKILL`. Closing twice is harmless, and
//! closing a transport whose server is gone returns at once.
//!
//! The child inherits the signals the host ignores (as with any `exec`): a host started with
//! `SIGINT` ignored (say, a background job of a non-interactive shell) starts servers that ignore
//! it too, and the sequence then ends them with `SIGTERM` 100 ms later.
//!
//! Dropping both halves (or the unsplit transport) without closing runs the same sequence on a
//! short-lived thread of its own: the dropping thread never blocks and the Tokio runtime need not
//! outlive the transport. When the server exits on its own, whatever it left in its process group
//! gets the same sequence.
//!
//! A descendant that left the group (a daemon that called `setsid()`) is out of the sequence's
//! reach. On Linux a host can opt in to ending those too: see [`orphans`] for what
//! [`orphans::adopt_orphans`] and [`orphans::end_orphans`] promise, and what they cannot.
//!
//! A small thread per server owns the child and reaps it the moment it exits (the child is
//! started with `std::process::Command`, so Tokio's reaper never sees its pid and cannot race
//! this thread): no zombie is left behind, and an empty group is one that `killpg(pgid, 0)`
//! reports as gone.
//!
//! # Runtime
//!
//! [`StdioTransport::spawn`] must be called within a Tokio runtime with IO and time enabled; it
//! starts the writer and stderr tasks there. Either runtime flavour works.
//!
//! Dependencies: `nix` sends signals to the process group and checks whether it is empty, and
//! makes the host a child subreaper and reaps its orphans, without `unsafe` in this crate;
//! `futures-core` is the `Stream` trait through which the framed stdout is polled; `bytes` is
//! that framing's buffer type, replaced by a small one after a large message; Tokio's
//! `signal` feature wakes [`orphans::watch_orphans`] on `SIGCHLD`.
#![forbid(unsafe_code)]

mod config;
pub mod orphans;
mod process;
mod receiver;
mod spawn;
mod stderr;
mod writer;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use plexus_transport::{Transport, TransportError, TransportReceiver, TransportSender};

pub use config::{
    DEFAULT_SEND_QUEUE_CAPACITY, DEFAULT_STDERR_CAPACITY, EXIT_WAIT, GROUP_POLL_INTERVAL, INTERRUPT_GRACE, KILL_GRACE,
    MAX_LOGGED_STDERR_LINE, STDERR_TAIL_BYTES, ShutdownTimings, StdioConfig, TERMINATE_GRACE, WRITE_BATCH_BYTES,
};
pub use process::wait_for_shutdowns;
pub use receiver::StdioReceiver;
pub use spawn::SpawnError;
pub use stderr::{STDERR_TRACING_TARGET, StderrLog};
pub use writer::StdioSender;

use crate::process::{ProcessGuard, Shared};

/// A running stdio MCP server, ready to be split into its two halves.
#[derive(Debug)]
pub struct StdioTransport {
    command_line: String,
    pid: u32,
    stderr: StderrLog,
    sender: StdioSender,
    receiver: StdioReceiver,
}

impl StdioTransport {
    /// Starts the server described by `config` (see the crate docs for what the child gets).
    ///
    /// Fails with [`TransportError::Connect`] naming the command line when the command does not
    /// exist or cannot be executed, when the working directory is missing, or when called outside
    /// a Tokio runtime.
    pub fn spawn(config: StdioConfig) -> Result<StdioTransport, TransportError> {
        let command_line = config.command_line();
        let spawned = spawn::spawn_child(&config, &command_line)?;
        let pid = spawned.child.id();
        let stderr = StderrLog::new(config.stderr_capacity);
        let shared = Arc::new(Shared::new(config.name, spawned.pgid, config.timings, stderr.clone()));
        if let Err((child, e)) = process::start_waiter(spawned.child, Arc::clone(&shared)) {
            spawn::kill_and_reap(child, spawned.pgid);
            return Err(TransportError::connect(command_line, spawn::SpawnError::Waiter(e)));
        }
        tracing::debug!(server = %shared.name, pid, "started {command_line}");
        let outbox = writer::Outbox::new(spawned.stdin, config.send_queue_capacity);
        tokio::spawn(stderr::capture_stderr(spawned.stderr, Arc::clone(&shared)));
        tokio::spawn(writer::write_to_stdin(Arc::clone(&outbox), Arc::clone(&shared)));
        let guard = Arc::new(ProcessGuard { shared });
        Ok(StdioTransport {
            command_line,
            pid,
            stderr,
            sender: StdioSender::new(outbox, Arc::clone(&guard)),
            receiver: StdioReceiver::new(spawned.stdout, config.max_message_size, guard),
        })
    }

    /// The server's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The server's recent stderr output (a handle that stays valid after the split).
    pub fn stderr_log(&self) -> StderrLog {
        self.stderr.clone()
    }

    /// The command line, quoted for display.
    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    /// The two halves, with their concrete types.
    pub fn into_parts(self) -> (StdioSender, StdioReceiver) {
        (self.sender, self.receiver)
    }
}

impl Transport for StdioTransport {
    fn describe(&self) -> String {
        self.command_line.clone()
    }

    /// The child's pipes.
    fn peer(&self) -> plexus_transport::Peer {
        plexus_transport::Peer::Pipe
    }

    fn split(self: Box<Self>) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>) {
        let (sender, receiver) = self.into_parts();
        (Box::new(sender), Box::new(receiver))
    }
}

/// Locks a mutex whose data stays consistent between statements, so a poisoned lock is usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
