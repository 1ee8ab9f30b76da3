//! What negotiating the protocol era costs at connect, against the test server binary over stdio
//! with `"protocolVersion": "auto"`: a server of the `initialize` era (one that answers the
//! probe with an error, one that stays silent) and a stateless one, each with a cold verdict
//! cache (a fresh plexus home: the probe runs) and a warm one (the verdict of an earlier
//! connect). The per-call figures of the two eras are in the stdio and http benches.
//!
//! Run through `cargo xtask bench`, which builds the test server and passes its path in
//! `PLEXUS_TESTSERVER_BIN`; `PLEXUS_BENCH_CPU=N` pins the run as in the stdio bench.
#![allow(missing_docs)]
// Statistics over counts far below 2^52, and an index computed from a fraction in [0, 1].
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]

use std::time::Instant;

use plexus::config::ServerConfig;
use plexus::{ClientOptions, DefaultConnector};
use support::{percentile, pin_from_env, server_path};

mod support;

/// Connects per figure of the connect table.
const CONNECTS: usize = 5;

/// The median time of [`CONNECTS`] connects (and closes, not timed) of the stdio entry with
/// `args` and `"protocolVersion": "auto"`, each with a fresh plexus home (`cold`) or with the
/// home of a first, untimed connect (warm).
async fn connect_time(server: &str, args: &[&str], cold: bool) -> f64 {
    let mut entry_args = vec!["stdio"];
    entry_args.extend_from_slice(args);
    let entry = serde_json::json!({"command": server, "args": entry_args, "protocolVersion": "auto"});
    let (config, _) = ServerConfig::from_json(&entry).expect("the entry");
    let warm_home = tempfile::tempdir().unwrap();
    if !cold {
        let connector = DefaultConnector::new().with_home(warm_home.path());
        let client = connector
            .connect("bench", &config, ClientOptions::new("bench"))
            .await
            .unwrap();
        client.close().await.unwrap();
    }
    let mut times = Vec::with_capacity(CONNECTS);
    for _ in 0..CONNECTS {
        let cold_home = tempfile::tempdir().unwrap();
        let home = if cold { cold_home.path() } else { warm_home.path() };
        let connector = DefaultConnector::new().with_home(home);
        let start = Instant::now();
        let client = connector
            .connect("bench", &config, ClientOptions::new("bench"))
            .await
            .unwrap();
        times.push(start.elapsed());
        client.close().await.unwrap();
    }
    times.sort_unstable();
    percentile(&times, 0.5) / 1000.0
}

fn main() {
    let pinning = pin_from_env();
    let server = server_path();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "eras, {pinning}: connect over stdio with \"protocolVersion\": \"auto\" (spawn included), median of {CONNECTS}:"
        );
        let cases: [(&str, &[&str]); 3] = [
            ("initialize-era server, probe answered -32601", &["--era", "legacy"]),
            (
                "initialize-era server, probe unanswered",
                &["--era", "legacy", "--probe-answer", "silence"],
            ),
            ("stateless server", &[]),
        ];
        for (label, args) in cases {
            let cold = connect_time(&server, args, true).await;
            let warm = connect_time(&server, args, false).await;
            println!("  {label:<46} cold verdict cache {cold:>8.2} ms   warm {warm:>8.2} ms");
        }
    });
}
