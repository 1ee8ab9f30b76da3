//! Text from servers made inert for display: control characters escaped, so that nothing a
//! server writes (a tool name, a description, an error, a log line) can act on a terminal or
//! disguise itself when a host shows it to a person.
//!
//! [`escape_line`] is for one-line fields (table cells, names), [`escape_block`] for multi-line
//! text (messages, tool output), which keeps newlines and tabs. Text without anything to escape
//! comes back borrowed.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is shown escaped: C0 and C1 control characters, DEL, and the Unicode controls
/// that reorder or hide text (bidirectional overrides and isolates, zero-width and line/paragraph
/// separators), so that nothing a server writes can act on the terminal or disguise itself.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}'
        )
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            _ if keep(c) || !is_unsafe(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0}'..='\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// `text` for one line of output (a table cell, a name): every control character escaped,
/// newlines and tabs included.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// `text` for a multi-line field (a message, a description, tool output): control characters
/// escaped, newlines and tabs kept.
pub fn escape_block(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn terminal_controls_are_shown_not_obeyed() {
        let title = "desc\u{1b}]0;pwned\u{7}\u{1b}[2J end";
        assert_eq!(escape_line(title), "desc\\x1b]0;pwned\\x07\\x1b[2J end");
        assert_eq!(escape_block("a\nb\tc\r\u{9b}31m"), "a\nb\tc\\r\\u{9b}31m");
        assert_eq!(escape_line("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(escape_line("abc\u{202e}cba\u{7f}"), "abc\\u{202e}cba\\x7f");
        assert!(matches!(escape_block("plain text: é, 日本"), Cow::Borrowed(_)));
    }

    proptest! {
        /// Whatever a server sends, what is shown holds no control character but the kept ones,
        /// and text without any comes out unchanged.
        #[test]
        fn nothing_unsafe_gets_through(text in any::<String>()) {
            let shown = escape_line(&text);
            prop_assert!(!shown.chars().any(is_unsafe), "{shown:?}");
            let shown = escape_block(&text);
            prop_assert!(!shown.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t'), "{shown:?}");
            if !text.chars().any(is_unsafe) {
                prop_assert_eq!(escape_line(&text), text.as_str());
            }
        }
    }
}
