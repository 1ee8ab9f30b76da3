//! Where things are in a JSON text, so that an edit can replace one member and leave every other
//! byte of the file as it was (order, spacing, formatting of the keys it does not touch).
//!
//! The text has already been checked by the JSON parser; the scanner still never panics on bad
//! input, it just finds nothing. Nested values are skipped with a depth counter, not recursion.

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::{PrettyFormatter, Serializer};

/// One `"key": value` member of an object, by byte offsets into the text.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) key: String,
    pub(crate) key_start: usize,
    pub(crate) value_start: usize,
    pub(crate) value_end: usize,
}

/// An object: its braces and its members in order.
#[derive(Debug, Clone)]
pub(crate) struct ObjectSpan {
    pub(crate) open: usize,
    pub(crate) close: usize,
    pub(crate) members: Vec<Member>,
}

impl ObjectSpan {
    /// The last member called `key` (the one a JSON parser keeps).
    pub(crate) fn last(&self, key: &str) -> Option<&Member> {
        self.members.iter().rev().find(|member| member.key == key)
    }
}

/// Which object an edit applies to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'k> {
    /// The top-level object.
    TopLevel,
    /// The object that is the value of this top-level key.
    Member(&'k str),
}

struct Scanner<'t> {
    bytes: &'t [u8],
}

impl Scanner<'_> {
    fn skip_whitespace(&self, mut pos: usize) -> usize {
        while matches!(self.bytes.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            pos += 1;
        }
        pos
    }

    /// The end (past the closing quote) of the string starting at `pos`.
    fn string_end(&self, mut pos: usize) -> Option<usize> {
        if self.bytes.get(pos) != Some(&b'"') {
            return None;
        }
        pos += 1;
        loop {
            match self.bytes.get(pos)? {
                b'"' => return Some(pos + 1),
                b'\\' => pos += 2,
                _ => pos += 1,
            }
        }
    }

    /// The end of the value starting at `pos`.
    fn value_end(&self, pos: usize) -> Option<usize> {
        match self.bytes.get(pos)? {
            b'"' => self.string_end(pos),
            b'{' | b'[' => {
                let mut depth = 0usize;
                let mut at = pos;
                loop {
                    match self.bytes.get(at)? {
                        b'"' => {
                            at = self.string_end(at)?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(at + 1);
                            }
                        }
                        _ => {}
                    }
                    at += 1;
                }
            }
            _ => {
                let mut at = pos;
                while let Some(byte) = self.bytes.get(at) {
                    if matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    at += 1;
                }
                (at > pos).then_some(at)
            }
        }
    }

    fn object(&self, open: usize) -> Option<ObjectSpan> {
        if self.bytes.get(open) != Some(&b'{') {
            return None;
        }
        let mut members = Vec::new();
        let mut pos = self.skip_whitespace(open + 1);
        if self.bytes.get(pos) == Some(&b'}') {
            return Some(ObjectSpan {
                open,
                close: pos,
                members,
            });
        }
        loop {
            let key_start = pos;
            let key_end = self.string_end(key_start)?;
            let key: String = serde_json::from_slice(&self.bytes[key_start..key_end]).ok()?;
            pos = self.skip_whitespace(key_end);
            if self.bytes.get(pos) != Some(&b':') {
                return None;
            }
            let value_start = self.skip_whitespace(pos + 1);
            let value_end = self.value_end(value_start)?;
            members.push(Member {
                key,
                key_start,
                value_start,
                value_end,
            });
            pos = self.skip_whitespace(value_end);
            match self.bytes.get(pos)? {
                b',' => pos = self.skip_whitespace(pos + 1),
                b'}' => {
                    return Some(ObjectSpan {
                        open,
                        close: pos,
                        members,
                    });
                }
                _ => return None,
            }
        }
    }
}

/// The object `target` in `text`, if it is there and is an object.
pub(crate) fn locate(text: &str, target: Target<'_>) -> Option<ObjectSpan> {
    let scanner = Scanner { bytes: text.as_bytes() };
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let top = scanner.object(scanner.skip_whitespace(start))?;
    match target {
        Target::TopLevel => Some(top),
        Target::Member(key) => scanner.object(top.last(key)?.value_start),
    }
}

/// The indentation of the line holding `pos`: the spaces and tabs at its start.
fn line_indent(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map_or(0, |newline| newline + 1);
    let line = &text[line_start..];
    let width = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..width]
}

/// The file's indentation step: that of the top-level object's first member, or two spaces.
pub(crate) fn indent_unit(text: &str) -> String {
    locate(text, Target::TopLevel)
        .and_then(|top| {
            let first = top.members.first()?;
            let indent = line_indent(text, first.key_start);
            let on_own_line =
                text[..first.key_start].ends_with(indent) && text[..first.key_start - indent.len()].ends_with('\n');
            (on_own_line && !indent.is_empty()).then(|| indent.to_owned())
        })
        .unwrap_or_else(|| "  ".to_owned())
}

/// `value` as pretty JSON indented by `unit`, with every line after the first prefixed by
/// `indent` (JSON strings never hold a raw newline, so this touches only the layout).
fn render(value: &Value, unit: &str, indent: &str) -> String {
    let mut out = Vec::new();
    let mut serializer = Serializer::with_formatter(&mut out, PrettyFormatter::with_indent(unit.as_bytes()));
    // Serializing a `Value` into memory cannot fail.
    let _ = value.serialize(&mut serializer);
    String::from_utf8_lossy(&out).replace('\n', &format!("\n{indent}"))
}

fn key_json(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_default()
}

/// Sets member `key` of the object `target` to `value`: the last member of that name has its
/// value replaced in place; otherwise a member is added at the end, laid out like its siblings.
/// Returns `false` if `target` is not an object in `text`.
pub(crate) fn set_member(text: &mut String, target: Target<'_>, key: &str, value: &Value) -> bool {
    let unit = indent_unit(text);
    let Some(object) = locate(text, target) else {
        return false;
    };
    // An object laid out on one line stays on one line.
    let one_line = !text[object.open..object.close].contains('\n');
    if let Some(member) = object.last(key) {
        let rendered = if one_line {
            value.to_string()
        } else {
            render(value, &unit, line_indent(text, member.key_start))
        };
        text.replace_range(member.value_start..member.value_end, &rendered);
        return true;
    }
    let key = key_json(key);
    match (object.members.first(), object.members.last()) {
        (Some(first), Some(last)) => {
            let insertion = if one_line {
                format!(", {key}: {value}")
            } else {
                let indent = line_indent(text, first.key_start).to_owned();
                format!(",\n{indent}{key}: {}", render(value, &unit, &indent))
            };
            text.insert_str(last.value_end, &insertion);
        }
        _ => {
            let outer = line_indent(text, object.open).to_owned();
            let inner = format!("{outer}{unit}");
            let body = format!("\n{inner}{key}: {}\n{outer}", render(value, &unit, &inner));
            text.replace_range(object.open + 1..object.close, &body);
        }
    }
    true
}

/// Removes every member called `key` from the object `target`, with the comma and layout that
/// belonged to it. Returns whether anything was removed.
pub(crate) fn remove_member(text: &mut String, target: Target<'_>, key: &str) -> bool {
    let mut removed = false;
    while let Some(object) = locate(text, target) {
        let Some(index) = object.members.iter().rposition(|member| member.key == key) else {
            break;
        };
        let members = &object.members;
        let range = if members.len() == 1 {
            object.open + 1..object.close
        } else if index > 0 {
            members[index - 1].value_end..members[index].value_end
        } else {
            members[0].key_start..members[1].key_start
        };
        text.replace_range(range, "");
        removed = true;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_members_and_nested_objects() {
        let text = r#" { "a" : [1, "]}", {"x": "\"}"}], "mcpServers": {"s": {"command": "c"}}, "z": -1.5e3 } "#;
        let top = locate(text, Target::TopLevel).unwrap();
        let keys: Vec<&str> = top.members.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["a", "mcpServers", "z"]);
        let z = top.last("z").unwrap();
        assert_eq!(&text[z.value_start..z.value_end], "-1.5e3");
        let servers = locate(text, Target::Member("mcpServers")).unwrap();
        let s = servers.last("s").unwrap();
        assert_eq!(&text[s.value_start..s.value_end], r#"{"command": "c"}"#);
        assert!(locate(text, Target::Member("z")).is_none());
        assert!(locate("[1]", Target::TopLevel).is_none());
        assert!(locate("{\"a\": ", Target::TopLevel).is_none());
    }

    #[test]
    fn replaces_in_place_and_appends_like_the_siblings() {
        let mut text = "{\n    \"b\": 1,\n    \"a\": {\"keep\": true}\n}\n".to_owned();
        assert!(set_member(&mut text, Target::TopLevel, "b", &json!([1, 2])));
        assert!(set_member(&mut text, Target::TopLevel, "c", &json!({"k": "v"})));
        assert_eq!(
            text,
            "{\n    \"b\": [\n        1,\n        2\n    ],\n    \"a\": {\"keep\": true},\n    \"c\": {\n        \"k\": \"v\"\n    }\n}\n"
        );
    }

    #[test]
    fn fills_empty_objects_and_extends_one_line_objects() {
        let mut text = "{}".to_owned();
        set_member(&mut text, Target::TopLevel, "mcpServers", &json!({}));
        assert_eq!(text, "{\n  \"mcpServers\": {}\n}");
        set_member(&mut text, Target::Member("mcpServers"), "x", &json!({"command": "c"}));
        assert_eq!(
            text,
            "{\n  \"mcpServers\": {\n    \"x\": {\n      \"command\": \"c\"\n    }\n  }\n}"
        );
        let mut text = r#"{"a": 1}"#.to_owned();
        set_member(&mut text, Target::TopLevel, "b", &json!({"c": [true]}));
        assert_eq!(text, r#"{"a": 1, "b": {"c":[true]}}"#);
    }

    #[test]
    fn removes_members_with_their_commas() {
        let original = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}";
        for (key, expected) in [
            ("a", "{\n  \"b\": 2,\n  \"c\": 3\n}"),
            ("b", "{\n  \"a\": 1,\n  \"c\": 3\n}"),
            ("c", "{\n  \"a\": 1,\n  \"b\": 2\n}"),
        ] {
            let mut text = original.to_owned();
            assert!(remove_member(&mut text, Target::TopLevel, key));
            assert_eq!(text, expected);
        }
        let mut text = r#"{"a": 1, "a": 2, "b": 3, "a": 4}"#.to_owned();
        assert!(remove_member(&mut text, Target::TopLevel, "a"));
        assert_eq!(text, r#"{"b": 3}"#);
        assert!(remove_member(&mut text, Target::TopLevel, "b"));
        assert_eq!(text, "{}");
        assert!(!remove_member(&mut text, Target::TopLevel, "b"));
    }

    #[test]
    fn keeps_the_tab_indentation_of_the_file() {
        let mut text = "{\n\t\"a\": 1\n}".to_owned();
        set_member(&mut text, Target::TopLevel, "b", &json!({"c": 1}));
        assert_eq!(text, "{\n\t\"a\": 1,\n\t\"b\": {\n\t\t\"c\": 1\n\t}\n}");
    }
}
