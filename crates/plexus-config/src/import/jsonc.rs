//! JSON with comments and trailing commas (the form VS Code and Cursor accept) turned into JSON,
//! keeping every line and column where it was so that parse errors point at the right place.

/// Replaces `//` and `/* */` comments and trailing commas (before `}` or `]`) with spaces; newlines
/// inside comments are kept. Text inside strings is untouched.
pub(crate) fn strip(text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    blank_comments(&mut bytes);
    blank_trailing_commas(&mut bytes);
    // Only ASCII bytes and whole multi-byte characters (inside comments) were replaced by spaces.
    String::from_utf8(bytes).unwrap_or_else(|_| text.to_owned())
}

fn blank_comments(bytes: &mut [u8]) {
    let mut at = 0;
    while at < bytes.len() {
        match (bytes[at], bytes.get(at + 1)) {
            (b'"', _) => at = string_end(bytes, at),
            (b'/', Some(b'/')) => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    bytes[at] = b' ';
                    at += 1;
                }
            }
            (b'/', Some(b'*')) => {
                bytes[at] = b' ';
                bytes[at + 1] = b' ';
                at += 2;
                while at < bytes.len() {
                    if bytes[at] == b'*' && bytes.get(at + 1) == Some(&b'/') {
                        bytes[at] = b' ';
                        bytes[at + 1] = b' ';
                        at += 2;
                        break;
                    }
                    if bytes[at] != b'\n' {
                        bytes[at] = b' ';
                    }
                    at += 1;
                }
            }
            _ => at += 1,
        }
    }
}

fn blank_trailing_commas(bytes: &mut [u8]) {
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => at = string_end(bytes, at),
            b',' => {
                let next = bytes[at + 1..]
                    .iter()
                    .position(|byte| !byte.is_ascii_whitespace())
                    .map(|offset| bytes[at + 1 + offset]);
                if matches!(next, Some(b'}' | b']')) {
                    bytes[at] = b' ';
                }
                at += 1;
            }
            _ => at += 1,
        }
    }
}

/// The index just past the string that starts at `start` (or the end of the text).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::strip;

    #[test]
    fn comments_and_trailing_commas_become_spaces() {
        let text = "{\n  // a comment\n  \"a\": \"//not\", /* x\n y */ \"b\": [1, 2,],\n}";
        let stripped = strip(text);
        assert_eq!(stripped.len(), text.len());
        assert_eq!(
            stripped,
            "{\n              \n  \"a\": \"//not\",     \n      \"b\": [1, 2 ] \n}"
        );
        let value: serde_json::Value = serde_json::from_str(&stripped).unwrap();
        assert_eq!(value, serde_json::json!({"a": "//not", "b": [1, 2]}));
    }

    #[test]
    fn strings_with_escapes_and_unclosed_input_are_safe() {
        assert_eq!(strip(r#"{"a": "\" // ,}"}"#), r#"{"a": "\" // ,}"}"#);
        assert_eq!(strip("/* é"), "     ");
        assert_eq!(strip("\"abc"), "\"abc");
        assert_eq!(strip("[1,"), "[1,");
    }
}
