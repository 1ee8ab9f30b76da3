//! Where the CLI's servers come from: every scope read and merged by `plexus-config`; or the one
//! server `--stdio` / `--url` give; or, when no config file exists anywhere, the built-in demo
//! server.

use std::collections::BTreeMap;
use std::path::PathBuf;

use plexus::config::{
    ConfigSources, Diagnostic, DiscoveryOptions, EntryChange, EntryOrigin, EntryStatus, FileOutcome, InvalidServer,
    MergedConfig, MergedServer, PendingReason, Scope, ServerConfig, ServerKind, ServerName, ServerOptions, StdioEntry,
};

use crate::new_entry::entry_from_args;

use crate::{AdHoc, Globals, Outcome};

/// The name of the built-in demo server.
const DEMO: &str = "demo";
/// The default name of a `--stdio` or `--url` server.
pub(crate) const AD_HOC_NAME: &str = "adhoc";

/// Finds every scope's file from the global flags and the process's environment (`PLEXUS_HOME`,
/// `HOME`, `PLEXUS_MANAGED_CONFIG`, the working directory). Reads nothing but directory entries.
pub(crate) fn discover(globals: &Globals) -> Result<(DiscoveryOptions, ConfigSources), String> {
    if let Some(dir) = &globals.project {
        match std::fs::metadata(dir) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => return Err(format!("--project {}: not a directory", dir.display())),
            Err(e) => return Err(format!("--project {}: {e}", dir.display())),
        }
    }
    let options = DiscoveryOptions::from_process(globals.project.clone())
        .map_err(|e| crate::terminal::chain(&e))?
        .with_explicit_files(globals.config.clone(), globals.strict_config)
        .with_env(crate::secrets::environment());
    let sources = ConfigSources::discover(&options);
    Ok((options, sources))
}

/// [`discover`], printing why it failed.
pub(crate) fn discover_or_report(globals: &Globals) -> Result<(DiscoveryOptions, ConfigSources), Outcome> {
    discover(globals).map_err(|message| {
        crate::terminal::say(format_args!("{message}"));
        Outcome::Usage
    })
}

/// One configured server, whatever its state: a merged server, an invalid one, or the demo.
pub(crate) struct Server {
    pub(crate) name: String,
    /// `None` for the demo.
    pub(crate) scope: Option<Scope>,
    /// `None` for the demo.
    pub(crate) source: Option<PathBuf>,
    /// The expanded entry; `None` when it is invalid.
    pub(crate) config: Option<ServerConfig>,
    /// Whether it may run; `None` when the entry is invalid.
    pub(crate) status: Option<EntryStatus>,
    pub(crate) warnings: Vec<Diagnostic>,
    pub(crate) errors: Vec<Diagnostic>,
    /// Lower scopes defining the same name.
    pub(crate) overridden: Vec<EntryOrigin>,
    /// Why the project's entry of this name waits for approval, if it does.
    pub(crate) pending: Option<PendingReason>,
}

impl Server {
    fn merged(server: &MergedServer) -> Server {
        Server {
            name: server.name.to_string(),
            scope: Some(server.scope),
            source: Some(server.source.clone()),
            config: Some(server.config.clone()),
            status: Some(server.status.clone()),
            warnings: server.warnings.clone(),
            errors: Vec::new(),
            overridden: server.overridden.clone(),
            pending: server.pending.clone(),
        }
    }

    fn invalid(server: &InvalidServer) -> Server {
        Server {
            name: server.name.clone(),
            scope: Some(server.scope),
            source: Some(server.source.clone()),
            config: None,
            status: None,
            warnings: server.warnings.clone(),
            errors: server.errors.clone(),
            overridden: server.overridden.clone(),
            pending: None,
        }
    }

    pub(crate) fn kind(&self) -> Option<ServerKind> {
        self.config.as_ref().map(ServerConfig::kind)
    }

    /// The entry, if the server may run.
    pub(crate) fn runnable(&self) -> Option<&ServerConfig> {
        match self.status {
            Some(EntryStatus::Active) => self.config.as_ref(),
            _ => None,
        }
    }

    /// The configuration state: `active`, `pending`, `disabled` or `failed` (invalid entry).
    pub(crate) fn state(&self) -> &'static str {
        match &self.status {
            None => "failed",
            Some(EntryStatus::Active) => "active",
            Some(EntryStatus::PendingApproval) => "pending",
            Some(EntryStatus::DisabledByConfig | EntryStatus::DeniedByPolicy(_) | EntryStatus::RejectedByUser) => {
                "disabled"
            }
        }
    }

    /// Why a valid server does not run (pending or disabled), with what to do about it.
    pub(crate) fn reason(&self) -> Option<String> {
        let status = self.status.as_ref()?;
        let approve = format!("approve it with: plexus approve {}", self.name);
        match (status, &self.pending) {
            (EntryStatus::Active, _) => None,
            (EntryStatus::PendingApproval, Some(reason @ PendingReason::Changed(changes))) if !changes.is_empty() => {
                Some(format!(
                    "pending approval: its entry changed since it was approved ({}); see the changes with: plexus get \
                     {}; {approve}",
                    reason.changed_fields().join(", "),
                    self.name
                ))
            }
            (
                EntryStatus::PendingApproval,
                Some(reason @ (PendingReason::ApprovedByNameOnly | PendingReason::Changed(_))),
            ) => Some(format!("pending approval: {reason}; {approve}")),
            (EntryStatus::PendingApproval | EntryStatus::RejectedByUser, _) => Some(format!("{status}; {approve}")),
            (EntryStatus::DisabledByConfig | EntryStatus::DeniedByPolicy(_), _) => Some(status.to_string()),
        }
    }

    /// How the project's entry differs from the one approved, one line per field, when it
    /// changed since it was approved.
    pub(crate) fn changes(&self) -> Vec<String> {
        match &self.pending {
            Some(PendingReason::Changed(changes)) => changes.iter().map(EntryChange::to_string).collect(),
            _ => Vec::new(),
        }
    }

    /// Every error of an invalid entry, in one line.
    pub(crate) fn error_summary(&self) -> Option<String> {
        if self.errors.is_empty() {
            return None;
        }
        let errors: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        Some(errors.join("; "))
    }

    /// Whether it is a project server waiting for approval.
    pub(crate) fn is_pending(&self) -> bool {
        self.status == Some(EntryStatus::PendingApproval)
    }

    /// Why the server is not started, for a server that is not runnable (for an invalid entry, the
    /// errors are reported with [`Server::report_diagnostics`]).
    pub(crate) fn not_started(&self) -> String {
        match self.reason() {
            Some(reason) => format!("server {:?} is not started: {reason}", self.name),
            None => format!("server {:?} is not started: its entry is invalid", self.name),
        }
    }

    /// Prints the server's warnings and errors on stderr, one `plexus: ...` line each.
    pub(crate) fn report_diagnostics(&self) {
        for diagnostic in self.warnings.iter().chain(&self.errors) {
            crate::terminal::say(format_args!("{diagnostic}"));
        }
    }
}

/// The configuration the commands work on.
pub(crate) struct Configured {
    /// Every server, valid or not, in name order.
    pub(crate) servers: Vec<Server>,
    /// The merged configuration (empty for the demo).
    pub(crate) merged: MergedConfig,
    /// Where it was found, and the one environment.
    pub(crate) discovery: DiscoveryOptions,
}

impl Configured {
    pub(crate) fn server(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|server| server.name == name)
    }

    /// What a command says of a server name that is not configured: the configured ones, and the
    /// nearest of them.
    pub(crate) fn unknown_server(&self, name: &str) -> String {
        let names = self.servers.iter().map(|server| server.name.as_str());
        format!(
            "no server named {name:?} is configured (configured: {}){}",
            self.names(),
            crate::suggest::did_you_mean(name, names)
        )
    }

    /// The servers' names for messages: `a, b` or `none`.
    pub(crate) fn names(&self) -> String {
        if self.servers.is_empty() {
            return "none".to_owned();
        }
        let names: Vec<&str> = self.servers.iter().map(|server| server.name.as_str()).collect();
        names.join(", ")
    }
}

/// Loads every scope. File-level problems (a file that cannot be read or parsed, settings and
/// policy problems, overridden entries' diagnostics) are printed on stderr as `plexus: ...` lines;
/// a file of any scope but the managed one that exists but cannot be loaded stops the command
/// (exit 2). When no config
/// file exists in any scope, the servers are the built-in demo.
pub(crate) fn load(
    discovery: &DiscoveryOptions,
    sources: &ConfigSources,
    ad_hoc: &AdHoc,
) -> Result<Configured, Outcome> {
    let merged = sources.load();
    let discovery = discovery.clone();
    // A server given on the command line is the only one: the config's are not looked at.
    match ad_hoc_server(ad_hoc) {
        Ok(Some(server)) => {
            return Ok(Configured {
                servers: vec![server],
                merged,
                discovery,
            });
        }
        Ok(None) => {}
        Err(message) => {
            crate::terminal::say(format_args!("{message}"));
            return Err(Outcome::Usage);
        }
    }
    // A file that exists but cannot be loaded stops the command: going on without it would run
    // other servers than the user wrote. (A managed file that cannot be applied already blocks
    // every server, each row saying why.)
    let report = plexus::StartupReport::of(&merged);
    for file in &report.broken_files {
        crate::terminal::say_error(&*file.error);
    }
    if report.blocking_file().is_some() {
        return Err(Outcome::Usage);
    }
    for diagnostic in &merged.diagnostics {
        crate::terminal::say(format_args!("{diagnostic}"));
    }
    let no_file = merged
        .files
        .iter()
        .all(|file| matches!(file.outcome, FileOutcome::Missing));
    if no_file {
        crate::terminal::note(format_args!(
            "no config file found, so this is the built-in demo server; add a real one with `plexus add NAME -- \
             COMMAND [ARGS...]` or `plexus add NAME URL` (see `plexus add --help`)"
        ));
        return Ok(Configured {
            servers: vec![demo_server()?],
            merged,
            discovery,
        });
    }
    let mut by_name: BTreeMap<String, Server> = BTreeMap::new();
    for server in &merged.servers {
        by_name.insert(server.name.to_string(), Server::merged(server));
    }
    for server in &merged.invalid {
        by_name.insert(server.name.clone(), Server::invalid(server));
    }
    Ok(Configured {
        servers: by_name.into_values().collect(),
        merged,
        discovery,
    })
}

/// The server `--stdio` or `--url` describe, if either is given.
pub(crate) fn ad_hoc_server(args: &AdHoc) -> Result<Option<Server>, String> {
    let (flag, kind, target, headers) = match (&args.stdio, &args.url) {
        (None, None) => return Ok(None),
        (Some(command), _) => {
            let words = shlex::split(command)
                .filter(|words| !words.is_empty())
                .ok_or_else(|| format!("--stdio {command:?} is not a command line (empty, or a quote left open)"))?;
            ("--stdio", Some(ServerKind::Stdio), words, Vec::new())
        }
        (None, Some(url)) => ("--url", None, vec![url.clone()], args.headers.clone()),
    };
    ServerName::validate(&args.name).map_err(|e| format!("--as {:?}: {e}", args.name))?;
    let env = crate::secrets::environment();
    let new = entry_from_args(kind, &target, &[], &headers, &env)
        .map_err(|e| format!("{flag}: {}", crate::terminal::chain(&e)))?;
    if flag == "--url" && new.entry["type"] == "stdio" {
        return Err(format!(
            "--url {:?} is not a URL plexus can connect to (http://, https://, ws:// or wss://)",
            target[0]
        ));
    }
    let (config, diagnostics) = ServerConfig::from_json(&new.entry).map_err(|errors| {
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        format!("{flag}: {}", errors.join("; "))
    })?;
    Ok(Some(Server {
        name: args.name.clone(),
        scope: None,
        source: None,
        config: Some(config),
        status: Some(EntryStatus::Active),
        warnings: new.warnings.into_iter().chain(diagnostics).collect(),
        errors: Vec::new(),
        overridden: Vec::new(),
        pending: None,
    }))
}

/// One stdio server: this very binary running `plexus demo-server`.
fn demo_server() -> Result<Server, Outcome> {
    let exe = std::env::current_exe().map_err(|e| {
        crate::terminal::say(format_args!(
            "cannot locate the plexus binary for the demo server: {}",
            crate::terminal::chain(&e)
        ));
        Outcome::Usage
    })?;
    let entry = StdioEntry {
        command: exe.to_string_lossy().into_owned(),
        args: vec!["demo-server".to_owned()],
        env: BTreeMap::new(),
        cwd: None,
        options: ServerOptions::default(),
    };
    Ok(Server {
        name: DEMO.to_owned(),
        scope: None,
        source: None,
        config: Some(ServerConfig::Stdio(entry)),
        status: Some(EntryStatus::Active),
        warnings: Vec::new(),
        errors: Vec::new(),
        overridden: Vec::new(),
        pending: None,
    })
}
