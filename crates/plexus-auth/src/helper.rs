//! The `headersHelper` provider: a shell command whose standard output, a JSON object of string
//! values, gives the headers of a connection.
//!
//! The command runs through `sh -c` with [`SERVER_NAME_VAR`] and [`SERVER_URL_VAR`] in its
//! environment, its standard input closed, in a process group of its own. It has
//! [`DEFAULT_HELPER_TIMEOUT`] (configurable) to finish; on timeout the whole group is killed with
//! `SIGKILL`, and so are processes it leaves behind when it exits (a helper's background job must
//! not outlive it or hold its pipes open). At most [`MAX_HELPER_OUTPUT`] bytes of standard output
//! are read; the last [`HELPER_STDERR_TAIL`] bytes of standard error are kept for the error
//! message. What it prints is never logged or shown: it is a credential.
//!
//! One [`HeadersHelper`] serves one connection: it runs the command on the first
//! [`headers`](AuthProvider::headers) call and reuses the result for every later request. On the
//! first 401 or 403 it runs the command again and asks the transport to retry
//! ([`AuthDecision::Retry`]; rejections that arrive while it runs retry with its new headers); a
//! helper that gives the same headers again, a later rejection, or a failing helper is
//! [`AuthDecision::Fail`]: running it again would not help, and a login would not either. The
//! headers it gives go over the entry's static `headers` (a name given by both is the helper's;
//! see [`plexus_net::headers::merge`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use plexus_auth::HeadersHelper;
//!
//! let helper = HeadersHelper::new(
//!     "docs",
//!     "https://docs.example.com/mcp",
//!     r#"printf '{"Authorization": "Bearer %s"}' "$PLEXUS_MCP_SERVER_NAME""#,
//! );
//! let headers = helper.run().await.unwrap();
//! assert_eq!(headers, [("Authorization".to_owned(), "Bearer docs".to_owned())]);
//!
//! let failing = HeadersHelper::new("docs", "https://docs.example.com/mcp", "echo 'token expired' >&2; exit 3");
//! assert_eq!(
//!     failing.run().await.unwrap_err().to_string(),
//!     "server \"docs\": the headersHelper failed (exit code 3); its stderr ends with: token expired"
//! );
//! # }
//! ```

use std::fmt;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use plexus_net::headers::{HeaderError, check_header};
use plexus_net::redact::redact_url;
use plexus_transport::{AuthDecision, AuthFailure, AuthHeaders, AuthProvider, BoxFuture, Rejection};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Mutex;

/// How long the helper may run (10 s).
pub const DEFAULT_HELPER_TIMEOUT: Duration = Duration::from_secs(10);

/// The most standard output read from the helper, in bytes (64 KiB); more is an error.
pub const MAX_HELPER_OUTPUT: usize = 64 * 1024;

/// How much of the end of the helper's standard error is kept for errors, in bytes.
pub const HELPER_STDERR_TAIL: usize = 2 * 1024;

/// The environment variable that holds the server's name.
pub const SERVER_NAME_VAR: &str = "PLEXUS_MCP_SERVER_NAME";

/// The environment variable that holds the server's URL.
pub const SERVER_URL_VAR: &str = "PLEXUS_MCP_SERVER_URL";

/// How long the process is given to be reaped after `SIGKILL` before it is left to the runtime.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// Why the headers helper gave no headers. Every message names the server; none shows what the
/// helper printed on standard output (it is a credential), only the end of its standard error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HelperError {
    /// The command is empty or blank.
    #[error("server \"{server}\": the headersHelper command is empty")]
    EmptyCommand {
        /// The server's name.
        server: String,
    },
    /// `sh` could not be started.
    #[error("server \"{server}\": cannot run the headersHelper with sh")]
    Spawn {
        /// The server's name.
        server: String,
        /// What failed.
        source: io::Error,
    },
    /// Reading the helper's output failed.
    #[error("server \"{server}\": reading the output of the headersHelper failed")]
    Read {
        /// The server's name.
        server: String,
        /// What failed.
        source: io::Error,
    },
    /// The helper ran longer than its timeout; its process group was killed.
    #[error(
        "server \"{server}\": the headersHelper did not finish within {} and was killed{}",
        show_duration(*.timeout),
        show_stderr(.stderr)
    )]
    TimedOut {
        /// The server's name.
        server: String,
        /// The timeout.
        timeout: Duration,
        /// The end of its standard error.
        stderr: String,
    },
    /// The helper exited unsuccessfully.
    #[error("server \"{server}\": the headersHelper failed ({status}){}", show_stderr(.stderr))]
    Exited {
        /// The server's name.
        server: String,
        /// `exit code N` or `killed by signal N`.
        status: String,
        /// The end of its standard error.
        stderr: String,
    },
    /// The server rejected the helper's headers (401 or 403), and running the helper again did
    /// not help.
    #[error(
        "server \"{server}\" rejected the headers from its headersHelper (HTTP {status}), {}",
        match .rerun {
            Rerun::AlreadyDone => "also after the helper was run again",
            Rerun::SameHeaders => "and the helper gave the same headers when run again",
        }
    )]
    Rejected {
        /// The server's name.
        server: String,
        /// 401 or 403.
        status: u16,
        /// What running the helper again gave.
        rerun: Rerun,
    },
    /// The server rejected the helper's headers (401 or 403), and running the helper again
    /// failed.
    #[error(
        "server \"{server}\" rejected the headers from its headersHelper (HTTP {status}), and running the helper \
         again failed"
    )]
    RerunFailed {
        /// The server's name.
        server: String,
        /// 401 or 403.
        status: u16,
        /// Why the second run failed.
        #[source]
        source: Box<HelperError>,
    },
    /// The helper printed more than [`MAX_HELPER_OUTPUT`] bytes.
    #[error("server \"{server}\": the headersHelper printed more than {limit} bytes")]
    TooMuchOutput {
        /// The server's name.
        server: String,
        /// The limit.
        limit: usize,
    },
    /// The output is not JSON.
    #[error("server \"{server}\": the output of the headersHelper is not JSON ({problem}){}", show_stderr(.stderr))]
    NotJson {
        /// The server's name.
        server: String,
        /// What is wrong with the output (the parser's complaint never quotes it). Said in the
        /// parentheses of this error's own text, before the helper's stderr, so it is not its
        /// source.
        problem: OutputProblem,
        /// The end of its standard error.
        stderr: String,
    },
    /// The output is JSON but not an object.
    #[error(
        "server \"{server}\": the headersHelper must print a JSON object of header names and string values, not {found}"
    )]
    NotAnObject {
        /// The server's name.
        server: String,
        /// What it printed instead (`an array`, `a string`, …).
        found: &'static str,
    },
    /// A header's value is not a string.
    #[error(
        "server \"{server}\": the headersHelper gave {found} for the header \"{header}\"; header values must be strings"
    )]
    NotAString {
        /// The server's name.
        server: String,
        /// The header's name.
        header: String,
        /// What it gave instead (`a number`, …).
        found: &'static str,
    },
    /// A header cannot be sent (bad name, control character in the value).
    #[error("server \"{server}\": the headersHelper gave a header that cannot be sent")]
    BadHeader {
        /// The server's name.
        server: String,
        /// Which header and why.
        source: HeaderError,
    },
}

/// `10 s`, `1.5 s`, `250 ms`.
fn show_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// `; its stderr ends with: …`, or nothing when the helper wrote nothing there.
fn show_stderr(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with: {stderr}")
    }
}

/// The `headersHelper` of one server, as an [`AuthProvider`] for one connection (see the
/// [module documentation](self)).
pub struct HeadersHelper {
    server: String,
    url: String,
    command: String,
    timeout: Duration,
    /// Variables of this process's environment the command does not get.
    without_env: Vec<String>,
    state: Mutex<State>,
    /// How many runs succeeded: a rejection that waited while another one ran the helper again
    /// retries with those new headers instead of running it once more.
    runs: AtomicU64,
}

/// What the provider remembers between requests.
#[derive(Default)]
struct State {
    /// The headers of the last successful run.
    headers: Option<AuthHeaders>,
    /// Whether the helper was run again after a rejection.
    reran: bool,
}

impl fmt::Debug for HeadersHelper {
    /// The command and the headers are left out: either may hold a credential.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadersHelper")
            .field("server", &self.server)
            .field("url", &redact_url(&self.url))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HeadersHelper {
    /// The helper `command` of server `server` at `url` (both given to the command in its
    /// environment), with the [`DEFAULT_HELPER_TIMEOUT`].
    pub fn new(server: impl Into<String>, url: impl Into<String>, command: impl Into<String>) -> HeadersHelper {
        HeadersHelper {
            server: server.into(),
            url: url.into(),
            command: command.into(),
            timeout: DEFAULT_HELPER_TIMEOUT,
            without_env: Vec::new(),
            state: Mutex::new(State::default()),
            runs: AtomicU64::new(0),
        }
    }

    /// Keeps the variables `names` of this process's environment from the command (a host's own
    /// secrets, which the command was not given).
    #[must_use]
    pub fn without_env(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> HeadersHelper {
        self.without_env.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets how long the command may run.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> HeadersHelper {
        self.timeout = timeout;
        self
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Runs the command once and returns the headers it gives (no caching; the provider methods
    /// cache).
    pub async fn run(&self) -> Result<AuthHeaders, HelperError> {
        let server = || self.server.clone();
        if self.command.trim().is_empty() {
            return Err(HelperError::EmptyCommand { server: server() });
        }
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command)
            .env(SERVER_NAME_VAR, &self.server)
            .env(SERVER_URL_VAR, &self.url);
        for name in &self.without_env {
            command.env_remove(name);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| HelperError::Spawn {
            server: server(),
            source,
        })?;
        let mut group = ProcessGroup(child.id());
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(HelperError::Read {
                server: server(),
                source: io::Error::other("the helper's pipes were not set up"),
            });
        };
        let mut tail = Tail::default();
        let finished = {
            let work = async {
                let out = read_bounded(stdout);
                let err = async {
                    tail.read_from(stderr).await;
                    Ok(())
                };
                let exit = async {
                    let status = child.wait().await.map_err(Collect::Read);
                    // What the helper left behind goes with it, so that its pipes close.
                    group.kill();
                    status
                };
                tokio::try_join!(out, err, exit)
            };
            tokio::time::timeout(self.timeout, work).await
        };
        let outcome = match finished {
            Ok(Ok((stdout, (), status))) => Ok((stdout, status)),
            Ok(Err(failure)) => Err(Some(failure)),
            Err(_elapsed) => Err(None),
        };
        let (stdout, status) = match outcome {
            Ok(done) => done,
            Err(failure) => {
                group.kill();
                let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
                return Err(match failure {
                    None => HelperError::TimedOut {
                        server: server(),
                        timeout: self.timeout,
                        stderr: tail.text(),
                    },
                    Some(Collect::TooLarge) => HelperError::TooMuchOutput {
                        server: server(),
                        limit: MAX_HELPER_OUTPUT,
                    },
                    Some(Collect::Read(source)) => HelperError::Read {
                        server: server(),
                        source,
                    },
                });
            }
        };
        if !status.success() {
            return Err(HelperError::Exited {
                server: server(),
                status: describe_status(status),
                stderr: tail.text(),
            });
        }
        parse_headers(&self.server, &stdout, &tail)
    }

    /// Runs the command and keeps its headers for the requests that follow.
    async fn refresh(&self, state: &mut State) -> Result<AuthHeaders, HelperError> {
        let headers = self.run().await?;
        state.headers = Some(headers.clone());
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(headers)
    }
}

impl AuthProvider for HeadersHelper {
    fn headers(&self, _method: &str, _url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        Box::pin(async move {
            let mut state = self.state.lock().await;
            if let Some(headers) = &state.headers {
                return Ok(headers.clone());
            }
            self.refresh(&mut state)
                .await
                .map_err(|e| AuthFailure::Failed { cause: Arc::new(e) })
        })
    }

    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        let status = rejection.status;
        let seen = self.runs.load(Ordering::SeqCst);
        Box::pin(async move {
            let mut state = self.state.lock().await;
            if self.runs.load(Ordering::SeqCst) != seen {
                // Rejected together with a request whose challenge already ran the helper again.
                return AuthDecision::Retry;
            }
            let server = &self.server;
            let rejected = |rerun| AuthDecision::Fail {
                cause: Arc::new(HelperError::Rejected {
                    server: server.clone(),
                    status,
                    rerun,
                }),
            };
            if state.reran {
                return rejected(Rerun::AlreadyDone);
            }
            state.reran = true;
            let before = state.headers.clone();
            match self.refresh(&mut state).await {
                Ok(headers) if before.as_ref() == Some(&headers) => rejected(Rerun::SameHeaders),
                Ok(_) => AuthDecision::Retry,
                Err(e) => AuthDecision::Fail {
                    cause: Arc::new(HelperError::RerunFailed {
                        server: server.clone(),
                        status,
                        source: Box::new(e),
                    }),
                },
            }
        })
    }
}

/// Turns the helper's output into headers.
fn parse_headers(server: &str, stdout: &[u8], tail: &Tail) -> Result<AuthHeaders, HelperError> {
    let not_json = |problem| HelperError::NotJson {
        server: server.to_owned(),
        problem,
        stderr: tail.text(),
    };
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err(not_json(OutputProblem::Empty));
    }
    let value: Value = serde_json::from_slice(stdout).map_err(|e| not_json(OutputProblem::Json(e)))?;
    let Value::Object(object) = value else {
        return Err(HelperError::NotAnObject {
            server: server.to_owned(),
            found: plexus_jsonrpc::value_kind(&value),
        });
    };
    let mut headers = Vec::with_capacity(object.len());
    for (name, value) in object {
        let Value::String(value) = value else {
            return Err(HelperError::NotAString {
                server: server.to_owned(),
                header: name,
                found: plexus_jsonrpc::value_kind(&value),
            });
        };
        check_header(&name, &value).map_err(|source| HelperError::BadHeader {
            server: server.to_owned(),
            source,
        })?;
        headers.push((name, value));
    }
    Ok(headers)
}

/// What running a headers helper again gave, when the server kept rejecting its headers
/// ([`HelperError::Rejected`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rerun {
    /// It had been run again already for this rejection's predecessor.
    AlreadyDone,
    /// It gave the same headers.
    SameHeaders,
}

/// What is wrong with a helper's output that is not JSON ([`HelperError::NotJson`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputProblem {
    /// It printed nothing (or only white space).
    #[error("it printed nothing")]
    Empty,
    /// The JSON parser's complaint.
    #[error(transparent)]
    Json(serde_json::Error),
}

/// `exit code 3`, `killed by signal 9`.
fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// Why collecting the helper's output stopped early.
enum Collect {
    TooLarge,
    Read(io::Error),
}

/// Reads standard output to its end, failing as soon as it exceeds [`MAX_HELPER_OUTPUT`].
async fn read_bounded(stdout: impl AsyncRead + Unpin) -> Result<Vec<u8>, Collect> {
    let mut out = Vec::new();
    stdout
        .take(MAX_HELPER_OUTPUT as u64 + 1)
        .read_to_end(&mut out)
        .await
        .map_err(Collect::Read)?;
    if out.len() > MAX_HELPER_OUTPUT {
        return Err(Collect::TooLarge);
    }
    Ok(out)
}

/// The last [`HELPER_STDERR_TAIL`] bytes of a stream.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Tail {
    /// Reads `stream` to its end (or its first error), keeping the tail.
    async fn read_from(&mut self, mut stream: impl AsyncRead + Unpin) {
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    self.bytes.extend_from_slice(&chunk[..n]);
                    if self.bytes.len() > HELPER_STDERR_TAIL {
                        let excess = self.bytes.len() - HELPER_STDERR_TAIL;
                        self.bytes.drain(..excess);
                        self.truncated = true;
                    }
                }
            }
        }
    }

    /// The tail as text, trimmed, starting with `…` when the start was cut.
    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        let text = text.trim();
        if self.truncated && !text.is_empty() {
            format!("…{}", text.trim_start_matches('\u{FFFD}'))
        } else {
            text.to_owned()
        }
    }
}

/// The helper's process group (its id is the shell's pid), killed with `SIGKILL` at most once:
/// after the shell exits (what it left behind), on timeout, or when the run is abandoned (the
/// future dropped).
struct ProcessGroup(Option<u32>);

impl ProcessGroup {
    fn kill(&mut self) {
        let Some(id) = self.0.take() else { return };
        let Ok(id) = i32::try_from(id) else { return };
        // ESRCH (the group is gone) is the common, harmless outcome.
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(id), nix::sys::signal::Signal::SIGKILL);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(show_duration(Duration::from_secs(10)), "10 s");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(show_duration(Duration::from_millis(250)), "250 ms");
    }

    #[test]
    fn the_tail_keeps_the_end() {
        let tail = Tail {
            bytes: b"  end of it\n".to_vec(),
            truncated: true,
        };
        assert_eq!(tail.text(), "…end of it");
        assert_eq!(Tail::default().text(), "");
    }
}
