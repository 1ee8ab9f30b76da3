//! New entries checked before they are written: an entry's JSON as a person gives it (`plexus
//! add-json`), or as a host builds it from its own arguments ([`checked_entry`]).

use serde_json::Value;

use crate::JsonProblem;
use crate::diagnostic::{Diagnostic, Severity};
use crate::expand::expand_entry;
use crate::{Environment, ServerConfig};

/// Why a new entry could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// The JSON given to `add-json` does not parse.
    #[error("invalid JSON at line {line}, column {column}")]
    Json {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// What the parser found wrong.
        #[source]
        source: JsonProblem,
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

/// Reads the entry of `plexus add-json`: one JSON object, checked with `env_vars` for `${VAR}`
/// references.
pub fn entry_from_json(text: &str, env_vars: &Environment) -> Result<NewEntry, EntryError> {
    let entry: Value = serde_json::from_str(text).map_err(|error| {
        let (line, column, source) = JsonProblem::located(error);
        EntryError::Json { line, column, source }
    })?;
    checked_entry(entry, env_vars)
}

/// Checks `entry` (see [`check_entry`]) and returns it with its warnings, or every diagnostic
/// when it has errors.
pub fn checked_entry(entry: Value, env_vars: &Environment) -> Result<NewEntry, EntryError> {
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
