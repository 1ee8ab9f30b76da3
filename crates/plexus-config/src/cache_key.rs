//! The identity of a server's connection: its name and the canonical JSON of its expanded entry.

use serde_json::Value;

use crate::ServerConfig;

/// The canonical JSON text of `value`: object keys sorted (by their UTF-8 bytes), no whitespace,
/// strings escaped as `serde_json` does, numbers as `serde_json` prints them.
///
/// Two values that are equal as JSON give the same text, whatever the order of their keys.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(object) => {
            let mut members: Vec<(&String, &Value)> = object.iter().collect();
            members.sort_unstable_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (index, (key, member)) in members.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
    }
}

fn write_string(text: &str, out: &mut String) {
    // Serializing a string to JSON cannot fail.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

/// The SHA-256 of `bytes`, as 64 lowercase hexadecimal digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// The key under which a connection to server `name` with the (expanded) entry `config` is
/// memoized: `name`, a `:`, then the canonical JSON of [`ServerConfig::to_json`].
///
/// It does not depend on how the entry was written (key order, spacing, a missing `"type"`,
/// `"streamable-http"` for `"http"`), and it changes whenever any field changes, unknown fields
/// included. A valid server name ([`ServerName`](crate::ServerName)) never contains `:`, so the key
/// splits back unambiguously.
pub fn cache_key(name: &str, config: &ServerConfig) -> String {
    format!("{name}:{}", canonical_json(&config.to_json()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_whitespace_dropped() {
        let value: Value = serde_json::from_str(r#"{ "b": [1, {"z": null, "a": true}], "a": "x\"y" }"#).unwrap();
        assert_eq!(canonical_json(&value), r#"{"a":"x\"y","b":[1,{"a":true,"z":null}]}"#);
    }

    #[test]
    fn the_key_normalizes_how_the_entry_was_written() {
        let name = "docs";
        let written = |value: Value| ServerConfig::from_json(&value).unwrap().0;
        let a = written(json!({"type": "streamable-http", "url": "HTTPS://Example.com"}));
        let b = written(json!({"url": "https://example.com/", "type": "http"}));
        assert_eq!(cache_key(name, &a), cache_key(name, &b));
        assert_eq!(
            cache_key(name, &a),
            r#"docs:{"type":"http","url":"https://example.com/"}"#
        );
        let stdio = written(json!({"command": "c"}));
        assert_eq!(cache_key(name, &stdio), r#"docs:{"command":"c","type":"stdio"}"#);
    }
}
