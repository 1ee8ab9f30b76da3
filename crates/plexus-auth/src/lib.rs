//! The `AuthProvider` implementations that plexus's remote transports use: OAuth 2.1 with its
//! token store, the needs-auth cache, the headers helper, IDE lockfile tokens and the session
//! ingress token.
//!
//! Each module is one way of authenticating; the facade's connector picks the one that a server
//! kind needs (the facade's `DefaultConnector` has the table of kinds). Transports know nothing of this crate: they call
//! the [`AuthProvider`](plexus_transport::AuthProvider) hook.
//!
//! OAuth: an [`OAuthProvider`] per server, its tokens in a
//! [`TokenStore`] (`<home>/credentials.json`), its logins run by a
//! [`UserAgent`] (the CLI's prints the URL and opens a browser;
//! [`RedirectFollower`] follows the redirects itself):
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use plexus_auth::oauth::{OAuthProvider, OAuthSettings, RedirectFollower};
//! use plexus_auth::store::TokenStore;
//!
//! let home = tempfile::tempdir()?;
//! let store = TokenStore::new(home.path().join("credentials.json"));
//! let settings = OAuthSettings::default().scopes(["files:read"]).with_env()?;
//! let provider = OAuthProvider::new("docs", "https://mcp.example.com/mcp", settings, store)?
//!     .with_user_agent(Arc::new(RedirectFollower::new(Duration::from_secs(10))?));
//! // Given to a transport (`HttpConfig::auth`), it answers the server's 401s; `provider.login()`
//! // and `provider.logout()` are `plexus login` and `plexus logout`.
//! let provider: Arc<dyn plexus_transport::AuthProvider> = Arc::new(provider);
//! # drop(provider);
//! # Ok(()) }
//! ```
//!
//! Dependencies: plexus-net's HTTP client for the OAuth endpoints (its proxies and TLS roots,
//! like the transports; `http` and `bytes` for its types), `url` for
//! discovery URLs and the canonical resource URI, `aws-lc-rs` for PKCE's SHA-256, random values
//! and the ES256 signatures of client assertions and DPoP proofs (the crypto provider rustls
//! already brings), `base64` for PKCE challenges, HTTP Basic client authentication and JWTs,
//! `tempfile` for atomic private writes of the token store and the needs-auth cache, `fs4` for
//! the token store's lock file (`credentials.json.lock`, held across processes for every change
//! and every refresh: see [`store`]), `nix` to run the headers helper in its own process group
//! (killed whole on a timeout) and for `O_NOFOLLOW` (a private file is never opened through a
//! symbolic link).
#![forbid(unsafe_code)]

pub mod helper;
pub mod ide;
pub mod ingress;
pub mod needs_auth;
pub mod oauth;
pub mod private_file;
pub mod store;
mod store_lock;
mod text;

pub use helper::{DEFAULT_HELPER_TIMEOUT, HeadersHelper, HelperError, OutputProblem, Rerun};
pub use ide::{
    IDE_AUTH_HEADER, IDE_LOCK_DIR_VAR, IdeError, IdeLockfile, IdeToken, LockfileProblem, default_ide_lock_dir,
};
pub use ingress::{INGRESS_TOKEN_FILE_VAR, INGRESS_TOKEN_VAR, IngressError, IngressOrigin, IngressToken};
pub use needs_auth::{NEEDS_AUTH_CACHE_FILE, NEEDS_AUTH_TTL, NeedsAuthCache, NeedsAuthEntry, NeedsAuthError};
pub use oauth::{OAuthError, OAuthProvider, OAuthSettings, RedirectFollower, UserAgent};
pub use private_file::{FileProblem, FileWarning, FileWarnings, PrivateFile};
pub use store::{LockedStore, Secret, TokenStore, TokenStoreError};
