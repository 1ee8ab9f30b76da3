//! A supervised pool starts again, on its own, the stdio servers that died; one the crash-loop
//! guard stopped after its pause, announced with an event.

mod support;

use std::time::Duration;

use plexus_pool::{PoolEvent, PoolSettings, RestartPolicy, ServerStatus};
use serde_json::json;
use support::{call, count, next_event, pool, stdio};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_is_started_again_and_one_that_keeps_dying_after_its_pause() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("crash.log").display().to_string();
    let pool = pool(PoolSettings::default());
    let mut events = pool.subscribe();
    pool.set_servers([stdio("c", &["--event-log", &log])]).await;
    let mut policy = RestartPolicy::with_crash_pause(Duration::from_millis(500));
    policy.min_interval = Duration::from_millis(100);
    let _supervisor = pool.supervise(policy);
    for round in 1..=3 {
        let client = pool.ensure_connected("c").await.unwrap();
        let _ = call(&client, "crash", json!({"code": 7})).await.unwrap_err();
        support::next_state(&mut events, ServerStatus::Failed).await;
        if round < 3 {
            // Nobody asks: the supervisor starts it again.
            support::next_state(&mut events, ServerStatus::Connected).await;
            assert_eq!(count(log.as_ref(), "start", None), round + 1, "round {round}");
        }
    }
    // The third death in a minute: the guard stops it, and the supervisor says when it starts
    // it again, then does.
    let after = next_event(&mut events, |event| match event {
        PoolEvent::RestartScheduled { server, after } if server == "c" => Some(*after),
        _ => None,
    })
    .await;
    assert_eq!(after, Duration::from_millis(500));
    assert!(pool.is_crash_stopped("c"));
    support::next_state(&mut events, ServerStatus::Connected).await;
    assert_eq!(count(log.as_ref(), "start", None), 4);
    assert_eq!(
        support::echo(&pool.ensure_connected("c").await.unwrap(), "back").await,
        "back"
    );
    pool.shutdown().await;
}
