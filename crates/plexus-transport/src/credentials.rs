//! The auth logic every remote transport shares: the headers of each request (the configured ones
//! with the [`AuthProvider`]'s on top) and what a 401 or 403 answer means (ask the provider once,
//! retry once, or fail with the error that says why). The transports only send and read.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::headers::{HeaderError, check_headers, merge};
use crate::redact::RedactedHeaders;
use crate::{AuthChallenge, AuthDecision, AuthProvider, TransportError, WwwAuthenticate, body_excerpt};

/// The configured headers of a remote transport and its auth provider.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use plexus_transport::{Credentials, Rejection, StaticHeaders};
///
/// let configured = vec![("X-Api-Key".to_owned(), "k".to_owned())];
/// let provider = Arc::new(StaticHeaders(vec![("Authorization".into(), "Bearer t".into())]));
/// let credentials = Credentials::new(configured, Some(provider)).unwrap();
/// assert_eq!(credentials.headers().await.unwrap().len(), 2);
///
/// // A static credential that the server rejects is a failure, not a retry.
/// let rejection = Rejection::new("GET http://127.0.0.1:9/sse", "http://127.0.0.1:9/sse", 401, [&b"Bearer"[..]]);
/// let error = credentials.rejected(&rejection, false).await.unwrap_err();
/// assert_eq!(error.to_string(), "authentication failed: the server rejected the configured credentials (HTTP 401)");
/// # }
/// ```
#[derive(Clone)]
pub struct Credentials {
    configured: Vec<(String, String)>,
    provider: Option<Arc<dyn AuthProvider>>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("configured", &RedactedHeaders(&self.configured))
            .field("provider", &self.provider.as_ref().map(|_| "<provider>"))
            .finish()
    }
}

impl Credentials {
    /// Checks the configured headers (see [`check_header`](crate::headers::check_header)); the
    /// error names the first bad one.
    pub fn new(
        configured: Vec<(String, String)>,
        provider: Option<Arc<dyn AuthProvider>>,
    ) -> Result<Self, HeaderError> {
        check_headers(&configured)?;
        Ok(Credentials { configured, provider })
    }

    /// The headers for the next request: the configured ones, with the provider's on top (see
    /// [`merge`]). A provider that cannot give headers fails the request with
    /// [`TransportError::NeedsAuth`] or [`TransportError::AuthFailed`], as does one that gives a
    /// header that cannot be sent.
    pub async fn headers(&self) -> Result<Cow<'_, [(String, String)]>, TransportError> {
        let Some(provider) = &self.provider else {
            return Ok(Cow::Borrowed(&self.configured));
        };
        let provided = provider.headers().await?;
        check_headers(&provided).map_err(|e| TransportError::AuthFailed {
            reason: format!("the auth provider gave a bad header: {e}"),
        })?;
        Ok(Cow::Owned(merge(&self.configured, provided)))
    }

    /// What a 401 or 403 answer means: `Ok` to ask for [`headers`](Self::headers) again and
    /// retry the request, else the error to fail it with.
    ///
    /// The provider's [`on_challenge`](AuthProvider::on_challenge) is asked on the first
    /// rejection only (`retried` false), and its decision is final. Without a provider, or when
    /// the retry was rejected too, a 401 is [`TransportError::NeedsAuth`] and a 403
    /// [`TransportError::AuthFailed`], quoting the challenge and the body.
    pub async fn rejected(&self, rejection: &Rejection, retried: bool) -> Result<(), TransportError> {
        let give_up = |reason: String| {
            if rejection.status == 401 {
                TransportError::NeedsAuth { reason }
            } else {
                TransportError::AuthFailed { reason }
            }
        };
        let (what, status) = (&rejection.what, rejection.status);
        let Some(provider) = &self.provider else {
            return Err(give_up(format!("{what} answered HTTP {status}{}", rejection.details())));
        };
        if retried {
            return Err(give_up(format!(
                "{what} answered HTTP {status} again after the credentials were renewed{}",
                rejection.details()
            )));
        }
        match provider.on_challenge(&rejection.challenge()).await {
            AuthDecision::Retry => Ok(()),
            AuthDecision::NeedsAuth { reason } => Err(TransportError::NeedsAuth { reason }),
            AuthDecision::Fail { reason } => Err(TransportError::AuthFailed { reason }),
        }
    }
}

/// A 401 or 403 answer to a request, as a transport saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// What was requested, for messages: `GET http://…/sse`, `the WebSocket upgrade of ws://…`
    /// (with the URL redacted).
    pub what: String,
    /// The URL requested, as the provider sees it in [`AuthChallenge::url`].
    pub url: String,
    /// 401 or 403.
    pub status: u16,
    /// The `WWW-Authenticate` header values, in order (invalid UTF-8 replaced).
    pub www_authenticate: Vec<String>,
    /// An excerpt of the body (see [`body_excerpt`]); empty when there was none.
    pub body: String,
}

impl Rejection {
    /// A rejection with its `WWW-Authenticate` header values and no body.
    pub fn new<'h>(
        what: impl Into<String>,
        url: impl Into<String>,
        status: u16,
        www_authenticate: impl IntoIterator<Item = &'h [u8]>,
    ) -> Self {
        Rejection {
            what: what.into(),
            url: url.into(),
            status,
            www_authenticate: www_authenticate
                .into_iter()
                .map(|value| String::from_utf8_lossy(value).into_owned())
                .collect(),
            body: String::new(),
        }
    }

    /// Sets the excerpt of the body.
    #[must_use]
    pub fn with_body(mut self, excerpt: String) -> Self {
        self.body = excerpt;
        self
    }

    /// The challenge the provider is shown: every `WWW-Authenticate` challenge, parsed.
    pub fn challenge(&self) -> AuthChallenge {
        AuthChallenge {
            status: self.status,
            url: self.url.clone(),
            challenges: self
                .www_authenticate
                .iter()
                .flat_map(|value| WwwAuthenticate::parse(value))
                .collect(),
        }
    }

    /// ` (WWW-Authenticate: …): body`, each part when there is one (each bounded).
    fn details(&self) -> String {
        let mut details = String::new();
        if !self.www_authenticate.is_empty() {
            let shown = body_excerpt(self.www_authenticate.join(", ").as_bytes());
            details = format!(" (WWW-Authenticate: {shown})");
        }
        if !self.body.is_empty() {
            details.push_str(": ");
            details.push_str(&self.body);
        }
        details
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{AuthFailure, AuthHeaders, BoxFuture, ErrorClass, StaticHeaders};

    /// A provider that plays a script: its headers name the number of challenges seen so far,
    /// and each challenge gets the next decision.
    struct Scripted {
        headers: Result<AuthHeaders, AuthFailure>,
        decisions: Mutex<Vec<AuthDecision>>,
        seen: Mutex<Vec<AuthChallenge>>,
    }

    fn scripted(headers: Result<AuthHeaders, AuthFailure>, mut decisions: Vec<AuthDecision>) -> Arc<Scripted> {
        decisions.reverse();
        Arc::new(Scripted {
            headers,
            decisions: Mutex::new(decisions),
            seen: Mutex::new(Vec::new()),
        })
    }

    impl AuthProvider for Scripted {
        fn headers(&self) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
            let round = self.seen.lock().unwrap().len();
            let headers = self.headers.clone().map(|mut list| {
                list.push(("authorization".to_owned(), format!("Bearer t{round}")));
                list
            });
            Box::pin(async move { headers })
        }

        fn on_challenge(&self, challenge: &AuthChallenge) -> BoxFuture<'_, AuthDecision> {
            self.seen.lock().unwrap().push(challenge.clone());
            let decision = self.decisions.lock().unwrap().pop().expect("a decision is scripted");
            Box::pin(async move { decision })
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    fn rejection(status: u16, challenges: &[&str]) -> Rejection {
        let values = challenges.iter().map(|c| c.as_bytes());
        Rejection::new("GET http://h/sse", "http://h/sse?k=1", status, values)
    }

    const BEARER: &str =
        r#"Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource""#;

    #[tokio::test]
    async fn the_providers_headers_go_over_the_configured_ones() {
        let configured = pairs(&[("Authorization", "Bearer configured"), ("X-Key", "k")]);
        let plain = Credentials::new(configured.clone(), None).unwrap();
        assert!(matches!(plain.headers().await.unwrap(), Cow::Borrowed(h) if h == configured));

        let provider = scripted(Ok(Vec::new()), vec![AuthDecision::Retry]);
        let credentials = Credentials::new(configured, Some(provider.clone())).unwrap();
        let first = credentials.headers().await.unwrap();
        assert_eq!(first, pairs(&[("X-Key", "k"), ("authorization", "Bearer t0")]));
        credentials.rejected(&rejection(401, &[BEARER]), false).await.unwrap();
        let renewed = credentials.headers().await.unwrap();
        assert_eq!(renewed, pairs(&[("X-Key", "k"), ("authorization", "Bearer t1")]));

        let seen = provider.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].status, seen[0].url.as_str()), (401, "http://h/sse?k=1"));
        assert_eq!(seen[0].bearer().unwrap().param("error"), Some("invalid_token"));
    }

    #[tokio::test]
    async fn bad_headers_are_refused_where_they_come_from() {
        assert_eq!(
            Credentials::new(pairs(&[("X Bad", "v")]), None).unwrap_err(),
            HeaderError::InvalidName { name: "X Bad".into() }
        );
        let provider = Arc::new(StaticHeaders(pairs(&[("X-Token", "a\nb")])));
        let credentials = Credentials::new(Vec::new(), Some(provider)).unwrap();
        let error = credentials.headers().await.unwrap_err();
        assert_eq!(error.class(), ErrorClass::Connect);
        assert_eq!(
            error.to_string(),
            "authentication failed: the auth provider gave a bad header: the value of the header \"X-Token\" contains \
             a control character (such as a line break), which HTTP does not allow"
        );
        let no_token = Err(AuthFailure::NeedsAuth {
            reason: "no token stored".into(),
        });
        let credentials = Credentials::new(Vec::new(), Some(scripted(no_token, Vec::new()))).unwrap();
        let error = credentials.headers().await.unwrap_err();
        assert_eq!(error.to_string(), "the server needs authentication: no token stored");
    }

    #[tokio::test]
    async fn without_a_provider_401_needs_auth_and_403_fails_quoting_challenge_and_body() {
        let credentials = Credentials::new(Vec::new(), None).unwrap();
        let error = credentials
            .rejected(&rejection(401, &[BEARER, "Basic"]), false)
            .await
            .unwrap_err();
        assert_eq!(error.class(), ErrorClass::NeedsAuth);
        assert_eq!(
            error.to_string(),
            format!(
                "the server needs authentication: GET http://h/sse answered HTTP 401 (WWW-Authenticate: {BEARER}, Basic)"
            )
        );
        let forbidden = rejection(403, &[]).with_body("forbidden origin".into());
        let error = credentials.rejected(&forbidden, false).await.unwrap_err();
        assert!(matches!(error, TransportError::AuthFailed { .. }));
        assert_eq!(
            error.to_string(),
            "authentication failed: GET http://h/sse answered HTTP 403: forbidden origin"
        );
    }

    #[tokio::test]
    async fn the_provider_is_asked_once_and_its_decision_is_final() {
        let login = AuthDecision::NeedsAuth {
            reason: "run /login".into(),
        };
        let locked = AuthDecision::Fail {
            reason: "the token store is locked".into(),
        };
        let provider = scripted(Ok(Vec::new()), vec![login, locked]);
        let credentials = Credentials::new(Vec::new(), Some(provider.clone())).unwrap();

        let again = credentials.rejected(&rejection(401, &[]), true).await.unwrap_err();
        assert_eq!(
            again.to_string(),
            "the server needs authentication: GET http://h/sse answered HTTP 401 again after the credentials were renewed"
        );
        let again = credentials.rejected(&rejection(403, &[]), true).await.unwrap_err();
        assert!(matches!(again, TransportError::AuthFailed { .. }), "{again}");
        assert!(provider.seen.lock().unwrap().is_empty(), "not asked after the retry");

        let first = credentials.rejected(&rejection(401, &[]), false).await.unwrap_err();
        assert_eq!(first.to_string(), "the server needs authentication: run /login");
        let second = credentials.rejected(&rejection(401, &[]), false).await.unwrap_err();
        assert_eq!(second.to_string(), "authentication failed: the token store is locked");
        assert_eq!(provider.seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_huge_challenge_is_quoted_in_part() {
        let huge = format!("Bearer realm=\"{}\"", "x".repeat(10_000));
        let details = rejection(401, &[&huge]).details();
        assert!(details.len() < 1100, "{}", details.len());
        assert!(details.ends_with("…)"));
    }
}
