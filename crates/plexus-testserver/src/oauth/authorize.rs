//! The authorization endpoint: validates the request and redirects at once (302) to the
//! client's `redirect_uri` with `code`, `state` and `iss` (or with an error), as a user who
//! approves everything would. Also the checks of `resource` (RFC 8707) and `scope` that the token
//! endpoint shares.

use std::time::Instant;

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use plexus_jsonrpc::error_chain;
use url::Url;

use super::authority::Authority;
use super::options::RedirectIss;
use super::record::OAuthRequest;
use super::store::{CODE_LIFETIME, Client, Code};
use super::{OAuth, cimd, method_not_allowed, wire};
use crate::remote::http::{self, Body};

/// The `iss` a `wrong` redirect carries.
const WRONG_ISSUER: &str = "https://wrong-issuer.example";

/// An OAuth error: its code and description.
pub(super) type Failure = (String, String);

fn failure(code: &str, description: impl Into<String>) -> Failure {
    (code.to_owned(), description.into())
}

/// GET `<issuer>/authorize`.
pub(super) async fn handle(
    oauth: &OAuth,
    authority: &Authority,
    request: Request<Incoming>,
    entry: &mut OAuthRequest,
) -> Response<Body> {
    if request.method() != Method::GET {
        return method_not_allowed(entry, "GET");
    }
    let query = request.uri().query().unwrap_or("").to_owned();
    drop(request);
    if query.len() > wire::MAX_QUERY_BYTES {
        return wire::error(
            entry,
            StatusCode::URI_TOO_LONG,
            "invalid_request",
            format!("the query is longer than {} bytes", wire::MAX_QUERY_BYTES),
        );
    }
    let params = match wire::parse_params(query.as_bytes()) {
        Ok(params) => params,
        Err(e) => return wire::error(entry, StatusCode::BAD_REQUEST, "invalid_request", e),
    };
    entry.params.clone_from(&params);
    entry.client_id = params.get("client_id").cloned();
    let Some(client_id) = params.get("client_id") else {
        return wire::error(
            entry,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client_id is required",
        );
    };
    let client = match find_client(oauth, authority, client_id).await {
        Ok(client) => client,
        Err(description) => return wire::error(entry, StatusCode::BAD_REQUEST, "invalid_client", description),
    };
    let Some(redirect_uri) = params.get("redirect_uri") else {
        return wire::error(
            entry,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "redirect_uri is required",
        );
    };
    let registered = client
        .redirect_uris
        .iter()
        .any(|registered| wire::redirect_uri_matches(registered, redirect_uri))
        || (client.any_loopback_redirect && wire::is_loopback_http(redirect_uri));
    let target = match Url::parse(redirect_uri) {
        Ok(target) if registered => target,
        _ => {
            return wire::error(
                entry,
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("redirect_uri {redirect_uri:?} is not registered for client {client_id:?}"),
            );
        }
    };
    // From here on, errors go back to the client by redirect.
    let iss = redirect_iss(oauth, authority);
    let mut pairs: Vec<(&str, String)> = Vec::with_capacity(4);
    match new_code(oauth, authority, &client, &params, redirect_uri) {
        Ok(code) => pairs.push(("code", code)),
        Err((code, description)) => {
            pairs.push(("error", code.clone()));
            pairs.push(("error_description", description.clone()));
            entry.error = Some(code);
            entry.error_description = Some(description);
        }
    }
    if let Some(state) = params.get("state") {
        pairs.push(("state", state.clone()));
    }
    if let Some(iss) = iss {
        pairs.push(("iss", iss));
    }
    redirect(target, &pairs)
}

/// Validates an authorization request of a known client with a registered redirect URI, and
/// issues its code.
fn new_code(
    oauth: &OAuth,
    authority: &Authority,
    client: &Client,
    params: &std::collections::BTreeMap<String, String>,
    redirect_uri: &str,
) -> Result<String, Failure> {
    let response_type = params.get("response_type").map_or("(none)", String::as_str);
    if response_type != "code" {
        return Err(failure(
            "unsupported_response_type",
            format!("response_type must be code (got {response_type})"),
        ));
    }
    let Some(challenge) = params.get("code_challenge") else {
        return Err(failure("invalid_request", "code_challenge is required (PKCE)"));
    };
    match params.get("code_challenge_method").map(String::as_str) {
        Some("S256") => {}
        Some(method) => {
            return Err(failure(
                "invalid_request",
                format!("code_challenge_method must be S256 (got {method})"),
            ));
        }
        None => {
            return Err(failure(
                "invalid_request",
                "code_challenge_method must be S256 (it is missing, which means plain)",
            ));
        }
    }
    if !wire::is_s256_challenge(challenge) {
        return Err(failure(
            "invalid_request",
            "code_challenge is not an S256 challenge (43 base64url characters)",
        ));
    }
    let resource = check_resource(oauth, params.get("resource").map(String::as_str))?;
    let scopes = check_scopes(oauth, params.get("scope").map(String::as_str))?;
    if !client.may_use_grant("authorization_code") {
        return Err(failure(
            "unauthorized_client",
            format!(
                "client {:?} is not registered for the authorization_code grant",
                client.id
            ),
        ));
    }
    if let Some(error) = &oauth.options.authorize_error {
        return Err(failure(
            error,
            "the authorization server was told to refuse (--oauth-authorize-error)",
        ));
    }
    let code = Code {
        client_id: client.id.clone(),
        redirect_uri: redirect_uri.to_owned(),
        challenge: challenge.clone(),
        resource,
        scopes,
        expires_at: Instant::now() + CODE_LIFETIME,
    };
    authority
        .with_store(|store| store.new_code(code))
        .map_err(|e| failure("temporarily_unavailable", error_chain(&e)))
}

/// The client named by `client_id`: a known one, or (with `--oauth-cimd`) the one its metadata
/// document describes, fetched now.
async fn find_client(oauth: &OAuth, authority: &Authority, client_id: &str) -> Result<Client, String> {
    let is_url = client_id.starts_with("http://") || client_id.starts_with("https://");
    if is_url && oauth.options.cimd {
        return cimd::fetch_client(oauth, authority, client_id).await;
    }
    if let Some(client) = authority.with_store(|store| store.client(client_id).cloned()) {
        return Ok(client);
    }
    if is_url {
        return Err(format!(
            "client_id {client_id:?} is a URL, but this authorization server does not accept client ID metadata documents (--oauth-cimd)"
        ));
    }
    Err(format!("unknown client_id {client_id:?}"))
}

/// The `iss` of the redirect, per `--oauth-redirect-iss`.
fn redirect_iss(oauth: &OAuth, authority: &Authority) -> Option<String> {
    match oauth.options.redirect_iss {
        RedirectIss::Correct => Some(authority.issuer.clone()),
        RedirectIss::Missing => None,
        RedirectIss::Wrong => Some(WRONG_ISSUER.to_owned()),
        RedirectIss::TrailingSlash => Some(format!("{}/", authority.issuer)),
    }
}

/// A 302 to `target` with `pairs` added to its query.
fn redirect(mut target: Url, pairs: &[(&str, String)]) -> Response<Body> {
    {
        let mut query = target.query_pairs_mut();
        for (name, value) in pairs {
            query.append_pair(name, value);
        }
    }
    let response = http::empty(StatusCode::FOUND);
    match HeaderValue::from_str(target.as_str()) {
        Ok(location) => http::with_header(response, header::LOCATION, location),
        Err(_) => http::text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the redirect URL is not a header value",
        ),
    }
}

/// Checks an RFC 8707 `resource` parameter: required (unless `--oauth-resource-optional`) and
/// naming this protected resource.
pub(super) fn check_resource(oauth: &OAuth, resource: Option<&str>) -> Result<Option<String>, Failure> {
    match resource {
        None if oauth.options.resource_optional => Ok(None),
        None => Err(failure(
            "invalid_request",
            format!(
                "the resource parameter (RFC 8707) is required; this server's is {}",
                oauth.resource
            ),
        )),
        Some(resource) if oauth.accepts_resource(resource) => Ok(Some(resource.to_owned())),
        Some(resource) => Err(failure(
            "invalid_target",
            format!(
                "the resource {resource:?} is not served here (this server's is {})",
                oauth.resource
            ),
        )),
    }
}

/// The scopes of a `scope` parameter; with `--oauth-scopes-supported`, only those.
pub(super) fn check_scopes(oauth: &OAuth, scope: Option<&str>) -> Result<Vec<String>, Failure> {
    let scopes = wire::scope_list(scope.unwrap_or(""));
    let supported = &oauth.options.scopes_supported;
    if let Some(unknown) = scopes
        .iter()
        .find(|scope| !supported.is_empty() && !supported.contains(scope))
    {
        return Err(failure(
            "invalid_scope",
            format!(
                "the scope {unknown:?} is not supported (scopes_supported: {})",
                supported.join(" ")
            ),
        ));
    }
    Ok(scopes)
}
