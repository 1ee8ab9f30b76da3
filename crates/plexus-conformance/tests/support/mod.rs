//! The peers of the peer tests: where `cargo xtask peers` installed them, how each is started on
//! each transport, and the bounded start, readiness wait and shutdown of remote ones.

use std::fmt;
use std::fs::{self, File};
use std::future::Future;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use plexus::ClientOptions;
use plexus::config::ServerConfig;
use serde_json::{Value, json};

/// Set by `cargo xtask peers` to its `target/peers/` directory.
const PEERS_DIR_ENV: &str = "PLEXUS_PEERS_DIR";
/// The manifest `cargo xtask peers` writes in that directory.
const MANIFEST_FILE: &str = "peers.json";

/// The hang guard of one whole test (a peer's checks take a few seconds).
const TEST_LIMIT: Duration = Duration::from_secs(180);
/// How long a remote peer may take to accept connections (Node and Python start in about a second).
const READY_LIMIT: Duration = Duration::from_secs(60);
/// How long a peer has to exit after SIGTERM before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(3);
/// How much of a peer's log a failing test shows.
const LOG_TAIL_BYTES: usize = 4000;

/// A third-party MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// `@modelcontextprotocol/server-everything` (stdio, SSE, Streamable HTTP).
    Everything,
    /// The Python SDK, mcp 2.x (stdio, SSE, Streamable HTTP).
    PythonSdk,
    /// The Python SDK, mcp 1.x, for its WebSocket server.
    PythonSdkWs,
}

impl Peer {
    /// Every peer.
    pub(crate) const ALL: [Peer; 3] = [Peer::Everything, Peer::PythonSdk, Peer::PythonSdkWs];

    /// The transports the peer speaks.
    pub(crate) fn transports(self) -> &'static [Transport] {
        match self {
            Peer::Everything | Peer::PythonSdk => &[
                Transport::Stdio,
                Transport::Http,
                Transport::Sse,
                Transport::HttpFallbackToSse,
            ],
            Peer::PythonSdkWs => &[Transport::Ws],
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Peer::Everything => "everything",
            Peer::PythonSdk => "python-sdk",
            Peer::PythonSdkWs => "python-sdk-ws",
        })
    }
}

/// How a test reaches the peer: the wire transport the peer serves and the config `type` of the
/// entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// `stdio`: the facade runs the peer as its child.
    Stdio,
    /// `http`: Streamable HTTP.
    Http,
    /// `sse`: legacy HTTP+SSE.
    Sse,
    /// An `http` entry for a peer that serves only legacy SSE: the initialize POST gets a 4xx and
    /// the facade falls back to legacy SSE at the same URL.
    HttpFallbackToSse,
    /// `ws`: WebSocket, subprotocol `mcp`.
    Ws,
}

impl Transport {
    /// The entry's `type`.
    fn config_type(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http | Transport::HttpFallbackToSse => "http",
            Transport::Sse => "sse",
            Transport::Ws => "ws",
        }
    }

    /// What the peer serves: this transport, except in the fallback case, where it is SSE.
    fn served(self) -> Transport {
        match self {
            Transport::HttpFallbackToSse => Transport::Sse,
            other => other,
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::HttpFallbackToSse => f.write_str("http (falling back to legacy sse)"),
            other => f.write_str(other.config_type()),
        }
    }
}

/// The installed peers, as the manifest names them.
#[derive(Debug, Clone)]
pub(crate) struct Peers {
    manifest: Value,
    manifest_path: PathBuf,
}

impl Peers {
    /// The peers named by `$PLEXUS_PEERS_DIR/peers.json`, or `None` (after saying so) when the
    /// variable is unset. A set variable with a missing or malformed manifest fails the test.
    pub(crate) fn from_env() -> Option<Peers> {
        let Some(dir) = std::env::var_os(PEERS_DIR_ENV) else {
            eprintln!(
                "skipped: {PEERS_DIR_ENV} is not set; `cargo xtask peers` installs the peers and runs these tests"
            );
            return None;
        };
        let manifest_path = Path::new(&dir).join(MANIFEST_FILE);
        let text = fs::read_to_string(&manifest_path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `cargo xtask peers` to install the peers",
                manifest_path.display()
            )
        });
        let manifest =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", manifest_path.display()));
        Some(Peers {
            manifest,
            manifest_path,
        })
    }

    /// A path in the manifest, e.g. `/python/server`.
    fn path(&self, pointer: &str) -> String {
        let path = self
            .manifest
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{}: no string at {pointer}", self.manifest_path.display()));
        assert!(
            Path::new(path).exists(),
            "{}: {pointer} = {path} does not exist",
            self.manifest_path.display()
        );
        path.to_owned()
    }

    /// The program and arguments that run `peer` on `transport` (`port` for the remote ones), and
    /// the environment it needs.
    fn command(
        &self,
        peer: Peer,
        transport: Transport,
        port: Option<u16>,
    ) -> (String, Vec<String>, Vec<(String, String)>) {
        let transport = transport.served();
        let port_text = port.map(|p| p.to_string()).unwrap_or_default();
        match peer {
            Peer::Everything => {
                let mode = match transport {
                    Transport::Stdio => "stdio",
                    Transport::Http => "streamableHttp",
                    Transport::Sse => "sse",
                    Transport::Ws | Transport::HttpFallbackToSse => {
                        panic!("the everything server has no {transport} transport")
                    }
                };
                let env = port
                    .map(|_| ("PORT".to_owned(), port_text.clone()))
                    .into_iter()
                    .collect();
                (
                    self.path("/node"),
                    vec![self.path("/everything/entry"), mode.to_owned()],
                    env,
                )
            }
            Peer::PythonSdk => {
                let mut args = vec![self.path("/python/server")];
                args.push(
                    match transport {
                        Transport::Stdio => "stdio",
                        Transport::Http => "streamable-http",
                        Transport::Sse => "sse",
                        Transport::Ws | Transport::HttpFallbackToSse => {
                            panic!("the mcp 2.x peer has no {transport} transport (WebSocket: Peer::PythonSdkWs)")
                        }
                    }
                    .to_owned(),
                );
                args.extend(port.map(|_| port_text.clone()));
                (self.path("/python/python"), args, Vec::new())
            }
            Peer::PythonSdkWs => {
                assert_eq!(transport, Transport::Ws, "the mcp 1.x peer is only used for WebSocket");
                (
                    self.path("/python_ws/python"),
                    vec![self.path("/python_ws/server"), port_text],
                    Vec::new(),
                )
            }
        }
    }
}

/// Runs one peer test: skips without `PLEXUS_PEERS_DIR`, else runs `check` on a fresh runtime,
/// bounded by a hang guard.
pub(crate) fn run_peer_test<F, Fut>(peer: Peer, transport: Transport, check: F)
where
    F: FnOnce(Peer, Transport, Peers) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(peers) = Peers::from_env() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let finished = tokio::time::timeout(TEST_LIMIT, check(peer, transport, peers)).await;
        assert!(
            finished.is_ok(),
            "{peer} over {transport}: the test did not finish within {} s",
            TEST_LIMIT.as_secs()
        );
    });
}

/// Starts `peer` for `transport` (remote ones as a child process on a free port, stdio ones by the
/// facade itself) and connects to it through `plexus::connect`. The returned process, if any,
/// must live as long as the session.
pub(crate) async fn connect_peer(
    peers: &Peers,
    peer: Peer,
    transport: Transport,
) -> (plexus::Client, Option<PeerProcess>) {
    let name = format!("{peer}-{}", transport.config_type());
    let (config, process) = match transport {
        Transport::Stdio => {
            let (program, args, env) = peers.command(peer, transport, None);
            let env: serde_json::Map<String, Value> = env.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            (
                config(&json!({"type": "stdio", "command": program, "args": args, "env": env})),
                None,
            )
        }
        Transport::Http | Transport::Sse | Transport::HttpFallbackToSse | Transport::Ws => {
            let port = free_port();
            let (program, args, env) = peers.command(peer, transport, Some(port));
            let process = PeerProcess::start(&name, &program, &args, &env, port);
            let url = match transport.served() {
                Transport::Http => format!("http://127.0.0.1:{port}/mcp"),
                Transport::Sse | Transport::HttpFallbackToSse => format!("http://127.0.0.1:{port}/sse"),
                Transport::Ws | Transport::Stdio => format!("ws://127.0.0.1:{port}/mcp"),
            };
            (
                config(&json!({"type": transport.config_type(), "url": url})),
                Some(process),
            )
        }
    };
    let mut options = ClientOptions::new(&name);
    options.initialize_timeout = READY_LIMIT;
    match plexus::connect(&name, &config, options).await {
        Ok(client) => (client, process),
        Err(plexus::ConnectError::Unsupported { why, .. }) => panic!(
            "{peer} over {transport}: the facade does not connect {kind} servers yet ({why}); \
             this test passes once plexus::connect is wired for `{kind}`",
            kind = transport.config_type()
        ),
        Err(e) => panic!("{peer} over {transport}: connect failed: {e}"),
    }
}

fn config(entry: &Value) -> ServerConfig {
    ServerConfig::from_json(entry)
        .unwrap_or_else(|diagnostics| panic!("bad peer entry {entry}: {diagnostics:?}"))
        .0
}

/// A port of 127.0.0.1 that was free a moment ago (the peer binds it right after).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    listener.local_addr().expect("the bound address").port()
}

/// A remote peer run by the test: its output goes to a temporary log, shown if the test fails;
/// dropping it ends the peer (SIGTERM, then SIGKILL) and reaps it.
pub(crate) struct PeerProcess {
    name: String,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl PeerProcess {
    /// Starts the peer and waits until it accepts connections on `port` (bounded by
    /// [`READY_LIMIT`]); fails with its log if it exits or never listens.
    fn start(name: &str, program: &str, args: &[String], env: &[(String, String)], port: u16) -> PeerProcess {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let log = dir.path().join(format!("{name}.log"));
        let out = File::create(&log).expect("the peer's log file");
        let err = out.try_clone().expect("the peer's log file");
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start {program}: {e}"));
        let mut process = PeerProcess {
            name: name.to_owned(),
            child,
            log,
            _dir: dir,
        };
        process.wait_ready(port);
        process
    }

    fn wait_ready(&mut self, port: u16) {
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{}: the peer exited ({status}) before listening on {address}",
                    self.name
                );
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}: the peer did not listen on {address} within {} s",
                self.name,
                READY_LIMIT.as_secs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last [`LOG_TAIL_BYTES`] of the peer's output.
    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_else(|e| format!("(log unreadable: {e})"));
        let start = text.len().saturating_sub(LOG_TAIL_BYTES);
        let start = (start..text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- output of peer {} ({}):\n{}",
                self.name,
                self.log.display(),
                self.log_tail()
            );
        }
        if let Ok(None) = self.child.try_wait() {
            let pid = Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
            let _ = kill(pid, Signal::SIGTERM);
            let deadline = Instant::now() + STOP_LIMIT;
            while Instant::now() < deadline {
                if !matches!(self.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
