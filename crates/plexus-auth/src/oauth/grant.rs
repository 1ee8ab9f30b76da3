//! Token requests, built and sent in one place: a [`Grant`] (what is exchanged), the client's
//! authentication ([`ClientCredentials`]), the RFC 8707 `resource`, the scope and, when the
//! token is to be bound to a key, a DPoP proof (RFC 9449) go into one form POST to a token
//! endpoint, and the answer becomes a [`TokenResponse`] or an [`OAuthError::TokenRefused`].
//!
//! Grants: the authorization code, the refresh token, client credentials (RFC 6749 §4.4), a JWT
//! bearer assertion (RFC 7523 §2.1) and token exchange (RFC 8693). Client authentication:
//! `none`, `client_secret_basic`, `client_secret_post` and `private_key_jwt` (an ES256 client
//! assertion, RFC 7523 §2.2). A token endpoint that answers `use_dpop_nonce` gets the request
//! again, once, with a proof carrying its nonce. Nothing else sends a token request.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::HeaderValue;
use plexus_net::redact::redact_url;
use plexus_transport::body_excerpt;
use serde::Deserialize;

use std::sync::Arc;

use http::header::{AUTHORIZATION, HeaderName};
use serde_json::{Map, Value};

use super::dpop::{self, Nonces, ProofRequest, USE_DPOP_NONCE};
use super::http::OAuthHttp;
use super::jwt::SigningKey;
use super::pkce::random_token;
use super::{HttpProblem, OAuthError, SettingsProblem};
use crate::store::{Secret, StoredTokens, unix_now};

/// `grant_type` of the JWT bearer grant (RFC 7523 §2.1).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of token exchange (RFC 8693 §2.1).
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub(crate) const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long a client assertion is valid, in seconds (it is made for one request).
const CLIENT_ASSERTION_LIFETIME: u64 = 60;

/// What a token request exchanges.
#[derive(Debug)]
pub(crate) enum Grant<'a> {
    /// An authorization code with its PKCE verifier and the redirect URI it was sent to.
    AuthorizationCode {
        code: &'a str,
        code_verifier: &'a Secret,
        redirect_uri: &'a str,
    },
    /// A refresh token.
    RefreshToken { refresh_token: &'a Secret },
    /// The client's own credentials, for itself (RFC 6749 §4.4).
    ClientCredentials,
    /// A JWT assertion (RFC 7523 §2.1): a workload's identity token, or an identity assertion
    /// authorization grant (ID-JAG).
    JwtBearer { assertion: &'a Secret },
    /// A token exchange (RFC 8693 §2.1): `subject_token` for a token of `requested_token_type`
    /// meant for `audience`.
    TokenExchange {
        subject_token: &'a Secret,
        subject_token_type: &'a str,
        requested_token_type: &'a str,
        audience: &'a str,
    },
}

impl Grant<'_> {
    fn grant_type(&self) -> &'static str {
        match self {
            Grant::AuthorizationCode { .. } => "authorization_code",
            Grant::RefreshToken { .. } => "refresh_token",
            Grant::ClientCredentials => "client_credentials",
            Grant::JwtBearer { .. } => JWT_BEARER,
            Grant::TokenExchange { .. } => TOKEN_EXCHANGE,
        }
    }

    fn add_params(&self, form: &mut Vec<(&'static str, String)>) {
        match self {
            Grant::AuthorizationCode {
                code,
                code_verifier,
                redirect_uri,
            } => {
                form.push(("code", (*code).to_owned()));
                form.push(("code_verifier", code_verifier.expose().to_owned()));
                form.push(("redirect_uri", (*redirect_uri).to_owned()));
            }
            Grant::RefreshToken { refresh_token } => form.push(("refresh_token", refresh_token.expose().to_owned())),
            Grant::ClientCredentials => {}
            Grant::JwtBearer { assertion } => form.push(("assertion", assertion.expose().to_owned())),
            Grant::TokenExchange {
                subject_token,
                subject_token_type,
                requested_token_type,
                audience,
            } => {
                form.push(("subject_token", subject_token.expose().to_owned()));
                form.push(("subject_token_type", (*subject_token_type).to_owned()));
                form.push(("requested_token_type", (*requested_token_type).to_owned()));
                form.push(("audience", (*audience).to_owned()));
            }
        }
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    /// A public client: `client_id` in the body.
    None,
    /// HTTP Basic with the form-encoded id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// An ES256 client assertion signed with the client's private key (RFC 7523 §2.2).
    PrivateKeyJwt,
}

impl AuthMethod {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<AuthMethod> {
        match name {
            "none" => Some(AuthMethod::None),
            "client_secret_basic" => Some(AuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(AuthMethod::ClientSecretPost),
            "private_key_jwt" => Some(AuthMethod::PrivateKeyJwt),
            _ => None,
        }
    }

    /// The method for a client with or without a secret, among those the server supports
    /// (`None` in the metadata means RFC 8414's default, `client_secret_basic`). A client with a
    /// secret prefers Basic, then the body; one without uses `none`.
    pub(crate) fn choose(has_secret: bool, supported: Option<&[String]>) -> AuthMethod {
        let supports = |method: AuthMethod| {
            supported.map_or(method == AuthMethod::ClientSecretBasic, |list| {
                list.iter().any(|m| m == method.as_str())
            })
        };
        if !has_secret {
            return AuthMethod::None;
        }
        if supports(AuthMethod::ClientSecretBasic) {
            AuthMethod::ClientSecretBasic
        } else if supports(AuthMethod::ClientSecretPost) {
            AuthMethod::ClientSecretPost
        } else if supports(AuthMethod::None) {
            AuthMethod::None
        } else {
            AuthMethod::ClientSecretBasic
        }
    }

    /// The method of a client with a secret and/or a private key, among those the server
    /// supports: `private_key_jwt` when the client has a key and the server lists it or the
    /// client has no secret, else as [`choose`](Self::choose).
    pub(crate) fn choose_with_key(has_secret: bool, has_key: bool, supported: Option<&[String]>) -> AuthMethod {
        let lists_jwt = supported.is_some_and(|list| list.iter().any(|m| m == AuthMethod::PrivateKeyJwt.as_str()));
        if has_key && (lists_jwt || !has_secret) {
            AuthMethod::PrivateKeyJwt
        } else {
            AuthMethod::choose(has_secret, supported)
        }
    }
}

/// The client as the token endpoint sees it.
#[derive(Debug, Clone)]
pub(crate) struct ClientCredentials {
    /// The client id; empty for a request without client authentication (a JWT bearer grant
    /// whose assertion identifies the client).
    pub(crate) client_id: String,
    pub(crate) secret: Option<Secret>,
    pub(crate) method: AuthMethod,
    /// The private key of a `private_key_jwt` client.
    pub(crate) key: Option<Arc<SigningKey>>,
}

impl ClientCredentials {
    /// A client without a secret or key, authenticating with `method`.
    #[cfg(test)]
    fn plain(client_id: &str, secret: Option<&str>, method: AuthMethod) -> Self {
        ClientCredentials {
            client_id: client_id.to_owned(),
            secret: secret.map(Secret::new),
            method,
            key: None,
        }
    }

    /// Adds the client's authentication to the form, or returns the `Authorization` header. A
    /// client assertion is made for `audience` (the authorization server's issuer).
    fn authenticate(
        &self,
        audience: &str,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<Option<HeaderValue>, OAuthError> {
        let secret = self.secret.as_ref().map(Secret::expose);
        match (self.method, secret) {
            (AuthMethod::ClientSecretBasic, Some(secret)) => {
                let encode = |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
                let pair = format!("{}:{}", encode(&self.client_id), encode(secret));
                let mut value = HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(pair))).map_err(|_| {
                    OAuthError::Settings {
                        field: "the client credentials".to_owned(),
                        problem: SettingsProblem::CredentialsNotHeaderSafe,
                    }
                })?;
                value.set_sensitive(true);
                return Ok(Some(value));
            }
            (AuthMethod::ClientSecretPost, Some(secret)) => {
                form.push(("client_id", self.client_id.clone()));
                form.push(("client_secret", secret.to_owned()));
            }
            (AuthMethod::PrivateKeyJwt, _) => {
                let key = self.key.as_ref().ok_or_else(|| OAuthError::Settings {
                    field: "the client's private key".to_owned(),
                    problem: SettingsProblem::NoPrivateKey {
                        client_id: self.client_id.clone(),
                    },
                })?;
                form.push(("client_id", self.client_id.clone()));
                form.push(("client_assertion_type", CLIENT_ASSERTION_TYPE.to_owned()));
                form.push(("client_assertion", client_assertion(key, &self.client_id, audience)?));
            }
            _ if self.client_id.is_empty() => {}
            _ => form.push(("client_id", self.client_id.clone())),
        }
        Ok(None)
    }
}

/// A client assertion (RFC 7523 §3): `iss` and `sub` the client id, `aud` the authorization
/// server, a short life and a fresh `jti`.
pub(crate) fn client_assertion(key: &SigningKey, client_id: &str, audience: &str) -> Result<String, OAuthError> {
    let now = unix_now();
    let mut header = Map::new();
    header.insert("typ".to_owned(), Value::String("JWT".to_owned()));
    let mut claims = Map::new();
    claims.insert("iss".to_owned(), Value::String(client_id.to_owned()));
    claims.insert("sub".to_owned(), Value::String(client_id.to_owned()));
    claims.insert("aud".to_owned(), Value::String(audience.to_owned()));
    claims.insert("iat".to_owned(), Value::from(now));
    claims.insert("exp".to_owned(), Value::from(now + CLIENT_ASSERTION_LIFETIME));
    claims.insert("jti".to_owned(), Value::String(random_token()?));
    Ok(key.sign(&header, &claims)?)
}

/// The key a token is to be bound to (DPoP), and the nonces servers gave.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DpopBinding<'a> {
    pub(crate) key: &'a SigningKey,
    pub(crate) nonces: &'a Nonces,
}

/// One token request.
#[derive(Debug)]
pub(crate) struct TokenRequest<'a> {
    /// The token endpoint.
    pub(crate) endpoint: &'a str,
    pub(crate) client: &'a ClientCredentials,
    pub(crate) grant: Grant<'a>,
    /// The RFC 8707 resource.
    pub(crate) resource: Option<&'a str>,
    /// The `scope` parameter, when the grant takes one.
    pub(crate) scope: Option<&'a str>,
    /// The issuer of the token endpoint: the audience of a client assertion.
    pub(crate) issuer: &'a str,
    /// The key to bind the token to (a DPoP proof goes with the request).
    pub(crate) dpop: Option<DpopBinding<'a>>,
}

/// A successful token response.
#[derive(Debug, Clone)]
pub(crate) struct TokenResponse {
    pub(crate) access_token: Secret,
    /// `Bearer`, `DPoP` (a token bound to the proof's key), or for a token exchange what the
    /// server said (`N_A` for a token that is not an access token).
    pub(crate) token_type: String,
    pub(crate) expires_in: Option<u64>,
    pub(crate) refresh_token: Option<Secret>,
    pub(crate) scope: Option<String>,
}

impl TokenResponse {
    /// The tokens to store; a refresh response without a refresh token keeps `previous_refresh`.
    pub(crate) fn into_tokens(self, previous_refresh: Option<Secret>) -> StoredTokens {
        let mut tokens = StoredTokens::new(
            self.access_token,
            self.refresh_token.or(previous_refresh),
            self.expires_in,
            self.scope,
        );
        tokens.token_type = self.token_type;
        tokens
    }
}

#[derive(Deserialize)]
struct RawTokenResponse {
    access_token: Option<String>,
    token_type: Option<String>,
    expires_in: Option<serde_json::Value>,
    refresh_token: Option<String>,
    scope: Option<String>,
    issued_token_type: Option<String>,
}

#[derive(Deserialize)]
struct RawError {
    error: Option<String>,
    error_description: Option<String>,
}

/// Sends a token request and reads the answer. With a DPoP binding, a proof goes with the
/// request (carrying the token endpoint's last nonce), and an answer `use_dpop_nonce` with a
/// `DPoP-Nonce` gets the request once more with that nonce.
pub(crate) async fn request_token(http: &OAuthHttp, request: TokenRequest<'_>) -> Result<TokenResponse, OAuthError> {
    const WHAT: &str = "the token endpoint";
    let endpoint = redact_url(request.endpoint);
    let mut nonce_retried = false;
    let reply = loop {
        let (form, headers) = token_form(&request)?;
        let reply = http.post_form(WHAT, request.endpoint, &form, headers).await?;
        if let (Some(binding), Some(nonce)) = (request.dpop, &reply.dpop_nonce) {
            binding.nonces.set(request.endpoint, nonce);
        }
        let wants_nonce = !reply.is_success()
            && reply.dpop_nonce.is_some()
            && serde_json::from_slice::<RawError>(&reply.body)
                .is_ok_and(|e| e.error.as_deref() == Some(USE_DPOP_NONCE));
        if request.dpop.is_some() && wants_nonce && !nonce_retried {
            nonce_retried = true;
            continue;
        }
        break reply;
    };
    if !reply.is_success() {
        let parsed = serde_json::from_slice::<RawError>(&reply.body).ok();
        let (error, description) = match parsed {
            Some(RawError {
                error: Some(error),
                error_description,
            }) => (error, error_description),
            _ => (body_excerpt(&reply.body), None),
        };
        return Err(OAuthError::TokenRefused {
            url: endpoint,
            status: reply.status,
            error,
            description,
        });
    }
    let raw: RawTokenResponse = reply.json(WHAT, request.endpoint)?;
    let bad = |problem: HttpProblem| OAuthError::Http {
        what: WHAT,
        url: endpoint.clone(),
        problem: Box::new(problem),
    };
    let access_token = raw
        .access_token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| bad(HttpProblem::Missing { field: "access_token" }))?;
    let token_type = raw.token_type.unwrap_or_else(|| "Bearer".to_owned());
    let token_type = match &request.grant {
        Grant::TokenExchange {
            requested_token_type, ..
        } => {
            if let Some(issued) = raw.issued_token_type.as_deref()
                && issued != *requested_token_type
            {
                return Err(bad(HttpProblem::ExchangedType {
                    issued: issued.to_owned(),
                    requested: (*requested_token_type).to_owned(),
                }));
            }
            token_type
        }
        _ if token_type.eq_ignore_ascii_case("bearer") => "Bearer".to_owned(),
        _ if token_type.eq_ignore_ascii_case("dpop") && request.dpop.is_some() => "DPoP".to_owned(),
        _ if token_type.eq_ignore_ascii_case("dpop") => {
            return Err(bad(HttpProblem::UnexpectedDpop));
        }
        _ => {
            return Err(bad(HttpProblem::UnsupportedTokenType { token_type }));
        }
    };
    let expires_in = match raw.expires_in {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().map(seconds_from_float)),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        Some(value) => return Err(bad(HttpProblem::ExpiresIn { value })),
    };
    Ok(TokenResponse {
        access_token: Secret::new(access_token),
        token_type,
        expires_in,
        refresh_token: raw.refresh_token.filter(|t| !t.is_empty()).map(Secret::new),
        scope: raw.scope,
    })
}

/// A token request's form parameters.
type Form = Vec<(&'static str, String)>;
/// A token request's extra headers.
type Headers = Vec<(HeaderName, HeaderValue)>;

/// The form and headers of one sending of `request`: the grant's parameters, `resource`,
/// `scope`, the client's authentication and the DPoP proof (each sending gets a new client
/// assertion and a new proof).
fn token_form(request: &TokenRequest<'_>) -> Result<(Form, Headers), OAuthError> {
    let mut form = vec![("grant_type", request.grant.grant_type().to_owned())];
    request.grant.add_params(&mut form);
    if let Some(resource) = request.resource {
        form.push(("resource", resource.to_owned()));
    }
    if let Some(scope) = request.scope {
        form.push(("scope", scope.to_owned()));
    }
    let mut headers = Vec::new();
    if let Some(value) = request.client.authenticate(request.issuer, &mut form)? {
        headers.push((AUTHORIZATION, value));
    }
    if let Some(binding) = request.dpop {
        let nonce = binding.nonces.get(request.endpoint);
        let proof = dpop::proof(
            binding.key,
            ProofRequest {
                method: "POST",
                url: request.endpoint,
                access_token: None,
                nonce: nonce.as_deref(),
            },
        )?;
        let value = HeaderValue::from_str(&proof).map_err(|_| OAuthError::Settings {
            field: "the DPoP proof".to_owned(),
            problem: SettingsProblem::ProofNotHeaderSafe,
        })?;
        headers.push((HeaderName::from_static("dpop"), value));
    }
    Ok((form, headers))
}

/// A fractional or negative `expires_in` as whole seconds (a negative one is already expired).
#[allow(clippy::cast_sign_loss)] // positive and at most u32::MAX: checked first
fn seconds_from_float(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        seconds.min(u32::MAX.into()).trunc() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    fn client(method: AuthMethod, secret: Option<&str>) -> ClientCredentials {
        ClientCredentials::plain("id:1", secret, method)
    }

    /// The claims of a JWT after checking its signature with `key`.
    fn claims_of(key: &SigningKey, jwt: &str) -> (Value, Value) {
        let parts: Vec<&str> = jwt.split('.').collect();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key())
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
        let part = |i: usize| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[i]).unwrap()).unwrap();
        (part(0), part(1))
    }

    #[test]
    fn each_method_authenticates_its_way() {
        let mut form = Vec::new();
        let header = client(AuthMethod::ClientSecretBasic, Some("s&cret"))
            .authenticate("http://as", &mut form)
            .unwrap();
        // RFC 6749 §2.3.1: form-encode both, then Base64 of "id:secret".
        assert_eq!(
            header.unwrap().to_str().unwrap(),
            format!("Basic {}", STANDARD.encode("id%3A1:s%26cret"))
        );
        assert!(form.is_empty());

        let header = client(AuthMethod::ClientSecretPost, Some("s"))
            .authenticate("http://as", &mut form)
            .unwrap();
        assert!(header.is_none());
        assert_eq!(
            form,
            [("client_id", "id:1".to_owned()), ("client_secret", "s".to_owned())]
        );

        form.clear();
        let header = client(AuthMethod::None, Some("unused"))
            .authenticate("http://as", &mut form)
            .unwrap();
        assert!(header.is_none());
        assert_eq!(form, [("client_id", "id:1".to_owned())]);

        form.clear();
        let anonymous = ClientCredentials::plain("", None, AuthMethod::None);
        assert!(anonymous.authenticate("http://as", &mut form).unwrap().is_none());
        assert!(form.is_empty(), "no client id, no client authentication");
    }

    #[test]
    fn private_key_jwt_sends_a_fresh_signed_assertion_for_the_issuer() {
        let key = Arc::new(SigningKey::generate().unwrap());
        let jwt_client = ClientCredentials {
            key: Some(Arc::clone(&key)),
            ..ClientCredentials::plain("svc", None, AuthMethod::PrivateKeyJwt)
        };
        let mut jtis = Vec::new();
        for _ in 0..2 {
            let mut form = Vec::new();
            let before = unix_now();
            let header = jwt_client.authenticate("https://as.example/t1", &mut form).unwrap();
            assert!(header.is_none());
            let names: Vec<&str> = form.iter().map(|(name, _)| *name).collect();
            assert_eq!(names, ["client_id", "client_assertion_type", "client_assertion"]);
            assert_eq!(form[1].1, CLIENT_ASSERTION_TYPE);
            let (header, claims) = claims_of(&key, &form[2].1);
            assert_eq!(header, serde_json::json!({"alg": "ES256", "typ": "JWT"}));
            assert_eq!(claims["iss"], "svc");
            assert_eq!(claims["sub"], "svc");
            assert_eq!(claims["aud"], "https://as.example/t1");
            let iat = claims["iat"].as_u64().unwrap();
            assert!(iat >= before && iat <= unix_now());
            assert_eq!(claims["exp"].as_u64().unwrap(), iat + CLIENT_ASSERTION_LIFETIME);
            jtis.push(claims["jti"].as_str().unwrap().to_owned());
        }
        assert_ne!(jtis[0], jtis[1], "each assertion has its own jti");

        let keyless = ClientCredentials::plain("svc", None, AuthMethod::PrivateKeyJwt);
        let err = keyless.authenticate("https://as", &mut Vec::new()).unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&err),
            "OAuth setting the client's private key: client \"svc\" authenticates with private_key_jwt, but no private key is configured"
        );
    }

    #[test]
    fn the_method_follows_what_the_server_supports() {
        let list = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(AuthMethod::choose(false, None), AuthMethod::None);
        assert_eq!(AuthMethod::choose(true, None), AuthMethod::ClientSecretBasic);
        assert_eq!(
            AuthMethod::choose(true, Some(&list(&["client_secret_post", "none"]))),
            AuthMethod::ClientSecretPost
        );
        assert_eq!(AuthMethod::choose(true, Some(&list(&["none"]))), AuthMethod::None);
        for method in [
            AuthMethod::None,
            AuthMethod::ClientSecretBasic,
            AuthMethod::ClientSecretPost,
            AuthMethod::PrivateKeyJwt,
        ] {
            assert_eq!(AuthMethod::parse(method.as_str()), Some(method));
        }
        assert_eq!(AuthMethod::parse("client_secret_jwt"), None);

        let jwt = list(&["private_key_jwt"]);
        let basic = list(&["client_secret_basic"]);
        assert_eq!(
            AuthMethod::choose_with_key(false, true, Some(&jwt)),
            AuthMethod::PrivateKeyJwt
        );
        assert_eq!(
            AuthMethod::choose_with_key(true, true, Some(&jwt)),
            AuthMethod::PrivateKeyJwt
        );
        assert_eq!(
            AuthMethod::choose_with_key(false, true, None),
            AuthMethod::PrivateKeyJwt
        );
        assert_eq!(
            AuthMethod::choose_with_key(true, true, Some(&basic)),
            AuthMethod::ClientSecretBasic
        );
        assert_eq!(
            AuthMethod::choose_with_key(true, false, Some(&jwt)),
            AuthMethod::choose(true, Some(&jwt))
        );
    }

    #[test]
    fn a_token_exchange_request_has_every_rfc_8693_parameter() {
        let subject = Secret::new("id-token");
        let idp_client = ClientCredentials::plain("idp-client", None, AuthMethod::None);
        let request = TokenRequest {
            endpoint: "https://idp.example/token",
            client: &idp_client,
            grant: Grant::TokenExchange {
                subject_token: &subject,
                subject_token_type: "urn:ietf:params:oauth:token-type:id_token",
                requested_token_type: "urn:ietf:params:oauth:token-type:id-jag",
                audience: "https://as.example",
            },
            resource: Some("https://mcp.example/mcp"),
            scope: Some("read write"),
            issuer: "https://idp.example",
            dpop: None,
        };
        let (form, headers) = token_form(&request).unwrap();
        assert!(headers.is_empty());
        let pairs: Vec<(&str, &str)> = form.iter().map(|(n, v)| (*n, v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("grant_type", TOKEN_EXCHANGE),
                ("subject_token", "id-token"),
                ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token"),
                ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag"),
                ("audience", "https://as.example"),
                ("resource", "https://mcp.example/mcp"),
                ("scope", "read write"),
                ("client_id", "idp-client"),
            ]
        );
    }

    #[test]
    fn jwt_bearer_and_client_credentials_requests_and_their_dpop_proof() {
        let assertion = Secret::new("eyJ.a.b");
        let basic = client(AuthMethod::ClientSecretBasic, Some("s"));
        let key = SigningKey::generate().unwrap();
        let nonces = Nonces::default();
        nonces.set("https://as.example/token", "n-7");
        let mut request = TokenRequest {
            endpoint: "https://as.example/token?x=1",
            client: &basic,
            grant: Grant::JwtBearer { assertion: &assertion },
            resource: None,
            scope: None,
            issuer: "https://as.example",
            dpop: Some(DpopBinding {
                key: &key,
                nonces: &nonces,
            }),
        };
        let (form, headers) = token_form(&request).unwrap();
        assert_eq!(
            form,
            [
                ("grant_type", JWT_BEARER.to_owned()),
                ("assertion", "eyJ.a.b".to_owned())
            ]
        );
        let names: Vec<&str> = headers.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["authorization", "dpop"]);
        let (header, claims) = claims_of(&key, headers[1].1.to_str().unwrap());
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://as.example/token");
        assert_eq!(claims["nonce"], "n-7");
        assert!(claims.get("ath").is_none(), "no access token at the token endpoint");

        request.grant = Grant::ClientCredentials;
        request.dpop = None;
        let (form, headers) = token_form(&request).unwrap();
        assert_eq!(form, [("grant_type", "client_credentials".to_owned())]);
        assert_eq!(headers.len(), 1, "Basic only");
    }

    #[test]
    fn a_refresh_without_a_new_refresh_token_keeps_the_old_one() {
        let response = TokenResponse {
            access_token: Secret::new("a2"),
            token_type: "Bearer".into(),
            expires_in: None,
            refresh_token: None,
            scope: None,
        };
        let tokens = response.into_tokens(Some(Secret::new("r1")));
        assert_eq!(tokens.refresh_token.unwrap().expose(), "r1");
        assert_eq!(tokens.expires_at, None);
    }
}
