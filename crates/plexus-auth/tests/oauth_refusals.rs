//! What the OAuth provider refuses: a resource metadata document for another resource (no
//! authorization server is contacted), authorization server metadata of another issuer or without
//! PKCE S256, authorization responses whose `iss` is wrong or missing where advertised (refused,
//! and the login waits on until its timeout), a denied authorization, and a login loop.

mod oauth_support;

use std::time::Duration;

use oauth_support::{Fixture, guarded, settings, start};
use plexus_auth::oauth::{MAX_AUTHORIZATION_ATTEMPTS, OAuthSettings};
use plexus_testserver::Endpoint;
use plexus_transport::TransportError;

/// Runs `initialize` with a provider that can log in; the error it ends with.
async fn refused(f: &Fixture) -> TransportError {
    f.caller(f.provider(settings())).initialize().await.unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_for_another_resource_is_refused_before_any_authorization_server_is_contacted() {
    guarded(async {
        let f = start(&["--oauth-prm-resource", "https://evil.example.com/mcp"]).await;
        let err = refused(&f).await;
        assert!(matches!(err, TransportError::AuthFailed { .. }), "{err:?}");
        assert_eq!(
            plexus_transport::error_chain(&err),
            format!(
                "authentication failed: server \"docs\": the protected resource metadata at {0}/.well-known/oauth-protected-resource/mcp \
                 is for the resource \"https://evil.example.com/mcp\", not for the server {0}/mcp; refusing to authorize \
                 (no authorization server was contacted)",
                format_args!("http://{}", f.server.local_addr())
            )
        );
        assert!(!f.oauth.authorization_server_contacted());
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_naming_another_issuer_is_not_used() {
    guarded(async {
        let f = start(&["--oauth-metadata-issuer", "https://attacker.example.com"]).await;
        let err = refused(&f).await;
        assert_eq!(
            plexus_transport::error_chain(&err),
            format!(
                "authentication failed: server \"docs\": the authorization server metadata at {0}/.well-known/oauth-authorization-server \
                 names the issuer \"https://attacker.example.com\", but it was fetched for the issuer \"{0}\"; refusing it",
                f.oauth.issuer()
            )
        );
        assert_eq!(f.oauth_paths().len(), 2, "{:?}", f.oauth_paths());
        assert!(f.requests_to(Endpoint::Register).is_empty() && f.requests_to(Endpoint::Authorize).is_empty());
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_pkce_s256_is_refused() {
    guarded(async {
        for (args, listed) in [
            (&["--oauth-pkce-methods", "plain"][..], "plain"),
            (&["--oauth-omit-pkce-methods"][..], "nothing"),
        ] {
            let f = start(args).await;
            let err = refused(&f).await;
            assert_eq!(
                plexus_transport::error_chain(&err),
                format!(
                    "authentication failed: server \"docs\": the authorization server {} does not list S256 in \
                     code_challenge_methods_supported ({listed}); PKCE S256 is required",
                    f.oauth.issuer()
                )
            );
            assert!(f.requests_to(Endpoint::Authorize).is_empty());
            assert!(
                f.requests_to(Endpoint::Register).is_empty(),
                "refused before registering"
            );
            f.server.shutdown().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redirect_iss_is_compared_exactly_and_required_where_advertised() {
    guarded(async {
        let refusals = [
            (
                &["--oauth-redirect-iss", "wrong"][..],
                "its issuer (iss) \"https://wrong-issuer.example\" is not",
            ),
            (
                &["--oauth-redirect-iss", "trailing-slash"][..],
                "/\" is not the authorization server's",
            ),
            (
                &["--oauth-redirect-iss", "wrong", "--oauth-iss-supported", "absent"][..],
                "its issuer (iss) \"https://wrong-issuer.example\" is not",
            ),
            (
                &["--oauth-redirect-iss", "missing"][..],
                "it has no issuer (iss), which the authorization server",
            ),
        ];
        // The response is refused and the listener waits on for a right one, which never comes:
        // the login times out, and says why the callback it got was refused.
        let short = OAuthSettings {
            login_timeout: Duration::from_secs(1),
            ..settings()
        };
        for (args, reason) in refusals {
            let f = start(args).await;
            let err = f.caller(f.provider(short.clone())).initialize().await.unwrap_err();
            assert!(matches!(err, TransportError::NeedsAuth { .. }), "{args:?}: {err:?}");
            let text = plexus_transport::error_chain(&err);
            assert!(
                text.starts_with(
                    "the server needs authentication: server \"docs\": no authorization response arrived within 1 s \
                     (the login was not completed); 1 callback to the redirect listener was refused as not this \
                     login's authorization response (the last: "
                ),
                "{args:?}: {text}"
            );
            assert!(text.contains(reason), "{args:?}: {text}");
            assert_eq!(f.requests_to(Endpoint::Authorize).len(), 1, "{args:?}");
            assert!(
                f.requests_to(Endpoint::Token).is_empty(),
                "{args:?}: the code was never used"
            );
            f.server.shutdown().await;
        }
        // Neither advertised nor sent: accepted.
        for support in ["false", "absent"] {
            let f = start(&["--oauth-redirect-iss", "missing", "--oauth-iss-supported", support]).await;
            f.caller(f.provider(settings())).initialize().await.unwrap();
            assert_eq!(f.requests_to(Endpoint::Token).len(), 1, "{support}");
            f.server.shutdown().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_authorization_needs_auth_with_the_servers_reason() {
    guarded(async {
        let f = start(&["--oauth-authorize-error", "access_denied"]).await;
        let err = refused(&f).await;
        assert!(matches!(err, TransportError::NeedsAuth { .. }), "{err:?}");
        let text = plexus_transport::error_chain(&err);
        assert!(
            text.starts_with(&format!(
                "the server needs authentication: server \"docs\": the authorization server {} refused the authorization: access_denied",
                f.oauth.issuer()
            )),
            "{text}"
        );
        assert!(f.requests_to(Endpoint::Token).is_empty());
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_keeps_refusing_gets_at_most_three_authorizations() {
    guarded(async {
        let f = start(&[]).await;
        let caller = f.caller(f.provider(settings()));
        // Every login's tokens are revoked before they are used again: each request logs in.
        for _ in 0..MAX_AUTHORIZATION_ATTEMPTS {
            caller.initialize().await.unwrap();
            f.oauth.revoke_tokens();
        }
        let err = caller.initialize().await.unwrap_err();
        assert!(matches!(err, TransportError::AuthFailed { .. }), "{err:?}");
        assert_eq!(
            plexus_transport::error_chain(&err),
            "authentication failed: server \"docs\": gave up after 3 authorizations for the same scopes (none): the server \
             keeps refusing the tokens they gave"
        );
        assert_eq!(f.requests_to(Endpoint::Authorize).len(), 3);
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_user_agent_a_refused_token_is_refreshed_once_then_a_login_is_needed() {
    guarded(async {
        let f = start(&[]).await;
        // A login made earlier (by `plexus login`) left tokens in the store.
        f.provider(settings()).login().await.unwrap();
        let headless = f.headless_provider(settings());
        let caller = f.caller(headless);

        // The access token expired: refreshed once, and the retry passes.
        f.oauth.expire_access_tokens();
        caller.initialize().await.unwrap();
        let grants: Vec<(String, u16)> = f
            .requests_to(Endpoint::Token)
            .into_iter()
            .map(|t| (t.params["grant_type"].clone(), t.status))
            .collect();
        assert_eq!(
            grants,
            [
                ("authorization_code".to_owned(), 200),
                ("refresh_token".to_owned(), 200)
            ]
        );

        // Everything revoked: the refresh is refused, and no login can run here. The reason
        // says which authorization server rejected the refresh token, and what it answered.
        f.oauth.revoke_tokens();
        let err = caller.initialize().await.unwrap_err();
        assert!(matches!(err, TransportError::NeedsAuth { .. }), "{err:?}");
        let issuer = f.oauth.issuer();
        assert_eq!(
            plexus_transport::error_chain(&err),
            format!(
                "the server needs authentication: server \"docs\": the refresh token was rejected by the authorization \
                 server {issuer}; log in again with `plexus login docs`: the token endpoint {issuer}/token answered \
                 HTTP 400: invalid_grant (the refresh token is unknown, revoked or already rotated)"
            )
        );
        let token_requests = f.requests_to(Endpoint::Token);
        assert_eq!(token_requests.last().unwrap().status, 400);
        assert_eq!(f.requests_to(Endpoint::Authorize).len(), 1, "only the explicit login");
        let stored = f.store.get("docs", &issuer).await.unwrap().unwrap();
        assert!(stored.tokens.is_none(), "refused tokens are forgotten");
        assert!(stored.client.is_some(), "the registration is kept for the next login");

        // The dead refresh token is never sent again: the next request needs a login for the
        // same reason, without a token request.
        let err = caller.initialize().await.unwrap_err();
        assert!(matches!(err, TransportError::NeedsAuth { .. }), "{err:?}");
        assert!(
            plexus_transport::error_chain(&err).contains("the refresh token was rejected by the authorization server"),
            "{err}"
        );
        assert_eq!(f.requests_to(Endpoint::Token).len(), token_requests.len());
        f.server.shutdown().await;
    })
    .await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_store_that_is_a_symbolic_link_fails_requests_and_logins_naming_it() {
    guarded(async {
        let f = start(&[]).await;
        f.provider(settings()).login().await.unwrap();
        // Someone replaced the store by a link to another file: plexus reads no token through
        // it, and says why instead of asking for a login.
        let path = f.store.path().to_owned();
        let moved = f.home.path().join("moved.json");
        std::fs::rename(&path, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &path).unwrap();
        let refused = format!(
            "token store {}: it is a symbolic link, which plexus neither follows nor replaces (make it a regular file)",
            path.display()
        );
        let err = f
            .caller(f.headless_provider(settings()))
            .initialize()
            .await
            .unwrap_err();
        assert!(matches!(err, TransportError::AuthFailed { .. }), "{err:?}");
        assert!(
            plexus_transport::error_chain(&err).ends_with(&format!("server \"docs\": {refused}")),
            "{err}"
        );
        let authorizations = f.requests_to(Endpoint::Authorize).len();
        let err = f.provider(settings()).login().await.unwrap_err();
        assert_eq!(plexus_transport::error_chain(&err), refused);
        assert_eq!(
            f.requests_to(Endpoint::Authorize).len(),
            authorizations,
            "refused before any browser"
        );
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        f.server.shutdown().await;
    })
    .await;
}
