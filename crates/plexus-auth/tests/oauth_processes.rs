//! Tokens shared by processes and tasks: the test server's authorization server rotates refresh
//! tokens (a refresh returns a new one and the old one stops working, its default), and several
//! OS processes (this test binary run again as a child, with the token store's path in its
//! environment) or several providers of one process refresh the same stored token. The token
//! store's lock keeps them from spending one refresh token twice: every request of every process
//! passes, and the authorization server never refuses a refresh. Processes that write different
//! servers' credentials at once lose none of them.

mod oauth_support;

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use oauth_support::{Caller, guarded, settings, start};
use plexus_auth::oauth::OAuthProvider;
use plexus_auth::store::{Secret, StoredCredential, StoredTokens, TokenStore};
use plexus_testserver::Endpoint;

/// What a child does (`refresh` or `write`); unset in the parent, where the child tests return
/// at once.
const CHILD_ROLE: &str = "PLEXUS_AUTH_TEST_CHILD_ROLE";
/// The MCP endpoint's URL (a refreshing child).
const CHILD_URL: &str = "PLEXUS_AUTH_TEST_CHILD_URL";
/// The token store's path.
const CHILD_STORE: &str = "PLEXUS_AUTH_TEST_CHILD_STORE";
/// A writing child's name, for the servers it writes.
const CHILD_NAME: &str = "PLEXUS_AUTH_TEST_CHILD_NAME";
/// How many requests each refreshing child makes, each after a refresh.
const ROUNDS: usize = 15;
/// How many entries each writing child stores.
const WRITES: usize = 20;

/// Runs the child test `test` of this binary in a new process with `env`; its combined output
/// after it exited successfully.
async fn run_child(test: &str, env: &[(&str, &str)]) -> Result<String, String> {
    let exe = std::env::current_exe().unwrap();
    let mut command = tokio::process::Command::new(exe);
    command
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() { Ok(text) } else { Err(text) }
}

/// Runs two children of `test` at once, each with `env` and its own `CHILD_NAME`; panics with
/// their output unless both succeed.
async fn run_two_children(test: &str, env: &[(&str, &str)]) {
    let with_name = |name: &'static str| {
        let mut env = env.to_vec();
        env.push((CHILD_NAME, name));
        env
    };
    let (first, second) = (with_name("a"), with_name("b"));
    let (first, second) = tokio::join!(run_child(test, &first), run_child(test, &second));
    for (which, outcome) in [("first", first), ("second", second)] {
        if let Err(output) = outcome {
            panic!("the {which} child process failed:\n{output}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_refreshing_one_rotating_token_both_keep_working() {
    guarded(async {
        // Tokens live 20 s, within the 30 s refresh margin: every request of every process
        // refreshes first, with the refresh token the other process may just have rotated.
        let f = start(&["--oauth-expires-in", "20", "--oauth-refresh-rotation", "rotate"]).await;
        f.provider(settings()).login().await.unwrap();
        f.oauth.clear_requests();
        let (url, store) = (f.url(), f.store.path().display().to_string());
        run_two_children(
            "refreshing_child",
            &[(CHILD_ROLE, "refresh"), (CHILD_URL, &url), (CHILD_STORE, &store)],
        )
        .await;

        let refreshes: Vec<(String, u16, Option<String>)> = f
            .requests_to(Endpoint::Token)
            .into_iter()
            .map(|r| (r.params["grant_type"].clone(), r.status, r.error))
            .collect();
        assert_eq!(
            refreshes,
            vec![("refresh_token".to_owned(), 200, None); 2 * ROUNDS],
            "one refresh per request, none refused"
        );
        let mcp: Vec<u16> = f.requests_to(Endpoint::Mcp).iter().map(|r| r.status).collect();
        assert_eq!(mcp, vec![200; 2 * ROUNDS], "every request passed at once");
        // The store holds the last refresh token issued, which still works.
        let stored = f.store.get("docs", &f.oauth.issuer()).await.unwrap().unwrap();
        let refresh_token = stored.tokens.unwrap().refresh_token.unwrap();
        let live: Vec<String> = f
            .oauth
            .tokens()
            .into_iter()
            .filter(|t| t.refresh)
            .map(|t| t.token)
            .collect();
        assert_eq!(live, [refresh_token.expose().to_owned()]);
        f.server.shutdown().await;
    })
    .await;
}

/// A child of the test above: a provider without a user agent over the shared store, making
/// [`ROUNDS`] requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refreshing_child() {
    if std::env::var(CHILD_ROLE).as_deref() != Ok("refresh") {
        return;
    }
    let (url, store) = (std::env::var(CHILD_URL).unwrap(), std::env::var(CHILD_STORE).unwrap());
    let provider = OAuthProvider::new("docs", &url, settings(), TokenStore::new(store)).unwrap();
    let caller = Caller::new(&url, Arc::new(provider));
    for round in 0..ROUNDS {
        guarded(caller.initialize())
            .await
            .unwrap_or_else(|e| panic!("round {round}: {}", plexus_transport::error_chain(&e)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_writing_different_servers_lose_no_entry() {
    guarded(async {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("credentials.json");
        let store = path.display().to_string();
        run_two_children("writing_child", &[(CHILD_ROLE, "write"), (CHILD_STORE, &store)]).await;
        let servers = TokenStore::new(&path).servers().await.unwrap();
        let mut expected: Vec<String> = ["a", "b"]
            .iter()
            .flat_map(|name| (0..WRITES).map(move |n| format!("{name}-{n:02}")))
            .collect();
        expected.sort();
        assert_eq!(servers, expected);
    })
    .await;
}

/// A child of the test above: [`WRITES`] entries of servers named after it.
#[tokio::test]
async fn writing_child() {
    if std::env::var(CHILD_ROLE).as_deref() != Ok("write") {
        return;
    }
    let name = std::env::var(CHILD_NAME).unwrap();
    let store = TokenStore::new(Path::new(&std::env::var(CHILD_STORE).unwrap()));
    for n in 0..WRITES {
        let tokens = StoredTokens::new(Secret::new(format!("at-{name}-{n}")), None, Some(3600), None);
        let credential =
            StoredCredential::new("http://127.0.0.1:1/mcp", "http://127.0.0.1:1/token").with_tokens(tokens);
        store
            .put(&format!("{name}-{n:02}"), "http://127.0.0.1:1", credential)
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_of_one_process_refresh_a_rejected_token_once() {
    guarded(async {
        let f = start(&["--oauth-refresh-rotation", "rotate"]).await;
        f.provider(settings()).login().await.unwrap();
        // Two providers of the store (two connections of one server), both with the tokens.
        let callers: Vec<Caller> = (0..2).map(|_| f.caller(f.headless_provider(settings()))).collect();
        for caller in &callers {
            caller.initialize().await.unwrap();
        }
        f.oauth.clear_requests();

        // The server refuses the access token both hold: each provider is asked to refresh, at
        // once; one refreshes and the other uses its tokens.
        assert!(f.oauth.expire_access_tokens() > 0);
        let (first, second) = tokio::join!(callers[0].initialize(), callers[1].initialize());
        first.unwrap();
        second.unwrap();
        let refreshes: Vec<(String, u16)> = f
            .requests_to(Endpoint::Token)
            .into_iter()
            .map(|r| (r.params["grant_type"].clone(), r.status))
            .collect();
        assert_eq!(refreshes, [("refresh_token".to_owned(), 200)]);
        // Each sent the old token once (refused) and the one new token once (passed).
        let mut bearers = f.bearers();
        bearers.sort();
        bearers.dedup_by(|a, b| a == b);
        assert_eq!(bearers.len(), 2, "{bearers:?}");
        let statuses: Vec<u16> = f.requests_to(Endpoint::Mcp).iter().map(|r| r.status).collect();
        assert_eq!(statuses.iter().filter(|s| **s == 401).count(), 2, "{statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 2, "{statuses:?}");
        f.server.shutdown().await;
    })
    .await;
}
