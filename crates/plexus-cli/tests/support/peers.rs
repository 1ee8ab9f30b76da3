//! Helpers of the peer tests: the peers' manifest (`$PLEXUS_PEERS_DIR/peers.json`, written by
//! `cargo xtask peers`), a peer listening on a free port of 127.0.0.1, and `plexus` runs bounded
//! in time.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Run, Workspace};

/// The peers' manifest, if `PLEXUS_PEERS_DIR` is set; without it the tests say so and pass.
pub fn manifest() -> Option<Value> {
    let Some(dir) = std::env::var_os("PLEXUS_PEERS_DIR") else {
        eprintln!("skipped: PLEXUS_PEERS_DIR is not set; `cargo xtask peers` installs the peers and runs these tests");
        return None;
    };
    let manifest = PathBuf::from(dir).join("peers.json");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    Some(serde_json::from_str(&text).unwrap())
}

/// A path the manifest names (which must exist).
pub fn path(manifest: &Value, pointer: &str) -> String {
    let path = manifest
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no {pointer} in the manifest"));
    assert!(Path::new(path).exists(), "{pointer} = {path} does not exist");
    path.to_owned()
}

/// A peer serving on a free port of 127.0.0.1, its stderr kept in a file for failure messages;
/// killed when dropped.
pub struct ListeningPeer {
    child: Child,
    /// The port it listens on.
    pub port: u16,
    what: String,
    log: tempfile::NamedTempFile,
}

impl ListeningPeer {
    /// Starts `command(port)` on a free port and waits (up to 60 s) until it accepts connections.
    pub fn start(what: &str, command: impl FnOnce(u16) -> Command) -> ListeningPeer {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = command(port)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {what}: {e}"));
        let mut peer = ListeningPeer {
            child,
            port,
            what: what.to_owned(),
            log,
        };
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err() {
            if let Some(status) = peer.child.try_wait().unwrap() {
                panic!(
                    "{what} exited ({status}) before listening on {address}; its stderr:\n{}",
                    peer.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not listen on {address} within 60 s; its stderr:\n{}",
                peer.log()
            );
            thread::sleep(Duration::from_millis(100));
        }
        peer
    }

    /// What the peer wrote on stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// What the peer is, as failure messages name it.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl Drop for ListeningPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `plexus ARGS` in the workspace (as [`Workspace::run`] does, stdin empty, and without the
/// caller's `COLUMNS`, so tables have their natural width), failing the test with whatever it
/// printed when it has not finished within `limit` (then it is killed).
pub fn run_bounded(ws: &Workspace, args: &[&str], limit: Duration) -> Run {
    let mut child = ws
        .command(ws.path(), args)
        .env_remove("COLUMNS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read on threads of their own, so that a full pipe cannot stall the run; collected with a
    // bound too, as a server that plexus started might hold them open after plexus was killed.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            let _ = sender.send(String::from_utf8_lossy(&bytes).into_owned());
        });
        receiver
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let collect = |receiver: mpsc::Receiver<String>| {
        receiver
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| "(still open 10 s after plexus exited)".to_owned())
    };
    let run = Run {
        code: status.and_then(|status| status.code()),
        stdout: collect(stdout),
        stderr: collect(stderr),
    };
    assert!(
        status.is_some(),
        "plexus {args:?} did not finish within {limit:?}; it was killed: {run:?}"
    );
    run
}
