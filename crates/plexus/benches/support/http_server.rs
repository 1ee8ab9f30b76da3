//! The test server's Streamable HTTP mode as a child process on 127.0.0.1, killed on drop.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `plexus-testserver http ARGS…`, listening.
pub(crate) struct HttpServer {
    child: Child,
    /// The MCP endpoint's URL, as the server printed it.
    pub(crate) url: String,
}

impl HttpServer {
    /// Starts `server http ARGS…` and reads the URL from its first line.
    pub(crate) fn start(server: &str, args: &[&str]) -> HttpServer {
        let mut child = Command::new(server)
            .arg("http")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the test server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the test server's first line is not its URL: {line:?}"))
            .to_owned();
        HttpServer { child, url }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
