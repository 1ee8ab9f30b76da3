//! What tests of other crates need around child processes: the test server's binary, and
//! running one of a test binary's own ignored tests in a child process with an environment of
//! its own (for tests of what a client reads from the environment, such as proxies and CA
//! files, which a test must not change in its own process).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The `plexus-testserver` binary beside the running test's executable (a workspace test run builds
/// it; alone, this builds it once).
pub fn testserver_binary() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // target/<profile>/deps/<test> → target/<profile>/plexus-testserver
        let bin = exe.parent().unwrap().parent().unwrap().join("plexus-testserver");
        if !bin.exists() {
            let status = std::process::Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "plexus-testserver",
                    "--bin",
                    "plexus-testserver",
                ])
                .status()
                .unwrap();
            assert!(status.success(), "building the test server failed");
        }
        assert!(bin.exists(), "no test server at {}", bin.display());
        bin
    })
}

/// The proxy variables a client reads (upper and lower case).
pub const PROXY_VARIABLES: [&str; 8] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// Runs the ignored test `name` of the running test binary in a child process, with `remove`
/// unset and then `set` set in its environment, and panics with its output unless it passed.
/// Blocks until the child ends.
pub fn run_ignored_test(name: &str, set: &[(&str, &str)], remove: &[&str]) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = std::process::Command::new(exe);
    command.args([name, "--exact", "--ignored", "--nocapture"]);
    for variable in remove {
        command.env_remove(variable);
    }
    for (key, value) in set {
        command.env(key, value);
    }
    let output = command.output().expect("the child test runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child test {name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
