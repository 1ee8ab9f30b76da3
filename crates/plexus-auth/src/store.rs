//! The token store: the OAuth credentials of every server in one JSON file (`<home>/credentials.json`,
//! the caller names the path), keyed by server name and authorization server issuer.
//!
//! The file is private (mode 0600 on Unix) and always written whole and atomically: a temporary
//! file in the same directory, flushed to disk, renamed over the old one, so that a crash leaves
//! the old file or the new one, never half of one. Every read and every change (a read-modify-write)
//! holds the store's lock: in one process a mutex per path (every [`TokenStore`] of the same path
//! shares it), and across processes the lock file `credentials.json.lock` beside it (see
//! [`lock`](TokenStore::lock)), so that two plexus processes sharing a home lose none of each
//! other's changes. A token refresh holds the same lock from reading the refresh token to saving
//! the new one ([`LockedStore`]): a second process waits, reads the new tokens, and uses them
//! instead of spending the refresh token that the first one rotated. The wait is bounded
//! ([`DEFAULT_LOCK_TIMEOUT`], [`with_lock_timeout`](TokenStore::with_lock_timeout)); the error names
//! the lock file. Neither the store nor its lock file is ever a symbolic link: one is refused
//! ([`TokenStoreError::Symlink`]), never followed, replaced or moved.
//!
//! A file that other users may read or write is made 0600 at its first read, and
//! one that cannot be read as a store (not JSON, the wrong shape, too large) is renamed aside
//! (`credentials.json.corrupt-<time>`) and the store starts empty: a broken file costs a login,
//! never a crash. Both are reported as a [`FileWarning`] (see
//! [`private_file`]), in the store's [`FileWarnings`] (its own, or one shared
//! with [`with_warnings`](TokenStore::with_warnings)).
//!
//! Secrets ([`Secret`]) never show in `Debug`, `Display`, errors or logs.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use plexus_auth::store::{Secret, StoredCredential, StoredTokens, TokenStore};
//!
//! let dir = tempfile::tempdir()?;
//! let store = TokenStore::new(dir.path().join("credentials.json"));
//! let tokens = StoredTokens::new(Secret::new("at-1"), Some(Secret::new("rt-1")), Some(3600), None);
//! let credential = StoredCredential::new("https://mcp.example.com/mcp", "https://as.example.com/token").with_tokens(tokens);
//! store.put("docs", "https://as.example.com", credential).await?;
//!
//! let saved = store.get("docs", "https://as.example.com").await?.unwrap();
//! assert_eq!(saved.tokens.unwrap().access_token.expose(), "at-1");
//! assert!(!format!("{:?}", store.server("docs").await?).contains("at-1"));
//! assert!(store.remove_server("docs").await?);
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::private_file::{self, FileFailure, FileWarning, FileWarnings, PrivateFile};
use crate::store_lock::{self, Held, PathLock};
pub use crate::store_lock::{DEFAULT_LOCK_TIMEOUT, LOCK_FILE_SUFFIX};
use crate::text::show_duration;

/// The largest credentials file read (a store of hundreds of servers is well below).
pub const MAX_STORE_BYTES: u64 = 4 * 1024 * 1024;
/// The version written in the file; a file of another version is set aside.
const STORE_VERSION: u32 = 1;
/// What a secret shows as.
const REDACTED: &str = "<redacted>";

/// A secret string (a token, a client secret): shown as `<redacted>` by `Debug` and `Display`,
/// serialized as the plain string.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Secret(secret.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// The tokens of one server at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTokens {
    /// The access token.
    pub access_token: Secret,
    /// The token type the authorization server named: `Bearer`, or `DPoP` for a token bound
    /// to [`dpop_key`](Self::dpop_key).
    #[serde(default = "bearer")]
    pub token_type: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch; `None` when the server did
    /// not say (the token is used until a 401).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (space-separated), when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The private key (PKCS#8, base64url) the tokens are bound to with DPoP (RFC 9449): every
    /// request with them, refreshes included, carries a proof signed with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
}

fn bearer() -> String {
    "Bearer".to_owned()
}

impl StoredTokens {
    /// Tokens issued now that expire in `expires_in` seconds (unknown when `None`).
    pub fn new(
        access_token: Secret,
        refresh_token: Option<Secret>,
        expires_in: Option<u64>,
        scope: Option<String>,
    ) -> Self {
        StoredTokens {
            access_token,
            token_type: bearer(),
            refresh_token,
            expires_at: expires_in.map(|seconds| unix_now().saturating_add(seconds)),
            scope,
            dpop_key: None,
        }
    }

    /// Whether the access token expires within `margin` seconds of now (false when the expiry
    /// is unknown).
    pub fn expires_within(&self, margin: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= unix_now().saturating_add(margin))
    }
}

/// How a client was registered with an authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientSource {
    /// Configured (`oauth.clientId`); its secret stays in the configuration, never in the store.
    PreRegistered,
    /// A Client ID Metadata Document URL used as the client id.
    MetadataDocument,
    /// Registered by Dynamic Client Registration (RFC 7591).
    Dynamic,
}

/// The client the tokens were issued to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredClient {
    /// Where the client id came from.
    pub source: ClientSource,
    /// The client id.
    pub client_id: String,
    /// The client secret of a dynamically registered confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// The token endpoint authentication method (`none`, `client_secret_basic`,
    /// `client_secret_post`).
    pub auth_method: String,
    /// The redirect URI the client was registered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

/// What the store keeps for one server at one authorization server (issuer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCredential {
    /// The protected resource the tokens are for (the `resource` sent with them); tokens are
    /// never sent to another resource.
    pub resource: String,
    /// The token endpoint of the issuer, for refreshing.
    pub token_endpoint: String,
    /// The client the tokens were issued to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<StoredClient>,
    /// The tokens, when a login completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<StoredTokens>,
    /// The scopes last requested from this issuer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested_scopes: Vec<String>,
    /// When this entry was last written, in seconds since the Unix epoch.
    #[serde(default)]
    pub updated_at: u64,
}

impl StoredCredential {
    /// An entry for `resource` whose tokens come from `token_endpoint`, without client or tokens.
    pub fn new(resource: impl Into<String>, token_endpoint: impl Into<String>) -> Self {
        StoredCredential {
            resource: resource.into(),
            token_endpoint: token_endpoint.into(),
            client: None,
            tokens: None,
            requested_scopes: Vec::new(),
            updated_at: 0,
        }
    }

    /// With these tokens.
    #[must_use]
    pub fn with_tokens(mut self, tokens: StoredTokens) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// With this client.
    #[must_use]
    pub fn with_client(mut self, client: StoredClient) -> Self {
        self.client = Some(client);
        self
    }
}

/// Every issuer's entry of one server, by issuer.
pub type ServerCredentials = BTreeMap<String, StoredCredential>;

/// The file as written.
#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, ServerCredentials>,
}

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// A file system operation failed.
    #[error("token store {}: {what}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The store could not be encoded (never expected: every field is a string or a number).
    #[error("token store {}: cannot encode", .path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// The JSON encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The file (the store or its lock file) is a symbolic link: plexus neither follows nor
    /// replaces one.
    #[error(
        "token store {}: it is a symbolic link, which plexus neither follows nor replaces (make it a regular file)",
        .path.display()
    )]
    Symlink {
        /// The symbolic link.
        path: PathBuf,
    },
    /// The store's lock was not had in time: another process (or task) held it all along.
    #[error(
        "token store {}: timed out after {} waiting for the lock (another plexus process or task holds it)",
        .lock.display(),
        show_duration(*.waited)
    )]
    LockTimeout {
        /// The lock file.
        lock: PathBuf,
        /// How long it was waited for.
        waited: Duration,
    },
    /// The blocking worker that does the file I/O failed (it panicked or was cancelled).
    #[error("token store {}: the file worker failed", .path.display())]
    Worker {
        /// The file.
        path: PathBuf,
        /// The worker's end.
        #[source]
        source: tokio::task::JoinError,
    },
}

impl TokenStoreError {
    /// The error of a failed step on `path`.
    pub(crate) fn of(path: &Path, failure: FileFailure) -> TokenStoreError {
        match failure {
            FileFailure::Symlink => TokenStoreError::Symlink {
                path: path.to_path_buf(),
            },
            FileFailure::Io { what, source } => TokenStoreError::Io {
                path: path.to_path_buf(),
                what,
                source,
            },
        }
    }
}

/// The OAuth credentials file. Cheap to clone; clones (and other stores of the same path) share
/// one in-process lock, and every store of the same file one lock file.
#[derive(Clone)]
pub struct TokenStore {
    path: PathBuf,
    lock: PathLock,
    lock_timeout: Duration,
    warnings: FileWarnings,
}

impl fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenStore")
            .field("path", &self.path)
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

impl TokenStore {
    /// The store in the file `path` (usually `<home>/credentials.json`). Nothing is read yet; the
    /// file, its lock file and their directory are created on the first use.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let key = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        TokenStore {
            lock: store_lock::path_lock(&key),
            path,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            warnings: FileWarnings::new(),
        }
    }

    /// Puts this store's warnings (a file set aside, a file made private) into `warnings`, shared
    /// with whoever shows them, instead of a collection of its own.
    #[must_use]
    pub fn with_warnings(mut self, warnings: FileWarnings) -> Self {
        self.warnings = warnings;
        self
    }

    /// Waits at most `timeout` for the store's lock ([`DEFAULT_LOCK_TIMEOUT`] by default) before
    /// an operation fails with [`TokenStoreError::LockTimeout`].
    #[must_use]
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file beside it (`credentials.json.lock`).
    pub fn lock_path(&self) -> PathBuf {
        store_lock::lock_file_path(&self.path)
    }

    /// The warnings about the file (set aside, made private) since the last call (see
    /// [`FileWarnings::take`]).
    pub fn take_warnings(&self) -> Vec<FileWarning> {
        self.warnings.take()
    }

    /// Takes the store's lock, in this process and across processes (see the [module
    /// docs](self)), waiting at most the lock timeout. Until the returned [`LockedStore`] is
    /// dropped, no other task or process reads or changes the store: read, decide (refresh a
    /// token), write, then drop it. The other methods of `TokenStore` take the lock themselves:
    /// calling them while holding it waits for it (and times out).
    pub async fn lock(&self) -> Result<LockedStore, TokenStoreError> {
        let held = store_lock::acquire(self.lock.clone(), self.lock_path(), self.lock_timeout).await?;
        Ok(LockedStore {
            store: self.clone(),
            _held: held,
        })
    }

    /// Every issuer's entry of `server` (empty when there is none).
    pub async fn server(&self, server: &str) -> Result<ServerCredentials, TokenStoreError> {
        self.lock().await?.server(server).await
    }

    /// The entry of `server` at `issuer`.
    pub async fn get(&self, server: &str, issuer: &str) -> Result<Option<StoredCredential>, TokenStoreError> {
        self.lock().await?.get(server, issuer).await
    }

    /// The names of the servers with an entry.
    pub async fn servers(&self) -> Result<Vec<String>, TokenStoreError> {
        self.lock().await?.servers().await
    }

    /// Stores the entry of `server` at `issuer` (replacing any), stamped with the time.
    pub async fn put(&self, server: &str, issuer: &str, credential: StoredCredential) -> Result<(), TokenStoreError> {
        self.lock().await?.put(server, issuer, credential).await
    }

    /// Removes the entry of `server` at `issuer`; true when there was one.
    pub async fn remove(&self, server: &str, issuer: &str) -> Result<bool, TokenStoreError> {
        self.lock().await?.remove(server, issuer).await
    }

    /// Removes every entry of `server` (`plexus logout`); true when there was one.
    pub async fn remove_server(&self, server: &str) -> Result<bool, TokenStoreError> {
        self.lock().await?.remove_server(server).await
    }
}

/// The token store with its lock held ([`TokenStore::lock`]): its reads see the file as no one
/// else changes it, and its writes replace it before anyone else reads it. Dropping it releases
/// the lock.
#[derive(Debug)]
pub struct LockedStore {
    store: TokenStore,
    _held: Held,
}

impl LockedStore {
    /// Every issuer's entry of `server` (empty when there is none).
    pub async fn server(&self, server: &str) -> Result<ServerCredentials, TokenStoreError> {
        let server = server.to_owned();
        self.with_file(false, move |file| {
            file.servers.get(&server).cloned().unwrap_or_default()
        })
        .await
    }

    /// The entry of `server` at `issuer`.
    pub async fn get(&self, server: &str, issuer: &str) -> Result<Option<StoredCredential>, TokenStoreError> {
        Ok(self.server(server).await?.remove(issuer))
    }

    /// The names of the servers with an entry.
    pub async fn servers(&self) -> Result<Vec<String>, TokenStoreError> {
        self.with_file(false, |file| file.servers.keys().cloned().collect())
            .await
    }

    /// Stores the entry of `server` at `issuer` (replacing any), stamped with the time.
    pub async fn put(&self, server: &str, issuer: &str, credential: StoredCredential) -> Result<(), TokenStoreError> {
        let (server, issuer) = (server.to_owned(), issuer.to_owned());
        self.with_file(true, move |file| {
            let mut credential = credential;
            credential.updated_at = unix_now();
            file.servers.entry(server).or_default().insert(issuer, credential);
        })
        .await
    }

    /// Removes the entry of `server` at `issuer`; true when there was one.
    pub async fn remove(&self, server: &str, issuer: &str) -> Result<bool, TokenStoreError> {
        let (server, issuer) = (server.to_owned(), issuer.to_owned());
        self.with_file(true, move |file| {
            let Some(entries) = file.servers.get_mut(&server) else {
                return false;
            };
            let removed = entries.remove(&issuer).is_some();
            if entries.is_empty() {
                file.servers.remove(&server);
            }
            removed
        })
        .await
    }

    /// Removes every entry of `server` (`plexus logout`); true when there was one.
    pub async fn remove_server(&self, server: &str) -> Result<bool, TokenStoreError> {
        let server = server.to_owned();
        self.with_file(true, move |file| file.servers.remove(&server).is_some())
            .await
    }

    /// Runs `change` on the file's contents on a blocking thread, and writes the result back
    /// when `write` is set.
    async fn with_file<T: Send + 'static>(
        &self,
        write: bool,
        change: impl FnOnce(&mut StoreFile) -> T + Send + 'static,
    ) -> Result<T, TokenStoreError> {
        let (path, warnings) = (self.store.path.clone(), self.store.warnings.clone());
        let worker_path = path.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut file = read_file(&worker_path, &warnings)?;
            let result = change(&mut file);
            if write {
                write_file(&worker_path, &file)?;
            }
            Ok(result)
        })
        .await;
        outcome.unwrap_or_else(|e| Err(TokenStoreError::Worker { path, source: e }))
    }
}

/// Reads the store, making a file open to others private and setting an unreadable one aside.
fn read_file(path: &Path, warnings: &FileWarnings) -> Result<StoreFile, TokenStoreError> {
    let Some(handle) =
        private_file::open(path, PrivateFile::Credentials, warnings).map_err(|f| TokenStoreError::of(path, f))?
    else {
        return Ok(empty());
    };
    let bytes = private_file::read_bounded(handle, MAX_STORE_BYTES).map_err(|source| TokenStoreError::Io {
        path: path.to_path_buf(),
        what: "cannot read",
        source,
    })?;
    let reason = match bytes {
        None => format!("it is larger than {MAX_STORE_BYTES} bytes"),
        Some(bytes) => match serde_json::from_slice::<StoreFile>(&bytes) {
            Ok(file) if file.version == STORE_VERSION => return Ok(file),
            Ok(file) => format!(
                "it is version {}, this plexus reads version {STORE_VERSION}",
                file.version
            ),
            Err(e) => format!("not a credentials file: {e}"),
        },
    };
    private_file::set_aside(path, PrivateFile::Credentials, reason, warnings);
    Ok(empty())
}

fn empty() -> StoreFile {
    StoreFile {
        version: STORE_VERSION,
        servers: BTreeMap::new(),
    }
}

/// Writes the store atomically (see [`private_file::write_atomically`]).
fn write_file(path: &Path, file: &StoreFile) -> Result<(), TokenStoreError> {
    let mut bytes = serde_json::to_vec_pretty(file).map_err(|source| TokenStoreError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    private_file::write_atomically(path, &bytes, ".credentials-").map_err(|f| TokenStoreError::of(path, f))
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show() {
        let tokens = StoredTokens::new(Secret::new("at-secret"), Some(Secret::new("rt-secret")), None, None);
        let shown = format!("{tokens:?} {}", tokens.access_token);
        assert!(!shown.contains("secret"), "{shown}");
        assert_eq!(
            serde_json::to_value(&tokens).unwrap(),
            serde_json::json!({"access_token": "at-secret", "token_type": "Bearer", "refresh_token": "rt-secret"})
        );
    }

    #[test]
    fn expiry_is_absolute_and_unknown_never_expires() {
        let tokens = StoredTokens::new(Secret::new("a"), None, Some(10), None);
        let at = tokens.expires_at.unwrap();
        assert!(at >= unix_now() + 9 && at <= unix_now() + 10);
        assert!(tokens.expires_within(30));
        assert!(!tokens.expires_within(0) || at <= unix_now());
        assert!(!StoredTokens::new(Secret::new("a"), None, None, None).expires_within(u64::MAX));
    }
}
