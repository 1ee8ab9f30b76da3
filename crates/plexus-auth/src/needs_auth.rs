//! The needs-auth cache: which servers answered a connect with "needs authentication" in the
//! last 15 minutes, so that connecting to them again fails at once, without a network round
//! trip, until the entry expires or a login clears it.
//!
//! The cache is one file, `<plexus home>/mcp-needs-auth-cache.json` ([`NEEDS_AUTH_CACHE_FILE`]).
//! An entry is keyed by the server's name and then its URL as
//! [`redact_url`] shows it (scheme, host, port and path; no
//! user info, query or fragment, so no credential is written), and holds the time it was
//! recorded (milliseconds since the Unix epoch) and the reason:
//!
//! ```json
//! {"docs": {"https://docs.example.com/mcp": {"timestamp": 1767225600000, "reason": "…"}}}
//! ```
//!
//! An entry is fresh for [`NEEDS_AUTH_TTL`] (15 minutes) after its timestamp; one dated in the
//! future (a clock set back) is not fresh. Every write drops the entries that are not fresh and
//! keeps at most [`MAX_CACHE_ENTRIES`] (the newest), and replaces the file atomically: a
//! temporary file (mode 0600) in the same directory, written, flushed to disk, renamed over the
//! old one. Like the token store's file (see [`private_file`]), a cache file
//! that other users may read or write is made 0600 at its first read, and one larger than
//! [`MAX_CACHE_FILE_SIZE`], not the JSON above or unreadable is renamed aside
//! (`mcp-needs-auth-cache.json.corrupt-<time>`) and the cache starts empty; both are reported as
//! a [`FileWarning`] in the cache's [`FileWarnings`] (its own, or one shared
//! with [`with_warnings`](NeedsAuthCache::with_warnings)). A cache file that is a symbolic link is
//! neither followed nor replaced: it reads as empty (reported once, as
//! [`FileProblem::Symlink`]) and writes fail with an error naming it.
//! Writes within
//! one process are serialized (clones of a cache share a lock); between processes the last
//! rename wins, which can only lose an entry, never corrupt the file.
//!
//! The file is small: its methods do blocking file I/O (call them from
//! `tokio::task::spawn_blocking` in async code when that matters). The clock is injectable
//! ([`NeedsAuthCache::with_clock`]) so tests need not wait 15 minutes.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use plexus_auth::NeedsAuthCache;
//!
//! let home = tempfile::tempdir().unwrap();
//! let cache = NeedsAuthCache::new(home.path());
//! assert!(cache.check("docs", "https://docs.example.com/mcp").is_none());
//!
//! cache.record("docs", "https://docs.example.com/mcp", Some("HTTP 401")).unwrap();
//! let entry = cache.check("docs", "https://docs.example.com/mcp").unwrap();
//! assert_eq!(entry.reason.as_deref(), Some("HTTP 401"));
//!
//! // A credential in the query is not written: the key shows a query as `?…`.
//! cache.record("wiki", "https://wiki.example.com/mcp?key=secret", None).unwrap();
//! assert!(cache.check("wiki", "https://wiki.example.com/mcp?key=rotated").is_some());
//! assert!(!std::fs::read_to_string(cache.path()).unwrap().contains("secret"));
//!
//! // Sixteen minutes later the entry has expired.
//! let later = SystemTime::now() + Duration::from_secs(16 * 60);
//! assert!(cache.clone().with_clock(move || later).check("docs", "https://docs.example.com/mcp").is_none());
//!
//! assert!(cache.clear("docs", "https://docs.example.com/mcp").unwrap());
//! assert!(cache.check("docs", "https://docs.example.com/mcp").is_none());
//! ```

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plexus_net::redact::redact_url;
use serde::{Deserialize, Serialize};

use crate::private_file::{self, FileFailure, FileProblem, FileWarning, FileWarnings, PrivateFile};
use crate::text::cut;

/// The cache file's name in the plexus home.
pub const NEEDS_AUTH_CACHE_FILE: &str = "mcp-needs-auth-cache.json";

/// How long an entry keeps a server in needs-auth (15 minutes).
pub const NEEDS_AUTH_TTL: Duration = Duration::from_secs(15 * 60);

/// The most entries the file keeps (the newest win).
pub const MAX_CACHE_ENTRIES: usize = 1000;

/// The largest cache file read, in bytes (1 MiB); a larger one is treated as corrupt.
pub const MAX_CACHE_FILE_SIZE: u64 = 1024 * 1024;

/// The longest reason kept, in characters; a longer one is cut and ends with `…`.
pub const MAX_REASON_CHARS: usize = 1000;

/// The clock a cache reads: the current time.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// The cache file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the needs-auth cache {}", .path.display())]
pub struct NeedsAuthError {
    /// The cache file.
    pub path: PathBuf,
    /// What failed.
    pub source: io::Error,
}

/// One server in needs-auth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsAuthEntry {
    /// The server's name.
    pub server: String,
    /// Its URL as the cache keys it (redacted: see the [module documentation](self)).
    pub url: String,
    /// When it was recorded, in milliseconds since the Unix epoch.
    pub recorded_at_ms: u64,
    /// Why, as the failed connect said.
    pub reason: Option<String>,
}

impl NeedsAuthEntry {
    /// When it was recorded.
    pub fn recorded_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.recorded_at_ms)
    }
}

/// The needs-auth cache file of one plexus home (see the [module documentation](self)). Clones
/// share the file and its in-process lock.
#[derive(Clone)]
pub struct NeedsAuthCache {
    path: PathBuf,
    ttl: Duration,
    clock: Clock,
    lock: Arc<Mutex<()>>,
    warnings: FileWarnings,
}

impl std::fmt::Debug for NeedsAuthCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NeedsAuthCache")
            .field("path", &self.path)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// One entry as the file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct StoredEntry {
    timestamp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// The file's content: server name → redacted URL → entry.
type Entries = BTreeMap<String, BTreeMap<String, StoredEntry>>;

/// The file as read.
struct Loaded {
    entries: Entries,
    /// The file exists but could not be used: the next write replaces it even if nothing changed.
    corrupt: bool,
    /// The file is a symbolic link: it is neither read nor written.
    symlink: bool,
}

impl Loaded {
    fn empty() -> Loaded {
        Loaded {
            entries: Entries::new(),
            corrupt: false,
            symlink: false,
        }
    }

    /// The entries to change, or the error of a cache that is a symbolic link.
    fn writable(self, path: &Path) -> Result<(Entries, bool), NeedsAuthError> {
        if self.symlink {
            return Err(NeedsAuthError {
                path: path.to_path_buf(),
                source: FileFailure::Symlink.into_io(),
            });
        }
        Ok((self.entries, self.corrupt))
    }
}

impl NeedsAuthCache {
    /// The cache of the plexus home `home`: `<home>/mcp-needs-auth-cache.json`.
    pub fn new(home: &Path) -> NeedsAuthCache {
        NeedsAuthCache::at(home.join(NEEDS_AUTH_CACHE_FILE))
    }

    /// The cache in the file `path`.
    pub fn at(path: impl Into<PathBuf>) -> NeedsAuthCache {
        NeedsAuthCache {
            path: path.into(),
            ttl: NEEDS_AUTH_TTL,
            clock: Arc::new(SystemTime::now),
            lock: Arc::new(Mutex::new(())),
            warnings: FileWarnings::new(),
        }
    }

    /// Puts this cache's warnings (a file set aside, a file made private) into `warnings`,
    /// shared with whoever shows them, instead of a collection of its own.
    #[must_use]
    pub fn with_warnings(mut self, warnings: FileWarnings) -> NeedsAuthCache {
        self.warnings = warnings;
        self
    }

    /// The warnings about the file (set aside, made private) since the last call (see
    /// [`FileWarnings::take`]).
    pub fn take_warnings(&self) -> Vec<FileWarning> {
        self.warnings.take()
    }

    /// Reads the time from `clock` instead of the system clock.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> NeedsAuthCache {
        self.clock = Arc::new(clock);
        self
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How long an entry stays fresh ([`NEEDS_AUTH_TTL`]).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The fresh entry of server `server` at `url`, if it is in needs-auth now.
    pub fn check(&self, server: &str, url: &str) -> Option<NeedsAuthEntry> {
        let _guard = self.lock();
        let now = self.now_ms();
        let loaded = self.load();
        let key = redact_url(url);
        let stored = loaded.entries.get(server)?.get(&key)?;
        self.is_fresh(stored, now).then(|| NeedsAuthEntry {
            server: server.to_owned(),
            url: key,
            recorded_at_ms: stored.timestamp,
            reason: stored.reason.clone(),
        })
    }

    /// How long until `entry` expires (zero when it has).
    pub fn expires_in(&self, entry: &NeedsAuthEntry) -> Duration {
        let end = u128::from(entry.recorded_at_ms) + self.ttl.as_millis();
        let left = end.saturating_sub(u128::from(self.now_ms()));
        Duration::from_millis(u64::try_from(left).unwrap_or(u64::MAX))
    }

    /// Every fresh entry, by server name then URL.
    pub fn entries(&self) -> Vec<NeedsAuthEntry> {
        let _guard = self.lock();
        let now = self.now_ms();
        let loaded = self.load();
        let mut list = Vec::new();
        for (server, urls) in loaded.entries {
            for (url, stored) in urls {
                if self.is_fresh(&stored, now) {
                    list.push(NeedsAuthEntry {
                        server: server.clone(),
                        url,
                        recorded_at_ms: stored.timestamp,
                        reason: stored.reason,
                    });
                }
            }
        }
        list
    }

    /// Records that server `server` at `url` needs authentication, now, and why.
    pub fn record(&self, server: &str, url: &str, reason: Option<&str>) -> Result<(), NeedsAuthError> {
        let _guard = self.lock();
        let now = self.now_ms();
        let (mut entries, _) = self.load().writable(&self.path)?;
        entries.entry(server.to_owned()).or_default().insert(
            redact_url(url),
            StoredEntry {
                timestamp: now,
                reason: reason.map(|reason| cut(reason, MAX_REASON_CHARS)),
            },
        );
        self.store(entries, now)
    }

    /// Removes the entry of server `server` at `url`; says whether there was one (fresh or not).
    pub fn clear(&self, server: &str, url: &str) -> Result<bool, NeedsAuthError> {
        let _guard = self.lock();
        let (mut entries, corrupt) = self.load().writable(&self.path)?;
        let key = redact_url(url);
        let removed = match entries.get_mut(server) {
            Some(urls) => {
                let removed = urls.remove(&key).is_some();
                if urls.is_empty() {
                    entries.remove(server);
                }
                removed
            }
            None => false,
        };
        if removed || corrupt {
            self.store(entries, self.now_ms())?;
        }
        Ok(removed)
    }

    /// Removes every entry of server `server` (whatever its URL), as a login does; says how many
    /// there were.
    pub fn clear_server(&self, server: &str) -> Result<usize, NeedsAuthError> {
        let _guard = self.lock();
        let (mut entries, corrupt) = self.load().writable(&self.path)?;
        let removed = entries.remove(server).map_or(0, |urls| urls.len());
        if removed > 0 || corrupt {
            self.store(entries, self.now_ms())?;
        }
        Ok(removed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        // The lock guards no data: a panic while it was held leaves nothing inconsistent.
        self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now_ms(&self) -> u64 {
        let since = (self.clock)().duration_since(UNIX_EPOCH).unwrap_or_default();
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }

    fn is_fresh(&self, entry: &StoredEntry, now_ms: u64) -> bool {
        entry.timestamp <= now_ms && u128::from(now_ms - entry.timestamp) < self.ttl.as_millis()
    }

    /// Reads the file; a missing one is empty; a bad one is set aside (reported), empty and
    /// corrupt; a symbolic link is neither followed nor moved (reported), and empty.
    fn load(&self) -> Loaded {
        let corrupt = |why: String| {
            private_file::set_aside(&self.path, PrivateFile::NeedsAuthCache, why, &self.warnings);
            Loaded {
                corrupt: true,
                ..Loaded::empty()
            }
        };
        let handle = match private_file::open(&self.path, PrivateFile::NeedsAuthCache, &self.warnings) {
            Ok(Some(handle)) => handle,
            Ok(None) => return Loaded::empty(),
            Err(FileFailure::Symlink) => {
                self.warnings.report(FileWarning {
                    file: PrivateFile::NeedsAuthCache,
                    path: self.path.clone(),
                    problem: FileProblem::Symlink,
                });
                return Loaded {
                    symlink: true,
                    ..Loaded::empty()
                };
            }
            Err(failure) => return corrupt(failure.into_io().to_string()),
        };
        match private_file::read_bounded(handle, MAX_CACHE_FILE_SIZE) {
            Err(e) => corrupt(e.to_string()),
            Ok(None) => corrupt(format!("it is larger than {MAX_CACHE_FILE_SIZE} bytes")),
            Ok(Some(text)) => match serde_json::from_slice(&text) {
                Ok(entries) => Loaded {
                    entries,
                    ..Loaded::empty()
                },
                Err(e) => corrupt(format!("not a needs-auth cache: {e}")),
            },
        }
    }

    /// Drops what is not fresh, keeps the newest [`MAX_CACHE_ENTRIES`], and replaces the file.
    fn store(&self, mut entries: Entries, now_ms: u64) -> Result<(), NeedsAuthError> {
        for urls in entries.values_mut() {
            urls.retain(|_, entry| self.is_fresh(entry, now_ms));
        }
        entries.retain(|_, urls| !urls.is_empty());
        let count: usize = entries.values().map(BTreeMap::len).sum();
        if count > MAX_CACHE_ENTRIES {
            let mut all: Vec<(String, String, StoredEntry)> = std::mem::take(&mut entries)
                .into_iter()
                .flat_map(|(server, urls)| urls.into_iter().map(move |(url, entry)| (server.clone(), url, entry)))
                .collect();
            // The newest first (a stable sort: among equal times, the file's order).
            all.sort_by_key(|(_, _, entry)| std::cmp::Reverse(entry.timestamp));
            all.truncate(MAX_CACHE_ENTRIES);
            for (server, url, entry) in all {
                entries.entry(server).or_default().insert(url, entry);
            }
        }
        self.write_atomically(&entries).map_err(|source| NeedsAuthError {
            path: self.path.clone(),
            source,
        })
    }

    fn write_atomically(&self, entries: &Entries) -> io::Result<()> {
        let mut text = serde_json::to_vec_pretty(entries).map_err(io::Error::other)?;
        text.push(b'\n');
        private_file::write_atomically(&self.path, &text, ".mcp-needs-auth-cache.").map_err(FileFailure::into_io)
    }
}
