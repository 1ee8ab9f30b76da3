//! The user agent of a login: whatever takes the authorization URL to the user (a browser, a
//! printed link) or, headless, fetches it and follows the redirects back to the loopback
//! listener ([`RedirectFollower`]).

use plexus_net::redact::redact_url;
use plexus_transport::BoxFuture;
use url::Url;

use super::OAuthError;
use super::http::OAuthHttp;

/// What a user agent is asked to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationPrompt {
    /// The server being logged into.
    pub server: String,
    /// The authorization URL (it carries no secret: the PKCE challenge and `state` only).
    pub url: String,
    /// Where the authorization server redirects to (the loopback listener).
    pub redirect_uri: String,
}

/// A user agent could not open the authorization URL.
#[derive(Debug, thiserror::Error)]
#[error("the user agent could not complete the authorization request")]
pub struct UserAgentError {
    /// Why.
    #[source]
    pub problem: UserAgentProblem,
}

impl UserAgentError {
    /// A host's user agent failed for a reason of its own.
    pub fn host(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        UserAgentError {
            problem: UserAgentProblem::Host(cause.into()),
        }
    }
}

impl From<UserAgentProblem> for UserAgentError {
    fn from(problem: UserAgentProblem) -> Self {
        UserAgentError { problem }
    }
}

/// Why a user agent could not complete the authorization request ([`UserAgentError`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserAgentProblem {
    /// Its HTTP client could not be set up, or a request failed.
    #[error(transparent)]
    Http(Box<OAuthError>),
    /// The authorization URL does not parse.
    #[error("the authorization URL is not valid")]
    InvalidUrl(#[source] url::ParseError),
    /// A redirect's `Location` does not parse.
    #[error("the redirect to {location:?} is not a valid URL")]
    InvalidRedirect {
        /// The `Location`.
        location: String,
        /// Why it does not parse.
        #[source]
        source: url::ParseError,
    },
    /// A page answered without redirecting (a login page, an error).
    #[error("{url} answered HTTP {status} instead of redirecting to {redirect_uri}")]
    NoRedirect {
        /// The page (its credentials redacted).
        url: String,
        /// Its HTTP status.
        status: u16,
        /// The redirect URI it did not redirect to.
        redirect_uri: String,
    },
    /// The redirects did not reach the redirect URI.
    #[error("more than {max} redirects without reaching {redirect_uri}")]
    TooManyRedirects {
        /// The most redirects followed.
        max: usize,
        /// The redirect URI.
        redirect_uri: String,
    },
    /// A host's user agent failed for a reason of its own.
    #[error(transparent)]
    Host(Box<dyn std::error::Error + Send + Sync>),
}

/// Takes an authorization URL to the user. The login waits for the redirect on its listener
/// while (and after) [`open`](Self::open) runs, so an implementation may return at once (after
/// printing the URL or starting a browser) or when it has followed the redirect itself.
pub trait UserAgent: Send + Sync + 'static {
    /// Opens the authorization URL; an error ends the login.
    fn open<'a>(&'a self, prompt: &'a AuthorizationPrompt) -> BoxFuture<'a, Result<(), UserAgentError>>;
}

/// A headless user agent: GETs the authorization URL and follows its redirects (at most
/// [`RedirectFollower::MAX_REDIRECTS`]) until it has requested the redirect URI, delivering the
/// authorization response to the listener. For authorization servers that redirect at once
/// (tests, the conformance suite); a server that shows a login page ends it with an error that
/// quotes the page's status.
#[derive(Debug, Clone)]
pub struct RedirectFollower {
    http: OAuthHttp,
}

impl RedirectFollower {
    /// The most redirects followed.
    pub const MAX_REDIRECTS: usize = 10;

    /// A follower whose every request is bounded by `timeout`.
    pub fn new(timeout: std::time::Duration) -> Result<Self, UserAgentError> {
        let network = (
            plexus_net::http::ProxyChoice::Environment,
            plexus_net::tls::TlsOptions::default(),
        );
        let http = OAuthHttp::new(timeout, &network.0, &network.1)
            .map_err(|e| UserAgentError::from(UserAgentProblem::Http(Box::new(e))))?;
        Ok(RedirectFollower { http })
    }

    async fn follow(&self, prompt: &AuthorizationPrompt) -> Result<(), UserAgentError> {
        let mut url = Url::parse(&prompt.url).map_err(UserAgentProblem::InvalidUrl)?;
        for _ in 0..=Self::MAX_REDIRECTS {
            let delivering = url.as_str().starts_with(&prompt.redirect_uri);
            let reply = self.http.get("the authorization request to", url.as_str()).await;
            let reply = reply.map_err(|e| UserAgentProblem::Http(Box::new(e)))?;
            if delivering {
                // The listener answered; what it thinks of the response is the login's business.
                return Ok(());
            }
            match (reply.status, reply.location) {
                (300..=399, Some(location)) => {
                    url = url
                        .join(&location)
                        .map_err(|source| UserAgentProblem::InvalidRedirect { location, source })?;
                }
                (status, _) => {
                    return Err(UserAgentProblem::NoRedirect {
                        url: redact_url(url.as_str()),
                        status,
                        redirect_uri: prompt.redirect_uri.clone(),
                    }
                    .into());
                }
            }
        }
        Err(UserAgentProblem::TooManyRedirects {
            max: Self::MAX_REDIRECTS,
            redirect_uri: prompt.redirect_uri.clone(),
        }
        .into())
    }
}

impl UserAgent for RedirectFollower {
    fn open<'a>(&'a self, prompt: &'a AuthorizationPrompt) -> BoxFuture<'a, Result<(), UserAgentError>> {
        Box::pin(self.follow(prompt))
    }
}
