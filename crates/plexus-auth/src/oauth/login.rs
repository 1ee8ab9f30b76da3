//! The interactive login: the authorization code grant with PKCE S256, the loopback listener, the
//! user agent, the checks of the authorization response (RFC 9207 `iss`, `state`) and the code
//! exchange.

use plexus_transport::redact::redact_url;
use url::Url;

use super::discovery::{Discovery, MetadataSource};
use super::grant::{DpopBinding, Grant, TokenRequest, request_token};
use super::http::OAuthHttp;
use super::listener::{CallbackListener, CallbackParams};
use super::pkce::{Pkce, random_token};
use super::registration::{credentials, resolve_client};
use super::scopes::join;
use super::{AuthorizationPrompt, OAuthError, OAuthSettings, UserAgent};
use crate::store::{StoredClient, StoredTokens};

/// What a login needs besides the settings.
#[derive(Debug)]
pub(crate) struct LoginRequest<'a> {
    /// The server's name, for the user agent.
    pub(crate) server: &'a str,
    pub(crate) discovery: &'a Discovery,
    /// The scopes to request (none: no `scope` parameter).
    pub(crate) scopes: &'a [String],
    /// A client registered earlier at this issuer.
    pub(crate) existing_client: Option<&'a StoredClient>,
    /// The key to bind the tokens to (DPoP), when they are to be bound.
    pub(crate) dpop: Option<DpopBinding<'a>>,
}

/// A completed login.
#[derive(Debug)]
pub(crate) struct LoginOutcome {
    pub(crate) client: StoredClient,
    pub(crate) tokens: StoredTokens,
}

/// Runs one authorization code flow to the end.
pub(crate) async fn login(
    http: &OAuthHttp,
    settings: &OAuthSettings,
    user_agent: &dyn UserAgent,
    request: LoginRequest<'_>,
) -> Result<LoginOutcome, OAuthError> {
    let discovery = request.discovery;
    let metadata = &discovery.metadata;
    if discovery.source != MetadataSource::Fallback {
        let methods = metadata.code_challenge_methods_supported.as_deref().unwrap_or_default();
        if !methods.iter().any(|m| m == "S256") {
            return Err(OAuthError::PkceUnsupported {
                issuer: discovery.issuer.clone(),
                listed: if methods.is_empty() {
                    "nothing".to_owned()
                } else {
                    methods.join(", ")
                },
            });
        }
    }
    let listener = bind_listener(settings, request.existing_client).await?;
    let redirect_uri = listener.redirect_uri().to_owned();
    let client = resolve_client(http, settings, metadata, request.existing_client, &redirect_uri).await?;
    let pkce = Pkce::generate()?;
    let state = random_token()?;
    let scope = join(request.scopes);
    let url = authorization_url(
        discovery,
        &client.client_id,
        &redirect_uri,
        &pkce,
        &state,
        scope.as_deref(),
    )?;
    let prompt = AuthorizationPrompt {
        server: request.server.to_owned(),
        url,
        redirect_uri: redirect_uri.clone(),
    };
    tracing::info!(server = request.server, issuer = %discovery.issuer, "OAuth login: waiting for the authorization response");
    let expected = ExpectedResponse {
        issuer: &discovery.issuer,
        iss_required: metadata.authorization_response_iss_parameter_supported,
        state: &state,
    };
    let params = {
        let receive = listener.receive(settings.login_timeout, |params| expected.check(params));
        let open = user_agent.open(&prompt);
        tokio::pin!(receive, open);
        let mut opened = false;
        loop {
            tokio::select! {
                result = &mut open, if !opened => {
                    opened = true;
                    result?;
                }
                result = &mut receive => break result?,
            }
        }
    };
    let code = params.get("code")?.unwrap_or_default();
    let client_credentials = credentials(&client, settings);
    let response = request_token(
        http,
        TokenRequest {
            endpoint: &metadata.token_endpoint,
            client: &client_credentials,
            grant: Grant::AuthorizationCode {
                code,
                code_verifier: &pkce.verifier,
                redirect_uri: &redirect_uri,
            },
            resource: Some(&discovery.resource),
            scope: None,
            issuer: &discovery.issuer,
            dpop: request.dpop,
        },
    )
    .await?;
    Ok(LoginOutcome {
        client,
        tokens: response.into_tokens(None),
    })
}

/// The listener on the configured port, else on the port of an earlier registration (so that its
/// redirect URI still matches), else on a random port.
async fn bind_listener(
    settings: &OAuthSettings,
    existing: Option<&StoredClient>,
) -> Result<CallbackListener, OAuthError> {
    if let Some(port) = settings.callback_port {
        return CallbackListener::bind(Some(port)).await;
    }
    let registered_port = existing
        .and_then(|c| c.redirect_uri.as_deref())
        .and_then(|uri| Url::parse(uri).ok())
        .and_then(|uri| uri.port());
    if let Some(port) = registered_port
        && let Ok(listener) = CallbackListener::bind(Some(port)).await
    {
        return Ok(listener);
    }
    CallbackListener::bind(None).await
}

/// The authorization request URL: the endpoint with `response_type`, `client_id`,
/// `redirect_uri`, the PKCE challenge, `state`, `resource` and `scope` added to its query.
fn authorization_url(
    discovery: &Discovery,
    client_id: &str,
    redirect_uri: &str,
    pkce: &Pkce,
    state: &str,
    scope: Option<&str>,
) -> Result<String, OAuthError> {
    let endpoint = &discovery.metadata.authorization_endpoint;
    let mut url = Url::parse(endpoint)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| OAuthError::Http {
            what: "the authorization endpoint",
            url: redact_url(endpoint),
            reason: "not an http(s) URL".to_owned(),
        })?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", &discovery.resource);
        if let Some(scope) = scope {
            query.append_pair("scope", scope);
        }
    }
    Ok(url.into())
}

/// What the authorization response must carry.
struct ExpectedResponse<'a> {
    /// The issuer the request went to (remembered with the PKCE verifier).
    issuer: &'a str,
    /// Whether the server advertised `authorization_response_iss_parameter_supported`.
    iss_required: bool,
    state: &'a str,
}

impl ExpectedResponse<'_> {
    /// RFC 9207 first (an exact comparison; a missing `iss` refused when advertised), then
    /// `state`; only a response that passes both has its `error` read; then a code is required.
    /// The error fields of a refused response are never acted on.
    fn check(&self, params: &CallbackParams) -> Result<(), OAuthError> {
        let refuse = |reason: String| Err(OAuthError::AuthorizationResponse { reason });
        match params.get("iss")? {
            Some(iss) if iss != self.issuer => {
                return refuse(format!(
                    "its issuer (iss) {iss:?} is not the authorization server's {:?}",
                    self.issuer
                ));
            }
            None if self.iss_required => {
                return refuse(format!(
                    "it has no issuer (iss), which the authorization server {} advertises (RFC 9207)",
                    self.issuer
                ));
            }
            _ => {}
        }
        if params.get("state")? != Some(self.state) {
            return refuse("its state does not match the request's (a forged or stale response)".to_owned());
        }
        if let Some(error) = params.get("error")? {
            return Err(OAuthError::AuthorizationDenied {
                issuer: self.issuer.to_owned(),
                error: error.to_owned(),
                description: params.get("error_description")?.map(str::to_owned),
            });
        }
        match params.get("code")? {
            Some(code) if !code.is_empty() => Ok(()),
            _ => refuse("it has no authorization code".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::discovery::AuthServerMetadata;

    fn expected(iss_required: bool) -> ExpectedResponse<'static> {
        ExpectedResponse {
            issuer: "http://localhost:9",
            iss_required,
            state: "st",
        }
    }

    fn check(expected: &ExpectedResponse<'_>, query: &str) -> Result<(), String> {
        expected
            .check(&CallbackParams::from_query(query))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn iss_is_compared_exactly_and_required_when_advertised() {
        let advertised = expected(true);
        assert_eq!(
            check(&advertised, "code=c&state=st&iss=http%3A%2F%2Flocalhost%3A9"),
            Ok(())
        );
        assert_eq!(
            check(&advertised, "code=c&state=st&iss=http%3A%2F%2Flocalhost%3A9%2F").unwrap_err(),
            "the authorization response was refused: its issuer (iss) \"http://localhost:9/\" is not the authorization \
             server's \"http://localhost:9\""
        );
        assert_eq!(
            check(&advertised, "code=c&state=st").unwrap_err(),
            "the authorization response was refused: it has no issuer (iss), which the authorization server \
             http://localhost:9 advertises (RFC 9207)"
        );
        let silent = expected(false);
        assert_eq!(check(&silent, "code=c&state=st"), Ok(()));
        assert!(check(&silent, "code=c&state=st&iss=https%3A%2F%2Fevil.example.com").is_err());
    }

    #[test]
    fn a_mismatched_response_never_has_its_error_read() {
        let advertised = expected(true);
        let err = check(
            &advertised,
            "error=access_denied&error_description=click%20here&state=st&iss=https%3A%2F%2Fevil",
        )
        .unwrap_err();
        assert!(!err.contains("click here") && err.contains("evil"), "{err}");
        let err = check(
            &advertised,
            "error=access_denied&state=other&iss=http%3A%2F%2Flocalhost%3A9",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "the authorization response was refused: its state does not match the request's (a forged or stale response)"
        );
        let err = check(
            &advertised,
            "error=access_denied&error_description=no&state=st&iss=http%3A%2F%2Flocalhost%3A9",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "the authorization server http://localhost:9 refused the authorization: access_denied (no)"
        );
        assert!(check(&advertised, "state=st&iss=http%3A%2F%2Flocalhost%3A9").is_err());
    }

    #[test]
    fn the_authorization_url_carries_every_parameter() {
        let discovery = Discovery {
            resource_metadata: None,
            resource: "http://localhost:3/mcp".into(),
            issuer: "http://localhost:9".into(),
            metadata: AuthServerMetadata {
                issuer: "http://localhost:9".into(),
                authorization_endpoint: "http://localhost:9/authorize?tenant=a".into(),
                token_endpoint: "http://localhost:9/token".into(),
                ..AuthServerMetadata::default()
            },
            source: MetadataSource::Fallback,
        };
        let pkce = Pkce {
            verifier: crate::store::Secret::new("v"),
            challenge: "ch".into(),
        };
        let url = authorization_url(
            &discovery,
            "id",
            "http://localhost:5/callback",
            &pkce,
            "st",
            Some("a b"),
        )
        .unwrap();
        assert_eq!(
            url,
            "http://localhost:9/authorize?tenant=a&response_type=code&client_id=id&redirect_uri=http%3A%2F%2Flocalhost%3A5%2Fcallback\
             &code_challenge=ch&code_challenge_method=S256&state=st&resource=http%3A%2F%2Flocalhost%3A3%2Fmcp&scope=a+b"
        );
        let no_scope = authorization_url(&discovery, "id", "r", &pkce, "st", None).unwrap();
        assert!(!no_scope.contains("scope="), "{no_scope}");
    }
}
