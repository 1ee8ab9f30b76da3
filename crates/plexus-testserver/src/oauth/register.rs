//! Dynamic client registration (RFC 7591): POST `<issuer>/register` with the client's metadata;
//! the answer echoes it with the defaults filled in, a new `client_id` and, for the
//! shared-secret methods, a `client_secret`. The metadata checks are shared with client ID
//! metadata documents.

use std::time::{SystemTime, UNIX_EPOCH};

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use plexus_jsonrpc::error_chain;
use serde_json::{Map, Value, json};

use super::authority::Authority;
use super::authorize::Failure;
use super::error::StoreError;
use super::jwt::{self, PublicKey};
use super::options::AuthMethod;
use super::record::OAuthRequest;
use super::store::{ALL_GRANTS, Client};
use super::{OAuth, method_not_allowed, wire};
use crate::remote::http::{self, Body};

/// A client's metadata, checked, with the defaults of RFC 7591 filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ClientMetadata {
    pub(super) redirect_uris: Vec<String>,
    pub(super) auth_method: AuthMethod,
    pub(super) grant_types: Vec<String>,
    pub(super) response_types: Vec<String>,
    /// The public keys of a `private_key_jwt` client (`jwks`).
    pub(super) jwks: Vec<PublicKey>,
}

/// POST `<issuer>/register`.
pub(super) async fn handle(
    oauth: &OAuth,
    authority: &Authority,
    request: Request<Incoming>,
    entry: &mut OAuthRequest,
) -> Response<Body> {
    if request.method() != Method::POST {
        return method_not_allowed(entry, "POST");
    }
    if !http::is_json(request.headers()) {
        return wire::error(
            entry,
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "the registration request must be application/json",
        );
    }
    let body = match http::read_body_limited(request, wire::MAX_FORM_BYTES).await {
        Ok(body) => body,
        Err(e) => return wire::error(entry, e.status(), "invalid_client_metadata", e.to_string()),
    };
    let document = match serde_json::from_slice::<Value>(&body) {
        Ok(document) => document,
        Err(e) => {
            return wire::error(
                entry,
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                format!("the registration request is not JSON: {e}"),
            );
        }
    };
    entry.body = Some(document.clone());
    let Value::Object(mut document) = document else {
        return wire::error(
            entry,
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "the registration request is not a JSON object",
        );
    };
    let supported = &oauth.options.auth_methods;
    let default_method = if supported.contains(&AuthMethod::ClientSecretBasic) {
        AuthMethod::ClientSecretBasic
    } else {
        supported.first().copied().unwrap_or(AuthMethod::None)
    };
    let metadata = match parse_metadata(&document, supported, default_method) {
        Ok(metadata) => metadata,
        Err((code, description)) => return wire::error(entry, StatusCode::BAD_REQUEST, &code, description),
    };
    let (client_id, secret) = match new_credentials(authority, metadata.auth_method.uses_secret()) {
        Ok(credentials) => credentials,
        Err(e) => {
            let description = error_chain(&e);
            return wire::error(entry, StatusCode::INTERNAL_SERVER_ERROR, "server_error", description);
        }
    };
    let client = Client {
        id: client_id.clone(),
        secret: secret.clone(),
        auth_methods: vec![metadata.auth_method],
        redirect_uris: metadata.redirect_uris.clone(),
        any_loopback_redirect: false,
        grant_types: metadata.grant_types.clone(),
        jwks: metadata.jwks.clone(),
    };
    if let Err(e) = authority.with_store(|store| store.put_client(client)) {
        let status = StatusCode::SERVICE_UNAVAILABLE;
        return wire::error(entry, status, "temporarily_unavailable", e.to_string());
    }
    entry.client_id = Some(client_id.clone());
    let issued_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    document.insert("client_id".to_owned(), json!(client_id));
    document.insert("client_id_issued_at".to_owned(), json!(issued_at));
    if let Some(secret) = secret {
        document.insert("client_secret".to_owned(), json!(secret));
        document.insert("client_secret_expires_at".to_owned(), json!(0));
    }
    document.insert(
        "token_endpoint_auth_method".to_owned(),
        json!(metadata.auth_method.as_str()),
    );
    document.insert("grant_types".to_owned(), json!(metadata.grant_types));
    document.insert("response_types".to_owned(), json!(metadata.response_types));
    document.insert("redirect_uris".to_owned(), json!(metadata.redirect_uris));
    wire::json_response(StatusCode::CREATED, &Value::Object(document))
}

/// A new client id, and a new secret when the client authenticates with one.
fn new_credentials(authority: &Authority, with_secret: bool) -> Result<(String, Option<String>), StoreError> {
    let id = authority.new_client_id()?;
    let secret = if with_secret {
        Some(wire::random_id("secret")?)
    } else {
        None
    };
    Ok((id, secret))
}

/// Checks client metadata (RFC 7591 §2): `redirect_uris` (required for the `authorization_code`
/// grant), `token_endpoint_auth_method` (one of `supported`; `default_method` when absent),
/// `grant_types` (default `authorization_code`), `response_types` (default `code`), and the
/// types of `scope` and `client_name`.
pub(super) fn parse_metadata(
    document: &Map<String, Value>,
    supported: &[AuthMethod],
    default_method: AuthMethod,
) -> Result<ClientMetadata, Failure> {
    let invalid = |description: String| ("invalid_client_metadata".to_owned(), description);
    let strings = |name: &str| -> Result<Option<Vec<String>>, Failure> {
        match document.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .map(Some)
                .ok_or_else(|| invalid(format!("{name} must be an array of strings"))),
            Some(_) => Err(invalid(format!("{name} must be an array of strings"))),
        }
    };
    for name in ["scope", "client_name", "client_uri", "application_type"] {
        if document.get(name).is_some_and(|value| !value.is_string()) {
            return Err(invalid(format!("{name} must be a string")));
        }
    }
    let grant_types = strings("grant_types")?.unwrap_or_else(|| vec!["authorization_code".to_owned()]);
    if let Some(unknown) = grant_types.iter().find(|grant| !ALL_GRANTS.contains(&grant.as_str())) {
        return Err(invalid(format!(
            "the grant type {unknown:?} is not supported (supported: {})",
            ALL_GRANTS.join(", ")
        )));
    }
    let response_types = strings("response_types")?.unwrap_or_else(|| vec!["code".to_owned()]);
    if let Some(unknown) = response_types.iter().find(|response| *response != "code") {
        return Err(invalid(format!(
            "the response type {unknown:?} is not supported (supported: code)"
        )));
    }
    let redirect_uris = strings("redirect_uris")?.unwrap_or_default();
    if redirect_uris.is_empty() && grant_types.iter().any(|grant| grant == "authorization_code") {
        return Err((
            "invalid_redirect_uri".to_owned(),
            "redirect_uris is required for the authorization_code grant".to_owned(),
        ));
    }
    for uri in &redirect_uris {
        wire::check_redirect_uri(uri).map_err(|e| ("invalid_redirect_uri".to_owned(), e))?;
    }
    let auth_method = match document.get("token_endpoint_auth_method") {
        None => default_method,
        Some(Value::String(name)) => AuthMethod::from_name(name)
            .filter(|method| supported.contains(method))
            .ok_or_else(|| {
                let supported: Vec<&str> = supported.iter().map(|method| method.as_str()).collect();
                invalid(format!(
                    "token_endpoint_auth_method {name:?} is not supported (supported: {})",
                    supported.join(", ")
                ))
            })?,
        Some(_) => return Err(invalid("token_endpoint_auth_method must be a string".to_owned())),
    };
    let jwks = match (auth_method, document.get("jwks"), document.get("jwks_uri")) {
        (AuthMethod::PrivateKeyJwt, _, Some(_)) => {
            return Err(invalid(
                "jwks_uri is not supported here; register the public keys inline (jwks)".to_owned(),
            ));
        }
        (AuthMethod::PrivateKeyJwt, Some(jwks), None) => {
            jwt::parse_jwks(jwks).map_err(|e| invalid(format!("jwks: {}", error_chain(&e))))?
        }
        (AuthMethod::PrivateKeyJwt, None, None) => {
            return Err(invalid(
                "private_key_jwt needs the client's public keys (jwks)".to_owned(),
            ));
        }
        _ => Vec::new(),
    };
    Ok(ClientMetadata {
        redirect_uris,
        auth_method,
        grant_types,
        response_types,
        jwks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(document: &Value) -> Result<ClientMetadata, Failure> {
        parse_metadata(
            document.as_object().unwrap(),
            &[AuthMethod::ClientSecretBasic, AuthMethod::None],
            AuthMethod::ClientSecretBasic,
        )
    }

    #[test]
    fn defaults_are_filled_in() {
        assert_eq!(
            parse(&json!({"redirect_uris": ["http://127.0.0.1/cb"]})).unwrap(),
            ClientMetadata {
                redirect_uris: vec!["http://127.0.0.1/cb".into()],
                auth_method: AuthMethod::ClientSecretBasic,
                grant_types: vec!["authorization_code".into()],
                response_types: vec!["code".into()],
                jwks: Vec::new(),
            }
        );
        let metadata =
            parse(&json!({"grant_types": ["client_credentials"], "token_endpoint_auth_method": "none"})).unwrap();
        assert!(metadata.redirect_uris.is_empty());
        assert_eq!(metadata.auth_method, AuthMethod::None);
    }

    #[test]
    fn bad_metadata_is_named() {
        let error = |document: Value| parse(&document).unwrap_err();
        assert_eq!(
            error(json!({})),
            (
                "invalid_redirect_uri".into(),
                "redirect_uris is required for the authorization_code grant".into()
            )
        );
        assert_eq!(
            error(json!({"redirect_uris": ["http://a/cb"], "token_endpoint_auth_method": "client_secret_post"})).1,
            "token_endpoint_auth_method \"client_secret_post\" is not supported (supported: client_secret_basic, none)"
        );
        assert_eq!(
            error(json!({"redirect_uris": "http://a/cb"})).1,
            "redirect_uris must be an array of strings"
        );
        assert_eq!(
            error(json!({"redirect_uris": ["http://a/cb"], "grant_types": ["implicit"]})).1,
            "the grant type \"implicit\" is not supported (supported: authorization_code, refresh_token, client_credentials)"
        );
        assert_eq!(
            error(json!({"redirect_uris": ["http://a/cb"], "scope": 1})).1,
            "scope must be a string"
        );
        assert_eq!(error(json!({"redirect_uris": ["/cb"]})).0, "invalid_redirect_uri");
    }
}
