//! Qualified tool names and description truncation.

/// The longest description handed to the host, in characters (markers included).
pub const MAX_DESCRIPTION_CHARS: usize = 2048;
/// What ends a truncated description.
pub const TRUNCATION_MARKER: &str = "… [truncated]";

/// Replaces every character outside `[A-Za-z0-9_-]` by `_` (hosts' tool-name rules allow only these).
pub fn normalize_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The name of a server's tool in the host's pool: `mcp__<server>__<tool>`, both parts normalized.
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", normalize_name(server), normalize_name(tool))
}

/// Cuts a description to at most [`MAX_DESCRIPTION_CHARS`] characters, ending a cut one with
/// [`TRUNCATION_MARKER`]. Never splits a character.
pub fn truncate_description(description: &str) -> std::borrow::Cow<'_, str> {
    // Fast path: a description of at most MAX bytes has at most MAX characters.
    if description.len() <= MAX_DESCRIPTION_CHARS || description.chars().count() <= MAX_DESCRIPTION_CHARS {
        return std::borrow::Cow::Borrowed(description);
    }
    let keep = MAX_DESCRIPTION_CHARS - TRUNCATION_MARKER.chars().count();
    let cut = description
        .char_indices()
        .nth(keep)
        .map_or(description.len(), |(i, _)| i);
    std::borrow::Cow::Owned(format!("{}{TRUNCATION_MARKER}", &description[..cut]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples() {
        assert_eq!(qualified_name("github", "create_issue"), "mcp__github__create_issue");
        assert_eq!(qualified_name("a.b/c", "ü ñ"), "mcp__a_b_c_____");
        let long = "é".repeat(3000);
        let cut = truncate_description(&long);
        assert_eq!(cut.chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(cut.ends_with(TRUNCATION_MARKER));
        assert_eq!(truncate_description(&"x".repeat(2048)).len(), 2048);
    }

    proptest! {
        #[test]
        fn qualified_names_use_only_allowed_characters(server in ".{0,40}", tool in ".{0,40}") {
            let name = qualified_name(&server, &tool);
            prop_assert!(name.starts_with("mcp__"));
            prop_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            prop_assert_eq!(name.chars().count(), 7 + server.chars().count() + tool.chars().count());
        }

        #[test]
        fn allowed_names_are_unchanged(name in "[A-Za-z0-9_-]{0,40}") {
            prop_assert_eq!(normalize_name(&name), name);
        }

        #[test]
        fn truncation_is_bounded_and_a_prefix(text in ".{0,3000}") {
            let cut = truncate_description(&text);
            prop_assert!(cut.chars().count() <= MAX_DESCRIPTION_CHARS);
            if text.chars().count() <= MAX_DESCRIPTION_CHARS {
                prop_assert_eq!(cut.as_ref(), text.as_str());
            } else {
                let body = cut.strip_suffix(TRUNCATION_MARKER).unwrap();
                prop_assert!(text.starts_with(body));
            }
        }
    }
}
