//! The hook through which HTTP-based transports authenticate: an [`AuthProvider`] gives the
//! headers for each request and decides what a 401 or 403 means. Transports contain no auth
//! logic of their own; what a scheme needs from an answer (its challenges, a nonce) it reads from
//! the [`Rejection`].

use std::sync::Arc;

use crate::{BoxFuture, body_excerpt};

/// Headers to put on a request, as `(name, value)` pairs.
pub type AuthHeaders = Vec<(String, String)>;

/// Supplies authentication for HTTP requests (Streamable HTTP, legacy SSE, WebSocket upgrades).
///
/// The transport asks for [`headers`](Self::headers) before every request. On a 401 or 403 it
/// asks [`on_rejection`](Self::on_rejection): on [`AuthDecision::Retry`] it asks for headers
/// again and sends the request once more; otherwise it fails the request with
/// [`TransportError::NeedsAuth`](crate::TransportError::NeedsAuth) or
/// [`TransportError::AuthFailed`](crate::TransportError::AuthFailed). How often one request may
/// be retried is the transport's rule (plexus's: once, and once more when the scheme asks for a
/// fresh nonce), not the provider's.
pub trait AuthProvider: Send + Sync + 'static {
    /// The headers for the next request, which is `method` (`GET`, `POST`, …) to `url` (for
    /// example `Authorization: Bearer …`; a DPoP proof, RFC 9449, signs the method and the URL).
    fn headers(&self, method: &str, url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>>;

    /// What to do about a 401 or 403 answer.
    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision>;

    /// Whether a login is what fixes this provider's credentials when the server still answers
    /// 401 after they were renewed. True for OAuth (the server then "needs authentication");
    /// false by default: a headers helper, an IDE or an ingress token that the server keeps
    /// rejecting is a failure with the server's reason, which no login would fix.
    fn login_fixes_rejection(&self) -> bool {
        false
    }
}

/// Why authentication did not work, as a typed error: a provider's own (an OAuth error, a
/// headers helper's), or the transport's [`AuthProblem`]. Shared, so one failure can reach every
/// caller waiting on it.
pub type AuthCause = Arc<dyn std::error::Error + Send + Sync>;

/// A provider could not produce headers.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFailure {
    /// The server needs a login the user has not done (or that expired).
    #[error("needs authentication")]
    NeedsAuth {
        /// Why.
        #[source]
        cause: AuthCause,
    },
    /// The provider itself failed (a helper command, a token store, a network call).
    #[error("the auth provider failed")]
    Failed {
        /// Why.
        #[source]
        cause: AuthCause,
    },
}

/// What the transport does after a 401 or 403.
#[derive(Debug, Clone)]
pub enum AuthDecision {
    /// Ask for headers again and retry the request.
    Retry,
    /// Give up: the server needs a login.
    NeedsAuth {
        /// Why (shown to the user).
        cause: AuthCause,
    },
    /// Give up: authentication failed for a reason a login would not fix.
    Fail {
        /// Why (shown to the user).
        cause: AuthCause,
    },
}

/// `retry`, `needs authentication: WHY` or `failed: WHY` (with the cause's whole chain).
impl std::fmt::Display for AuthDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthDecision::Retry => f.write_str("retry"),
            AuthDecision::NeedsAuth { cause } => write!(f, "needs authentication: {}", crate::error_chain(&**cause)),
            AuthDecision::Fail { cause } => write!(f, "failed: {}", crate::error_chain(&**cause)),
        }
    }
}

impl AuthDecision {
    /// Whether the decision is to retry the request.
    pub fn is_retry(&self) -> bool {
        matches!(self, AuthDecision::Retry)
    }

    /// Why the provider gave up, when it did.
    pub fn cause(&self) -> Option<&AuthCause> {
        match self {
            AuthDecision::Retry => None,
            AuthDecision::NeedsAuth { cause } | AuthDecision::Fail { cause } => Some(cause),
        }
    }
}

/// What a transport itself says about an authentication that did not work (the cause of a
/// [`TransportError::NeedsAuth`](crate::TransportError::NeedsAuth) or
/// [`TransportError::AuthFailed`](crate::TransportError::AuthFailed) that no provider decided).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuthProblem {
    /// The server rejected the request: there is no provider, or the retry with renewed
    /// credentials was rejected too.
    #[error(
        "{what} answered HTTP {status}{}{details}",
        if *.after_renewal { " again after the credentials were renewed" } else { "" }
    )]
    Rejected {
        /// What was requested (see [`Rejection::what`]).
        what: String,
        /// 401 or 403.
        status: u16,
        /// Whether this was the retry with renewed credentials.
        after_renewal: bool,
        /// The server's challenges and body, as [`Rejection::details`] shows them.
        details: String,
    },
    /// The provider gave a header that cannot be sent.
    #[error("the auth provider gave a bad header")]
    BadHeader(#[source] AuthCause),
    /// The server rejected the configured (static) credentials, which nothing renews.
    #[error("the server rejected the configured credentials (HTTP {status})")]
    CredentialsRejected {
        /// 401 or 403.
        status: u16,
    },
}

/// A 401 or 403 answer to a request, as a transport saw it.
///
/// ```
/// use plexus_transport::Rejection;
///
/// let rejection = Rejection::new("GET http://127.0.0.1:9/sse", "http://127.0.0.1:9/sse", 401)
///     .with_headers([("WWW-Authenticate", &b"Bearer realm=\"mcp\""[..]), ("DPoP-Nonce", b"n1")])
///     .with_body(b"log in first");
/// assert_eq!(rejection.www_authenticate, ["Bearer realm=\"mcp\""]);
/// assert_eq!(rejection.header("dpop-nonce"), Some("n1"));
/// assert_eq!(rejection.body, "log in first");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// What was requested, for messages: `GET http://…/sse`, `the WebSocket upgrade of ws://…`
    /// (with the URL redacted).
    pub what: String,
    /// The URL requested.
    pub url: String,
    /// 401 or 403.
    pub status: u16,
    /// The `WWW-Authenticate` header values, in order (invalid UTF-8 replaced).
    pub www_authenticate: Vec<String>,
    /// The answer's other headers (names lower-case, invalid UTF-8 replaced), for a scheme that
    /// reads one (a DPoP nonce); at most [`MAX_REJECTION_HEADERS`].
    pub headers: Vec<(String, String)>,
    /// An excerpt of the body (see [`body_excerpt`]); empty when there was none.
    pub body: String,
}

/// The most headers a [`Rejection`] keeps besides its `WWW-Authenticate` values.
pub const MAX_REJECTION_HEADERS: usize = 64;

impl Rejection {
    /// A rejection with no headers and no body.
    pub fn new(what: impl Into<String>, url: impl Into<String>, status: u16) -> Self {
        Rejection {
            what: what.into(),
            url: url.into(),
            status,
            www_authenticate: Vec::new(),
            headers: Vec::new(),
            body: String::new(),
        }
    }

    /// Adds the answer's headers: `WWW-Authenticate` values to
    /// [`www_authenticate`](Self::www_authenticate), the others (the first
    /// [`MAX_REJECTION_HEADERS`]) to [`headers`](Self::headers).
    #[must_use]
    pub fn with_headers<'h>(mut self, headers: impl IntoIterator<Item = (&'h str, &'h [u8])>) -> Self {
        for (name, value) in headers {
            let value = String::from_utf8_lossy(value).into_owned();
            if name.eq_ignore_ascii_case("www-authenticate") {
                self.www_authenticate.push(value);
            } else if self.headers.len() < MAX_REJECTION_HEADERS {
                self.headers.push((name.to_ascii_lowercase(), value));
            }
        }
        self
    }

    /// Sets the excerpt of the body (see [`body_excerpt`]).
    #[must_use]
    pub fn with_body(mut self, body: &[u8]) -> Self {
        self.body = body_excerpt(body);
        self
    }

    /// The first value of header `name` (case-insensitive) other than `WWW-Authenticate`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(have, _)| have.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// ` (WWW-Authenticate: …): body`, each part when there is one (each bounded): what an
    /// error about this rejection quotes.
    pub fn details(&self) -> String {
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
