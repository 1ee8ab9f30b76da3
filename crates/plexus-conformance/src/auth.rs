//! The auth scenarios (`auth/…`): the client authenticates with plexus's OAuth provider, a
//! throw-away token store and a user agent that follows the authorization server's redirect to
//! the provider's loopback listener (the suite's authorization servers redirect at once).
//!
//! The scenario's context chooses the grant ([`oauth_settings`]): client credentials for the
//! `client-credentials` scenarios (with the context's secret, or its `private_key_pem` for
//! `private_key_jwt`), the JWT bearer grant with the context's `valid_jwt` (workload identity),
//! enterprise-managed authorization with the context's identity provider (`idp_…`), else the
//! authorization code flow. DPoP is plexus's default (used when the servers ask for it).

use std::sync::Arc;
use std::time::Duration;

use plexus::auth::oauth::jwt::SigningKey;
use plexus::auth::oauth::{
    AssertionSource, IdentityProvider, OAuthGrant, OAuthProvider, OAuthSettings, RedirectFollower,
};
use plexus::auth::store::{Secret, TokenStore};
use serde_json::{Map, Value};

use crate::scenario::{AuthSetupProblem, ScenarioError};

/// The client id the suite expects from a client that uses a Client ID Metadata Document.
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// How long a login may wait for the redirect (the suite kills a client after 30 s).
const LOGIN_TIMEOUT: Duration = Duration::from_secs(15);
/// The limit of each request to an authorization server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `scenario` is an auth scenario.
pub fn is_auth_scenario(scenario: &str) -> bool {
    scenario.starts_with("auth/")
}

/// An OAuth provider for one run, with its temporary token store (removed on drop).
#[derive(Debug)]
pub struct AuthSetup {
    /// The provider.
    pub provider: Arc<OAuthProvider>,
    _home: tempfile::TempDir,
}

/// The OAuth settings of the scenario `name`: the pre-registered `client_id` and
/// `client_secret` of its context when it has them, the conformance client metadata document
/// URL, and the grant its context calls for: client credentials for the `client-credentials`
/// scenarios (with the context's secret, or its `private_key_pem` for `private_key_jwt`), the
/// JWT bearer grant with the context's `valid_jwt` (workload identity), enterprise-managed
/// authorization with the context's identity provider (`idp_…`), else the authorization code
/// flow.
pub fn oauth_settings(name: &str, context: &Map<String, Value>) -> Result<OAuthSettings, ScenarioError> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut settings = OAuthSettings::default().client_metadata_url(CLIENT_METADATA_URL);
    settings.client_id = text("client_id");
    if let Some(secret) = text("client_secret") {
        settings = settings.client_secret(secret);
    }
    crate::CLIENT_NAME.clone_into(&mut settings.client_name);
    settings.login_timeout = LOGIN_TIMEOUT;
    settings.request_timeout = REQUEST_TIMEOUT;
    if let Some(pem) = text("private_key_pem") {
        let key = SigningKey::from_pem(&pem).map_err(|e| ScenarioError::AuthSetup {
            problem: AuthSetupProblem::PrivateKey(e),
        })?;
        settings = settings.private_key(key);
    }
    settings.grant = if name.contains("client-credentials") || settings.private_key.is_some() {
        OAuthGrant::ClientCredentials
    } else if let Some(jwt) = text("valid_jwt") {
        OAuthGrant::JwtBearer {
            assertion: AssertionSource::Value(Secret::new(jwt)),
        }
    } else if let (Some(issuer), Some(client_id), Some(id_token)) =
        (text("idp_issuer"), text("idp_client_id"), text("idp_id_token"))
    {
        let mut idp = IdentityProvider::new(issuer, client_id, AssertionSource::Value(Secret::new(id_token)));
        idp.token_endpoint = text("idp_token_endpoint");
        OAuthGrant::EnterpriseManaged(Box::new(idp))
    } else {
        OAuthGrant::AuthorizationCode
    };
    Ok(settings)
}

/// The provider for the scenario `name` against `url`.
pub fn oauth_provider(name: &str, url: &str, context: &Map<String, Value>) -> Result<AuthSetup, ScenarioError> {
    let failed = |problem| ScenarioError::AuthSetup { problem };
    let below = |e: Box<dyn std::error::Error + Send + Sync>| failed(AuthSetupProblem::Provider(e));
    let home = tempfile::tempdir().map_err(|e| failed(AuthSetupProblem::TokenStore(e)))?;
    let store = TokenStore::new(home.path().join("credentials.json"));
    let user_agent = RedirectFollower::new(REQUEST_TIMEOUT).map_err(|e| below(Box::new(e)))?;
    let provider = OAuthProvider::new(name, url, oauth_settings(name, context)?, store)
        .map_err(|e| below(Box::new(e)))?
        .with_user_agent(Arc::new(user_agent));
    Ok(AuthSetup {
        provider: Arc::new(provider),
        _home: home,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(name: &str, context: &Value) -> OAuthSettings {
        oauth_settings(name, context.as_object().unwrap()).unwrap()
    }

    #[test]
    fn the_context_supplies_the_pre_registered_client() {
        let context = serde_json::json!({"client_id": "pre-registered-client", "client_secret": "s"});
        let settings = settings("auth/pre-registration", &context);
        assert_eq!(settings.client_id.as_deref(), Some("pre-registered-client"));
        assert_eq!(settings.client_secret.unwrap().expose(), "s");
        assert_eq!(settings.client_metadata_url.as_deref(), Some(CLIENT_METADATA_URL));
        assert!(matches!(settings.grant, OAuthGrant::AuthorizationCode));
        let empty = oauth_settings("auth/metadata-default", &Map::new()).unwrap();
        assert!(empty.client_id.is_none() && empty.client_secret.is_none());
        assert!(is_auth_scenario("auth/scope-step-up") && !is_auth_scenario("tools_call"));
    }

    #[test]
    fn the_context_chooses_the_grant() {
        let basic = settings(
            "auth/client-credentials-basic",
            &serde_json::json!({"client_id": "c", "client_secret": "s"}),
        );
        assert!(matches!(basic.grant, OAuthGrant::ClientCredentials));

        let key = SigningKey::generate().unwrap();
        let pem = key.to_pem().unwrap();
        let jwt = settings(
            "auth/client-credentials-jwt",
            &serde_json::json!({"client_id": "c", "private_key_pem": pem, "signing_algorithm": "ES256"}),
        );
        assert!(matches!(jwt.grant, OAuthGrant::ClientCredentials));
        assert_eq!(jwt.private_key.unwrap().public_key(), key.public_key());
        let err = oauth_settings(
            "auth/client-credentials-jwt",
            serde_json::json!({"private_key_pem": "junk"}).as_object().unwrap(),
        )
        .unwrap_err();
        assert_eq!(
            plexus::transport::error_chain(&err),
            "setting up OAuth failed: the context's private_key_pem: the private key is unusable: no PEM block (-----BEGIN …-----) found"
        );

        let wif = settings(
            "auth/wif-jwt-bearer",
            &serde_json::json!({"client_id": "w", "valid_jwt": "a.b.c", "expired_jwt": "x.y.z"}),
        );
        assert!(
            matches!(&wif.grant, OAuthGrant::JwtBearer { assertion: AssertionSource::Value(jwt) } if jwt.expose() == "a.b.c")
        );

        let xaa = settings(
            "auth/enterprise-managed-authorization",
            &serde_json::json!({"client_id": "c", "client_secret": "s", "idp_client_id": "i", "idp_id_token": "t.t.t",
                "idp_issuer": "http://idp", "idp_token_endpoint": "http://idp/token"}),
        );
        let OAuthGrant::EnterpriseManaged(idp) = &xaa.grant else {
            panic!("not enterprise-managed: {:?}", xaa.grant);
        };
        assert_eq!(
            (
                idp.issuer.as_str(),
                idp.client_id.as_str(),
                idp.token_endpoint.as_deref()
            ),
            ("http://idp", "i", Some("http://idp/token"))
        );
    }
}
