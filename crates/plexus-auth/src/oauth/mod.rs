//! OAuth 2.1 for MCP servers (the MCP authorization specification, 2025-11-25 with the 2026-07-28
//! additions): [`OAuthProvider`] is the [`AuthProvider`](plexus_transport::AuthProvider) of an
//! `http` or `sse` server that asks for a login.
//!
//! What happens on a 401 (see [`OAuthProvider`] for the details):
//! 1. **Protected resource metadata** (RFC 9728): the `resource_metadata` URL of the
//!    `WWW-Authenticate` challenge, else `/.well-known/oauth-protected-resource/<path>`, else
//!    `/.well-known/oauth-protected-resource`. Its `resource` must name the server (same origin, a
//!    path prefix of the server's); otherwise the provider stops before contacting any
//!    authorization server. No metadata at all means a 2025-03-26 server, whose origin is its own
//!    authorization server.
//! 2. **Authorization server metadata** (RFC 8414 and OpenID Connect Discovery) in the
//!    specification's order ([`discovery::metadata_urls`]); the document's `issuer` must be the
//!    issuer it was fetched for. No metadata: `/authorize`, `/token` and `/register` at the
//!    issuer's origin. `authServerMetadataUrl` skips discovery.
//! 3. **Client identity**: the configured client id, else a Client ID Metadata Document URL when
//!    the server supports them and one is configured, else Dynamic Client Registration (RFC 7591),
//!    else a clear error. Registrations are stored per issuer: a server that moves to another
//!    authorization server gets a new registration there, and no credential crosses issuers.
//! 4. **Authorization code with PKCE S256** (a server whose metadata lacks S256 is refused), a
//!    `state`, the RFC 8707 `resource`, the scopes (configured, else the challenge's, else the
//!    resource's `scopes_supported`, else none; `offline_access` when the authorization server
//!    lists it). The redirect URI is `http://127.0.0.1:<port>/callback` (RFC 8252 §8.3), a
//!    listener bound to that address for this one login; the authorization URL goes to a
//!    [`UserAgent`]. The redirect's `iss` (RFC 9207) is compared exactly with the issuer, a
//!    missing `iss` is refused when the server advertises it, then `state`. A callback that
//!    fails these checks (or has no code) is not this login's response: it gets an error page,
//!    nothing of it (its error fields included) is acted on, and the listener keeps waiting for
//!    the real one until [`OAuthSettings::login_timeout`] (whose error says how many were
//!    refused). An error response that passes them ends the login with the server's error.
//! 5. **Tokens** are kept in the [`TokenStore`](crate::store::TokenStore) by server and issuer,
//!    refreshed 30 s before they expire, and refreshed once on a 401 before a new login. A refresh
//!    holds the store's lock across processes (read again under the lock: tokens another process
//!    refreshed meanwhile are used as they are, else the newest refresh token is spent), so that
//!    processes sharing a home never spend one rotating refresh token twice. A refresh token the
//!    authorization server rejects is removed and never sent again
//!    ([`OAuthError::RefreshRejected`]: the server needs a login).
//!
//! A 403 with `error="insufficient_scope"` asks for the union of the scopes held and challenged
//! (at most [`MAX_AUTHORIZATION_ATTEMPTS`] authorizations per scope set). A provider without a
//! user agent never starts a login: what it cannot fix by refreshing is
//! [`AuthDecision::NeedsAuth`](plexus_transport::AuthDecision::NeedsAuth).
//!
//! Without a user ([`OAuthGrant`]): **client credentials** (with a secret, or `private_key_jwt`
//! with an ES256 key, see [`jwt`]), a **JWT bearer** assertion (workload identity federation),
//! and **enterprise-managed authorization** (the user's ID token exchanged at the identity
//! provider for an ID-JAG, RFC 8693, then presented with the JWT bearer grant, RFC 7523). These
//! run on a 401 like a login, but need no user agent.
//!
//! **DPoP** (RFC 9449, [`DpopMode`]): when the authorization server supports ES256 proofs and
//! the server asks for DPoP, tokens are bound to a key of the provider's; every token request
//! and every request to the server then carries a proof
//! ([`headers`](plexus_transport::AuthProvider::headers) signs the request's method and
//! URL), and a server's `DPoP-Nonce` goes into the next proofs.
//!
//! Token requests are built and sent in one place (the private `grant` module).

pub mod discovery;
mod dpop;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod grant;
mod http;
pub mod jwt;
mod listener;
mod login;
mod machine;
mod pkce;
pub mod problem;
mod provider;
mod registration;
pub mod resource;
pub mod scopes;
mod settings;
mod user_agent;

use std::time::Duration;

pub use problem::{AssertionProblem, HttpProblem, ListenerProblem, ResponseRefusal, SettingsProblem};
pub use provider::{LoggedIn, MAX_AUTHORIZATION_ATTEMPTS, OAuthProvider, REFRESH_MARGIN, ServerOAuthError};
pub use settings::{
    AssertionSource, CALLBACK_PORT_ENV, DEFAULT_LOGIN_TIMEOUT, DpopMode, ID_TOKEN_TYPE, IdentityProvider, OAuthGrant,
    OAuthSettings,
};
pub use user_agent::{AuthorizationPrompt, RedirectFollower, UserAgent, UserAgentError, UserAgentProblem};

use crate::store::TokenStoreError;
use crate::text::show_duration;

/// Why an OAuth step failed. Messages name the server, URL or field concerned and never contain a
/// token or a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A setting is unusable.
    #[error("OAuth setting {field}")]
    Settings {
        /// The setting (`callbackPort`, `PLEXUS_OAUTH_CALLBACK_PORT`, the server URL, …).
        field: String,
        /// What is wrong with it.
        #[source]
        problem: SettingsProblem,
    },
    /// An HTTP request to a metadata, registration or token endpoint failed, or its answer is
    /// unusable.
    #[error("{what} {url}")]
    Http {
        /// What was being fetched (`protected resource metadata`, `the token endpoint`, …).
        what: &'static str,
        /// The URL (without query).
        url: String,
        /// What went wrong.
        #[source]
        problem: Box<HttpProblem>,
    },
    /// The protected resource metadata names another resource than the server.
    #[error(
        "the protected resource metadata at {metadata_url} is for the resource {resource:?}, not for the server {server_url}; \
         refusing to authorize (no authorization server was contacted)"
    )]
    ResourceMismatch {
        /// Where the metadata came from.
        metadata_url: String,
        /// The `resource` it names.
        resource: String,
        /// The server's URL.
        server_url: String,
    },
    /// Authorization server metadata names another issuer than the one it was fetched for.
    #[error(
        "the authorization server metadata at {metadata_url} names the issuer {found:?}, but it was fetched for the issuer {expected:?}; \
         refusing it"
    )]
    IssuerMismatch {
        /// Where the metadata came from.
        metadata_url: String,
        /// The issuer it was fetched for.
        expected: String,
        /// The issuer it names.
        found: String,
    },
    /// The authorization server does not support PKCE with S256.
    #[error(
        "the authorization server {issuer} does not list S256 in code_challenge_methods_supported ({listed}); PKCE S256 is required"
    )]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
        /// What it lists.
        listed: String,
    },
    /// No way to identify the client to the authorization server.
    #[error(
        "the authorization server {issuer} has no dynamic client registration{cimd}; configure a client id (oauth.clientId) for this server"
    )]
    NoClientIdentity {
        /// The issuer.
        issuer: String,
        /// Why a Client ID Metadata Document was not used, as the end of the sentence.
        cimd: &'static str,
    },
    /// The authorization response (the redirect) was refused.
    #[error("the authorization response was refused")]
    AuthorizationResponse(#[source] ResponseRefusal),
    /// The authorization server answered the authorization request with an error (a response
    /// with this login's `state` and the right `iss`). Its `error`, `error_description` and
    /// `error_uri` are the server's text, kept verbatim (at most [`MAX_SERVER_TEXT_CHARS`]
    /// characters each): whoever shows them escapes them for where they are shown.
    #[error(
        "the authorization server {issuer} refused the authorization: {error}{}{}",
        describe(.description.as_deref()),
        .uri.as_deref().map(|uri| format!(" (see {uri})")).unwrap_or_default()
    )]
    AuthorizationDenied {
        /// The issuer.
        issuer: String,
        /// The `error` code.
        error: String,
        /// The `error_description`.
        description: Option<String>,
        /// The `error_uri`.
        uri: Option<String>,
    },
    /// The token endpoint refused a request.
    #[error("the token endpoint {url} answered HTTP {status}: {error}{}", describe(.description.as_deref()))]
    TokenRefused {
        /// The token endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code (or a summary of the body).
        error: String,
        /// The `error_description`.
        description: Option<String>,
    },
    /// The loopback redirect listener failed.
    #[error("the OAuth redirect listener")]
    Listener(#[source] ListenerProblem),
    /// No authorization response arrived in time ([`OAuthSettings::login_timeout`]).
    #[error(
        "no authorization response arrived within {} (the login was not completed){}",
        show_duration(*.after),
        refusals(*.refused, .last_refusal.as_ref())
    )]
    LoginTimedOut {
        /// The limit.
        after: Duration,
        /// How many requests to the redirect listener's callback path were refused meanwhile as
        /// not this login's authorization response (forged, stale, without a code, the wrong
        /// `iss`).
        refused: usize,
        /// Why the last of them was refused.
        last_refusal: Option<ResponseRefusal>,
    },
    /// The user agent could not open the authorization URL.
    #[error(transparent)]
    UserAgent(#[from] UserAgentError),
    /// The server refused a request with a status no login or refresh answers (a 403 other
    /// than `insufficient_scope`).
    #[error("the server refused the request with HTTP {status}{}", .code.as_ref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Forbidden {
        /// The HTTP status.
        status: u16,
        /// The `error` of its Bearer challenge, when it gave one.
        code: Option<String>,
    },
    /// A login is needed and this provider has no user agent to run one.
    #[error("an OAuth login at {issuer} is needed; log in with `plexus login {server}`")]
    LoginRequired {
        /// The authorization server's issuer.
        issuer: String,
        /// The server, as the user names it.
        server: String,
    },
    /// The authorization server rejected the refresh token (`invalid_grant`, or another 400 or
    /// 401 of its token endpoint). The tokens were removed from the store, and the refresh token
    /// is not tried again: a login is needed.
    #[error(
        "the refresh token was rejected by the authorization server {issuer}; log in again with `plexus login {server}`"
    )]
    RefreshRejected {
        /// The authorization server's issuer.
        issuer: String,
        /// The server, as the user names it.
        server: String,
        /// The token endpoint's answer.
        #[source]
        source: std::sync::Arc<OAuthError>,
    },
    /// Too many authorizations for the same scopes.
    #[error(
        "gave up after {attempts} authorizations for the same scopes ({scopes}): the server keeps refusing the tokens they gave"
    )]
    TooManyAttempts {
        /// The scopes (`none` when none was requested).
        scopes: String,
        /// How many authorizations were made.
        attempts: u32,
    },
    /// The token store failed.
    #[error(transparent)]
    Store(#[from] TokenStoreError),
    /// TLS could not be set up for OAuth's requests (an unusable `NODE_EXTRA_CA_CERTS`).
    #[error(transparent)]
    Tls(#[from] plexus_net::tls::TlsError),
    /// A private key could not be read, or a JWT not signed.
    #[error(transparent)]
    Jwt(#[from] jwt::JwtError),
    /// An assertion (a workload identity token, the ID token to exchange) could not be read.
    #[error("{what} (from {origin})")]
    Assertion {
        /// What it is.
        what: &'static str,
        /// Where it was read from (never its value).
        origin: String,
        /// Why it is unusable.
        #[source]
        problem: AssertionProblem,
    },
}

/// The longest `error`, `error_description` or `error_uri` of an authorization server kept, in
/// characters; a longer one is cut and ends with `…`.
pub const MAX_SERVER_TEXT_CHARS: usize = 1024;

fn describe(description: Option<&str>) -> String {
    description.map(|d| format!(" ({d})")).unwrap_or_default()
}

/// What a timed-out login says about the callbacks it refused.
fn refusals(refused: usize, last: Option<&ResponseRefusal>) -> String {
    if refused == 0 {
        return String::new();
    }
    let (count, verb) = if refused == 1 {
        ("1 callback".to_owned(), "was")
    } else {
        (format!("{refused} callbacks"), "were")
    };
    let last = last.map(|reason| format!(" (the last: {reason})")).unwrap_or_default();
    format!("; {count} to the redirect listener {verb} refused as not this login's authorization response{last}")
}
