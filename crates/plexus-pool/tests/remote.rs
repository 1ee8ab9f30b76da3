//! The pool with remote servers on 127.0.0.1: the three-terminal-errors rule on every remote
//! transport, session expiry, reconnection with backoff, the needs-auth wait.

mod support;

use std::time::Duration;

use plexus_pool::{PoolError, PoolEvent, PoolSettings, ServerStatus};
use serde_json::json;
use support::{HANG_GUARD, call, count, next_event, pool, remote, test_server, until};

/// Quick reconnects, so that a test sees a whole series.
fn quick() -> PoolSettings {
    PoolSettings {
        reconnect_delay: Duration::from_millis(20),
        reconnect_attempts: 2,
        ..PoolSettings::default()
    }
}

/// Calls `echo` until it fails, at most `n` times; returns the errors.
async fn failing_calls(client: &plexus::Client, n: usize) -> Vec<plexus::ClientError> {
    let mut errors = Vec::new();
    for _ in 0..n {
        match call(client, "echo", json!({"text": "x"})).await {
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    errors
}

/// Three terminal I/O failures in a row take the connection as lost on `kind`, whose test
/// server resets every request after the handshake.
async fn three_failures_in_a_row_lose_the_connection(mode: &str, args: &[&str]) {
    let server = test_server(mode, args).await;
    let kind = mode;
    let pool = pool(quick());
    let mut events = pool.subscribe();
    pool.set_servers([remote("r", kind, server.url())]).await;
    let client = pool.ensure_connected("r").await.unwrap();
    pool.tools("r").await.unwrap_err();
    let errors = failing_calls(&client, 1).await;
    assert_eq!(errors.len(), 1);
    assert_eq!(
        pool.state("r").unwrap().status,
        ServerStatus::Connected,
        "two failures are not enough"
    );
    let third = failing_calls(&client, 1).await;
    assert_eq!(third.len(), 1, "{mode}");
    let state = next_event(&mut events, |event| match event {
        PoolEvent::StateChanged { state, .. }
            if state.status == ServerStatus::Failed && state.reconnect_attempt == 0 && state.error.is_some() =>
        {
            Some(state.clone())
        }
        _ => None,
    })
    .await;
    let error = state.error.unwrap().to_string();
    assert!(
        error.starts_with("server \"r\": the connection was lost: 3 connection failures in a row; the last: "),
        "{mode}: {error}"
    );
    until(|| client.is_closed()).await;
    // The reconnection series runs (every request is reset, so it fails) and ends failed.
    until(|| {
        pool.state("r")
            .is_some_and(|s| s.status == ServerStatus::Failed && s.reconnect_attempt == 2)
    })
    .await;
    pool.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_terminal_failures_in_a_row_lose_a_streamable_http_connection() {
    // A server of the `initialize` era: `--reset-after` counts past its probe (-32601) and its
    // handshake's two POSTs (in the stateless era the session's listen would race the first
    // list for the count).
    let args = ["--era", "legacy", "--reset-after", "3", "--no-get-stream"];
    three_failures_in_a_row_lose_the_connection("http", &args).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_terminal_failures_in_a_row_lose_a_legacy_sse_connection() {
    three_failures_in_a_row_lose_the_connection("sse", &["--reset-after", "2"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_resets_the_count_of_failures() {
    // After the probe and the handshake of a server of the `initialize` era (a stateless
    // session's listen would race the calls for the count): two resets, one answer, two
    // resets, one answer, … Four failures in all, never three in a row.
    let server = test_server(
        "http",
        &[
            "--era",
            "legacy",
            "--reset-after",
            "3",
            "--fault-times",
            "2",
            "--fault-period",
            "3",
            "--no-get-stream",
        ],
    )
    .await;
    let pool = pool(quick());
    pool.set_servers([remote("r", "http", server.url())]).await;
    let client = pool.ensure_connected("r").await.unwrap();
    assert_eq!(failing_calls(&client, 6).await.len(), 4);
    assert_eq!(pool.state("r").unwrap().status, ServerStatus::Connected);
    assert!(pool.client("r").unwrap().is_same_session(&client));
    pool.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_that_drops_is_lost_and_reconnected() {
    let server = test_server("ws", &["--reset-after", "3", "--fault-times", "1"]).await;
    let pool = pool(quick());
    let mut events = pool.subscribe();
    pool.set_servers([remote("w", "ws", server.url())]).await;
    let client = pool.ensure_connected("w").await.unwrap();
    pool.tools("w").await.unwrap();
    // The next message is reset: the socket, and the connection, are gone.
    failing_calls(&client, 1).await;
    let lost = support::next_state(&mut events, ServerStatus::Failed).await;
    assert!(
        lost.error
            .unwrap()
            .to_string()
            .starts_with("server \"w\": the connection was lost: ")
    );
    assert_eq!(pool.cached_lists(plexus_pool::ListKind::Tools), 0);
    // Reconnected in the background with backoff.
    let joined = support::next_state(&mut events, ServerStatus::Connected).await;
    assert!(joined.connect_time.is_some());
    let again = pool.ensure_connected("w").await.unwrap();
    assert!(!again.is_same_session(&client));
    assert_eq!(support::echo(&again, "back").await, "back");
    pool.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_dropped_and_the_next_caller_gets_a_fresh_one() {
    // Sessions are of the `initialize` era.
    let server = test_server(
        "http",
        &["--era", "legacy", "--expire-session-after", "4", "--no-get-stream"],
    )
    .await;
    let pool = pool(PoolSettings::default());
    pool.set_servers([remote("h", "http", server.url())]).await;
    let client = pool.ensure_connected("h").await.unwrap();
    let errors = failing_calls(&client, 4).await;
    assert!(!errors.is_empty(), "the session did not expire");
    assert_eq!(
        errors[0].transport_class(),
        Some(plexus::transport::ErrorClass::SessionExpired),
        "{:?}",
        errors[0]
    );
    until(|| pool.client("h").is_none_or(|c| !c.is_same_session(&client))).await;
    let fresh = pool.ensure_connected("h").await.unwrap();
    assert!(!fresh.is_same_session(&client));
    assert_eq!(support::echo(&fresh, "new").await, "new");
    pool.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_needs_auth_is_not_tried_again_within_its_wait() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("auth.log");
    let log_arg = log.display().to_string();
    let server = test_server(
        "http",
        &[
            "--require-header",
            "Authorization: Bearer right",
            "--event-log",
            &log_arg,
        ],
    )
    .await;
    let pool = pool(PoolSettings::default());
    pool.set_servers([remote("a", "http", server.url())]).await;
    pool.wait_ready(HANG_GUARD).await.unwrap();
    let state = pool.state("a").unwrap();
    assert_eq!(state.status, ServerStatus::NeedsAuth, "{state:?}");
    let seen = count(&log, "http", None);
    assert!(seen >= 1);
    let error = pool.ensure_connected("a").await.unwrap_err();
    assert!(
        matches!(&error, PoolError::Connect { failure, .. } if failure.needs_auth()),
        "{error:?}"
    );
    assert_eq!(count(&log, "http", None), seen, "the server was not contacted again");
    // A reconnect (after a login, say) tries again.
    pool.reconnect("a").await.unwrap_err();
    assert!(count(&log, "http", None) > seen);
    pool.shutdown().await;
    server.shutdown().await;
}
