//! Which config files the CLI reads, and the demo fallback.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plexus::config::{ConfigFile, Diagnostic, ServerConfig, ServerOptions, StdioConfig};

/// The servers to use, in name order, and what was said about the files.
pub(crate) struct Servers {
    pub(crate) servers: BTreeMap<String, ServerConfig>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// Whether these are the built-in demo servers (no config file was found).
    pub(crate) demo: bool,
}

/// Why no server set could be made.
#[derive(Debug)]
pub(crate) struct SourceError(pub(crate) String);

/// Loads `explicit` files when given (a missing one is an error); otherwise the nearest project
/// `.mcp.json` and the user's `settings.json`; otherwise the demo.
pub(crate) fn load(explicit: &[PathBuf]) -> Result<Servers, SourceError> {
    let (files, required) = if explicit.is_empty() {
        (discover(), false)
    } else {
        (explicit.to_vec(), true)
    };
    let mut servers = BTreeMap::new();
    let mut diagnostics = Vec::new();
    let mut found = false;
    for path in files {
        match ConfigFile::load(&path) {
            Ok(file) => {
                found = true;
                let (file_servers, file_diagnostics) = file.into_parts();
                diagnostics.extend(file_diagnostics);
                // Later files win, whole entries (fields are never merged).
                servers.extend(
                    file_servers
                        .into_iter()
                        .map(|(name, config)| (name.into_string(), config)),
                );
            }
            Err(e) if !required && e.is_not_found() => {}
            Err(e) => return Err(SourceError(e.to_string())),
        }
    }
    if found {
        return Ok(Servers {
            servers,
            diagnostics,
            demo: false,
        });
    }
    Ok(Servers {
        servers: demo_servers()?,
        diagnostics,
        demo: true,
    })
}

/// The user's settings first, then the project's `.mcp.json`, so that the project wins.
fn discover() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(home) = plexus_home() {
        files.push(home.join("settings.json"));
    }
    if let Ok(cwd) = std::env::current_dir()
        && let Some(project) = nearest_project_file(&cwd)
    {
        files.push(project);
    }
    files
}

fn plexus_home() -> Option<PathBuf> {
    match std::env::var_os("PLEXUS_HOME") {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
        _ => std::env::var_os("HOME").map(|home| Path::new(&home).join(".plexus")),
    }
}

/// The nearest `.mcp.json` in `dir` or its ancestors, stopping at a repository root.
fn nearest_project_file(dir: &Path) -> Option<PathBuf> {
    for ancestor in dir.ancestors() {
        let candidate = ancestor.join(".mcp.json");
        if candidate.is_file() {
            return Some(candidate);
        }
        if ancestor.join(".git").exists() {
            break;
        }
    }
    None
}

/// One stdio server: this very binary running `plexus demo-server`.
fn demo_servers() -> Result<BTreeMap<String, ServerConfig>, SourceError> {
    let exe = std::env::current_exe()
        .map_err(|e| SourceError(format!("cannot locate the plexus binary for the demo server: {e}")))?;
    let entry = StdioConfig {
        command: exe.to_string_lossy().into_owned(),
        args: vec!["demo-server".to_owned()],
        env: BTreeMap::new(),
        cwd: None,
        options: ServerOptions::default(),
    };
    Ok(BTreeMap::from([("demo".to_owned(), ServerConfig::Stdio(entry))]))
}
