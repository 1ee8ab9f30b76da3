//! The OAuth provider against the test server's authorization server: discovery in the
//! specified order, registration, the code flow with PKCE, the token store, refreshing, and a
//! server that moves to another authorization server.

mod oauth_support;

use oauth_support::{guarded, settings, start};
use plexus_auth::oauth::OAuthSettings;
use plexus_auth::store::{ClientSource, Secret, StoredCredential, StoredTokens};
use plexus_testserver::{AuthMethod, Endpoint};
use plexus_transport::TransportError;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_runs_discovery_registration_and_a_login_and_the_retry_passes() {
    guarded(async {
        let f = start(&["--oauth-issuer-path", "/t1"]).await;
        let caller = f.caller(f.provider(settings()));
        caller.initialize().await.unwrap();

        assert_eq!(
            f.oauth_paths(),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-authorization-server/t1",
                "/t1/register",
                "/t1/authorize",
                "/t1/token"
            ]
        );
        let register = &f.requests_to(Endpoint::Register)[0];
        let body = register.body.as_ref().unwrap();
        assert_eq!(body["application_type"], "native");
        assert_eq!(body["grant_types"], json!(["authorization_code", "refresh_token"]));
        assert_eq!(body["token_endpoint_auth_method"], "none");
        let redirect_uri = body["redirect_uris"][0].as_str().unwrap().to_owned();
        assert!(
            redirect_uri.starts_with("http://127.0.0.1:") && redirect_uri.ends_with("/callback"),
            "{redirect_uri}"
        );

        let authorize = &f.requests_to(Endpoint::Authorize)[0];
        assert_eq!(authorize.status, 302);
        assert_eq!(authorize.params["response_type"], "code");
        assert_eq!(authorize.params["code_challenge_method"], "S256");
        assert_eq!(authorize.params["code_challenge"].len(), 43);
        assert_eq!(authorize.params["state"].len(), 43);
        assert_eq!(
            authorize.params["resource"],
            f.url(),
            "the resource exactly as published"
        );
        assert_eq!(authorize.params["redirect_uri"], redirect_uri);
        assert!(
            !authorize.params.contains_key("scope"),
            "nothing asks for a scope: none is sent"
        );

        let token = &f.requests_to(Endpoint::Token)[0];
        assert_eq!(token.status, 200);
        assert_eq!(token.params["grant_type"], "authorization_code");
        assert_eq!(token.params["resource"], f.url());
        assert_eq!(token.params["redirect_uri"], redirect_uri);
        assert_eq!(token.client_auth, Some(AuthMethod::None));

        let issuer = f.oauth.issuer();
        let stored = f
            .store
            .get("docs", &issuer)
            .await
            .unwrap()
            .expect("stored under server and issuer");
        assert_eq!(stored.resource, f.url());
        assert_eq!(stored.token_endpoint, format!("{issuer}/token"));
        let client = stored.client.unwrap();
        assert_eq!(client.source, ClientSource::Dynamic);
        assert_eq!(client.redirect_uri.as_deref(), Some(redirect_uri.as_str()));
        let tokens = stored.tokens.unwrap();
        assert!(tokens.expires_at.is_some() && tokens.refresh_token.is_some());
        assert_eq!(f.bearers(), [tokens.access_token.expose().to_owned()]);
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_tries_each_location_in_the_specified_order() {
    guarded(async {
        // No resource_metadata in the challenge: path-suffixed, then root. An issuer with a path:
        // RFC 8414, OpenID inserted, OpenID appended.
        let f = start(&[
            "--oauth-no-resource-metadata-param",
            "--oauth-prm",
            "root",
            "--oauth-issuer-path",
            "/t1",
            "--oauth-metadata",
            "oidc-suffix",
        ])
        .await;
        f.caller(f.provider(settings())).initialize().await.unwrap();
        assert_eq!(
            f.oauth_paths()[..5],
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-authorization-server/t1",
                "/.well-known/openid-configuration/t1",
                "/t1/.well-known/openid-configuration",
            ]
        );
        // The root document's resource is the origin, sent exactly as published (no `/` added).
        let origin = format!("http://{}", f.server.local_addr());
        assert_eq!(f.requests_to(Endpoint::Authorize)[0].params["resource"], origin);
        assert_eq!(f.requests_to(Endpoint::Token)[0].params["resource"], origin);
        f.server.shutdown().await;

        // An issuer without a path: the two root forms.
        let f = start(&["--oauth-metadata", "oidc"]).await;
        f.caller(f.provider(settings())).initialize().await.unwrap();
        assert_eq!(
            f.oauth_paths()[..3],
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-authorization-server",
                "/.well-known/openid-configuration",
            ]
        );
        assert_eq!(f.oauth_paths()[3], "/register");
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_03_26_server_without_metadata_gets_the_default_endpoints() {
    guarded(async {
        let f = start(&["--oauth-prm", "none", "--oauth-metadata", "none"]).await;
        f.caller(f.provider(settings())).initialize().await.unwrap();
        assert_eq!(
            f.oauth_paths(),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-authorization-server",
                "/.well-known/openid-configuration",
                "/register",
                "/authorize",
                "/token"
            ]
        );
        assert_eq!(f.requests_to(Endpoint::Authorize)[0].params["resource"], f.url());
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_tokens_serve_a_new_provider_and_only_for_their_resource() {
    guarded(async {
        let f = start(&[]).await;
        // A credential of the same server name for another resource is never sent.
        let foreign = StoredCredential::new("http://127.0.0.1:1/other", "http://127.0.0.1:1/token")
            .with_tokens(StoredTokens::new(Secret::new("foreign-token"), None, None, None));
        f.store.put("docs", "http://127.0.0.1:1", foreign).await.unwrap();

        f.caller(f.provider(settings())).initialize().await.unwrap();
        assert!(!f.bearers().contains(&"foreign-token".to_owned()));
        assert_eq!(f.requests_to(Endpoint::Token).len(), 1);

        // A new provider (a new process) finds the tokens in the store: no new login.
        f.oauth.clear_requests();
        f.caller(f.provider(settings())).initialize().await.unwrap();
        assert!(f.oauth_paths().is_empty(), "{:?}", f.oauth_paths());
        assert_eq!(f.requests_to(Endpoint::Mcp).len(), 1);
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_expires_soon_is_refreshed_first_and_the_old_refresh_token_is_kept() {
    guarded(async {
        // Tokens live 20 s, less than the 30 s margin: every use refreshes first. The refresh
        // responses carry no refresh token; the old one keeps working and is kept.
        let f = start(&["--oauth-expires-in", "20", "--oauth-refresh-rotation", "omit"]).await;
        let caller = f.caller(f.provider(settings()));
        caller.initialize().await.unwrap();
        let issuer = f.oauth.issuer();
        let first = f.store.get("docs", &issuer).await.unwrap().unwrap().tokens.unwrap();

        caller.initialize().await.unwrap();
        caller.initialize().await.unwrap();
        let tokens = f.requests_to(Endpoint::Token);
        let grants: Vec<&str> = tokens.iter().map(|t| t.params["grant_type"].as_str()).collect();
        // The login's own retry refreshes too: its token expires within the margin.
        assert_eq!(
            grants,
            ["authorization_code", "refresh_token", "refresh_token", "refresh_token"]
        );
        let original_refresh = first.refresh_token.as_ref().unwrap().expose();
        for refresh in &tokens[1..] {
            assert_eq!(refresh.params["refresh_token"], original_refresh);
            assert_eq!(refresh.params["resource"], f.url());
            assert_eq!(refresh.status, 200);
        }
        // Refreshed before use: the endpoint never answered 401 to a token.
        assert!(
            f.requests_to(Endpoint::Mcp)
                .iter()
                .all(|r| r.bearer.is_none() || r.status == 200)
        );
        let last = f.store.get("docs", &issuer).await.unwrap().unwrap().tokens.unwrap();
        assert_eq!(last.refresh_token, first.refresh_token);
        assert_ne!(last.access_token, first.access_token);
        assert_eq!(f.bearers().last().unwrap(), last.access_token.expose());
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_expires_in_a_token_is_used_until_a_401_and_then_refreshed_once() {
    guarded(async {
        let f = start(&["--oauth-omit-expires-in"]).await;
        let caller = f.caller(f.provider(settings()));
        caller.initialize().await.unwrap();
        let issuer = f.oauth.issuer();
        let first = f.store.get("docs", &issuer).await.unwrap().unwrap().tokens.unwrap();
        assert_eq!(first.expires_at, None, "an unknown expiry is stored as unknown");

        assert_eq!(f.oauth.expire_access_tokens(), 1);
        caller.initialize().await.unwrap();
        let mcp = f.requests_to(Endpoint::Mcp);
        let statuses: Vec<(u16, bool)> = mcp.iter().map(|r| (r.status, r.bearer.is_some())).collect();
        assert_eq!(statuses, [(401, false), (200, true), (401, true), (200, true)]);
        assert_eq!(mcp[2].bearer.as_deref(), Some(first.access_token.expose()));
        let grants: Vec<String> = f
            .requests_to(Endpoint::Token)
            .into_iter()
            .map(|t| t.params["grant_type"].clone())
            .collect();
        assert_eq!(grants, ["authorization_code", "refresh_token"]);
        assert_eq!(f.requests_to(Endpoint::Authorize).len(), 1, "no new login");
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_token_leads_to_a_new_login_reusing_the_registration() {
    guarded(async {
        let f = start(&[]).await;
        let caller = f.caller(f.provider(settings()));
        caller.initialize().await.unwrap();
        assert_eq!(f.oauth.revoke_tokens(), 2);
        caller.initialize().await.unwrap();
        let tokens = f.requests_to(Endpoint::Token);
        let outcome: Vec<(&str, u16)> = tokens
            .iter()
            .map(|t| (t.params["grant_type"].as_str(), t.status))
            .collect();
        assert_eq!(
            outcome,
            [
                ("authorization_code", 200),
                ("refresh_token", 400),
                ("authorization_code", 200)
            ]
        );
        assert_eq!(f.requests_to(Endpoint::Authorize).len(), 2);
        assert_eq!(f.requests_to(Endpoint::Register).len(), 1, "the registration is reused");
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_and_logout_are_explicit_operations() {
    guarded(async {
        let f = start(&["--oauth-prm-scopes", "mcp:read", "--oauth-challenge-scope", "mcp:write"]).await;
        let provider = f.provider(settings());
        let logged_in = provider.login().await.unwrap();
        assert_eq!(logged_in.issuer, f.oauth.issuer());
        // The login asked the server for its challenge first, and took its scope.
        assert_eq!(logged_in.scope.as_deref(), Some("mcp:write"));
        assert_eq!(f.requests_to(Endpoint::Authorize)[0].params["scope"], "mcp:write");
        let probe: Vec<(u16, bool)> = f
            .requests_to(Endpoint::Mcp)
            .iter()
            .map(|r| (r.status, r.bearer.is_some()))
            .collect();
        assert_eq!(probe, [(401, false)]);

        // The next connection uses the tokens at once.
        let caller = f.caller(provider.clone());
        caller.initialize().await.unwrap();
        assert_eq!(f.requests_to(Endpoint::Mcp).len(), 2);
        assert_eq!(f.requests_to(Endpoint::Authorize).len(), 1);

        assert!(provider.logout().await.unwrap());
        assert!(f.store.server("docs").await.unwrap().is_empty());
        assert!(!provider.logout().await.unwrap());
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_moves_gets_a_new_registration_and_no_credential_crosses_issuers() {
    guarded(async {
        let f = start(&[]).await;
        let caller = f.caller(f.provider(settings()));
        caller.initialize().await.unwrap();
        let first_issuer = f.oauth.issuer();
        let first_client = f.requests_to(Endpoint::Register)[0].client_id.clone();
        let first_tokens = f
            .store
            .get("docs", &first_issuer)
            .await
            .unwrap()
            .unwrap()
            .tokens
            .unwrap();

        let second_issuer = f.oauth.migrate_authorization_server().await.unwrap();
        assert_ne!(second_issuer, first_issuer);
        caller.initialize().await.unwrap();

        let registrations: Vec<Option<usize>> = f.requests_to(Endpoint::Register).iter().map(|r| r.authority).collect();
        assert_eq!(registrations, [Some(0), Some(1)]);
        let first_refresh = first_tokens.refresh_token.as_ref().unwrap().expose().to_owned();
        for request in f.oauth.requests().iter().filter(|r| r.authority == Some(1)) {
            assert_ne!(request.client_id, first_client, "{request:?}");
            assert!(
                request.params.values().all(|value| *value != first_refresh),
                "{request:?}"
            );
        }
        // The old issuer's token was refused by the resource, never sent to the new server.
        let new_at_old = f
            .requests_to(Endpoint::Token)
            .iter()
            .filter(|r| r.authority == Some(0))
            .count();
        assert_eq!(new_at_old, 1, "no refresh at the old authorization server");
        let stored = f.store.server("docs").await.unwrap();
        assert_eq!(stored.keys().cloned().collect::<Vec<_>>(), {
            let mut issuers = vec![first_issuer, second_issuer];
            issuers.sort();
            issuers
        });
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_registered_clients_authenticate_as_the_server_allows() {
    guarded(async {
        for (method, expected) in [
            ("client_secret_basic", AuthMethod::ClientSecretBasic),
            ("client_secret_post", AuthMethod::ClientSecretPost),
        ] {
            let f = start(&[
                "--oauth-client",
                "app:s3cret",
                "--oauth-no-registration",
                "--oauth-auth-methods",
                method,
            ])
            .await;
            let pre_registered = OAuthSettings {
                client_id: Some("app".to_owned()),
                ..settings()
            }
            .client_secret("s3cret");
            f.caller(f.provider(pre_registered)).initialize().await.unwrap();
            assert!(f.requests_to(Endpoint::Register).is_empty());
            let token = &f.requests_to(Endpoint::Token)[0];
            assert_eq!((token.client_auth, token.status), (Some(expected), 200), "{method}");
            assert_eq!(token.client_id.as_deref(), Some("app"));
            let stored = f.store.get("docs", &f.oauth.issuer()).await.unwrap().unwrap();
            let client = stored.client.unwrap();
            assert_eq!(client.source, ClientSource::PreRegistered);
            assert_eq!(
                client.client_secret, None,
                "a configured secret stays in the configuration"
            );
            f.server.shutdown().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_id_metadata_document_replaces_registration_where_supported() {
    guarded(async {
        let f = start(&["--oauth-cimd"]).await;
        let document_url = format!("http://{}/client.json", f.server.local_addr());
        let document = json!({
            "client_id": document_url,
            "client_name": "plexus",
            // A loopback redirect URI matches on any port (RFC 8252 §7.3).
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
        });
        assert_eq!(f.oauth.serve_document("/client.json", &document).unwrap(), document_url);
        let with_document = settings().client_metadata_url(&document_url);
        f.caller(f.provider(with_document)).initialize().await.unwrap();
        assert!(f.requests_to(Endpoint::Register).is_empty());
        assert_eq!(f.requests_to(Endpoint::Authorize)[0].params["client_id"], document_url);
        assert_eq!(f.requests_to(Endpoint::ClientMetadataFetch).len(), 1);
        f.server.shutdown().await;

        // Without a configured document URL, registration.
        let f = start(&["--oauth-cimd"]).await;
        f.caller(f.provider(settings())).initialize().await.unwrap();
        assert_eq!(f.requests_to(Endpoint::Register).len(), 1);
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_come_from_configuration_challenge_or_metadata_with_offline_access_when_listed() {
    guarded(async {
        let cases: [(&[&str], Vec<&str>, &str); 4] = [
            (&["--oauth-prm-scopes", "r1,r2"], vec![], "r1 r2"),
            (
                &["--oauth-prm-scopes", "r1,r2", "--oauth-challenge-scope", "c1"],
                vec![],
                "c1",
            ),
            (
                &["--oauth-prm-scopes", "r1", "--oauth-challenge-scope", "c1"],
                vec!["conf"],
                "conf",
            ),
            (
                &[
                    "--oauth-prm-scopes",
                    "r1",
                    "--oauth-scopes-supported",
                    "r1,offline_access",
                ],
                vec![],
                "r1 offline_access",
            ),
        ];
        for (args, configured, requested) in cases {
            let f = start(args).await;
            let with_scopes = settings().scopes(configured);
            f.caller(f.provider(with_scopes)).initialize().await.unwrap();
            assert_eq!(
                f.requests_to(Endpoint::Authorize)[0].params["scope"],
                requested,
                "{args:?}"
            );
            f.server.shutdown().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_steps_up_to_the_union_of_held_and_challenged_scopes() {
    guarded(async {
        let f = start(&[
            "--oauth-challenge-scope",
            "mcp:basic",
            "--oauth-tool-scope",
            "echo=tools:write",
        ])
        .await;
        let caller = f.caller(f.provider(settings()));
        let result = caller.call_tool("echo", json!({"text": "hi"})).await.unwrap();
        assert_eq!(result["content"][0]["text"], "hi");
        let scopes: Vec<String> = f
            .requests_to(Endpoint::Authorize)
            .into_iter()
            .map(|r| r.params["scope"].clone())
            .collect();
        assert_eq!(scopes, ["mcp:basic", "mcp:basic tools:write"]);
        let refused: Vec<Option<String>> = f
            .requests_to(Endpoint::Mcp)
            .into_iter()
            .filter(|r| r.status == 403)
            .map(|r| r.error)
            .collect();
        assert_eq!(refused, [Some("insufficient_scope".to_owned())]);
        f.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_without_a_user_agent_says_a_login_is_needed() {
    guarded(async {
        let f = start(&[]).await;
        let caller = f.caller(f.headless_provider(settings()));
        let err = caller.initialize().await.unwrap_err();
        assert!(matches!(err, TransportError::NeedsAuth { .. }), "{err:?}");
        assert_eq!(
            plexus_transport::error_chain(&err),
            format!(
                "the server needs authentication: server \"docs\": an OAuth login at {} is needed; log in with `plexus login docs`",
                f.oauth.issuer()
            )
        );
        assert!(f.requests_to(Endpoint::Register).is_empty() && f.requests_to(Endpoint::Authorize).is_empty());
        f.server.shutdown().await;
    })
    .await;
}
