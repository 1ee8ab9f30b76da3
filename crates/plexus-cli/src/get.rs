//! `plexus get NAME`: one server's merged entry, as the commands that connect see it.

use std::fmt::Write;

use plexus::config::Scope;
use serde::Serialize;
use serde_json::Value;

use crate::output::print_json;
use crate::sources::{Configured, Server};
use crate::terminal::out;
use crate::{Outcome, fail};

/// `plexus get --json`: the stable shape.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerDetails {
    name: String,
    scope: Option<&'static str>,
    source: Option<String>,
    kind: Option<String>,
    /// `active`, `pending`, `disabled` or `failed` (the entry is invalid).
    status: &'static str,
    reason: Option<String>,
    /// The expanded entry as users write it; `null` when it is invalid.
    config: Option<Value>,
    warnings: Vec<String>,
    errors: Vec<String>,
    overridden: Vec<Overridden>,
    /// How the project's entry differs from the one approved, one line per field, when it
    /// changed since it was approved.
    changes: Vec<String>,
}

/// A lower scope's entry of the same name, not used.
#[derive(Debug, Serialize)]
struct Overridden {
    scope: &'static str,
    source: String,
}

impl ServerDetails {
    fn new(server: &Server) -> ServerDetails {
        ServerDetails {
            name: server.name.clone(),
            scope: server.scope.map(Scope::as_str),
            source: server.source.as_ref().map(|path| path.display().to_string()),
            kind: server.kind().map(|kind| kind.to_string()),
            status: server.state(),
            reason: server.reason(),
            config: server.config.as_ref().map(plexus::config::ServerConfig::to_json),
            warnings: server.warnings.iter().map(ToString::to_string).collect(),
            errors: server.errors.iter().map(ToString::to_string).collect(),
            overridden: server
                .overridden
                .iter()
                .map(|origin| Overridden {
                    scope: origin.scope.as_str(),
                    source: origin.file.display().to_string(),
                })
                .collect(),
            changes: server.changes(),
        }
    }
}

pub(crate) fn get_command(configured: &Configured, name: &str, json: bool) -> Outcome {
    let Some(server) = configured.server(name) else {
        return fail(configured.unknown_server(name));
    };
    let details = ServerDetails::new(server);
    if json {
        print_json(&details);
    } else {
        out!("{}", describe(&details));
    }
    Outcome::Ok
}

/// The human form: one `key: value` line per field that applies, then the entry as JSON.
fn describe(details: &ServerDetails) -> String {
    let mut lines: Vec<(&str, String)> = vec![("name", details.name.clone())];
    match (details.scope, &details.source) {
        (Some(scope), Some(source)) => {
            lines.push(("scope", scope.to_owned()));
            lines.push(("source", source.clone()));
        }
        _ => lines.push((
            "scope",
            "none (the built-in demo server: no config file exists)".to_owned(),
        )),
    }
    if let Some(kind) = &details.kind {
        lines.push(("kind", kind.clone()));
    }
    lines.push(("status", details.status.to_owned()));
    if let Some(reason) = &details.reason {
        lines.push(("reason", reason.clone()));
    }
    for overridden in &details.overridden {
        lines.push(("overrides", format!("{} ({})", overridden.source, overridden.scope)));
    }
    lines.extend(details.changes.iter().map(|change| ("changed", change.clone())));
    lines.extend(details.warnings.iter().map(|warning| ("warning", warning.clone())));
    lines.extend(details.errors.iter().map(|error| ("error", error.clone())));
    let width = lines.iter().map(|(key, _)| key.len()).max().unwrap_or(0) + 1;
    let mut out = String::new();
    for (key, value) in &lines {
        // Names, paths and messages may come from a repository's config: nothing in them may
        // drive the terminal.
        let _ = writeln!(out, "{:<width$} {}", format!("{key}:"), crate::terminal::line(value));
    }
    if let Some(config) = &details.config {
        let text = serde_json::to_string_pretty(config).unwrap_or_default();
        let _ = writeln!(out, "config:\n{text}");
    }
    out
}
