//! Every scope read, expanded, merged by precedence, and governed by policy and approval.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::approval::{Approvals, Decision, PendingReason, SETTINGS_KEYS};
use crate::diagnostic::{Diagnostic, Severity};
use crate::expand::expand_entry;
use crate::file::{RawFile, read_definition};
use crate::policy::{ALLOWED_KEY, DENIED_KEY, Policy, PolicyBlock, REQUIRE_TOOL_LOCK_KEY};
use crate::{ConfigError, ConfigPaths, DiscoveryOptions, Environment, Scope, ServerConfig, ServerName, cache_key};

/// The files of every scope and the environment to expand with: load them with
/// [`ConfigSources::load`].
#[derive(Debug, Clone)]
pub struct ConfigSources {
    paths: ConfigPaths,
    env: Environment,
}

/// Whether a server may run, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryStatus {
    /// It may be connected.
    Active,
    /// A project server nobody has approved yet, or whose entry changed since it was approved
    /// (`plexus approve NAME`); [`MergedServer::pending`] says which.
    PendingApproval,
    /// Its entry says `"disabled": true`.
    DisabledByConfig,
    /// Managed policy keeps it from running; the block names the rule.
    DeniedByPolicy(PolicyBlock),
    /// A project server the user rejected (listed in `disabledMcpjsonServers`).
    RejectedByUser,
}

impl EntryStatus {
    /// A short word for tables: `active`, `pending-approval`, `disabled`, `denied`, `rejected`.
    pub fn label(&self) -> &'static str {
        match self {
            EntryStatus::Active => "active",
            EntryStatus::PendingApproval => "pending-approval",
            EntryStatus::DisabledByConfig => "disabled",
            EntryStatus::DeniedByPolicy(_) => "denied",
            EntryStatus::RejectedByUser => "rejected",
        }
    }
}

impl fmt::Display for EntryStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryStatus::Active => f.write_str("active"),
            EntryStatus::PendingApproval => f.write_str("pending approval (a project server runs only once approved)"),
            EntryStatus::DisabledByConfig => f.write_str("disabled by its entry"),
            EntryStatus::DeniedByPolicy(block) => write!(f, "disabled by managed policy: {block}"),
            EntryStatus::RejectedByUser => f.write_str("rejected (disabledMcpjsonServers)"),
        }
    }
}

/// A scope and file that define a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryOrigin {
    /// The scope.
    pub scope: Scope,
    /// The file.
    pub file: PathBuf,
}

/// One server of the merged configuration: the entry of the highest scope that defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedServer {
    /// The server's name.
    pub name: ServerName,
    /// The scope its entry comes from.
    pub scope: Scope,
    /// The file its entry comes from.
    pub source: PathBuf,
    /// The entry, with `${VAR}` references expanded.
    pub config: ServerConfig,
    /// Whether it may run.
    pub status: EntryStatus,
    /// The entry's warnings (unknown fields, ignored timeouts, unset variables), each naming the
    /// file and the server.
    pub warnings: Vec<Diagnostic>,
    /// Lower scopes that define the same name; their entries are not used.
    pub overridden: Vec<EntryOrigin>,
    /// Why the project's entry of this name waits for approval, if it does: either this is that
    /// entry ([`EntryStatus::PendingApproval`]), or it was set aside ([`MergedServer::set_aside`])
    /// and a lower scope's entry is this one.
    pub pending: Option<PendingReason>,
    /// The project entry of the same name that was set aside because it is pending approval or
    /// rejected: an entry the user has not approved never hides the user's own server of the same
    /// name. A warning among [`MergedServer::warnings`] says so.
    pub set_aside: Option<EntryOrigin>,
    cache_key: String,
}

impl MergedServer {
    /// The connection's identity: [`cache_key`](crate::cache_key()) of the name and the expanded entry.
    pub fn cache_key(&self) -> &str {
        &self.cache_key
    }

    /// Whether the server may run.
    pub fn is_active(&self) -> bool {
        self.status == EntryStatus::Active
    }
}

/// A server whose winning entry (the highest scope's) is invalid: it is not run, and lower scopes'
/// entries of the same name are not used in its place.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidServer {
    /// The name as written (it may itself be the problem).
    pub name: String,
    /// The scope of the invalid entry.
    pub scope: Scope,
    /// The file of the invalid entry.
    pub source: PathBuf,
    /// Why the entry is invalid: file, server, field and reason, at least one.
    pub errors: Vec<Diagnostic>,
    /// The entry's warnings.
    pub warnings: Vec<Diagnostic>,
    /// Lower scopes that define the same name.
    pub overridden: Vec<EntryOrigin>,
    /// The project entry of the same name set aside because it is pending approval or rejected
    /// (see [`MergedServer::set_aside`]).
    pub set_aside: Option<EntryOrigin>,
}

/// What happened to one file that was looked at.
#[derive(Debug, Clone)]
pub enum FileOutcome {
    /// It was read; this many entries loaded (valid or not).
    Loaded {
        /// The number of entries in its `mcpServers`.
        entries: usize,
    },
    /// It does not exist (fine for every scope but explicit files).
    Missing,
    /// It could not be read or parsed; its entries are left out and the other files still load.
    Failed(Arc<ConfigError>),
}

/// A file that was looked at, and what came of it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Its scope.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// What happened.
    pub outcome: FileOutcome,
}

/// The merged configuration: every server of every scope with its status, and every problem as
/// data.
#[derive(Debug, Clone)]
pub struct MergedConfig {
    /// The servers with a valid entry, in name order, whatever their status.
    pub servers: Vec<MergedServer>,
    /// The servers whose winning entry is invalid, in name order.
    pub invalid: Vec<InvalidServer>,
    /// Every file looked at, in the order read (managed, user, project, local, explicit).
    pub files: Vec<SourceFile>,
    /// Diagnostics not attached to a listed server: file-level warnings, problems in settings and
    /// policy, and the diagnostics of entries overridden by a higher scope.
    pub diagnostics: Vec<Diagnostic>,
    /// Managed policy's `requireToolLock`: every tool of a server that no tool-pool lockfile
    /// locks is held out of the tool pool.
    pub require_tool_lock: bool,
}

impl MergedConfig {
    /// The server called `name`, if it has a valid entry.
    pub fn server(&self, name: &str) -> Option<&MergedServer> {
        self.servers
            .binary_search_by(|server| server.name.as_str().cmp(name))
            .ok()
            .map(|index| &self.servers[index])
    }

    /// The invalid server called `name`, if its winning entry is invalid.
    pub fn invalid_server(&self, name: &str) -> Option<&InvalidServer> {
        self.invalid.iter().find(|server| server.name == name)
    }

    /// The servers that may run.
    pub fn active(&self) -> impl Iterator<Item = &MergedServer> {
        self.servers.iter().filter(|server| server.is_active())
    }

    /// The servers whose project entry waits for approval: the entry used
    /// ([`EntryStatus::PendingApproval`]), or one set aside for a lower scope's entry of the same
    /// name.
    pub fn pending_approval(&self) -> impl Iterator<Item = &MergedServer> {
        self.servers.iter().filter(|server| {
            server.status == EntryStatus::PendingApproval || (server.set_aside.is_some() && server.pending.is_some())
        })
    }

    /// The files that could not be read or parsed, with why.
    pub fn file_errors(&self) -> impl Iterator<Item = (&SourceFile, &ConfigError)> {
        self.files.iter().filter_map(|file| match &file.outcome {
            FileOutcome::Failed(error) => Some((file, &**error)),
            _ => None,
        })
    }

    /// Whether any file failed, any server is invalid, or any error diagnostic was recorded.
    pub fn has_errors(&self) -> bool {
        self.file_errors().next().is_some()
            || !self.invalid.is_empty()
            || self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

impl ConfigSources {
    /// Finds every scope's file from `options` (see [`ConfigPaths::discover`]).
    pub fn discover(options: &DiscoveryOptions) -> ConfigSources {
        ConfigSources {
            paths: ConfigPaths::discover(options),
            env: options.env.clone(),
        }
    }

    /// Sources with the given paths and environment.
    pub fn new(paths: ConfigPaths, env: Environment) -> ConfigSources {
        ConfigSources { paths, env }
    }

    /// Where every scope's file is.
    pub fn paths(&self) -> &ConfigPaths {
        &self.paths
    }

    /// The environment `${VAR}` references are expanded from.
    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// Reads every file, expands and checks every entry, merges by precedence and applies managed
    /// policy and project approval. Never fails: every problem is data on the result.
    pub fn load(&self) -> MergedConfig {
        let mut loader = Loader {
            env: &self.env,
            merged: MergedConfig {
                servers: Vec::new(),
                invalid: Vec::new(),
                files: Vec::new(),
                diagnostics: Vec::new(),
                require_tool_lock: false,
            },
            definitions: Vec::new(),
            managed_has_servers: false,
        };
        let paths = &self.paths;
        let mut policy = Policy::none();
        if let Some(managed) = &paths.managed_file {
            let keys = [ALLOWED_KEY, DENIED_KEY, REQUIRE_TOOL_LOCK_KEY];
            match loader.read(Scope::Managed, managed, &keys, false) {
                Ok(Some(settings)) => {
                    policy = Policy::read(
                        managed,
                        &settings,
                        loader.managed_has_servers,
                        &mut loader.merged.diagnostics,
                    );
                }
                Ok(None) => {}
                Err(problem) => policy = Policy::unusable(managed, problem),
            }
        }
        let mut approvals = Approvals::default();
        if !paths.strict && paths.ignored_local_file.is_file() {
            loader.merged.diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                file: Some(paths.ignored_local_file.clone()),
                server: None,
                field: None,
                message: format!(
                    "ignored: it is inside the project, and nothing a project ships may approve or add servers; your \
                     local settings and approvals for this project are in {}",
                    paths.local_file.display()
                ),
            });
        }
        if !paths.strict {
            for (scope, path) in [
                (Scope::User, &paths.user_file),
                (Scope::Project, &paths.project_file),
                (Scope::Local, &paths.local_file),
            ] {
                let keys: &[&str] = if scope == Scope::Project { &[] } else { &SETTINGS_KEYS };
                if let Ok(Some(settings)) = loader.read(scope, path, keys, false) {
                    approvals.read(path, &settings, &mut loader.merged.diagnostics);
                }
            }
        }
        for path in &paths.explicit_files {
            // Problems are recorded on the file; explicit files carry no settings.
            let _ = loader.read(Scope::Explicit, path, &[], true);
        }
        let mut merged = loader.merge(&policy, &approvals);
        merged.require_tool_lock = policy.requires_tool_lock();
        merged
    }
}

/// One entry as read from one file, in the order files were read.
struct Read {
    name: String,
    origin: EntryOrigin,
    /// The entry as written (before expansion): what an approval is bound to.
    raw: Value,
    server: Option<(ServerName, ServerConfig)>,
    diagnostics: Vec<Diagnostic>,
}

struct Loader<'e> {
    env: &'e Environment,
    merged: MergedConfig,
    definitions: Vec<Read>,
    managed_has_servers: bool,
}

impl Loader<'_> {
    /// Reads one file, recording its outcome and its entries. `Ok(None)`: the file is missing;
    /// `Err`: it exists but failed (the message says why).
    fn read(
        &mut self,
        scope: Scope,
        path: &Path,
        keys: &[&str],
        required: bool,
    ) -> Result<Option<BTreeMap<String, Value>>, String> {
        let loaded = match scope {
            Scope::Explicit => RawFile::load_explicit(path, keys),
            // The local settings hold the approvals: never read through a link.
            Scope::Local => RawFile::load_own(path, keys),
            _ => RawFile::load(path, keys),
        };
        let (outcome, result) = match loaded {
            Ok(raw) => {
                let outcome = FileOutcome::Loaded {
                    entries: raw.entries.len(),
                };
                if scope == Scope::Managed {
                    self.managed_has_servers = raw.has_servers;
                }
                // A warning about one entry (defined twice) travels with that entry.
                let mut about_entries: BTreeMap<String, Vec<Diagnostic>> = BTreeMap::new();
                for diagnostic in raw.diagnostics {
                    match &diagnostic.server {
                        Some(name) if raw.entries.contains_key(name) => {
                            about_entries.entry(name.clone()).or_default().push(diagnostic);
                        }
                        _ => self.merged.diagnostics.push(diagnostic),
                    }
                }
                for (name, value) in &raw.entries {
                    let earlier = about_entries.remove(name).unwrap_or_default();
                    self.define(scope, path, (name, value), &raw.entries, earlier);
                }
                (outcome, Ok(Some(raw.settings)))
            }
            Err(error) if error.is_not_found() && !required => (FileOutcome::Missing, Ok(None)),
            Err(error) => {
                let message = error.with_reason();
                (FileOutcome::Failed(Arc::new(error)), Err(message))
            }
        };
        self.merged.files.push(SourceFile {
            scope,
            path: path.to_owned(),
            outcome,
        });
        result
    }

    /// Records the entry `name`: `value` of the file at `path` (whose entries are `entries`).
    fn define(
        &mut self,
        scope: Scope,
        path: &Path,
        (name, value): (&str, &Value),
        entries: &BTreeMap<String, Value>,
        mut diagnostics: Vec<Diagnostic>,
    ) {
        let (name, server, found) = read_entry(path, name, value, entries, self.env);
        diagnostics.extend(found);
        self.definitions.push(Read {
            name,
            origin: EntryOrigin {
                scope,
                file: path.to_owned(),
            },
            raw: value.clone(),
            server,
            diagnostics,
        });
    }

    fn merge(mut self, policy: &Policy, approvals: &Approvals) -> MergedConfig {
        // Highest precedence first: by scope, then the later of two explicit files.
        let mut by_name: BTreeMap<String, Vec<(usize, Read)>> = BTreeMap::new();
        for (order, read) in self.definitions.into_iter().enumerate() {
            by_name.entry(read.name.clone()).or_default().push((order, read));
        }
        for (name, mut reads) in by_name {
            reads.sort_by(|(a_order, a), (b_order, b)| (b.origin.scope, b_order).cmp(&(a.origin.scope, a_order)));
            let mut reads: Vec<Read> = reads.into_iter().map(|(_, read)| read).collect();
            let Some(first) = reads.first() else { continue };
            let decision = (first.origin.scope == Scope::Project).then(|| approvals.decision(&name, &first.raw));
            let pending = match &decision {
                Some(Decision::Pending(reason)) => Some(reason.clone()),
                _ => None,
            };
            // A project entry the user has not approved never hides a lower scope's entry of the
            // same name: the repository cannot turn off the user's own server by shipping one.
            let mut set_aside = None;
            let mut said = Vec::new();
            if reads.len() > 1
                && decision
                    .as_ref()
                    .is_some_and(|decision| *decision != Decision::Approved)
            {
                let project = reads.remove(0);
                said.push(set_aside_warning(
                    &name,
                    &project.origin,
                    &reads[0].origin,
                    decision.as_ref(),
                ));
                self.merged.diagnostics.extend(project.diagnostics);
                set_aside = Some(project.origin);
            }
            let mut reads = reads.into_iter();
            let Some(winner) = reads.next() else { continue };
            let mut overridden = Vec::new();
            for shadowed in reads {
                overridden.push(shadowed.origin);
                self.merged.diagnostics.extend(shadowed.diagnostics);
            }
            let (mut warnings, errors): (Vec<_>, Vec<_>) = winner
                .diagnostics
                .into_iter()
                .partition(|diagnostic| diagnostic.severity == Severity::Warning);
            warnings.extend(said);
            match winner.server {
                Some((name, config)) => {
                    let decision = if winner.origin.scope == Scope::Project {
                        decision.unwrap_or(Decision::Approved)
                    } else {
                        Decision::Approved
                    };
                    let status = status(&name, &config, winner.origin.scope, policy, &decision);
                    self.merged.servers.push(MergedServer {
                        cache_key: cache_key(name.as_ref(), &config),
                        name,
                        scope: winner.origin.scope,
                        source: winner.origin.file,
                        config,
                        status,
                        warnings,
                        overridden,
                        pending,
                        set_aside,
                    });
                }
                None => self.merged.invalid.push(InvalidServer {
                    name: winner.name,
                    scope: winner.origin.scope,
                    source: winner.origin.file,
                    errors,
                    warnings,
                    overridden,
                    set_aside,
                }),
            }
        }
        self.merged
    }
}

/// The warning that the project entry of `name` (from `project`) was set aside, not approved,
/// and the entry from `used` runs in its place.
fn set_aside_warning(name: &str, project: &EntryOrigin, used: &EntryOrigin, decision: Option<&Decision>) -> Diagnostic {
    let why = match decision {
        Some(Decision::Rejected) => format!("rejected ({})", crate::DISABLED_KEY),
        Some(Decision::Pending(reason)) => format!("pending approval ({reason})"),
        Some(Decision::Approved) | None => "not approved".to_owned(),
    };
    Diagnostic {
        severity: Severity::Warning,
        file: Some(project.file.clone()),
        server: Some(name.to_owned()),
        field: None,
        message: format!(
            "this project server is {why}, so it does not replace the {} server of the same name: the {} entry ({}) \
             is the one that runs",
            used.scope,
            used.scope,
            used.file.display()
        ),
    }
}

/// The status of a valid server: policy first, then the user's rejection, the entry's own
/// `disabled`, and approval (`decision`, [`Decision::Approved`] for every scope but the project).
fn status(name: &ServerName, config: &ServerConfig, scope: Scope, policy: &Policy, decision: &Decision) -> EntryStatus {
    if let Some(block) = policy.check(name, config, scope == Scope::Managed) {
        return EntryStatus::DeniedByPolicy(block);
    }
    match decision {
        Decision::Rejected => EntryStatus::RejectedByUser,
        _ if config.options().disabled => EntryStatus::DisabledByConfig,
        Decision::Pending(_) => EntryStatus::PendingApproval,
        Decision::Approved => EntryStatus::Active,
    }
}

/// Expands and checks the entry `value` called `name` in the file at `path` (whose entries are
/// `entries`), with the name it merges under: a renamed entry merges under its new name (the name
/// its tools and approvals use).
fn read_entry(
    path: &Path,
    name: &str,
    value: &Value,
    entries: &BTreeMap<String, Value>,
    env: &Environment,
) -> (String, Option<(ServerName, ServerConfig)>, Vec<Diagnostic>) {
    let (server, diagnostics) = expand_and_read(path, name, value, entries, env);
    let merged_name = server
        .as_ref()
        .map_or(name, |(server_name, _)| server_name.as_str())
        .to_owned();
    (merged_name, server, diagnostics)
}

impl ConfigSources {
    /// The entries of the project file as written (before expansion), by the name each merges
    /// under: what an approval is bound to. A missing project file has none.
    pub(crate) fn project_entries(&self) -> Result<BTreeMap<String, Value>, ConfigError> {
        let path = &self.paths().project_file;
        let raw = match RawFile::load(path, &[]) {
            Ok(raw) => raw,
            Err(error) if error.is_not_found() => return Ok(BTreeMap::new()),
            Err(error) => return Err(error),
        };
        Ok(raw
            .entries
            .iter()
            .map(|(name, value)| (read_entry(path, name, value, &raw.entries, &self.env).0, value.clone()))
            .collect())
    }
}

/// Expands the entry `value` called `name` in the file at `path` (whose entries are `entries`),
/// then checks it. The result's diagnostics name the file and the server.
pub(crate) fn expand_and_read(
    path: &Path,
    name: &str,
    value: &Value,
    entries: &BTreeMap<String, Value>,
    env: &Environment,
) -> (Option<(ServerName, ServerConfig)>, Vec<Diagnostic>) {
    let expanded = expand_entry(value, env);
    let definition = read_definition(path, name, &expanded.value, entries);
    let expansion_failed = expanded.diagnostics.iter().any(Diagnostic::is_error);
    let mut diagnostics: Vec<Diagnostic> = expanded
        .diagnostics
        .into_iter()
        .map(|mut diagnostic| {
            diagnostic.file = Some(path.to_owned());
            diagnostic.server = Some(name.to_owned());
            diagnostic
        })
        .collect();
    diagnostics.extend(definition.diagnostics);
    let server = definition.server.filter(|_| !expansion_failed);
    (server, diagnostics)
}
