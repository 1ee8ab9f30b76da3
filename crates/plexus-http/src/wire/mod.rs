//! The HTTP/1.1 client of the transport: keep-alive connections driven by the task that uses
//! them (no task per connection, no hop between tasks), a bounded pool, response heads parsed
//! by `httparse`, and bodies framed by length, chunks or the end of the connection.
//!
//! A request is written whole (head and body in one write for bodies up to 64 KiB) and its
//! response head read on the same connection; the body is then read by whoever holds the
//! [`Body`], and the connection goes back to the pool when the body ends.

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

/// The text of an I/O error for a connection that closed before a whole response head arrived
/// (the words hyper uses, which users of other clients know).
pub(crate) const CLOSED_EARLY: &str = "connection closed before message completed";

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

/// A failed round trip, and whether any of the response had arrived.
struct RoundTripError {
    error: io::Error,
    received: bool,
}

impl From<io::Error> for RoundTripError {
    fn from(error: io::Error) -> Self {
        RoundTripError { error, received: false }
    }
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
            _slot: slot,
        }
    }

    /// Writes `request` and reads the response head.
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
        if body.len() <= COPY_BODY_LIMIT {
            self.write.extend_from_slice(body);
            self.stream.write_all(&self.write).await?;
        } else {
            self.stream.write_all(&self.write).await?;
            self.stream.write_all(body).await?;
        }
        self.stream.flush().await?;
        // Whether any of the response arrived (an interim 1xx head counts, though it is skipped).
        let mut received = false;
        loop {
            if !self.read.is_empty() {
                match head::take_head(&mut self.read) {
                    Ok(Some(head)) => return Ok(head),
                    Ok(None) => {}
                    Err(e) => {
                        return Err(RoundTripError {
                            error: io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
                            received: true,
                        });
                    }
                }
            }
            match self.fill().await {
                Ok(0) => {
                    return Err(RoundTripError {
                        error: io::Error::new(io::ErrorKind::UnexpectedEof, CLOSED_EARLY),
                        received,
                    });
                }
                Ok(_) => received = true,
                Err(error) => return Err(RoundTripError { error, received }),
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
        if !self.read.is_empty() {
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

/// Whether an error on a kept-alive connection, before any of the response arrived, is the
/// server having closed it while it was idle.
fn is_stale(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}
