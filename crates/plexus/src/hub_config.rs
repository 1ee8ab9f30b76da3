//! The Hub's config after start: what it could not use (its start-up report), reading the
//! files again (and what that changed), and approving or rejecting project servers.

use std::path::PathBuf;
use std::sync::Arc;

use plexus_config::{
    ConfigError, ConfigSources, Diagnostic, InvalidServer, MergedConfig, Scope, ServerName, WriteError,
};
use plexus_pool::{Pool, ServerSpec};

use crate::hub::{Hub, blocking};
use crate::hub_error::HubError;

/// What the Hub could not use of its config, each naming its file and server: the files that
/// did not load, the invalid entries, and every diagnostic. A host shows it to its user.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct StartupReport {
    /// Files that exist but could not be read or parsed: their servers are left out.
    pub broken_files: Vec<BrokenFile>,
    /// Servers whose entry is invalid (not started), with their errors.
    pub invalid_servers: Vec<InvalidServer>,
    /// Every other problem: file-level warnings, settings and policy problems, overridden
    /// entries, and the warnings of the servers that were loaded.
    pub diagnostics: Vec<Diagnostic>,
}

/// A config file that exists but could not be loaded.
#[derive(Debug, Clone)]
pub struct BrokenFile {
    /// Its scope.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// Why (it names the file, and for a parse error its line and column).
    pub error: Arc<ConfigError>,
}

impl StartupReport {
    /// The report of a merged config.
    pub fn of(config: &MergedConfig) -> StartupReport {
        let broken_files = config
            .files
            .iter()
            .filter_map(|file| match &file.outcome {
                plexus_config::FileOutcome::Failed(error) => Some(BrokenFile {
                    scope: file.scope,
                    path: file.path.clone(),
                    error: Arc::clone(error),
                }),
                _ => None,
            })
            .collect();
        let diagnostics = config
            .diagnostics
            .iter()
            .chain(config.servers.iter().flat_map(|server| &server.warnings))
            .cloned()
            .collect();
        StartupReport {
            broken_files,
            invalid_servers: config.invalid.clone(),
            diagnostics,
        }
    }

    /// Whether there is nothing to report.
    pub fn is_clean(&self) -> bool {
        self.broken_files.is_empty() && self.invalid_servers.is_empty() && self.diagnostics.is_empty()
    }

    /// The first file that stops a start: one of any scope but the managed one that exists but
    /// did not load (going on without it would run other servers than the user wrote; a
    /// managed file that cannot be applied already blocks every server).
    pub fn blocking_file(&self) -> Option<&BrokenFile> {
        self.broken_files.iter().find(|file| file.scope != Scope::Managed)
    }
}

/// What reading the config again changed in the Hub's servers (see [`Hub::reload`]), each
/// list in name order.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConfigChange {
    /// Servers that are new: started (or waiting for approval, or disabled, as their entry says).
    pub added: Vec<String>,
    /// Servers no longer in the config (or no longer chosen by the host): closed.
    pub removed: Vec<String>,
    /// Servers whose entry (its cache key: the canonical JSON of the expanded entry) or
    /// admission changed: closed and started again with the new entry.
    pub restarted: Vec<String>,
    /// Servers whose new entry is invalid: they keep running on their last good entry (the
    /// report's `invalid_servers` says what is wrong).
    pub kept_last_good: Vec<String>,
    /// What the new config could not use.
    pub report: StartupReport,
}

impl ConfigChange {
    /// Whether no server was added, removed or restarted.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.restarted.is_empty()
    }

    /// What giving `pool` the servers `specs` does, with `kept_last_good` as given.
    pub(crate) fn between(pool: &Pool, specs: &[ServerSpec], kept_last_good: Vec<String>) -> ConfigChange {
        let before: Vec<ServerSpec> = pool.names().iter().filter_map(|name| pool.spec(name)).collect();
        let same =
            |old: &ServerSpec, new: &ServerSpec| old.admission == new.admission && old.cache_key() == new.cache_key();
        let mut change = ConfigChange {
            kept_last_good,
            ..ConfigChange::default()
        };
        for spec in specs {
            match before.iter().find(|old| old.name == spec.name) {
                None => change.added.push(spec.name.clone()),
                Some(old) if !same(old, spec) => change.restarted.push(spec.name.clone()),
                Some(_) => {}
            }
        }
        change.removed = before
            .iter()
            .filter(|old| !specs.iter().any(|spec| spec.name == old.name))
            .map(|old| old.name.clone())
            .collect();
        for list in [&mut change.added, &mut change.removed, &mut change.restarted] {
            list.sort();
        }
        change
    }
}

/// Gives every server whose entry in `config` is invalid but was valid in `previous` its
/// previous entry back, so that a bad edit does not stop a running server; their names.
pub(crate) fn keep_last_good(config: &mut MergedConfig, previous: &MergedConfig) -> Vec<String> {
    let mut kept = Vec::new();
    for invalid in &config.invalid {
        if config.server(&invalid.name).is_some() {
            continue;
        }
        if let Some(good) = previous.server(&invalid.name) {
            kept.push(good.clone());
        }
    }
    let names = kept.iter().map(|server| server.name.to_string()).collect();
    for server in kept {
        let at = config
            .servers
            .binary_search_by(|other| other.name.as_str().cmp(server.name.as_str()))
            .unwrap_or_else(|at| at);
        config.servers.insert(at, server);
    }
    names
}

impl Hub {
    /// What the Hub could not use of the config it read last (see [`StartupReport`]).
    pub fn startup_report(&self) -> StartupReport {
        StartupReport::of(&self.config())
    }

    /// Reads every config file again and makes the pool's servers those it now allows: a
    /// server whose entry and admission did not change keeps its connection (and its calls in
    /// flight), a changed one is restarted, a removed one closed, an added one started. A file
    /// that no longer loads (of any scope but the managed one) changes nothing and is the
    /// error; a server whose entry became invalid keeps running on its last good entry (the
    /// report names its errors). Otherwise, what changed and the new report.
    ///
    /// [`ConfigWatcher`](crate::ConfigWatcher) calls this whenever a config file changes.
    pub async fn reload(&self) -> Result<ConfigChange, HubError> {
        let discovery = self.discovery().clone();
        let config = blocking(move || ConfigSources::discover(&discovery).load()).await;
        let report = StartupReport::of(&config);
        if let Some(file) = report.blocking_file() {
            return Err(HubError::Config {
                path: file.path.clone(),
                source: Arc::clone(&file.error),
            });
        }
        let mut change = self.apply(config).await;
        change.report = report;
        Ok(change)
    }

    /// Approves the project servers `names` (recorded in the local settings, as `plexus
    /// approve` does) and starts them; the file written.
    pub async fn approve(&self, names: &[&str]) -> Result<PathBuf, HubError> {
        self.decide(names, true).await
    }

    /// Rejects the project servers `names` (recorded in the local settings, as `plexus
    /// reject` does) and stops them; the file written.
    pub async fn reject(&self, names: &[&str]) -> Result<PathBuf, HubError> {
        self.decide(names, false).await
    }

    async fn decide(&self, names: &[&str], approve: bool) -> Result<PathBuf, HubError> {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let discovery = self.discovery().clone();
        let written = blocking(move || {
            let sources = ConfigSources::discover(&discovery);
            let mut checked = Vec::new();
            for name in &names {
                let project = sources
                    .scopes_defining(name)
                    .iter()
                    .any(|(scope, _)| *scope == Scope::Project);
                match ServerName::new(name.as_str()) {
                    Ok(server) if project => checked.push(server),
                    _ => return Err(HubError::NotAProjectServer { name: name.clone() }),
                }
            }
            let written = if approve {
                sources.approve(&checked)
            } else {
                sources.reject(&checked)
            };
            written
                .map(|path| (path, sources.load()))
                .map_err(|source: WriteError| HubError::Approval { source })
        })
        .await?;
        let (path, config) = written;
        self.apply(config).await;
        Ok(path)
    }
}
