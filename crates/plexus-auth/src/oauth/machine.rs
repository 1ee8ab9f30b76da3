//! The grants that need no user: client credentials, a JWT bearer assertion (workload identity
//! federation) and enterprise-managed authorization (a token exchange at the identity provider
//! for an ID-JAG, then the JWT bearer grant at the server's authorization server).

use std::path::Path;

use plexus_net::redact::redact_url;
use tokio::io::AsyncReadExt as _;

use super::discovery::{Discovery, find_metadata};
use super::grant::{AuthMethod, ClientCredentials, DpopBinding, Grant, TokenRequest, TokenResponse, request_token};
use super::http::OAuthHttp;
use super::registration::credentials;
use super::scopes::join;
use super::settings::{AssertionSource, IdentityProvider, OAuthGrant};
use super::{AssertionProblem, OAuthError, OAuthSettings, SettingsProblem};
use crate::store::{ClientSource, Secret, StoredClient};

/// The `requested_token_type` of an identity assertion authorization grant.
pub(crate) const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The largest assertion read from a file or the environment.
pub(crate) const MAX_ASSERTION_BYTES: u64 = 64 * 1024;

/// What a grant without a user needs besides the settings.
#[derive(Debug)]
pub(crate) struct MachineRequest<'a> {
    pub(crate) discovery: &'a Discovery,
    /// The scopes to request (none: no `scope` parameter).
    pub(crate) scopes: &'a [String],
    /// The key to bind the tokens to (DPoP), when they are to be bound.
    pub(crate) dpop: Option<DpopBinding<'a>>,
}

/// Obtains tokens with the settings' grant, which must not be the authorization code. Returns
/// the client that authenticated (none for an anonymous JWT bearer grant) and the tokens.
pub(crate) async fn obtain(
    http: &OAuthHttp,
    settings: &OAuthSettings,
    request: MachineRequest<'_>,
) -> Result<(Option<StoredClient>, TokenResponse), OAuthError> {
    let discovery = request.discovery;
    let scope = join(request.scopes);
    let client = pre_registered(settings, discovery);
    let anonymous = ClientCredentials {
        client_id: String::new(),
        secret: None,
        method: AuthMethod::None,
        key: None,
    };
    let client_credentials = client.as_ref().map_or(anonymous, |c| credentials(c, settings));
    let assertion;
    let grant = match &settings.grant {
        OAuthGrant::AuthorizationCode => {
            return Err(OAuthError::Settings {
                field: "oauth grant".to_owned(),
                problem: SettingsProblem::NeedsLogin,
            });
        }
        OAuthGrant::ClientCredentials => {
            if client.is_none() {
                return Err(OAuthError::Settings {
                    field: "oauth.clientId".to_owned(),
                    problem: SettingsProblem::NeedsClientId,
                });
            }
            Grant::ClientCredentials
        }
        OAuthGrant::JwtBearer { assertion: source } => {
            assertion = read_assertion(source, "the workload identity token").await?;
            Grant::JwtBearer { assertion: &assertion }
        }
        OAuthGrant::EnterpriseManaged(idp) => {
            assertion = identity_assertion(http, idp, discovery, scope.as_deref()).await?;
            Grant::JwtBearer { assertion: &assertion }
        }
    };
    let response = request_token(
        http,
        TokenRequest {
            endpoint: &discovery.metadata.token_endpoint,
            client: &client_credentials,
            grant,
            resource: Some(&discovery.resource),
            scope: scope.as_deref(),
            issuer: &discovery.issuer,
            dpop: request.dpop,
        },
    )
    .await?;
    Ok((client, response))
}

/// The configured client, authenticating as the authorization server allows.
fn pre_registered(settings: &OAuthSettings, discovery: &Discovery) -> Option<StoredClient> {
    let client_id = settings.client_id.clone()?;
    let supported = discovery.metadata.token_endpoint_auth_methods_supported.as_deref();
    let method = AuthMethod::choose_with_key(
        settings.client_secret.is_some(),
        settings.private_key.is_some(),
        supported,
    );
    Some(StoredClient {
        source: ClientSource::PreRegistered,
        client_id,
        client_secret: None,
        auth_method: method.as_str().to_owned(),
        redirect_uri: None,
    })
}

/// Exchanges the user's token at the identity provider for an ID-JAG for the server's
/// authorization server (RFC 8693; the `audience` is that server's issuer, the `resource` the
/// MCP server).
async fn identity_assertion(
    http: &OAuthHttp,
    idp: &IdentityProvider,
    discovery: &Discovery,
    scope: Option<&str>,
) -> Result<Secret, OAuthError> {
    let subject_token = read_assertion(&idp.subject_token, "the identity provider's ID token").await?;
    let endpoint = match &idp.token_endpoint {
        Some(endpoint) => endpoint.clone(),
        None => match find_metadata(http, &idp.issuer, false).await? {
            Some((_, metadata)) => metadata.token_endpoint,
            None => {
                return Err(OAuthError::Settings {
                    field: "the identity provider".to_owned(),
                    problem: SettingsProblem::NoIssuerMetadata {
                        issuer: redact_url(&idp.issuer),
                    },
                });
            }
        },
    };
    let client = ClientCredentials {
        client_id: idp.client_id.clone(),
        secret: idp.client_secret.clone(),
        method: if idp.client_secret.is_some() {
            AuthMethod::ClientSecretBasic
        } else {
            AuthMethod::None
        },
        key: None,
    };
    let response = request_token(
        http,
        TokenRequest {
            endpoint: &endpoint,
            client: &client,
            grant: Grant::TokenExchange {
                subject_token: &subject_token,
                subject_token_type: &idp.subject_token_type,
                requested_token_type: ID_JAG_TYPE,
                audience: &discovery.issuer,
            },
            resource: Some(&discovery.resource),
            scope,
            issuer: &idp.issuer,
            dpop: None,
        },
    )
    .await?;
    Ok(response.access_token)
}

/// Reads an assertion: trimmed, non-empty, at most [`MAX_ASSERTION_BYTES`], and shaped as a JWT
/// (three base64url parts). `what` names it in errors.
pub(crate) async fn read_assertion(source: &AssertionSource, what: &'static str) -> Result<Secret, OAuthError> {
    let (origin, text) = match source {
        AssertionSource::Value(secret) => ("the configured value".to_owned(), secret.expose().to_owned()),
        AssertionSource::Env(name) => {
            let origin = format!("the environment variable {name}");
            match std::env::var(name) {
                Ok(value) => (origin, value),
                Err(e) => {
                    return Err(OAuthError::Assertion {
                        what,
                        origin,
                        problem: e.into(),
                    });
                }
            }
        }
        AssertionSource::File(path) => {
            let origin = format!("the file {}", path.display());
            match read_bounded(path).await {
                Ok(text) => (origin, text),
                Err(problem) => return Err(OAuthError::Assertion { what, origin, problem }),
            }
        }
    };
    let failed = |problem: AssertionProblem| OAuthError::Assertion {
        what,
        origin: origin.clone(),
        problem,
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(failed(AssertionProblem::Empty));
    }
    if text.len() as u64 > MAX_ASSERTION_BYTES {
        return Err(failed(AssertionProblem::TooLarge));
    }
    let parts: Vec<&str> = text.split('.').collect();
    let base64url = |part: &&str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if parts.len() != 3 || !parts[..2].iter().all(base64url) || !(parts[2].is_empty() || base64url(&parts[2])) {
        return Err(failed(AssertionProblem::NotAJwt));
    }
    Ok(Secret::new(text))
}

/// A file's text, refusing one larger than [`MAX_ASSERTION_BYTES`].
async fn read_bounded(path: &Path) -> Result<String, AssertionProblem> {
    let file = tokio::fs::File::open(path).await?;
    let mut bytes = Vec::new();
    file.take(MAX_ASSERTION_BYTES + 1).read_to_end(&mut bytes).await?;
    if bytes.len() as u64 > MAX_ASSERTION_BYTES {
        return Err(AssertionProblem::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| AssertionProblem::NotUtf8)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use plexus_transport::error_chain;

    use super::*;

    const JWT: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.c2ln";

    #[tokio::test]
    async fn an_assertion_is_read_from_a_value_a_file_or_the_environment() {
        let value = read_assertion(&AssertionSource::Value(Secret::new(format!(" {JWT}\n"))), "the token")
            .await
            .unwrap();
        assert_eq!(value.expose(), JWT);

        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "{JWT}").unwrap();
        let from_file = read_assertion(&AssertionSource::File(file.path().to_owned()), "the token")
            .await
            .unwrap();
        assert_eq!(from_file.expose(), JWT);

        // PATH is always set and is no JWT: the error names the variable and never quotes it.
        let err = read_assertion(&AssertionSource::Env("PATH".into()), "the workload identity token")
            .await
            .unwrap_err();
        assert_eq!(
            error_chain(&err),
            "the workload identity token (from the environment variable PATH): it is not a JWT (three base64url parts separated by dots)"
        );
    }

    #[tokio::test]
    async fn unusable_assertions_are_refused_with_where_they_came_from() {
        let reason = |text: &str| {
            let source = AssertionSource::Value(Secret::new(text));
            async move { error_chain(&read_assertion(&source, "the token").await.unwrap_err()) }
        };
        assert_eq!(
            reason("  \n").await,
            "the token (from the configured value): it is empty"
        );
        for bad in ["a.b", "a.b.c.d", "a.b!.c", ".b.c"] {
            assert_eq!(
                reason(bad).await,
                "the token (from the configured value): it is not a JWT (three base64url parts separated by dots)",
                "{bad}"
            );
        }
        assert!(
            read_assertion(&AssertionSource::Value(Secret::new("a.b.")), "t")
                .await
                .is_ok(),
            "an unsecured JWT has an empty signature"
        );
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("token");
        let err = read_assertion(&AssertionSource::File(missing.clone()), "the token")
            .await
            .unwrap_err();
        assert!(
            error_chain(&err).starts_with(&format!("the token (from the file {}): ", missing.display())),
            "{err}"
        );
        let huge = dir.path().join("huge");
        std::fs::write(&huge, vec![b'a'; 70_000]).unwrap();
        let err = read_assertion(&AssertionSource::File(huge.clone()), "the token")
            .await
            .unwrap_err();
        assert_eq!(
            error_chain(&err),
            format!(
                "the token (from the file {}): it is larger than 65536 bytes",
                huge.display()
            )
        );
    }
}
