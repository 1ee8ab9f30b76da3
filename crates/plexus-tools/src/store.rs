//! Where persisted tool output goes: `<home>/tool-results/<session>/`, the directory 0700 and
//! every file 0600 with a name of its own, and old sessions cleaned up with bounded work. A
//! symbolic link where the store keeps its directories or files is refused
//! ([`SymlinkRefused`]), never followed: output is never written, nor a session removed, through
//! one.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use plexus_config::{SymlinkRefused, open_no_follow, refuse_symlink};

use crate::naming::normalize_name;

/// The directory of persisted tool output in the plexus home.
pub const RESULTS_DIR: &str = "tool-results";
/// Sessions older than this are removed by [`ResultStore::remove_old_sessions`]: 7 days.
pub const KEEP_FOR: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// The most entries one clean-up looks at (the rest waits for the next start-up).
pub const MAX_CLEANUP_ENTRIES: usize = 10_000;

/// One session's store of persisted tool output.
#[derive(Debug)]
pub struct ResultStore {
    dir: PathBuf,
    next: AtomicU64,
    /// The bytes written so far, against [`ResultStore::max_bytes`].
    written: AtomicU64,
    max_bytes: u64,
}

/// The most bytes one session's files may hold (1 GiB); a file past it is not written.
pub const MAX_SESSION_BYTES: u64 = 1024 * 1024 * 1024;

/// Why output could not be persisted.
#[derive(Debug, thiserror::Error)]
#[error("cannot write tool output to {}", .path.display())]
pub struct ResultStoreError {
    /// The file or directory.
    pub path: PathBuf,
    /// What failed.
    #[source]
    pub source: io::Error,
}

impl ResultStore {
    /// The store of `session` (letters, digits, `-` and `_`; anything else becomes `_`) in
    /// `<home>/tool-results/`. Nothing is created before the first file.
    pub fn new(home: &Path, session: &str) -> ResultStore {
        let session = normalize_name(session);
        ResultStore {
            dir: home
                .join(RESULTS_DIR)
                .join(if session.is_empty() { "session".into() } else { session }),
            next: AtomicU64::new(0),
            written: AtomicU64::new(0),
            max_bytes: MAX_SESSION_BYTES,
        }
    }

    /// The same store with another limit of bytes for the session's files.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: u64) -> ResultStore {
        self.max_bytes = max_bytes;
        self
    }

    /// A session name that no other process of this machine uses now: the time and the PID.
    pub fn session_name() -> String {
        let since = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        format!("{}-{}", since.as_millis(), std::process::id())
    }

    /// The session's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` to a new file `<stem>-<n>.<extension>` (mode 0600, never overwriting) in
    /// the session's directory (created 0700), and returns its path. Past the session's limit of
    /// bytes ([`MAX_SESSION_BYTES`] unless [`with_max_bytes`](Self::with_max_bytes)), nothing
    /// is written: the error's kind is `QuotaExceeded`.
    pub fn save(&self, stem: &str, extension: &str, bytes: &[u8]) -> Result<PathBuf, ResultStoreError> {
        let failed = |path: &Path| {
            let path = path.to_owned();
            move |source| ResultStoreError { path, source }
        };
        let size = bytes.len() as u64;
        let before = self.written.fetch_add(size, Ordering::Relaxed);
        if before.saturating_add(size) > self.max_bytes {
            self.written.fetch_sub(size, Ordering::Relaxed);
            let full = io::Error::new(
                io::ErrorKind::QuotaExceeded,
                format!("the session's files may hold at most {} bytes", self.max_bytes),
            );
            return Err(failed(&self.dir)(full));
        }
        let written = self.write_new(stem, extension, bytes);
        if written.is_err() {
            // Nothing (whole) was written: the bytes do not count against the session.
            self.written.fetch_sub(size, Ordering::Relaxed);
        }
        written
    }

    /// Writes `bytes` to a new file of the session's directory (see [`save`](Self::save)); a
    /// file that could not be written whole is removed.
    fn write_new(&self, stem: &str, extension: &str, bytes: &[u8]) -> Result<PathBuf, ResultStoreError> {
        let failed = |path: &Path| {
            let path = path.to_owned();
            move |source| ResultStoreError { path, source }
        };
        // `tool-results` and the session's directory are the store's own (the home may be a link:
        // where it lives is the user's choice).
        for dir in self.dir.parent().into_iter().chain([self.dir.as_path()]) {
            refuse_symlink(dir).map_err(failed(dir))?;
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(failed(dir))?;
        }
        let stem: String = normalize_name(stem).chars().take(40).collect();
        loop {
            let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
            let path = self.dir.join(format!("{stem}-{n}.{extension}"));
            match open_no_follow(OpenOptions::new().write(true).create_new(true).mode(0o600), &path) {
                Ok(mut file) => {
                    if let Err(e) = file.write_all(bytes) {
                        drop(file);
                        let _ = fs::remove_file(&path);
                        return Err(failed(&path)(e));
                    }
                    return Ok(path);
                }
                // Left by an earlier store of the same session name: take the next number; but a
                // link where a file of the store belongs is said, not stepped around.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    refuse_symlink(&path).map_err(failed(&path))?;
                }
                Err(e) => return Err(failed(&path)(e)),
            }
        }
    }

    /// Removes the sessions in `<home>/tool-results/` last changed more than `age` ago,
    /// looking at no more than [`MAX_CLEANUP_ENTRIES`] entries; returns how many it removed.
    /// Failures are skipped (another process may be cleaning up too). Nothing is removed through a
    /// symbolic link: when `tool-results` is one, nothing is looked at (with a warning), and a
    /// link among the sessions is removed itself, never what it points to.
    pub fn remove_old_sessions(home: &Path, age: Duration) -> usize {
        let results = home.join(RESULTS_DIR);
        if let Err(error) = refuse_symlink(&results) {
            if SymlinkRefused::is(&error) {
                tracing::warn!(dir = %results.display(), "old tool output is not cleaned up: {error}");
            }
            return 0;
        }
        let Ok(entries) = fs::read_dir(&results) else {
            return 0;
        };
        let now = SystemTime::now();
        let mut removed = 0;
        for entry in entries.flatten().take(MAX_CLEANUP_ENTRIES) {
            let old = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|elapsed| elapsed > age);
            if old && fs::remove_dir_all(entry.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_sessions_bytes_are_bounded_and_a_failed_write_does_not_count() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "s").with_max_bytes(4);
        store.save("a", "bin", b"abc").unwrap();
        let full = store.save("b", "bin", b"de").unwrap_err();
        assert_eq!(full.source.kind(), io::ErrorKind::QuotaExceeded);
        // A directory that cannot be made (a file stands in its place) writes nothing...
        let blocked = ResultStore::new(&home.path().join("file"), "s").with_max_bytes(4);
        fs::write(home.path().join("file"), b"").unwrap();
        assert_eq!(
            blocked.save("a", "bin", b"abc").unwrap_err().source.kind(),
            io::ErrorKind::NotADirectory
        );
        // ...and leaves its bytes to the next one.
        fs::remove_file(home.path().join("file")).unwrap();
        blocked.save("a", "bin", b"abcd").unwrap();
        assert_eq!(store.save("c", "bin", b"d").unwrap().extension().unwrap(), "bin");
    }

    #[test]
    fn files_are_private_unique_and_never_overwritten() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "s/1");
        let a = store.save("out", "txt", b"one").unwrap();
        let b = store.save("out", "txt", b"two").unwrap();
        assert_ne!(a, b);
        assert_eq!(fs::read(&a).unwrap(), b"one");
        assert_eq!(store.dir(), home.path().join("tool-results/s_1"));
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(store.dir()), mode(&a)), (0o700, 0o600));
        // A second store of the same session does not overwrite the first one's files.
        let again = ResultStore::new(home.path(), "s/1");
        let c = again.save("out", "txt", b"three").unwrap();
        assert!(c != a && c != b);
        assert_eq!(fs::read(&a).unwrap(), b"one");
    }

    #[test]
    fn links_where_the_store_keeps_its_files_are_refused() {
        let home = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let refused = |error: ResultStoreError, path: &Path| {
            assert_eq!(error.path, path);
            assert!(SymlinkRefused::is(&error.source), "{}", error.source);
        };
        // The session's directory is a link: nothing is written where it points.
        let store = ResultStore::new(home.path(), "s");
        fs::create_dir_all(home.path().join(RESULTS_DIR)).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), store.dir()).unwrap();
        refused(store.save("a", "bin", b"x").unwrap_err(), store.dir());
        // So is `tool-results` itself.
        let home2 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), home2.path().join(RESULTS_DIR)).unwrap();
        let store2 = ResultStore::new(home2.path(), "s");
        refused(
            store2.save("a", "bin", b"x").unwrap_err(),
            &home2.path().join(RESULTS_DIR),
        );
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        // A link where the next file goes is said, not followed nor stepped around.
        let home3 = tempfile::tempdir().unwrap();
        let store3 = ResultStore::new(home3.path(), "s");
        store3.save("out", "txt", b"one").unwrap();
        let target = elsewhere.path().join("target");
        std::os::unix::fs::symlink(&target, store3.dir().join("out-2.txt")).unwrap();
        refused(
            store3.save("out", "txt", b"two").unwrap_err(),
            &store3.dir().join("out-2.txt"),
        );
        assert!(!target.exists());
        // Clean-up never goes through `tool-results` when it is a link.
        fs::create_dir(elsewhere.path().join("old-session")).unwrap();
        assert_eq!(ResultStore::remove_old_sessions(home2.path(), Duration::ZERO), 0);
        assert!(elsewhere.path().join("old-session").exists());
    }

    #[test]
    fn old_sessions_go_and_recent_ones_stay() {
        let home = tempfile::tempdir().unwrap();
        ResultStore::new(home.path(), "old").save("x", "txt", b"x").unwrap();
        ResultStore::new(home.path(), "new").save("x", "txt", b"x").unwrap();
        assert_eq!(ResultStore::remove_old_sessions(home.path(), KEEP_FOR), 0);
        assert_eq!(ResultStore::remove_old_sessions(home.path(), Duration::ZERO), 2);
        assert!(!home.path().join("tool-results/old").exists());
    }
}
