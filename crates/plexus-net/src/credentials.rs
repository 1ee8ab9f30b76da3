//! The auth logic every remote transport shares: the headers of each request (the configured ones
//! with the [`AuthProvider`]'s on top) and what a 401 or 403 answer means (ask the provider, retry,
//! or fail with the error that says why). The transports only send and read.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use plexus_transport::{
    AuthCause, AuthDecision, AuthFailure, AuthHeaders, AuthProblem, AuthProvider, BoxFuture, Rejection, TransportError,
};

use crate::challenge::is_dpop_nonce_challenge;
use crate::headers::{HeaderError, check_headers, merge};
use crate::redact::RedactedHeaders;

/// The configured headers of a remote transport and its auth provider.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use plexus_net::{Credentials, StaticHeaders};
/// use plexus_transport::Rejection;
///
/// let configured = vec![("X-Api-Key".to_owned(), "k".to_owned())];
/// let provider = Arc::new(StaticHeaders(vec![("Authorization".into(), "Bearer t".into())]));
/// let credentials = Credentials::new(configured, Some(provider)).unwrap();
/// assert_eq!(credentials.headers("GET", "http://127.0.0.1:9/sse").await.unwrap().len(), 2);
///
/// // A static credential that the server rejects is a failure, not a retry.
/// let rejection = Rejection::new("GET http://127.0.0.1:9/sse", "http://127.0.0.1:9/sse", 401);
/// let error = credentials.rejected(&rejection, 0).await.unwrap_err();
/// assert_eq!(plexus_transport::error_chain(&error), "authentication failed: the server rejected the configured credentials (HTTP 401)");
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

    /// The configured headers (checked).
    pub fn configured(&self) -> &[(String, String)] {
        &self.configured
    }

    /// The headers for a request that is `method` to `url`: the configured ones, with the
    /// provider's on top (see [`merge`]); without a provider, or when it gives none, the
    /// configured ones (borrowed). A provider that cannot give headers fails the request with
    /// [`TransportError::NeedsAuth`] or [`TransportError::AuthFailed`], as does one that gives a
    /// header that cannot be sent.
    pub async fn headers(&self, method: &str, url: &str) -> Result<Cow<'_, [(String, String)]>, TransportError> {
        let Some(provider) = &self.provider else {
            return Ok(Cow::Borrowed(&self.configured));
        };
        let provided = provider.headers(method, url).await?;
        if provided.is_empty() {
            // Merged over nothing, the configured headers are what they were: borrowed, so that
            // a transport sends its prepared headers rather than building them again.
            return Ok(Cow::Borrowed(&self.configured));
        }
        check_headers(&provided).map_err(|e| TransportError::AuthFailed {
            cause: Arc::new(AuthProblem::BadHeader(Arc::new(e))),
        })?;
        Ok(Cow::Owned(merge(&self.configured, provided)))
    }

    /// What a 401 or 403 answer means: `Ok` to ask for [`headers`](Self::headers) again and
    /// retry the request, else the error to fail it with. `retries` is how many times this
    /// request was already retried after a 401 or 403.
    ///
    /// The provider is asked (with [`AuthProvider::on_rejection`]) on the first rejection, and
    /// once more when the retry is rejected with a DPoP nonce challenge
    /// ([`is_dpop_nonce_challenge`]: the server wants a proof with the nonce it just gave, RFC
    /// 9449 §9), so a request is sent at most three times; its decision is final. Without a
    /// provider, or when the retry was rejected too, a 401 is [`TransportError::NeedsAuth`] (for
    /// a provider whose credentials a login renews) and otherwise [`TransportError::AuthFailed`],
    /// quoting the challenge and the body.
    pub async fn rejected(&self, rejection: &Rejection, retries: u32) -> Result<(), TransportError> {
        // A 401 means "log in" when there is no credential at all, or when the provider's
        // credentials are the kind a login renews; otherwise the rejection is the answer.
        let login_fixes = self.provider.as_ref().is_none_or(|p| p.login_fixes_rejection());
        let give_up = |after_renewal: bool| {
            let cause: AuthCause = Arc::new(AuthProblem::Rejected {
                what: rejection.what.clone(),
                status: rejection.status,
                after_renewal,
                details: rejection.details(),
            });
            if rejection.status == 401 && login_fixes {
                TransportError::NeedsAuth { cause }
            } else {
                TransportError::AuthFailed { cause }
            }
        };
        let Some(provider) = &self.provider else {
            return Err(give_up(false));
        };
        let ask = retries == 0 || (retries < MAX_AUTH_RETRIES && is_dpop_nonce_challenge(rejection));
        if !ask {
            return Err(give_up(true));
        }
        match provider.on_rejection(rejection).await {
            AuthDecision::Retry => Ok(()),
            AuthDecision::NeedsAuth { cause } => Err(TransportError::NeedsAuth { cause }),
            AuthDecision::Fail { cause } => Err(TransportError::AuthFailed { cause }),
        }
    }
}

/// How many times [`Credentials::rejected`] lets one request be retried: once after a
/// challenge, and once more after a DPoP nonce challenge.
const MAX_AUTH_RETRIES: u32 = 2;

/// An [`AuthProvider`] with fixed headers: a 401 or 403 is a failure with that status (a
/// rejected static credential is not retried and never falls back to another scheme).
#[derive(Debug, Clone, Default)]
pub struct StaticHeaders(pub AuthHeaders);

impl AuthProvider for StaticHeaders {
    fn headers(&self, _method: &str, _url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let headers = self.0.clone();
        Box::pin(async move { Ok(headers) })
    }

    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        let cause = Arc::new(AuthProblem::CredentialsRejected {
            status: rejection.status,
        });
        Box::pin(async move { AuthDecision::Fail { cause } })
    }
}

/// The [`Rejection`] of a 401 or 403 answer with these headers and (a prefix of) this body:
/// what every remote transport hands to [`Credentials::rejected`].
pub fn rejection_of(what: &str, url: &str, status: u16, headers: &http::HeaderMap, body: &[u8]) -> Rejection {
    Rejection::new(what, url, status)
        .with_headers(headers.iter().map(|(name, value)| (name.as_str(), value.as_bytes())))
        .with_body(body)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use plexus_transport::ErrorClass;

    use super::*;
    use crate::challenge::{AuthChallenge, dpop_nonce};

    /// A provider that plays a script: its headers name the number of challenges seen so far,
    /// and each challenge gets the next decision.
    struct Scripted {
        headers: Result<AuthHeaders, AuthFailure>,
        decisions: Mutex<Vec<AuthDecision>>,
        seen: Mutex<Vec<Rejection>>,
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
        fn headers(&self, _: &str, _: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
            let round = self.seen.lock().unwrap().len();
            let headers = self.headers.clone().map(|mut list| {
                list.push(("authorization".to_owned(), format!("Bearer t{round}")));
                list
            });
            Box::pin(async move { headers })
        }

        fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
            self.seen.lock().unwrap().push(rejection.clone());
            let decision = self.decisions.lock().unwrap().pop().expect("a decision is scripted");
            Box::pin(async move { decision })
        }

        /// Plays a login-based provider (OAuth); [`Fixed`] plays the others.
        fn login_fixes_rejection(&self) -> bool {
            true
        }
    }

    /// A provider whose credentials no login renews (a headers helper, a token file).
    struct Fixed;

    impl AuthProvider for Fixed {
        fn headers(&self, _: &str, _: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
            Box::pin(async { Ok(vec![("authorization".to_owned(), "Bearer fixed".to_owned())]) })
        }

        fn on_rejection(&self, _: &Rejection) -> BoxFuture<'_, AuthDecision> {
            Box::pin(async { AuthDecision::Retry })
        }
    }

    #[tokio::test]
    async fn renewed_credentials_that_no_login_renews_fail_when_rejected_again() {
        let credentials = Credentials::new(Vec::new(), Some(Arc::new(Fixed))).unwrap();
        credentials.rejected(&rejection(401, &[]), 0).await.unwrap();
        let again = credentials.rejected(&rejection(401, &[]), 1).await.unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&again),
            "authentication failed: GET http://h/sse answered HTTP 401 again after the credentials were renewed"
        );
        assert!(matches!(again, TransportError::AuthFailed { .. }));
    }

    /// A provider that has nothing to add (an OAuth provider before any login).
    struct Empty;

    impl AuthProvider for Empty {
        fn headers(&self, _: &str, _: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn on_rejection(&self, _: &Rejection) -> BoxFuture<'_, AuthDecision> {
            Box::pin(async { AuthDecision::Retry })
        }
    }

    #[tokio::test]
    async fn a_provider_with_nothing_to_add_leaves_the_configured_headers_borrowed() {
        let configured = pairs(&[("X-Team", "core"), ("x-team", "two")]);
        let credentials = Credentials::new(configured.clone(), Some(Arc::new(Empty))).unwrap();
        let headers = credentials.headers("POST", "http://h/mcp").await.unwrap();
        assert!(
            matches!(&headers, Cow::Borrowed(borrowed) if *borrowed == configured.as_slice()),
            "{headers:?}"
        );
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    fn rejection(status: u16, challenges: &[&str]) -> Rejection {
        let values = challenges.iter().map(|c| ("WWW-Authenticate", c.as_bytes()));
        Rejection::new("GET http://h/sse", "http://h/sse?k=1", status).with_headers(values)
    }

    const BEARER: &str =
        r#"Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource""#;

    #[tokio::test]
    async fn the_providers_headers_go_over_the_configured_ones() {
        let configured = pairs(&[("Authorization", "Bearer configured"), ("X-Key", "k")]);
        let plain = Credentials::new(configured.clone(), None).unwrap();
        assert!(matches!(plain.headers("GET", "http://h/sse").await.unwrap(), Cow::Borrowed(h) if h == configured));

        let provider = scripted(Ok(Vec::new()), vec![AuthDecision::Retry]);
        let credentials = Credentials::new(configured, Some(provider.clone())).unwrap();
        let first = credentials.headers("GET", "http://h/sse").await.unwrap();
        assert_eq!(first, pairs(&[("X-Key", "k"), ("authorization", "Bearer t0")]));
        credentials.rejected(&rejection(401, &[BEARER]), 0).await.unwrap();
        let renewed = credentials.headers("GET", "http://h/sse").await.unwrap();
        assert_eq!(renewed, pairs(&[("X-Key", "k"), ("authorization", "Bearer t1")]));

        let seen = provider.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].status, seen[0].url.as_str()), (401, "http://h/sse?k=1"));
        let challenge = AuthChallenge::of(&seen[0]);
        assert_eq!(challenge.bearer().unwrap().param("error"), Some("invalid_token"));
        assert_eq!(challenge.challenges.len(), 1);
    }

    #[tokio::test]
    async fn bad_headers_are_refused_where_they_come_from() {
        assert_eq!(
            Credentials::new(pairs(&[("X Bad", "v")]), None).unwrap_err(),
            HeaderError::InvalidName { name: "X Bad".into() }
        );
        let provider = Arc::new(StaticHeaders(pairs(&[("X-Token", "a\nb")])));
        let credentials = Credentials::new(Vec::new(), Some(provider)).unwrap();
        let error = credentials.headers("GET", "http://h/sse").await.unwrap_err();
        assert_eq!(error.class(), ErrorClass::Connect);
        assert_eq!(
            plexus_transport::error_chain(&error),
            "authentication failed: the auth provider gave a bad header: the value of the header \"X-Token\" contains \
             a control character (such as a line break), which HTTP does not allow"
        );
        let no_token = Err(AuthFailure::NeedsAuth {
            cause: std::sync::Arc::new(std::io::Error::other("no token stored")),
        });
        let credentials = Credentials::new(Vec::new(), Some(scripted(no_token, Vec::new()))).unwrap();
        let error = credentials.headers("GET", "http://h/sse").await.unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&error),
            "the server needs authentication: no token stored"
        );
    }

    #[tokio::test]
    async fn without_a_provider_401_needs_auth_and_403_fails_quoting_challenge_and_body() {
        let credentials = Credentials::new(Vec::new(), None).unwrap();
        let error = credentials
            .rejected(&rejection(401, &[BEARER, "Basic"]), 0)
            .await
            .unwrap_err();
        assert_eq!(error.class(), ErrorClass::NeedsAuth);
        assert_eq!(
            plexus_transport::error_chain(&error),
            format!(
                "the server needs authentication: GET http://h/sse answered HTTP 401 (WWW-Authenticate: {BEARER}, Basic)"
            )
        );
        let forbidden = rejection(403, &[]).with_body(b"forbidden origin");
        let error = credentials.rejected(&forbidden, 0).await.unwrap_err();
        assert!(matches!(error, TransportError::AuthFailed { .. }));
        assert_eq!(
            plexus_transport::error_chain(&error),
            "authentication failed: GET http://h/sse answered HTTP 403: forbidden origin"
        );
    }

    #[tokio::test]
    async fn the_provider_is_asked_once_and_its_decision_is_final() {
        let login = AuthDecision::NeedsAuth {
            cause: std::sync::Arc::new(std::io::Error::other("run /login")),
        };
        let locked = AuthDecision::Fail {
            cause: std::sync::Arc::new(std::io::Error::other("the token store is locked")),
        };
        let provider = scripted(Ok(Vec::new()), vec![login, locked]);
        let credentials = Credentials::new(Vec::new(), Some(provider.clone())).unwrap();

        let again = credentials.rejected(&rejection(401, &[]), 1).await.unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&again),
            "the server needs authentication: GET http://h/sse answered HTTP 401 again after the credentials were renewed"
        );
        let again = credentials.rejected(&rejection(403, &[]), 1).await.unwrap_err();
        assert!(matches!(again, TransportError::AuthFailed { .. }), "{again}");
        assert!(provider.seen.lock().unwrap().is_empty(), "not asked after the retry");

        let first = credentials.rejected(&rejection(401, &[]), 0).await.unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&first),
            "the server needs authentication: run /login"
        );
        let second = credentials.rejected(&rejection(401, &[]), 0).await.unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&second),
            "authentication failed: the token store is locked"
        );
        assert_eq!(provider.seen.lock().unwrap().len(), 2);
    }

    /// A provider whose headers name the request they are for.
    struct PerRequest;

    impl AuthProvider for PerRequest {
        fn headers(&self, method: &str, url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
            let value = format!("{method} {url}");
            Box::pin(async move { Ok(vec![("x-for".to_owned(), value)]) })
        }

        fn on_rejection(&self, _: &Rejection) -> BoxFuture<'_, AuthDecision> {
            Box::pin(async { AuthDecision::Retry })
        }
    }

    #[tokio::test]
    async fn the_provider_is_told_the_request() {
        let credentials = Credentials::new(pairs(&[("X-Key", "k")]), Some(Arc::new(PerRequest))).unwrap();
        assert_eq!(
            credentials.headers("GET", "http://h/mcp?x=1").await.unwrap(),
            pairs(&[("X-Key", "k"), ("x-for", "GET http://h/mcp?x=1")])
        );
        let plain = Credentials::new(pairs(&[("X-Key", "k")]), None).unwrap();
        assert!(matches!(
            plain.headers("POST", "http://h").await.unwrap(),
            Cow::Borrowed(_)
        ));
    }

    const NONCE_CHALLENGE: &str = r#"DPoP error="use_dpop_nonce", error_description="a nonce is required""#;

    #[tokio::test]
    async fn a_dpop_nonce_challenge_to_the_retry_gets_one_more_retry() {
        let nonce = |status: u16, challenge: &str| {
            rejection(status, &[challenge]).with_headers([("DPoP-Nonce", b"n-1".as_slice())])
        };
        assert!(is_dpop_nonce_challenge(&nonce(401, NONCE_CHALLENGE)));
        assert!(!is_dpop_nonce_challenge(&nonce(403, NONCE_CHALLENGE)));
        assert!(!is_dpop_nonce_challenge(&nonce(401, BEARER)));
        assert!(
            !is_dpop_nonce_challenge(&rejection(401, &[NONCE_CHALLENGE])),
            "no nonce given"
        );

        let provider = scripted(
            Ok(Vec::new()),
            vec![AuthDecision::Retry, AuthDecision::Retry, AuthDecision::Retry],
        );
        let credentials = Credentials::new(Vec::new(), Some(provider.clone())).unwrap();
        credentials.rejected(&nonce(401, BEARER), 0).await.unwrap();
        credentials.rejected(&nonce(401, NONCE_CHALLENGE), 1).await.unwrap();
        let third = credentials.rejected(&nonce(401, NONCE_CHALLENGE), 2).await.unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&third),
            format!(
                "the server needs authentication: GET http://h/sse answered HTTP 401 again after the credentials were \
                 renewed (WWW-Authenticate: {NONCE_CHALLENGE})"
            )
        );
        // Another challenge to the retry gives up.
        assert!(credentials.rejected(&nonce(401, BEARER), 1).await.is_err());
        assert_eq!(provider.seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn only_a_valid_dpop_nonce_is_kept() {
        let with = |value: &[u8]| dpop_nonce(&rejection(401, &[]).with_headers([("dpop-nonce", value)]));
        assert_eq!(
            with(b"eyJ7S_zG.eyJH0-Z.HX4w-7v").as_deref(),
            Some("eyJ7S_zG.eyJH0-Z.HX4w-7v")
        );
        for bad in [&b""[..], b"a b", b"quo\"te", b"back\\slash", b"\xff", &[b'n'; 1025]] {
            assert_eq!(with(bad), None, "{bad:?}");
        }
        assert_eq!(dpop_nonce(&rejection(401, &[])), None);
    }

    #[test]
    fn a_huge_challenge_is_quoted_in_part() {
        let huge = format!("Bearer realm=\"{}\"", "x".repeat(10_000));
        let details = rejection(401, &[&huge]).details();
        assert!(details.len() < 1100, "{}", details.len());
        assert!(details.ends_with("…)"));
    }
}
