//! This process's standard input and output, for a peer that speaks newline-delimited JSON-RPC
//! on them (a stdio MCP server, or a gateway). Pipes and sockets (how an MCP client connects a
//! stdio server) are switched to non-blocking mode and polled by the reactor, so a read or a
//! write costs no thread hop; anything else (a terminal, a file, /dev/null) goes through tokio's
//! stdio, which reads and writes on a blocking thread. Behind the `stdio` feature.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::unix::pipe;

/// A duplicate of a standard stream registered with the reactor (which made it non-blocking). The
/// stream's original file status flags are restored on drop: they belong to the open file, which
/// other processes may share.
struct Polled<T: AsFd> {
    io: T,
    original_flags: OFlag,
}

impl<T: AsFd> Drop for Polled<T> {
    fn drop(&mut self) {
        let _ = fcntl(self.io.as_fd(), FcntlArg::F_SETFL(self.original_flags));
    }
}

impl<T: AsFd + AsyncRead + Unpin> AsyncRead for Polled<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: AsFd + AsyncWrite + Unpin> AsyncWrite for Polled<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// What a standard stream is connected to.
enum Kind {
    Pipe(File),
    Socket(std::os::unix::net::UnixStream),
}

/// A duplicate of `fd` and its flags if it is a pipe or a socket.
fn pollable(fd: BorrowedFd<'_>) -> Option<(Kind, OFlag)> {
    let fd: OwnedFd = fd.try_clone_to_owned().ok()?;
    let original_flags = OFlag::from_bits_truncate(fcntl(&fd, FcntlArg::F_GETFL).ok()?);
    let file = File::from(fd);
    let kind = file.metadata().ok()?.file_type();
    if kind.is_fifo() {
        return Some((Kind::Pipe(file), original_flags));
    }
    if kind.is_socket() {
        // Any stream socket reads and writes like this; the type only carries the descriptor.
        let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
        socket.set_nonblocking(true).ok()?;
        return Some((Kind::Socket(socket), original_flags));
    }
    None
}

/// This process's standard input.
#[allow(missing_debug_implementations)] // a boxed stream, nothing to show
pub struct Stdin(Pin<Box<dyn AsyncRead + Send>>);

impl Stdin {
    /// Must be called within the runtime.
    pub fn open() -> Self {
        let polled: Option<Pin<Box<dyn AsyncRead + Send>>> =
            pollable(io::stdin().as_fd()).and_then(|(kind, original_flags)| match kind {
                Kind::Pipe(file) => Some(Box::pin(Polled {
                    io: pipe::Receiver::from_file(file).ok()?,
                    original_flags,
                }) as Pin<Box<dyn AsyncRead + Send>>),
                Kind::Socket(socket) => Some(Box::pin(Polled {
                    io: tokio::net::UnixStream::from_std(socket).ok()?,
                    original_flags,
                })),
            });
        Stdin(polled.unwrap_or_else(|| Box::pin(tokio::io::stdin())))
    }

    /// Reads some bytes into `buf`; 0 means end of input.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).await
    }

    /// The stream itself, for a reader that takes any `AsyncRead`.
    pub fn into_inner(self) -> Pin<Box<dyn AsyncRead + Send>> {
        self.0
    }
}

/// This process's standard output.
#[allow(missing_debug_implementations)] // a boxed stream, nothing to show
pub struct Stdout(Pin<Box<dyn AsyncWrite + Send>>);

impl Stdout {
    /// Must be called within the runtime.
    pub fn open() -> Self {
        let polled: Option<Pin<Box<dyn AsyncWrite + Send>>> =
            pollable(io::stdout().as_fd()).and_then(|(kind, original_flags)| match kind {
                Kind::Pipe(file) => Some(Box::pin(Polled {
                    io: pipe::Sender::from_file(file).ok()?,
                    original_flags,
                }) as Pin<Box<dyn AsyncWrite + Send>>),
                Kind::Socket(socket) => Some(Box::pin(Polled {
                    io: tokio::net::UnixStream::from_std(socket).ok()?,
                    original_flags,
                })),
            });
        Stdout(polled.unwrap_or_else(|| Box::pin(tokio::io::stdout())))
    }

    /// Writes all of `data` and hands it to the OS.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.0.write_all(data).await?;
        self.0.flush().await
    }

    /// The stream itself, for a writer that takes any `AsyncWrite`.
    pub fn into_inner(self) -> Pin<Box<dyn AsyncWrite + Send>> {
        self.0
    }
}
