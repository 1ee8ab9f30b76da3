//! The HTTP/1.1 client of the transport: keep-alive connections driven by the task that uses
//! them (no task per connection, no hop between tasks), a bounded pool, response heads parsed
//! by `httparse`, and bodies framed by length, chunks or the end of the connection.
//!
//! A request is written whole (head and body in one write for bodies up to 64 KiB) and its
//! response head read on the same connection; the body is then read by whoever holds the
//! [`Body`], and the connection goes back to the pool when the body ends.
//!
//! A request whose bytes may have reached the server is never sent again: only one of which
//! nothing was written may go again on another connection. When writing fails after a part went
//! out, the server may have answered before it stopped reading (an early 413 or 401, then a
//! close): that response is read, within [`EARLY_RESPONSE_GRACE`], and is the answer.

mod body;
pub(crate) mod chunked;
pub(crate) mod head;
mod origin;
mod pool;

use std::io::{self, Write as _};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::sync::OwnedSemaphorePermit;

pub(crate) use body::{Body, BodyError};
pub(crate) use head::Head;
pub(crate) use origin::Origin;
pub(crate) use pool::{Pool, PoolLimits};

use origin::Stream;

/// Bodies up to this size are copied behind the head and written with it: 64 KiB.
const COPY_BODY_LIMIT: usize = 64 * 1024;

/// The read buffer of a connection starts at 8 KiB and grows with what it must hold.
const READ_BUFFER: usize = 8 * 1024;

/// A connection whose buffers grew past this size gets fresh ones before it waits in the pool.
const KEEP_BUFFER_LIMIT: usize = 64 * 1024;

/// The text of an I/O error for a connection that closed in the middle of a response head (the
/// words hyper uses, which users of other clients know).
const CLOSED_EARLY: &str = "connection closed before message completed";

/// What an error says when the whole request was written and no answer came.
const OUTCOME_UNKNOWN: &str = "the request was sent; whether the server acted on it is unknown";

/// How long a request whose writing failed waits for a response the server sent before it
/// stopped reading (an early 413 or 401): 1 s. Such a response is already on its way when the
/// write fails; this only bounds the wait for it.
const EARLY_RESPONSE_GRACE: Duration = Duration::from_secs(1);

/// What to send: the request line's method and target, the header lines, and the body.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    pub(crate) headers: &'a dyn WriteHeaders,
    pub(crate) body: Option<&'a [u8]>,
}

/// Writes a request's header lines straight into the connection's buffer (each line ending in
/// CRLF, `Host` included, `Content-Length` not: the connection writes it).
pub(crate) trait WriteHeaders: Sync {
    fn write_headers(&self, out: &mut Vec<u8>);
}

/// Why an exchange failed.
#[derive(Debug)]
pub(crate) enum WireError {
    /// A new connection could not be opened (TCP or TLS).
    Connect(io::Error),
    /// Opening a new connection took longer than the connect timeout.
    ConnectTimeout(Duration),
    /// The connection failed while the request was written or the response head read.
    Exchange(io::Error),
}

/// A failed round trip.
struct RoundTripError {
    /// What went wrong, saying how much of the request may have reached the server.
    error: io::Error,
    /// Nothing of the request was written, so it cannot have reached the server: it may go
    /// again on another connection.
    unsent: bool,
}

/// One open connection, owned by whoever is using it (or by the pool while it waits there).
#[derive(Debug)]
pub(crate) struct Connection {
    stream: Stream,
    read: BytesMut,
    /// Whether the read buffer grew past [`KEEP_BUFFER_LIMIT`] (its allocation may outlive what
    /// `capacity` shows, shared with a body split off it).
    read_grew: bool,
    write: Vec<u8>,
    /// Exchanges completed on it; a connection that served one is a kept-alive connection.
    served: u32,
    /// How long it may wait in the pool (the pool's limit, or less when the server said so).
    idle_timeout: Duration,
    /// When it went back to the pool.
    idle_since: Instant,
    /// Writing a request failed: it never carries another one.
    broken: bool,
    /// Its place under the pool's connection cap, given back when it closes.
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    fn new(stream: Stream, slot: OwnedSemaphorePermit, idle_timeout: Duration) -> Self {
        Connection {
            stream,
            read: BytesMut::with_capacity(READ_BUFFER),
            read_grew: false,
            write: Vec::with_capacity(1024),
            served: 0,
            idle_timeout,
            idle_since: Instant::now(),
            broken: false,
            _slot: slot,
        }
    }

    /// Writes `request` and reads the response head (see the module docs for a failed write).
    async fn round_trip(&mut self, request: &Request<'_>) -> Result<Head, RoundTripError> {
        self.write.clear();
        for part in [
            request.method.as_bytes(),
            b" ",
            request.target.as_bytes(),
            b" HTTP/1.1\r\n",
        ] {
            self.write.extend_from_slice(part);
        }
        request.headers.write_headers(&mut self.write);
        let body = request.body.unwrap_or_default();
        if request.body.is_some() {
            // Writing to a Vec cannot fail.
            let _ = write!(self.write, "Content-Length: {}\r\n", body.len());
        }
        self.write.extend_from_slice(b"\r\n");
        let separate = body.len() > COPY_BODY_LIMIT;
        if !separate {
            self.write.extend_from_slice(body);
        }
        // The bytes of the request the stream took. Once TCP took one it may reach the server;
        // a TLS stream may have sent records of what it took even when it fails, so with TLS a
        // failed write always may have reached the server.
        let mut taken = 0;
        let rest = separate.then_some(body);
        if let Err(error) = write_request(&mut self.stream, &self.write, rest, &mut taken).await {
            self.broken = true;
            if taken == 0 && matches!(self.stream, Stream::Plain(_)) {
                return Err(RoundTripError {
                    error: io::Error::new(error.kind(), format!("{error} before any of the request was sent")),
                    unsent: true,
                });
            }
            return self.early_response(error).await;
        }
        self.read_head()
            .await
            .map_err(|error| RoundTripError { error, unsent: false })
    }

    /// Writing the request failed after part of it went out: the server may have answered
    /// before it stopped reading. That response (its head within [`EARLY_RESPONSE_GRACE`]) is
    /// the answer; without one, the write's error, saying that the request may have reached the
    /// server.
    async fn early_response(&mut self, error: io::Error) -> Result<Head, RoundTripError> {
        if let Ok(Ok(head)) = tokio::time::timeout(EARLY_RESPONSE_GRACE, self.read_head()).await {
            return Ok(head);
        }
        Err(RoundTripError {
            error: io::Error::new(
                error.kind(),
                format!(
                    "{error} while the request was being sent (some of it may have reached the server; whether the \
                     server acted on it is unknown)"
                ),
            ),
            unsent: false,
        })
    }

    /// Reads a response head (an interim 1xx head is skipped). A connection that ends or fails
    /// before any of it arrived says that the request went out unanswered.
    async fn read_head(&mut self) -> io::Result<Head> {
        // Whether any of the response arrived (an interim 1xx head counts, though it is skipped).
        let mut received = false;
        loop {
            if !self.read.is_empty() {
                match head::take_head(&mut self.read) {
                    Ok(Some(head)) => return Ok(head),
                    Ok(None) => {}
                    Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
                }
            }
            match self.fill().await {
                Ok(0) if received => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, CLOSED_EARLY)),
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the server closed the connection before answering ({OUTCOME_UNKNOWN})"),
                    ));
                }
                Ok(_) => received = true,
                Err(error) if received => return Err(error),
                Err(error) => {
                    return Err(io::Error::new(
                        error.kind(),
                        format!("{error} before the server answered ({OUTCOME_UNKNOWN})"),
                    ));
                }
            }
        }
    }

    /// Reads what the stream has into the read buffer; 0 at the end of the stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.read.capacity() - self.read.len() < READ_BUFFER / 2 {
            self.reserve_read(READ_BUFFER);
        }
        self.stream.read_buf(&mut self.read).await
    }

    /// Makes room for `additional` more bytes in the read buffer.
    fn reserve_read(&mut self, additional: usize) {
        self.read.reserve(additional);
        self.read_grew |= self.read.capacity() > KEEP_BUFFER_LIMIT;
    }

    /// Whether the connection can carry a request: a look at the socket without waiting. A
    /// server that closed it (or sent something unasked) makes it unusable.
    fn is_alive(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        if self.read.capacity() == self.read.len() {
            self.read.reserve(64);
        }
        let mut probe = ReadBuf::uninit(self.read.spare_capacity_mut());
        matches!(Pin::new(&mut self.stream).poll_read(&mut cx, &mut probe), Poll::Pending)
    }

    /// Gets the connection ready to wait in the pool; false when it cannot be reused.
    fn prepare_for_idle(&mut self, keep_alive: Option<Duration>) -> bool {
        if self.broken || !self.read.is_empty() {
            return false;
        }
        if self.read_grew {
            self.read = BytesMut::with_capacity(READ_BUFFER);
            self.read_grew = false;
        }
        if self.write.capacity() > KEEP_BUFFER_LIMIT {
            self.write = Vec::with_capacity(1024);
        }
        if let Some(hint) = keep_alive {
            // Give up a second before the server does, so that a request never races its close.
            let Some(shorter) = hint.checked_sub(Duration::from_secs(1)).filter(|d| !d.is_zero()) else {
                return false;
            };
            self.idle_timeout = self.idle_timeout.min(shorter);
        }
        self.served += 1;
        self.idle_since = Instant::now();
        true
    }
}

/// Writes a request's head (and its body when it is not in the same buffer) and flushes it,
/// adding to `taken` what the stream took.
async fn write_request(stream: &mut Stream, head: &[u8], body: Option<&[u8]>, taken: &mut usize) -> io::Result<()> {
    write_counted(stream, head, taken).await?;
    if let Some(body) = body {
        write_counted(stream, body, taken).await?;
    }
    stream.flush().await
}

/// Writes `bytes` whole, adding to `taken` what the stream took, so that a failure says whether
/// any of it went out.
async fn write_counted(stream: &mut Stream, mut bytes: &[u8], taken: &mut usize) -> io::Result<()> {
    while !bytes.is_empty() {
        let n = stream.write(bytes).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        *taken += n;
        bytes = &bytes[n..];
    }
    Ok(())
}
