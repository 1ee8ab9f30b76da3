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
    /// It is larger than the cap (declared or as read); reading stopped at the cap.
    TooLarge,
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

    /// The next piece of the body, `None` at its end.
    pub(crate) async fn chunk(&mut self) -> io::Result<Option<Bytes>> {
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

    /// Reads the whole body, but never more than `limit` bytes (a body that declares more is not
    /// read at all). A body with a declared length is read in place, without a copy.
    pub(crate) async fn read_capped(&mut self, limit: usize) -> Result<Bytes, BodyError> {
        if let (State::Length(length), Some(connection)) = (&self.state, self.connection.as_mut()) {
            let Ok(length) = usize::try_from(*length) else {
                return Err(BodyError::TooLarge);
            };
            if length > limit {
                return Err(BodyError::TooLarge);
            }
            connection.reserve_read(length.saturating_sub(connection.read.len()));
            while connection.read.len() < length {
                match connection.fill().await {
                    Ok(0) => return Err(BodyError::Failed(cut_off())),
                    Ok(_) => {}
                    Err(e) => return Err(BodyError::Failed(e)),
                }
            }
            let body = connection.read.split_to(length).freeze();
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
            if single.as_ref().map_or(0, Bytes::len) + joined.len() + chunk.len() > limit {
                return Err(BodyError::TooLarge);
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
