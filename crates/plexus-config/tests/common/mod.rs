//! Helpers shared by the integration tests: real files in temporary directories.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use plexus_config::{ConfigFile, Diagnostic};
use serde_json::{Map, Value, json};
use tempfile::TempDir;

/// A temporary directory holding one config file.
pub struct Fixture {
    pub dir: TempDir,
    pub path: PathBuf,
}

impl Fixture {
    /// Writes `contents` to `.mcp.json` in a fresh temporary directory.
    pub fn new(contents: impl AsRef<[u8]>) -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join(".mcp.json");
        std::fs::write(&path, contents).expect("the config file is written");
        Fixture { dir, path }
    }

    /// Loads the file, which must load.
    pub fn load(&self) -> ConfigFile {
        ConfigFile::load(&self.path).expect("the file loads")
    }

    /// The load error's message.
    pub fn load_error(&self) -> String {
        plexus_jsonrpc::error_chain(&ConfigFile::load(&self.path).expect_err("the file does not load"))
    }

    /// The path as messages show it.
    pub fn shown(&self) -> String {
        self.path.display().to_string()
    }
}

/// Writes a file whose `mcpServers` holds `entry` under the name `x`, and loads it.
pub fn load_entry(entry: Value) -> (Fixture, ConfigFile) {
    let servers: Map<String, Value> = [("x".to_owned(), entry)].into_iter().collect();
    let fixture = Fixture::new(json!({ "mcpServers": servers }).to_string());
    let file = fixture.load();
    (fixture, file)
}

/// Every diagnostic's message, as displayed.
pub fn messages(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics.iter().map(ToString::to_string).collect()
}

/// Loads `entry` as server `x`, expects it to be skipped, and returns the diagnostics with the
/// `<file>: server "x": ` prefix removed (the prefix itself is checked here).
pub fn entry_errors(entry: Value) -> Vec<String> {
    let (fixture, file) = load_entry(entry);
    assert!(file.server("x").is_none(), "the entry is skipped");
    assert!(file.has_errors());
    strip_prefix(&fixture, &messages(file.diagnostics()))
}

/// Loads `entry` as server `x`, expects it to load, and returns its warnings without the prefix.
pub fn entry_warnings(entry: Value) -> (plexus_config::ServerConfig, Vec<String>) {
    let (fixture, file) = load_entry(entry);
    assert!(!file.has_errors(), "no errors: {:?}", messages(file.diagnostics()));
    let config = file.server("x").expect("the entry loads").clone();
    (config, strip_prefix(&fixture, &messages(file.diagnostics())))
}

fn strip_prefix(fixture: &Fixture, messages: &[String]) -> Vec<String> {
    let prefix = format!("{}: server \"x\": ", fixture.shown());
    messages
        .iter()
        .map(|message| {
            message
                .strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{message:?} starts with {prefix:?}"))
                .to_owned()
        })
        .collect()
}

/// A home, a repository holding the project, and a managed file's place, all in one temporary
/// directory. Nothing outside it is read: the home, the start directory, the managed file and the
/// environment are all explicit.
pub struct Workspace {
    pub root: TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub managed: PathBuf,
}

impl Workspace {
    /// `<root>/home` and `<root>/repo` (with a `.git` directory, so the project search stops there).
    pub fn new() -> Workspace {
        let root = tempfile::tempdir().expect("a temporary directory");
        let home = root.path().join("home");
        let project = root.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(project.join(".git")).unwrap();
        let managed = root.path().join("etc/managed-mcp.json");
        Workspace {
            root,
            home,
            project,
            managed,
        }
    }

    pub fn user_file(&self) -> PathBuf {
        self.home.join("settings.json")
    }

    pub fn project_file(&self) -> PathBuf {
        self.project.join(".mcp.json")
    }

    pub fn local_file(&self) -> PathBuf {
        plexus_config::ConfigPaths::local_file_for(&self.home, &self.project)
    }

    /// Writes `text` to `path` (which must be inside the workspace), creating its directory.
    pub fn write(&self, path: &std::path::Path, text: impl AsRef<[u8]>) {
        assert!(
            path.starts_with(self.root.path()),
            "{} is outside the workspace",
            path.display()
        );
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Writes `value` as JSON to `path`.
    pub fn write_json(&self, path: &std::path::Path, value: &Value) {
        self.write(path, serde_json::to_string_pretty(value).unwrap());
    }

    /// The JSON in `path`.
    pub fn read_json(&self, path: &std::path::Path) -> Value {
        assert!(
            path.starts_with(self.root.path()),
            "{} is outside the workspace",
            path.display()
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Options starting in the project, with the workspace's managed file and no variables.
    pub fn options(&self) -> plexus_config::DiscoveryOptions {
        plexus_config::DiscoveryOptions::new(&self.home, &self.project)
            .with_managed_file(Some(self.managed.clone()))
            .with_env(plexus_config::Environment::empty())
    }

    pub fn sources(&self) -> plexus_config::ConfigSources {
        plexus_config::ConfigSources::discover(&self.options())
    }

    pub fn load(&self) -> plexus_config::MergedConfig {
        self.sources().load()
    }
}

/// A stdio entry running `command`.
pub fn stdio(command: &str) -> Value {
    json!({ "command": command })
}

/// A file holding `servers` under `mcpServers`.
pub fn servers(servers: Value) -> Value {
    Value::Object([("mcpServers".to_owned(), servers)].into_iter().collect())
}
