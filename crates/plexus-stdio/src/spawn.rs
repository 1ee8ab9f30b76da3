//! Starting the child: its own process group, piped stdio, and errors that name what failed.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use plexus_transport::TransportError;
use tokio::net::unix::pipe;
use tokio::process::{ChildStderr, ChildStdout};

use crate::config::StdioConfig;

/// Why a stdio server could not be started (the reason of its [`TransportError::Connect`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The configured command is empty.
    #[error("the command is empty")]
    EmptyCommand,
    /// The transport was asked to start outside a Tokio runtime.
    #[error("a stdio server must be spawned from within a Tokio runtime")]
    NoRuntime,
    /// The working directory is something else than a directory.
    #[error("the working directory {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The working directory does not exist.
    #[error("the working directory {} does not exist", .0.display())]
    NoDirectory(PathBuf),
    /// The working directory cannot be looked at.
    #[error("the working directory {} is not accessible", .path.display())]
    Directory {
        /// The working directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The command is a file whose `#!` interpreter does not exist.
    #[error("{command} exists but its interpreter was not found (check its #! line)")]
    NoInterpreter {
        /// The command.
        command: String,
    },
    /// The command is not found.
    #[error("command not found: {command}")]
    NotFound {
        /// The command.
        command: String,
    },
    /// The command may not be run.
    #[error("permission denied: {command}")]
    PermissionDenied {
        /// The command.
        command: String,
    },
    /// Starting the command failed otherwise.
    #[error("could not start {command}")]
    Spawn {
        /// The command.
        command: String,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The child's pid is not a `pid_t` (unreachable on Unix).
    #[error("the pid {0} does not fit a pid_t")]
    Pid(u32),
    /// The child's pipes could not be registered with Tokio.
    #[error("could not set up the pipes to the server")]
    Pipes(#[source] io::Error),
    /// The thread that waits for the child could not be started.
    #[error("could not start the thread that waits for the server")]
    Waiter(#[source] io::Error),
}

/// A started child with its pipes registered with Tokio.
pub(crate) struct SpawnedChild {
    /// The leader, to be handed to the waiter thread (its only reaper).
    pub(crate) child: std::process::Child,
    /// The process group: the leader's pid.
    pub(crate) pgid: Pid,
    pub(crate) stdin: pipe::Sender,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

/// Starts the command of `config` in a new process group with all three stdio streams piped
/// (stderr is never inherited). `target` (the command line) names it in errors.
pub(crate) fn spawn_child(config: &StdioConfig, target: &str) -> Result<SpawnedChild, TransportError> {
    let connect_error = |cause: SpawnError| TransportError::connect(target, cause);
    if config.command.is_empty() {
        return Err(connect_error(SpawnError::EmptyCommand));
    }
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(connect_error(SpawnError::NoRuntime));
    }
    if let Some(cwd) = &config.cwd {
        check_working_directory(cwd).map_err(connect_error)?;
    }
    let mut command = Command::new(&config.command);
    command
        .args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for key in config.env_removed.iter().filter(|key| !config.env.contains_key(*key)) {
        command.env_remove(key);
    }
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    if let Some((name, value)) = crate::orphans::owner_variable() {
        command.env(name, value);
    }
    let mut child =
        crate::orphans::spawn_server(|| command.spawn()).map_err(|e| connect_error(spawn_failure(config, e)))?;
    let Ok(raw_pid) = i32::try_from(child.id()) else {
        // Unreachable on Unix (pids are positive `pid_t`s); handled rather than assumed.
        let _ = child.kill();
        let _ = child.wait();
        return Err(connect_error(SpawnError::Pid(child.id())));
    };
    let pgid = Pid::from_raw(raw_pid);
    match register_pipes(&mut child) {
        Ok((stdin, stdout, stderr)) => Ok(SpawnedChild {
            child,
            pgid,
            stdin,
            stdout,
            stderr,
        }),
        Err(e) => {
            kill_and_reap(child, pgid);
            Err(connect_error(SpawnError::Pipes(e)))
        }
    }
}

/// Kills a group that will never be used, and reaps its leader (quick after `SIGKILL`).
pub(crate) fn kill_and_reap(mut child: std::process::Child, pgid: Pid) {
    let _ = killpg(pgid, Signal::SIGKILL);
    let _ = child.wait();
    crate::orphans::server_ended(child.id());
}

fn check_working_directory(cwd: &Path) -> Result<(), SpawnError> {
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(SpawnError::NotADirectory(cwd.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(SpawnError::NoDirectory(cwd.to_owned())),
        Err(source) => Err(SpawnError::Directory {
            path: cwd.to_owned(),
            source,
        }),
    }
}

/// Why `spawn` failed, naming the command.
fn spawn_failure(config: &StdioConfig, error: io::Error) -> SpawnError {
    let command = config.command.to_string_lossy().into_owned();
    match error.kind() {
        io::ErrorKind::NotFound if command.contains('/') && Path::new(&config.command).is_file() => {
            SpawnError::NoInterpreter { command }
        }
        io::ErrorKind::NotFound => SpawnError::NotFound { command },
        io::ErrorKind::PermissionDenied => SpawnError::PermissionDenied { command },
        _ => SpawnError::Spawn { command, source: error },
    }
}

/// Takes the three pipes of `child` and registers them with Tokio's reactor.
fn register_pipes(child: &mut std::process::Child) -> io::Result<(pipe::Sender, ChildStdout, ChildStderr)> {
    let missing = |which: &str| io::Error::other(format!("the child has no {which} pipe"));
    let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
    Ok((
        // A pipe sender (not `ChildStdin`) so that callers can `try_write` through a shared handle.
        pipe::Sender::from_owned_fd(std::os::fd::OwnedFd::from(stdin))?,
        ChildStdout::from_std(stdout)?,
        ChildStderr::from_std(stderr)?,
    ))
}
