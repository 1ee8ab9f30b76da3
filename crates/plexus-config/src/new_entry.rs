//! New entries from what a person types (`plexus add`, `plexus add-json`), checked before they are
//! written.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Severity};
use crate::expand::expand_entry;
use crate::values::{env_name, header_name, header_value};
use crate::{Environment, ServerConfig, ServerKind};

/// Why a new entry could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EntryError {
    /// `--transport` names something other than `stdio`, `sse`, `http` or `ws`.
    #[error("unknown transport {0:?}; expected stdio, sse, http or ws")]
    UnknownTransport(String),
    /// Neither a URL nor a command was given.
    #[error("missing the server's URL, or -- COMMAND [ARGS...]")]
    NoTarget,
    /// A remote server was given something other than one URL (a command, or several words).
    #[error("{} {kind} server takes one URL ({}), not a command: got {given:?}", article(*.kind), url_schemes(*.kind))]
    NotOneUrl {
        /// The transport.
        kind: ServerKind,
        /// What was given, joined by spaces.
        given: String,
    },
    /// The one target looks like a URL of a scheme no transport speaks (`ftp://…`).
    #[error(
        "{url:?} is not a URL plexus can connect to (it takes http://, https://, ws:// or wss://); to run a \
         command with it as its only word, say --transport stdio"
    )]
    UnsupportedScheme {
        /// The URL given.
        url: String,
    },
    /// `-e` without `KEY=VALUE`, or with a bad key.
    #[error("invalid -e {arg:?}: {reason}")]
    BadEnv {
        /// The argument.
        arg: String,
        /// What is wrong.
        reason: String,
    },
    /// `-H` without `Name: value`, or with a bad name or value.
    #[error("invalid -H {arg:?}: {reason}")]
    BadHeader {
        /// The argument.
        arg: String,
        /// What is wrong.
        reason: String,
    },
    /// `-e` for a remote server.
    #[error("-e sets environment variables of a stdio server; {} {kind} server takes headers (-H)", article(*.kind))]
    EnvOnRemote {
        /// The transport.
        kind: ServerKind,
    },
    /// `-H` for a stdio server.
    #[error("-H sets headers of a remote server; a stdio server takes environment variables (-e)")]
    HeadersOnStdio,
    /// The JSON given to `add-json` does not parse.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// What the parser found wrong.
        message: String,
    },
    /// The entry has errors; every diagnostic (errors and warnings) is listed.
    #[error("the entry is invalid: {}", join(diagnostics))]
    Invalid {
        /// The diagnostics, each naming its field.
        diagnostics: Vec<Diagnostic>,
    },
}

fn join(diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<String> = diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.is_error())
        .map(ToString::to_string)
        .collect();
    errors.join("; ")
}

/// An entry ready to be written, as the user wrote it (`${VAR}` references unexpanded), with the
/// warnings found when checking it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    /// The entry's JSON.
    pub entry: Value,
    /// Warnings: unknown fields, unset variables, fields that can only be checked once their
    /// variables are set.
    pub warnings: Vec<Diagnostic>,
}

/// Parses a `--transport` value: `stdio`, `sse`, `http` (or `streamable-http`) or `ws`.
pub fn parse_transport(name: &str) -> Result<ServerKind, EntryError> {
    match ServerKind::from_config_type(name) {
        Some(kind @ (ServerKind::Stdio | ServerKind::Sse | ServerKind::Http | ServerKind::Ws)) => Ok(kind),
        _ => Err(EntryError::UnknownTransport(name.to_owned())),
    }
}

/// Builds the entry of `plexus add`: `target` is one URL or a command and its arguments, `env`
/// holds `KEY=VALUE` strings (`-e`), `headers` holds `Name: value` strings (`-H`).
///
/// Without a transport, a single `http(s)://` target is an `http` server, a single `ws(s)://`
/// target a `ws` server, and anything else a command. The entry is checked with `env_vars` for
/// `${VAR}` references.
pub fn entry_from_args(
    transport: Option<ServerKind>,
    target: &[String],
    env: &[String],
    headers: &[String],
    env_vars: &Environment,
) -> Result<NewEntry, EntryError> {
    if target.is_empty() {
        return Err(EntryError::NoTarget);
    }
    let kind = match (transport, target) {
        (Some(kind), _) => kind,
        (None, [url]) if has_scheme(url, &["http", "https"]) => ServerKind::Http,
        (None, [url]) if has_scheme(url, &["ws", "wss"]) => ServerKind::Ws,
        (None, [url]) if looks_like_url(url) => return Err(EntryError::UnsupportedScheme { url: url.clone() }),
        (None, _) => ServerKind::Stdio,
    };
    let mut entry = Map::new();
    entry.insert("type".into(), kind.as_str().into());
    if kind == ServerKind::Stdio {
        if !headers.is_empty() {
            return Err(EntryError::HeadersOnStdio);
        }
        entry.insert("command".into(), target[0].clone().into());
        if target.len() > 1 {
            entry.insert("args".into(), target[1..].to_vec().into());
        }
        if !env.is_empty() {
            let mut vars = Map::new();
            for arg in env {
                let (name, value) = split_env(arg)?;
                vars.insert(name.to_owned(), value.into());
            }
            entry.insert("env".into(), Value::Object(vars));
        }
    } else {
        if !env.is_empty() {
            return Err(EntryError::EnvOnRemote { kind });
        }
        let url = match target {
            // A URL, or one that a `${VAR}` reference will complete (checked then).
            [url] if url.contains("://") || url.contains("${") => url,
            _ => {
                return Err(EntryError::NotOneUrl {
                    kind,
                    given: target.join(" "),
                });
            }
        };
        entry.insert("url".into(), url.clone().into());
        if !headers.is_empty() {
            let mut map = Map::new();
            for arg in headers {
                let (name, value) = split_header(arg)?;
                map.insert(name.to_owned(), value.into());
            }
            entry.insert("headers".into(), Value::Object(map));
        }
    }
    checked(Value::Object(entry), env_vars)
}

/// Reads the entry of `plexus add-json`: one JSON object, checked with `env_vars` for `${VAR}`
/// references.
pub fn entry_from_json(text: &str, env_vars: &Environment) -> Result<NewEntry, EntryError> {
    let entry: Value = serde_json::from_str(text).map_err(|error| {
        let full = error.to_string();
        let position = format!(" at line {} column {}", error.line(), error.column());
        EntryError::Json {
            line: error.line(),
            column: error.column(),
            message: full.strip_suffix(&position).unwrap_or(&full).to_owned(),
        }
    })?;
    checked(entry, env_vars)
}

fn checked(entry: Value, env_vars: &Environment) -> Result<NewEntry, EntryError> {
    match check_entry(&entry, env_vars) {
        Ok(warnings) => Ok(NewEntry { entry, warnings }),
        Err(diagnostics) => Err(EntryError::Invalid { diagnostics }),
    }
}

/// Checks an entry as it would be written: its references are expanded with `env`, then it is
/// read like any entry.
///
/// An error in a field that still holds an unresolved `${VAR}` becomes a warning (the field can
/// only be checked once the variable is set), so an entry can be written before its variables
/// exist. `Ok` holds the warnings; `Err` holds every diagnostic, at least one an error.
pub fn check_entry(entry: &Value, env: &Environment) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let expanded = expand_entry(entry, env);
    let mut diagnostics = expanded.diagnostics;
    let found = match ServerConfig::from_json(&expanded.value) {
        Ok((_, warnings)) => warnings,
        Err(diagnostics) => diagnostics,
    };
    for mut diagnostic in found {
        let deferred = diagnostic.is_error()
            && diagnostic
                .field
                .as_ref()
                .is_some_and(|field| expanded.unresolved_fields.iter().any(|unresolved| unresolved == field));
        if deferred {
            diagnostic.severity = Severity::Warning;
            diagnostic.message = format!("cannot be checked until its variables are set ({})", diagnostic.message);
        }
        diagnostics.push(diagnostic);
    }
    if diagnostics.iter().any(Diagnostic::is_error) {
        Err(diagnostics)
    } else {
        Ok(diagnostics)
    }
}

/// `a` or `an` before the kind's name, as it is read aloud ("an http server", "a ws server").
fn article(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Http | ServerKind::Sse | ServerKind::SseIde => "an",
        _ => "a",
    }
}

/// The URL schemes of a remote kind, as a message lists them.
fn url_schemes(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Ws | ServerKind::WsIde => "ws:// or wss://",
        _ => "http:// or https://",
    }
}

/// Whether `text` starts like a URL: a scheme (a letter, then letters, digits, `+`, `-`, `.`)
/// and `://`.
fn looks_like_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

fn has_scheme(text: &str, schemes: &[&str]) -> bool {
    text.split_once("://")
        .is_some_and(|(scheme, _)| schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme)))
}

fn split_env(arg: &str) -> Result<(&str, &str), EntryError> {
    let bad = |reason: String| EntryError::BadEnv {
        arg: arg.to_owned(),
        reason,
    };
    let (name, value) = arg
        .split_once('=')
        .ok_or_else(|| bad("expected KEY=VALUE".to_owned()))?;
    env_name(name).map_err(bad)?;
    Ok((name, value))
}

fn split_header(arg: &str) -> Result<(&str, &str), EntryError> {
    let bad = |reason: String| EntryError::BadHeader {
        arg: arg.to_owned(),
        reason,
    };
    let (name, value) = arg
        .split_once(':')
        .ok_or_else(|| bad("expected 'Name: value'".to_owned()))?;
    let (name, value) = (name.trim(), value.trim());
    header_name(name).map_err(bad)?;
    header_value(value).map_err(bad)?;
    Ok((name, value))
}
