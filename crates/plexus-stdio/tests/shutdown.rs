//! Shutdown of the whole process group: escalation past servers and grandchildren that ignore
//! signals, cooperative servers, and cleanup on drop.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{HANG_GUARD, assert_group_gone, recv, recv_message, sh, sh_with_default_signals, wait_for_group_gone};
use plexus_stdio::{ShutdownTimings, StdioConfig, StdioTransport};
use plexus_transport::{Transport, TransportError, TransportSender};

/// A leader that logs SIGINT and SIGTERM (with timestamps) instead of dying, and a grandchild that
/// ignores both. Only SIGKILL to the whole group ends them. `$1` is the log file.
const STUBBORN: &str = r#"
log="$1"
trap 'echo "INT $(date +%s.%N)" >> "$log"' INT
trap 'echo "TERM $(date +%s.%N)" >> "$log"' TERM
sh -c 'trap "" INT TERM; echo $$ > "$1.grandchild"; exec sleep 1000' grandchild "$log" &
while [ ! -s "$log.grandchild" ]; do sleep 0.01; done
echo '{"jsonrpc":"2.0","method":"ready"}'
while :; do wait; done
"#;

fn grandchild_pid(log: &Path) -> u32 {
    std::fs::read_to_string(log.with_extension("grandchild"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_escalates_to_sigkill_for_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("signals");
    let transport = StdioTransport::spawn(sh_with_default_signals(STUBBORN, &[log.to_str().unwrap()])).unwrap();
    let pgid = transport.pid();
    let (sender, mut receiver) = transport.into_parts();
    assert_eq!(recv_message(&mut receiver).await.method(), Some("ready"));
    let grandchild = grandchild_pid(&log);
    assert!(Path::new(&format!("/proc/{grandchild}")).exists());
    assert_eq!(
        common::processes_in_group(pgid).len(),
        2,
        "{:?}",
        common::processes_in_group(pgid)
    );

    let start = Instant::now();
    tokio::time::timeout(HANG_GUARD, sender.close()).await.unwrap().unwrap();
    let took = start.elapsed();
    // A hang guard, not a timing assertion: the sequence caps itself at ~600 ms.
    assert!(took < Duration::from_secs(2), "close took {took:?}");

    assert_group_gone(pgid);
    assert!(
        !Path::new(&format!("/proc/{grandchild}")).exists(),
        "the grandchild survived"
    );
    let signals = std::fs::read_to_string(&log).unwrap();
    let order: Vec<&str> = signals.lines().map(|line| line.split(' ').next().unwrap()).collect();
    assert_eq!(order, ["INT", "TERM"], "the log: {signals}");
    let stamps: Vec<f64> = signals
        .lines()
        .map(|line| line.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(stamps[0] <= stamps[1], "INT was logged before TERM: {signals}");

    let closed = recv(&mut receiver).await.unwrap_err();
    assert!(
        matches!(&closed, TransportError::Closed { reason, .. } if reason.to_string() == "the transport was closed by the client"),
        "{closed:?}"
    );
    // Closing again is harmless and immediate.
    tokio::time::timeout(HANG_GUARD, sender.close()).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooperative_server_ends_the_sequence_early() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("signals");
    // Exits on SIGINT; with a 30 s SIGINT grace, only the early stop makes close return soon.
    let script = r#"trap 'echo INT >> "$1"; exit 0' INT; echo '{"jsonrpc":"2.0","method":"ready"}'; while :; do sleep 0.01; done"#;
    let timings = ShutdownTimings {
        interrupt_grace: Duration::from_secs(30),
        ..ShutdownTimings::default()
    };
    let transport =
        StdioTransport::spawn(sh_with_default_signals(script, &[log.to_str().unwrap()]).timings(timings)).unwrap();
    let pgid = transport.pid();
    let (sender, mut receiver) = transport.into_parts();
    assert_eq!(recv_message(&mut receiver).await.method(), Some("ready"));
    let start = Instant::now();
    tokio::time::timeout(HANG_GUARD, sender.close()).await.unwrap().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "close waited for the whole grace: {:?}",
        start.elapsed()
    );
    assert_group_gone(pgid);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "INT\n", "no SIGTERM was needed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_both_halves_without_closing_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("signals");
    let transport = StdioTransport::spawn(sh_with_default_signals(STUBBORN, &[log.to_str().unwrap()])).unwrap();
    let pgid = transport.pid();
    let (sender, mut receiver) = Box::new(transport).split();
    assert_eq!(receiver.recv().await.unwrap().method(), Some("ready"));
    let grandchild = grandchild_pid(&log);
    drop(sender);
    assert!(!common::group_is_gone(pgid), "one half alone keeps the server");
    let start = Instant::now();
    drop(receiver);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "dropping does not wait for the shutdown"
    );
    assert!(
        wait_for_group_gone(pgid),
        "the group outlived the transport: {:?}",
        common::processes_in_group(pgid)
    );
    assert_group_gone(pgid);
    assert!(
        !Path::new(&format!("/proc/{grandchild}")).exists(),
        "the grandchild survived"
    );
}

#[test]
fn dropping_after_the_runtime_is_gone_still_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("signals");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (transport, pgid) = runtime.block_on(async {
        let transport = StdioTransport::spawn(sh_with_default_signals(STUBBORN, &[log.to_str().unwrap()])).unwrap();
        let pgid = transport.pid();
        let (sender, mut receiver) = transport.into_parts();
        assert_eq!(recv_message(&mut receiver).await.method(), Some("ready"));
        ((sender, receiver), pgid)
    });
    drop(runtime);
    drop(transport);
    assert!(
        wait_for_group_gone(pgid),
        "the group outlived the transport: {:?}",
        common::processes_in_group(pgid)
    );
    assert_group_gone(pgid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_unsplit_transport_cleans_up() {
    let transport = StdioTransport::spawn(StdioConfig::new("sleep").arg("1000")).unwrap();
    let pgid = transport.pid();
    assert_eq!(transport.describe(), "sleep 1000");
    drop(transport);
    assert!(wait_for_group_gone(pgid));
    assert_group_gone(pgid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_takes_its_leftovers_with_it() {
    // The leader exits at once, leaving a grandchild that ignores SIGINT and SIGTERM in its group.
    let script = r#"sh -c 'trap "" INT TERM; exec sleep 1000' & echo '{"jsonrpc":"2.0","method":"bye"}'; exit 5"#;
    let transport = StdioTransport::spawn(sh(script, &[])).unwrap();
    let pgid = transport.pid();
    let (_sender, mut receiver) = transport.into_parts();
    assert_eq!(recv_message(&mut receiver).await.method(), Some("bye"));
    let closed = recv(&mut receiver).await.unwrap_err();
    assert!(
        matches!(&closed, TransportError::Closed { reason, .. } if reason.to_string() == "the server exited with status 5"),
        "{closed:?}"
    );
    // Without any close or drop, the leftovers go (the halves are still alive here).
    assert!(
        wait_for_group_gone(pgid),
        "the leftovers survived: {:?}",
        common::processes_in_group(pgid)
    );
    let _ = HANG_GUARD;
}
