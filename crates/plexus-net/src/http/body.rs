//! A response body, read as it arrives: its HTTP/1.1 connection driven by the reader, decoded
//! when the server compressed it, and its connection back in the pool once it ended.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH};
use hyper::body::{Body as _, Incoming};
use tokio::io::{AsyncRead, ReadBuf};

use super::drive::Driven;
use super::pool::{H1Conn, OriginPool};

/// How much decoded body one read of a compressed body gives at most: 32 KiB.
const DECODED_PIECE: usize = 32 * 1024;

/// Why a body could not be read whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// It is larger than the cap: `size` is its declared length (then none of it is read), or
    /// the bytes that arrived (decoded), read past the cap without being kept, until it ended or
    /// broke.
    #[error("the body is larger than allowed ({size} bytes)")]
    TooLarge {
        /// Its size, declared or counted.
        size: u64,
    },
    /// The connection failed, or the body is not well framed or not well compressed.
    #[error(transparent)]
    Failed(io::Error),
}

/// The HTTP/1.1 connection a body is read from, lent to it until the body ends.
pub(crate) struct Lease {
    pub(crate) conn: Box<H1Conn>,
    pub(crate) pool: Arc<OriginPool>,
    /// The server's `Keep-Alive: timeout=N`, if it said.
    pub(crate) keep_alive: Option<Duration>,
}

/// The body's bytes as they arrive (before any decoding).
pub(crate) struct RawBody {
    incoming: Incoming,
    /// For HTTP/1.1: the connection, driven while the body is read, back to the pool at its end.
    lease: Option<Lease>,
    ended: bool,
}

impl RawBody {
    pub(crate) fn new(incoming: Incoming, lease: Option<Lease>) -> RawBody {
        let mut body = RawBody {
            incoming,
            lease,
            ended: false,
        };
        if body.incoming.is_end_stream() {
            body.finish();
        }
        body
    }

    /// The next piece of the body; `None` at its end.
    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            let incoming = &mut self.incoming;
            let frame = match &mut self.lease {
                Some(lease) => {
                    let conn = &mut lease.conn;
                    match conn.driver.poll(cx, &mut conn.connection, &mut conn.ended, |cx| {
                        Pin::new(&mut *incoming).poll_frame(cx)
                    }) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Driven::Ready(frame)) => frame,
                        Poll::Ready(Driven::ConnectionEnded(error)) => {
                            self.ended = true;
                            self.lease = None;
                            let why = error.map_or_else(String::new, |e| format!(": {}", super::error::cause(&e)));
                            return Poll::Ready(Some(Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!("the connection closed before the end of the response body{why}"),
                            ))));
                        }
                    }
                }
                None => match Pin::new(incoming).poll_frame(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(frame) => frame,
                },
            };
            match frame {
                None => {
                    self.finish();
                    return Poll::Ready(None);
                }
                Some(Ok(frame)) => {
                    // Trailers are not for the session.
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                    {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                Some(Err(e)) => {
                    self.ended = true;
                    self.lease = None;
                    let kind = super::error::io_source(&e).map_or(io::ErrorKind::InvalidData, io::Error::kind);
                    return Poll::Ready(Some(Err(io::Error::new(kind, super::error::cause(&e)))));
                }
            }
        }
    }

    /// The body ended: its connection goes back to the pool.
    fn finish(&mut self) {
        self.ended = true;
        if let Some(lease) = self.lease.take() {
            lease.pool.checkin(lease.conn, lease.keep_alive);
        }
    }
}

impl futures_core::Stream for RawBody {
    type Item = io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_piece(cx)
    }
}

type Reader<R> = tokio_util::io::StreamReader<R, Bytes>;

/// How the body's bytes are read.
enum Source {
    Identity(RawBody),
    /// Decoded by async-compression's decoder for its `Content-Encoding`.
    Decoded(Pin<Box<dyn AsyncRead + Send>>),
    /// A `Content-Encoding` this client cannot decode (it never asks for one).
    Unknown(String),
}

/// The body of a response.
pub struct Body {
    source: Source,
    /// The `Content-Length` of a body that is not encoded.
    declared: Option<u64>,
    /// The (decoded) bytes of the body read so far.
    read: u64,
    /// The decoded body's end was reached.
    done: bool,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("declared", &self.declared)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

impl Body {
    /// The body of a response with `headers`.
    pub(crate) fn new(raw: RawBody, headers: &HeaderMap) -> Body {
        let encoding = headers
            .get_all(CONTENT_ENCODING)
            .iter()
            .flat_map(|v| v.as_bytes().split(|b| *b == b','))
            .map(|e| String::from_utf8_lossy(e).trim().to_ascii_lowercase())
            .filter(|e| !e.is_empty() && e != "identity")
            .collect::<Vec<_>>();
        let empty = raw.ended;
        let source = match encoding.as_slice() {
            _ if empty => Source::Identity(raw),
            [] => Source::Identity(raw),
            [one] if one == "gzip" || one == "x-gzip" => Source::Decoded(Box::pin(
                async_compression::tokio::bufread::GzipDecoder::new(Reader::new(raw)),
            )),
            [one] if one == "br" => Source::Decoded(Box::pin(async_compression::tokio::bufread::BrotliDecoder::new(
                Reader::new(raw),
            ))),
            [one] if one == "deflate" => Source::Decoded(Box::pin(
                async_compression::tokio::bufread::ZlibDecoder::new(Reader::new(raw)),
            )),
            _ => Source::Unknown(encoding.join(", ")),
        };
        let declared = match &source {
            _ if empty => Some(0),
            Source::Identity(_) => headers
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok()),
            _ => None,
        };
        Body {
            source,
            declared,
            read: 0,
            done: empty,
        }
    }

    /// The length the server declared for a body that is not compressed, if it did.
    pub fn declared_length(&self) -> Option<u64> {
        self.declared
    }

    /// How many bytes of the body were read so far (decoded, when it is compressed).
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The next piece of the body (decoded), `None` at its end.
    pub async fn chunk(&mut self) -> io::Result<Option<Bytes>> {
        poll_fn(|cx| self.poll_chunk(cx)).await
    }

    /// [`chunk`](Self::chunk), polled: for a reader that polls the body itself (a transport's
    /// receiver).
    pub fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Bytes>>> {
        let next = std::task::ready!(self.poll_next_piece(cx));
        match &next {
            Ok(Some(piece)) => self.read += piece.len() as u64,
            Ok(None) => self.done = true,
            Err(_) => {}
        }
        Poll::Ready(next)
    }

    fn poll_next_piece(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Bytes>>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        match &mut self.source {
            Source::Identity(raw) => raw.poll_piece(cx).map(Option::transpose),
            Source::Unknown(encoding) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the server compressed the body with {encoding:?}, which was not asked for and cannot be decoded"
                ),
            ))),
            Source::Decoded(reader) => {
                let mut piece = BytesMut::zeroed(DECODED_PIECE);
                let mut buf = ReadBuf::new(&mut piece);
                match reader.as_mut().poll_read(cx, &mut buf) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(Err(e)) => Poll::Ready(Err(io::Error::new(
                        e.kind(),
                        format!("the compressed body cannot be decoded: {e}"),
                    ))),
                    Poll::Ready(Ok(())) => {
                        let filled = buf.filled().len();
                        if filled == 0 {
                            return Poll::Ready(Ok(None));
                        }
                        piece.truncate(filled);
                        Poll::Ready(Ok(Some(piece.freeze())))
                    }
                }
            }
        }
    }

    /// Reads the whole body, but never keeps more than `limit` bytes: a body that declares more
    /// is not read at all, and one that turns out larger as it arrives is read to its end without
    /// being kept, to learn its size (see [`BodyError::TooLarge`]; the caller's deadline bounds
    /// that, and [`bytes_read`](Self::bytes_read) then says how much arrived). A body that
    /// arrives in one piece is given back without a copy.
    pub async fn read_capped(&mut self, limit: usize) -> Result<Bytes, BodyError> {
        if let Some(declared) = self.declared
            && declared > limit as u64
        {
            return Err(BodyError::TooLarge { size: declared });
        }
        let mut single: Option<Bytes> = None;
        let mut joined = BytesMut::new();
        loop {
            let chunk = match self.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ok(single.unwrap_or_else(|| joined.freeze())),
                Err(e) => return Err(BodyError::Failed(e)),
            };
            if self.read > limit as u64 {
                return Err(self.discard().await);
            }
            match single.take() {
                None if joined.is_empty() => single = Some(chunk),
                None => joined.extend_from_slice(&chunk),
                Some(first) => {
                    let expected = self.declared.map_or(0, |d| usize::try_from(d).unwrap_or(0));
                    joined.reserve(expected.max(first.len() + chunk.len()));
                    joined.extend_from_slice(&first);
                    joined.extend_from_slice(&chunk);
                }
            }
        }
    }

    /// Reads the rest of a body over the cap without keeping it: the error with its size (what
    /// arrived, when it breaks before its end). A body read to its end leaves its connection
    /// reusable.
    async fn discard(&mut self) -> BodyError {
        loop {
            match self.chunk().await {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return BodyError::TooLarge { size: self.read },
            }
        }
    }
}
