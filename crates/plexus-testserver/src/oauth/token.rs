//! The token endpoint: client authentication (`client_secret_basic`, `client_secret_post`,
//! `none`, `private_key_jwt`), and the grants `authorization_code` (PKCE S256, RFC 8707 `resource`),
//! `refresh_token` (rotation per `--oauth-refresh-rotation`) and `client_credentials`. Errors are
//! RFC 6749 §5.2 JSON.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use plexus_jsonrpc::error_chain;
use serde_json::{Map, Value, json};

use super::authority::Authority;
use super::authorize::{Failure, check_resource, check_scopes};
use super::error::StoreError;
use super::jwt;
use super::options::{AuthMethod, RefreshIssuance, RefreshRotation};
use super::record::OAuthRequest;
use super::store::{Client, Grant, Issued};
use super::{OAuth, method_not_allowed, wire};
use crate::remote::http::{self, Body, Refusal};

/// `application/x-www-form-urlencoded`.
const FORM: &str = "application/x-www-form-urlencoded";

/// Why a token request failed: an error response, or an OAuth error that is a 400.
enum TokenError {
    Response(Refusal),
    Oauth(Failure),
}

impl From<Failure> for TokenError {
    fn from(failure: Failure) -> Self {
        TokenError::Oauth(failure)
    }
}

/// POST `<issuer>/token`.
pub(super) async fn handle(
    oauth: &OAuth,
    authority: &Authority,
    request: Request<Incoming>,
    entry: &mut OAuthRequest,
) -> Response<Body> {
    if request.method() != Method::POST {
        return method_not_allowed(entry, "POST");
    }
    let is_form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(FORM));
    if !is_form {
        return wire::error(
            entry,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("the token request must be {FORM}"),
        );
    }
    let headers = request.headers().clone();
    let body = match http::read_body_limited(request, wire::MAX_FORM_BYTES).await {
        Ok(body) => body,
        Err(e) => return wire::error(entry, e.status(), "invalid_request", e.to_string()),
    };
    let params = match wire::parse_params(&body) {
        Ok(params) => params,
        Err(e) => return wire::error(entry, StatusCode::BAD_REQUEST, "invalid_request", e),
    };
    entry.params.clone_from(&params);
    match exchange(oauth, authority, &headers, &params, entry) {
        Ok(response) => response,
        Err(TokenError::Response(response)) => *response,
        Err(TokenError::Oauth((code, description))) => wire::error(entry, StatusCode::BAD_REQUEST, &code, description),
    }
}

fn exchange(
    oauth: &OAuth,
    authority: &Authority,
    headers: &HeaderMap,
    params: &BTreeMap<String, String>,
    entry: &mut OAuthRequest,
) -> Result<Response<Body>, TokenError> {
    let client = authenticate(oauth, authority, headers, params, entry)?;
    let param = |name: &str| params.get(name).map(String::as_str);
    let grant_type = param("grant_type").ok_or_else(|| failure("invalid_request", "grant_type is required"))?;
    if !client.may_use_grant(grant_type) && matches!(grant_type, "refresh_token" | "client_credentials") {
        return Err(failure(
            "unauthorized_client",
            format!("client {:?} is not registered for the {grant_type} grant", client.id),
        ));
    }
    let (grant, refresh) = match grant_type {
        "authorization_code" => authorization_code(oauth, authority, &client, params)?,
        "refresh_token" => return refresh_token(oauth, authority, &client, params),
        "client_credentials" => client_credentials(oauth, &client, params)?,
        other => {
            return Err(failure(
                "unsupported_grant_type",
                format!("the grant type {other:?} is not supported"),
            ));
        }
    };
    let issued = authority
        .with_store(|store| store.issue(&grant, oauth.token_lifetime(), refresh))
        .map_err(|e| failure("temporarily_unavailable", error_chain(&e)))?;
    Ok(token_response(oauth, &grant, &issued, issued.refresh_token.as_deref()))
}

fn failure(code: &str, description: impl Into<String>) -> TokenError {
    TokenError::Oauth((code.to_owned(), description.into()))
}

/// Who the client is and how it authenticated; a 401 `invalid_client` when it does not.
fn authenticate(
    oauth: &OAuth,
    authority: &Authority,
    headers: &HeaderMap,
    params: &BTreeMap<String, String>,
    entry: &mut OAuthRequest,
) -> Result<Client, TokenError> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(wire::basic_credentials);
    let basic_used = basic.is_some();
    let form_id = params.get("client_id");
    let form_secret = params.get("client_secret");
    let assertion_used = params.contains_key("client_assertion") || params.contains_key("client_assertion_type");
    if usize::from(basic_used) + usize::from(form_secret.is_some()) + usize::from(assertion_used) > 1 {
        return Err(failure(
            "invalid_request",
            "the client authenticated with more than one method (Basic credentials, client_secret, client_assertion)",
        ));
    }
    if assertion_used {
        return authenticate_jwt(oauth, authority, params, entry);
    }
    let (id, secret, method) = match (basic, form_secret) {
        (Some(Err(e)), _) => return Err(unauthorized(entry, basic_used, e)),
        (Some(Ok((id, secret))), _) => {
            if form_id.is_some_and(|form_id| *form_id != id) {
                return Err(failure(
                    "invalid_request",
                    "the client_id of the form differs from the one of the Basic credentials",
                ));
            }
            (id, Some(secret), AuthMethod::ClientSecretBasic)
        }
        (None, Some(secret)) => {
            let id = form_id.ok_or_else(|| failure("invalid_request", "client_secret is given without client_id"))?;
            (id.clone(), Some(secret.clone()), AuthMethod::ClientSecretPost)
        }
        (None, None) => match form_id {
            Some(id) => (id.clone(), None, AuthMethod::None),
            None => {
                return Err(unauthorized(
                    entry,
                    false,
                    "no client authentication: neither Basic credentials nor a client_id".to_owned(),
                ));
            }
        },
    };
    entry.client_id = Some(id.clone());
    entry.client_auth = Some(method);
    let client = registered_client(oauth, authority, &id, method, entry, basic_used)?;
    if method.uses_secret() && client.secret != secret {
        return Err(unauthorized(
            entry,
            basic_used,
            format!("wrong client secret for client {id:?}"),
        ));
    }
    Ok(client)
}

/// `private_key_jwt`: the client whose ES256 assertion verifies with its registered keys.
fn authenticate_jwt(
    oauth: &OAuth,
    authority: &Authority,
    params: &BTreeMap<String, String>,
    entry: &mut OAuthRequest,
) -> Result<Client, TokenError> {
    entry.client_auth = Some(AuthMethod::PrivateKeyJwt);
    let assertion_type = params.get("client_assertion_type").map_or("(none)", String::as_str);
    if assertion_type != jwt::ASSERTION_TYPE {
        return Err(unauthorized(
            entry,
            false,
            format!(
                "client_assertion_type must be {} (got {assertion_type})",
                jwt::ASSERTION_TYPE
            ),
        ));
    }
    let Some(assertion) = params.get("client_assertion") else {
        return Err(unauthorized(entry, false, "client_assertion is missing".to_owned()));
    };
    let assertion = jwt::decode(assertion).map_err(|e| unauthorized(entry, false, e))?;
    entry.client_id = Some(assertion.issuer.clone());
    if params.get("client_id").is_some_and(|id| *id != assertion.issuer) {
        return Err(failure(
            "invalid_request",
            "the client_id of the form differs from the client assertion's iss",
        ));
    }
    let client = registered_client(
        oauth,
        authority,
        &assertion.issuer,
        AuthMethod::PrivateKeyJwt,
        entry,
        false,
    )?;
    let issuer = &authority.issuer;
    let audiences = [issuer.clone(), format!("{issuer}/"), format!("{issuer}/token")];
    let (jti, expires) = assertion
        .verify(&client.jwks, &audiences)
        .map_err(|e| unauthorized(entry, false, e))?;
    if let Some(jti) = jti {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        authority
            .with_store(|store| store.use_assertion_id(&client.id, &jti, expires, now))
            .map_err(|e| unauthorized(entry, false, error_chain(&e)))?;
    }
    Ok(client)
}

/// The client `id`, if the server supports `method` and the client is registered for it.
fn registered_client(
    oauth: &OAuth,
    authority: &Authority,
    id: &str,
    method: AuthMethod,
    entry: &mut OAuthRequest,
    basic_used: bool,
) -> Result<Client, TokenError> {
    if !oauth.options.auth_methods.contains(&method) {
        return Err(unauthorized(
            entry,
            basic_used,
            format!("the client authentication method {method} is not supported here (--oauth-auth-methods)"),
        ));
    }
    let Some(client) = authority.with_store(|store| store.client(id).cloned()) else {
        return Err(unauthorized(entry, basic_used, format!("unknown client {id:?}")));
    };
    if !client.auth_methods.contains(&method) {
        let registered: Vec<&str> = client.auth_methods.iter().map(|method| method.as_str()).collect();
        return Err(unauthorized(
            entry,
            basic_used,
            format!(
                "client {id:?} is registered for {} but authenticated with {method}",
                registered.join(" or ")
            ),
        ));
    }
    Ok(client)
}

/// A 401 `invalid_client`, with a `Basic` challenge when the client tried Basic.
fn unauthorized(entry: &mut OAuthRequest, basic_used: bool, description: String) -> TokenError {
    let response = wire::error(entry, StatusCode::UNAUTHORIZED, "invalid_client", description);
    let response = if basic_used {
        http::with_header(
            response,
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"plexus-testserver\""),
        )
    } else {
        response
    };
    TokenError::Response(Box::new(response))
}

/// `grant_type=authorization_code`: the grant of a valid code, and whether a refresh token comes
/// with it.
fn authorization_code(
    oauth: &OAuth,
    authority: &Authority,
    client: &Client,
    params: &BTreeMap<String, String>,
) -> Result<(Grant, bool), TokenError> {
    let param = |name: &str| params.get(name).map(String::as_str);
    let id = param("code").ok_or_else(|| failure("invalid_request", "code is required"))?;
    let code = authority.with_store(|store| store.take_code(id)).ok_or_else(|| {
        failure(
            "invalid_grant",
            "the authorization code is unknown, expired or already used",
        )
    })?;
    if code.client_id != client.id {
        return Err(failure(
            "invalid_grant",
            format!(
                "the authorization code was issued to another client than {:?}",
                client.id
            ),
        ));
    }
    if let Some(redirect_uri) = param("redirect_uri").filter(|uri| *uri != code.redirect_uri) {
        return Err(failure(
            "invalid_grant",
            format!(
                "redirect_uri {redirect_uri:?} differs from the authorization request's {:?}",
                code.redirect_uri
            ),
        ));
    }
    let verifier =
        param("code_verifier").ok_or_else(|| failure("invalid_request", "code_verifier is required (PKCE)"))?;
    if !wire::is_code_verifier(verifier) {
        return Err(failure(
            "invalid_request",
            "code_verifier must be 43 to 128 unreserved characters (RFC 7636)",
        ));
    }
    if wire::s256(verifier) != code.challenge {
        return Err(failure(
            "invalid_grant",
            "code_verifier does not match the code_challenge",
        ));
    }
    let resource = match (param("resource"), &code.resource) {
        (Some(resource), Some(authorized)) if resource != authorized => {
            return Err(failure(
                "invalid_target",
                format!("the resource {resource:?} differs from the authorization request's {authorized:?}"),
            ));
        }
        (None, Some(_)) => check_resource(oauth, None)?.or_else(|| code.resource.clone()),
        (resource, _) => check_resource(oauth, resource)?,
    };
    let refresh = grants_refresh(oauth, client, &code.scopes);
    Ok((
        Grant {
            client_id: client.id.clone(),
            scopes: code.scopes,
            resource,
        },
        refresh,
    ))
}

/// `grant_type=refresh_token`: a new access token, and the refresh token per
/// `--oauth-refresh-rotation`.
fn refresh_token(
    oauth: &OAuth,
    authority: &Authority,
    client: &Client,
    params: &BTreeMap<String, String>,
) -> Result<Response<Body>, TokenError> {
    let param = |name: &str| params.get(name).map(String::as_str);
    let token = param("refresh_token").ok_or_else(|| failure("invalid_request", "refresh_token is required"))?;
    let held = authority
        .with_store(|store| store.refresh(token).cloned())
        .ok_or_else(|| {
            failure(
                "invalid_grant",
                "the refresh token is unknown, revoked or already rotated",
            )
        })?;
    if held.client_id != client.id {
        return Err(failure(
            "invalid_grant",
            format!("the refresh token was issued to another client than {:?}", client.id),
        ));
    }
    let scopes = match param("scope") {
        None => held.scopes.clone(),
        Some(scope) => {
            let scopes = wire::scope_list(scope);
            if let Some(extra) = scopes.iter().find(|scope| !held.scopes.contains(scope)) {
                return Err(failure(
                    "invalid_scope",
                    format!("the scope {extra:?} was not granted with the refresh token"),
                ));
            }
            scopes
        }
    };
    if let Some(resource) = param("resource").filter(|resource| held.resource.as_deref() != Some(*resource)) {
        return Err(failure(
            "invalid_target",
            format!("the resource {resource:?} is not the refresh token's"),
        ));
    }
    let grant = Grant { scopes, ..held };
    let rotate = oauth.options.refresh_rotation == RefreshRotation::Rotate;
    let issued = authority
        .with_store(|store| {
            let issued = store.issue(&grant, oauth.token_lifetime(), rotate)?;
            if rotate {
                store.drop_refresh(token);
            }
            Ok::<Issued, StoreError>(issued)
        })
        .map_err(|e| failure("temporarily_unavailable", error_chain(&e)))?;
    let refresh = match oauth.options.refresh_rotation {
        RefreshRotation::Rotate => issued.refresh_token.as_deref(),
        RefreshRotation::Reuse => Some(token),
        RefreshRotation::Omit => None,
    };
    Ok(token_response(oauth, &grant, &issued, refresh))
}

/// `grant_type=client_credentials`: confidential clients only, no refresh token.
fn client_credentials(
    oauth: &OAuth,
    client: &Client,
    params: &BTreeMap<String, String>,
) -> Result<(Grant, bool), TokenError> {
    if client.auth_methods.contains(&AuthMethod::None) {
        return Err(failure(
            "unauthorized_client",
            format!(
                "client {:?} is public; client_credentials needs a confidential client",
                client.id
            ),
        ));
    }
    let scopes = check_scopes(oauth, params.get("scope").map(String::as_str))?;
    let resource = check_resource(oauth, params.get("resource").map(String::as_str))?;
    Ok((
        Grant {
            client_id: client.id.clone(),
            scopes,
            resource,
        },
        false,
    ))
}

/// Whether a code exchange by `client` for `scopes` yields a refresh token.
fn grants_refresh(oauth: &OAuth, client: &Client, scopes: &[String]) -> bool {
    client.may_use_grant("refresh_token")
        && match oauth.options.refresh_tokens {
            RefreshIssuance::Always => true,
            RefreshIssuance::OfflineAccess => scopes.iter().any(|scope| scope == "offline_access"),
            RefreshIssuance::Never => false,
        }
}

/// The successful token response (RFC 6749 §5.1).
fn token_response(oauth: &OAuth, grant: &Grant, issued: &Issued, refresh_token: Option<&str>) -> Response<Body> {
    let mut body = Map::new();
    body.insert("access_token".to_owned(), json!(issued.access_token));
    body.insert("token_type".to_owned(), json!("Bearer"));
    if !oauth.options.omit_expires_in {
        body.insert("expires_in".to_owned(), json!(oauth.options.expires_in));
    }
    if let Some(refresh_token) = refresh_token {
        body.insert("refresh_token".to_owned(), json!(refresh_token));
    }
    if !grant.scopes.is_empty() {
        body.insert("scope".to_owned(), json!(grant.scopes.join(" ")));
    }
    wire::json_response(StatusCode::OK, &Value::Object(body))
}
