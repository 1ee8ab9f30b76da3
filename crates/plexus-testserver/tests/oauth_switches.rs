//! The switches of the built-in authorization server and of the protected resource: where the
//! discovery documents are and what they say, the redirect's `iss`, scopes and refresh tokens,
//! token lifetimes, an authorization server of its own and its migration, client ID metadata
//! documents, the legacy SSE transport, the command line and the event log.

mod oauth_support;

use std::io::{BufRead, BufReader};
use std::process::{Command as Process, Stdio};

use clap::Parser;
use oauth_support::{REDIRECT_URI, authorize_params, start, start_mode};
use plexus_testserver::{
    Cli, Command, Endpoint, InvalidArgument, JwksProblem, LimitReached, MetadataLocation, OAuthError, PathProblem,
    PrmLocation, RedirectIss,
};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_exists_where_the_switch_says() {
    let urls = [
        "/.well-known/oauth-authorization-server/t1",
        "/.well-known/openid-configuration/t1",
        "/t1/.well-known/openid-configuration",
    ];
    for (switch, served) in [
        ("oauth", [true, false, false]),
        ("oidc", [false, true, false]),
        ("oidc-suffix", [false, false, true]),
        ("oauth,oidc,oidc-suffix", [true, true, true]),
        ("none", [false, false, false]),
    ] {
        let f = start(&["--oauth-issuer-path", "/t1", "--oauth-metadata", switch]).await;
        for (url, served) in urls.iter().zip(served) {
            let answer = f.get_path(url).await;
            assert_eq!(answer.status, if served { 200 } else { 404 }, "{switch}: {url}");
            if served {
                assert_eq!(answer.body["issuer"], f.oauth.issuer());
                assert_eq!(answer.body.get("jwks_uri").is_some(), url.contains("openid"), "{url}");
            } else {
                assert_eq!(
                    answer.body["error_description"],
                    "no authorization server metadata here (--oauth-metadata)"
                );
            }
        }
        let recorded: Vec<(u16, Option<usize>)> = f
            .oauth
            .requests_to(Endpoint::AuthorizationServerMetadata)
            .iter()
            .map(|r| (r.status, r.authority))
            .collect();
        let expected: Vec<(u16, Option<usize>)> =
            served.iter().map(|s| (if *s { 200 } else { 404 }, Some(0))).collect();
        assert_eq!(recorded, expected, "{switch}: every probe is recorded");
        f.server.shutdown().await;
    }
    let f = start(&["--oauth-metadata", "oidc"]).await;
    let jwks = f.get(&format!("{}/jwks.json", f.oauth.issuer())).await;
    assert_eq!(jwks.body, json!({"keys": []}));
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_03_26_server_has_no_discovery_documents_but_endpoints_at_the_origin() {
    let f = start(&[
        "--oauth-metadata",
        "none",
        "--oauth-prm",
        "none",
        "--oauth-no-resource-metadata-param",
    ])
    .await;
    assert_eq!(f.oauth.issuer(), f.origin);
    let refused = f.initialize(None).await;
    assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        assert_eq!(f.get_path(path).await.status, 404, "{path}");
    }
    let (_, tokens) = f.login("").await;
    assert_eq!(
        f.initialize(Some(tokens["access_token"].as_str().unwrap()))
            .await
            .status,
        200
    );
    let paths: Vec<String> = f.oauth.paths();
    assert_eq!(
        paths[5..],
        ["/register", "/authorize", "/token", "/mcp"].map(str::to_owned),
        "{paths:?}"
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_fields_follow_the_switches() {
    let f = start(&[
        "--oauth-metadata-issuer",
        "https://evil.example",
        "--oauth-pkce-methods",
        "plain",
        "--oauth-iss-supported",
        "false",
        "--oauth-cimd",
        "--oauth-auth-methods",
        "client_secret_basic",
        "--oauth-scopes-supported",
        "mcp:basic,offline_access",
        "--oauth-no-registration",
    ])
    .await;
    let metadata = f.get_path("/.well-known/oauth-authorization-server").await.body;
    assert_eq!(metadata["issuer"], "https://evil.example");
    assert_eq!(metadata["code_challenge_methods_supported"], json!(["plain"]));
    assert_eq!(metadata["authorization_response_iss_parameter_supported"], false);
    assert_eq!(metadata["client_id_metadata_document_supported"], true);
    assert_eq!(
        metadata["token_endpoint_auth_methods_supported"],
        json!(["client_secret_basic"])
    );
    assert_eq!(metadata["scopes_supported"], json!(["mcp:basic", "offline_access"]));
    assert!(metadata.get("registration_endpoint").is_none());
    let register = f.register(&json!({"redirect_uris": [REDIRECT_URI]})).await;
    assert_eq!(register.status, 404);
    assert_eq!(
        f.oauth.requests_to(Endpoint::Register)[0].status,
        404,
        "the attempt is recorded"
    );
    f.server.shutdown().await;

    let f = start(&["--oauth-omit-pkce-methods", "--oauth-iss-supported", "absent"]).await;
    let metadata = f.get_path("/.well-known/oauth-authorization-server").await.body;
    assert!(metadata.get("code_challenge_methods_supported").is_none());
    assert!(metadata.get("authorization_response_iss_parameter_supported").is_none());
    assert!(metadata.get("client_id_metadata_document_supported").is_none());
    // Registration refuses a method that is not supported.
    let f2 = start(&["--oauth-auth-methods", "none"]).await;
    let refused = f2
        .register(&json!({"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "client_secret_post"}))
        .await;
    assert_eq!(
        (refused.status, refused.body.clone()),
        (
            400,
            json!({"error": "invalid_client_metadata", "error_description": "token_endpoint_auth_method \"client_secret_post\" is not supported (supported: none)"})
        )
    );
    let defaulted = f2.register(&json!({"redirect_uris": [REDIRECT_URI]})).await;
    assert_eq!(
        defaulted.body["token_endpoint_auth_method"], "none",
        "the only supported method"
    );
    f.server.shutdown().await;
    f2.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redirect_iss_follows_the_switch() {
    for (switch, expected) in [
        ("missing", None),
        ("wrong", Some("https://wrong-issuer.example".to_owned())),
        ("trailing-slash", Some("/".to_owned())),
    ] {
        let f = start(&["--oauth-redirect-iss", switch, "--oauth-issuer-path", "/t1"]).await;
        let client_id = f.register_public().await;
        let resource = f.mcp_url();
        let back = f
            .authorize(&authorize_params(&client_id, &resource))
            .await
            .location_params();
        let expected = expected.map(|iss| {
            if iss == "/" {
                format!("{}/", f.oauth.issuer())
            } else {
                iss
            }
        });
        assert_eq!(back.get("iss"), expected.as_ref(), "{switch}");
        assert!(back.contains_key("code"));
        f.server.shutdown().await;
    }
    let f = start(&["--oauth-authorize-error", "access_denied"]).await;
    let client_id = f.register_public().await;
    let resource = f.mcp_url();
    let back = f
        .authorize(&authorize_params(&client_id, &resource))
        .await
        .location_params();
    assert_eq!(back["error"], "access_denied");
    assert_eq!(back["iss"], f.oauth.issuer());
    assert!(!back.contains_key("code"));
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_resource_metadata_follows_the_switches() {
    let f = start(&[
        "--oauth-prm",
        "root",
        "--oauth-prm-scopes",
        "mcp:basic,mcp:write",
        "--oauth-challenge-scope",
        "mcp:basic",
    ])
    .await;
    let root = format!("{}/.well-known/oauth-protected-resource", f.origin);
    assert_eq!(f.oauth.resource_metadata_url(), root);
    assert_eq!(
        f.initialize(None).await.header("www-authenticate"),
        Some(format!("Bearer scope=\"mcp:basic\", resource_metadata=\"{root}\"").as_str())
    );
    let prm = f.get(&root).await.body;
    assert_eq!(prm["resource"], f.origin, "the root form names the origin");
    assert_eq!(prm["scopes_supported"], json!(["mcp:basic", "mcp:write"]));
    assert_eq!(f.get(&format!("{root}/mcp")).await.status, 404);
    assert_eq!(f.get(&format!("{root}/other")).await.status, 404);
    assert_eq!(f.get_path("/.well-known/unknown").await.status, 404);
    let endpoints: Vec<(Endpoint, u16)> = f.oauth.requests().iter().map(|r| (r.endpoint, r.status)).collect();
    assert_eq!(
        endpoints,
        [
            (Endpoint::Mcp, 401),
            (Endpoint::ProtectedResourceMetadata, 200),
            (Endpoint::ProtectedResourceMetadata, 404),
            (Endpoint::ProtectedResourceMetadata, 404),
            (Endpoint::Other, 404),
        ]
    );
    // A token for the origin is a token for this resource (the root form's resource).
    let client_id = f.register_public().await;
    let code = f.code(&client_id, &[]).await;
    let origin = f.origin.clone();
    let tokens = f
        .token(
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("code_verifier", oauth_support::VERIFIER),
                ("client_id", &client_id),
            ],
            None,
        )
        .await;
    assert_eq!(
        tokens.body["error"], "invalid_request",
        "resource is required at the token endpoint"
    );
    let resource_params: Vec<(&str, &str)> = authorize_params(&client_id, &origin).into_iter().collect();
    let back = f.authorize(&resource_params).await.location_params();
    let tokens = f
        .token(
            &[
                ("grant_type", "authorization_code"),
                ("code", &back["code"]),
                ("code_verifier", oauth_support::VERIFIER),
                ("client_id", &client_id),
                ("resource", &origin),
            ],
            None,
        )
        .await;
    assert_eq!(
        f.initialize(Some(tokens.body["access_token"].as_str().unwrap()))
            .await
            .status,
        200
    );
    f.server.shutdown().await;

    let f = start(&[
        "--oauth-prm",
        "path,root",
        "--oauth-prm-resource",
        "https://elsewhere.example/mcp",
    ])
    .await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let prm = f.get_path(path).await;
        assert_eq!(prm.body["resource"], "https://elsewhere.example/mcp", "{path}");
    }
    assert!(
        f.oauth
            .resource_metadata_url()
            .ends_with("/oauth-protected-resource/mcp")
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_supported_and_offline_access_decide_refresh_tokens() {
    let f = start(&[
        "--oauth-scopes-supported",
        "mcp:basic",
        "--oauth-refresh-tokens",
        "offline-access",
    ])
    .await;
    let client_id = f.register_public().await;
    let resource = f.mcp_url();
    let mut params = authorize_params(&client_id, &resource);
    params.push(("scope", "mcp:basic offline_access"));
    let back = f.authorize(&params).await.location_params();
    assert_eq!(back["error"], "invalid_scope");
    assert_eq!(
        back["error_description"],
        "the scope \"offline_access\" is not supported (scopes_supported: mcp:basic)"
    );
    let (_, tokens) = f.login("mcp:basic").await;
    assert!(
        tokens.get("refresh_token").is_none(),
        "no offline_access, no refresh token"
    );
    f.server.shutdown().await;

    let f = start(&[
        "--oauth-scopes-supported",
        "mcp:basic,offline_access",
        "--oauth-refresh-tokens",
        "offline-access",
    ])
    .await;
    let (_, tokens) = f.login("mcp:basic offline_access").await;
    assert!(tokens["refresh_token"].is_string());
    f.server.shutdown().await;

    let f = start(&[
        "--oauth-refresh-tokens",
        "never",
        "--oauth-expires-in",
        "5",
        "--oauth-omit-expires-in",
    ])
    .await;
    let (_, tokens) = f.login("x").await;
    let mut keys = tokens.as_object().unwrap().keys().collect::<Vec<_>>();
    keys.sort();
    assert_eq!(keys, ["access_token", "scope", "token_type"]);
    f.server.shutdown().await;
    let f = start(&["--oauth-expires-in", "5"]).await;
    let (_, tokens) = f.login("").await;
    assert_eq!(tokens["expires_in"], 5);
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_server_of_its_own_and_its_migration() {
    let f = start(&["--oauth-as-port", "0", "--oauth-issuer-path", "/t1"]).await;
    let first = f.oauth.issuer();
    assert!(
        first.ends_with("/t1") && !first.starts_with(&f.origin),
        "{first} vs {}",
        f.origin
    );
    assert_eq!(
        f.get_path("/.well-known/oauth-authorization-server/t1").await.status,
        404,
        "not on the resource's listener"
    );
    let (old_client, tokens) = f.login("").await;
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    assert_eq!(f.initialize(Some(&access)).await.status, 200);
    assert_eq!(f.get(&format!("{first}/nothing")).await.status, 404);

    let second = f.oauth.migrate_authorization_server().await.unwrap();
    assert_ne!(second, first);
    assert_eq!(f.oauth.issuer(), second);
    assert_eq!(f.oauth.issuers(), [first.clone(), second.clone()]);
    let prm = f.get(&f.oauth.resource_metadata_url()).await.body;
    assert_eq!(prm["authorization_servers"], json!([second]));
    let refused = f.initialize(Some(&access)).await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.body["error_description"],
        format!(
            "the access token was issued by {first}, not by the authorization server this resource trusts now ({second})"
        )
    );
    // The old client is unknown to the new server; a new registration works there.
    let resource = f.mcp_url();
    let unknown = f.authorize(&authorize_params(&old_client, &resource)).await;
    assert_eq!(unknown.body["error"], "invalid_client");
    let (new_client, tokens) = f.login("").await;
    assert!(new_client.starts_with("as1-client-"), "{new_client}");
    assert_eq!(
        f.initialize(Some(tokens["access_token"].as_str().unwrap()))
            .await
            .status,
        200
    );
    let registrations: Vec<Option<usize>> = f
        .oauth
        .requests_to(Endpoint::Register)
        .iter()
        .map(|r| r.authority)
        .collect();
    assert_eq!(registrations, [Some(0), Some(1)]);
    f.server.shutdown().await;

    let f = start(&["--oauth-migrate-after", "1"]).await;
    let (_, tokens) = f.login("").await;
    let access = tokens["access_token"].as_str().unwrap();
    let first = f.oauth.issuer();
    assert_eq!(f.initialize(Some(access)).await.status, 200, "the first request passes");
    assert_ne!(f.oauth.issuer(), first, "then the server moved");
    assert_eq!(f.initialize(Some(access)).await.status, 401);
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handle_says_what_is_wrong_with_an_argument_or_which_limit_was_reached() {
    let f = start(&["--oauth-cimd"]).await;
    let error = f.oauth.serve_document("client.json", &json!({})).unwrap_err();
    assert!(matches!(
        &error,
        OAuthError::Invalid(InvalidArgument::Path(PathProblem::NotAbsolute { path })) if path == "client.json"
    ));
    assert_eq!(error.to_string(), "\"client.json\" does not start with '/'");
    let error = f
        .oauth
        .provide_client_metadata("ftp://app.example/c.json", &json!({}))
        .unwrap_err();
    assert!(matches!(
        &error,
        OAuthError::Invalid(InvalidArgument::NotHttpUrl { url }) if url == "ftp://app.example/c.json"
    ));
    assert_eq!(error.to_string(), "\"ftp://app.example/c.json\" is not an http(s) URL");
    let error = f.oauth.register_jwt_client("c", &json!({"kty": "RSA"})).unwrap_err();
    assert!(matches!(
        &error,
        OAuthError::Invalid(InvalidArgument::Jwks(JwksProblem::Unsupported { .. }))
    ));
    assert_eq!(
        error.to_string(),
        "only EC P-256 keys are supported (kty \"RSA\", crv \"(none)\")"
    );
    let big = json!("x".repeat(64 * 1024));
    assert!(matches!(
        f.oauth.serve_document("/big.json", &big).unwrap_err(),
        OAuthError::Limit(LimitReached::DocumentSize {
            size: 65538,
            max: 65536
        })
    ));
    for i in 0..64 {
        f.oauth.serve_document(&format!("/{i}.json"), &json!({})).unwrap();
    }
    let error = f.oauth.serve_document("/64.json", &json!({})).unwrap_err();
    assert!(matches!(error, OAuthError::Limit(LimitReached::Documents { max: 64 })));
    assert_eq!(error.to_string(), "64 documents are held, the limit");
    for _ in 0..15 {
        f.oauth.migrate_authorization_server().await.unwrap();
    }
    let error = f.oauth.migrate_authorization_server().await.unwrap_err();
    assert!(matches!(error, OAuthError::Limit(LimitReached::Migrations { max: 15 })));
    assert_eq!(
        error.to_string(),
        "the authorization server moved 15 times already, the limit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_id_metadata_documents_are_fetched_and_checked() {
    let f = start(&["--oauth-cimd", "--oauth-issuer-path", "/t1"]).await;
    let document = |url: &str| {
        json!({
            "client_id": url,
            "client_name": "plexus",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        })
    };
    let url = format!("{}/client.json", f.origin);
    assert_eq!(f.oauth.serve_document("/client.json", &document(&url)).unwrap(), url);
    let code = f.code(&url, &[]).await;
    let tokens = f.exchange(&url, &code).await;
    assert_eq!(tokens.status, 200, "{tokens:?}");
    assert!(tokens.body["refresh_token"].is_string());
    let fetch = &f.oauth.requests_to(Endpoint::ClientMetadataFetch)[0];
    assert_eq!(
        (fetch.path.as_str(), fetch.status, fetch.error.as_deref()),
        (url.as_str(), 200, None)
    );
    assert_eq!(f.oauth.requests_to(Endpoint::Document).len(), 1);

    let resource = f.mcp_url();
    let refusal = |client_id: String| {
        let f = &f;
        let resource = resource.clone();
        async move { f.authorize(&authorize_params(&client_id, &resource)).await }
    };
    let other = format!("{}/other.json", f.origin);
    f.oauth.serve_document("/other.json", &document(&url)).unwrap();
    let answer = refusal(other.clone()).await;
    assert_eq!(
        (
            answer.status,
            answer.body["error"].clone(),
            answer.body["error_description"].clone()
        ),
        (
            400,
            json!("invalid_client"),
            json!(format!(
                "the client ID metadata document at {other} names the client_id \"{url}\", not its own URL"
            ))
        )
    );
    let secret = format!("{}/secret.json", f.origin);
    let mut with_secret = document(&secret);
    with_secret["token_endpoint_auth_method"] = json!("client_secret_basic");
    f.oauth.serve_document("/secret.json", &with_secret).unwrap();
    assert_eq!(
        refusal(secret.clone()).await.body["error_description"],
        format!(
            "the client ID metadata document {secret} uses client_secret_basic, but such a client has no shared secret"
        )
    );
    let missing = format!("{}/missing.json", f.origin);
    assert_eq!(
        refusal(missing.clone()).await.body["error_description"],
        format!("fetching the client ID metadata document {missing} got HTTP 404")
    );
    assert_eq!(
        refusal("https://app.example/client.json".to_owned()).await.body["error_description"],
        "cannot fetch https://app.example/client.json: this test server fetches client ID metadata documents over plain http only (provide https ones with --oauth-cimd-document)"
    );
    // An https client id, provided by the test instead of fetched.
    let https = "https://conformance-test.local/client-metadata.json".to_owned();
    f.oauth.provide_client_metadata(&https, &document(&https)).unwrap();
    let code = f.code(&https, &[]).await;
    assert_eq!(f.exchange(&https, &code).await.status, 200);
    let fetches: Vec<(u16, Option<String>)> = f
        .oauth
        .requests_to(Endpoint::ClientMetadataFetch)
        .iter()
        .map(|r| (r.status, r.param("source").map(str::to_owned)))
        .collect();
    let provided = Some("provided".to_owned());
    assert_eq!(
        fetches,
        [
            (200, None),
            (200, None),
            (200, None),
            (404, None),
            (0, None),
            (200, provided)
        ]
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_legacy_sse_transport_is_protected_too() {
    let f = start_mode("sse", &[]).await;
    let prm_url = format!("{}/.well-known/oauth-protected-resource/sse", f.origin);
    let stream = f.get(&f.mcp_url()).await;
    assert_eq!(stream.status, 401);
    assert_eq!(
        stream.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{prm_url}\"").as_str())
    );
    let post = f
        .http
        .post(format!("{}/messages?sessionId=x", f.origin))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(post.status().as_u16(), 401);
    let (_, tokens) = f.login("").await;
    let opened = f
        .http
        .get(f.mcp_url())
        .bearer_auth(tokens["access_token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status().as_u16(), 200);
    assert_eq!(opened.headers()["content-type"], "text/event-stream");
    drop(opened);
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_refused_in_oauth_form() {
    let f = start(&[]).await;
    let big = "x".repeat(17 * 1024);
    let answer = f
        .token(&[("grant_type", "authorization_code"), ("code", &big)], None)
        .await;
    assert_eq!(
        (answer.status, answer.body.clone()),
        (
            413,
            json!({"error": "invalid_request", "error_description": "the request body exceeds the limit of 16384 bytes"})
        )
    );
    let answer = f.register(&json!({"client_name": big})).await;
    assert_eq!(
        (answer.status, answer.body["error"].clone()),
        (413, json!("invalid_client_metadata"))
    );
    f.server.shutdown().await;
}

#[test]
fn every_oauth_flag_parses_and_each_requires_oauth() {
    let cli = Cli::try_parse_from([
        "plexus-testserver",
        "http",
        "--oauth",
        "--oauth-required-scope=a",
        "--oauth-tool-scope=echo=b c",
        "--oauth-challenge-scope=a b",
        "--oauth-no-resource-metadata-param",
        "--oauth-prm=path,root",
        "--oauth-prm-resource=https://x.example",
        "--oauth-prm-scopes=a,b",
        "--oauth-issuer-path=/t1",
        "--oauth-as-port=0",
        "--oauth-metadata=oidc,oidc-suffix",
        "--oauth-metadata-issuer=https://y.example",
        "--oauth-pkce-methods=plain",
        "--oauth-iss-supported=absent",
        "--oauth-redirect-iss=trailing-slash",
        "--oauth-cimd",
        "--oauth-cimd-document=https://app.example/c.json?v=1=/tmp/c.json",
        "--oauth-auth-methods=none,client_secret_post",
        "--oauth-scopes-supported=a,offline_access",
        "--oauth-no-registration",
        "--oauth-client=id:secret",
        "--oauth-jwt-client=svc=/tmp/svc.jwks",
        "--oauth-resource-optional",
        "--oauth-authorize-error=access_denied",
        "--oauth-expires-in=10",
        "--oauth-omit-expires-in",
        "--oauth-refresh-tokens=offline-access",
        "--oauth-refresh-rotation=omit",
        "--oauth-migrate-after=2",
        "--oauth-document=/c.json=/tmp/c.json",
    ])
    .unwrap();
    let Command::Http(options) = cli.command else {
        panic!("not http")
    };
    let o = options.oauth;
    assert!(o.enabled && o.no_resource_metadata_param && o.cimd && o.no_registration && o.resource_optional);
    assert_eq!(o.tool_scopes[0].scopes, ["b", "c"]);
    assert_eq!(o.prm, [PrmLocation::Path, PrmLocation::Root]);
    assert_eq!(o.metadata, [MetadataLocation::Oidc, MetadataLocation::OidcSuffix]);
    assert_eq!(o.redirect_iss, RedirectIss::TrailingSlash);
    assert_eq!((o.as_port, o.expires_in, o.migrate_after), (Some(0), 10, Some(2)));
    assert_eq!(o.clients[0].secret.as_deref(), Some("secret"));
    assert_eq!(o.documents[0].path, "/c.json");
    assert_eq!(o.jwt_clients[0].id, "svc");
    assert_eq!(o.cimd_documents[0].url, "https://app.example/c.json?v=1");
    let sse = Cli::try_parse_from(["plexus-testserver", "sse", "--oauth", "--oauth-cimd"]).unwrap();
    let Command::Sse(options) = sse.command else {
        panic!("not sse")
    };
    assert!(options.oauth.cimd);
    for flag in ["--oauth-cimd", "--oauth-issuer-path=/t1", "--oauth-prm=root"] {
        let err = Cli::try_parse_from(["plexus-testserver", "http", flag]).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::MissingRequiredArgument,
            "{flag}: {err}"
        );
    }
    let err = Cli::try_parse_from(["plexus-testserver", "ws", "--oauth"]).unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
}

#[test]
fn the_binary_prints_the_issuer_and_logs_oauth_events_with_secrets_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let mut child = Process::new(env!("CARGO_BIN_EXE_plexus-testserver"))
        .args([
            "http",
            "--oauth",
            "--oauth-as-port",
            "0",
            "--oauth-issuer-path",
            "/t1",
            "--event-log",
        ])
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    let url = first.strip_prefix("listening on ").unwrap().to_owned();
    let issuer = second.strip_prefix("authorization server at ").unwrap().to_owned();
    assert!(
        issuer.ends_with("/t1") && issuer.starts_with("http://127.0.0.1:"),
        "{issuer}"
    );
    assert!(!url.starts_with(issuer.trim_end_matches("/t1")), "{url} vs {issuer}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let token = http
            .post(format!("{issuer}/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("grant_type=refresh_token&refresh_token=rt-secret&client_id=nobody")
            .send()
            .await
            .unwrap();
        assert_eq!(token.status().as_u16(), 401);
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let events: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|event: &Value| event["event"] == "oauth")
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["endpoint"], "token");
    assert_eq!(events[0]["params"]["refresh_token"], "<redacted>");
    assert_eq!(events[0]["params"]["client_id"], "nobody");
    assert_eq!(events[0]["error"], "invalid_client");
    assert_eq!(events[0]["status"], 401);
}
