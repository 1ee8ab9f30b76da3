//! Who the client is at an authorization server: pre-registered, a Client ID Metadata Document
//! URL, or registered on the spot (RFC 7591 Dynamic Client Registration).

use plexus_net::redact::redact_url;
use plexus_transport::body_excerpt;
use serde::Deserialize;

use super::discovery::AuthServerMetadata;
use super::grant::{AuthMethod, ClientCredentials};
use super::http::OAuthHttp;
use super::{HttpProblem, OAuthError, OAuthSettings};
use crate::store::{ClientSource, Secret, StoredClient};

/// The client to use at the authorization server described by `metadata`: the configured one,
/// else the Client ID Metadata Document URL (when the server supports them and one is
/// configured), else `existing` (a registration made earlier for the same redirect URI), else a
/// new registration.
pub(crate) async fn resolve_client(
    http: &OAuthHttp,
    settings: &OAuthSettings,
    metadata: &AuthServerMetadata,
    existing: Option<&StoredClient>,
    redirect_uri: &str,
) -> Result<StoredClient, OAuthError> {
    let supported = metadata.token_endpoint_auth_methods_supported.as_deref();
    if let Some(client_id) = &settings.client_id {
        return Ok(StoredClient {
            source: ClientSource::PreRegistered,
            client_id: client_id.clone(),
            client_secret: None,
            auth_method: AuthMethod::choose_with_key(
                settings.client_secret.is_some(),
                settings.private_key.is_some(),
                supported,
            )
            .as_str()
            .to_owned(),
            redirect_uri: Some(redirect_uri.to_owned()),
        });
    }
    if metadata.client_id_metadata_document_supported
        && let Some(url) = &settings.client_metadata_url
    {
        return Ok(StoredClient {
            source: ClientSource::MetadataDocument,
            client_id: url.clone(),
            client_secret: None,
            auth_method: AuthMethod::None.as_str().to_owned(),
            redirect_uri: Some(redirect_uri.to_owned()),
        });
    }
    if let Some(client) =
        existing.filter(|c| c.source == ClientSource::Dynamic && c.redirect_uri.as_deref() == Some(redirect_uri))
    {
        return Ok(client.clone());
    }
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(OAuthError::NoClientIdentity {
            issuer: metadata.issuer.clone(),
            cimd: if metadata.client_id_metadata_document_supported {
                " and no client metadata document URL is configured"
            } else {
                " and does not support client ID metadata documents"
            },
        });
    };
    register(http, settings, endpoint, supported, redirect_uri).await
}

/// The token endpoint credentials of a client (a pre-registered client's secret and private key
/// come from the settings, never from the store).
pub(crate) fn credentials(client: &StoredClient, settings: &OAuthSettings) -> ClientCredentials {
    let secret = match client.source {
        ClientSource::PreRegistered => settings.client_secret.clone(),
        ClientSource::MetadataDocument => None,
        ClientSource::Dynamic => client.client_secret.clone(),
    };
    let method = AuthMethod::parse(&client.auth_method).unwrap_or(if secret.is_some() {
        AuthMethod::ClientSecretBasic
    } else {
        AuthMethod::None
    });
    let key = match client.source {
        ClientSource::PreRegistered if method == AuthMethod::PrivateKeyJwt => settings.private_key.clone(),
        _ => None,
    };
    ClientCredentials {
        client_id: client.client_id.clone(),
        secret,
        method,
        key,
    }
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: Option<String>,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

#[derive(Deserialize)]
struct RegistrationError {
    error: Option<String>,
    error_description: Option<String>,
}

/// Registers a native client with the redirect URI (RFC 7591).
async fn register(
    http: &OAuthHttp,
    settings: &OAuthSettings,
    endpoint: &str,
    supported: Option<&[String]>,
    redirect_uri: &str,
) -> Result<StoredClient, OAuthError> {
    const WHAT: &str = "dynamic client registration at";
    // A native client is public when the server allows it.
    let requested = if supported.is_none_or(|list| list.iter().any(|m| m == "none")) {
        AuthMethod::None
    } else {
        AuthMethod::choose(true, supported)
    };
    let body = serde_json::json!({
        "client_name": settings.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested.as_str(),
        "application_type": "native",
    });
    let reply = http.post_json(WHAT, endpoint, &body).await?;
    let failed = |problem: HttpProblem| OAuthError::Http {
        what: WHAT,
        url: redact_url(endpoint),
        problem: Box::new(problem),
    };
    if !reply.is_success() {
        let problem = match serde_json::from_slice::<RegistrationError>(&reply.body) {
            Ok(RegistrationError {
                error: Some(code),
                error_description,
            }) => HttpProblem::Refused {
                status: reply.status,
                code,
                description: error_description,
            },
            _ => HttpProblem::Status {
                status: reply.status,
                excerpt: body_excerpt(&reply.body),
            },
        };
        return Err(failed(problem));
    }
    let response: RegistrationResponse = reply.json(WHAT, endpoint)?;
    let client_id = response
        .client_id
        .filter(|id| !id.is_empty())
        .ok_or_else(|| failed(HttpProblem::Missing { field: "client_id" }))?;
    let client_secret = response.client_secret.filter(|s| !s.is_empty()).map(Secret::new);
    let method = match response.token_endpoint_auth_method.as_deref() {
        Some(name) => AuthMethod::parse(name).ok_or_else(|| {
            failed(HttpProblem::UnsupportedAuthMethod {
                method: name.to_owned(),
            })
        })?,
        None if requested != AuthMethod::None && client_secret.is_none() => AuthMethod::None,
        None => requested,
    };
    Ok(StoredClient {
        source: ClientSource::Dynamic,
        client_id,
        client_secret,
        auth_method: method.as_str().to_owned(),
        redirect_uri: Some(redirect_uri.to_owned()),
    })
}
