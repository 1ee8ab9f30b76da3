//! The built-in authorization server and the protected MCP endpoint (`--oauth`) driven by hand:
//! one full code flow with PKCE and dynamic registration, refresh with and without rotation,
//! the 401 and 403 challenges, expired and revoked tokens, client authentication, client
//! credentials, and the record of what the server received.

mod oauth_support;

use oauth_support::{CHALLENGE, Fixture, REDIRECT_URI, VERIFIER, authorize_params, basic, sse_response, start};
use plexus_testserver::{AuthMethod, Endpoint};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_code_flow_with_pkce_and_registration_reaches_the_tools() {
    let f = start(&["--oauth-issuer-path", "/t1"]).await;
    let origin = &f.origin;
    let prm_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");

    // No token: 401, and the challenge names the protected resource metadata.
    let refused = f.initialize(None).await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{prm_url}\"").as_str())
    );
    assert_eq!(refused.body["error"], "unauthorized");
    assert!(!f.oauth.authorization_server_contacted());

    let prm = f.get(&prm_url).await;
    assert_eq!(prm.status, 200);
    assert_eq!(
        prm.body,
        json!({
            "resource": f.mcp_url(),
            "authorization_servers": [format!("{origin}/t1")],
            "bearer_methods_supported": ["header"],
            "resource_name": "plexus-testserver",
        })
    );

    let metadata = f.get_path("/.well-known/oauth-authorization-server/t1").await;
    assert_eq!(metadata.status, 200);
    assert_eq!(
        metadata.body,
        json!({
            "issuer": format!("{origin}/t1"),
            "authorization_endpoint": format!("{origin}/t1/authorize"),
            "token_endpoint": format!("{origin}/t1/token"),
            "registration_endpoint": format!("{origin}/t1/register"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
        })
    );

    let registered = f
        .register(&json!({
            "client_name": "plexus",
            "application_type": "native",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "scope": "mcp:basic offline_access",
        }))
        .await;
    assert_eq!(registered.status, 201, "{registered:?}");
    let client_id = registered.body["client_id"].as_str().unwrap().to_owned();
    assert!(client_id.starts_with("as0-client-"), "{client_id}");
    assert_eq!(registered.body["client_name"], "plexus");
    assert_eq!(registered.body["application_type"], "native");
    assert_eq!(registered.body["token_endpoint_auth_method"], "none");
    assert_eq!(registered.body["response_types"], json!(["code"]));
    assert!(
        registered.body.get("client_secret").is_none(),
        "a public client has no secret"
    );

    let resource = f.mcp_url();
    let mut params = authorize_params(&client_id, &resource);
    params.push(("scope", "mcp:basic offline_access"));
    let redirect = f.authorize(&params).await;
    assert_eq!(redirect.status, 302);
    let location = redirect.header("location").unwrap();
    assert!(
        location.starts_with("http://127.0.0.1:4242/callback?code=code-"),
        "{location}"
    );
    let back = redirect.location_params();
    assert_eq!(back["state"], "st-1");
    assert_eq!(back["iss"], format!("{origin}/t1"));
    assert_eq!(back.len(), 3, "code, state, iss: {back:?}");

    let tokens = f.exchange(&client_id, &back["code"]).await;
    assert_eq!(tokens.status, 200, "{tokens:?}");
    assert_eq!(tokens.header("cache-control"), Some("no-store"));
    assert_eq!(tokens.body["token_type"], "Bearer");
    assert_eq!(tokens.body["expires_in"], 3600);
    assert_eq!(tokens.body["scope"], "mcp:basic offline_access");
    assert!(tokens.body["refresh_token"].as_str().unwrap().starts_with("rt-"));
    let access = tokens.body["access_token"].as_str().unwrap();

    let echoed = f.call_tool(access, "echo", json!({"text": "authorized"})).await;
    assert_eq!(echoed.status, 200, "{echoed:?}");
    assert_eq!(sse_response(&echoed.body)["result"]["content"][0]["text"], "authorized");

    assert_flow_record(&f, &client_id, access, location);
    f.server.shutdown().await;
}

/// The record of the full flow: what the client did, in order.
fn assert_flow_record(f: &Fixture, client_id: &str, access: &str, location: &str) {
    let endpoints: Vec<Endpoint> = f.oauth.requests().iter().map(|r| r.endpoint).collect();
    assert_eq!(
        endpoints,
        [
            Endpoint::Mcp,
            Endpoint::ProtectedResourceMetadata,
            Endpoint::AuthorizationServerMetadata,
            Endpoint::Register,
            Endpoint::Authorize,
            Endpoint::Token,
            Endpoint::Mcp,
            Endpoint::Mcp,
        ]
    );
    let authorize = &f.oauth.requests_to(Endpoint::Authorize)[0];
    assert_eq!(authorize.param("resource"), Some(f.mcp_url().as_str()));
    assert_eq!(authorize.param("code_challenge"), Some(CHALLENGE));
    assert_eq!(authorize.client_id.as_deref(), Some(client_id));
    assert_eq!(authorize.authority, Some(0));
    assert_eq!(authorize.location.as_deref(), Some(location));
    let token = &f.oauth.requests_to(Endpoint::Token)[0];
    assert_eq!(token.param("grant_type"), Some("authorization_code"));
    assert_eq!(token.param("code_verifier"), Some(VERIFIER));
    assert_eq!(token.client_auth, Some(AuthMethod::None));
    assert_eq!((token.status, token.error.as_deref()), (200, None));
    let register = &f.oauth.requests_to(Endpoint::Register)[0];
    assert_eq!(register.body.as_ref().unwrap()["application_type"], "native");
    let mcp = f.oauth.requests_to(Endpoint::Mcp);
    assert_eq!(mcp[0].status, 401);
    assert_eq!(mcp[1].bearer.as_deref(), Some(access));
    assert!(f.oauth.authorization_server_contacted());
    assert_eq!(
        f.oauth.paths()[..3],
        [
            "/mcp".to_owned(),
            "/.well-known/oauth-protected-resource/mcp".to_owned(),
            "/.well-known/oauth-authorization-server/t1".to_owned(),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_rotates_and_the_old_refresh_token_stops_working() {
    let f = start(&[]).await;
    let (client_id, tokens) = f.login("a b").await;
    let first = tokens["refresh_token"].as_str().unwrap();
    let refresh = |token: String, scope: Option<&'static str>| {
        let f = &f;
        let client_id = client_id.clone();
        async move {
            let mut form = vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", token.as_str()),
                ("client_id", client_id.as_str()),
            ];
            if let Some(scope) = scope {
                form.push(("scope", scope));
            }
            f.token(&form, None).await
        }
    };
    let refreshed = refresh(first.to_owned(), None).await;
    assert_eq!(refreshed.status, 200, "{refreshed:?}");
    let second = refreshed.body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second, first, "rotated");
    assert_eq!(refreshed.body["scope"], "a b");
    assert_ne!(refreshed.body["access_token"], tokens["access_token"]);

    let reused = refresh(first.to_owned(), None).await;
    assert_eq!((reused.status, &reused.body["error"]), (400, &json!("invalid_grant")));
    assert_eq!(
        reused.body["error_description"],
        "the refresh token is unknown, revoked or already rotated"
    );

    let narrowed = refresh(second.clone(), Some("a")).await;
    assert_eq!((narrowed.status, &narrowed.body["scope"]), (200, &json!("a")));
    let third = narrowed.body["refresh_token"].as_str().unwrap().to_owned();
    let widened = refresh(third, Some("a c")).await;
    assert_eq!(
        (
            widened.status,
            &widened.body["error"],
            &widened.body["error_description"]
        ),
        (
            400,
            &json!("invalid_scope"),
            &json!("the scope \"c\" was not granted with the refresh token")
        )
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_can_reuse_or_omit_the_refresh_token() {
    for (rotation, expect_same, expect_present) in [("reuse", true, true), ("omit", false, false)] {
        let f = start(&["--oauth-refresh-rotation", rotation]).await;
        let (client_id, tokens) = f.login("").await;
        let token = tokens["refresh_token"].as_str().unwrap();
        for _ in 0..2 {
            let refreshed = f
                .token(
                    &[
                        ("grant_type", "refresh_token"),
                        ("refresh_token", token),
                        ("client_id", &client_id),
                    ],
                    None,
                )
                .await;
            assert_eq!(refreshed.status, 200, "{rotation}: {refreshed:?}");
            assert_eq!(
                refreshed.body.get("refresh_token").is_some(),
                expect_present,
                "{rotation}"
            );
            if expect_same {
                assert_eq!(refreshed.body["refresh_token"], token, "{rotation}");
            }
            assert!(refreshed.body.get("scope").is_none(), "no scope granted");
        }
        f.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_revoked_and_foreign_tokens_get_invalid_token() {
    let f = start(&["--oauth-challenge-scope", "mcp:basic"]).await;
    let prm_url = f.oauth.resource_metadata_url();
    let (client_id, tokens) = f.login("mcp:basic").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(f.initialize(Some(access)).await.status, 200);

    let challenge = |description: &str| {
        format!(
            "Bearer error=\"invalid_token\", error_description=\"{description}\", scope=\"mcp:basic\", resource_metadata=\"{prm_url}\""
        )
    };
    assert_eq!(f.oauth.expire_access_tokens(), 1);
    let expired = f.initialize(Some(access)).await;
    assert_eq!(expired.status, 401);
    assert_eq!(
        expired.header("www-authenticate"),
        Some(challenge("the access token expired").as_str())
    );
    assert_eq!(expired.body["error"], "invalid_token");

    let unknown = f.initialize(Some("at-not-issued")).await;
    assert_eq!(
        unknown.header("www-authenticate"),
        Some(challenge("the access token is unknown or revoked").as_str())
    );

    // The refresh token still works after the access token expired.
    let refreshed = f
        .token(
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
                ("client_id", &client_id),
            ],
            None,
        )
        .await;
    assert_eq!(refreshed.status, 200);
    let renewed = refreshed.body["access_token"].as_str().unwrap();
    assert_eq!(f.initialize(Some(renewed)).await.status, 200);

    // Revoked: the access token gets 401 and the refresh token invalid_grant (the client must log in).
    assert_eq!(f.oauth.revoke_tokens(), 3, "two access tokens and one refresh token");
    assert_eq!(f.initialize(Some(renewed)).await.status, 401);
    let refused = f
        .token(
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refreshed.body["refresh_token"].as_str().unwrap()),
                ("client_id", &client_id),
            ],
            None,
        )
        .await;
    assert_eq!(refused.body["error"], "invalid_grant");

    let recorded: Vec<(u16, Option<String>)> = f
        .oauth
        .requests_to(Endpoint::Mcp)
        .into_iter()
        .map(|r| (r.status, r.error))
        .collect();
    let invalid = Some("invalid_token".to_owned());
    assert_eq!(
        recorded,
        [
            (200, None),
            (401, invalid.clone()),
            (401, invalid.clone()),
            (200, None),
            (401, invalid)
        ]
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_scopes_get_403_insufficient_scope_for_all_requests_or_one_tool() {
    let f = start(&[
        "--oauth-required-scope",
        "mcp:basic",
        "--oauth-tool-scope",
        "echo=tools:echo tools:all",
    ])
    .await;
    let prm_url = f.oauth.resource_metadata_url();
    let (_, none) = f.login("").await;
    let refused = f.initialize(Some(none["access_token"].as_str().unwrap())).await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.header("www-authenticate"),
        Some(format!("Bearer error=\"insufficient_scope\", error_description=\"the access token lacks the scopes [\\\"mcp:basic\\\"] that every request needs\", scope=\"mcp:basic\", resource_metadata=\"{prm_url}\"").as_str())
    );

    let (_, basic_only) = f.login("mcp:basic").await;
    let token = basic_only["access_token"].as_str().unwrap();
    let added = f.call_tool(token, "add", json!({"a": 1, "b": 2})).await;
    assert_eq!(added.status, 200, "tools without scopes of their own pass");
    let echo = f.call_tool(token, "echo", json!({"text": "x"})).await;
    assert_eq!(echo.status, 403);
    assert_eq!(
        echo.header("www-authenticate"),
        Some(format!("Bearer error=\"insufficient_scope\", error_description=\"the tool \\\"echo\\\" needs the scopes [\\\"tools:echo\\\", \\\"tools:all\\\"]\", scope=\"mcp:basic tools:echo tools:all\", resource_metadata=\"{prm_url}\"").as_str())
    );
    let recorded = f.oauth.requests_to(Endpoint::Mcp).pop().unwrap();
    assert_eq!(
        (recorded.status, recorded.error.as_deref(), recorded.param("tool")),
        (403, Some("insufficient_scope"), Some("echo"))
    );

    // Step-up: the union of the scopes passes.
    let (_, all) = f.login("mcp:basic tools:echo tools:all").await;
    let echo = f
        .call_tool(all["access_token"].as_str().unwrap(), "echo", json!({"text": "up"}))
        .await;
    assert_eq!(sse_response(&echo.body)["result"]["content"][0]["text"], "up");
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_errors_are_exact_and_redirected_once_the_redirect_uri_is_trusted() {
    let f = start(&[]).await;
    let client_id = f.register_public().await;
    let resource = f.mcp_url();
    let base = authorize_params(&client_id, &resource);
    let without = |name: &str| -> Vec<(&str, &str)> { base.iter().copied().filter(|(n, _)| *n != name).collect() };
    let with = |name: &'static str, value: &'static str| -> Vec<(&str, &str)> {
        base.iter()
            .copied()
            .map(|(n, v)| if n == name { (n, value) } else { (n, v) })
            .collect()
    };

    // Errors before the redirect URI is trusted: 400, no redirect.
    for (params, code, description) in [
        (without("client_id"), "invalid_request", "client_id is required".to_owned()),
        (with("client_id", "nobody"), "invalid_client", "unknown client_id \"nobody\"".to_owned()),
        (
            with("redirect_uri", "http://127.0.0.1:1/other"),
            "invalid_request",
            format!("redirect_uri \"http://127.0.0.1:1/other\" is not registered for client {client_id:?}"),
        ),
        (
            with("client_id", "http://127.0.0.1:1/client.json"),
            "invalid_client",
            "client_id \"http://127.0.0.1:1/client.json\" is a URL, but this authorization server does not accept client ID metadata documents (--oauth-cimd)".to_owned(),
        ),
    ] {
        let answer = f.authorize(&params).await;
        assert_eq!(answer.status, 400, "{params:?}");
        assert_eq!(answer.body, json!({"error": code, "error_description": description}));
    }

    // Errors after: a redirect with error, state and iss.
    let issuer = f.oauth.issuer();
    for (params, code, description) in [
        (
            without("code_challenge"),
            "invalid_request",
            "code_challenge is required (PKCE)".to_owned(),
        ),
        (
            with("code_challenge_method", "plain"),
            "invalid_request",
            "code_challenge_method must be S256 (got plain)".to_owned(),
        ),
        (
            without("code_challenge_method"),
            "invalid_request",
            "code_challenge_method must be S256 (it is missing, which means plain)".to_owned(),
        ),
        (
            without("resource"),
            "invalid_request",
            format!("the resource parameter (RFC 8707) is required; this server's is {resource}"),
        ),
        (
            with("resource", "http://127.0.0.1:1/mcp"),
            "invalid_target",
            format!("the resource \"http://127.0.0.1:1/mcp\" is not served here (this server's is {resource})"),
        ),
        (
            with("response_type", "token"),
            "unsupported_response_type",
            "response_type must be code (got token)".to_owned(),
        ),
    ] {
        let answer = f.authorize(&params).await;
        assert_eq!(answer.status, 302, "{params:?}");
        let back = answer.location_params();
        assert_eq!(back["error"], code, "{params:?}");
        assert_eq!(back["error_description"], description);
        assert_eq!(
            (back["state"].as_str(), back["iss"].as_str()),
            ("st-1", issuer.as_str())
        );
        assert!(!back.contains_key("code"));
    }

    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_need_the_pkce_verifier_and_the_resource_and_work_once() {
    let f = start(&[]).await;
    let client_id = f.register_public().await;
    let resource = f.mcp_url();
    let code = f.code(&client_id, &[]).await;
    let wrong = f
        .token(
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("code_verifier", &"x".repeat(43)),
                ("client_id", &client_id),
                ("resource", &resource),
            ],
            None,
        )
        .await;
    assert_eq!(
        (wrong.status, wrong.body.clone()),
        (
            400,
            json!({"error": "invalid_grant", "error_description": "code_verifier does not match the code_challenge"})
        )
    );
    let again = f.exchange(&client_id, &code).await;
    assert_eq!(
        again.body["error_description"],
        "the authorization code is unknown, expired or already used"
    );
    let code = f.code(&client_id, &[]).await;
    assert_eq!(f.exchange(&client_id, &code).await.status, 200);
    assert_eq!(
        f.exchange(&client_id, &code).await.body["error"],
        "invalid_grant",
        "a code works once"
    );
    let code = f.code(&client_id, &[]).await;
    let no_resource = f
        .token(
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("code_verifier", VERIFIER),
                ("client_id", &client_id),
            ],
            None,
        )
        .await;
    assert_eq!(no_resource.body["error"], "invalid_request");
    let unsupported = f
        .token(&[("grant_type", "password"), ("client_id", &client_id)], None)
        .await;
    assert_eq!(
        unsupported.body,
        json!({"error": "unsupported_grant_type", "error_description": "the grant type \"password\" is not supported"})
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_authenticate_as_registered() {
    let f = start(&[]).await;
    let registered = f
        .register(&json!({"redirect_uris": [REDIRECT_URI], "grant_types": ["authorization_code", "refresh_token"]}))
        .await;
    assert_eq!(
        registered.body["token_endpoint_auth_method"], "client_secret_basic",
        "the RFC 7591 default"
    );
    assert_eq!(registered.body["client_secret_expires_at"], 0);
    let id = registered.body["client_id"].as_str().unwrap().to_owned();
    let secret = registered.body["client_secret"].as_str().unwrap().to_owned();
    let resource = f.mcp_url();
    let form = |code: &str| {
        vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code.to_owned()),
            ("code_verifier".to_owned(), VERIFIER.to_owned()),
            ("resource".to_owned(), resource.clone()),
        ]
    };
    let send = |form: Vec<(String, String)>, authorization: Option<String>| {
        let f = &f;
        async move {
            let pairs: Vec<(&str, &str)> = form.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            f.token(&pairs, authorization.as_deref()).await
        }
    };

    let code = f.code(&id, &[]).await;
    let ok = send(form(&code), Some(basic(&id, &secret))).await;
    assert_eq!(ok.status, 200, "{ok:?}");
    let recorded = f.oauth.requests_to(Endpoint::Token).pop().unwrap();
    assert_eq!(
        (recorded.client_auth, recorded.client_id.as_deref()),
        (Some(AuthMethod::ClientSecretBasic), Some(id.as_str()))
    );

    let code = f.code(&id, &[]).await;
    let mut post = form(&code);
    post.push(("client_id".into(), id.clone()));
    post.push(("client_secret".into(), secret.clone()));
    let refused = send(post, None).await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.body["error_description"],
        format!("client {id:?} is registered for client_secret_basic but authenticated with client_secret_post")
    );
    assert_eq!(
        refused.header("www-authenticate"),
        None,
        "no Basic challenge when Basic was not tried"
    );

    let code = f.code(&id, &[]).await;
    let wrong = send(form(&code), Some(basic(&id, "nope"))).await;
    assert_eq!((wrong.status, &wrong.body["error"]), (401, &json!("invalid_client")));
    assert_eq!(
        wrong.header("www-authenticate"),
        Some("Basic realm=\"plexus-testserver\"")
    );

    let mut both = form(&code);
    both.push(("client_secret".into(), secret.clone()));
    let twice = send(both, Some(basic(&id, &secret))).await;
    assert_eq!(
        twice.body["error_description"],
        "the client authenticated with more than one method (Basic credentials, client_secret, client_assertion)"
    );
    let anonymous = send(form(&code), None).await;
    assert_eq!(
        (anonymous.status, &anonymous.body["error_description"]),
        (
            401,
            &json!("no client authentication: neither Basic credentials nor a client_id")
        )
    );

    // client_secret_post, registered as such.
    let registered = f
        .register(&json!({"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "client_secret_post"}))
        .await;
    let post_id = registered.body["client_id"].as_str().unwrap().to_owned();
    let post_secret = registered.body["client_secret"].as_str().unwrap().to_owned();
    let code = f.code(&post_id, &[]).await;
    let mut post = form(&code);
    post.push(("client_id".into(), post_id.clone()));
    post.push(("client_secret".into(), post_secret));
    let ok = send(post, None).await;
    assert_eq!(ok.status, 200, "{ok:?}");
    assert!(
        ok.body.get("refresh_token").is_none(),
        "not registered for refresh_token"
    );
    assert_eq!(
        f.oauth.requests_to(Endpoint::Token).pop().unwrap().client_auth,
        Some(AuthMethod::ClientSecretPost)
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_needs_a_confidential_client() {
    let f = start(&["--oauth-client", "svc:s3cret", "--oauth-client", "public-app"]).await;
    let resource = f.mcp_url();
    let granted = f
        .token(
            &[
                ("grant_type", "client_credentials"),
                ("scope", "jobs"),
                ("resource", &resource),
            ],
            Some(&basic("svc", "s3cret")),
        )
        .await;
    assert_eq!(granted.status, 200, "{granted:?}");
    assert_eq!(granted.body["scope"], "jobs");
    assert!(granted.body.get("refresh_token").is_none());
    let access = granted.body["access_token"].as_str().unwrap();
    assert_eq!(f.initialize(Some(access)).await.status, 200);

    let public = f
        .token(
            &[
                ("grant_type", "client_credentials"),
                ("client_id", "public-app"),
                ("resource", &resource),
            ],
            None,
        )
        .await;
    assert_eq!(
        public.body,
        json!({"error": "unauthorized_client", "error_description": "client \"public-app\" is public; client_credentials needs a confidential client"})
    );
    // Pre-registered public clients use any loopback redirect URI.
    let code = f.code("public-app", &[]).await;
    assert_eq!(f.exchange("public-app", &code).await.status, 200);

    let issued = f.oauth.issue_token("svc", &["x"]).unwrap();
    assert_eq!((issued.expires_in, issued.authority), (3600, 0));
    assert_eq!(f.initialize(Some(&issued.access_token)).await.status, 200);
    let tokens = f.oauth.tokens();
    assert!(
        tokens
            .iter()
            .any(|t| t.token == issued.refresh_token && t.refresh && t.client_id == "svc")
    );
    assert!(tokens.iter().all(|t| t.resource.as_deref() == Some(resource.as_str())));
    f.server.shutdown().await;
}
