//! The stdio mode: newline-delimited JSON-RPC on standard input and output, one session, on a
//! current-thread runtime.
//!
//! One loop reads input, decodes every complete line, answers quick requests inline into an output
//! buffer and writes that buffer once the input read so far is used up, so pipelined requests
//! coalesce into one write. Background work (slow tools, requests to the client) sends its outputs
//! through the session's outbox, which the same loop drains.

use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use bytes::BytesMut;
use plexus_jsonrpc::LineCodec;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::StdioOptions;
use crate::events::EventLog;
use crate::process::{self, Signals};
use crate::server::{Emitted, OUTBOX_CAPACITY, Output, Server, Session};
use plexus_jsonrpc::process_stdio::{Stdin, Stdout};

/// How much input is read at once.
const READ_CHUNK: usize = 64 * 1024;
/// Buffered output past this size is written without waiting for the input to run dry.
const FLUSH_AT: usize = 256 * 1024;
/// How many queued background outputs are written before the loop looks at its input again.
const OUTBOX_BATCH: usize = 256;

/// Serves one MCP session on this process's stdin and stdout until stdin closes (status 0), a
/// SIGINT or SIGTERM arrives (status 0, unless `--ignore-signals`), or stdout fails (status 1).
///
/// Blocks the calling thread on a current-thread tokio runtime of its own, so it must not be called
/// from within a runtime. Work still in flight at the end is abandoned. The `crash` tool and
/// `--crash-after` end the whole process with `std::process::exit`, as a crashing server would.
pub fn run_stdio(options: StdioOptions) -> ExitCode {
    let runtime = match process::runtime(false) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let code = runtime.block_on(serve(options));
    // In-flight tasks and a stdin reader thread blocked in read(2) are abandoned, not awaited.
    runtime.shutdown_background();
    code
}

/// Serves one MCP session on `input` and `output` (newline-delimited JSON-RPC, as over stdio)
/// on the current runtime, until `input` ends or writing fails: a server inside the caller's
/// process (an in-memory pipe, a socket). No signal handlers are installed and nothing ends the
/// process: the `crash` tool and `--crash-after` end this session only.
pub async fn serve_io(
    options: StdioOptions,
    input: Pin<Box<dyn AsyncRead + Send>>,
    output: Pin<Box<dyn AsyncWrite + Send>>,
) -> Result<(), std::io::Error> {
    let events = Arc::new(crate::events::EventLog::open(options.process.event_log.as_deref())?);
    events.record(&json!({"event": "start", "pid": std::process::id()}));
    let mut stdio = StdioLoop::new(options.server, options.max_line_bytes, output, &events);
    let end = stdio.run(input, None, options.ignore_stdin_close).await;
    events.exit(0);
    match end {
        End::Io(reason) => Err(std::io::Error::other(reason)),
        End::StdinClosed | End::Signal | End::Crash { .. } => Ok(()),
    }
}

/// Why the serving loop ended.
enum End {
    StdinClosed,
    Signal,
    Crash { code: i32, reason: String },
    Io(String),
}

async fn serve(options: StdioOptions) -> ExitCode {
    let StdioOptions {
        server,
        process,
        max_line_bytes,
        ignore_stdin_close,
    } = options;
    let (events, signals) = match process::start(&process) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let mut stdio = StdioLoop::new(server, max_line_bytes, Stdout::open().into_inner(), &events);
    match stdio
        .run(
            Stdin::open().into_inner(),
            Some((signals, process.ignore_signals)),
            ignore_stdin_close,
        )
        .await
    {
        End::StdinClosed => {
            events.record(&json!({"event": "stdin-closed"}));
            events.exit(0);
            ExitCode::SUCCESS
        }
        End::Signal => {
            events.exit(0);
            ExitCode::SUCCESS
        }
        End::Crash { code, reason } => {
            eprintln!("plexus-testserver: {reason}");
            events.exit(code);
            std::process::exit(code)
        }
        End::Io(reason) => {
            eprintln!("plexus-testserver: {reason}");
            events.exit(1);
            ExitCode::FAILURE
        }
    }
}

struct StdioLoop {
    session: Arc<Session>,
    /// What background work queues for output.
    outbox: Option<mpsc::Receiver<Emitted>>,
    codec: LineCodec,
    input: BytesMut,
    /// Reused for the outputs of each inline message.
    outputs: Vec<Output>,
    writer: Writer,
    events: Arc<EventLog>,
}

impl StdioLoop {
    fn new(
        server: crate::ServerOptions,
        max_line_bytes: usize,
        output: Pin<Box<dyn AsyncWrite + Send>>,
        events: &Arc<EventLog>,
    ) -> StdioLoop {
        let (outbox_tx, outbox) = mpsc::channel(OUTBOX_CAPACITY);
        let session = Session::new(Arc::new(Server::new(server, Arc::clone(events))), outbox_tx, None);
        StdioLoop {
            session,
            outbox: Some(outbox),
            codec: LineCodec::with_max_size(max_line_bytes),
            input: BytesMut::with_capacity(READ_CHUNK),
            outputs: Vec::new(),
            writer: Writer {
                output,
                buffer: Vec::with_capacity(FLUSH_AT),
            },
            events: Arc::clone(events),
        }
    }

    /// Serves until the input ends, a signal comes (when `signals` are given: with
    /// `ignore_signals`, a signal is only logged), or output fails.
    async fn run(
        &mut self,
        mut stdin: Pin<Box<dyn AsyncRead + Send>>,
        mut signals: Option<(Signals, bool)>,
        ignore_stdin_close: bool,
    ) -> End {
        let mut outbox = self.outbox.take().expect("the loop runs once");
        let mut chunk = vec![0u8; READ_CHUNK].into_boxed_slice();
        let mut stdin_open = true;
        loop {
            let step = tokio::select! {
                biased;
                (name, ignore_signals) = next_signal(&mut signals) => {
                    self.events.record(&json!({"event": "signal", "signal": name, "ms": self.events.elapsed_ms()}));
                    if ignore_signals { Ok(()) } else { Err(End::Signal) }
                }
                read = stdin.read(&mut chunk), if stdin_open => match read {
                    Ok(0) if ignore_stdin_close => {
                        stdin_open = false;
                        self.events.record(&json!({"event": "stdin-closed"}));
                        self.end_of_input().await.or_else(|end| if matches!(end, End::StdinClosed) { Ok(()) } else { Err(end) })
                    }
                    Ok(0) => self.end_of_input().await,
                    Ok(n) => {
                        self.input.extend_from_slice(&chunk[..n]);
                        self.dispatch_input().await
                    }
                    Err(e) => Err(End::Io(format!("cannot read stdin: {e}"))),
                },
                Some(emitted) = outbox.recv() => self.drain_outbox(emitted.output, &mut outbox).await,
            };
            if let Err(end) = step {
                return end;
            }
        }
    }

    /// Handles every complete line of the input, then writes what they produced.
    async fn dispatch_input(&mut self) -> Result<(), End> {
        while let Some(item) = self.codec.decode_line(&mut self.input) {
            match item {
                Ok(message) => self.session.handle(message, &mut self.outputs),
                Err(error) => Session::handle_frame_error(&error, &mut self.outputs),
            }
            for output in self.outputs.drain(..) {
                self.writer.put(output).await?;
            }
        }
        self.writer.flush().await
    }

    /// Handles a last line without its newline, and ends.
    async fn end_of_input(&mut self) -> Result<(), End> {
        if !self.input.is_empty() {
            self.input.extend_from_slice(b"\n");
            self.dispatch_input().await?;
        }
        Err(End::StdinClosed)
    }

    /// Writes `first` and whatever else the background tasks queued meanwhile, up to a batch.
    async fn drain_outbox(&mut self, first: Output, outbox: &mut mpsc::Receiver<Emitted>) -> Result<(), End> {
        self.writer.put(first).await?;
        for _ in 1..OUTBOX_BATCH {
            let Ok(emitted) = outbox.try_recv() else { break };
            self.writer.put(emitted.output).await?;
        }
        self.writer.flush().await
    }
}

/// The next signal, when signals are watched (never, else), and whether it is to be ignored.
async fn next_signal(signals: &mut Option<(Signals, bool)>) -> (&'static str, bool) {
    match signals {
        Some((signals, ignore)) => (signals.recv().await, *ignore),
        None => std::future::pending().await,
    }
}

/// Buffered writes to the output, in output order.
struct Writer {
    output: Pin<Box<dyn AsyncWrite + Send>>,
    buffer: Vec<u8>,
}

impl Writer {
    async fn put(&mut self, output: Output) -> Result<(), End> {
        match output {
            Output::Message(line) | Output::Response(line) | Output::SessionNotification(line) | Output::Raw(line)
                if line.len() >= FLUSH_AT =>
            {
                self.flush().await?;
                self.write(&line).await
            }
            Output::Message(line) | Output::Response(line) | Output::SessionNotification(line) | Output::Raw(line) => {
                self.buffer.extend_from_slice(&line);
                if self.buffer.len() >= FLUSH_AT {
                    self.flush().await
                } else {
                    Ok(())
                }
            }
            Output::Drip { line, chunk, delay } => {
                self.flush().await?;
                for (i, piece) in line.chunks(chunk).enumerate() {
                    if i > 0 {
                        tokio::time::sleep(delay).await;
                    }
                    self.write(piece).await?;
                }
                Ok(())
            }
            Output::Exit { code, reason } => {
                self.flush().await?;
                Err(End::Crash { code, reason })
            }
        }
    }

    async fn flush(&mut self) -> Result<(), End> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let result = write_out(&mut self.output, &self.buffer).await;
        self.buffer.clear();
        result
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), End> {
        write_out(&mut self.output, bytes).await
    }
}

/// Writes all of `bytes` and hands them on (a pipe's reader sees them at once).
async fn write_out(output: &mut Pin<Box<dyn AsyncWrite + Send>>, bytes: &[u8]) -> Result<(), End> {
    let written = async {
        output.write_all(bytes).await?;
        output.flush().await
    };
    written
        .await
        .map_err(|e| End::Io(format!("cannot write the output: {e}")))
}
