//! The connection pool with many stdio servers: connecting 50 through the sliding window against
//! a floor (one server's connect time, measured in the same run), one tools listing over 100
//! servers × 100 tools served from the cache, and the client's memory per idle connection.
//!
//! Run through `cargo xtask bench`, which builds the test server and passes its path in
//! `PLEXUS_TESTSERVER_BIN`. Every figure is the median of several rounds.
#![allow(missing_docs)]
// Statistics over counts far below 2^52.
#![allow(clippy::cast_precision_loss)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use plexus::config::ServerConfig;
use plexus::pool::{Pool, PoolSettings, ServerSpec};
use plexus::{ClientOptions, DefaultConnector};
use support::{median, memory, pin_from_env, server_path, verdict};

mod support;

const ROUNDS: usize = 5;
const WINDOW_SERVERS: usize = 50;
const CACHE_SERVERS: usize = 100;
const TOOLS_PER_SERVER: &str = "100";
const LISTINGS: usize = 200;

fn spec(server: &str, name: &str, args: &[&str]) -> ServerSpec {
    let mut all = vec!["stdio"];
    all.extend_from_slice(args);
    let (config, _) = ServerConfig::from_json(&serde_json::json!({"command": server, "args": all})).unwrap();
    ServerSpec::new(name, config, None)
}

fn pool(settings: PoolSettings) -> Pool {
    Pool::new(Arc::new(DefaultConnector::new()), settings)
}

/// The floor: one server connected (spawn + initialize) by the same connector, no pool.
async fn one_connect(server: &str) -> Duration {
    let connector = DefaultConnector::new();
    let spec = spec(server, "one", &[]);
    let started = Instant::now();
    let client = connector
        .connect("one", &spec.config, ClientOptions::new("one"))
        .await
        .unwrap();
    let took = started.elapsed();
    client.close().await.unwrap();
    took
}

/// A second reference: the same 50 connects through a bare semaphore of 3 (no pool), which shows
/// what three connects at once cost on this machine's CPUs.
async fn bare_window_round(server: &str) -> Duration {
    let connector = Arc::new(DefaultConnector::new());
    let window = Arc::new(tokio::sync::Semaphore::new(3));
    let started = Instant::now();
    let tasks: Vec<_> = (0..WINDOW_SERVERS)
        .map(|n| {
            let (connector, window, spec) = (
                Arc::clone(&connector),
                Arc::clone(&window),
                spec(server, &format!("b{n}"), &[]),
            );
            tokio::spawn(async move {
                let _permit = window.acquire().await.unwrap();
                connector
                    .connect(&spec.name, &spec.config, ClientOptions::new(&spec.name))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(tasks.len());
    for task in tasks {
        clients.push(task.await.unwrap());
    }
    let took = started.elapsed();
    for client in clients {
        client.close().await.unwrap();
    }
    took
}

/// 50 servers through the pool (window 3): set, then settled.
async fn window_round(server: &str) -> Duration {
    let pool = pool(PoolSettings::default());
    let specs: Vec<ServerSpec> = (0..WINDOW_SERVERS)
        .map(|n| spec(server, &format!("s{n}"), &[]))
        .collect();
    let started = Instant::now();
    pool.set_servers(specs).await;
    let ready = pool.settle(Duration::from_secs(120)).await;
    let took = started.elapsed();
    assert_eq!(ready.connected.len(), WINDOW_SERVERS, "{ready:?}");
    pool.shutdown().await;
    took
}

fn main() {
    let pinning = pin_from_env();
    let server = server_path();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "pool, {pinning}: {WINDOW_SERVERS} stdio servers through the window of 3; {CACHE_SERVERS} servers × {TOOLS_PER_SERVER} tools from the cache; median of {ROUNDS} rounds"
    );

    // Connecting through the window, against ceil(50 / 3) × one connect.
    let mut floor = Vec::new();
    let mut bare = Vec::new();
    let mut windowed = Vec::new();
    for _ in 0..ROUNDS {
        floor.push(runtime.block_on(one_connect(&server)).as_secs_f64() * 1e3);
        bare.push(runtime.block_on(bare_window_round(&server)).as_secs_f64() * 1e3);
        windowed.push(runtime.block_on(window_round(&server)).as_secs_f64() * 1e3);
    }
    let one = median(floor);
    let batches = WINDOW_SERVERS.div_ceil(3) as f64;
    let bare = median(bare);
    let all = median(windowed);
    let ratio = all / (batches * one);
    println!(
        "floor: one connect {one:.2} ms; ceil({WINDOW_SERVERS}/3) × it = {:.1} ms",
        batches * one
    );
    println!(
        "{WINDOW_SERVERS} connects through a bare semaphore of 3 (no pool): {bare:.1} ms ({:.2}× the floor)",
        bare / (batches * one)
    );
    println!(
        "{WINDOW_SERVERS} servers through the pool: {all:.1} ms ({ratio:.2}× the floor, {:.2}× the bare window)",
        all / bare
    );

    // Memory per idle connection and the cached listing, over 100 servers.
    let pool = pool(PoolSettings {
        list_cache_servers: CACHE_SERVERS,
        ..PoolSettings::default()
    });
    let before = memory::rss_kib() * 1024;
    let specs: Vec<ServerSpec> = (0..CACHE_SERVERS)
        .map(|n| spec(&server, &format!("c{n}"), &["--tools", TOOLS_PER_SERVER]))
        .collect();
    let names: Vec<String> = specs.iter().map(|spec| spec.name.clone()).collect();
    let ready = runtime.block_on(async {
        pool.set_servers(specs).await;
        pool.settle(Duration::from_secs(300)).await
    });
    assert_eq!(ready.connected.len(), CACHE_SERVERS, "{ready:?}");
    let idle = (memory::rss_kib() * 1024).saturating_sub(before);
    let per_connection = idle / CACHE_SERVERS as u64;
    let tools = runtime.block_on(async {
        let mut total = 0;
        for name in &names {
            total += pool.tools(name).await.unwrap().len();
        }
        total
    });
    let mut listings = Vec::new();
    for _ in 0..ROUNDS {
        let mut round = Vec::with_capacity(LISTINGS);
        for _ in 0..LISTINGS {
            let started = Instant::now();
            let listed = runtime.block_on(async {
                let mut total = 0;
                for name in &names {
                    total += pool.tools(name).await.unwrap().len();
                }
                total
            });
            round.push(started.elapsed().as_secs_f64() * 1e3);
            assert_eq!(listed, tools);
        }
        listings.push(median(round));
    }
    let listing = median(listings);
    println!(
        "one tools listing over {CACHE_SERVERS} servers ({tools} tools) from the cache: {:.1} µs",
        listing * 1e3
    );
    println!(
        "client memory per idle connection ({CACHE_SERVERS} stdio connections, lists cached): {:.1} KiB",
        per_connection as f64 / 1024.0
    );
    println!(
        "targets: {WINDOW_SERVERS} servers within 1.10× ceil({WINDOW_SERVERS}/3) × one connect: {ratio:.2}× {}; cached listing ≤ 1 ms: {:.3} ms {}",
        verdict(ratio <= 1.10),
        listing,
        verdict(listing <= 1.0)
    );
    runtime.block_on(pool.shutdown());
}
