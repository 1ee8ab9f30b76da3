//! The commands that edit config files: `add`, `add-json`, `remove`, `approve`, `reject`. Each
//! edit keeps every other byte of the file and replaces it atomically (see `SettingsEdit`), and
//! prints one confirmation line naming the file it wrote.

use std::collections::BTreeSet;

use plexus::config::{ConfigFile, ConfigSources, NewEntry, Scope, ServerKind, ServerName, entry_from_json};
use serde_json::Value;

use crate::commands::read_stdin;
use crate::new_entry::entry_from_args;
use crate::terminal::outln;
use crate::{AddArgs, Outcome, fail};

/// `name` as a server name, or the reason it is not one.
fn server_name(name: &str) -> Result<ServerName, String> {
    ServerName::new(name).map_err(|e| format!("server {name:?}: {e}"))
}

/// `plexus add [--scope S] [--transport T] [-e KEY=VALUE]... [-H 'Name: value']... NAME (URL | -- COMMAND [ARGS...])`.
pub(crate) fn add(sources: &ConfigSources, args: &AddArgs) -> Outcome {
    let name = match server_name(&args.name) {
        Ok(name) => name,
        Err(e) => return fail(e),
    };
    match entry_from_args(args.transport, &args.target, &args.env, &args.headers, sources.env()) {
        Ok(entry) => write_new(sources, args.scope, &name, entry),
        Err(e) => crate::fail_error(&e),
    }
}

/// `plexus add-json NAME JSON [--scope S]`; `JSON` may be `-` for stdin.
pub(crate) fn add_json(sources: &ConfigSources, name: &str, json: &str, scope: Scope) -> Outcome {
    let name = match server_name(name) {
        Ok(name) => name,
        Err(e) => return fail(e),
    };
    let text = if json == "-" {
        match read_stdin() {
            Ok(text) => text,
            Err(e) => return fail(format!("cannot read the entry: {e}")),
        }
    } else {
        json.to_owned()
    };
    match entry_from_json(&text, sources.env()) {
        Ok(entry) => write_new(sources, scope, &name, entry),
        Err(e) => crate::fail_error(&e),
    }
}

/// The kind an entry written by `add` or `import` describes (its `type`; `stdio` when absent).
pub(crate) fn entry_kind(entry: &Value) -> ServerKind {
    entry
        .get("type")
        .and_then(Value::as_str)
        .and_then(ServerKind::from_config_type)
        .unwrap_or(ServerKind::Stdio)
}

fn write_new(sources: &ConfigSources, scope: Scope, name: &ServerName, new: NewEntry) -> Outcome {
    let path = match sources.add_server(scope, name, &new.entry) {
        Ok(path) => path,
        Err(e) => return crate::fail_error(&e),
    };
    for mut warning in new.warnings {
        warning.file = Some(path.clone());
        warning.server = Some(name.to_string());
        crate::terminal::say(format_args!("{warning}"));
    }
    outln!(
        "added {} server {:?} to {} ({scope} scope)",
        entry_kind(&new.entry),
        name.as_str(),
        path.display()
    );
    for (other, other_path) in sources.scopes_defining(name.as_str()) {
        if other > scope {
            outln!(
                "note: the {other} scope also defines {:?} ({}), and its entry is the one used",
                name.as_str(),
                other_path.display()
            );
        }
    }
    if scope == Scope::Project {
        outln!("project servers run once approved: plexus approve {name}");
    }
    Outcome::Ok
}

/// `plexus remove NAME [--scope S]`.
pub(crate) fn remove(sources: &ConfigSources, name: &str, scope: Option<Scope>) -> Outcome {
    match sources.remove_server(name, scope) {
        Ok((scope, path)) => {
            outln!("removed server {name:?} from {} ({scope} scope)", path.display());
            for (other, other_path) in sources.scopes_defining(name) {
                outln!(
                    "note: the {other} scope still defines {name:?} ({})",
                    other_path.display()
                );
            }
            Outcome::Ok
        }
        Err(e) => crate::fail_error(&e),
    }
}

/// `plexus approve NAME...` or `plexus approve --all` (every project server waiting for approval).
pub(crate) fn approve(sources: &ConfigSources, names: &[String], all: bool) -> Outcome {
    let names = if all {
        let merged = sources.load();
        let pending: Vec<ServerName> = merged.pending_approval().map(|server| server.name.clone()).collect();
        if pending.is_empty() {
            outln!("no project server is waiting for approval");
            return Outcome::Ok;
        }
        pending
    } else {
        match project_servers(sources, names) {
            Ok(names) => names,
            Err(outcome) => return outcome,
        }
    };
    match sources.approve(&names) {
        Ok(path) => {
            for name in &names {
                outln!(
                    "approved project server {:?} (recorded in {})",
                    name.as_str(),
                    path.display()
                );
            }
            Outcome::Ok
        }
        Err(e) => crate::fail_error(&e),
    }
}

/// `plexus reject NAME...`.
pub(crate) fn reject(sources: &ConfigSources, names: &[String]) -> Outcome {
    let names = match project_servers(sources, names) {
        Ok(names) => names,
        Err(outcome) => return outcome,
    };
    match sources.reject(&names) {
        Ok(path) => {
            for name in &names {
                outln!(
                    "rejected project server {:?} (recorded in {})",
                    name.as_str(),
                    path.display()
                );
            }
            Outcome::Ok
        }
        Err(e) => crate::fail_error(&e),
    }
}

/// `names` checked to be servers of the project file (each once, in the order given); every bad
/// one is reported.
fn project_servers(sources: &ConfigSources, names: &[String]) -> Result<Vec<ServerName>, Outcome> {
    let project_file = &sources.paths().project_file;
    let mut seen = BTreeSet::new();
    let mut checked = Vec::new();
    let mut failed = false;
    for name in names {
        if !seen.insert(name.as_str()) {
            continue;
        }
        let problem = match server_name(name) {
            Err(e) => e,
            Ok(server)
                if sources
                    .scopes_defining(name)
                    .iter()
                    .any(|(scope, _)| *scope == Scope::Project) =>
            {
                checked.push(server);
                continue;
            }
            Ok(_) => match ConfigFile::load(project_file) {
                Err(e) if !e.is_not_found() => crate::terminal::chain(&e),
                _ => format!(
                    "{}: there is no server {name:?}; only the project's servers need approval",
                    project_file.display()
                ),
            },
        };
        crate::terminal::say(format_args!("{problem}"));
        failed = true;
    }
    if failed { Err(Outcome::Usage) } else { Ok(checked) }
}
