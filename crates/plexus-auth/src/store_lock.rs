//! The token store's lock: a sibling file (`credentials.json.lock`, mode 0600, never a symbolic
//! link) held with an advisory exclusive lock (`flock` on Unix, `LockFileEx` on Windows, through
//! `fs4`) for every change of the store and for a whole token refresh, so that plexus processes
//! sharing a home take turns. Within one process, a mutex per store path comes first, so that the
//! tasks of one process queue there instead of polling the file.
//!
//! Waiting is bounded: the file lock is polled (a non-blocking try, then a short sleep, on the
//! blocking pool, never on the runtime's threads) until the store's lock timeout. The lock is
//! released when the open file is closed (the guard is dropped, or the process exits, even by a
//! crash); the file itself stays, since removing a lock file lets two processes lock two different
//! files of the same name.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::OwnedMutexGuard;

use crate::private_file::{self, FileFailure};
use crate::store::TokenStoreError;

/// The lock file's name is the store's with this appended (`credentials.json.lock`).
pub const LOCK_FILE_SUFFIX: &str = ".lock";

/// How long a store operation waits for the lock by default: longer than a token request (whose
/// own timeout is 30 s by default) that another process makes while it holds the lock.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest pause between two tries of the file lock.
const MAX_POLL_PAUSE: Duration = Duration::from_millis(50);

/// The in-process lock of one store path.
pub(crate) type PathLock = Arc<tokio::sync::Mutex<()>>;

/// One lock per store path in this process (every store of the same path shares it).
pub(crate) fn path_lock(path: &Path) -> PathLock {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, PathLock>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    locks.entry(path.to_path_buf()).or_default().clone()
}

/// The lock file of the store at `store`.
pub(crate) fn lock_file_path(store: &Path) -> PathBuf {
    let mut name = store.file_name().map(ToOwned::to_owned).unwrap_or_default();
    name.push(LOCK_FILE_SUFFIX);
    store.with_file_name(name)
}

/// The store's lock, held: in this process and in the file. Dropping it releases both.
#[derive(Debug)]
pub(crate) struct Held {
    _file: fs::File,
    _in_process: OwnedMutexGuard<()>,
}

/// Takes the in-process lock, then the file lock at `lock_path`, within `timeout` in all.
pub(crate) async fn acquire(
    in_process: PathLock,
    lock_path: PathBuf,
    timeout: Duration,
) -> Result<Held, TokenStoreError> {
    let started = Instant::now();
    let timed_out = |lock: PathBuf| TokenStoreError::LockTimeout { lock, waited: timeout };
    let guard = tokio::time::timeout(timeout, in_process.lock_owned())
        .await
        .map_err(|_| timed_out(lock_path.clone()))?;
    let left = timeout.saturating_sub(started.elapsed());
    let worker_path = lock_path.clone();
    let file = tokio::task::spawn_blocking(move || lock_file(&worker_path, left, timeout))
        .await
        .map_err(|source| TokenStoreError::Worker {
            path: lock_path,
            source,
        })??;
    Ok(Held {
        _file: file,
        _in_process: guard,
    })
}

/// Opens (creating it 0600, and its directory 0700) and locks the lock file, polling for at
/// most `left`; `timeout` is the whole wait, as the error says.
fn lock_file(path: &Path, left: Duration, timeout: Duration) -> Result<fs::File, TokenStoreError> {
    let failed = |failure: FileFailure| TokenStoreError::of(path, failure);
    private_file::create_private_dir(private_file::parent_dir(path)).map_err(|source| TokenStoreError::Io {
        path: path.to_path_buf(),
        what: "cannot create the directory",
        source,
    })?;
    private_file::refuse_symlink(path).map_err(failed)?;
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = private_file::no_follow(&mut options)
        .open(path)
        .map_err(|e| failed(private_file::open_failure("cannot open the lock file", e)))?;
    let deadline = Instant::now() + left;
    let mut pause = Duration::from_millis(2);
    loop {
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => return Ok(file),
            Err(fs4::TryLockError::WouldBlock) => {}
            Err(fs4::TryLockError::Error(source)) => {
                return Err(TokenStoreError::Io {
                    path: path.to_path_buf(),
                    what: "cannot lock",
                    source,
                });
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(TokenStoreError::LockTimeout {
                lock: path.to_path_buf(),
                waited: timeout,
            });
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(MAX_POLL_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_file_is_the_stores_name_with_lock_appended() {
        assert_eq!(
            lock_file_path(Path::new("/h/credentials.json")),
            Path::new("/h/credentials.json.lock")
        );
        assert_eq!(lock_file_path(Path::new("c.json")), Path::new("c.json.lock"));
    }

    #[tokio::test]
    async fn a_held_lock_makes_the_next_wait_time_out_and_its_release_lets_it_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json.lock");
        // Two in-process locks of their own: only the file lock is between them, as between
        // two processes.
        let held = acquire(PathLock::default(), path.clone(), Duration::from_secs(5))
            .await
            .unwrap();
        let err = acquire(PathLock::default(), path.clone(), Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "token store {}: timed out after 200 ms waiting for the lock (another plexus process or task holds it)",
                path.display()
            )
        );
        drop(held);
        acquire(PathLock::default(), path.clone(), Duration::from_secs(5))
            .await
            .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
