//! `private_key_jwt` client authentication (ES256 client assertions, RFC 7523) at the built-in
//! authorization server: client credentials for a pre-registered client, a registered client with
//! inline keys through the code flow, and the assertions it refuses.

mod oauth_support;

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use oauth_support::{Fixture, REDIRECT_URI, VERIFIER, basic, start};
use plexus_testserver::{AuthMethod, Endpoint};
use serde_json::{Value, json};

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A new ES256 key pair and its public JWK.
fn key_pair() -> (EcdsaKeyPair, Value) {
    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
    let point = pair.public_key().as_ref().to_vec();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "kid": "key-1", "use": "sig",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..]),
    });
    (pair, jwk)
}

/// A client assertion of `client_id` for `aud`, with `jti`.
fn assertion(pair: &EcdsaKeyPair, client_id: &str, aud: &str, jti: &str) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let header = json!({"alg": "ES256", "typ": "JWT", "kid": "key-1"});
    let claims = json!({"iss": client_id, "sub": client_id, "aud": aud, "iat": now, "exp": now + 60, "jti": jti});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = pair.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
}

async fn client_credentials(f: &Fixture, assertion: &str, authorization: Option<&str>) -> oauth_support::Answer {
    let resource = f.mcp_url();
    f.token(
        &[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", assertion),
            ("resource", &resource),
        ],
        authorization,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_with_a_pre_registered_private_key_jwt_client() {
    let (pair, jwk) = key_pair();
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("svc.jwks");
    std::fs::write(&keys, json!({"keys": [jwk]}).to_string()).unwrap();
    let jwt_client = format!("svc={}", keys.display());
    let f = start(&[
        "--oauth-auth-methods",
        "private_key_jwt",
        "--oauth-jwt-client",
        &jwt_client,
    ])
    .await;
    let issuer = f.oauth.issuer();
    let metadata = f.get_path("/.well-known/oauth-authorization-server").await.body;
    assert_eq!(
        metadata["token_endpoint_auth_methods_supported"],
        json!(["private_key_jwt"])
    );
    assert_eq!(
        metadata["token_endpoint_auth_signing_alg_values_supported"],
        json!(["ES256"])
    );

    let first = assertion(&pair, "svc", &issuer, "j1");
    let granted = client_credentials(&f, &first, None).await;
    assert_eq!(granted.status, 200, "{granted:?}");
    let access = granted.body["access_token"].as_str().unwrap();
    assert_eq!(f.initialize(Some(access)).await.status, 200);
    let recorded = f.oauth.requests_to(Endpoint::Token).pop().unwrap();
    assert_eq!(
        (recorded.client_auth, recorded.client_id.as_deref()),
        (Some(AuthMethod::PrivateKeyJwt), Some("svc"))
    );

    let replayed = client_credentials(&f, &first, None).await;
    assert_eq!(
        (replayed.status, replayed.body.clone()),
        (
            401,
            json!({"error": "invalid_client", "error_description": "the client assertion's jti \"j1\" was used already"})
        )
    );
    let to_token_endpoint = assertion(&pair, "svc", &format!("{issuer}/token"), "j2");
    assert_eq!(client_credentials(&f, &to_token_endpoint, None).await.status, 200);
    let elsewhere = assertion(&pair, "svc", "https://other.example", "j3");
    assert_eq!(
        client_credentials(&f, &elsewhere, None).await.body["error_description"],
        format!(
            "the client assertion's aud [\"https://other.example\"] names neither the issuer nor the token endpoint ({issuer}, {issuer}/, {issuer}/token)"
        )
    );
    let (other, other_jwk) = key_pair();
    let forged = assertion(&other, "svc", &issuer, "j4");
    assert_eq!(
        client_credentials(&f, &forged, None).await.body["error_description"],
        "the client assertion's signature does not verify with the client's keys"
    );
    f.oauth.register_jwt_client("other", &other_jwk).unwrap();
    assert_eq!(
        client_credentials(&f, &assertion(&other, "other", &issuer, "j5"), None)
            .await
            .status,
        200,
        "a client registered through the handle"
    );
    let twice = client_credentials(&f, &assertion(&pair, "svc", &issuer, "j6"), Some(&basic("svc", "x"))).await;
    assert_eq!(
        twice.body,
        json!({"error": "invalid_request", "error_description": "the client authenticated with more than one method (Basic credentials, client_secret, client_assertion)"})
    );
    let untyped = f
        .token(
            &[("grant_type", "client_credentials"), ("client_assertion", &first)],
            None,
        )
        .await;
    assert_eq!(
        untyped.body["error_description"],
        format!("client_assertion_type must be {ASSERTION_TYPE} (got (none))")
    );
    f.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_private_key_jwt_client_goes_through_the_code_flow() {
    let f = start(&["--oauth-auth-methods", "private_key_jwt,none"]).await;
    let (pair, jwk) = key_pair();
    let refused = f
        .register(&json!({"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "private_key_jwt"}))
        .await;
    assert_eq!(
        refused.body,
        json!({"error": "invalid_client_metadata", "error_description": "private_key_jwt needs the client's public keys (jwks)"})
    );
    let registered = f
        .register(&json!({
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "private_key_jwt",
            "grant_types": ["authorization_code", "refresh_token"],
            "jwks": {"keys": [jwk]},
        }))
        .await;
    assert_eq!(registered.status, 201, "{registered:?}");
    assert!(registered.body.get("client_secret").is_none());
    let client_id = registered.body["client_id"].as_str().unwrap().to_owned();
    let code = f.code(&client_id, &[("scope", "mcp:basic")]).await;
    let resource = f.mcp_url();
    let signed = assertion(&pair, &client_id, &f.oauth.issuer(), "flow-1");
    let tokens = f
        .token(
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("code_verifier", VERIFIER),
                ("resource", &resource),
                ("client_assertion_type", ASSERTION_TYPE),
                ("client_assertion", &signed),
            ],
            None,
        )
        .await;
    assert_eq!(tokens.status, 200, "{tokens:?}");
    assert!(tokens.body["refresh_token"].is_string());
    let public = f
        .token(
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", tokens.body["refresh_token"].as_str().unwrap()),
                ("client_id", &client_id),
            ],
            None,
        )
        .await;
    assert_eq!(
        (public.status, public.body["error_description"].clone()),
        (
            401,
            json!(format!(
                "client {client_id:?} is registered for private_key_jwt but authenticated with none"
            ))
        )
    );
    f.server.shutdown().await;
}
