//! Reading a `--config` file that is a pipe (`--config <(…)`, `--config /dev/stdin`): only an
//! explicit file may be one, never a file found by discovery (a repository could plant a FIFO
//! that would block every command). The read is bounded in size and in time: a pipe nobody
//! writes to is an error after [`PIPE_TIMEOUT`], not a hang.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::fcntl::{OFlag, open};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::Mode;

use crate::ConfigError;

/// How long a pipe given as a config file may take to be written and closed.
pub const PIPE_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads at most `limit` bytes from the pipe (or other special file) at `path`, until its writer
/// closes it, within [`PIPE_TIMEOUT`].
pub(crate) fn read_pipe(path: &Path, limit: u64) -> Result<Vec<u8>, ConfigError> {
    let read_error = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    // Non-blocking, so that opening a FIFO without a writer does not wait.
    let fd = open(
        path,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| read_error(errno.into()))?;
    let mut file = File::from(fd);
    let deadline = Instant::now() + PIPE_TIMEOUT;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(std::os::fd::AsFd::as_fd(&file), PollFlags::POLLIN)];
        let ready = poll(&mut fds, timeout).map_err(|errno| read_error(errno.into()))?;
        if ready == 0 {
            return Err(read_error(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("nothing finished writing it within {} s", PIPE_TIMEOUT.as_secs()),
            )));
        }
        let events = fds[0].revents().unwrap_or(PollFlags::empty());
        if !events.contains(PollFlags::POLLIN) {
            // The writer closed it (POLLHUP) with nothing left to read.
            return Ok(bytes);
        }
        match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if bytes.len() as u64 > limit {
                    return Err(ConfigError::TooLarge {
                        path: path.to_owned(),
                        limit,
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_error(e)),
        }
    }
}
