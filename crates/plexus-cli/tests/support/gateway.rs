//! `plexus serve --http` for the tests: started on a free port, waited for, and killed when
//! dropped (a failing test leaves none behind).

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Workspace;

/// A `plexus serve --http` process, killed when dropped.
pub struct HttpGateway(pub std::process::Child);

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `plexus serve --http HOST:PORT` of `ws` on a free port (of `host` when it is an
/// address, else of 127.0.0.1), with `env` and the `extra` arguments, and returns it with its
/// `HOST:PORT` once it accepts connections (within 30 s; it ending first fails the test with its
/// stderr).
pub fn serve_http(ws: &Workspace, host: &str, env: &[(&str, &str)], extra: &[&str]) -> (HttpGateway, String) {
    let bind: IpAddr = host.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let port = TcpListener::bind((bind, 0)).unwrap().local_addr().unwrap().port();
    let address = format!("{host}:{port}");
    let mut arguments = vec!["serve", "--http", &address];
    arguments.extend_from_slice(extra);
    let mut command = ws.command(ws.path(), &arguments);
    command
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = HttpGateway(command.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect((bind, port)).is_err() {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut stderr = String::new();
            child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
            panic!("plexus serve --http {address} ended ({status}): {stderr}");
        }
        assert!(Instant::now() < deadline, "the gateway did not listen on {address}");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, address)
}

/// `plexus serve` over stdio, driven line by line.
pub struct RawGateway {
    /// The gateway process.
    pub child: std::process::Child,
    /// Its stdin.
    pub stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl RawGateway {
    /// `plexus serve` of `ws`.
    pub fn start(ws: &Workspace) -> RawGateway {
        RawGateway::start_with(ws, &[])
    }

    /// `plexus serve` of `ws` with the `extra` arguments.
    pub fn start_with(ws: &Workspace, extra: &[&str]) -> RawGateway {
        RawGateway::start_logging(ws, extra, std::process::Stdio::null())
    }

    /// `plexus serve` of `ws` with the `extra` arguments, its stderr going to `stderr`.
    pub fn start_logging(ws: &Workspace, extra: &[&str], stderr: std::process::Stdio) -> RawGateway {
        let mut arguments = vec!["serve"];
        arguments.extend_from_slice(extra);
        let mut child = ws
            .command(ws.path(), &arguments)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(stdout) {
                let Ok(line) = line else { return };
                if sender.send(serde_json::from_str(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        RawGateway { child, stdin, lines }
    }

    /// Sends `message` as one line.
    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Sends `line` as it is written.
    pub fn send_line(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
    }

    /// The next message that `matches` (others are skipped), within 30 s.
    pub fn next(&self, matches: impl Fn(&Value) -> bool) -> Value {
        self.next_within(Duration::from_secs(30), matches)
    }

    /// The next message that `matches` (others are skipped), within `limit`.
    pub fn next_within(&self, limit: Duration, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.lines.recv_timeout(left).expect("the gateway answered in time");
            if matches(&message) {
                return message;
            }
        }
    }
}

/// `plexus serve` of `ws` (with the `extra` arguments) as a stdio server entry, its environment
/// pointed into `ws`.
pub fn stdio_entry(ws: &Workspace, extra: &[&str]) -> plexus::config::ServerConfig {
    let command = ws.command(ws.path(), &[]);
    let env: serde_json::Map<String, Value> = command
        .get_envs()
        .filter_map(|(key, value)| Some((key.to_str()?.to_owned(), serde_json::json!(value?.to_str()?))))
        .collect();
    let mut args = vec!["serve"];
    args.extend_from_slice(extra);
    let entry = serde_json::json!({"command": super::PLEXUS, "args": args, "env": env, "cwd": ws.path()});
    plexus::config::ServerConfig::from_json(&entry).unwrap().0
}

/// A client of the `initialize` era of the gateway that `config` starts (timeouts of 60 s),
/// whose requests from the gateway `handler` answers.
pub async fn client_of(
    config: &plexus::config::ServerConfig,
    handler: Option<std::sync::Arc<dyn plexus::client::ClientHandler>>,
) -> plexus::Client {
    client_in(config, handler, plexus::client::EraChoice::Initialize).await
}

/// A client of the gateway that `config` starts (timeouts of 60 s) speaking the era `era`
/// chooses, whose requests from the gateway `handler` answers.
pub async fn client_in(
    config: &plexus::config::ServerConfig,
    handler: Option<std::sync::Arc<dyn plexus::client::ClientHandler>>,
    era: plexus::client::EraChoice,
) -> plexus::Client {
    let mut options = plexus::ClientOptions::new("gateway");
    options.era = era;
    options.request_timeout = Duration::from_secs(60);
    options.tool_timeout = Duration::from_secs(60);
    if let Some(handler) = handler {
        options = options.handler(handler);
    }
    plexus::DefaultConnector::new()
        .connect("gateway", config, options)
        .await
        .unwrap()
}

/// A workspace whose user scope holds `servers`.
pub fn workspace(servers: &Value) -> Workspace {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), servers);
    ws
}

/// The names of `tools`.
pub fn names(tools: &[plexus::protocol::Tool]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_str()).collect()
}

/// The object `value` as call arguments.
#[allow(clippy::needless_pass_by_value)] // called with json!(…) literals.
pub fn args(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

/// A client that answers every form with its own `name`, recording the questions it was asked.
pub struct Answerer {
    name: &'static str,
    asked: std::sync::Mutex<Vec<String>>,
}

impl Answerer {
    /// A client that answers with `name`, asked nothing yet.
    pub fn new(name: &'static str) -> std::sync::Arc<Answerer> {
        std::sync::Arc::new(Answerer {
            name,
            asked: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The questions asked so far.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl plexus::client::ClientHandler for Answerer {
    fn capabilities(&self) -> plexus::protocol::ClientCapabilities {
        super::elicitation_capabilities(false)
    }

    async fn elicit(
        &self,
        params: plexus::protocol::ElicitRequestParams,
        _context: plexus::client::ServerRequestContext,
    ) -> Result<plexus::protocol::ElicitResult, plexus::jsonrpc::ErrorObject> {
        let question = serde_json::to_value(&params).unwrap()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.asked.lock().unwrap().push(question);
        let answer = std::collections::BTreeMap::from([(
            "name".to_owned(),
            plexus::protocol::ElicitValue::String(self.name.to_owned()),
        )]);
        Ok(plexus::protocol::ElicitResult::accept(Some(answer)))
    }
}
