//! Helpers shared by the CLI's integration tests: a workspace of real files in a temporary
//! directory, and the `plexus` binary run in it with every location pointed inside it.

#![allow(dead_code, unreachable_pub)]

pub mod gateway;
pub mod peers;
pub mod remote;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

/// The binary under test.
pub const PLEXUS: &str = env!("CARGO_BIN_EXE_plexus");

/// What every command that reads the configuration says on stderr when there is none.
pub const DEMO_NOTICE: &str = "plexus: no config file found, so this is the built-in demo server; add a real one with \
                               `plexus add NAME -- COMMAND [ARGS...]` or `plexus add NAME URL` (see `plexus add --help`)\n";

/// A temporary directory that is its own repository root (a `.git` directory, so the project
/// search stops there) and the project, with the plexus home (`home/`), the user's home
/// (`user/`) and the managed file's place (`etc/managed-mcp.json`) inside it. Nothing outside it
/// is read or written.
pub struct Workspace {
    root: TempDir,
}

/// What one run of `plexus` did.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code and the whole stderr, and returns stdout.
    #[track_caller]
    pub fn expect(&self, code: i32, stderr: &str) -> &str {
        assert_eq!(
            (self.code, self.stderr.as_str()),
            (Some(code), stderr),
            "stdout: {}",
            self.stdout
        );
        &self.stdout
    }

    /// Asserts a quiet success (exit 0, nothing on stderr), and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        self.expect(0, "")
    }

    /// Stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}", self.stdout))
    }
}

impl Workspace {
    pub fn new() -> Workspace {
        let root = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir(root.path().join(".git")).unwrap();
        Workspace { root }
    }

    /// The workspace's root: the project directory and the working directory of [`Workspace::run`].
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// `path` inside the workspace.
    pub fn join(&self, path: impl AsRef<Path>) -> PathBuf {
        self.root.path().join(path)
    }

    /// `path` inside the workspace, as messages show it.
    pub fn shown(&self, path: impl AsRef<Path>) -> String {
        self.join(path).display().to_string()
    }

    /// The plexus home (`PLEXUS_HOME`).
    pub fn home(&self) -> PathBuf {
        self.join("home")
    }

    /// The user's home (`HOME`), where other clients keep their files.
    pub fn user_home(&self) -> PathBuf {
        self.join("user")
    }

    pub fn user_file(&self) -> PathBuf {
        self.home().join("settings.json")
    }

    pub fn project_file(&self) -> PathBuf {
        self.join(".mcp.json")
    }

    /// The local settings of the workspace's project, in the plexus home.
    pub fn local_file(&self) -> PathBuf {
        self.local_file_of(self.path())
    }

    /// The local settings of the project at `dir` (relative to the workspace), in the plexus home.
    pub fn local_file_of(&self, dir: impl AsRef<Path>) -> PathBuf {
        plexus::config::ConfigPaths::local_file_for(&self.home(), &self.join(dir))
    }

    /// The managed file (`PLEXUS_MANAGED_CONFIG`); it does not exist until written.
    pub fn managed_file(&self) -> PathBuf {
        self.join("etc/managed-mcp.json")
    }

    /// Writes `text` to `path` (relative to the workspace, or absolute inside it).
    pub fn write(&self, path: impl AsRef<Path>, text: impl AsRef<[u8]>) -> PathBuf {
        let path = self.join(path);
        assert!(
            path.starts_with(self.path()),
            "{} is outside the workspace",
            path.display()
        );
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// [`write`](Self::write)s an executable script (mode 0755), such as a `$BROWSER`.
    pub fn write_script(&self, path: impl AsRef<Path>, text: impl AsRef<[u8]>) -> PathBuf {
        let path = self.write(path, text);
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        path
    }

    /// Writes `value` as pretty JSON to `path`.
    pub fn write_json(&self, path: impl AsRef<Path>, value: &Value) -> PathBuf {
        self.write(path, serde_json::to_string_pretty(value).unwrap())
    }

    /// Writes a file whose `mcpServers` is `servers`.
    pub fn write_servers(&self, path: impl AsRef<Path>, servers: &Value) -> PathBuf {
        self.write_json(path, &json!({ "mcpServers": servers }))
    }

    pub fn read(&self, path: impl AsRef<Path>) -> String {
        let path = self.join(path);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    pub fn read_json(&self, path: impl AsRef<Path>) -> Value {
        serde_json::from_str(&self.read(path)).unwrap()
    }

    /// Runs `plexus ARGS` in the workspace's root.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_in(self.path(), args)
    }

    /// Runs `plexus ARGS` in `dir`.
    pub fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        self.run_with(dir, args, None, &[])
    }

    /// Runs `plexus ARGS` in the workspace's root with `text` on stdin.
    pub fn run_with_stdin(&self, args: &[&str], text: &str) -> Run {
        self.run_with(self.path(), args, Some(text), &[])
    }

    /// Runs `plexus ARGS` in the workspace's root with extra environment variables.
    pub fn run_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.run_with(self.path(), args, None, env)
    }

    /// The command with every location inside the workspace.
    /// Runs `plexus ARGS` with a pseudo-terminal as stdin, typing `keys` into it (they wait in
    /// the terminal's input queue until read); stdout and stderr are pipes.
    pub fn run_on_terminal(&self, args: &[&str], keys: &[u8]) -> Run {
        self.run_on_terminal_with_env(args, keys, &[])
    }

    /// [`run_on_terminal`](Self::run_on_terminal) with extra environment variables.
    pub fn run_on_terminal_with_env(&self, args: &[&str], keys: &[u8], env: &[(&str, &str)]) -> Run {
        let terminal = nix::pty::openpty(None, None).unwrap();
        let mut command = self.command(self.path(), args);
        command
            .envs(env.iter().copied())
            .stdin(Stdio::from(terminal.slave))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        drop(command);
        let mut keyboard = std::fs::File::from(terminal.master);
        keyboard.write_all(keys).unwrap();
        // A hang guard only: a run takes well under a second.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while child.try_wait().unwrap().is_none() {
            assert!(std::time::Instant::now() < deadline, "plexus {args:?} did not finish");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    pub fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(PLEXUS);
        command
            .args(args)
            .current_dir(dir)
            .env("PLEXUS_HOME", self.home())
            .env("PLEXUS_MANAGED_CONFIG", self.managed_file())
            .env("HOME", self.user_home())
            .env_remove("RUST_LOG")
            .env_remove("APPDATA");
        command
    }

    fn run_with(&self, dir: &Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
        let mut command = self.command(dir, args);
        command
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        {
            let mut pipe = child.stdin.take().unwrap();
            if let Some(text) = stdin {
                pipe.write_all(text.as_bytes()).unwrap();
            }
        }
        let output = child.wait_with_output().unwrap();
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

/// A stdio entry running the binary's own demo server with `extra` arguments.
pub fn demo(extra: &[&str]) -> Value {
    let mut args = vec!["demo-server"];
    args.extend_from_slice(extra);
    json!({ "command": PLEXUS, "args": args })
}

/// The demo entry as `plexus add` and `get` write it (with its `type`).
pub fn demo_written() -> Value {
    json!({ "type": "stdio", "command": PLEXUS, "args": ["demo-server"] })
}

/// The test server's version, as `serverInfo` reports it.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// What a test client that answers form elicitations (and, with `urls`, URL ones) declares.
pub fn elicitation_capabilities(urls: bool) -> plexus::protocol::ClientCapabilities {
    use plexus::protocol::{ClientCapabilities, ElicitationCapability, JsonObject};
    ClientCapabilities {
        elicitation: Some(ElicitationCapability {
            form: Some(JsonObject::new()),
            url: urls.then(JsonObject::new),
            ..ElicitationCapability::default()
        }),
        ..ClientCapabilities::default()
    }
}

/// The events of a test server's `--event-log` file (none when it does not exist yet).
pub fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
