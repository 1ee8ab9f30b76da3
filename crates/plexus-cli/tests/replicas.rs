//! Two `plexus serve --http` replicas, sharing one home and one config, behind a real load
//! balancer: HAProxy from Debian's packages (unpacked by `cargo xtask peers`, which runs this
//! test with `PLEXUS_PEERS_DIR` set; without it the test says so and passes). HAProxy balances
//! round-robin and keeps a stick table on `Mcp-Session-Id`, and logs which replica served each
//! request. A client of the stateless era needs no affinity: its calls are spread over both
//! replicas. A client of the `initialize` era keeps its session: every request that carries the
//! session's id reaches the replica that opened it.

mod support;

use std::io::{BufRead as _, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use plexus::client::{ClientOptions, EraChoice};
use plexus::config::ServerConfig;
use plexus::protocol::Era;
use serde_json::json;
use support::gateway::{HttpGateway, args, serve_http, workspace};
use support::peers::{manifest, path};
use support::{Workspace, demo};

/// HAProxy in front of the replicas, ended when dropped; its log lines
/// (`REPLICA|MCP-METHOD|MCP-SESSION-ID`, one per request) arrive on `log`.
struct Balancer {
    child: Child,
    url: String,
    log: mpsc::Receiver<String>,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Balancer {
    /// Starts HAProxy (binary and libraries from the peers' manifest) on a free port, in front
    /// of `replicas` (`HOST:PORT` each).
    fn start(ws: &Workspace, manifest: &serde_json::Value, replicas: &[String]) -> Balancer {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // Each server is named by its address and `http-send-name-header Host` sends that name
        // as the `Host`: a gateway on loopback answers only requests that name it (against DNS
        // rebinding).
        let servers: Vec<String> = replicas
            .iter()
            .map(|address| format!("    server {address} {address}"))
            .collect();
        let servers = servers.join("\n");
        let config = format!(
            "global
    log stdout format raw local0
    maxconn 256
defaults
    mode http
    log global
    option dontlognull
    log-format \"%s|%[capture.req.hdr(0)]|%[capture.req.hdr(1)]\"
    timeout connect 5s
    timeout client 120s
    timeout server 120s
frontend mcp
    bind 127.0.0.1:{port}
    http-request capture req.hdr(mcp-method) len 64
    http-request capture req.hdr(mcp-session-id) len 128
    default_backend replicas
backend replicas
    balance roundrobin
    http-send-name-header Host
    stick-table type string len 128 size 10k expire 30m
    stick store-response res.hdr(mcp-session-id)
    stick match req.hdr(mcp-session-id)
{servers}
"
        );
        let file = ws.write("haproxy.cfg", config);
        let mut child = Command::new(path(manifest, "/haproxy/binary"))
            .arg("-f")
            .arg(&file)
            .arg("-db")
            .env("LD_LIBRARY_PATH", path(manifest, "/haproxy/libraries"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, log) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("haproxy ended ({status})");
            }
            assert!(Instant::now() < deadline, "haproxy did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Balancer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        }
    }

    /// The requests served so far, in the order they ended.
    fn served(&self) -> Vec<Served> {
        // HAProxy writes a request's line when it ends; give the last ones a moment.
        std::thread::sleep(Duration::from_millis(300));
        self.log
            .try_iter()
            .filter_map(|line| {
                let mut fields = line.split('|').map(|field| match field {
                    "" | "-" => String::new(),
                    field => field.to_owned(),
                });
                Some(Served {
                    replica: fields.next()?,
                    method: fields.next()?,
                    session: fields.next()?,
                })
            })
            .collect()
    }
}

/// One request as HAProxy logged it.
#[derive(Debug)]
struct Served {
    /// The replica's address.
    replica: String,
    /// Its `Mcp-Method` header (the stateless era's; empty when it had none).
    method: String,
    /// Its `Mcp-Session-Id` header (the `initialize` era's; empty when it had none).
    session: String,
}

/// Two replicas of one workspace's gateway, and HAProxy in front of them.
fn replicas(manifest: &serde_json::Value) -> (Workspace, [HttpGateway; 2], [String; 2], Balancer) {
    let ws = workspace(&json!({"demo": demo(&[])}));
    let (first, first_address) = serve_http(&ws, "127.0.0.1", &[], &[]);
    let (second, second_address) = serve_http(&ws, "127.0.0.1", &[], &[]);
    let addresses = [first_address, second_address];
    let balancer = Balancer::start(&ws, manifest, &addresses);
    (ws, [first, second], addresses, balancer)
}

/// Connects to the balancer's URL in `era`.
async fn client(url: &str, era: EraChoice) -> plexus::Client {
    let config = ServerConfig::from_json(&json!({"type": "http", "url": url})).unwrap().0;
    let mut options = ClientOptions::new("replicas");
    options.era = era;
    plexus::connect("replicas", &config, options).await.unwrap()
}

/// Ten calls of `mcp__demo__add`, each answered right.
async fn add_ten_times(client: &plexus::Client) {
    for n in 0..10 {
        let sum = client
            .call_tool("mcp__demo__add", args(json!({"a": n, "b": 1})))
            .await
            .unwrap();
        assert_eq!(sum.content[0].as_text(), Some((n + 1).to_string().as_str()), "call {n}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_is_served_by_every_replica() {
    let Some(manifest) = manifest() else { return };
    let (_ws, _replicas, addresses, balancer) = replicas(&manifest);
    let client = client(&balancer.url, EraChoice::default()).await;
    assert_eq!(client.server().protocol_version.era(), Era::Stateless);
    add_ten_times(&client).await;
    let served = balancer.served();
    let calls: Vec<&str> = served
        .iter()
        .filter(|request| request.method == "tools/call")
        .map(|request| request.replica.as_str())
        .collect();
    assert_eq!(calls.len(), 10, "{served:?}");
    // Round-robin takes turns over every request (the client's discover and listen too), so the
    // calls split about evenly; each replica served several of them.
    for address in &addresses {
        let here = calls.iter().filter(|replica| **replica == address).count();
        assert!(here >= 3, "{address} served {here} of the calls: {served:?}");
    }
    assert!(served.iter().all(|request| request.session.is_empty()), "{served:?}");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_era_session_sticks_to_its_replica() {
    let Some(manifest) = manifest() else { return };
    let (_ws, _replicas, _addresses, balancer) = replicas(&manifest);
    let client = client(&balancer.url, EraChoice::Initialize).await;
    assert_eq!(client.server().protocol_version.era(), Era::Initialize);
    add_ten_times(&client).await;
    let served = balancer.served();
    let in_session: Vec<&Served> = served.iter().filter(|request| !request.session.is_empty()).collect();
    // The ten calls, `notifications/initialized` and the listing the connection makes at least.
    assert!(in_session.len() >= 11, "{served:?}");
    let replica = &in_session[0].replica;
    assert!(
        in_session.iter().all(|request| request.replica == *replica),
        "every request of the session reaches {replica}: {served:?}"
    );
    client.close().await.unwrap();
}
