//! HTTP header checks for the remote transports, and how the auth provider's headers go over the
//! configured ones. Plain strings: each transport turns the checked pairs into its HTTP client's
//! header map, which accepts every pair these checks accept.
//!
//! ```
//! use plexus_net::headers::{HeaderError, check_header, merge};
//!
//! assert_eq!(check_header("X-Api-Key", "secret"), Ok(()));
//! assert_eq!(
//!     check_header("X-Api-Key", "line\nbreak").unwrap_err().to_string(),
//!     r#"the value of the header "X-Api-Key" contains a control character (such as a line break), which HTTP does not allow"#
//! );
//! let configured = [("Authorization".to_owned(), "Bearer old".to_owned()), ("X-A".to_owned(), "1".to_owned())];
//! let merged = merge(&configured, vec![("authorization".to_owned(), "Bearer new".to_owned())]);
//! assert_eq!(merged, [("X-A".to_owned(), "1".to_owned()), ("authorization".to_owned(), "Bearer new".to_owned())]);
//! ```

/// The longest header name accepted, in bytes (the limit of the `http` crate).
pub const MAX_HEADER_NAME_LEN: usize = (1 << 16) - 1;

/// A header that cannot be sent; the error names the header, never its value (which is often a
/// credential).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The name is empty, too long, or has a character outside the RFC 9110 token characters.
    #[error("the header name {name:?} is not a valid HTTP header name")]
    InvalidName {
        /// The name.
        name: String,
    },
    /// The value has a control character other than a tab.
    #[error(
        "the value of the header {name:?} contains a control character (such as a line break), which HTTP does not allow"
    )]
    InvalidValue {
        /// The header's name.
        name: String,
    },
}

/// Whether a byte may appear in a header name (an RFC 9110 `tchar`).
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Checks one header: a name of 1 to [`MAX_HEADER_NAME_LEN`] token characters, and a value
/// without control characters other than a tab (bytes of 0x80 and above are allowed, as
/// `obs-text`).
pub fn check_header(name: &str, value: &str) -> Result<(), HeaderError> {
    if name.is_empty() || name.len() > MAX_HEADER_NAME_LEN || !name.bytes().all(is_tchar) {
        return Err(HeaderError::InvalidName { name: name.to_owned() });
    }
    if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(HeaderError::InvalidValue { name: name.to_owned() });
    }
    Ok(())
}

/// Checks every header of a list (see [`check_header`]); the error names the first bad one.
pub fn check_headers(headers: &[(String, String)]) -> Result<(), HeaderError> {
    headers.iter().try_for_each(|(name, value)| check_header(name, value))
}

/// Checked pairs (see [`check_header`]) as the `http` crate's names and values, in order, left
/// out when named in `skip` (names compare without regard to case). The checks are those of the
/// `http` crate, so every checked pair converts.
pub fn to_http<'a>(
    pairs: &'a [(String, String)],
    skip: &'a [&str],
) -> impl Iterator<Item = (http::HeaderName, http::HeaderValue)> + 'a {
    pairs
        .iter()
        .filter(|(name, _)| !skip.iter().any(|own| name.eq_ignore_ascii_case(own)))
        .filter_map(|(name, value)| {
            Some((
                http::HeaderName::try_from(name).ok()?,
                http::HeaderValue::try_from(value).ok()?,
            ))
        })
}

/// The configured headers with the provider's on top: a configured header that the provider also
/// gives (names compare without regard to case) is replaced by all of the provider's values.
pub fn merge(configured: &[(String, String)], provided: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut merged: Vec<(String, String)> = configured
        .iter()
        .filter(|(name, _)| !provided.iter().any(|(given, _)| given.eq_ignore_ascii_case(name)))
        .cloned()
        .collect();
    merged.extend(provided);
    merged
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn errors_name_the_header_not_the_value() {
        for name in ["", "X Bad", "X:Y", "é", "a\nb"] {
            assert_eq!(
                check_header(name, "v"),
                Err(HeaderError::InvalidName { name: name.to_owned() })
            );
        }
        assert_eq!(
            check_header("X Bad", "v").unwrap_err().to_string(),
            r#"the header name "X Bad" is not a valid HTTP header name"#
        );
        for value in ["sec\nret", "a\rb", "nul\0", "del\x7f"] {
            let error = check_header("X-Key", value).unwrap_err();
            assert_eq!(error, HeaderError::InvalidValue { name: "X-Key".into() });
            assert!(!error.to_string().contains(value));
        }
        assert_eq!(check_header(&"x".repeat(MAX_HEADER_NAME_LEN), "v"), Ok(()));
        assert!(check_header(&"x".repeat(MAX_HEADER_NAME_LEN + 1), "v").is_err());
        assert_eq!(check_header("X-Name", "José\tand friends "), Ok(()));
        assert_eq!(
            check_headers(&pairs(&[("A", "1"), ("B", "\n"), ("C D", "2")])),
            Err(HeaderError::InvalidValue { name: "B".into() })
        );
    }

    #[test]
    fn the_provider_replaces_every_configured_value_of_its_names() {
        let configured = pairs(&[("Authorization", "static"), ("X-A", "1"), ("x-a", "2"), ("X-B", "3")]);
        let provided = pairs(&[("X-A", "p1"), ("x-A", "p2"), ("AUTHORIZATION", "Bearer t")]);
        assert_eq!(
            merge(&configured, provided),
            pairs(&[
                ("X-B", "3"),
                ("X-A", "p1"),
                ("x-A", "p2"),
                ("AUTHORIZATION", "Bearer t")
            ])
        );
        assert_eq!(merge(&configured, Vec::new()), configured);
    }

    proptest! {
        #[test]
        fn merging_keeps_every_provided_header_and_only_unshadowed_configured_ones(
            configured in prop::collection::vec(("[a-cA-C]{1,2}", "[a-z]{0,3}"), 0..6),
            provided in prop::collection::vec(("[a-cA-C]{1,2}", "[a-z]{0,3}"), 0..6),
        ) {
            let merged = merge(&configured, provided.clone());
            prop_assert_eq!(&merged[merged.len() - provided.len()..], &provided[..]);
            for (name, value) in &configured {
                let shadowed = provided.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
                prop_assert_eq!(merged.contains(&(name.clone(), value.clone())) , !shadowed || provided.contains(&(name.clone(), value.clone())));
            }
        }
    }
}
