//! A server's text for hosts: long text (instructions, descriptions) cut to a number of
//! characters, and error messages without the server name where the place names it.

use std::borrow::Cow;

/// The longest server text handed on by default, in characters (the marker included): 2048.
pub const MAX_TEXT_CHARS: usize = 2048;
/// What ends a cut text.
pub const TRUNCATION_MARKER: &str = "… [truncated]";

/// `text` when it has at most `max_chars` characters; else its start and
/// [`TRUNCATION_MARKER`], `max_chars` characters in all (just the marker's start when
/// `max_chars` leaves no room for text). Never splits a character.
pub fn truncate_chars(text: &str, max_chars: usize) -> Cow<'_, str> {
    // Fast path: a text of at most `max_chars` bytes has at most that many characters.
    if text.len() <= max_chars || text.chars().count() <= max_chars {
        return Cow::Borrowed(text);
    }
    let marker = TRUNCATION_MARKER.chars().count();
    if max_chars <= marker {
        return Cow::Owned(TRUNCATION_MARKER.chars().take(max_chars).collect());
    }
    let cut = text
        .char_indices()
        .nth(max_chars - marker)
        .map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!("{}{TRUNCATION_MARKER}", &text[..cut]))
}

/// `text` without the `server "NAME": ` it starts with (errors name their server), for a place
/// that already names the server (a row of a table).
pub fn without_server<'t>(server: &str, text: &'t str) -> &'t str {
    text.strip_prefix("server \"")
        .and_then(|rest| rest.strip_prefix(server))
        .and_then(|rest| rest.strip_prefix("\": "))
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_long_text_ends_in_the_marker_within_the_limit() {
        let long = "é".repeat(3000);
        let cut = truncate_chars(&long, MAX_TEXT_CHARS);
        assert_eq!(cut.chars().count(), MAX_TEXT_CHARS);
        assert!(cut.ends_with(TRUNCATION_MARKER));
        assert_eq!(truncate_chars(&"x".repeat(2048), MAX_TEXT_CHARS).len(), 2048);
        assert_eq!(truncate_chars("abcdef", 3), "… [");
    }

    #[test]
    fn the_server_prefix_comes_off_only_for_that_server() {
        assert_eq!(without_server("a", "server \"a\": refused"), "refused");
        assert_eq!(without_server("a", "server \"ab\": refused"), "server \"ab\": refused");
        assert_eq!(without_server("a", "refused"), "refused");
    }

    proptest! {
        #[test]
        fn a_cut_is_bounded_and_a_prefix(text in ".{0,300}", max in 0usize..320) {
            let cut = truncate_chars(&text, max);
            prop_assert!(cut.chars().count() <= max);
            if text.chars().count() <= max {
                prop_assert_eq!(cut.as_ref(), text.as_str());
            } else if let Some(body) = cut.strip_suffix(TRUNCATION_MARKER) {
                prop_assert!(text.starts_with(body));
                prop_assert_eq!(cut.chars().count(), max);
            } else {
                prop_assert!(TRUNCATION_MARKER.starts_with(cut.as_ref()));
            }
        }
    }
}
