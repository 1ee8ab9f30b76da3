//! The conversion every import shares: names, a missing `type`, the editors' `${...}` variables,
//! and the final check of each entry.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{ImportContext, ImportInput, ImportNote, ImportSource, NoteKind, cursor, vscode};
use crate::expand::references;
use crate::json::{describe, index_path, key_path, quote};
use crate::{ServerName, check_entry};

/// A note about server `server` (its name in the source file).
pub(super) fn note(kind: NoteKind, server: &str, field: Option<&str>, message: impl Into<String>) -> ImportNote {
    ImportNote {
        kind,
        server: Some(server.to_owned()),
        field: field.map(str::to_owned),
        message: message.into(),
    }
}

/// Calls `visit` on every string in `value` (not on object keys).
pub(super) fn for_each_string(value: &mut Value, visit: &mut dyn FnMut(&mut String)) {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => {
            for item in items {
                for_each_string(item, visit);
            }
        }
        Value::Object(object) => {
            for (_, item) in object.iter_mut() {
                for_each_string(item, visit);
            }
        }
        _ => {}
    }
}

/// A VS Code input declaration.
#[derive(Debug, Clone)]
pub(super) struct InputDecl {
    pub(super) id: String,
    pub(super) description: Option<String>,
    pub(super) password: bool,
    pub(super) default: Option<String>,
}

/// The variable an input becomes: its id in upper case, with every character outside `A-Z`,
/// `0-9` and `_` replaced by `_` (`api-key` → `API_KEY`).
pub(super) fn input_variable(id: &str) -> String {
    let mut variable: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if variable.is_empty() || variable.starts_with(|c: char| c.is_ascii_digit()) {
        variable.insert(0, '_');
    }
    variable
}

/// Converts the entries of one file.
pub(super) struct Converter<'c> {
    source: ImportSource,
    context: &'c ImportContext,
    inputs: BTreeMap<String, InputDecl>,
    used_inputs: Vec<String>,
}

impl<'c> Converter<'c> {
    pub(super) fn new(source: ImportSource, context: &'c ImportContext) -> Self {
        Converter {
            source,
            context,
            inputs: BTreeMap::new(),
            used_inputs: Vec::new(),
        }
    }

    /// Makes VS Code's `inputs` known, so `${input:id}` references can be converted.
    pub(super) fn declare_inputs(&mut self, inputs: Vec<InputDecl>) {
        self.inputs = inputs.into_iter().map(|input| (input.id.clone(), input)).collect();
    }

    /// The inputs the converted servers use, in order of first use, with a note for each telling
    /// the user what to set.
    pub(super) fn finish(self, notes: &mut Vec<ImportNote>) -> Vec<ImportInput> {
        let mut inputs = Vec::new();
        for id in self.used_inputs {
            let declared = self.inputs.get(&id);
            let input = ImportInput {
                variable: input_variable(&id),
                description: declared.and_then(|input| input.description.clone()),
                password: declared.is_some_and(|input| input.password),
                id,
            };
            let described = input
                .description
                .as_deref()
                .map(|description| format!(" ({description})"))
                .unwrap_or_default();
            notes.push(ImportNote {
                kind: NoteKind::Warning,
                server: None,
                field: None,
                message: format!(
                    "input {}{described} is now the variable ${{{}}}: set {} in the environment, or give its value when asked",
                    quote(&input.id),
                    input.variable,
                    input.variable
                ),
            });
            inputs.push(input);
        }
        inputs
    }

    /// Converts the entry `original` (its name in the source file), or says why it is skipped.
    pub(super) fn convert(
        &mut self,
        original: &str,
        entry: &Value,
        notes: &mut Vec<ImportNote>,
    ) -> Option<(ServerName, Value)> {
        let Some(name) = ServerName::sanitize(original) else {
            notes.push(note(
                NoteKind::Skipped,
                original,
                None,
                "an empty name cannot be a server name",
            ));
            return None;
        };
        if name.as_str() != original {
            notes.push(note(NoteKind::Changed, original, None, crate::name::renamed(&name)));
        }
        let Value::Object(object) = entry else {
            notes.push(note(
                NoteKind::Skipped,
                original,
                None,
                format!(
                    "expected an object with the server's settings, found {}",
                    describe(entry)
                ),
            ));
            return None;
        };
        let mut object = object.clone();
        match self.source {
            ImportSource::VsCode => vscode::adapt(&mut object, original, notes),
            ImportSource::Cursor => cursor::adapt(&mut object, original, notes),
            ImportSource::ClaudeDesktop | ImportSource::ClaudeCode => {}
        }
        if !object.contains_key("type") && object.contains_key("url") {
            object.insert("type".into(), "http".into());
            notes.push(note(
                NoteKind::Changed,
                original,
                Some("type"),
                "added \"http\" (Streamable HTTP): the entry has a URL and no type; use \"sse\" for a legacy HTTP+SSE server",
            ));
        }
        let mut entry = Value::Object(object);
        if matches!(self.source, ImportSource::VsCode | ImportSource::Cursor) {
            self.convert_variables(&mut entry, "", original, notes);
        }
        match check_entry(&entry, &self.context.env) {
            Ok(warnings) => {
                for warning in warnings {
                    notes.push(note(
                        NoteKind::Warning,
                        original,
                        warning.field.as_deref(),
                        warning.message,
                    ));
                }
                Some((name, entry))
            }
            Err(diagnostics) => {
                let errors: Vec<String> = diagnostics
                    .iter()
                    .filter(|diagnostic| diagnostic.is_error())
                    .map(ToString::to_string)
                    .collect();
                notes.push(note(
                    NoteKind::Skipped,
                    original,
                    None,
                    format!("the entry is invalid: {}", errors.join("; ")),
                ));
                None
            }
        }
    }

    /// Rewrites the editor variables in every string of `value` (found at `path`).
    fn convert_variables(&mut self, value: &mut Value, path: &str, server: &str, notes: &mut Vec<ImportNote>) {
        match value {
            Value::String(text) => self.convert_text(text, path, server, notes),
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    self.convert_variables(item, &index_path(path, index), server, notes);
                }
            }
            Value::Object(object) => {
                for (key, item) in object.iter_mut() {
                    self.convert_variables(item, &key_path(path, key), server, notes);
                }
            }
            _ => {}
        }
    }

    fn convert_text(&mut self, text: &mut String, path: &str, server: &str, notes: &mut Vec<ImportNote>) {
        let mut out = String::new();
        let mut copied = 0;
        let mut changes = Vec::new();
        for reference in references(text) {
            let written = &text[reference.start..reference.end];
            let Some(replacement) = self.replacement(reference.body, written, path, server, notes) else {
                continue;
            };
            changes.push(if replacement.starts_with("${") {
                format!("{written} with {replacement}")
            } else {
                format!("{written} with {}", quote(&replacement))
            });
            out.push_str(&text[copied..reference.start]);
            out.push_str(&replacement);
            copied = reference.end;
        }
        if changes.is_empty() {
            return;
        }
        out.push_str(&text[copied..]);
        *text = out;
        notes.push(note(
            NoteKind::Changed,
            server,
            Some(path),
            format!("replaced {}", changes.join(", ")),
        ));
    }

    /// What the reference `${body}` becomes, or `None` to keep it (plexus reads `${NAME}` and
    /// `${NAME:-default}` itself).
    fn replacement(
        &mut self,
        body: &str,
        written: &str,
        path: &str,
        server: &str,
        notes: &mut Vec<ImportNote>,
    ) -> Option<String> {
        let home = &self.context.user_home;
        let project = &self.context.project_dir;
        let shown = |path: &Path| path.to_string_lossy().into_owned();
        match body {
            "workspaceFolder" => return Some(shown(project)),
            "workspaceFolderBasename" => {
                return Some(
                    project
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                );
            }
            "userHome" => return Some(shown(home)),
            "pathSeparator" | "/" => return Some("/".to_owned()),
            _ => {}
        }
        let (namespace, rest) = body.split_once(':')?;
        if rest.starts_with('-') {
            // `${NAME:-default}`: plexus's own syntax.
            return None;
        }
        match namespace {
            "env" => Some(format!("${{{rest}}}")),
            "input" if self.source == ImportSource::VsCode => {
                if !self.used_inputs.iter().any(|id| id == rest) {
                    self.used_inputs.push(rest.to_owned());
                }
                let variable = input_variable(rest);
                let Some(input) = self.inputs.get(rest) else {
                    notes.push(note(
                        NoteKind::Warning,
                        server,
                        Some(path),
                        format!("{written} names no input declared in \"inputs\""),
                    ));
                    return Some(format!("${{{variable}}}"));
                };
                Some(match &input.default {
                    Some(default) if !default.contains('}') => {
                        format!("${{{variable}:-{default}}}")
                    }
                    _ => format!("${{{variable}}}"),
                })
            }
            _ => {
                notes.push(note(
                    NoteKind::Warning,
                    server,
                    Some(path),
                    format!("{written} has no plexus equivalent; kept as written, replace it by hand"),
                ));
                None
            }
        }
    }
}

/// Moves the string-or-number values of `env` to strings and drops `null`s (VS Code and Cursor
/// accept both), noting each change.
pub(super) fn normalize_env(object: &mut Map<String, Value>, server: &str, notes: &mut Vec<ImportNote>) {
    let Some(Value::Object(env)) = object.get_mut("env") else {
        return;
    };
    let keys: Vec<String> = env.keys().cloned().collect();
    for key in keys {
        let field = key_path("env", &key);
        match env.get(&key) {
            Some(Value::Number(number)) => {
                let text = number.to_string();
                notes.push(note(
                    NoteKind::Changed,
                    server,
                    Some(&field),
                    format!("the number {text} is now the string {}", quote(&text)),
                ));
                env.insert(key, Value::String(text));
            }
            Some(Value::Bool(flag)) => {
                let text = flag.to_string();
                notes.push(note(
                    NoteKind::Changed,
                    server,
                    Some(&field),
                    format!("{text} is now the string {}", quote(&text)),
                ));
                env.insert(key, Value::String(text));
            }
            Some(Value::Null) => {
                env.remove(&key);
                notes.push(note(
                    NoteKind::Skipped,
                    server,
                    Some(&field),
                    "null (unset the variable) has no plexus equivalent; left out",
                ));
            }
            _ => {}
        }
    }
}

/// Drops `key` from the entry with a note saying why.
pub(super) fn drop_field(
    object: &mut Map<String, Value>,
    key: &str,
    server: &str,
    why: &str,
    notes: &mut Vec<ImportNote>,
) {
    if object.remove(key).is_some() {
        notes.push(note(NoteKind::Skipped, server, Some(key), why));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_variables_are_made_valid() {
        assert_eq!(input_variable("api-key"), "API_KEY");
        assert_eq!(input_variable("github.token2"), "GITHUB_TOKEN2");
        assert_eq!(input_variable("1st"), "_1ST");
        assert_eq!(ServerName::sanitize("my server.v2").unwrap().as_str(), "my_server_v2");
        assert_eq!(ServerName::sanitize(&"é".repeat(70)).unwrap().as_str(), "_".repeat(64));
        assert!(ServerName::sanitize("").is_none());
    }
}
