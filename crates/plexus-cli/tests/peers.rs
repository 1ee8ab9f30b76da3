//! Every server-facing command of the CLI against the npm reference server
//! (`@modelcontextprotocol/server-everything`, pinned by `cargo xtask peers`, which installs it
//! and runs these tests with `PLEXUS_PEERS_DIR` set) over stdio and Streamable HTTP on 127.0.0.1.
//! Without `PLEXUS_PEERS_DIR` the tests say so and pass: the peers need the npm registry.

mod support;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::Workspace;

/// The node binary and the everything server's entry, from the peers' manifest.
fn everything() -> Option<(String, String)> {
    let Some(dir) = std::env::var_os("PLEXUS_PEERS_DIR") else {
        eprintln!("skipped: PLEXUS_PEERS_DIR is not set; `cargo xtask peers` installs the peers and runs these tests");
        return None;
    };
    let manifest = PathBuf::from(dir).join("peers.json");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let path = |pointer: &str| manifest.pointer(pointer).and_then(Value::as_str).unwrap().to_owned();
    Some((path("/node"), path("/everything/entry")))
}

/// The everything server over Streamable HTTP on a port of its own, ended when dropped.
struct HttpPeer {
    child: Child,
    port: u16,
}

impl HttpPeer {
    fn start(node: &str, entry: &str) -> HttpPeer {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(node)
            .args([entry, "streamableHttp"])
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut peer = HttpPeer { child, port };
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err() {
            assert!(peer.child.try_wait().unwrap().is_none(), "the everything server exited");
            assert!(
                Instant::now() < deadline,
                "the everything server did not listen on {address}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        peer
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs every command against the server `server` names (`--stdio …` or `--url …`).
fn exercise(server: &[&str]) {
    let ws = Workspace::new();
    let run = |args: &[&str]| {
        let out = ws.run(&[args, server, &["--as", "everything"]].concat());
        assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
        out
    };
    let tools = run(&["--json", "tools"]).json();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    assert_eq!(
        run(&["call", "mcp__everything__get-sum", "--arg", "a=2", "--arg", "b=3"]).stdout,
        "The sum of 2 and 3 is 5.\n"
    );
    let image = run(&["call", "mcp__everything__get-tiny-image"]).stdout;
    let saved = image
        .lines()
        .find_map(|line| line.strip_prefix("[image: image/png, "))
        .and_then(|rest| rest.split_once("saved to "))
        .map_or_else(|| panic!("{image}"), |(_, path)| path.trim_end_matches(']').to_owned());
    assert_eq!(&std::fs::read(&saved).unwrap()[..4], b"\x89PNG");
    // Progress reports arrive as lines when stderr is not a terminal.
    let long = run(&[
        "call",
        "mcp__everything__trigger-long-running-operation",
        "--arg",
        "duration=1",
        "--arg",
        "steps=2",
    ]);
    assert!(
        long.stderr
            .contains("mcp__everything__trigger-long-running-operation: 1/2"),
        "{long:?}"
    );
    assert_eq!(
        long.stdout,
        "Long running operation completed. Duration: 1 seconds, Steps: 2.\n"
    );

    let resources = run(&["--json", "resources"]).json();
    let document = resources
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| {
            r["uri"]
                .as_str()
                .filter(|uri| uri.starts_with("demo://resource/static/document/"))
        })
        .unwrap_or_else(|| panic!("{resources}"))
        .to_owned();
    assert!(!run(&["read", "everything", &document]).stdout.trim().is_empty());
    let templates = run(&["--json", "templates"]).json();
    assert!(
        templates
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"] == "demo://resource/dynamic/text/{resourceId}"),
        "{templates}"
    );
    let prompts = run(&["--json", "prompts"]).json();
    assert!(
        prompts
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "mcp__everything__args-prompt")
    );
    assert_eq!(
        run(&["prompt", "mcp__everything__args-prompt", "city=Paris", "state=Texas"]).stdout,
        "user: What's weather in Paris, Texas?\n"
    );
    assert!(run(&["ping"]).stdout.starts_with("everything: "));
}

#[test]
fn every_command_against_the_everything_server_over_stdio() {
    let Some((node, entry)) = everything() else { return };
    exercise(&["--stdio", &format!("'{node}' '{entry}' stdio")]);
}

#[test]
fn every_command_against_the_everything_server_over_http() {
    let Some((node, entry)) = everything() else { return };
    let peer = HttpPeer::start(&node, &entry);
    exercise(&["--url", &format!("http://127.0.0.1:{}/mcp", peer.port)]);
}
