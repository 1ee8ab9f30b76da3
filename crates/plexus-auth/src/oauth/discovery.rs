//! Discovery: the server's protected resource metadata (RFC 9728) and its authorization server's
//! metadata (RFC 8414, OpenID Connect Discovery), in the order the MCP specification gives.
//!
//! ```
//! use plexus_auth::oauth::discovery::{metadata_urls, resource_metadata_urls};
//! use url::Url;
//!
//! let server = Url::parse("https://mcp.example.com/tools/mcp").unwrap();
//! assert_eq!(resource_metadata_urls(&server), [
//!     "https://mcp.example.com/.well-known/oauth-protected-resource/tools/mcp",
//!     "https://mcp.example.com/.well-known/oauth-protected-resource",
//! ]);
//! let issuer = Url::parse("https://auth.example.com/t1").unwrap();
//! assert_eq!(metadata_urls(&issuer), [
//!     "https://auth.example.com/.well-known/oauth-authorization-server/t1",
//!     "https://auth.example.com/.well-known/openid-configuration/t1",
//!     "https://auth.example.com/t1/.well-known/openid-configuration",
//! ]);
//! ```

use plexus_net::redact::redact_url;
use serde::Deserialize;
use url::Url;

use super::http::{OAuthHttp, parse_json};
use super::resource::{canonical_resource, resource_matches};
use super::{HttpProblem, OAuthError};

/// Protected resource metadata (RFC 9728): the fields plexus uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ResourceMetadata {
    /// The resource identifier; must name the server.
    pub resource: String,
    /// The issuers of the authorization servers that accept requests for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource uses.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// The DPoP proof algorithms the resource accepts (RFC 9728 §2).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Vec<String>,
    /// Whether the resource accepts DPoP-bound tokens only (RFC 9728 §2).
    #[serde(default)]
    pub dpop_bound_access_tokens_required: bool,
}

/// Authorization server metadata (RFC 8414): the fields plexus uses. The default has every field
/// empty or absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct AuthServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where the user authorizes (empty when the server has no authorization endpoint, as a
    /// server for client credentials only may have none).
    #[serde(default)]
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens become tokens.
    pub token_endpoint: String,
    /// Dynamic Client Registration (RFC 7591), when supported.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// The PKCE methods (must include `S256`).
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// The token endpoint client authentication methods (RFC 8414 default:
    /// `client_secret_basic`).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Whether the authorization response carries `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// Whether a Client ID Metadata Document URL may be used as the client id.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// The grant types it supports, when it says.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// The DPoP proof algorithms it accepts (RFC 9449 §5.1); DPoP is used only with `ES256`.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Vec<String>,
}

/// Where the authorization server's endpoints came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataSource {
    /// A metadata document at this URL.
    Document(String),
    /// No document: the 2025-03-26 default endpoints at the issuer's origin.
    Fallback,
}

/// What discovery found for a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The protected resource metadata and its URL (`None` for a 2025-03-26 server).
    pub resource_metadata: Option<(String, ResourceMetadata)>,
    /// The `resource` to send: the metadata's, exactly as published, else the server's canonical
    /// URI.
    pub resource: String,
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// Its metadata (for [`MetadataSource::Fallback`], the default endpoints).
    pub metadata: AuthServerMetadata,
    /// Where the metadata came from.
    pub source: MetadataSource,
}

/// The protected resource metadata URLs of a server, in order: path-suffixed, then root.
pub fn resource_metadata_urls(server: &Url) -> Vec<String> {
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    let query = server.query().map(|q| format!("?{q}")).unwrap_or_default();
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}{query}"), root]
    }
}

/// The metadata URLs of an issuer, in order. With a path (`https://as/t1`): RFC 8414's
/// path-inserted form, OpenID's path-inserted form, OpenID's path-appended form. Without: the
/// two root forms.
pub fn metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ];
    }
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// Runs discovery for the server at `server`: `challenge_metadata` is the `resource_metadata` of
/// its `WWW-Authenticate` challenge, `metadata_override` the configured authorization server
/// metadata URL.
pub(crate) async fn discover(
    http: &OAuthHttp,
    server: &Url,
    challenge_metadata: Option<&str>,
    metadata_override: Option<&str>,
) -> Result<Discovery, OAuthError> {
    let resource_metadata = fetch_resource_metadata(http, server, challenge_metadata).await?;
    let resource = match &resource_metadata {
        Some((_, metadata)) => metadata.resource.clone(),
        None => canonical_resource(server),
    };
    let (issuer, metadata, source) = if let Some(url) = metadata_override {
        let metadata = fetch_metadata_document(http, url).await?;
        (
            metadata.issuer.clone(),
            metadata,
            MetadataSource::Document(url.to_owned()),
        )
    } else {
        let (issuer, legacy) = match &resource_metadata {
            Some((_, metadata)) => (metadata.authorization_servers[0].clone(), false),
            None => (server.origin().ascii_serialization(), true),
        };
        match find_metadata(http, &issuer, legacy).await? {
            Some((url, metadata)) => (metadata.issuer.clone(), metadata, MetadataSource::Document(url)),
            None => (issuer.clone(), fallback_metadata(&issuer)?, MetadataSource::Fallback),
        }
    };
    Ok(Discovery {
        resource_metadata,
        resource,
        issuer,
        metadata,
        source,
    })
}

/// The first protected resource metadata document found, checked to name the server; `None` when
/// every location answers with an error status (a 2025-03-26 server).
async fn fetch_resource_metadata(
    http: &OAuthHttp,
    server: &Url,
    challenge_metadata: Option<&str>,
) -> Result<Option<(String, ResourceMetadata)>, OAuthError> {
    const WHAT: &str = "the protected resource metadata";
    let mut candidates = Vec::new();
    if let Some(url) = challenge_metadata.and_then(|u| Url::parse(u).ok())
        && matches!(url.scheme(), "http" | "https")
    {
        candidates.push(url.to_string());
    }
    for url in resource_metadata_urls(server) {
        if !candidates.contains(&url) {
            candidates.push(url);
        }
    }
    for url in candidates {
        let reply = http.get(WHAT, &url).await?;
        if !reply.is_success() {
            tracing::debug!(url = %redact_url(&url), status = reply.status, "no protected resource metadata here");
            continue;
        }
        let metadata = read_resource_metadata(&reply.body, &url, server)?;
        return Ok(Some((url, metadata)));
    }
    Ok(None)
}

/// The protected resource metadata document `body`, fetched from `url` for the server at
/// `server`, checked to name that server and at least one authorization server (what discovery
/// does with each document it fetches).
///
/// ```
/// use plexus_auth::oauth::discovery::read_resource_metadata;
/// use url::Url;
///
/// let server = Url::parse("https://mcp.example.com/mcp").unwrap();
/// let url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
/// let body = br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://as.example"]}"#;
/// assert_eq!(read_resource_metadata(body, url, &server).unwrap().authorization_servers, ["https://as.example"]);
/// let elsewhere = br#"{"resource":"https://evil.example/mcp","authorization_servers":["https://as.example"]}"#;
/// assert!(read_resource_metadata(elsewhere, url, &server).is_err());
/// ```
pub fn read_resource_metadata(body: &[u8], url: &str, server: &Url) -> Result<ResourceMetadata, OAuthError> {
    const WHAT: &str = "the protected resource metadata";
    let metadata: ResourceMetadata = parse_json(body, WHAT, url)?;
    if !resource_matches(&metadata.resource, server) {
        return Err(OAuthError::ResourceMismatch {
            metadata_url: redact_url(url),
            resource: metadata.resource,
            server_url: redact_url(server.as_str()),
        });
    }
    if metadata.authorization_servers.is_empty() {
        return Err(OAuthError::Http {
            what: WHAT,
            url: redact_url(url),
            problem: Box::new(HttpProblem::NoAuthorizationServer),
        });
    }
    Ok(metadata)
}

/// Which issuer an authorization server metadata document must name.
#[derive(Debug, Clone, Copy)]
pub enum ExpectedIssuer<'a> {
    /// Exactly this one: the issuer it was fetched for.
    Exact(&'a str),
    /// One on this issuer's origin (a 2025-03-26 server, whose issuer is a guess).
    SameOrigin(&'a str),
    /// Any valid issuer identifier (a configured document, with nothing to compare it with).
    Any,
}

/// The authorization server metadata document `body`, fetched from `url` (as `what`, which
/// errors name), checked to name the `expected` issuer (what discovery does with each document
/// it fetches).
///
/// ```
/// use plexus_auth::oauth::discovery::{ExpectedIssuer, read_auth_server_metadata};
///
/// let url = "https://as.example/.well-known/oauth-authorization-server";
/// let body = br#"{"issuer":"https://as.example","token_endpoint":"https://as.example/token"}"#;
/// let read = |expected| read_auth_server_metadata(body, "the metadata", url, expected);
/// assert_eq!(read(ExpectedIssuer::Exact("https://as.example")).unwrap().token_endpoint, "https://as.example/token");
/// assert!(read(ExpectedIssuer::Exact("https://as.example/")).is_err());
/// assert!(read(ExpectedIssuer::SameOrigin("https://as.example/")).is_ok());
/// ```
pub fn read_auth_server_metadata(
    body: &[u8],
    what: &'static str,
    url: &str,
    expected: ExpectedIssuer<'_>,
) -> Result<AuthServerMetadata, OAuthError> {
    let metadata: AuthServerMetadata = parse_json(body, what, url)?;
    let (accepted, expected) = match expected {
        ExpectedIssuer::Exact(issuer) => (metadata.issuer == issuer, issuer),
        // The 2025-03-26 revision names no issuer: the document's must be on the origin it
        // came from.
        ExpectedIssuer::SameOrigin(issuer) => {
            let origin = |text: &str| Url::parse(text).map(|url| url.origin());
            (
                matches!((origin(&metadata.issuer), origin(issuer)), (Ok(found), Ok(guessed)) if found == guessed),
                issuer,
            )
        }
        ExpectedIssuer::Any => {
            parse_issuer(&metadata.issuer)?;
            return Ok(metadata);
        }
    };
    if !accepted {
        return Err(OAuthError::IssuerMismatch {
            metadata_url: redact_url(url),
            expected: expected.to_owned(),
            found: metadata.issuer,
        });
    }
    Ok(metadata)
}

/// The metadata of `issuer` at its well-known locations, checked to name that issuer (for a
/// 2025-03-26 server, whose issuer is a guess, to be on the server's origin); `None` when every
/// location answers with an error status.
pub(crate) async fn find_metadata(
    http: &OAuthHttp,
    issuer: &str,
    legacy: bool,
) -> Result<Option<(String, AuthServerMetadata)>, OAuthError> {
    const WHAT: &str = "the authorization server metadata";
    let parsed = parse_issuer(issuer)?;
    for url in metadata_urls(&parsed) {
        let reply = http.get(WHAT, &url).await?;
        if !reply.is_success() {
            tracing::debug!(url = %redact_url(&url), status = reply.status, "no authorization server metadata here");
            continue;
        }
        let expected = if legacy {
            ExpectedIssuer::SameOrigin(issuer)
        } else {
            ExpectedIssuer::Exact(issuer)
        };
        let metadata = read_auth_server_metadata(&reply.body, WHAT, &url, expected)?;
        return Ok(Some((url, metadata)));
    }
    Ok(None)
}

/// The configured metadata document (no issuer to compare it with; it must name one).
async fn fetch_metadata_document(http: &OAuthHttp, url: &str) -> Result<AuthServerMetadata, OAuthError> {
    const WHAT: &str = "the configured authorization server metadata";
    let reply = http.get(WHAT, url).await?;
    if !reply.is_success() {
        return Err(OAuthError::Http {
            what: WHAT,
            url: redact_url(url),
            problem: Box::new(HttpProblem::Status {
                status: reply.status,
                excerpt: String::new(),
            }),
        });
    }
    read_auth_server_metadata(&reply.body, WHAT, url, ExpectedIssuer::Any)
}

/// The 2025-03-26 default endpoints at the issuer's origin.
fn fallback_metadata(issuer: &str) -> Result<AuthServerMetadata, OAuthError> {
    let origin = parse_issuer(issuer)?.origin().ascii_serialization();
    Ok(AuthServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint: format!("{origin}/authorize"),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        ..AuthServerMetadata::default()
    })
}

/// An issuer identifier: an `http(s)` URL without query or fragment (RFC 8414 §2).
fn parse_issuer(issuer: &str) -> Result<Url, OAuthError> {
    let invalid = |problem: HttpProblem| OAuthError::Http {
        what: "the authorization server issuer",
        url: redact_url(issuer),
        problem: Box::new(problem),
    };
    let url = Url::parse(issuer).map_err(|e| invalid(HttpProblem::NotAUrl(e)))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(invalid(HttpProblem::NotHttp));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(HttpProblem::IssuerWithQuery));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn resource_metadata_locations() {
        assert_eq!(
            resource_metadata_urls(&url("http://localhost:3000/mcp")),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls(&url("http://localhost:3000/")),
            ["http://localhost:3000/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            resource_metadata_urls(&url("https://h/a/b/?t=1")),
            [
                "https://h/.well-known/oauth-protected-resource/a/b?t=1",
                "https://h/.well-known/oauth-protected-resource"
            ]
        );
    }

    #[test]
    fn metadata_locations() {
        assert_eq!(
            metadata_urls(&url("http://localhost:9/")),
            [
                "http://localhost:9/.well-known/oauth-authorization-server",
                "http://localhost:9/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls(&url("https://as.example/tenant1/")),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn issuers_are_checked() {
        assert!(parse_issuer("https://as.example/t").is_ok());
        for bad in ["ftp://as", "https://as/?q=1", "https://as/#f", "as.example"] {
            assert!(parse_issuer(bad).is_err(), "{bad}");
        }
        let fallback = fallback_metadata("http://localhost:5/base").unwrap();
        assert_eq!(fallback.authorization_endpoint, "http://localhost:5/authorize");
        assert_eq!(fallback.token_endpoint, "http://localhost:5/token");
        assert_eq!(
            fallback.registration_endpoint.as_deref(),
            Some("http://localhost:5/register")
        );
    }

    proptest! {
        /// Every metadata URL is on the issuer's origin under a `.well-known` path, and the
        /// issuer's path appears in each (after a trailing slash is trimmed).
        #[test]
        fn well_known_urls_keep_origin_and_path(
            segments in proptest::collection::vec("[a-z0-9]{1,5}", 0..3),
            trailing in any::<bool>(),
        ) {
            let mut text = format!("https://as.example/{}", segments.join("/"));
            if trailing && !segments.is_empty() {
                text.push('/');
            }
            let issuer = url(&text);
            let urls = metadata_urls(&issuer);
            prop_assert_eq!(urls.len(), if segments.is_empty() { 2 } else { 3 });
            let path = segments.join("/");
            for candidate in &urls {
                prop_assert!(candidate.starts_with("https://as.example/"));
                prop_assert!(candidate.contains("/.well-known/"));
                prop_assert!(candidate.contains(&path));
                prop_assert!(!candidate.ends_with('/'));
            }
            let server_urls = resource_metadata_urls(&issuer);
            prop_assert_eq!(server_urls.last().unwrap(), "https://as.example/.well-known/oauth-protected-resource");
        }
    }
}
