//! What to run, and the limits and timings of the transport.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many bytes of the server's most recent stderr output are kept: 64 KiB.
pub const DEFAULT_STDERR_CAPACITY: usize = 64 * 1024;

/// How many outbound messages may wait for the writer before `send` waits: 256.
pub const DEFAULT_SEND_QUEUE_CAPACITY: usize = 256;

/// How many bytes of the stderr ring go into the terminal `Closed` error: the last lines, at most
/// 4 KiB.
pub const STDERR_TAIL_BYTES: usize = 4 * 1024;

/// The longest stderr line forwarded to `tracing` as is: 2 KiB; longer lines are cut and marked.
pub const MAX_LOGGED_STDERR_LINE: usize = 2 * 1024;

/// The most bytes of queued messages coalesced into one write to the server's stdin: 64 KiB (a
/// single larger message is still written whole).
pub const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// After `SIGINT`, how long the process group has to end before `SIGTERM`: 100 ms.
pub const INTERRUPT_GRACE: Duration = Duration::from_millis(100);

/// After `SIGTERM`, how long the process group has to end before `SIGKILL`: 400 ms.
pub const TERMINATE_GRACE: Duration = Duration::from_millis(400);

/// After `SIGKILL`, how long the shutdown waits for the kernel to remove the group: 100 ms. With
/// the two graces before it, a shutdown takes at most 600 ms.
pub const KILL_GRACE: Duration = Duration::from_millis(100);

/// How often the shutdown checks whether the process group is gone: every 5 ms, so that a
/// cooperative server ends the sequence early.
pub const GROUP_POLL_INTERVAL: Duration = Duration::from_millis(5);

/// After the server's stdout ends (or the server exits), how long the receiver waits for the rest
/// (the exit status, the end of stdout and of stderr) before it reports the end: 200 ms.
pub const EXIT_WAIT: Duration = Duration::from_millis(200);

/// The timings of the shutdown sequence and of the end of the server. The defaults are the
/// constants of this crate; tests shorten or lengthen them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownTimings {
    /// After `SIGINT`, before `SIGTERM` (default [`INTERRUPT_GRACE`]).
    pub interrupt_grace: Duration,
    /// After `SIGTERM`, before `SIGKILL` (default [`TERMINATE_GRACE`]).
    pub terminate_grace: Duration,
    /// After `SIGKILL`, before giving up on survivors (default [`KILL_GRACE`]).
    pub kill_grace: Duration,
    /// How often the process group is checked (default [`GROUP_POLL_INTERVAL`]).
    pub poll_interval: Duration,
    /// How long the receiver waits for the exit status after stdout ends (default [`EXIT_WAIT`]).
    pub exit_wait: Duration,
}

impl Default for ShutdownTimings {
    fn default() -> Self {
        ShutdownTimings {
            interrupt_grace: INTERRUPT_GRACE,
            terminate_grace: TERMINATE_GRACE,
            kill_grace: KILL_GRACE,
            poll_interval: GROUP_POLL_INTERVAL,
            exit_wait: EXIT_WAIT,
        }
    }
}

impl ShutdownTimings {
    /// The longest a shutdown sequence can take: the three graces.
    pub fn total(&self) -> Duration {
        self.interrupt_grace + self.terminate_grace + self.kill_grace
    }
}

/// How to start a stdio MCP server, and the limits of its transport.
///
/// The child gets the host's environment **plus** the entries of [`env`](Self::env) (which
/// override variables of the same name), **minus** the variables of
/// [`env_removed`](Self::env_removed) that `env` does not set.
///
/// ```
/// use plexus_stdio::StdioConfig;
///
/// let config = StdioConfig::new("npx").arg("-y").arg("@modelcontextprotocol/server-everything").env("DEBUG", "1");
/// assert_eq!(config.name, "npx");
/// assert_eq!(config.command_line(), "npx -y @modelcontextprotocol/server-everything");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The server's name, used to tag tracing output (default: the file name of the command).
    pub name: String,
    /// The program to run, looked up in `PATH` when it has no `/`.
    pub command: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to the host's environment for the child (the child sees both).
    pub env: BTreeMap<OsString, OsString>,
    /// Variables of the host's environment the child does not get (unless [`env`](Self::env)
    /// sets them): secrets of the host.
    pub env_removed: BTreeSet<OsString>,
    /// The child's working directory (default: the host's).
    pub cwd: Option<PathBuf>,
    /// The largest message accepted from the server, in bytes (default
    /// [`plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE`]); a longer line is discarded and reported.
    pub max_message_size: usize,
    /// How many bytes of recent stderr output are kept (default [`DEFAULT_STDERR_CAPACITY`]).
    pub stderr_capacity: usize,
    /// How many messages may be queued for the writer (default [`DEFAULT_SEND_QUEUE_CAPACITY`];
    /// at least 1).
    pub send_queue_capacity: usize,
    /// The timings of shutdown and of the end of the server.
    pub timings: ShutdownTimings,
}

impl StdioConfig {
    /// A configuration running `command` with no arguments and the defaults.
    pub fn new(command: impl Into<OsString>) -> Self {
        let command = command.into();
        let name = Path::new(&command)
            .file_name()
            .unwrap_or(&command)
            .to_string_lossy()
            .into_owned();
        StdioConfig {
            name,
            command,
            args: Vec::new(),
            env: BTreeMap::new(),
            env_removed: BTreeSet::new(),
            cwd: None,
            max_message_size: plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE,
            stderr_capacity: DEFAULT_STDERR_CAPACITY,
            send_queue_capacity: DEFAULT_SEND_QUEUE_CAPACITY,
            timings: ShutdownTimings::default(),
        }
    }

    /// Appends one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds a variable to the child's environment (on top of the host's).
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Keeps a variable of the host's environment from the child (unless [`env`](Self::env) sets
    /// it).
    #[must_use]
    pub fn without_env(mut self, key: impl Into<OsString>) -> Self {
        self.env_removed.insert(key.into());
        self
    }

    /// Sets the child's working directory.
    #[must_use]
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the name that tags tracing output.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the largest message accepted from the server.
    #[must_use]
    pub fn max_message_size(mut self, max_message_size: usize) -> Self {
        self.max_message_size = max_message_size;
        self
    }

    /// Sets how many bytes of recent stderr output are kept.
    #[must_use]
    pub fn stderr_capacity(mut self, stderr_capacity: usize) -> Self {
        self.stderr_capacity = stderr_capacity;
        self
    }

    /// Sets how many messages may be queued for the writer.
    #[must_use]
    pub fn send_queue_capacity(mut self, send_queue_capacity: usize) -> Self {
        self.send_queue_capacity = send_queue_capacity;
        self
    }

    /// Sets the shutdown timings.
    #[must_use]
    pub fn timings(mut self, timings: ShutdownTimings) -> Self {
        self.timings = timings;
        self
    }

    /// The command line, quoted like a shell would need it (for logs and errors).
    pub fn command_line(&self) -> String {
        let mut line = shell_quote(&self.command).into_owned();
        for arg in &self.args {
            line.push(' ');
            line.push_str(&shell_quote(arg));
        }
        line
    }
}

/// Quotes one word for display, only when it needs it.
fn shell_quote(word: &OsStr) -> Cow<'_, str> {
    let text = word.to_string_lossy();
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@+%^".contains(&b));
    if plain {
        text
    } else {
        Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_quotes_only_what_needs_it() {
        let config = StdioConfig::new("/usr/bin/python3").args(["-c", "print('hi there')", ""]);
        assert_eq!(
            config.command_line(),
            r"/usr/bin/python3 -c 'print('\''hi there'\'')' ''"
        );
        assert_eq!(config.name, "python3");
    }

    #[test]
    fn the_default_cap_is_600_ms() {
        assert_eq!(ShutdownTimings::default().total(), Duration::from_millis(600));
    }
}
