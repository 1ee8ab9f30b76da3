//! A response body, read from its connection as it arrives. When the body ends and the
//! connection can carry another request, it goes back to the pool; a body dropped before its end
//! closes its connection.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::chunked::{ChunkedDecoder, Decoded};
use super::head::Framing;
use super::{Connection, Head, Pool};

/// Why a body could not be read whole.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// It is larger than the cap: `size` is its declared length (then none of it is read), or
    /// the bytes that arrived, read past the cap without being kept, until it ended or broke.
    TooLarge { size: u64 },
    /// The connection failed, or the body is not well framed.
    Failed(io::Error),
}

#[derive(Debug)]
enum State {
    /// This many bytes to go.
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
    Done,
}

/// The body of a response.
#[derive(Debug)]
pub(crate) struct Body {
    connection: Option<Connection>,
    state: State,
    pool: Arc<Pool>,
    reusable: bool,
    keep_alive: Option<Duration>,
    /// The bytes of the body read so far.
    read: u64,
}

impl Body {
    pub(crate) fn new(pool: Arc<Pool>, connection: Connection, head: &Head) -> Body {
        let state = match head.framing() {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(length) => State::Length(length),
            Framing::Chunked => State::Chunked(ChunkedDecoder::new()),
            Framing::UntilClose => State::UntilClose,
        };
        let mut body = Body {
            connection: Some(connection),
            state,
            pool,
            reusable: head.reusable(),
            keep_alive: head.keep_alive(),
            read: 0,
        };
        if matches!(body.state, State::Done) {
            body.finish();
        }
        body
    }

    /// The length the server declared, if it did.
    pub(crate) fn declared_length(&self) -> Option<u64> {
        match self.state {
            State::Length(length) => Some(length),
            State::Done => Some(0),
            _ => None,
        }
    }

    /// How many bytes of the body were read so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The next piece of the body, `None` at its end.
    pub(crate) async fn chunk(&mut self) -> io::Result<Option<Bytes>> {
        let next = self.next_piece().await;
        if let Ok(Some(piece)) = &next {
            self.read += piece.len() as u64;
        }
        next
    }

    async fn next_piece(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            let Some(connection) = self.connection.as_mut() else {
                return Ok(None);
            };
            match &mut self.state {
                State::Done => {}
                State::Length(remaining) => {
                    if connection.read.is_empty() && connection.fill().await? == 0 {
                        return Err(cut_off());
                    }
                    let take = usize::try_from(*remaining)
                        .unwrap_or(usize::MAX)
                        .min(connection.read.len());
                    *remaining -= take as u64;
                    let data = connection.read.split_to(take).freeze();
                    if *remaining == 0 {
                        self.state = State::Done;
                        self.finish();
                    }
                    return Ok(Some(data));
                }
                State::Chunked(decoder) => match decoder.decode(&mut connection.read) {
                    Ok(Decoded::Data(data)) => return Ok(Some(data)),
                    Ok(Decoded::End) => self.state = State::Done,
                    Ok(Decoded::NeedMore) => {
                        if connection.fill().await? == 0 {
                            return Err(cut_off());
                        }
                        continue;
                    }
                    Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
                },
                State::UntilClose => {
                    if !connection.read.is_empty() {
                        return Ok(Some(connection.read.split().freeze()));
                    }
                    if connection.fill().await? == 0 {
                        self.state = State::Done;
                    }
                    continue;
                }
            }
            self.finish();
            return Ok(None);
        }
    }

    /// Reads the whole body, but never keeps more than `limit` bytes: a body that declares more
    /// is not read at all, and one that turns out larger as it arrives is read to its end without
    /// being kept, to learn its size (see [`BodyError::TooLarge`]; the caller's deadline bounds
    /// that, and [`bytes_read`](Self::bytes_read) then says how much arrived). A body with a
    /// declared length is read in place, without a copy.
    pub(crate) async fn read_capped(&mut self, limit: usize) -> Result<Bytes, BodyError> {
        if let (State::Length(declared), Some(connection)) = (&self.state, self.connection.as_mut()) {
            let declared = *declared;
            let length = match usize::try_from(declared) {
                Ok(length) if length <= limit => length,
                _ => return Err(BodyError::TooLarge { size: declared }),
            };
            connection.reserve_read(length.saturating_sub(connection.read.len()));
            while connection.read.len() < length {
                match connection.fill().await {
                    Ok(0) => return Err(BodyError::Failed(cut_off())),
                    Ok(_) => {}
                    Err(e) => return Err(BodyError::Failed(e)),
                }
            }
            let body = connection.read.split_to(length).freeze();
            self.read += declared;
            self.state = State::Done;
            self.finish();
            return Ok(body);
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
                    joined.reserve(first.len() + chunk.len());
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

    /// The body ended: its connection goes back to the pool if it can be reused.
    fn finish(&mut self) {
        if let Some(connection) = self.connection.take()
            && self.reusable
        {
            self.pool.checkin(connection, self.keep_alive);
        }
    }
}

fn cut_off() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the connection closed before the end of the response body",
    )
}
