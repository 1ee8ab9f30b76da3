//! The files plexus keeps in its home are never reached through a symbolic link: a link there
//! (left by another program, or planted) could make plexus read someone else's file as its own, or
//! write over a file it does not own. Such a path is refused with [`SymlinkRefused`], never followed
//! and never silently replaced.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;

/// Why plexus refused a path: it is a symbolic link where plexus keeps its own files. Carried as
/// the inner error of an [`io::Error`] (see [`SymlinkRefused::is`]); the error that wraps it names
/// the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "it is a symbolic link, and plexus neither follows nor replaces a link where it keeps its own files; remove the \
     link"
)]
pub struct SymlinkRefused;

impl SymlinkRefused {
    /// The [`io::Error`] that says so.
    pub fn error() -> io::Error {
        io::Error::other(SymlinkRefused)
    }

    /// Whether `error` is one [`SymlinkRefused::error`] made.
    pub fn is(error: &io::Error) -> bool {
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<SymlinkRefused>())
            .is_some()
    }
}

/// Fails with [`SymlinkRefused`] if `path` is a symbolic link (a missing path is fine, and so is
/// anything else: a file, a directory).
pub fn refuse_symlink(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(SymlinkRefused::error()),
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}

/// Opens `path` with `options` and `O_NOFOLLOW`: a symbolic link there fails with
/// [`SymlinkRefused`] instead of being followed.
pub fn open_no_follow(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    options
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(|error| {
            if error.raw_os_error() == Some(Errno::ELOOP as i32) {
                SymlinkRefused::error()
            } else {
                error
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_refused_and_everything_else_passes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, "mine").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();

        refuse_symlink(&file).unwrap();
        refuse_symlink(dir.path()).unwrap();
        refuse_symlink(&dir.path().join("missing")).unwrap();
        for path in [&link, &dangling] {
            let error = refuse_symlink(path).unwrap_err();
            assert!(SymlinkRefused::is(&error), "{error}");
        }
        open_no_follow(OpenOptions::new().read(true), &file).unwrap();
        let error = open_no_follow(OpenOptions::new().read(true), &link).unwrap_err();
        assert!(SymlinkRefused::is(&error));
        assert_eq!(
            error.to_string(),
            "it is a symbolic link, and plexus neither follows nor replaces a link where it keeps its own files; \
             remove the link"
        );
        let error = open_no_follow(OpenOptions::new().write(true).create(true), &dangling).unwrap_err();
        assert!(SymlinkRefused::is(&error));
        assert!(
            !dir.path().join("nowhere").exists(),
            "nothing was created through the link"
        );
        assert!(!SymlinkRefused::is(&io::Error::other("else")));
    }
}
