//! The session ingress token of `ws` servers, sent as `Authorization: Bearer <token>`.
//!
//! The token comes from [`INGRESS_TOKEN_VAR`] when it is set and not blank, else from the file
//! that [`INGRESS_TOKEN_FILE_VAR`] names (its content trimmed, at most
//! [`MAX_INGRESS_TOKEN_FILE_SIZE`] bytes); with neither, there is no token and no header. Read it
//! for every connect ([`IngressToken::from_env`]), so that a rotated file is picked up. Errors
//! name the variable or the file, never the token. A 401 or 403 is a failure, not "needs auth":
//! the token comes from the environment, not from a login.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use plexus_auth::{INGRESS_TOKEN_VAR, IngressToken};
//! use plexus_transport::AuthProvider;
//!
//! let env = |name: &str| (name == INGRESS_TOKEN_VAR).then(|| " s3cret\n".to_owned());
//! let token = IngressToken::from_env(&env).await.unwrap().unwrap();
//! assert_eq!(token.headers("GET", "wss://h/mcp").await.unwrap(), [("Authorization".to_owned(), "Bearer s3cret".to_owned())]);
//!
//! let nothing = |_: &str| None;
//! assert!(IngressToken::from_env(&nothing).await.unwrap().is_none());
//! # }
//! ```

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use plexus_transport::{AuthDecision, AuthFailure, AuthHeaders, AuthProvider, BoxFuture, Rejection};
use tokio::io::AsyncReadExt;

/// The environment variable that holds the token itself.
pub const INGRESS_TOKEN_VAR: &str = "PLEXUS_SESSION_INGRESS_TOKEN";

/// The environment variable that names a file holding the token.
pub const INGRESS_TOKEN_FILE_VAR: &str = "PLEXUS_SESSION_INGRESS_TOKEN_FILE";

/// The largest token file read, in bytes (64 KiB).
pub const MAX_INGRESS_TOKEN_FILE_SIZE: u64 = 64 * 1024;

/// Where a session ingress token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngressOrigin {
    /// [`INGRESS_TOKEN_VAR`].
    Env,
    /// The file named by [`INGRESS_TOKEN_FILE_VAR`].
    File(PathBuf),
}

impl fmt::Display for IngressOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IngressOrigin::Env => f.write_str(INGRESS_TOKEN_VAR),
            IngressOrigin::File(path) => write!(f, "the file {} ({INGRESS_TOKEN_FILE_VAR})", path.display()),
        }
    }
}

/// Why the configured session ingress token cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngressError {
    /// The token file cannot be read.
    #[error("cannot read the session ingress token file {} ({INGRESS_TOKEN_FILE_VAR})", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The token file is larger than [`MAX_INGRESS_TOKEN_FILE_SIZE`].
    #[error("the session ingress token file {} ({INGRESS_TOKEN_FILE_VAR}) is larger than {limit} bytes", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// The token file holds nothing but whitespace.
    #[error("the session ingress token file {} ({INGRESS_TOKEN_FILE_VAR}) is empty", .path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The server answered a request carrying the token with 401 or 403.
    #[error("the server rejected the session ingress token from {origin} (HTTP {status})")]
    TokenRejected {
        /// Where the token came from.
        origin: IngressOrigin,
        /// 401 or 403.
        status: u16,
    },
    /// The token has a character a bearer token cannot have (whitespace inside it, a control
    /// character, non-ASCII or non-UTF-8 text).
    #[error(
        "the session ingress token from {origin} is not a valid bearer token (it has whitespace, a control character or non-ASCII text)"
    )]
    Invalid {
        /// Where it came from.
        origin: IngressOrigin,
    },
}

/// A session ingress token as an [`AuthProvider`]: every request (the WebSocket upgrade) carries
/// `Authorization: Bearer <token>`. `Debug` hides the token.
#[derive(Clone)]
pub struct IngressToken {
    token: String,
    origin: IngressOrigin,
}

impl fmt::Debug for IngressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IngressToken")
            .field("token", &"<redacted>")
            .field("origin", &self.origin)
            .finish()
    }
}

impl IngressToken {
    /// The token the environment configures, read now (see the [module documentation](self)):
    /// `Ok(None)` when neither variable is set. `lookup` reads a variable (tests pass a map
    /// instead of the process environment).
    pub async fn from_env(
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Option<IngressToken>, IngressError> {
        if let Some(token) = lookup(INGRESS_TOKEN_VAR).filter(|value| !value.trim().is_empty()) {
            return IngressToken::new(token.trim(), IngressOrigin::Env).map(Some);
        }
        let Some(path) = lookup(INGRESS_TOKEN_FILE_VAR).filter(|value| !value.is_empty()) else {
            return Ok(None);
        };
        let path = PathBuf::from(path);
        let unreadable = |source| IngressError::Unreadable {
            path: path.clone(),
            source,
        };
        let file = tokio::fs::File::open(&path).await.map_err(unreadable)?;
        let mut bytes = Vec::new();
        file.take(MAX_INGRESS_TOKEN_FILE_SIZE + 1)
            .read_to_end(&mut bytes)
            .await
            .map_err(unreadable)?;
        if bytes.len() as u64 > MAX_INGRESS_TOKEN_FILE_SIZE {
            return Err(IngressError::TooLarge {
                path,
                limit: MAX_INGRESS_TOKEN_FILE_SIZE,
            });
        }
        let origin = IngressOrigin::File(path.clone());
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(IngressError::Invalid { origin });
        };
        if text.trim().is_empty() {
            return Err(IngressError::Empty { path });
        }
        IngressToken::new(text.trim(), origin).map(Some)
    }

    /// A token from `origin`; it must be non-empty visible ASCII (the bearer token syntax allows
    /// no less).
    pub fn new(token: &str, origin: IngressOrigin) -> Result<IngressToken, IngressError> {
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(IngressError::Invalid { origin });
        }
        Ok(IngressToken {
            token: token.to_owned(),
            origin,
        })
    }

    /// Where the token came from.
    pub fn origin(&self) -> &IngressOrigin {
        &self.origin
    }
}

/// Whether the session ingress token may be sent to the server at `url`: only over TLS (`wss`,
/// `https`) or to a loopback address (`localhost`, `127.0.0.0/8`, `::1`), so that it never
/// crosses a network in clear text. A URL that does not parse gets nothing.
///
/// ```
/// use plexus_auth::ingress::may_receive_token;
///
/// assert!(may_receive_token("wss://mcp.example.com/ws"));
/// assert!(may_receive_token("ws://127.0.0.1:3000/ws") && may_receive_token("ws://[::1]/") && may_receive_token("ws://localhost/"));
/// assert!(!may_receive_token("ws://mcp.example.com/ws"));
/// assert!(!may_receive_token("ws://127.0.0.1.example.com/ws"));
/// ```
pub fn may_receive_token(url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    if matches!(url.scheme(), "wss" | "https") {
        return true;
    }
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    }
}

impl AuthProvider for IngressToken {
    fn headers(&self, _method: &str, _url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let headers = vec![("Authorization".to_owned(), format!("Bearer {}", self.token))];
        Box::pin(async move { Ok(headers) })
    }

    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        let cause = Arc::new(IngressError::TokenRejected {
            origin: self.origin.clone(),
            status: rejection.status,
        });
        Box::pin(async move { AuthDecision::Fail { cause } })
    }
}
