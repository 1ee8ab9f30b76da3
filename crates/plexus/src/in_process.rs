//! Servers that run inside the host's process: an in-memory duplex pipe instead of a child
//! process or a socket, carrying newline-delimited JSON-RPC as stdio does.
//!
//! A host registers an [`InProcessServer`] under a name ([`HubOptions::in_process`], or
//! [`DefaultConnector::with_in_process`] below the Hub); the entry it gets is of the
//! [`InProcess`](plexus_config::ServerKind::InProcess) kind, which no config file can name. Each
//! connection the pool opens (a reconnect opens another) calls the server with its end of a new
//! [`pipe`]; closing the session ends the server's input, and dropping the transport ends the
//! server's task.
//!
//! [`HubOptions::in_process`]: crate::HubOptions::in_process
//! [`DefaultConnector::with_in_process`]: crate::DefaultConnector::with_in_process

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::BytesMut;
use plexus_jsonrpc::{LineCodec, Message, Response};
use plexus_transport::{
    BoxFuture, CloseReason, OutboundMessage, ServerOutput, Transport, TransportError, TransportReceiver,
    TransportSender,
};
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::task::AbortHandle;

/// One end of an in-memory pipe (tokio's): what an [`InProcessServer`] serves on.
pub use tokio::io::DuplexStream;

/// How many bytes each direction of a [`pipe`] buffers before a writer waits for its reader.
pub const PIPE_BUFFER: usize = 256 * 1024;

/// The default cap on one message from an in-process server (as for every transport: 16 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE;

/// Why an in-process entry cannot be connected: no server of its name was registered.
pub(crate) const NOT_REGISTERED: &str =
    "no in-process server of this name was registered with the connector (HubOptions::in_process)";

/// How much is read from the pipe at once.
const READ_CHUNK: usize = 64 * 1024;

/// A server that runs in the host's process.
///
/// [`serve`](Self::serve) is called once per connection with the server's end of the pipe: it
/// reads newline-delimited JSON-RPC from it and writes its own messages to it, until its input
/// ends. Any `Fn(DuplexStream) -> impl Future<Output = ()>` is one.
pub trait InProcessServer: Send + Sync + 'static {
    /// Serves one session on `connection` until its input ends.
    fn serve(&self, connection: DuplexStream) -> BoxFuture<'static, ()>;
}

impl<F, Serving> InProcessServer for F
where
    F: Fn(DuplexStream) -> Serving + Send + Sync + 'static,
    Serving: Future<Output = ()> + Send + 'static,
{
    fn serve(&self, connection: DuplexStream) -> BoxFuture<'static, ()> {
        Box::pin(self(connection))
    }
}

/// A new in-memory pipe: the client's end as a [`Transport`] named `name`, accepting messages
/// of at most `max_message_size` bytes, and the server's end.
pub fn pipe(name: &str, max_message_size: usize) -> (InProcessTransport, DuplexStream) {
    let (client, server) = tokio::io::duplex(PIPE_BUFFER);
    let (reader, writer) = tokio::io::split(client);
    let shared = Arc::new(PipeShared {
        closed: AtomicBool::new(false),
        server_task: std::sync::Mutex::new(None),
    });
    let transport = InProcessTransport {
        name: name.to_owned(),
        sender: PipeSender {
            writer: tokio::sync::Mutex::new(writer),
            shared: Arc::clone(&shared),
        },
        receiver: PipeReceiver {
            reader,
            codec: LineCodec::with_max_size(max_message_size),
            buffer: BytesMut::with_capacity(READ_CHUNK),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            ended: false,
            shared,
        },
    };
    (transport, server)
}

/// The client's end of a [`pipe`].
pub struct InProcessTransport {
    name: String,
    sender: PipeSender,
    receiver: PipeReceiver,
}

impl std::fmt::Debug for InProcessTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessTransport")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl InProcessTransport {
    /// Ends `task` (the server's) when both halves of this transport are dropped.
    #[must_use]
    pub fn end_with(self, task: AbortHandle) -> Self {
        *crate::lock(&self.sender.shared.server_task) = Some(task);
        self
    }
}

impl Transport for InProcessTransport {
    fn describe(&self) -> String {
        format!("in-process server {}", self.name)
    }

    fn split(self: Box<Self>) -> (Box<dyn TransportSender>, Box<dyn TransportReceiver>) {
        let InProcessTransport { sender, receiver, .. } = *self;
        (Box::new(sender), Box::new(receiver))
    }
}

/// What both halves share: whether the pipe is closed, and the server's task.
struct PipeShared {
    closed: AtomicBool,
    server_task: std::sync::Mutex<Option<AbortHandle>>,
}

impl Drop for PipeShared {
    fn drop(&mut self) {
        if let Some(task) = crate::lock(&self.server_task).take() {
            task.abort();
        }
    }
}

/// The server ended its end of the pipe, `mid_message` or not.
fn pipe_ended(mid_message: bool) -> TransportError {
    TransportError::closed(CloseReason::EndOfOutput {
        output: ServerOutput::Pipe,
        mid_message,
    })
}

struct PipeSender {
    writer: tokio::sync::Mutex<WriteHalf<DuplexStream>>,
    shared: Arc<PipeShared>,
}

impl TransportSender for PipeSender {
    fn send(&self, message: OutboundMessage) -> BoxFuture<'_, Result<Option<Response>, TransportError>> {
        Box::pin(async move {
            if self.shared.closed.load(Ordering::Acquire) {
                return Err(TransportError::closed(CloseReason::ByClient));
            }
            let mut writer = self.writer.lock().await;
            match writer.write_all(message.line()).await {
                Ok(()) => Ok(None),
                Err(_) => {
                    self.shared.closed.store(true, Ordering::Release);
                    Err(pipe_ended(false))
                }
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared.closed.store(true, Ordering::Release);
            // The server reads the end of its input and finishes.
            let _ = self.writer.lock().await.shutdown().await;
            Ok(())
        })
    }

    fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

struct PipeReceiver {
    reader: ReadHalf<DuplexStream>,
    codec: LineCodec,
    buffer: BytesMut,
    chunk: Box<[u8]>,
    /// The terminal error was reported: every later poll says closed.
    ended: bool,
    shared: Arc<PipeShared>,
}

impl TransportReceiver for PipeReceiver {
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message, TransportError>> {
        loop {
            if self.ended {
                return Poll::Ready(Err(pipe_ended(false)));
            }
            if let Some(frame) = self.codec.decode_line(&mut self.buffer) {
                return Poll::Ready(frame.map_err(TransportError::from));
            }
            let mut read = ReadBuf::new(&mut self.chunk);
            match Pin::new(&mut self.reader).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    self.ended = true;
                    self.shared.closed.store(true, Ordering::Release);
                    return Poll::Ready(Err(pipe_ended(!self.buffer.is_empty())));
                }
                Poll::Ready(Ok(())) => {
                    let filled = read.filled().len();
                    self.buffer.extend_from_slice(&self.chunk[..filled]);
                }
                Poll::Ready(Err(error)) => {
                    self.ended = true;
                    self.shared.closed.store(true, Ordering::Release);
                    return Poll::Ready(Err(TransportError::from_io(
                        "reading from the in-process server",
                        error,
                    )));
                }
            }
        }
    }
}
