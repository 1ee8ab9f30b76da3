//! The pool with stdio servers: single flight, the sliding window, readiness, list caches and
//! their invalidation, restarts and the crash-loop guard, changed entries, shutdown.

mod support;

use std::sync::Arc;
use std::time::Duration;

use plexus_pool::{ListKind, PoolError, PoolEvent, PoolSettings, ServerStatus};
use serde_json::json;
use support::{HANG_GUARD, call, count, next_event, pool, stdio, until};

fn log_in(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_callers_share_one_connect_and_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir, "one.log");
    let pool = pool(PoolSettings::default());
    // Servers of the `initialize` era here and below: their handshake is what is slow.
    pool.set_servers([stdio(
        "one",
        &["--era", "legacy", "--event-log", &log, "--delay", "initialize=300"],
    )])
    .await;
    let callers: Vec<_> = (0..100)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.ensure_connected("one").await })
        })
        .collect();
    let mut clients = Vec::new();
    for caller in callers {
        clients.push(caller.await.unwrap().unwrap());
    }
    assert!(clients.iter().all(|c| c.is_same_session(&clients[0])));
    assert_eq!(count(log.as_ref(), "start", None), 1, "one process was spawned");
    assert_eq!(count(log.as_ref(), "request", Some("initialize")), 1);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_holds_back_none_of_the_others_and_at_most_three_connect_at_once() {
    let pool = pool(PoolSettings::default());
    let mut events = pool.subscribe();
    let mut servers = vec![stdio("slow", &["--era", "legacy", "--delay", "initialize=2000"])];
    servers.extend((1..=8).map(|n| stdio(&format!("quick-{n}"), &[])));
    pool.set_servers(servers).await;
    let mut connecting = 0usize;
    let mut most = 0usize;
    let mut connected = Vec::new();
    while connected.len() < 9 {
        let (server, status) = next_event(&mut events, |event| match event {
            PoolEvent::StateChanged { server, state } => Some((server.clone(), state.status)),
            _ => None,
        })
        .await;
        match status {
            ServerStatus::Connecting => connecting += 1,
            ServerStatus::Connected => {
                connecting -= 1;
                connected.push(server);
            }
            other => panic!("{server} went {other}"),
        }
        most = most.max(connecting);
    }
    assert_eq!(connected.last().map(String::as_str), Some("slow"), "{connected:?}");
    assert_eq!(most, 3, "the local window is 3");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_connects_after_the_readiness_budget_joins_with_an_event() {
    let pool = pool(PoolSettings::default());
    let mut events = pool.subscribe();
    pool.set_servers([
        stdio("late", &["--era", "legacy", "--delay", "initialize=800"]),
        stdio("early", &[]),
    ])
    .await;
    let ready = pool.wait_ready(Duration::from_millis(300)).await.unwrap();
    assert_eq!(ready.connected, ["early"]);
    assert_eq!(ready.still_connecting, ["late"]);
    let joined = next_event(&mut events, |event| match event {
        PoolEvent::Joined { server } => Some(server.clone()),
        _ => None,
    })
    .await;
    assert_eq!(joined, "late");
    assert_eq!(pool.state("late").unwrap().status, ServerStatus::Connected);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_server_that_cannot_connect_fails_the_readiness_wait_with_its_error() {
    let pool = pool(PoolSettings::default());
    let mut required = stdio("needed", &["--exit-at-start", "3"]);
    required.config.options_mut().required = true;
    pool.set_servers([required, stdio("fine", &[])]).await;
    let error = pool.wait_ready(HANG_GUARD).await.unwrap_err();
    let PoolError::Required { server, failure } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(server, "needed");
    let text = error.to_string();
    assert!(
        text.starts_with("required server \"needed\" could not connect: server \"needed\": "),
        "{text}"
    );
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(failure.to_string().contains("last stderr output"), "{failure}");

    // Without "required", a failure is only a state.
    let pool2 = support::pool(PoolSettings::default());
    pool2
        .set_servers([stdio("broken", &["--exit-at-start", "3"]), stdio("fine", &[])])
        .await;
    let ready = pool2.wait_ready(HANG_GUARD).await.unwrap();
    // Its reason comes with it.
    let why = &ready.reasons["broken"];
    assert!(why.contains("exited with status 3"), "{why}");
    assert_eq!(ready.reasons.len(), 1, "{:?}", ready.reasons);
    assert_eq!(
        (ready.connected, ready.failed),
        (vec!["fine".to_owned()], vec!["broken".to_owned()])
    );
    let state = pool2.state("broken").unwrap();
    assert_eq!(state.status, ServerStatus::Failed);
    assert!(state.error.unwrap().to_string().contains("exited with status 3"));
    pool.shutdown().await;
    pool2.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_cached_until_the_server_says_they_changed() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir, "lists.log");
    let pool = pool(PoolSettings::default());
    let mut events = pool.subscribe();
    pool.set_servers([stdio("s", &["--event-log", &log])]).await;
    // The session is of the stateless era, whose lists say `ttlMs: 0`: a list is kept only
    // once the server has acknowledged that it announces their changes (before that, a list
    // fetched is stale at once), and that acknowledgment comes on its own stream.
    let client = pool.ensure_connected("s").await.unwrap();
    until(|| client.change_notifications().is_some()).await;
    let first = pool.tools("s").await.unwrap();
    let again = pool.tools("s").await.unwrap();
    assert!(Arc::ptr_eq(&first, &again), "the second listing came from the cache");
    assert_eq!(count(log.as_ref(), "request", Some("tools/list")), 1);
    assert_eq!(pool.cached_lists(ListKind::Tools), 1);

    call(&client, "trigger-list-changed", json!({})).await.unwrap();
    let changed = next_event(&mut events, |event| match event {
        PoolEvent::ListChanged { server, list } => Some((server.clone(), *list)),
        _ => None,
    })
    .await;
    assert_eq!(changed, ("s".to_owned(), ListKind::Tools));
    let after = pool.tools("s").await.unwrap();
    assert_eq!(after.len(), first.len() + 1, "the new tool is listed");
    assert!(after.iter().any(|tool| tool.name == "dynamic-1"));
    assert_eq!(count(log.as_ref(), "request", Some("tools/list")), 2);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_that_began_before_an_invalidation_does_not_write_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir, "stale.log");
    let pool = pool(PoolSettings::default());
    pool.set_servers([stdio("s", &["--event-log", &log, "--delay", "tools/list=600"])])
        .await;
    let client = pool.ensure_connected("s").await.unwrap();
    let fetch = tokio::spawn({
        let pool = pool.clone();
        async move { pool.tools("s").await }
    });
    until(|| count(log.as_ref(), "request", Some("tools/list")) == 1).await;
    // The list is on its way; the server changes it meanwhile.
    call(&client, "trigger-list-changed", json!({})).await.unwrap();
    let stale = fetch.await.unwrap().unwrap();
    let fresh = pool.tools("s").await.unwrap();
    assert_eq!(
        count(log.as_ref(), "request", Some("tools/list")),
        2,
        "the stale result was not cached"
    );
    assert_eq!(fresh.len(), stale.len() + 1);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_loses_its_caches_and_is_restarted_on_demand_until_it_dies_too_often() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_in(&dir, "crash.log");
    let pool = pool(PoolSettings::default());
    let mut events = pool.subscribe();
    pool.set_servers([stdio("c", &["--event-log", &log])]).await;
    for round in 1..=3 {
        let client = pool.ensure_connected("c").await.unwrap();
        pool.tools("c").await.unwrap();
        assert_eq!(pool.cached_lists(ListKind::Tools), 1);
        // The crash tool exits without answering.
        let _ = call(&client, "crash", json!({"code": 7})).await.unwrap_err();
        let state = support::next_state(&mut events, ServerStatus::Failed).await;
        let error = state.error.unwrap().to_string();
        assert!(error.starts_with("server \"c\": the connection was lost: "), "{error}");
        assert_eq!(
            pool.cached_lists(ListKind::Tools),
            0,
            "round {round}: the lists went with it"
        );
        assert!(pool.client("c").is_none());
    }
    assert_eq!(count(log.as_ref(), "start", None), 3);
    // Three deaths within a minute: no restart on demand…
    let error = pool.ensure_connected("c").await.unwrap_err();
    assert!(matches!(error, PoolError::CrashLoop { crashes: 3, .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "server \"c\" stopped 3 times within 60 s; it is not restarted until asked to reconnect"
    );
    assert_eq!(count(log.as_ref(), "start", None), 3, "no process was started");
    // …until asked explicitly.
    let client = pool.reconnect("c").await.unwrap();
    assert_eq!(support::echo(&client, "back").await, "back");
    assert_eq!(count(log.as_ref(), "start", None), 4);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_entry_gets_a_new_connection_and_the_old_one_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (old_log, new_log) = (log_in(&dir, "old.log"), log_in(&dir, "new.log"));
    let pool = pool(PoolSettings::default());
    pool.set_servers([stdio("s", &["--event-log", &old_log])]).await;
    let old = pool.ensure_connected("s").await.unwrap();
    // The same entry again changes nothing.
    pool.set_servers([stdio("s", &["--event-log", &old_log])]).await;
    assert!(pool.ensure_connected("s").await.unwrap().is_same_session(&old));
    pool.set_servers([stdio("s", &["--event-log", &new_log])]).await;
    assert!(old.is_closed(), "the old connection was closed when its entry changed");
    assert_eq!(count(old_log.as_ref(), "exit", None), 1, "its process ended");
    let new = pool.ensure_connected("s").await.unwrap();
    assert!(!new.is_same_session(&old));
    assert_eq!(count(new_log.as_ref(), "start", None), 1);
    pool.set_servers([]).await;
    assert!(new.is_closed());
    assert!(matches!(
        pool.ensure_connected("s").await.unwrap_err(),
        PoolError::UnknownServer { .. }
    ));
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_every_server_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(PoolSettings::default());
    let pidfiles: Vec<String> = (0..3).map(|n| log_in(&dir, &format!("grandchild-{n}.pid"))).collect();
    let logs: Vec<String> = (0..3).map(|n| log_in(&dir, &format!("server-{n}.log"))).collect();
    pool.set_servers((0..3).map(|n| {
        stdio(
            &format!("s{n}"),
            &["--event-log", &logs[n], "--spawn-grandchild", &pidfiles[n]],
        )
    }))
    .await;
    let ready = pool.wait_ready(HANG_GUARD).await.unwrap();
    assert_eq!(ready.connected.len(), 3);
    let pids: Vec<u32> = pidfiles
        .iter()
        .map(|file| std::fs::read_to_string(file).unwrap().trim().parse().unwrap())
        .collect();
    let started = std::time::Instant::now();
    pool.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    for (pid, log) in pids.iter().zip(&logs) {
        // Gone, or a zombie that its new parent has yet to reap.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next());
        assert!(
            matches!(state, None | Some("Z" | "X")),
            "grandchild {pid} survived: {stat}"
        );
        assert_eq!(count(log.as_ref(), "start", None), 1);
    }
    assert!(matches!(
        pool.ensure_connected("s0").await.unwrap_err(),
        PoolError::ShutDown
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_may_not_run_are_shown_and_never_started() {
    use plexus_pool::Admission;
    let pool = pool(PoolSettings::default());
    pool.set_servers([
        stdio("waiting", &[]).with_admission(Admission::AwaitingApproval {
            reason: "run plexus approve waiting".into(),
        }),
        stdio("off", &[]).with_admission(Admission::Disabled {
            reason: "denied by managed policy".into(),
        }),
    ])
    .await;
    let states = pool.states();
    assert_eq!(states[0].1.status, ServerStatus::Pending);
    assert_eq!(states[0].1.reason.as_deref(), Some("run plexus approve waiting"));
    assert_eq!(states[1].1.status, ServerStatus::Disabled);
    let error = pool.ensure_connected("waiting").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "server \"waiting\" is pending: run plexus approve waiting"
    );
    let ready = pool.wait_ready(HANG_GUARD).await.unwrap();
    assert_eq!(ready, plexus_pool::Readiness::default());
    // Approved: the same entry now starts.
    pool.set_servers([stdio("waiting", &[])]).await;
    let ready = pool.wait_ready(HANG_GUARD).await.unwrap();
    assert_eq!(ready.connected, ["waiting"]);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_pings_is_lost() {
    let pool = pool(PoolSettings {
        ping_interval: Some(Duration::from_millis(200)),
        ..PoolSettings::default()
    });
    let mut events = pool.subscribe();
    // Alive, but its pings are answered far too late (a server of the `initialize` era: the
    // stateless one has no `ping`).
    pool.set_servers([stdio("mute", &["--era", "legacy", "--delay", "ping=5000"])])
        .await;
    pool.wait_ready(HANG_GUARD).await.unwrap();
    let state = support::next_state(&mut events, ServerStatus::Failed).await;
    let error = state.error.unwrap().to_string();
    assert!(
        error.starts_with("server \"mute\": the connection was lost: it did not answer a ping within 200 ms: "),
        "{error}"
    );
    assert!(pool.client("mute").is_none());
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_instructions_are_kept_and_cut_to_the_limit() {
    let pool = pool(PoolSettings {
        max_instructions_chars: 40,
        ..PoolSettings::default()
    });
    pool.set_servers([stdio("s", &[])]).await;
    pool.wait_ready(HANG_GUARD).await.unwrap();
    let instructions = pool.instructions("s").unwrap();
    assert_eq!(instructions.chars().count(), 40);
    assert_eq!(&*instructions, "plexus-testserver is a test… [truncated]");
    pool.shutdown().await;
}
