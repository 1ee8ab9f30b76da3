//! The connector's authentication for each kind, end to end against the test server on
//! 127.0.0.1 demanding a header (`--require-header`): headers helpers on `http`, `sse` and `ws`,
//! IDE tokens on `sse-ide` and `ws-ide`, the session ingress token on `ws`, a static
//! `Authorization` header, and the needs-auth cache in a temporary plexus home.
#![cfg(feature = "auth")]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plexus::auth::{NEEDS_AUTH_CACHE_FILE, NEEDS_AUTH_TTL, NeedsAuthCache};
use plexus::config::{Environment, Scope, ServerConfig};
use plexus::transport::error_chain;
use plexus::{ClientOptions, ConnectError, DefaultConnector};
use serde_json::{Value, json};
use support::{HANG_GUARD, echo, entry, test_server};

/// A connector for tests: the given home, an empty environment (nothing from the machine).
fn test_connector(home: &Path) -> DefaultConnector {
    DefaultConnector::new().with_home(home).with_env(Environment::empty())
}

async fn try_connect(connector: &DefaultConnector, config: &ServerConfig) -> Result<plexus::Client, ConnectError> {
    tokio::time::timeout(
        HANG_GUARD,
        connector.connect("remote", config, ClientOptions::new("remote")),
    )
    .await
    .expect("hang guard")
}

/// Connects, checks that the session works, closes it.
async fn assert_connects(connector: &DefaultConnector, value: &Value) {
    let client = try_connect(connector, &entry(value))
        .await
        .unwrap_or_else(|e| panic!("{value}: {e}"));
    assert_eq!(
        echo(&client, "authenticated").await.unwrap(),
        "authenticated",
        "{value}"
    );
    client.close().await.unwrap();
}

async fn connect_error(connector: &DefaultConnector, value: &Value) -> ConnectError {
    match try_connect(connector, &entry(value)).await {
        Ok(_) => panic!("{value}: connected"),
        Err(e) => e,
    }
}

fn cache_file(home: &Path) -> Option<Value> {
    let text = std::fs::read(home.join(NEEDS_AUTH_CACHE_FILE)).ok()?;
    Some(serde_json::from_slice(&text).unwrap())
}

const SESAME: &str = "X-Api-Key: sesame";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headers_helper_authenticates_http_sse_and_ws() {
    let home = tempfile::tempdir().unwrap();
    let connector = test_connector(home.path());
    let helper = r#"printf '{"X-Api-Key": "%s"}' sesame"#;
    for mode in ["http", "sse", "ws"] {
        let server = test_server(mode, &["--require-header", SESAME]).await;
        assert_connects(
            &connector,
            &json!({"type": mode, "url": server.url(), "headersHelper": helper}),
        )
        .await;
        // Its headers go over the static ones.
        let both =
            json!({"type": mode, "url": server.url(), "headers": {"x-api-key": "wrong"}, "headersHelper": helper});
        assert_connects(&connector, &both).await;
        // The helper sees the server's name and URL.
        let echoing = r#"printf '{"X-Api-Key": "%s"}' "$(test "$PLEXUS_MCP_SERVER_NAME" = remote && echo sesame)""#;
        assert_connects(
            &connector,
            &json!({"type": mode, "url": server.url(), "headersHelper": echoing}),
        )
        .await;
        server.shutdown().await;
    }
    assert_eq!(cache_file(home.path()), None, "nothing was recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_helper_is_run_once_more_and_every_connect_runs_it_again() {
    let home = tempfile::tempdir().unwrap();
    let connector = test_connector(home.path());
    let count = home.path().join("runs");
    // The first run gives a stale key; later runs the right one.
    let helper = format!(
        r#"n=$(cat '{count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{count}'; if [ $n -ge 2 ]; then k=sesame; else k=stale; fi; printf '{{"X-Api-Key": "%s"}}' $k"#,
        count = count.display()
    );
    let runs = || std::fs::read_to_string(&count).unwrap().trim().parse::<u32>().unwrap();
    for mode in ["http", "sse", "ws"] {
        std::fs::remove_file(&count).ok();
        let server = test_server(mode, &["--require-header", SESAME]).await;
        let config = json!({"type": mode, "url": server.url(), "headersHelper": helper});
        assert_connects(&connector, &config).await;
        assert_eq!(runs(), 2, "{mode}: run, rejected, run again");
        assert_connects(&connector, &config).await;
        assert_eq!(runs(), 3, "{mode}: one more run for the next connect");
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helper_whose_new_headers_are_rejected_too_is_a_failure_not_needs_auth() {
    let home = tempfile::tempdir().unwrap();
    let connector = test_connector(home.path());
    let count = home.path().join("runs");
    // Every run gives a new key, none of them the right one.
    let helper = format!(
        r#"n=$(cat '{count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{count}'; printf '{{"X-Api-Key": "wrong-%s"}}' $n"#,
        count = count.display()
    );
    let server = test_server("http", &["--require-header", SESAME]).await;
    let error = connect_error(
        &connector,
        &json!({"type": "http", "url": server.url(), "headersHelper": helper}),
    )
    .await;
    assert!(!error.needs_auth(), "{error}");
    assert!(
        error_chain(&error).contains("answered HTTP 401 again after the credentials were renewed"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&count).unwrap().trim(),
        "2",
        "run, rejected, run again"
    );
    assert_eq!(
        cache_file(home.path()),
        None,
        "a helper's rejection is not remembered as needs-auth"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helper_failures_name_the_server_and_are_never_needs_auth() {
    let home = tempfile::tempdir().unwrap();
    let connector = test_connector(home.path());
    let server = test_server("http", &["--require-header", SESAME]).await;
    let failing = json!({"type": "http", "url": server.url(), "headersHelper": "echo 'vault is sealed' >&2; exit 3"});
    let error = connect_error(&connector, &failing).await;
    assert_eq!(
        error_chain(&error),
        "server \"remote\": authentication failed: server \"remote\": the headersHelper failed (exit code 3); its \
         stderr ends with: vault is sealed"
    );
    assert!(!error.needs_auth());

    let wrong = json!({"type": "http", "url": server.url(), "headersHelper": r#"echo '{"X-Api-Key": "wrong"}'"#});
    let error = connect_error(&connector, &wrong).await;
    assert_eq!(
        error_chain(&error),
        "server \"remote\": authentication failed: server \"remote\" rejected the headers from its headersHelper \
         (HTTP 401), and the helper gave the same headers when run again"
    );
    assert!(!error.needs_auth());
    assert_eq!(
        cache_file(home.path()),
        None,
        "a helper's rejection is not recorded as needs-auth"
    );

    let slow = json!({"type": "http", "url": server.url(), "headersHelper": "sleep 30"});
    let error = connect_error(
        &connector.clone().with_helper_timeout(Duration::from_millis(200)),
        &slow,
    )
    .await;
    assert_eq!(
        error_chain(&error),
        "server \"remote\": authentication failed: server \"remote\": the headersHelper did not finish within 200 ms \
         and was killed"
    );
}

/// Writes the IDE lockfile for the server at `url` into `dir`.
fn write_lockfile(dir: &Path, url: &str, token: &str) -> std::path::PathBuf {
    let port = plexus::config::Url::parse(url).unwrap().port().unwrap();
    let path = dir.join(format!("{port}.lock"));
    let lockfile =
        json!({"authToken": token, "port": port, "workspaceFolders": ["/w"], "ideName": "Test IDE", "pid": 1});
    std::fs::write(&path, lockfile.to_string()).unwrap();
    path
}

const IDE_TOKEN: &str = "X-Claude-Code-Ide-Authorization: ide-secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_ide_sends_the_lockfile_token() {
    let home = tempfile::tempdir().unwrap();
    let locks = tempfile::tempdir().unwrap();
    let server = test_server("sse", &["--require-header", IDE_TOKEN]).await;
    let config = json!({"type": "sse-ide", "url": server.url(), "ideName": "Test IDE"});

    let connector = test_connector(home.path()).with_ide_lock_dir(locks.path());
    let missing = locks.path().join(format!(
        "{}.lock",
        plexus::config::Url::parse(server.url()).unwrap().port().unwrap()
    ));
    let error = connect_error(&connector, &config).await;
    assert!(matches!(error, ConnectError::Credentials { .. }), "{error:?}");
    assert_eq!(
        error_chain(&error),
        format!(
            "server \"remote\": no IDE lockfile at {} (is the IDE running, with its extension?)",
            missing.display()
        )
    );

    let lockfile = write_lockfile(locks.path(), server.url(), "stale");
    let error = connect_error(&connector, &config).await;
    assert_eq!(
        error_chain(&error),
        format!(
            "server \"remote\": authentication failed: the IDE rejected the token from the IDE lockfile {} (HTTP 401)",
            lockfile.display()
        )
    );
    assert!(!error.needs_auth());

    // The lockfile is read at every connect.
    write_lockfile(locks.path(), server.url(), "ide-secret");
    assert_connects(&connector, &config).await;

    // The lock directory from the environment.
    let from_env = DefaultConnector::new().with_home(home.path()).with_env(
        [("PLEXUS_IDE_LOCK_DIR", locks.path().to_str().unwrap())]
            .into_iter()
            .collect(),
    );
    assert_connects(&from_env, &config).await;
    let no_dir = test_connector(home.path());
    assert_eq!(
        error_chain(&connect_error(&no_dir, &config).await),
        "server \"remote\": cannot find the IDE lock directory: set PLEXUS_IDE_LOCK_DIR (or HOME)"
    );
    let from_home = DefaultConnector::new().with_env([("HOME", home.path().to_str().unwrap())].into_iter().collect());
    let ide_dir = home.path().join(".claude/ide");
    std::fs::create_dir_all(&ide_dir).unwrap();
    write_lockfile(&ide_dir, server.url(), "ide-secret");
    assert_connects(&from_home, &config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_ide_sends_its_auth_token_or_else_the_lockfiles() {
    let home = tempfile::tempdir().unwrap();
    let locks = tempfile::tempdir().unwrap();
    let server = test_server("ws", &["--require-header", IDE_TOKEN]).await;
    let connector = test_connector(home.path()).with_ide_lock_dir(locks.path());

    let configured = json!({"type": "ws-ide", "url": server.url(), "ideName": "Test IDE", "authToken": "ide-secret"});
    assert_connects(&connector, &configured).await;
    // The entry's token wins over the lockfile's.
    write_lockfile(locks.path(), server.url(), "stale");
    assert_connects(&connector, &configured).await;

    let from_lockfile = json!({"type": "ws-ide", "url": server.url(), "ideName": "Test IDE"});
    let error = connect_error(&connector, &from_lockfile).await;
    assert!(
        error_chain(&error)
            .starts_with("server \"remote\": authentication failed: the IDE rejected the token from the IDE lockfile "),
        "{error}"
    );
    write_lockfile(locks.path(), server.url(), "ide-secret");
    assert_connects(&connector, &from_lockfile).await;

    let wrong = json!({"type": "ws-ide", "url": server.url(), "ideName": "Test IDE", "authToken": "nope"});
    assert_eq!(
        error_chain(&connect_error(&connector, &wrong).await),
        "server \"remote\": authentication failed: the IDE rejected the token from the entry's authToken (HTTP 401)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_sends_the_session_ingress_token_when_one_is_configured() {
    let home = tempfile::tempdir().unwrap();
    let open = test_server("ws", &[]).await;
    let guarded = test_server("ws", &["--require-header", "Authorization: Bearer ingress-2"]).await;
    // No token configured: no header, and an open server lets us in.
    assert_connects(&test_connector(home.path()), &json!({"type": "ws", "url": open.url()})).await;
    let error = connect_error(
        &test_connector(home.path()),
        &json!({"type": "ws", "url": guarded.url()}),
    )
    .await;
    assert!(error.needs_auth(), "{error}");

    let with_env = |pairs: &[(&str, &str)]| {
        let env: Environment = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        DefaultConnector::new().with_home(home.path()).with_env(env)
    };
    let config = json!({"type": "ws", "url": guarded.url()});
    assert_connects(&with_env(&[("PLEXUS_SESSION_INGRESS_TOKEN", "ingress-2")]), &config).await;

    // From a file, read at every connect: a rotated token is picked up.
    let file = home.path().join("ingress-token");
    std::fs::write(&file, "ingress-1\n").unwrap();
    let from_file = with_env(&[("PLEXUS_SESSION_INGRESS_TOKEN_FILE", file.to_str().unwrap())]);
    let error = connect_error(&from_file, &config).await;
    assert_eq!(
        error_chain(&error),
        format!(
            "server \"remote\": authentication failed: the server rejected the session ingress token from the file {} \
             (PLEXUS_SESSION_INGRESS_TOKEN_FILE) (HTTP 401)",
            file.display()
        )
    );
    std::fs::write(&file, "ingress-2\n").unwrap();
    assert_connects(&from_file, &config).await;

    std::fs::remove_file(&file).unwrap();
    let error = connect_error(&from_file, &config).await;
    assert!(matches!(error, ConnectError::Credentials { .. }), "{error:?}");
    assert_eq!(
        error_chain(&error),
        format!(
            "server \"remote\": cannot read the session ingress token file {} (PLEXUS_SESSION_INGRESS_TOKEN_FILE): No \
             such file or directory (os error 2)",
            file.display()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_entry_never_gets_the_session_ingress_token() {
    let home = tempfile::tempdir().unwrap();
    let guarded = test_server("ws", &["--require-header", "Authorization: Bearer ingress-3"]).await;
    let env: Environment = [("PLEXUS_SESSION_INGRESS_TOKEN".to_owned(), "ingress-3".to_owned())]
        .into_iter()
        .collect();
    let connector = DefaultConnector::new().with_home(home.path()).with_env(env);
    let config = entry(&json!({"type": "ws", "url": guarded.url()}));
    let connect = |scope| {
        let (connector, config) = (connector.clone(), config.clone());
        async move {
            tokio::time::timeout(
                HANG_GUARD,
                connector.connect_in_scope("remote", &config, scope, ClientOptions::new("remote")),
            )
            .await
            .expect("hang guard")
        }
    };
    // The user's own entry (and the host's) get it on loopback.
    for scope in [None, Some(Scope::User), Some(Scope::Local), Some(Scope::Explicit)] {
        let connected = connect(scope).await.unwrap_or_else(|e| panic!("{scope:?}: {e}"));
        connected.client.close().await.unwrap();
    }
    // A repository's entry connects without it, and this server refuses that.
    let error = connect(Some(Scope::Project)).await.unwrap_err();
    assert!(error.needs_auth(), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_static_authorization_header_is_a_failure_not_needs_auth() {
    let home = tempfile::tempdir().unwrap();
    let connector = test_connector(home.path());
    let server = test_server("http", &["--require-header", "Authorization: Bearer right"]).await;
    assert_connects(
        &connector,
        &json!({"type": "http", "url": server.url(), "headers": {"Authorization": "Bearer right"}}),
    )
    .await;
    let wrong = json!({"type": "http", "url": server.url(), "headers": {"Authorization": "Bearer wrong"}});
    let error = connect_error(&connector, &wrong).await;
    assert_eq!(
        error_chain(&error),
        "server \"remote\": authentication failed: the server rejected the configured credentials (HTTP 401)"
    );
    assert!(!error.needs_auth());
    assert_eq!(cache_file(home.path()), None);
}

/// A needs-auth cache in `home` whose clock the test moves (from the real time, so that a cache
/// on the system clock agrees at first).
fn clocked_cache(home: &Path) -> (NeedsAuthCache, Arc<AtomicU64>) {
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let now = Arc::new(AtomicU64::new(start));
    let clock = Arc::clone(&now);
    let cache =
        NeedsAuthCache::new(home).with_clock(move || UNIX_EPOCH + Duration::from_millis(clock.load(Ordering::SeqCst)));
    (cache, now)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_auth_is_remembered_and_answered_without_contacting_the_server() {
    let home = tempfile::tempdir().unwrap();
    let (cache, now) = clocked_cache(home.path());
    let connector = test_connector(home.path()).with_needs_auth_cache(cache);
    let server = test_server("http", &["--require-header", SESAME]).await;
    let url = server.url().to_owned();
    let config = json!({"type": "http", "url": url});

    let first = connect_error(&connector, &config).await;
    assert!(first.needs_auth(), "{first}");
    assert!(matches!(first, ConnectError::Client { .. }), "{first:?}");
    let first_text = error_chain(&first);
    let reason = first_text
        .strip_prefix("server \"remote\": the server needs authentication: ")
        .unwrap_or_else(|| panic!("{first_text}"));
    assert_eq!(
        cache_file(home.path()),
        Some(json!({"remote": {url.as_str(): {"timestamp": now.load(Ordering::SeqCst), "reason": reason}}}))
    );

    // The server goes away: a connect that reached for it would fail with "connection refused".
    server.shutdown().await;
    let cached = connect_error(&connector, &config).await;
    assert!(matches!(cached, ConnectError::NeedsAuth { .. }), "{cached:?}");
    assert!(cached.needs_auth());
    assert_eq!(
        error_chain(&cached),
        format!("{first_text} (remembered from an earlier connect; plexus tries again in 15 min)")
    );
    // Another process (a fresh connector on the same home) sees it too.
    let other = connect_error(&test_connector(home.path()), &config).await;
    assert!(matches!(other, ConnectError::NeedsAuth { .. }), "{other:?}");

    // An entry with credentials of its own is never blocked by the cache.
    let with_helper = json!({"type": "http", "url": url, "headersHelper": "echo '{}'"});
    let reached = connect_error(&connector, &with_helper).await;
    assert!(!reached.needs_auth(), "{reached}");

    // Once the entry expires, the server is contacted again.
    now.fetch_add(NEEDS_AUTH_TTL.as_millis() as u64 - 60_000, Ordering::SeqCst);
    assert!(
        connect_error(&connector, &config)
            .await
            .to_string()
            .ends_with("plexus tries again in 1 min)")
    );
    now.fetch_add(60_000, Ordering::SeqCst);
    let refused = connect_error(&connector, &config).await;
    assert!(matches!(refused, ConnectError::Client { .. }), "{refused:?}");
    assert!(!refused.needs_auth(), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_connect_clears_the_entry_and_an_sse_entry_is_cached_too() {
    let home = tempfile::tempdir().unwrap();
    let (cache, now) = clocked_cache(home.path());
    let connector = test_connector(home.path()).with_needs_auth_cache(cache.clone());

    let sse = test_server("sse", &["--require-header", SESAME]).await;
    let without = json!({"type": "sse", "url": sse.url()});
    assert!(connect_error(&connector, &without).await.needs_auth());
    assert!(cache.check("remote", sse.url()).is_some());
    assert!(matches!(
        connect_error(&connector, &without).await,
        ConnectError::NeedsAuth { .. }
    ));
    // The key is the server's name and URL: adding a header does not lift the entry early.
    let with = json!({"type": "sse", "url": sse.url(), "headers": {"X-Api-Key": "sesame"}});
    assert!(matches!(
        connect_error(&connector, &with).await,
        ConnectError::NeedsAuth { .. }
    ));
    now.fetch_add(NEEDS_AUTH_TTL.as_millis() as u64, Ordering::SeqCst);
    assert_connects(&connector, &with).await;
    assert_eq!(
        cache_file(home.path()),
        Some(json!({})),
        "the success cleared the expired entry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_home_nothing_is_remembered() {
    let server = test_server("http", &["--require-header", SESAME]).await;
    let config = entry(&json!({"type": "http", "url": server.url()}));
    let connector = DefaultConnector::new().with_env(Environment::empty());
    assert_eq!(connector.home(), None);
    for _ in 0..2 {
        let error = try_connect(&connector, &config).await.unwrap_err();
        assert!(
            matches!(error, ConnectError::Client { .. }) && error.needs_auth(),
            "{error:?}"
        );
    }
}
