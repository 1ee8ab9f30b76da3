//! Editing a settings or `.mcp.json` file: add, replace or remove one server, record approvals;
//! every other byte of the file is kept, and the new file replaces the old one atomically.

mod span;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::approval::{APPROVED_KEY, DISABLED_KEY, ENABLED_KEY, SETTINGS_KEYS, approval_record};
use crate::file::{RawFile, read_bounded};
use crate::json::{describe, quote};
use crate::{ConfigError, ConfigSources, JsonProblem, SERVERS_KEY, Scope, ServerName};
use span::Target;

/// Why a file could not be edited. Nothing is written when an edit fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The existing file cannot be read or is not a valid config file; plexus does not rewrite a
    /// file it cannot read.
    #[error("nothing was written")]
    Unreadable {
        /// Why it cannot be read.
        source: ConfigError,
    },
    /// The scope has no single file plexus writes.
    #[error("servers cannot be written to the {scope} scope; use --scope local, project or user")]
    NotWritable {
        /// The scope asked for.
        scope: Scope,
    },
    /// The server is already defined in the file.
    #[error(
        "{}: server {} already exists; remove it first or choose another name",
        path.display(),
        quote(name)
    )]
    AlreadyExists {
        /// The server's name.
        name: String,
        /// The file.
        path: PathBuf,
    },
    /// The server is not defined in the file.
    #[error("{}: there is no server {}", path.display(), quote(name))]
    NoSuchServer {
        /// The server's name.
        name: String,
        /// The file.
        path: PathBuf,
    },
    /// The server is defined in no writable scope's file.
    #[error("there is no server {} in the local, project or user scope", quote(name))]
    NotDefined {
        /// The server's name.
        name: String,
    },
    /// The server is defined in several writable scopes and none was chosen.
    #[error(
        "server {} is defined in several scopes: {}; choose one with --scope",
        quote(name),
        describe_scopes(scopes)
    )]
    Ambiguous {
        /// The server's name.
        name: String,
        /// Each scope defining it, with its file.
        scopes: Vec<(Scope, PathBuf)>,
    },
    /// A settings key that an edit must change holds something other than a list of names (or
    /// an object of approvals).
    #[error(
        "{}: field {}: expected {expected}, found {found}; fix it by hand, nothing was written",
        path.display(),
        quote(key)
    )]
    NotAList {
        /// The file.
        path: PathBuf,
        /// The key.
        key: &'static str,
        /// What it should hold: `an array of server names`, `an object of approvals`.
        expected: &'static str,
        /// What it holds: `3`, `an object`, …
        found: String,
    },
    /// The file changed on disk between reading and writing it.
    #[error("{} changed while it was being edited; nothing was written, try again", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The edit could not be made without disturbing the rest of the file (a bug if it happens).
    #[error("{}: the edit could not be made without disturbing the rest of the file; nothing was written", path.display())]
    Unverified {
        /// The file.
        path: PathBuf,
    },
    /// The directory for the file could not be created.
    #[error("cannot create the directory {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The new file could not be written or put in place.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
}

fn describe_scopes(scopes: &[(Scope, PathBuf)]) -> String {
    let described: Vec<String> = scopes
        .iter()
        .map(|(scope, path)| format!("{scope} ({})", path.display()))
        .collect();
    described.join(", ")
}

/// Pending edits to one file, written by [`SettingsEdit::commit`].
///
/// The file's text is edited in place: a changed member gets a new value, a new member is appended
/// with the indentation of its siblings, a removed member goes with its comma. Keys plexus does not
/// know, their order and their formatting stay exactly as they were. A missing file (or one holding
/// only whitespace) starts as `{}`.
#[derive(Debug, Clone)]
pub struct SettingsEdit {
    path: PathBuf,
    target: PathBuf,
    original: Option<String>,
    initial: String,
    text: String,
    new_file_mode: u32,
}

impl SettingsEdit {
    /// Opens `path` for editing; a file created by the edit gets mode `0600`. A symbolic link is
    /// followed, and kept: the file it points to is edited (dotfiles kept in a repository).
    pub fn open(path: impl Into<PathBuf>) -> Result<SettingsEdit, WriteError> {
        SettingsEdit::open_with(path.into(), true)
    }

    /// Opens `path`, a file plexus keeps in its home (the local settings, which hold the
    /// approvals), for editing: a symbolic link there is refused
    /// ([`SymlinkRefused`](crate::SymlinkRefused)), never followed nor replaced.
    pub fn open_own(path: impl Into<PathBuf>) -> Result<SettingsEdit, WriteError> {
        SettingsEdit::open_with(path.into(), false)
    }

    fn open_with(path: PathBuf, follow: bool) -> Result<SettingsEdit, WriteError> {
        let target = match fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.file_type().is_symlink() && !follow => {
                return Err(WriteError::Unreadable {
                    source: ConfigError::Read {
                        path,
                        source: crate::SymlinkRefused::error(),
                    },
                });
            }
            Ok(metadata) if metadata.file_type().is_symlink() => {
                fs::canonicalize(&path).map_err(|source| WriteError::Unreadable {
                    source: ConfigError::Read {
                        path: path.clone(),
                        source,
                    },
                })?
            }
            _ => path.clone(),
        };
        let original = match read_text(&target) {
            Ok(text) => Some(text),
            Err(error) if error.is_not_found() => None,
            Err(source) => return Err(WriteError::Unreadable { source }),
        };
        let text = match &original {
            Some(text) if !text.trim().is_empty() => {
                RawFile::parse_bytes(text.as_bytes(), &path, &SETTINGS_KEYS)
                    .map_err(|source| WriteError::Unreadable { source })?;
                text.clone()
            }
            Some(text) => format!("{{}}{text}"),
            None => "{}\n".to_owned(),
        };
        Ok(SettingsEdit {
            path,
            target,
            original,
            initial: text.clone(),
            text,
            new_file_mode: 0o600,
        })
    }

    /// Sets the mode a file created by this edit gets (default `0600`; a project's `.mcp.json`,
    /// meant to be shared, gets `0644` from [`ConfigSources::edit`](crate::ConfigSources::edit)).
    #[must_use]
    pub fn with_new_file_mode(mut self, mode: u32) -> SettingsEdit {
        self.new_file_mode = mode;
        self
    }

    /// The file being edited.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text the file will have.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn parsed(&self) -> Result<RawFile, WriteError> {
        RawFile::parse_bytes(self.text.as_bytes(), &self.path, &SETTINGS_KEYS).map_err(|_| self.unverified())
    }

    fn unverified(&self) -> WriteError {
        WriteError::Unverified {
            path: self.path.clone(),
        }
    }

    /// The server entries the file holds (with the edits so far), as written.
    pub fn servers(&self) -> BTreeMap<String, Value> {
        self.parsed().map(|raw| raw.entries).unwrap_or_default()
    }

    /// The entry of server `name`, as written.
    pub fn server(&self, name: &str) -> Option<Value> {
        self.servers().remove(name)
    }

    /// Adds server `name`; fails if the file already defines it.
    pub fn add_server(&mut self, name: &ServerName, entry: &Value) -> Result<(), WriteError> {
        if self.server(name.as_str()).is_some() {
            return Err(WriteError::AlreadyExists {
                name: name.to_string(),
                path: self.path.clone(),
            });
        }
        self.set_server(name, entry).map(|_| ())
    }

    /// Adds or replaces server `name`, returning the entry it replaced.
    pub fn set_server(&mut self, name: &ServerName, entry: &Value) -> Result<Option<Value>, WriteError> {
        let before = self.parsed()?;
        let previous = before.entries.get(name.as_str()).cloned();
        let mut text = self.text.clone();
        let done = if before.has_servers {
            span::set_member(&mut text, Target::Member(SERVERS_KEY), name.as_str(), entry)
        } else {
            let servers = Value::Object([(name.to_string(), entry.clone())].into_iter().collect());
            span::set_member(&mut text, Target::TopLevel, SERVERS_KEY, &servers)
        };
        self.apply(text, done, |after| {
            after.entries.get(name.as_str()) == Some(entry)
                && after.entries.len() == before.entries.len() + usize::from(previous.is_none())
                && after.settings == before.settings
        })?;
        Ok(previous)
    }

    /// Removes server `name` (every definition of it), returning its entry; fails if the file
    /// does not define it. Works for names that are not valid server names, to remove a bad entry.
    pub fn remove_server(&mut self, name: &str) -> Result<Value, WriteError> {
        let before = self.parsed()?;
        let Some(previous) = before.entries.get(name).cloned() else {
            return Err(WriteError::NoSuchServer {
                name: name.to_owned(),
                path: self.path.clone(),
            });
        };
        let mut text = self.text.clone();
        let done = span::remove_member(&mut text, Target::Member(SERVERS_KEY), name);
        self.apply(text, done, |after| {
            !after.entries.contains_key(name)
                && after.entries.len() + 1 == before.entries.len()
                && after.settings == before.settings
        })?;
        Ok(previous)
    }

    /// Records approval of the project server `name` bound to `entry`, its entry as written in
    /// the project file: sets its record in `approvedMcpjsonServers` (see
    /// [`APPROVED_KEY`](crate::APPROVED_KEY)), and takes the name out of `disabledMcpjsonServers`
    /// and of the by-name approvals of `enabledMcpjsonServers`, which the record replaces.
    pub fn approve(&mut self, name: &ServerName, entry: &Value) -> Result<(), WriteError> {
        let record = approval_record(entry);
        let before = self.parsed()?;
        let mut text = self.text.clone();
        let done = match before.settings.get(APPROVED_KEY) {
            Some(Value::Object(_)) => span::set_member(&mut text, Target::Member(APPROVED_KEY), name.as_str(), &record),
            None => {
                let records = Value::Object([(name.to_string(), record.clone())].into_iter().collect());
                span::set_member(&mut text, Target::TopLevel, APPROVED_KEY, &records)
            }
            Some(other) => return Err(self.not_a(APPROVED_KEY, other, "an object of approvals")),
        };
        if before
            .settings
            .get(APPROVED_KEY)
            .and_then(|records| records.get(name.as_str()))
            != Some(&record)
        {
            self.apply(text, done, |after| {
                after
                    .settings
                    .get(APPROVED_KEY)
                    .and_then(|records| records.get(name.as_str()))
                    == Some(&record)
                    && after.entries == before.entries
            })?;
        }
        self.unlist(std::slice::from_ref(name), &[ENABLED_KEY, DISABLED_KEY])
    }

    /// Records rejection of the project servers `names`: adds them to `disabledMcpjsonServers`,
    /// and takes out their approvals.
    pub fn reject(&mut self, names: &[ServerName]) -> Result<(), WriteError> {
        self.edit_list(DISABLED_KEY, |list| {
            for name in names {
                if !list.iter().any(|item| item.as_str() == Some(name.as_str())) {
                    list.push(Value::from(name.as_str()));
                }
            }
        })?;
        self.unlist(names, &[ENABLED_KEY])?;
        let before = self.parsed()?;
        if let Some(records) = before.settings.get(APPROVED_KEY).and_then(Value::as_object) {
            for name in names.iter().filter(|name| records.contains_key(name.as_str())) {
                let mut text = self.text.clone();
                let done = span::remove_member(&mut text, Target::Member(APPROVED_KEY), name.as_str());
                self.apply(text, done, |after| {
                    after
                        .settings
                        .get(APPROVED_KEY)
                        .is_some_and(|records| records.get(name.as_str()).is_none())
                        && after.entries == before.entries
                })?;
            }
        }
        Ok(())
    }

    /// Takes `names` out of each list of `keys`.
    fn unlist(&mut self, names: &[ServerName], keys: &[&'static str]) -> Result<(), WriteError> {
        for key in keys {
            self.edit_list(key, |list| {
                list.retain(|item| !names.iter().any(|name| item.as_str() == Some(name.as_str())));
            })?;
        }
        Ok(())
    }

    /// Changes the list of names under the top-level `key` with `change` (a missing list is
    /// empty); writes nothing when its length stays the same.
    fn edit_list(&mut self, key: &'static str, change: impl FnOnce(&mut Vec<Value>)) -> Result<(), WriteError> {
        let before = self.parsed()?;
        let mut list = match before.settings.get(key) {
            None => Vec::new(),
            Some(Value::Array(items)) => items.clone(),
            Some(other) => return Err(self.not_a(key, other, "an array of server names")),
        };
        let length = list.len();
        change(&mut list);
        if list.len() == length {
            return Ok(());
        }
        let value = Value::Array(list);
        let mut text = self.text.clone();
        let done = span::set_member(&mut text, Target::TopLevel, key, &value);
        self.apply(text, done, |after| {
            after.settings.get(key) == Some(&value) && after.entries == before.entries
        })
    }

    fn not_a(&self, key: &'static str, found: &Value, expected: &'static str) -> WriteError {
        WriteError::NotAList {
            path: self.path.clone(),
            key,
            expected,
            found: describe(found),
        }
    }

    /// Takes `text` as the new content if the edit was `done` and the result, parsed again, passes
    /// `check`.
    fn apply(&mut self, text: String, done: bool, check: impl FnOnce(&RawFile) -> bool) -> Result<(), WriteError> {
        let verified =
            done && RawFile::parse_bytes(text.as_bytes(), &self.path, &SETTINGS_KEYS).is_ok_and(|after| check(&after));
        if !verified {
            return Err(self.unverified());
        }
        self.text = text;
        Ok(())
    }

    /// Whether the edits change the file (a missing file that nothing was added to is not
    /// created).
    pub fn is_changed(&self) -> bool {
        self.text != self.initial
    }

    /// Writes the file if anything changed: a temporary file in the same directory, flushed to
    /// disk, then renamed over the old one (so a reader sees the old file or the new one, never a
    /// mix), keeping the old file's permissions. Creates the directory if needed. Fails without
    /// writing if the file changed on disk since it was opened. Returns whether it wrote.
    pub fn commit(self) -> Result<bool, WriteError> {
        if !self.is_changed() {
            return Ok(false);
        }
        let now = match read_text(&self.target) {
            Ok(text) => Some(text),
            Err(error) if error.is_not_found() => None,
            Err(source) => return Err(WriteError::Unreadable { source }),
        };
        if now != self.original {
            return Err(WriteError::Changed { path: self.path });
        }
        write_atomically(&self.target, self.text.as_bytes(), self.new_file_mode)?;
        Ok(true)
    }
}

fn read_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = read_bounded(path, crate::MAX_FILE_SIZE)?;
    // A file that is not UTF-8 is not JSON; the parser reports where.
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(error) => Err(RawFile::parse_bytes(error.as_bytes(), path, &[])
            .err()
            .unwrap_or_else(|| ConfigError::Syntax {
                path: path.to_owned(),
                line: 1,
                column: 0,
                source: JsonProblem::NotUtf8,
            })),
    }
}

/// Replaces `path` with `bytes` atomically: temporary file in the same directory, `fsync`, rename,
/// `fsync` of the directory; a new file gets `new_file_mode` (Unix permission bits), an existing
/// one keeps its own. Config files are written this way, and so are the plexus home's plain
/// (not secret) caches. A symbolic link at `path` is refused
/// ([`SymlinkRefused`](crate::SymlinkRefused)): the rename would replace the link, not the file
/// it points to, so the caller resolves a link it means to follow.
pub fn write_atomically(path: &Path, bytes: &[u8], new_file_mode: u32) -> Result<(), WriteError> {
    let write_error = |source| WriteError::Write {
        path: path.to_owned(),
        source,
    };
    crate::refuse_symlink(path).map_err(write_error)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(|source| WriteError::CreateDir {
        path: dir.to_owned(),
        source,
    })?;
    let name = path
        .file_name()
        .map_or_else(|| "settings".into(), |name| name.to_string_lossy().into_owned());
    let mut temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(write_error)?;
    temporary.write_all(bytes).map_err(write_error)?;
    set_mode(temporary.as_file(), path, new_file_mode).map_err(write_error)?;
    temporary.as_file().sync_all().map_err(write_error)?;
    temporary.persist(path).map_err(|error| write_error(error.error))?;
    // The rename is durable once the directory is; some systems cannot sync a directory.
    if let Ok(directory) = File::open(dir) {
        let _ = directory.sync_all();
    }
    Ok(())
}

#[cfg(unix)]
fn set_mode(file: &File, path: &Path, new_file_mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(path).map_or(new_file_mode, |metadata| metadata.permissions().mode());
    file.set_permissions(fs::Permissions::from_mode(mode & 0o7777))
}

#[cfg(not(unix))]
fn set_mode(_file: &File, _path: &Path, _new_file_mode: u32) -> io::Result<()> {
    Ok(())
}

impl ConfigSources {
    /// Opens the file of the writable `scope` for editing (a new project `.mcp.json` gets mode
    /// `0644`, other new files `0600`).
    pub fn edit(&self, scope: Scope) -> Result<SettingsEdit, WriteError> {
        let path = match scope {
            Scope::User | Scope::Project | Scope::Local => self.paths().file(scope),
            Scope::Explicit | Scope::Managed => None,
        }
        .ok_or(WriteError::NotWritable { scope })?;
        Ok(match scope {
            Scope::Project => SettingsEdit::open(path)?.with_new_file_mode(0o644),
            // The local settings hold the approvals, in the plexus home: never through a link.
            Scope::Local => SettingsEdit::open_own(path)?,
            _ => SettingsEdit::open(path)?,
        })
    }

    /// Adds server `name` to the file of `scope` and writes it; fails if that file already defines
    /// it. Returns the file.
    pub fn add_server(&self, scope: Scope, name: &ServerName, entry: &Value) -> Result<PathBuf, WriteError> {
        let mut edit = self.edit(scope)?;
        edit.add_server(name, entry)?;
        let path = edit.path().to_owned();
        edit.commit()?;
        Ok(path)
    }

    /// The writable scopes whose file defines server `name` (valid or not), highest first.
    pub fn scopes_defining(&self, name: &str) -> Vec<(Scope, PathBuf)> {
        [Scope::Local, Scope::Project, Scope::User]
            .into_iter()
            .filter_map(|scope| {
                let path = self.paths().file(scope)?;
                let raw = RawFile::load(path, &[]).ok()?;
                raw.entries.contains_key(name).then(|| (scope, path.to_owned()))
            })
            .collect()
    }

    /// Removes server `name` from the file of `scope`, or, without a scope, from the one writable
    /// scope that defines it (an error if none or several do). Returns the scope and file.
    pub fn remove_server(&self, name: &str, scope: Option<Scope>) -> Result<(Scope, PathBuf), WriteError> {
        let scope = match scope {
            Some(scope) => scope,
            None => {
                let mut scopes = self.scopes_defining(name);
                match scopes.len() {
                    0 => {
                        return Err(WriteError::NotDefined { name: name.to_owned() });
                    }
                    1 => scopes.remove(0).0,
                    _ => {
                        return Err(WriteError::Ambiguous {
                            name: name.to_owned(),
                            scopes,
                        });
                    }
                }
            }
        };
        let mut edit = self.edit(scope)?;
        edit.remove_server(name)?;
        let path = edit.path().to_owned();
        edit.commit()?;
        Ok((scope, path))
    }

    /// Records approval of the project servers `names` in the local settings, each bound to its
    /// entry as the project file holds it now (before `${VAR}` expansion): if that entry changes,
    /// the server waits for approval again. Fails if the project file does not define one of them.
    /// Returns the file.
    pub fn approve(&self, names: &[ServerName]) -> Result<PathBuf, WriteError> {
        let entries = self
            .project_entries()
            .map_err(|source| WriteError::Unreadable { source })?;
        let mut edit = self.edit(Scope::Local)?;
        for name in names {
            let entry = entries.get(name.as_str()).ok_or_else(|| WriteError::NoSuchServer {
                name: name.to_string(),
                path: self.paths().project_file.clone(),
            })?;
            edit.approve(name, entry)?;
        }
        let path = edit.path().to_owned();
        edit.commit()?;
        Ok(path)
    }

    /// Records rejection of the project servers `names` in the local settings. Returns the file.
    pub fn reject(&self, names: &[ServerName]) -> Result<PathBuf, WriteError> {
        let mut edit = self.edit(Scope::Local)?;
        edit.reject(names)?;
        let path = edit.path().to_owned();
        edit.commit()?;
        Ok(path)
    }
}
