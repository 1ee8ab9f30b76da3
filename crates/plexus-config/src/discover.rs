//! Where the config files of every scope are: the plexus home, the project, the managed file.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::{Environment, Scope};

/// The managed file's default path; `$PLEXUS_MANAGED_CONFIG` overrides it.
pub const DEFAULT_MANAGED_FILE: &str = "/etc/plexus/managed-mcp.json";

/// The project file's name, looked for in the working directory and its ancestors.
pub const PROJECT_FILE: &str = ".mcp.json";

/// The local settings file's name, in the project's directory of the plexus home
/// (`<home>/projects/<key>/settings.local.json`, see [`ConfigPaths::local_file_for`]).
pub const LOCAL_SETTINGS_FILE: &str = "settings.local.json";

/// The directory of the plexus home that holds one directory of local settings per project.
pub const PROJECTS_DIR: &str = "projects";

/// Where older versions kept the local settings, relative to the project directory: project
/// content, so a repository could ship one that approves its own servers. A file found there is
/// never read, only reported.
pub const IGNORED_LOCAL_SETTINGS_FILE: &str = ".plexus/settings.local.json";

/// The user settings file, relative to the plexus home.
pub const USER_SETTINGS_FILE: &str = "settings.json";

/// What discovery starts from. Every path that matters is explicit, so tests never touch a real
/// home: build one with [`DiscoveryOptions::new`], or read the process's with
/// [`DiscoveryOptions::from_process`].
#[derive(Debug, Clone)]
pub struct DiscoveryOptions {
    /// The plexus home (`$PLEXUS_HOME`, else `~/.plexus`): holds the user settings.
    pub home: PathBuf,
    /// Where the search for the project starts: the working directory, or `--project DIR`.
    pub start_dir: PathBuf,
    /// `--config` files, lowest precedence first (a later file wins over an earlier one).
    pub explicit_files: Vec<PathBuf>,
    /// `--strict-config`: read servers only from the explicit files (managed policy still applies).
    pub strict: bool,
    /// The managed file, or `None` for no managed policy.
    pub managed_file: Option<PathBuf>,
    /// Where `${VAR}` references are looked up.
    pub env: Environment,
}

/// Why the process's own locations could not be found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// Neither `PLEXUS_HOME` nor `HOME` is set.
    #[error("cannot find the plexus home: set PLEXUS_HOME (or HOME)")]
    NoHome,
    /// The working directory cannot be read.
    #[error("cannot read the current directory")]
    CurrentDir(#[source] io::Error),
}

impl DiscoveryOptions {
    /// Options for the plexus home `home` and a search starting in `start_dir`, with no explicit
    /// files, the default managed file and the process environment for `${VAR}`.
    pub fn new(home: impl Into<PathBuf>, start_dir: impl Into<PathBuf>) -> DiscoveryOptions {
        DiscoveryOptions {
            home: home.into(),
            start_dir: start_dir.into(),
            explicit_files: Vec::new(),
            strict: false,
            managed_file: Some(PathBuf::from(DEFAULT_MANAGED_FILE)),
            env: Environment::process(),
        }
    }

    /// The process's options: the home from `PLEXUS_HOME` (else `$HOME/.plexus`), the search from
    /// `project_dir` or the working directory, the managed file from `PLEXUS_MANAGED_CONFIG` (else
    /// [`DEFAULT_MANAGED_FILE`]), and the process environment.
    pub fn from_process(project_dir: Option<PathBuf>) -> Result<DiscoveryOptions, DiscoveryError> {
        let non_empty = |name| std::env::var_os(name).filter(|value: &OsString| !value.is_empty());
        let cwd = std::env::current_dir().map_err(DiscoveryError::CurrentDir)?;
        let home = match (non_empty("PLEXUS_HOME"), non_empty("HOME")) {
            (Some(home), _) => cwd.join(home),
            (None, Some(home)) => Path::new(&home).join(".plexus"),
            (None, None) => return Err(DiscoveryError::NoHome),
        };
        let mut options = DiscoveryOptions::new(home, project_dir.map_or_else(|| cwd.clone(), |dir| cwd.join(dir)));
        if let Some(managed) = non_empty("PLEXUS_MANAGED_CONFIG") {
            options.managed_file = Some(cwd.join(managed));
        }
        Ok(options)
    }

    /// Adds `--config` files (later ones win) and sets `--strict-config`.
    #[must_use]
    pub fn with_explicit_files(mut self, files: Vec<PathBuf>, strict: bool) -> DiscoveryOptions {
        self.explicit_files = files;
        self.strict = strict;
        self
    }

    /// Uses `managed_file` (`None`: no managed policy).
    #[must_use]
    pub fn with_managed_file(mut self, managed_file: Option<PathBuf>) -> DiscoveryOptions {
        self.managed_file = managed_file;
        self
    }

    /// Looks `${VAR}` references up in `env`.
    #[must_use]
    pub fn with_env(mut self, env: Environment) -> DiscoveryOptions {
        self.env = env;
        self
    }
}

/// The file of every scope, found from [`DiscoveryOptions`].
///
/// The project is the nearest of the start directory and its ancestors that holds `.mcp.json`,
/// looking no higher than the repository root (the first directory with a `.git` entry). Without
/// one, the project directory is the repository root, or the start directory outside a
/// repository: that is where `--scope project` creates `.mcp.json` and where the local settings
/// live.
///
/// The local settings (the user's own servers for one project, and their approvals of the
/// project's servers) live in the plexus home, keyed by the project root's canonical path
/// (`<home>/projects/<key>/settings.local.json`), never inside the project: nothing a repository
/// ships can approve its own servers or add local ones. A `.plexus/settings.local.json` in the
/// project, where older versions kept them, is reported and never read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPaths {
    /// The plexus home.
    pub home: PathBuf,
    /// `<home>/settings.json`.
    pub user_file: PathBuf,
    /// The project directory.
    pub project_dir: PathBuf,
    /// `<project>/.mcp.json` (it may not exist).
    pub project_file: PathBuf,
    /// `<home>/projects/<key>/settings.local.json` (see [`ConfigPaths::local_file_for`]).
    pub local_file: PathBuf,
    /// `<project>/.plexus/settings.local.json`: never read; reported when it exists.
    pub ignored_local_file: PathBuf,
    /// The managed file, if any.
    pub managed_file: Option<PathBuf>,
    /// The `--config` files, lowest precedence first.
    pub explicit_files: Vec<PathBuf>,
    /// Whether only the explicit files are read for servers.
    pub strict: bool,
}

impl ConfigPaths {
    /// Finds the project and lays out every scope's file. Reads nothing but directory entries.
    pub fn discover(options: &DiscoveryOptions) -> ConfigPaths {
        let start = absolute(&options.start_dir);
        let project_dir = find_project_dir(&start);
        let home = absolute(&options.home);
        ConfigPaths {
            user_file: home.join(USER_SETTINGS_FILE),
            project_file: project_dir.join(PROJECT_FILE),
            local_file: ConfigPaths::local_file_for(&home, &project_dir),
            ignored_local_file: project_dir.join(IGNORED_LOCAL_SETTINGS_FILE),
            home,
            project_dir,
            managed_file: options.managed_file.as_deref().map(absolute),
            explicit_files: options.explicit_files.iter().map(|f| absolute(f)).collect(),
            strict: options.strict,
        }
    }

    /// The local settings file of the project at `project_dir` in the plexus home `home`:
    /// `<home>/projects/<key>/settings.local.json`, where `<key>` is the last component of the
    /// project's canonical path (symbolic links resolved; characters outside `[A-Za-z0-9._-]`
    /// become `_`, at most 48 of them) and the first 16 hex digits of the SHA-256 of that path, so
    /// that two projects never share one and a person can tell whose it is.
    ///
    /// ```
    /// use plexus_config::ConfigPaths;
    ///
    /// let file = ConfigPaths::local_file_for("/home/u/.plexus".as_ref(), "/nonexistent/src/my app".as_ref());
    /// let key = file.parent().unwrap().file_name().unwrap().to_str().unwrap();
    /// assert!(key.starts_with("my_app-") && key.len() == "my_app-".len() + 16, "{key}");
    /// assert!(file.starts_with("/home/u/.plexus/projects"));
    /// ```
    pub fn local_file_for(home: &Path, project_dir: &Path) -> PathBuf {
        home.join(PROJECTS_DIR)
            .join(project_key(project_dir))
            .join(LOCAL_SETTINGS_FILE)
    }

    /// The file of a writable scope, or the managed file; `None` for [`Scope::Explicit`] (there may
    /// be several) and for a missing managed file.
    pub fn file(&self, scope: Scope) -> Option<&Path> {
        match scope {
            Scope::User => Some(&self.user_file),
            Scope::Project => Some(&self.project_file),
            Scope::Local => Some(&self.local_file),
            Scope::Managed => self.managed_file.as_deref(),
            Scope::Explicit => None,
        }
    }
}

/// The project directory for a search starting at `start` (absolute).
fn find_project_dir(start: &Path) -> PathBuf {
    for dir in start.ancestors() {
        if dir.join(PROJECT_FILE).is_file() {
            return dir.to_owned();
        }
        if dir.join(".git").exists() {
            return dir.to_owned();
        }
    }
    start.to_owned()
}

/// The directory name of a project's local settings (see [`ConfigPaths::local_file_for`]).
fn project_key(project_dir: &Path) -> String {
    let canonical = std::fs::canonicalize(project_dir).unwrap_or_else(|_| absolute(project_dir));
    let mut hash = crate::sha256_hex(canonical.as_os_str().as_encoded_bytes());
    hash.truncate(16);
    let name: String = canonical
        .file_name()
        .map_or_else(|| "root".to_owned(), |name| name.to_string_lossy().into_owned())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    format!("{name}-{hash}")
}

/// `path` made absolute against the working directory (unchanged if that cannot be read).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}
