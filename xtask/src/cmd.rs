//! Running child processes: streamed (output goes straight to the terminal or CI log), captured,
//! or probed quietly; and installing the cargo subcommands the steps need.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// Why a command could not be run or did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommandError {
    /// The program could not be started (not installed, not executable, bad working directory).
    #[error("could not start `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// The program ran and exited unsuccessfully.
    #[error("`{command}` failed ({status})")]
    Failed {
        /// The command line.
        command: String,
        /// How it exited.
        status: ExitStatus,
    },
    /// A cargo subcommand is still missing after `cargo install` reported success.
    #[error(
        "`cargo {subcommand} --version` still fails after `cargo install --locked {package}`; is ~/.cargo/bin on PATH?"
    )]
    StillMissing {
        /// The subcommand, e.g. `fuzz`.
        subcommand: String,
        /// The crates.io package that provides it.
        package: String,
    },
}

/// The workspace root: the parent of this crate's directory.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `cargo` command: the cargo that runs this xtask (`$CARGO`), else `cargo` from `PATH`.
pub(crate) fn cargo<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(program);
    command.args(args);
    command
}

/// The command line as a user would type it: the environment variables it sets, the program's
/// file name and the arguments.
pub(crate) fn describe(command: &Command) -> String {
    let mut text = String::new();
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            let _ = write!(text, "{}={} ", key.to_string_lossy(), value.to_string_lossy());
        }
    }
    let program = Path::new(command.get_program());
    text.push_str(&program.file_name().unwrap_or(program.as_os_str()).to_string_lossy());
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}

/// Echoes `command` before it runs, as `$ COMMAND LINE  (in DIR)`.
pub(crate) fn echo(command: &Command) {
    match command.get_current_dir() {
        Some(dir) => println!("$ {}  (in {})", describe(command), dir.display()),
        None => println!("$ {}", describe(command)),
    }
}

/// Runs `command` with its output streaming through to ours, and fails unless it exits with 0.
pub(crate) fn run_streaming(command: &mut Command) -> Result<(), CommandError> {
    echo(command);
    let line = describe(command);
    let status = command
        .stdin(Stdio::null())
        .status()
        .map_err(|source| CommandError::Spawn {
            command: line.clone(),
            source,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(CommandError::Failed { command: line, status })
    }
}

/// What a captured command printed and how it exited.
pub(crate) struct Captured {
    /// How it exited.
    pub(crate) status: ExitStatus,
    /// Its standard output, lossily decoded.
    pub(crate) stdout: String,
    /// Its standard error, lossily decoded.
    pub(crate) stderr: String,
}

/// Runs `command` and captures its output, whatever its exit status.
pub(crate) fn run_captured(command: &mut Command) -> Result<Captured, CommandError> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|source| CommandError::Spawn {
            command: describe(command),
            source,
        })?;
    Ok(Captured {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// Whether `command` starts and exits with 0; its output is discarded.
pub(crate) fn succeeds_quietly(command: &mut Command) -> bool {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether `cargo SUBCOMMAND --version` works.
pub(crate) fn has_cargo_subcommand(subcommand: &str) -> bool {
    succeeds_quietly(&mut cargo([subcommand, "--version"]))
}

/// Makes sure `cargo SUBCOMMAND` works, installing `package` from crates.io with
/// `cargo install --locked` when it does not.
pub(crate) fn ensure_cargo_subcommand(subcommand: &str, package: &str) -> Result<(), CommandError> {
    if has_cargo_subcommand(subcommand) {
        return Ok(());
    }
    println!("`cargo {subcommand}` is not installed: installing {package} from crates.io");
    run_streaming(&mut cargo(["install", "--locked", package]))?;
    if has_cargo_subcommand(subcommand) {
        Ok(())
    } else {
        Err(CommandError::StillMissing {
            subcommand: subcommand.to_owned(),
            package: package.to_owned(),
        })
    }
}

/// `sh -c SCRIPT`, for the tests of every module.
#[cfg(test)]
pub(crate) fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_shows_env_program_and_args() {
        let _lock = crate::process_test_lock();
        let mut command = Command::new("/usr/bin/env");
        command.args(["a", "b c"]).env("X", "1").current_dir("/tmp");
        assert_eq!(describe(&command), "X=1 env a b c");
    }

    #[test]
    fn run_streaming_reports_the_exit_status() {
        let _lock = crate::process_test_lock();
        let err = run_streaming(&mut sh("exit 3")).unwrap_err();
        assert_eq!(err.to_string(), "`sh -c exit 3` failed (exit status: 3)");
        run_streaming(&mut sh("exit 0")).unwrap();
    }

    #[test]
    fn run_streaming_names_a_program_that_cannot_start() {
        let _lock = crate::process_test_lock();
        let err = run_streaming(&mut Command::new("/nonexistent/plexus-xtask-test")).unwrap_err();
        let text = plexus_jsonrpc::error_chain(&err);
        assert!(text.starts_with("could not start `plexus-xtask-test`: "), "{text}");
        assert!(matches!(err, CommandError::Spawn { source, .. } if source.kind() == io::ErrorKind::NotFound));
    }

    #[test]
    fn run_captured_keeps_both_streams_and_the_status() {
        let _lock = crate::process_test_lock();
        let captured = run_captured(&mut sh("echo out; echo err >&2; exit 4")).unwrap();
        assert_eq!(captured.stdout, "out\n");
        assert_eq!(captured.stderr, "err\n");
        assert_eq!(captured.status.code(), Some(4));
    }

    #[test]
    fn succeeds_quietly_is_false_for_failure_and_missing_programs() {
        let _lock = crate::process_test_lock();
        assert!(succeeds_quietly(&mut sh("exit 0")));
        assert!(!succeeds_quietly(&mut sh("exit 1")));
        assert!(!succeeds_quietly(&mut Command::new("/nonexistent/plexus-xtask-test")));
    }
}
