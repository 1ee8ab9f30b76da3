//! `${VAR}` and `${VAR:-default}` expansion in the fields of an entry that are handed to a process
//! or a connection.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Severity};
use crate::json::{index_path, key_path};

/// The longest string an expansion may produce, in bytes (1 MiB): a file of a few kilobytes that
/// repeats a large variable cannot make the process allocate without bound.
pub const MAX_EXPANDED_LEN: usize = 1024 * 1024;

/// Where `${VAR}` references look their values up: the process environment, or anything else (tests
/// use a fixed map, hosts may add their own variables).
#[derive(Clone)]
pub struct Environment(Arc<Lookup>);

/// A function from a variable's name to its value.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Environment {
    /// The variables of this process; a variable whose value is not valid Unicode counts as unset.
    pub fn process() -> Environment {
        Environment::from_fn(|name| {
            if name.is_empty() || name.contains(['=', '\0']) {
                return None;
            }
            std::env::var(name).ok()
        })
    }

    /// No variables at all.
    pub fn empty() -> Environment {
        Environment::from_fn(|_| None)
    }

    /// Variables looked up by `lookup`.
    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Environment {
        Environment(Arc::new(lookup))
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }
}

/// A fixed set of variables.
impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Environment {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Self {
        let map: BTreeMap<String, String> = pairs
            .into_iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect();
        Environment::from_fn(move |name| map.get(name).cloned())
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Environment(..)")
    }
}

/// The result of expanding one string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expanded {
    /// The text with every reference that could be resolved replaced.
    pub text: String,
    /// The variables referenced without a default that are not set, in order of first use, each
    /// once. Their references are left in `text` as written.
    pub missing: Vec<String>,
}

/// An expansion would produce more than [`MAX_EXPANDED_LEN`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expands to more than {limit} bytes")]
pub struct ExpansionTooLong {
    /// The limit, in bytes.
    pub limit: usize,
}

/// One `${...}` reference found in a text.
pub(crate) struct Reference<'t> {
    /// Byte offset of the `$`.
    pub(crate) start: usize,
    /// Byte offset just past the `}`.
    pub(crate) end: usize,
    /// Everything between `${` and `}`: never empty, never contains `}`.
    pub(crate) body: &'t str,
}

/// The `${...}` references of `text`, in order: `${` up to the first `}`. An unclosed `${` and an
/// empty `${}` are not references; neither is `$NAME` or a lone `$`.
pub(crate) fn references(text: &str) -> impl Iterator<Item = Reference<'_>> {
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let start = from + text.get(from..)?.find("${")?;
            let body_start = start + 2;
            let body_len = text[body_start..].find('}')?;
            from = body_start + body_len + 1;
            if body_len > 0 {
                return Some(Reference {
                    start,
                    end: from,
                    body: &text[body_start..body_start + body_len],
                });
            }
        }
    })
}

/// Expands `${VAR}` and `${VAR:-default}` in `text`.
///
/// `${VAR}` becomes the value of `VAR` if it is set (even to the empty string); otherwise it is kept
/// as written and `VAR` is listed as missing. `${VAR:-default}` becomes the value of `VAR` if it is
/// set and not empty, otherwise `default` (taken literally, up to the first `}`), as in the shell.
/// Nothing else is touched: `$VAR`, `$$`, a lone `$`, `${}` and an unclosed `${` stay as they are.
pub fn expand_vars(text: &str, env: &Environment) -> Result<Expanded, ExpansionTooLong> {
    let mut expanded = Expanded {
        text: String::new(),
        missing: Vec::new(),
    };
    let mut copied = 0;
    let push = |out: &mut String, piece: &str| {
        if out.len() + piece.len() > MAX_EXPANDED_LEN {
            return Err(ExpansionTooLong {
                limit: MAX_EXPANDED_LEN,
            });
        }
        out.push_str(piece);
        Ok(())
    };
    for reference in references(text) {
        push(&mut expanded.text, &text[copied..reference.start])?;
        copied = reference.end;
        let (name, default) = match reference.body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference.body, None),
        };
        match (env.get(name), default) {
            (Some(value), Some(default)) if value.is_empty() => {
                push(&mut expanded.text, default)?;
            }
            (Some(value), _) => push(&mut expanded.text, &value)?,
            (None, Some(default)) => push(&mut expanded.text, default)?,
            (None, None) => {
                push(&mut expanded.text, &text[reference.start..reference.end])?;
                if !expanded.missing.iter().any(|missing| missing == name) {
                    expanded.missing.push(name.to_owned());
                }
            }
        }
    }
    push(&mut expanded.text, &text[copied..])?;
    Ok(expanded)
}

/// An entry after expansion, with what could not be expanded.
#[derive(Debug)]
pub(crate) struct ExpandedEntry {
    /// The entry with its expandable fields expanded.
    pub(crate) value: Value,
    /// The field paths (`url`, `args[1]`, `env.TOKEN`) that still hold an unresolved reference.
    pub(crate) unresolved_fields: Vec<String>,
    /// A warning listing the missing variables, and an error for each field that grew too long.
    pub(crate) diagnostics: Vec<Diagnostic>,
}

/// The top-level string fields that are expanded.
const STRING_FIELDS: [&str; 8] = [
    "command",
    "cwd",
    "url",
    "headersHelper",
    "ca",
    "clientCert",
    "clientKey",
    "proxy",
];
/// The fields whose strings, inside an array or an object's values, are expanded.
const NESTED_FIELDS: [&str; 3] = ["args", "env", "headers"];

/// Expands the references in an entry's `command`, `args`, `env` values, `cwd`, `url`, `headers`
/// values, `headersHelper`, `ca`, `clientCert`, `clientKey` and `proxy`. Values of the wrong type are left for the entry reader to report.
pub(crate) fn expand_entry(entry: &Value, env: &Environment) -> ExpandedEntry {
    let mut value = entry.clone();
    let mut state = EntryExpansion {
        env,
        missing: Vec::new(),
        unresolved_fields: Vec::new(),
        diagnostics: Vec::new(),
    };
    if let Value::Object(object) = &mut value {
        for (key, field) in object.iter_mut() {
            if STRING_FIELDS.contains(&key.as_str()) {
                state.expand_value(field, key);
            } else if NESTED_FIELDS.contains(&key.as_str()) {
                match field {
                    Value::Array(items) => {
                        for (index, item) in items.iter_mut().enumerate() {
                            state.expand_value(item, &index_path(key, index));
                        }
                    }
                    Value::Object(map) => {
                        for (name, item) in map.iter_mut() {
                            state.expand_value(item, &key_path(key, name));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if !state.missing.is_empty() {
        // Each variable with the fields it is in, so that the user knows where to look.
        let names: Vec<String> = state
            .missing
            .iter()
            .map(|(name, fields)| format!("${{{name}}} in {}", fields.join(" and ")))
            .collect();
        state.diagnostics.insert(
            0,
            Diagnostic::new(
                Severity::Warning,
                None,
                format!("not set and without a default: {}; kept as written", names.join(", ")),
            ),
        );
    }
    ExpandedEntry {
        value,
        unresolved_fields: state.unresolved_fields,
        diagnostics: state.diagnostics,
    }
}

struct EntryExpansion<'e> {
    env: &'e Environment,
    /// Each variable that is not set, with the fields that refer to it, in the order found.
    missing: Vec<(String, Vec<String>)>,
    unresolved_fields: Vec<String>,
    diagnostics: Vec<Diagnostic>,
}

impl EntryExpansion<'_> {
    fn expand_value(&mut self, value: &mut Value, path: &str) {
        let Value::String(text) = value else { return };
        match expand_vars(text, self.env) {
            Ok(expanded) => {
                if !expanded.missing.is_empty() {
                    self.unresolved_fields.push(path.to_owned());
                }
                for name in expanded.missing {
                    match self.missing.iter_mut().find(|(missing, _)| *missing == name) {
                        Some((_, fields)) => fields.push(path.to_owned()),
                        None => self.missing.push((name, vec![path.to_owned()])),
                    }
                }
                *text = expanded.text;
            }
            Err(error) => self.diagnostics.push(Diagnostic::new(
                Severity::Error,
                Some(path.to_owned()),
                error.to_string(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> Environment {
        [("HOME", "/home/u"), ("EMPTY", ""), ("PORT", "8080")]
            .into_iter()
            .collect()
    }

    fn expand(text: &str) -> (String, Vec<String>) {
        let expanded = expand_vars(text, &env()).unwrap();
        (expanded.text, expanded.missing)
    }

    #[test]
    fn references_and_defaults() {
        assert_eq!(expand("${HOME}/x"), ("/home/u/x".into(), vec![]));
        assert_eq!(expand("${NOPE:-dflt}"), ("dflt".into(), vec![]));
        assert_eq!(expand("${PORT:-1}"), ("8080".into(), vec![]));
        assert_eq!(expand("${EMPTY:-d}"), ("d".into(), vec![]));
        assert_eq!(expand("[${EMPTY}]"), ("[]".into(), vec![]));
        assert_eq!(expand("${NOPE:-}"), (String::new(), vec![]));
        assert_eq!(expand("${A:-b:-c}"), ("b:-c".into(), vec![]));
    }

    #[test]
    fn missing_variables_stay_and_are_listed_once() {
        assert_eq!(
            expand("${A}-${B}-${A}-${HOME}"),
            ("${A}-${B}-${A}-/home/u".into(), vec!["A".into(), "B".into()])
        );
    }

    #[test]
    fn other_dollar_syntax_is_text() {
        for text in ["$HOME", "$$", "$", "${}", "${HOME", "a$", "$ {HOME}", "}${"] {
            assert_eq!(expand(text), (text.to_owned(), vec![]));
        }
        assert_eq!(expand("${}${HOME}"), ("${}/home/u".into(), vec![]));
        // The reference ends at the first `}`: the default is the literal text `${HOME`, and the
        // last `}` is text.
        assert_eq!(expand("${NOPE:-${HOME}}"), ("${HOME}".to_owned(), vec![]));
    }

    #[test]
    fn expansion_is_bounded() {
        let big: Environment = [("BIG", "x".repeat(MAX_EXPANDED_LEN / 2 + 1))].into_iter().collect();
        assert!(expand_vars("${BIG}", &big).is_ok());
        assert_eq!(
            expand_vars("${BIG}${BIG}", &big).unwrap_err().to_string(),
            "expands to more than 1048576 bytes"
        );
    }

    #[test]
    fn only_the_listed_fields_of_an_entry_are_expanded() {
        let entry = json!({
            "command": "${HOME}/bin/s",
            "args": ["--port", "${PORT}", 3, "${X}"],
            "env": {"T": "${Y}", "N": 1},
            "cwd": "${HOME}",
            "url": "http://h:${PORT}/",
            "headers": {"A": "${HOME}"},
            "headersHelper": "${HOME}/h",
            "other": "${HOME}",
            "oauth": {"clientId": "${HOME}"}
        });
        let expanded = expand_entry(&entry, &env());
        assert_eq!(
            expanded.value,
            json!({
                "command": "/home/u/bin/s",
                "args": ["--port", "8080", 3, "${X}"],
                "env": {"T": "${Y}", "N": 1},
                "cwd": "/home/u",
                "url": "http://h:8080/",
                "headers": {"A": "/home/u"},
                "headersHelper": "/home/u/h",
                "other": "${HOME}",
                "oauth": {"clientId": "${HOME}"}
            })
        );
        assert_eq!(expanded.unresolved_fields, ["args[3]", "env.T"]);
        let messages: Vec<String> = expanded.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            ["not set and without a default: ${X} in args[3], ${Y} in env.T; kept as written"]
        );
    }
}
