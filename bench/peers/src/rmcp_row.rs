//! The rmcp rows: the official Rust SDK's client (rmcp, pinned), `initialize` era, as its
//! documentation shows it: `().serve(transport)`, then `call_tool`.
//!
//! - `rmcp`: its defaults: tokio's multi-thread runtime; over HTTP
//!   `StreamableHttpClientTransport::from_uri` (a reqwest client with idle pooling off, at most
//!   16 POSTs at once).
//! - `rmcp tuned`, the best configuration we found for it: a current-thread runtime (no task
//!   hops between threads), and over HTTP its own reqwest client with `TCP_NODELAY` and an idle
//!   pool as big as the calls in flight, and the transport's `max_concurrent_requests` raised to
//!   the calls in flight (the server answers JSON, which rmcp reads without an SSE stream).

use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, ServiceExt as _};
use serde_json::json;

use crate::BenchError;
use crate::role::{Counts, Figures, Programs, Transport};

/// A connected rmcp client with the default (no-op) handler.
type RmcpClient = RunningService<RoleClient, ()>;

fn rmcp_error(what: &str) -> impl FnOnce(String) -> BenchError + '_ {
    move |e| BenchError::Rmcp(format!("{what}: {e}"))
}

/// Spawns the test server over stdio and initializes.
pub(crate) async fn connect_stdio(testserver: &str) -> Result<RmcpClient, BenchError> {
    let mut command = tokio::process::Command::new(testserver);
    command.arg("stdio");
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| rmcp_error("spawning the test server")(e.to_string()))?;
    ().serve(transport)
        .await
        .map_err(|e| rmcp_error("initialize over stdio")(e.to_string()))
}

/// Connects over Streamable HTTP, by default or tuned for `in_flight` calls at once.
async fn connect_http(url: &str, tuned: bool, in_flight: usize) -> Result<RmcpClient, BenchError> {
    let transport = if tuned {
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(in_flight)
            .build()
            .map_err(|e| rmcp_error("building the reqwest client")(e.to_string()))?;
        let config = StreamableHttpClientTransportConfig::with_uri(url).max_concurrent_requests(in_flight);
        StreamableHttpClientTransport::with_client(client, config)
    } else {
        StreamableHttpClientTransport::from_uri(url)
    };
    ().serve(transport)
        .await
        .map_err(|e| rmcp_error("initialize over HTTP")(e.to_string()))
}

async fn echo(peer: &Peer<RoleClient>, arguments: &JsonObject) -> Result<(), BenchError> {
    // rmcp's call takes its arguments by value: a copy per call, as its users make.
    let params = CallToolRequestParams::new("echo").with_arguments(arguments.clone());
    let result = peer
        .call_tool(params)
        .await
        .map_err(|e| rmcp_error("tools/call echo")(e.to_string()))?;
    if result.is_error == Some(true) {
        return Err(BenchError::Rmcp(format!("echo answered an error: {result:?}")));
    }
    Ok(())
}

/// The `Calls` task of rmcp (see [`crate::role::Task::Calls`]), on the runtime this runs on.
pub(crate) async fn calls(
    programs: &Programs,
    transport: Transport,
    tuned: bool,
    counts: Counts,
) -> Result<Figures, BenchError> {
    let started = Instant::now();
    let client = match transport {
        Transport::Stdio => connect_stdio(&programs.testserver).await?,
        Transport::Http => connect_http(crate::need_url(programs)?, tuned, counts.in_flight).await?,
    };
    let tools = client
        .list_tools(None)
        .await
        .map_err(|e| rmcp_error("tools/list")(e.to_string()))?;
    if tools.tools.iter().all(|tool| tool.name != "echo") {
        return Err(BenchError::Rmcp("the test server's tools/list has no echo".to_owned()));
    }
    let connect = started.elapsed().as_secs_f64() * 1e3;
    let peer = client.peer().clone();
    let arguments = Arc::new(json!({"text": "hello"}).as_object().cloned().unwrap_or_default());
    let figures = crate::drive::drive(counts, connect, move || {
        let (peer, arguments) = (peer.clone(), Arc::clone(&arguments));
        async move { echo(&peer, &arguments).await }
    })
    .await?;
    client
        .cancel()
        .await
        .map_err(|e| rmcp_error("closing the client")(e.to_string()))?;
    Ok(figures)
}

/// The `Idle` task of rmcp: `connections` stdio clients, initialized and idle.
pub(crate) async fn idle(programs: &Programs, connections: usize) -> Result<Figures, BenchError> {
    // One connection first, so that what the first one costs (the client's statics, the
    // runtime's growth) is not spread over the others: the figure is each further one's cost.
    let mut clients = vec![connect_stdio(&programs.testserver).await?];
    let before = crate::support::memory::rss_kib();
    for _ in 0..connections {
        clients.push(connect_stdio(&programs.testserver).await?);
    }
    let grown = crate::support::memory::rss_kib().saturating_sub(before);
    for client in clients {
        client
            .cancel()
            .await
            .map_err(|e| rmcp_error("closing a client")(e.to_string()))?;
    }
    Ok(Figures::from([(
        "idle_kib".to_owned(),
        grown as f64 / connections as f64,
    )]))
}
