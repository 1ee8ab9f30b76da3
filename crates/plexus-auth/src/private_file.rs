//! The plexus home's private files, the token store (`credentials.json`) and the needs-auth cache
//! (`mcp-needs-auth-cache.json`): how they are read and written, and what is reported when one
//! needed repair.
//!
//! Reading a file first checks its permissions (on Unix): a file that the group or other users may
//! read or write is made 0600, and reported. A file that cannot be used (not JSON, the wrong shape
//! or version, too large, unreadable) is renamed aside (`<name>.corrupt-<unix seconds>`), reported,
//! and its reader starts from empty: a broken file costs its contents, never a crash. Writing is
//! atomic: a temporary file (mode 0600) in the same directory, flushed to disk, renamed over the
//! old one, and the directory flushed. A file that is a symbolic link is neither read through
//! (`O_NOFOLLOW` backs the check) nor replaced nor moved aside: the token store fails with an
//! error naming it, the needs-auth cache reports it ([`FileProblem::Symlink`]) and goes on
//! without it.
//!
//! What was reported is data ([`FileWarning`]), collected in a [`FileWarnings`] that the store and
//! the cache share with whoever shows them (the facade's connector; the CLI prints each as a
//! `plexus: …` line on stderr). Each distinct warning is kept once, and also logged with `tracing`.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use plexus_auth::{FileProblem, FileWarnings, NeedsAuthCache};
//!
//! let home = tempfile::tempdir()?;
//! std::fs::write(home.path().join("mcp-needs-auth-cache.json"), "{not json")?;
//! let warnings = FileWarnings::new();
//! let cache = NeedsAuthCache::new(home.path()).with_warnings(warnings.clone());
//! assert!(cache.entries().is_empty());
//! // Set aside (and, on Unix, first made private: `fs::write` left it readable by others).
//! let taken = warnings.take();
//! let unreadable = taken.last().unwrap();
//! assert!(matches!(unreadable.problem, FileProblem::Unreadable { set_aside: Some(_), .. }));
//! assert!(unreadable.to_string().starts_with("the needs-auth cache "));
//! for warning in &taken {
//!     eprintln!("plexus: {warning}");
//! }
//! assert!(warnings.take().is_empty(), "each warning is taken once");
//! # Ok(()) }
//! ```

use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::store::unix_now;

/// Which of plexus's private files a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrivateFile {
    /// The OAuth token store, `<home>/credentials.json`.
    Credentials,
    /// The needs-auth cache, `<home>/mcp-needs-auth-cache.json`.
    NeedsAuthCache,
}

impl PrivateFile {
    /// `the credentials file`, `the needs-auth cache`.
    pub fn describe(self) -> &'static str {
        match self {
            PrivateFile::Credentials => "the credentials file",
            PrivateFile::NeedsAuthCache => "the needs-auth cache",
        }
    }

    /// What plexus does while the file is a symbolic link.
    fn without_it(self) -> &'static str {
        match self {
            PrivateFile::Credentials => "no tokens are read from it or saved in it until it is a regular file",
            PrivateFile::NeedsAuthCache => "servers are not remembered as needing a login until it is a regular file",
        }
    }

    fn starts_empty(self) -> &'static str {
        match self {
            PrivateFile::Credentials => "the store starts empty",
            PrivateFile::NeedsAuthCache => "the cache starts empty",
        }
    }
}

/// What was wrong with a file, and what was done about it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FileProblem {
    /// It could not be used: set aside, and its reader started from empty.
    Unreadable {
        /// Why (not JSON, with line and column; the wrong version; too large; the I/O error).
        reason: String,
        /// Where it was moved; `None` when even the rename failed (the next write replaces it).
        set_aside: Option<PathBuf>,
    },
    /// It is a symbolic link: plexus neither follows nor replaces one, and went on without the
    /// file.
    Symlink,
    /// The group or other users could read or write it (Unix).
    OpenToOthers {
        /// Its permission bits as found (`0o644`).
        mode: u32,
        /// Why it could not be made 0600; `None` when it was.
        repair_failed: Option<String>,
    },
}

/// One warning about one of plexus's private files. Never fatal: the file was repaired or set
/// aside, and plexus went on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileWarning {
    /// Which file.
    pub file: PrivateFile,
    /// Its path.
    pub path: PathBuf,
    /// What was wrong and what was done.
    pub problem: FileProblem,
}

impl fmt::Display for FileWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, path) = (self.file.describe(), self.path.display());
        match &self.problem {
            FileProblem::Unreadable { reason, set_aside } => {
                write!(f, "{what} {path} is unreadable ({reason})")?;
                match set_aside {
                    Some(to) => write!(f, "; it was moved to {} and {}", to.display(), self.file.starts_empty()),
                    None => f.write_str("; it could not be moved aside and will be replaced"),
                }
            }
            FileProblem::Symlink => write!(
                f,
                "{what} {path} is a symbolic link, which plexus neither follows nor replaces; {}",
                self.file.without_it()
            ),
            FileProblem::OpenToOthers { mode, repair_failed } => {
                let access = if mode & 0o044 != 0 { "readable" } else { "writable" };
                match repair_failed {
                    None => write!(
                        f,
                        "{what} {path} was {access} by other users (mode {mode:04o}); made it 0600"
                    ),
                    Some(why) => write!(
                        f,
                        "{what} {path} is {access} by other users (mode {mode:04o}) and could not be made 0600: {why}"
                    ),
                }
            }
        }
    }
}

/// Where the token store and the needs-auth cache put their [`FileWarning`]s. Clones share the
/// collection; each distinct warning is kept once (a file that cannot even be renamed aside is
/// reported at its first read, not at every read).
#[derive(Debug, Clone, Default)]
pub struct FileWarnings {
    collected: Arc<Mutex<Collected>>,
}

#[derive(Debug, Default)]
struct Collected {
    seen: HashSet<FileWarning>,
    pending: Vec<FileWarning>,
}

impl FileWarnings {
    /// An empty collection.
    pub fn new() -> Self {
        FileWarnings::default()
    }

    /// Keeps `warning` (and logs it) unless an equal one was kept before.
    pub(crate) fn report(&self, warning: FileWarning) {
        let mut collected = self.collected.lock().unwrap_or_else(PoisonError::into_inner);
        if collected.seen.insert(warning.clone()) {
            tracing::warn!(path = %warning.path.display(), "{warning}");
            collected.pending.push(warning);
        }
    }

    /// The warnings kept since the last call, in the order they happened.
    pub fn take(&self) -> Vec<FileWarning> {
        std::mem::take(&mut self.collected.lock().unwrap_or_else(PoisonError::into_inner).pending)
    }
}

/// Why one of the private files could not be opened, locked or written.
#[derive(Debug)]
pub(crate) enum FileFailure {
    /// The path is a symbolic link: plexus neither follows nor replaces one.
    Symlink,
    /// A step failed.
    Io {
        /// What was being done (`cannot open`, `cannot replace`, …).
        what: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
}

impl FileFailure {
    fn io(what: &'static str) -> impl FnOnce(io::Error) -> FileFailure {
        move |source| FileFailure::Io { what, source }
    }

    /// The failure as one I/O error (the symbolic link as `InvalidInput` saying so).
    pub(crate) fn into_io(self) -> io::Error {
        match self {
            FileFailure::Symlink => io::Error::new(io::ErrorKind::InvalidInput, SYMLINK_REFUSED),
            FileFailure::Io { source, .. } => source,
        }
    }
}

/// Why a symbolic link is refused.
pub(crate) const SYMLINK_REFUSED: &str = "it is a symbolic link, which plexus neither follows nor replaces";

/// Fails with [`FileFailure::Symlink`] when `path` is a symbolic link (a missing path is fine).
pub(crate) fn refuse_symlink(path: &Path) -> Result<(), FileFailure> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(FileFailure::Symlink),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(FileFailure::Io {
            what: "cannot inspect",
            source: e,
        }),
    }
}

/// Options that never follow a symbolic link in the last component of the path (`O_NOFOLLOW`):
/// one put there between [`refuse_symlink`] and the open makes the open fail.
pub(crate) fn no_follow(options: &mut fs::OpenOptions) -> &mut fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::libc::O_NOFOLLOW);
    }
    options
}

/// An open that failed because of `O_NOFOLLOW` is a symbolic link.
pub(crate) fn open_failure(what: &'static str, e: io::Error) -> FileFailure {
    #[cfg(unix)]
    if e.raw_os_error() == Some(nix::libc::ELOOP) {
        return FileFailure::Symlink;
    }
    FileFailure::io(what)(e)
}

/// Opens `path` to read it; `Ok(None)` when it does not exist; a symbolic link is refused, never
/// followed. On Unix, a file that the group or others may read or write is made 0600 first, and
/// reported.
pub(crate) fn open(path: &Path, file: PrivateFile, warnings: &FileWarnings) -> Result<Option<fs::File>, FileFailure> {
    refuse_symlink(path)?;
    let handle = match no_follow(fs::OpenOptions::new().read(true)).open(path) {
        Ok(handle) => handle,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(open_failure("cannot open", e)),
    };
    make_private(&handle, path, file, warnings);
    Ok(Some(handle))
}

#[cfg(unix)]
fn make_private(handle: &fs::File, path: &Path, file: PrivateFile, warnings: &FileWarnings) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(metadata) = handle.metadata() else {
        return;
    };
    let mode = metadata.permissions().mode() & 0o7777;
    let group_and_others = mode & 0o077;
    if group_and_others == 0 {
        return;
    }
    let repair_failed = handle
        .set_permissions(fs::Permissions::from_mode(0o600))
        .err()
        .map(|e| e.to_string());
    warnings.report(FileWarning {
        file,
        path: path.to_path_buf(),
        problem: FileProblem::OpenToOthers { mode, repair_failed },
    });
}

#[cfg(not(unix))]
fn make_private(_: &fs::File, _: &Path, _: PrivateFile, _: &FileWarnings) {}

/// Reads at most `max` bytes of `handle`; `Ok(None)` when it holds more.
pub(crate) fn read_bounded(handle: fs::File, max: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    handle.take(max + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// Renames the unusable `path` aside (`<name>.corrupt-<unix seconds>`, with a counter when that
/// is taken) and reports it with `reason`.
pub(crate) fn set_aside(path: &Path, file: PrivateFile, reason: String, warnings: &FileWarnings) {
    let aside = set_aside_path(path);
    let set_aside = fs::rename(path, &aside).ok().map(|()| aside);
    warnings.report(FileWarning {
        file,
        path: path.to_path_buf(),
        problem: FileProblem::Unreadable { reason, set_aside },
    });
}

fn set_aside_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let stamp = unix_now();
    let mut candidate = path.with_file_name(format!("{name}.corrupt-{stamp}"));
    let mut counter = 1;
    while candidate.exists() && counter < 1000 {
        candidate = path.with_file_name(format!("{name}.corrupt-{stamp}-{counter}"));
        counter += 1;
    }
    candidate
}

/// Writes `bytes` to `path` atomically: a private temporary file (`<temp_prefix>….tmp`, mode
/// 0600) in the same directory (created 0700 when missing), flushed, renamed over the old file,
/// and the directory flushed. A symbolic link at `path` is refused, not replaced.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], temp_prefix: &str) -> Result<(), FileFailure> {
    let dir = parent_dir(path);
    create_private_dir(dir).map_err(FileFailure::io("cannot create the directory"))?;
    refuse_symlink(path)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(temp_prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o600));
    }
    let mut temp = builder
        .tempfile_in(dir)
        .map_err(FileFailure::io("cannot create a temporary file"))?;
    temp.write_all(bytes).map_err(FileFailure::io("cannot write"))?;
    temp.as_file().sync_all().map_err(FileFailure::io("cannot flush"))?;
    temp.persist(path)
        .map_err(|e| FileFailure::io("cannot replace")(e.error))?;
    // The rename itself reaches the disk with the directory (not possible on every platform).
    if let Ok(handle) = fs::File::open(dir) {
        let _ = handle.sync_all();
    }
    Ok(())
}

/// The directory of `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Creates `dir` and its missing parents, private (0700) on Unix.
#[cfg(unix)]
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unreadable(set_aside: Option<&str>) -> FileWarning {
        FileWarning {
            file: PrivateFile::Credentials,
            path: "/h/credentials.json".into(),
            problem: FileProblem::Unreadable {
                reason: "not a credentials file: EOF".into(),
                set_aside: set_aside.map(PathBuf::from),
            },
        }
    }

    #[test]
    fn warnings_say_which_file_where_and_what_was_done() {
        assert_eq!(
            unreadable(Some("/h/credentials.json.corrupt-1")).to_string(),
            "the credentials file /h/credentials.json is unreadable (not a credentials file: EOF); it was moved to \
             /h/credentials.json.corrupt-1 and the store starts empty"
        );
        assert_eq!(
            unreadable(None).to_string(),
            "the credentials file /h/credentials.json is unreadable (not a credentials file: EOF); it could not be \
             moved aside and will be replaced"
        );
        let open = |mode, repair_failed: Option<&str>| FileWarning {
            file: PrivateFile::NeedsAuthCache,
            path: "/h/mcp-needs-auth-cache.json".into(),
            problem: FileProblem::OpenToOthers {
                mode,
                repair_failed: repair_failed.map(str::to_owned),
            },
        };
        assert_eq!(
            open(0o644, None).to_string(),
            "the needs-auth cache /h/mcp-needs-auth-cache.json was readable by other users (mode 0644); made it 0600"
        );
        assert_eq!(
            open(0o620, Some("Operation not permitted (os error 1)")).to_string(),
            "the needs-auth cache /h/mcp-needs-auth-cache.json is writable by other users (mode 0620) and could not \
             be made 0600: Operation not permitted (os error 1)"
        );
    }

    #[test]
    fn each_warning_is_kept_once_and_taken_once() {
        let warnings = FileWarnings::new();
        let shared = warnings.clone();
        warnings.report(unreadable(None));
        shared.report(unreadable(None));
        warnings.report(unreadable(Some("/h/credentials.json.corrupt-2")));
        assert_eq!(
            shared.take(),
            [unreadable(None), unreadable(Some("/h/credentials.json.corrupt-2"))]
        );
        assert!(warnings.take().is_empty());
        warnings.report(unreadable(None));
        assert!(warnings.take().is_empty(), "already reported");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_open_to_others_is_made_private_once() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        fs::write(&path, "{}").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let warnings = FileWarnings::new();
        assert!(open(&path, PrivateFile::Credentials, &warnings).unwrap().is_some());
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            warnings.take(),
            [FileWarning {
                file: PrivateFile::Credentials,
                path: path.clone(),
                problem: FileProblem::OpenToOthers {
                    mode: 0o644,
                    repair_failed: None
                },
            }]
        );
        assert!(open(&path, PrivateFile::Credentials, &warnings).unwrap().is_some());
        assert!(warnings.take().is_empty(), "a private file is not reported");
        assert!(
            open(&dir.path().join("missing"), PrivateFile::Credentials, &warnings)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn an_atomic_write_leaves_only_the_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home").join("cache.json");
        write_atomically(&path, b"{}\n", ".cache-").unwrap();
        write_atomically(&path, b"[]\n", ".cache-").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"[]\n");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["cache.json"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(
                fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
    }
}
