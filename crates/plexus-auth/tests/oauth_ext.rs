//! The OAuth extensions against the test server's authorization server: client credentials with
//! a secret and with `private_key_jwt` (ES256), tokens renewed before they expire, and the JWT
//! bearer and token exchange requests (which that server does not grant: their requests are
//! checked as it recorded them, and its refusal must surface once, without a retry or another
//! grant).

mod oauth_support;

use oauth_support::{guarded, settings, start};
use plexus_auth::oauth::jwt::SigningKey;
use plexus_auth::oauth::{AssertionSource, IdentityProvider, OAuthGrant, OAuthSettings};
use plexus_auth::store::Secret;
use plexus_testserver::{AuthMethod, Endpoint};
use plexus_transport::TransportError;
use serde_json::json;

fn client_credentials(client_id: &str) -> OAuthSettings {
    settings().client_id(client_id).grant(OAuthGrant::ClientCredentials)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_with_a_secret_get_a_token_without_a_user() {
    guarded(async {
        let f = start(&["--oauth-client", "svc:s3cret"]).await;
        // No user agent: nobody could log in, and nobody needs to.
        let provider = f.headless_provider(client_credentials("svc").client_secret("s3cret"));
        f.caller(provider).initialize().await.unwrap();

        assert_eq!(
            f.oauth_paths(),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-authorization-server",
                "/token"
            ]
        );
        let token = &f.requests_to(Endpoint::Token)[0];
        assert_eq!(token.status, 200, "{token:?}");
        assert_eq!(token.params["grant_type"], "client_credentials");
        assert_eq!(token.params["resource"], f.url());
        assert!(
            !token.params.contains_key("client_secret"),
            "the secret goes in the Basic header"
        );
        assert_eq!(token.client_auth, Some(AuthMethod::ClientSecretBasic));
        assert_eq!(token.client_id.as_deref(), Some("svc"));

        let issued = f.oauth.tokens();
        assert_eq!(issued.len(), 1, "an access token and no refresh token: {issued:?}");
        assert!(!issued[0].refresh && issued[0].client_id == "svc");
        assert_eq!(issued[0].resource.as_deref(), Some(f.url().as_str()));
        assert_eq!(f.bearers(), [issued[0].token.clone()]);
        let stored = f.store.get("docs", &f.oauth.issuer()).await.unwrap().unwrap();
        let tokens = stored.tokens.unwrap();
        assert_eq!(tokens.access_token.expose(), issued[0].token);
        assert!(
            tokens.refresh_token.is_none(),
            "client credentials get no refresh token"
        );
        assert_eq!(stored.client.unwrap().auth_method, "client_secret_basic");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_key_jwt_client_signs_a_fresh_assertion_for_each_token_request() {
    guarded(async {
        let f = start(&["--oauth-auth-methods", "private_key_jwt"]).await;
        let key = SigningKey::generate().unwrap();
        f.oauth
            .register_jwt_client("svc-jwt", &json!({"keys": [key.public_jwk()]}))
            .unwrap();
        let provider = f.headless_provider(client_credentials("svc-jwt").private_key(key));
        let caller = f.caller(provider);
        caller.initialize().await.unwrap();
        // The token stops working: the 401 gets a new one, with a new assertion (the server
        // refuses an assertion id it has seen).
        assert_eq!(f.oauth.expire_access_tokens(), 1);
        caller.initialize().await.unwrap();

        let tokens = f.requests_to(Endpoint::Token);
        assert_eq!(tokens.len(), 2);
        for token in &tokens {
            assert_eq!((token.status, token.error.as_deref()), (200, None), "{token:?}");
            assert_eq!(token.client_auth, Some(AuthMethod::PrivateKeyJwt));
            assert_eq!(token.client_id.as_deref(), Some("svc-jwt"));
            assert_eq!(token.params["grant_type"], "client_credentials");
            assert_eq!(
                token.params["client_assertion_type"],
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            );
        }
        assert_ne!(
            tokens[0].params["client_assertion"], tokens[1].params["client_assertion"],
            "each token request has its own assertion"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assertion_signed_with_another_key_is_refused_with_the_servers_reason() {
    guarded(async {
        let f = start(&["--oauth-auth-methods", "private_key_jwt"]).await;
        let registered = SigningKey::generate().unwrap();
        f.oauth
            .register_jwt_client("svc-jwt", &json!(registered.public_jwk()))
            .unwrap();
        let other = SigningKey::generate().unwrap();
        let provider = f.headless_provider(client_credentials("svc-jwt").private_key(other));
        let err = f.caller(provider).initialize().await.unwrap_err();
        assert!(matches!(err, TransportError::AuthFailed { .. }), "{err:?}");
        let token = &f.requests_to(Endpoint::Token)[0];
        assert_eq!(
            plexus_transport::error_chain(&err),
            format!(
                "authentication failed: server \"docs\": the token endpoint {}/token answered HTTP 401: invalid_client ({})",
                f.oauth.issuer(),
                token.error_description.as_deref().unwrap()
            )
        );
        assert_eq!(token.error.as_deref(), Some("invalid_client"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_need_a_client_id() {
    guarded(async {
        let f = start(&[]).await;
        let provider = f.headless_provider(settings().grant(OAuthGrant::ClientCredentials));
        let err = f.caller(provider).initialize().await.unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&err),
            "authentication failed: server \"docs\": OAuth setting oauth.clientId: the client credentials grant needs the \
             client's id (and its secret or private key)"
        );
        assert!(f.requests_to(Endpoint::Token).is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_about_to_expire_is_renewed_before_it_is_sent() {
    guarded(async {
        // Tokens live 20 s, less than the 30 s refresh margin: every request renews the token
        // before it sends it (the first one after the 401 that got the first token).
        let f = start(&["--oauth-client", "svc:s3cret", "--oauth-expires-in", "20"]).await;
        let provider = f.headless_provider(client_credentials("svc").client_secret("s3cret"));
        let caller = f.caller(provider);
        caller.initialize().await.unwrap();
        caller.initialize().await.unwrap();

        let tokens = f.requests_to(Endpoint::Token);
        assert_eq!(tokens.len(), 3, "{tokens:?}");
        let mcp: Vec<u16> = f.requests_to(Endpoint::Mcp).iter().map(|r| r.status).collect();
        assert_eq!(mcp, [401, 200, 200], "no 401 was needed to renew");
        let issued: Vec<String> = f.oauth.tokens().into_iter().map(|t| t.token).collect();
        let bearers = f.bearers();
        assert_eq!(bearers.len(), 2);
        assert_ne!(bearers[0], bearers[1], "each request carried a token renewed for it");
        assert!(bearers.iter().all(|b| issued.contains(b)), "{bearers:?} {issued:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_jwt_bearer_grant_surfaces_once_without_a_retry_or_another_grant() {
    guarded(async {
        let f = start(&[]).await;
        let workload_token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl";
        let grant = OAuthGrant::JwtBearer {
            assertion: AssertionSource::Value(Secret::new(workload_token)),
        };
        let provider = f.headless_provider(settings().grant(grant).scopes(["files:read"]));
        let err = f.caller(provider).initialize().await.unwrap_err();

        let tokens = f.requests_to(Endpoint::Token);
        assert_eq!(tokens.len(), 1, "no retry, no other grant: {tokens:?}");
        let token = &tokens[0];
        assert_eq!(
            token.params["grant_type"],
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        );
        assert_eq!(token.params["assertion"], workload_token);
        assert_eq!(token.params["resource"], f.url());
        assert_eq!(token.params["scope"], "files:read");
        assert!(
            !token.params.contains_key("client_id"),
            "no client id configured: none sent"
        );
        assert!(f.requests_to(Endpoint::Authorize).is_empty() && f.requests_to(Endpoint::Register).is_empty());
        // The test server wants the client identified; the workload's platform would not.
        assert!(matches!(err, TransportError::AuthFailed { .. }), "{err:?}");
        assert_eq!(
            plexus_transport::error_chain(&err),
            format!(
                "authentication failed: server \"docs\": the token endpoint {}/token answered HTTP 401: invalid_client \
                 (no client authentication: neither Basic credentials nor a client_id)",
                f.oauth.issuer()
            )
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enterprise_managed_authorization_starts_with_a_token_exchange_at_the_identity_provider() {
    guarded(async {
        // The test server's token endpoint plays the identity provider (it grants no token
        // exchange, so the flow stops there with its answer).
        let f = start(&[]).await;
        let idp_issuer = f.oauth.issuer();
        let id_token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl";
        let mut idp = IdentityProvider::new(
            idp_issuer.clone(),
            "idp-client",
            AssertionSource::Value(Secret::new(id_token)),
        );
        idp.token_endpoint = Some(format!("{idp_issuer}/token"));
        let provider = f.headless_provider(
            settings()
                .client_id("mcp-client")
                .client_secret("s")
                .grant(OAuthGrant::EnterpriseManaged(Box::new(idp))),
        );
        let err = f.caller(provider).initialize().await.unwrap_err();

        let tokens = f.requests_to(Endpoint::Token);
        assert_eq!(tokens.len(), 1, "{tokens:?}");
        let exchange = &tokens[0].params;
        assert_eq!(
            exchange["grant_type"],
            "urn:ietf:params:oauth:grant-type:token-exchange"
        );
        assert_eq!(exchange["subject_token"], id_token);
        assert_eq!(
            exchange["subject_token_type"],
            "urn:ietf:params:oauth:token-type:id_token"
        );
        assert_eq!(
            exchange["requested_token_type"],
            "urn:ietf:params:oauth:token-type:id-jag"
        );
        assert_eq!(
            exchange["audience"],
            f.oauth.issuer(),
            "the ID-JAG is for the server's authorization server"
        );
        assert_eq!(exchange["resource"], f.url());
        assert_eq!(exchange["client_id"], "idp-client");
        assert!(
            plexus_transport::error_chain(&err).starts_with(&format!(
                "authentication failed: server \"docs\": the token endpoint {idp_issuer}/token answered HTTP "
            )),
            "{err}"
        );
    })
    .await;
}

/// The claims of a DPoP proof, after checking its signature with the key of its header.
fn proof_claims(proof: &str) -> serde_json::Value {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    let parts: Vec<&str> = proof.split('.').collect();
    let part =
        |i: usize| -> serde_json::Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[i]).unwrap()).unwrap() };
    let header = part(0);
    assert_eq!(
        (header["typ"].as_str(), header["alg"].as_str()),
        (Some("dpop+jwt"), Some("ES256"))
    );
    let coordinate = |name: &str| URL_SAFE_NO_PAD.decode(header["jwk"][name].as_str().unwrap()).unwrap();
    let point = [vec![4u8], coordinate("x"), coordinate("y")].concat();
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
        )
        .expect("the proof verifies with its header's key");
    part(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dpop_bound_token_goes_with_a_proof_per_request_and_a_nonce_challenge_is_retried() {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use plexus_auth::oauth::OAuthProvider;
    use plexus_auth::store::{StoredCredential, StoredTokens, TokenStore};
    use plexus_transport::{AuthProvider, Rejection};

    guarded(async {
        let home = tempfile::tempdir().unwrap();
        let store = TokenStore::new(home.path().join("credentials.json"));
        let key = SigningKey::generate().unwrap();
        let mut tokens = StoredTokens::new(Secret::new("bound-token"), None, Some(3600), None);
        tokens.token_type = "DPoP".to_owned();
        tokens.dpop_key = Some(Secret::new(URL_SAFE_NO_PAD.encode(key.to_pkcs8().unwrap())));
        let url = "http://127.0.0.1:9/mcp";
        store
            .put(
                "docs",
                "http://127.0.0.1:9",
                StoredCredential::new(url, "http://127.0.0.1:9/token").with_tokens(tokens),
            )
            .await
            .unwrap();
        // A new process: the key comes from the store, with the token it is bound to.
        let provider = OAuthProvider::new("docs", url, settings(), store).unwrap();

        let headers = provider.headers("GET", "http://127.0.0.1:9/mcp?x=1#f").await.unwrap();
        assert_eq!(headers[0], ("Authorization".to_owned(), "DPoP bound-token".to_owned()));
        assert_eq!(headers[1].0, "DPoP");
        let first = proof_claims(&headers[1].1);
        assert_eq!((first["htm"].as_str(), first["htu"].as_str()), (Some("GET"), Some(url)));
        assert!(first.get("nonce").is_none());

        // The server wants its nonce: the same token is retried, with a proof carrying it.
        let rejection = Rejection::new(format!("POST {url}"), url, 401).with_headers([
            (
                "WWW-Authenticate",
                &br#"DPoP error="use_dpop_nonce", error_description="nonce required""#[..],
            ),
            ("DPoP-Nonce", b"server-nonce-1"),
        ]);
        assert!(provider.on_rejection(&rejection).await.is_retry());
        let headers = provider.headers("POST", url).await.unwrap();
        let second = proof_claims(&headers[1].1);
        assert_eq!(
            (second["htm"].as_str(), second["htu"].as_str()),
            (Some("POST"), Some(url))
        );
        assert_eq!(second["nonce"], "server-nonce-1");
        assert_ne!(first["jti"], second["jti"], "a fresh proof per request");
        assert_eq!(first["ath"], second["ath"], "both are for the same token");
    })
    .await;
}

#[tokio::test]
async fn oauths_requests_go_through_the_environments_proxy() {
    let log = plexus_testserver::EventLogFile::new("oauth-proxy");
    let proxy = plexus_testserver::ProxyServer::from_args(&[&log.arg()]).await.unwrap();
    // A child process, whose environment is its own: HTTP_PROXY names the proxy.
    let proxy_url = proxy.url().to_owned();
    tokio::task::spawn_blocking(move || {
        plexus_testserver::child_test::run_ignored_test(
            "client_credentials_in_this_environment",
            &[("HTTP_PROXY", &proxy_url)],
            &plexus_testserver::child_test::PROXY_VARIABLES,
        );
    })
    .await
    .unwrap();
    let targets: Vec<String> = log
        .matching(&json!({"event": "proxy"}))
        .iter()
        .filter_map(|event| event["target"].as_str().map(str::to_owned))
        .collect();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/token",
    ] {
        assert!(
            targets.iter().any(|target| target.ends_with(path)),
            "OAuth's request for {path} went through the proxy: {targets:?}"
        );
    }
}

/// Client credentials with the environment as it is (run in a child process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by oauths_requests_go_through_the_environments_proxy"]
async fn client_credentials_in_this_environment() {
    guarded(async {
        let f = start(&["--oauth-client", "svc:s3cret"]).await;
        let provider = f.headless_provider(client_credentials("svc").client_secret("s3cret"));
        f.caller(provider).initialize().await.unwrap();
        assert_eq!(f.requests_to(Endpoint::Token).len(), 1);
    })
    .await;
}
