//! Small helpers for talking about JSON values in messages: what was found, quoted names, field paths.

use serde_json::Value;

/// At most this many characters of a user-supplied name are shown in a message.
const MAX_SHOWN_CHARS: usize = 64;

/// Describes a value that was found where something else was expected: `3`, `true`, `null`,
/// `a string`, `an array`, `an object`.
///
/// String contents are never shown: a misplaced string is often a secret (a token where an object
/// of headers belongs), and messages end up in logs.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// Quotes a user-supplied name as a JSON string (so quotes and control characters are escaped),
/// shortened to [`MAX_SHOWN_CHARS`] characters with a trailing `…`.
pub(crate) fn quote(name: &str) -> String {
    let shown: String = name.chars().take(MAX_SHOWN_CHARS).collect();
    // Serializing a `&str` cannot fail.
    let mut quoted = serde_json::to_string(&shown).unwrap_or_default();
    if shown.len() < name.len() {
        quoted.insert(quoted.len() - 1, '…');
    }
    quoted
}

/// The path of `key` inside the object at `parent` (empty for an entry's top level):
/// `command`, `oauth.clientId`, `env.PORT`.
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// The path of element `index` of the array at `parent`: `args[2]`.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn describes_each_kind_of_value() {
        assert_eq!(describe(&json!(null)), "null");
        assert_eq!(describe(&json!(false)), "false");
        assert_eq!(describe(&json!(3)), "3");
        assert_eq!(describe(&json!(-2.5)), "-2.5");
        assert_eq!(describe(&json!("secret")), "a string");
        assert_eq!(describe(&json!([1])), "an array");
        assert_eq!(describe(&json!({})), "an object");
    }

    #[test]
    fn quotes_and_shortens_names() {
        assert_eq!(quote("x"), "\"x\"");
        assert_eq!(quote("a\"b\n"), "\"a\\\"b\\n\"");
        let long = "n".repeat(70);
        assert_eq!(quote(&long), format!("\"{}…\"", "n".repeat(64)));
    }

    #[test]
    fn builds_field_paths() {
        assert_eq!(key_path("", "command"), "command");
        assert_eq!(key_path("oauth", "clientId"), "oauth.clientId");
        assert_eq!(key_path("env", "MY_VAR"), "env.MY_VAR");
        assert_eq!(key_path("headers", "X Custom"), "headers.X Custom");
        assert_eq!(index_path("args", 2), "args[2]");
    }
}
