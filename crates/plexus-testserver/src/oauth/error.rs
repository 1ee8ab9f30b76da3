//! Why a call of [`OAuthHandle`](super::OAuthHandle) failed ([`OAuthError`]), and the typed causes
//! it and the authorization servers keep: the limit reached ([`LimitReached`]), what the store
//! refused ([`StoreError`]), what is wrong with an argument ([`InvalidArgument`], [`JwksProblem`]).

use crate::remote::PathProblem;

/// Why an [`OAuthHandle`](super::OAuthHandle) call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The server has stopped.
    #[error("the server has stopped")]
    Stopped,
    /// A limit was reached: documents, migrations, clients.
    #[error(transparent)]
    Limit(#[from] LimitReached),
    /// The authorization server's store could not issue what was asked.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A new listener could not be bound.
    #[error("cannot listen on 127.0.0.1 for the new authorization server")]
    Listen(#[source] std::io::Error),
    /// An argument is invalid.
    #[error(transparent)]
    Invalid(#[from] InvalidArgument),
}

/// A limit the test server keeps on what it holds, reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitReached {
    /// The protected resource moved to new authorization servers as often as it may.
    #[error("the authorization server moved {max} times already, the limit")]
    Migrations {
        /// The most migrations.
        max: usize,
    },
    /// A document is larger than the largest one served.
    #[error("the document is {size} bytes, more than {max}")]
    DocumentSize {
        /// The document's size, in bytes.
        size: usize,
        /// The largest document, in bytes.
        max: usize,
    },
    /// As many documents of the kind as allowed are held.
    #[error("{max} documents are held, the limit")]
    Documents {
        /// The most documents of each kind.
        max: usize,
    },
    /// The authorization server holds as many clients as it may.
    #[error("the authorization server holds {max} clients, its limit")]
    Clients {
        /// The most clients.
        max: usize,
    },
    /// As many authorization codes as allowed wait to be exchanged.
    #[error("{max} authorization codes wait to be exchanged, the limit")]
    Codes {
        /// The most codes waiting.
        max: usize,
    },
    /// The authorization server holds as many access (or refresh) tokens as it may.
    #[error("the authorization server holds {max} tokens, its limit")]
    Tokens {
        /// The most access tokens, and separately the most refresh tokens.
        max: usize,
    },
    /// As many client assertion ids (`jti`) as allowed are remembered against replays.
    #[error("{max} client assertions are remembered, the limit")]
    AssertionIds {
        /// The most assertion ids remembered.
        max: usize,
    },
}

/// Why an authorization server's store refused to keep or issue something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// It holds as many of the kind as it may.
    #[error(transparent)]
    Full(#[from] LimitReached),
    /// The operating system's random source gave no bytes for a new code or token.
    #[error("cannot draw random bytes")]
    Random(#[from] getrandom::Error),
    /// A client assertion's `jti` was used already, while its assertion lives.
    #[error("the client assertion's jti {jti:?} was used already")]
    Replayed {
        /// The `jti` the client sent.
        jti: String,
    },
}

/// What is wrong with an argument of an [`OAuthHandle`](super::OAuthHandle) call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidArgument {
    /// The public keys are not a usable JWK or JWK Set.
    #[error(transparent)]
    Jwks(#[from] JwksProblem),
    /// The path is not one a document can be served at.
    #[error(transparent)]
    Path(#[from] PathProblem),
    /// The client id is not an `http` or `https` URL.
    #[error("{url:?} is not an http(s) URL")]
    NotHttpUrl {
        /// The URL given.
        url: String,
    },
}

/// What is wrong with a JWK or JWK Set of a `private_key_jwt` client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksProblem {
    /// The set's `keys` is not an array.
    #[error("jwks.keys must be an array")]
    KeysNotArray,
    /// The set holds no key, or more than a client may register.
    #[error("the JWK Set must hold 1 to {max} keys")]
    KeyCount {
        /// How many keys it holds.
        count: usize,
        /// The most keys a client may register.
        max: usize,
    },
    /// A key is not a JSON object.
    #[error("a JWK must be a JSON object")]
    NotAnObject,
    /// A key is not an EC P-256 key.
    #[error(
        "only EC P-256 keys are supported (kty {:?}, crv {:?})",
        kty.as_deref().unwrap_or("(none)"),
        crv.as_deref().unwrap_or("(none)")
    )]
    Unsupported {
        /// The key's `kty`, if it is a string.
        kty: Option<String>,
        /// The key's `crv`, if it is a string.
        crv: Option<String>,
    },
    /// A key holds its private part (`d`).
    #[error("the JWK holds a private key (d); register the public key only")]
    PrivateKey,
    /// A coordinate of a key is not base64url.
    #[error("the JWK's {coordinate} is not base64url")]
    NotBase64Url {
        /// `x` or `y`.
        coordinate: &'static str,
        /// Why it does not decode.
        #[source]
        source: base64::DecodeError,
    },
    /// A coordinate of a key is not 32 bytes long.
    #[error("the JWK's {coordinate} is {len} bytes, not 32")]
    CoordinateLength {
        /// `x` or `y`.
        coordinate: &'static str,
        /// Its length, in bytes.
        len: usize,
    },
}
