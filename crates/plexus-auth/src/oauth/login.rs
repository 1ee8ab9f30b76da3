//! The interactive login: the authorization code grant with PKCE S256, the loopback listener, the
//! user agent, the checks of the authorization response (RFC 9207 `iss`, `state`) and the code
//! exchange.

use plexus_net::redact::redact_url;
use url::Url;

use super::discovery::{Discovery, MetadataSource};
use super::grant::{DpopBinding, Grant, TokenRequest, request_token};
use super::http::OAuthHttp;
use super::listener::{CallbackListener, CallbackParams, Verdict};
use super::pkce::{Pkce, random_token};
use super::registration::{credentials, resolve_client};
use super::scopes::join;
use super::{
    AuthorizationPrompt, HttpProblem, MAX_SERVER_TEXT_CHARS, OAuthError, OAuthSettings, ResponseRefusal, UserAgent,
};
use crate::store::{StoredClient, StoredTokens};
use crate::text::cut;

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
        issuer: discovery.issuer.clone(),
        iss_required: metadata.authorization_response_iss_parameter_supported,
        state,
    };
    let params = {
        let receive = listener.receive(settings.login_timeout, move |params| expected.check(params));
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
    // The check accepted it: one code, not empty.
    let code = params
        .get("code")
        .map_err(OAuthError::AuthorizationResponse)?
        .unwrap_or_default();
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
            problem: Box::new(HttpProblem::NotHttp),
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
pub(crate) struct ExpectedResponse {
    /// The issuer the request went to (remembered with the PKCE verifier).
    pub(crate) issuer: String,
    /// Whether the server advertised `authorization_response_iss_parameter_supported`.
    pub(crate) iss_required: bool,
    /// The `state` the authorization request carried.
    pub(crate) state: String,
}

impl ExpectedResponse {
    /// RFC 9207 first (an exact comparison; a missing `iss` refused when advertised), then
    /// `state`: a callback that fails either is not the authorization server's response to this
    /// login, and is refused (the listener keeps waiting); the error fields of a refused callback
    /// are never read. A response that passes both is the server's: its `error` ends the login;
    /// else it must carry a code (without one it is refused too).
    pub(crate) fn check(&self, params: &CallbackParams) -> Verdict {
        match self.examine(params) {
            Ok(None) => Verdict::Accept,
            Ok(Some(denied)) => Verdict::End(denied),
            Err(reason) => Verdict::Refuse(reason),
        }
    }

    /// `Ok(None)`: a code; `Ok(Some(_))`: the server's error response; `Err`: why it is refused.
    fn examine(&self, params: &CallbackParams) -> Result<Option<OAuthError>, ResponseRefusal> {
        match params.get("iss")? {
            Some(iss) if iss != self.issuer => {
                return Err(ResponseRefusal::WrongIssuer {
                    given: cut(iss, MAX_SERVER_TEXT_CHARS),
                    expected: self.issuer.clone(),
                });
            }
            None if self.iss_required => {
                return Err(ResponseRefusal::MissingIssuer {
                    issuer: self.issuer.clone(),
                });
            }
            _ => {}
        }
        if params.get("state")? != Some(self.state.as_str()) {
            return Err(ResponseRefusal::StateMismatch);
        }
        let server_text = |name: &str| -> Result<Option<String>, ResponseRefusal> {
            Ok(params.get(name)?.map(|text| cut(text, MAX_SERVER_TEXT_CHARS)))
        };
        if let Some(error) = server_text("error")? {
            return Ok(Some(OAuthError::AuthorizationDenied {
                issuer: self.issuer.clone(),
                error,
                description: server_text("error_description")?,
                uri: server_text("error_uri")?,
            }));
        }
        match params.get("code")? {
            Some(code) if !code.is_empty() => Ok(None),
            _ => Err(ResponseRefusal::NoCode),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::discovery::AuthServerMetadata;

    fn expected(iss_required: bool) -> ExpectedResponse {
        ExpectedResponse {
            issuer: "http://localhost:9".to_owned(),
            iss_required,
            state: "st".to_owned(),
        }
    }

    /// What the check makes of `query`, as text: `accept`, `end: …` or `refuse: …`.
    fn check(expected: &ExpectedResponse, query: &str) -> String {
        match expected.check(&CallbackParams::from_query(query)) {
            Verdict::Accept => "accept".to_owned(),
            Verdict::End(e) => format!("end: {e}"),
            Verdict::Refuse(reason) => format!("refuse: {reason}"),
        }
    }

    #[test]
    fn iss_is_compared_exactly_and_required_when_advertised() {
        let advertised = expected(true);
        assert_eq!(
            check(&advertised, "code=c&state=st&iss=http%3A%2F%2Flocalhost%3A9"),
            "accept"
        );
        assert_eq!(
            check(&advertised, "code=c&state=st&iss=http%3A%2F%2Flocalhost%3A9%2F"),
            "refuse: its issuer (iss) \"http://localhost:9/\" is not the authorization server's \"http://localhost:9\""
        );
        assert_eq!(
            check(&advertised, "code=c&state=st"),
            "refuse: it has no issuer (iss), which the authorization server http://localhost:9 advertises (RFC 9207)"
        );
        let silent = expected(false);
        assert_eq!(check(&silent, "code=c&state=st"), "accept");
        assert!(check(&silent, "code=c&state=st&iss=https%3A%2F%2Fevil.example.com").starts_with("refuse: "));
    }

    #[test]
    fn only_a_response_with_this_logins_state_and_iss_can_end_the_login() {
        let advertised = expected(true);
        // A wrong iss or state: refused, its error fields never read.
        let forged = check(
            &advertised,
            "error=access_denied&error_description=click%20here&state=st&iss=https%3A%2F%2Fevil",
        );
        assert!(
            forged.starts_with("refuse: ") && !forged.contains("click here") && forged.contains("evil"),
            "{forged}"
        );
        assert_eq!(
            check(
                &advertised,
                "error=access_denied&state=other&iss=http%3A%2F%2Flocalhost%3A9"
            ),
            "refuse: its state does not match the request's (a forged or stale response)"
        );
        assert_eq!(
            check(&advertised, "code=c&iss=http%3A%2F%2Flocalhost%3A9"),
            "refuse: its state does not match the request's (a forged or stale response)"
        );
        // The right state and iss but no code: refused.
        assert_eq!(
            check(&advertised, "state=st&iss=http%3A%2F%2Flocalhost%3A9"),
            "refuse: it has no authorization code"
        );
        assert_eq!(
            check(&advertised, "code=&state=st&iss=http%3A%2F%2Flocalhost%3A9"),
            "refuse: it has no authorization code"
        );
        assert_eq!(
            check(&advertised, "code=a&code=b&state=st&iss=http%3A%2F%2Flocalhost%3A9"),
            "refuse: the parameter \"code\" appears more than once"
        );
        // The server's own error response: the end, with its text as it sent it.
        assert_eq!(
            check(
                &advertised,
                "error=access_denied&error_description=no%1b%5B31m%20%3Cb%3E&error_uri=http%3A%2F%2Fh%2Fwhy&state=st&iss=http%3A%2F%2Flocalhost%3A9",
            ),
            "end: the authorization server http://localhost:9 refused the authorization: access_denied (no\u{1b}[31m <b>) \
             (see http://h/why)"
        );
    }

    #[test]
    fn the_servers_error_text_is_bounded() {
        let long = "é".repeat(3 * MAX_SERVER_TEXT_CHARS);
        let query = format!("error={long}&error_description={long}&error_uri={long}&state=st");
        let Verdict::End(OAuthError::AuthorizationDenied {
            error,
            description,
            uri,
            ..
        }) = expected(false).check(&CallbackParams::from_query(&query))
        else {
            panic!("the server's error ends the login");
        };
        for text in [error, description.unwrap(), uri.unwrap()] {
            assert_eq!(text.chars().count(), MAX_SERVER_TEXT_CHARS);
            assert!(text.ends_with("é…"), "cut on a character boundary");
        }
        let forged = check(&expected(false), &format!("code=c&state=st&iss={long}"));
        assert!(forged.chars().count() < 2 * MAX_SERVER_TEXT_CHARS, "{}", forged.len());
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
