//! What is wrong, in the OAuth client's own words: the typed causes of [`OAuthError`]'s
//! [`Settings`](super::OAuthError::Settings), [`Listener`](super::OAuthError::Listener) and
//! [`Assertion`](super::OAuthError::Assertion) (each the `source` of its error, whose own text names
//! only where).
//!
//! [`OAuthError`]: super::OAuthError

use std::net::SocketAddr;
use std::path::PathBuf;

use super::jwt::JwtError;
use super::machine::MAX_ASSERTION_BYTES;

/// What is wrong with an OAuth setting ([`OAuthError::Settings`](super::OAuthError::Settings)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsProblem {
    /// The text is not a URL.
    #[error("{url} is not a URL")]
    NotAUrl {
        /// The text (a URL's credentials redacted).
        url: String,
        /// Why it does not parse.
        #[source]
        source: url::ParseError,
    },
    /// The URL is not an `http` or `https` URL with a host.
    #[error("{url} is not an http(s) URL")]
    NotHttpUrl {
        /// The URL (its credentials redacted).
        url: String,
    },
    /// The client's credentials hold characters an HTTP header cannot carry.
    #[error("they cannot be sent in an HTTP header")]
    CredentialsNotHeaderSafe,
    /// A DPoP proof holds characters an HTTP header cannot carry.
    #[error("it cannot be sent in an HTTP header")]
    ProofNotHeaderSafe,
    /// The client authenticates with `private_key_jwt` and has no private key.
    #[error("client {client_id:?} authenticates with private_key_jwt, but no private key is configured")]
    NoPrivateKey {
        /// The client id.
        client_id: String,
    },
    /// A token request was asked of the authorization code grant.
    #[error("the authorization code flow needs a login, not a token request")]
    NeedsLogin,
    /// The client credentials grant has no client id.
    #[error("the client credentials grant needs the client's id (and its secret or private key)")]
    NeedsClientId,
    /// The identity provider's metadata was not found, and no token endpoint is configured.
    #[error("no metadata was found for the issuer {issuer}; configure its token endpoint")]
    NoIssuerMetadata {
        /// The issuer (its credentials redacted).
        issuer: String,
    },
    /// The system's random number generator failed.
    #[error("the system gave no random bytes")]
    NoRandomBytes,
    /// The HTTP client could not be built.
    #[error(transparent)]
    HttpClient(plexus_net::http::HttpError),
    /// The value is not a port number.
    #[error("{value:?} is not a port number (1-65535)")]
    NotAPort {
        /// The value given.
        value: String,
    },
    /// The `jwt_bearer` grant has no assertion file.
    #[error("the jwt_bearer grant needs one")]
    NoAssertionFile,
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A private key file is larger than a private key.
    #[error("{} is {size} bytes, more than a private key ({max} at most)", path.display())]
    KeyTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The largest accepted, in bytes.
        max: u64,
    },
    /// A private key file does not hold a usable key.
    #[error("{}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// What is wrong with the key.
        #[source]
        source: JwtError,
    },
}

/// Why the loopback redirect listener failed ([`OAuthError::Listener`](super::OAuthError::Listener)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListenerProblem {
    /// The address could not be bound.
    #[error("cannot listen on {address}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The bound address could not be read.
    #[error("cannot read the listening address")]
    Address(#[source] std::io::Error),
}

/// Why an assertion is unusable ([`OAuthError::Assertion`](super::OAuthError::Assertion)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AssertionProblem {
    /// The environment variable is not set or not Unicode.
    #[error(transparent)]
    Env(#[from] std::env::VarError),
    /// The file could not be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// It is empty (or only white space).
    #[error("it is empty")]
    Empty,
    /// It is larger than the largest assertion read (64 KiB).
    #[error("it is larger than {MAX_ASSERTION_BYTES} bytes")]
    TooLarge,
    /// The file is not UTF-8 text.
    #[error("it is not UTF-8 text")]
    NotUtf8,
    /// It is not shaped as a JWT.
    #[error("it is not a JWT (three base64url parts separated by dots)")]
    NotAJwt,
}

/// Why a request to the redirect listener's callback path was refused as not this login's
/// authorization response ([`OAuthError::AuthorizationResponse`](super::OAuthError::AuthorizationResponse),
/// and the last refusal of [`OAuthError::LoginTimedOut`](super::OAuthError::LoginTimedOut)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseRefusal {
    /// A parameter appears more than once (RFC 6749 §3.1).
    #[error("the parameter {name:?} appears more than once")]
    RepeatedParameter {
        /// The parameter.
        name: String,
    },
    /// Its `iss` names another authorization server (RFC 9207).
    #[error("its issuer (iss) {given:?} is not the authorization server's {expected:?}")]
    WrongIssuer {
        /// The `iss` it carried (cut to a bounded length).
        given: String,
        /// The authorization server's issuer.
        expected: String,
    },
    /// It has no `iss` though the authorization server advertises it (RFC 9207).
    #[error("it has no issuer (iss), which the authorization server {issuer} advertises (RFC 9207)")]
    MissingIssuer {
        /// The authorization server's issuer.
        issuer: String,
    },
    /// Its `state` is not this login's: a forged or stale response.
    #[error("its state does not match the request's (a forged or stale response)")]
    StateMismatch,
    /// It carries neither a code nor an error.
    #[error("it has no authorization code")]
    NoCode,
}

/// What went wrong with a request to a metadata, registration or token endpoint, or with its
/// answer ([`OAuthError::Http`](super::OAuthError::Http)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpProblem {
    /// The URL does not parse.
    #[error("not a URL")]
    NotAUrl(#[source] url::ParseError),
    /// The URL is not an `http(s)` URL with a host.
    #[error("not an http(s) URL")]
    NotHttp,
    /// An issuer identifier with a query or a fragment (RFC 8414 §2).
    #[error("an issuer has no query or fragment")]
    IssuerWithQuery,
    /// The request could not be made or sent.
    #[error("the request failed")]
    Request(#[source] Box<plexus_net::http::HttpError>),
    /// The answer's body is over the limit.
    #[error("the answer is larger than {max} bytes")]
    TooLarge {
        /// The limit.
        max: usize,
    },
    /// The answer's body could not be read.
    #[error("reading the answer failed")]
    Read(#[source] plexus_net::http::BodyError),
    /// No answer within the timeout.
    #[error("no answer within {} s", .after.as_secs())]
    Timeout {
        /// The timeout.
        after: std::time::Duration,
    },
    /// The endpoint answered with an error status and an OAuth error (RFC 7591 §3.2.2).
    #[error("HTTP {status}: {code}{}", .description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code the server gave.
        code: String,
        /// The server's `error_description`.
        description: Option<String>,
    },
    /// The endpoint answered with an error status (and the start of its body, when it had one).
    #[error("HTTP {status}{}", if .excerpt.is_empty() { String::new() } else { format!(": {}", .excerpt) })]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the server's body (see `plexus_transport::body_excerpt`).
        excerpt: String,
    },
    /// The answer is not the JSON expected.
    #[error("the answer is not the expected JSON: {excerpt}")]
    NotJson {
        /// The start of the server's body.
        excerpt: String,
        /// Why it does not decode.
        #[source]
        source: serde_json::Error,
    },
    /// A field the answer must have is missing or empty.
    #[error("the answer has no {field}")]
    Missing {
        /// The field.
        field: &'static str,
    },
    /// The protected resource metadata names no authorization server.
    #[error("it names no authorization server (authorization_servers is empty)")]
    NoAuthorizationServer,
    /// Dynamic registration assigned a token endpoint authentication method plexus does not have.
    #[error("the server assigned the token endpoint authentication method {method:?}, which plexus does not support")]
    UnsupportedAuthMethod {
        /// The method's name, as the server gave it.
        method: String,
    },
    /// A token exchange issued another token type than the one requested (RFC 8693).
    #[error("the exchange issued a token of type {issued:?}, not the {requested:?} requested")]
    ExchangedType {
        /// What it issued.
        issued: String,
        /// What was requested.
        requested: String,
    },
    /// A DPoP token answered a request that carried no DPoP proof.
    #[error("the token type is DPoP, but the request carried no DPoP proof")]
    UnexpectedDpop,
    /// A token type other than Bearer and DPoP.
    #[error("the token type {token_type:?} is not supported (only Bearer and DPoP)")]
    UnsupportedTokenType {
        /// The type, as the server gave it.
        token_type: String,
    },
    /// `expires_in` is neither a number nor a numeric string.
    #[error("expires_in is not a number: {value}")]
    ExpiresIn {
        /// The value given.
        value: serde_json::Value,
    },
}
