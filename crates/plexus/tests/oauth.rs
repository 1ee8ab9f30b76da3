//! OAuth through the connector, end to end against the test server's authorization server and
//! protected MCP endpoint on 127.0.0.1 (`--oauth`): a connect without tokens is needs-auth and
//! is remembered; `DefaultConnector::login` stores tokens (the test's user agent follows the redirect to
//! the login's loopback listener) and clears the cache; connects use and refresh the stored
//! tokens, for `http`, `sse` and `claudeai-proxy` entries; `logout` forgets them.
#![cfg(feature = "auth")]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use plexus::auth::oauth::{AuthorizationPrompt, DEFAULT_LOGIN_TIMEOUT, RedirectFollower, UserAgent, UserAgentError};
use plexus::auth::{FileProblem, NEEDS_AUTH_CACHE_FILE, OAuthError, PrivateFile};
use plexus::config::{Environment, ServerConfig};
use plexus::transport::BoxFuture;
use plexus::{ClientOptions, ConnectError, DefaultConnector, LoginError};
use plexus_testserver::Endpoint;
use serde_json::json;
use support::{HANG_GUARD, echo, entry, test_server};

fn connector(home: &Path) -> DefaultConnector {
    DefaultConnector::new().with_home(home).with_env(Environment::empty())
}

async fn connect(connector: &DefaultConnector, config: &ServerConfig) -> Result<plexus::Client, ConnectError> {
    tokio::time::timeout(
        HANG_GUARD,
        connector.connect("docs", config, ClientOptions::new("docs")),
    )
    .await
    .expect("hang guard")
}

async fn login(
    connector: &DefaultConnector,
    config: &ServerConfig,
) -> Result<plexus::auth::oauth::LoggedIn, LoginError> {
    let browser = Arc::new(RedirectFollower::new(HANG_GUARD).unwrap());
    tokio::time::timeout(HANG_GUARD, connector.login("docs", config, browser))
        .await
        .expect("hang guard")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_is_what_turns_needs_auth_into_a_session_and_refreshes_keep_it() {
    let server = test_server("http", &["--oauth"]).await;
    let oauth = server.oauth().unwrap();
    let home = tempfile::tempdir().unwrap();
    let connector = connector(home.path());
    let config = entry(&json!({"type": "http", "url": server.url()}));

    // No tokens: needs-auth, remembered, and the next connect does not reach the server.
    let error = connect(&connector, &config).await.unwrap_err();
    assert!(error.needs_auth(), "{error}");
    assert!(home.path().join(NEEDS_AUTH_CACHE_FILE).exists());
    let mcp_requests = oauth.requests_to(Endpoint::Mcp).len();
    let remembered = connect(&connector, &config).await.unwrap_err();
    assert!(matches!(remembered, ConnectError::NeedsAuth { .. }), "{remembered}");
    assert_eq!(oauth.requests_to(Endpoint::Mcp).len(), mcp_requests);

    // The login stores tokens and clears the cache; connects use them.
    let logged_in = login(&connector, &config).await.unwrap();
    assert_eq!(logged_in.issuer, oauth.issuer());
    let client = connect(&connector, &config).await.unwrap();
    assert_eq!(echo(&client, "with a token").await.unwrap(), "with a token");
    client.close().await.unwrap();

    // Expired access tokens are refreshed with the stored refresh token.
    let refreshes = oauth.requests_to(Endpoint::Token).len();
    assert!(oauth.expire_access_tokens() > 0);
    let client = connect(&connector, &config).await.unwrap();
    assert_eq!(echo(&client, "refreshed").await.unwrap(), "refreshed");
    client.close().await.unwrap();
    assert!(oauth.requests_to(Endpoint::Token).len() > refreshes);

    // The same server as a claudeai-proxy entry uses the same stored tokens.
    let proxy = entry(&json!({"type": "claudeai-proxy", "url": server.url(), "id": "c1"}));
    let client = connect(&connector, &proxy).await.unwrap();
    assert_eq!(
        echo(&client, "through the proxy kind").await.unwrap(),
        "through the proxy kind"
    );
    client.close().await.unwrap();

    // Revoked tokens cannot be refreshed: needs-auth again, saying which authorization server
    // rejected the refresh token; the cache remembers why, and the dead refresh token is not
    // tried again.
    assert!(oauth.revoke_tokens() > 0);
    let error = connect(&connector, &config).await.unwrap_err();
    assert!(error.needs_auth(), "{error}");
    let rejected = format!(
        "the refresh token was rejected by the authorization server {}; log in again with `plexus login docs`",
        oauth.issuer()
    );
    assert!(plexus::transport::error_chain(&error).contains(&rejected), "{error}");
    let token_requests = oauth.requests_to(Endpoint::Token).len();
    let remembered = connect(&connector, &config).await.unwrap_err();
    let ConnectError::NeedsAuth {
        reason: Some(reason), ..
    } = &remembered
    else {
        panic!("remembered with its reason: {remembered:?}");
    };
    assert!(reason.contains(&rejected), "{reason}");
    assert_eq!(oauth.requests_to(Endpoint::Token).len(), token_requests);

    // Logout forgets the tokens.
    assert!(connector.logout("docs", &config).await.unwrap());
    assert!(!connector.logout("docs", &config).await.unwrap());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_entry_logs_in_and_connects_with_its_tokens() {
    let server = test_server("sse", &["--oauth"]).await;
    let home = tempfile::tempdir().unwrap();
    let connector = connector(home.path());
    let config = entry(&json!({"type": "sse", "url": server.url()}));
    assert!(connect(&connector, &config).await.unwrap_err().needs_auth());
    login(&connector, &config).await.unwrap();
    let client = connect(&connector, &config).await.unwrap();
    assert_eq!(echo(&client, "legacy").await.unwrap(), "legacy");
    client.close().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn login_needs_an_oauth_entry_and_a_home() {
    let home = tempfile::tempdir().unwrap();
    let with_header =
        entry(&json!({"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer k"}}));
    assert_eq!(
        login(&connector(home.path()), &with_header)
            .await
            .unwrap_err()
            .to_string(),
        "server \"docs\": http servers with a static `Authorization` header authenticate, not with an OAuth login"
    );
    let plain = entry(&json!({"type": "http", "url": "http://127.0.0.1:9/mcp"}));
    let homeless = DefaultConnector::new().with_env(Environment::empty());
    assert_eq!(
        login(&homeless, &plain).await.unwrap_err().to_string(),
        "server \"docs\": there is no plexus home to keep its tokens in (set PLEXUS_HOME or HOME)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_credentials_entry_gets_its_tokens_without_a_login() {
    let server = test_server("http", &["--oauth", "--oauth-client", "svc:s3cret"]).await;
    let oauth = server.oauth().unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = entry(&json!({
        "type": "http",
        "url": server.url(),
        "oauth": {"grantType": "client_credentials", "clientId": "svc", "clientSecret": "s3cret"},
    }));
    let client = connect(&connector(home.path()), &config).await.unwrap();
    assert_eq!(echo(&client, "machine to machine").await.unwrap(), "machine to machine");
    client.close().await.unwrap();
    let tokens = oauth.requests_to(Endpoint::Token);
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    assert_eq!(tokens[0].params["grant_type"], "client_credentials");
    assert_eq!(tokens[0].client_id.as_deref(), Some("svc"));
    assert!(
        oauth.requests_to(Endpoint::Authorize).is_empty(),
        "no user, no authorization request"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_private_key_file_that_cannot_be_used_is_an_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("missing.pem");
    let garbage = home.path().join("garbage.pem");
    std::fs::write(&garbage, "not a key").unwrap();
    let entry_with = |key: &Path| {
        entry(&json!({
            "type": "http",
            "url": "http://127.0.0.1:9/mcp",
            "oauth": {"grantType": "client_credentials", "clientId": "svc", "privateKeyFile": key},
        }))
    };
    let error = connect(&connector(home.path()), &entry_with(&missing))
        .await
        .unwrap_err();
    assert_eq!(
        plexus::transport::error_chain(&error),
        format!(
            "server \"docs\": OAuth setting oauth.privateKeyFile: cannot read {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    let error = connect(&connector(home.path()), &entry_with(&garbage))
        .await
        .unwrap_err();
    let shown = plexus::transport::error_chain(&error);
    assert!(
        shown.starts_with(&format!(
            "server \"docs\": OAuth setting oauth.privateKeyFile: {}: ",
            garbage.display()
        )),
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callback_port_comes_from_the_connectors_environment() {
    let server = test_server("http", &["--oauth"]).await;
    let oauth = server.oauth().unwrap();
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let connector = DefaultConnector::new()
        .with_home(home.path())
        .with_env([("PLEXUS_OAUTH_CALLBACK_PORT", port.as_str())].into_iter().collect());
    let config = entry(&json!({"type": "http", "url": server.url()}));
    login(&connector, &config).await.unwrap();
    let authorize = oauth.requests_to(Endpoint::Authorize);
    let redirect = &authorize[0].params["redirect_uri"];
    assert_eq!(redirect, &format!("http://127.0.0.1:{port}/callback"));
    server.shutdown().await;
}

/// A user agent whose user never comes back.
struct Gone;

impl UserAgent for Gone {
    fn open<'a>(&'a self, _: &'a AuthorizationPrompt) -> BoxFuture<'a, Result<(), UserAgentError>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_waits_as_long_as_the_connector_says() {
    let server = test_server("http", &["--oauth"]).await;
    let home = tempfile::tempdir().unwrap();
    let connector = connector(home.path()).with_login_timeout(Duration::from_secs(1));
    assert_eq!(connector.login_timeout(), Duration::from_secs(1));
    let config = entry(&json!({"type": "http", "url": server.url()}));
    let error = tokio::time::timeout(HANG_GUARD, connector.login("docs", &config, Arc::new(Gone)))
        .await
        .expect("hang guard")
        .unwrap_err();
    assert!(
        matches!(
            &error,
            LoginError::OAuth {
                source: OAuthError::LoginTimedOut { after, refused: 0, .. },
                ..
            } if *after == Duration::from_secs(1)
        ),
        "{error:?}"
    );
    assert_eq!(
        plexus::transport::error_chain(&error),
        "server \"docs\": no authorization response arrived within 1 s (the login was not completed)"
    );
    assert_eq!(DefaultConnector::new().login_timeout(), DEFAULT_LOGIN_TIMEOUT);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connector_collects_what_its_store_and_cache_repaired_for_the_host() {
    let server = test_server("http", &[]).await;
    let home = tempfile::tempdir().unwrap();
    let credentials = home.path().join(plexus::CREDENTIALS_FILE);
    let cache = home.path().join(NEEDS_AUTH_CACHE_FILE);
    std::fs::write(&credentials, "{not json").unwrap();
    std::fs::write(&cache, "{}").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let connector = connector(home.path());
    let config = entry(&json!({"type": "http", "url": server.url()}));
    let client = connect(&connector, &config).await.unwrap();
    client.close().await.unwrap();

    let warnings = connector.clone().file_warnings().take();
    let described: Vec<(PrivateFile, bool)> = warnings
        .iter()
        .map(|w| (w.file, matches!(w.problem, FileProblem::Unreadable { .. })))
        .collect();
    let mut expected = vec![(PrivateFile::Credentials, true)];
    if cfg!(unix) {
        // The cache is read first (before the server is contacted).
        expected.insert(0, (PrivateFile::NeedsAuthCache, false));
    }
    assert_eq!(described, expected, "{warnings:?}");
    assert!(
        connector.file_warnings().take().is_empty(),
        "clones share them; each is taken once"
    );
    server.shutdown().await;
}
