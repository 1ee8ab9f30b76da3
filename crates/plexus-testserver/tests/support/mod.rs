//! Connecting the real client stack (plexus-stdio + plexus-client) to this server's binary.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part of the support code.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use plexus_client::{Client, ClientError, ClientOptions};
use plexus_stdio::{StdioConfig, StdioTransport};
use serde_json::{Map, Value};

/// The server binary built with this package.
pub const BIN: &str = env!("CARGO_BIN_EXE_plexus-testserver");

/// How long a test waits for something that must happen before it gives up (a hang guard).
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The transport config for `plexus-testserver stdio ARGS`.
pub fn config(args: &[&str]) -> StdioConfig {
    StdioConfig::new(BIN)
        .name("testserver")
        .arg("stdio")
        .args(args.iter().copied())
}

/// Connects to `plexus-testserver stdio ARGS` with the `initialize` handshake (these tests are
/// of that era; the stateless one has its own).
pub async fn connect(args: &[&str]) -> Result<Client, ClientError> {
    connect_with(config(args), handshake_options("testserver")).await
}

/// Options for a session of the `initialize` era (no probe) with a server called `name`.
pub fn handshake_options(name: &str) -> ClientOptions {
    let mut options = ClientOptions::new(name);
    options.era = plexus_client::EraChoice::Initialize;
    options
}

/// Connects with explicit transport and client options.
pub async fn connect_with(config: StdioConfig, options: ClientOptions) -> Result<Client, ClientError> {
    let transport = StdioTransport::spawn(config)?;
    Client::connect(Box::new(transport), options).await
}

/// A JSON object from a `json!` literal, as `Client::call_tool` takes its arguments.
#[allow(clippy::unnecessary_wraps)] // the `Option` is the shape `call_tool` wants
pub fn args(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// The text of the first content block of a result.
pub fn first_text(result: &plexus_protocol::CallToolResult) -> String {
    let block = serde_json::to_value(&result.content[0]).unwrap();
    block["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a text block: {block}"))
        .to_owned()
}

/// A fresh temporary directory.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The events of an event log written so far.
pub fn events(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits (bounded) until an event matching `predicate` is in the log, and returns it.
pub async fn wait_for_event(path: &Path, predicate: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        if let Some(event) = events(path).into_iter().find(|e| predicate(e)) {
            return event;
        }
        assert!(
            start.elapsed() < HANG_GUARD,
            "no matching event within {HANG_GUARD:?}; log: {:?}",
            events(path)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether a process is gone (no such pid, or a zombie waiting for a reaper that is not us).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (bounded) until `pid` is gone.
pub async fn wait_gone(pid: i32) {
    let start = Instant::now();
    while !process_gone(pid) {
        assert!(
            start.elapsed() < HANG_GUARD,
            "process {pid} is still alive after {HANG_GUARD:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads a pid file the server writes (bounded wait).
pub async fn read_pid(path: &PathBuf) -> i32 {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(start.elapsed() < HANG_GUARD, "no pid in {}", path.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
