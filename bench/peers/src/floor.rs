//! The floor row: what a client cannot beat, on the same server. Over stdio the blocking line
//! client of the project's benches (`support::raw`); over Streamable HTTP their minimal
//! keep-alive HTTP/1.1 client on raw sockets (`support::raw_http`), one connection per call in
//! flight, on a current-thread runtime.

use std::time::Instant;

use crate::role::{Counts, Era, Figures, Programs, Transport};
use crate::support::raw::{
    LEGACY_ECHO, LEGACY_INITIALIZED, LEGACY_OPENING, RawClient, RawRound, STATELESS_ECHO, STATELESS_OPENING,
};
use crate::support::raw_http::{self, RawConnection, Wire};

/// `tools/list` in the `initialize` era (its id is added).
const LEGACY_LIST: &str = r#""method":"tools/list","params":{}"#;
/// `tools/list` in the stateless era, with its envelope (its id is added).
const STATELESS_LIST: &str = r#""method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"0"}}}"#;

/// The `Calls` task of the floor (see [`crate::role::Task::Calls`]).
pub(crate) fn calls(
    programs: &Programs,
    transport: Transport,
    era: Era,
    counts: Counts,
) -> Result<Figures, crate::BenchError> {
    let (connect, round) = match transport {
        Transport::Stdio => stdio(&programs.testserver, era, counts),
        Transport::Http => {
            let url = crate::need_url(programs)?;
            let runtime = crate::runtime(crate::role::Runtime::CurrentThread)?;
            runtime.block_on(http(url, era, counts))
        }
    };
    Ok(crate::call_figures(
        connect,
        round.p50,
        round.p99,
        round.cpu,
        round.throughput,
    ))
}

/// Opens a stdio session (spawn, handshake or discover, `tools/list`): the client and how long
/// that took (ms).
pub(crate) fn open_stdio(server: &str, era: Era) -> (RawClient, f64) {
    let started = Instant::now();
    let (opening, echo, list): (&[&str], _, _) = match era {
        Era::Initialize => (&[LEGACY_OPENING, LEGACY_INITIALIZED], LEGACY_ECHO, LEGACY_LIST),
        Era::Stateless => (&[STATELESS_OPENING], STATELESS_ECHO, STATELESS_LIST),
    };
    let mut client = RawClient::start(server, &[], opening, echo);
    client.request(list);
    (client, started.elapsed().as_secs_f64() * 1e3)
}

fn stdio(server: &str, era: Era, counts: Counts) -> (f64, RawRound) {
    let (mut client, connect) = open_stdio(server, era);
    (
        connect,
        client.round(counts.warmup, counts.calls, counts.in_flight, counts.calls),
    )
}

async fn http(url: &str, era: Era, counts: Counts) -> (f64, RawRound) {
    let started = Instant::now();
    let wire = match era {
        Era::Initialize => {
            let session = raw_http::raw_session(url).await;
            let mut connection = RawConnection::open(url, Some(session.clone())).await;
            connection.request("tools/list", "{}", None).await;
            Wire::Session(session)
        }
        Era::Stateless => {
            let mut connection = RawConnection::open_for(url, &Wire::Stateless).await;
            connection.request("server/discover", "{}", None).await;
            connection.request("tools/list", "{}", None).await;
            Wire::Stateless
        }
    };
    let connect = started.elapsed().as_secs_f64() * 1e3;
    let round = raw_http::floor_round(url, &wire, counts.warmup, counts.calls, counts.in_flight, counts.calls).await;
    (connect, round)
}

/// The `Idle` task of the floor: `connections` stdio sessions opened and left idle.
pub(crate) fn idle(programs: &Programs, connections: usize) -> Figures {
    // One session first, as the other rows' idle workloads do: the figure is each further one's cost.
    let first = open_stdio(&programs.testserver, Era::Initialize).0;
    let before = crate::support::memory::rss_kib();
    let clients: Vec<RawClient> = (0..connections)
        .map(|_| open_stdio(&programs.testserver, Era::Initialize).0)
        .collect();
    let grown = crate::support::memory::rss_kib().saturating_sub(before);
    drop(clients);
    drop(first);
    Figures::from([("idle_kib".to_owned(), grown as f64 / connections as f64)])
}
