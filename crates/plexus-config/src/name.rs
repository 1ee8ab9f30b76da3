//! Server names: the keys of `mcpServers`.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

/// The name of a configured server: 1 to [`ServerName::MAX_LEN`] characters from `A-Z`, `a-z`,
/// `0-9`, `_` and `-`.
///
/// The name becomes part of every tool name the server contributes (`mcp__<server>__<tool>`), so it
/// is kept to characters that survive there unchanged.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerName(String);

/// Why a string is not a valid [`ServerName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidServerName {
    /// The name is the empty string.
    #[error("invalid server name: it is empty; use 1 to 64 characters from A-Z, a-z, 0-9, \"_\" and \"-\"")]
    Empty,
    /// The name has a character outside `A-Z`, `a-z`, `0-9`, `_` and `-`.
    #[error("invalid server name: the character {character:?} is not allowed; use only A-Z, a-z, 0-9, \"_\" and \"-\"")]
    InvalidCharacter {
        /// The first character that is not allowed.
        character: char,
    },
    /// The name is longer than [`ServerName::MAX_LEN`] characters.
    #[error("invalid server name: it has {length} characters, at most 64 are allowed")]
    TooLong {
        /// The name's length in characters.
        length: usize,
    },
}

/// What a diagnostic says of a name that [`ServerName::sanitize`] changed.
pub(crate) fn renamed(to: &ServerName) -> String {
    format!(
        "renamed to {} (server names use only A-Z, a-z, 0-9, \"_\" and \"-\", at most 64)",
        crate::json::quote(to.as_str())
    )
}

impl ServerName {
    /// The longest name allowed, in characters.
    pub const MAX_LEN: usize = 64;

    /// Checks `name` and wraps it.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidServerName> {
        let name = name.into();
        Self::validate(&name)?;
        Ok(ServerName(name))
    }

    /// Checks `name` without taking it.
    pub fn validate(name: &str) -> Result<(), InvalidServerName> {
        if name.is_empty() {
            return Err(InvalidServerName::Empty);
        }
        if let Some(character) = name
            .chars()
            .find(|&c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(InvalidServerName::InvalidCharacter { character });
        }
        // Every allowed character is one byte long.
        if name.len() > Self::MAX_LEN {
            return Err(InvalidServerName::TooLong { length: name.len() });
        }
        Ok(())
    }

    /// `original` made into a valid name, as other clients' names are read (`my server.v2` →
    /// `my_server_v2`): every character outside `A-Za-z0-9_-` becomes `_`, and it is cut to
    /// [`MAX_LEN`](Self::MAX_LEN) characters. `None` for an empty name.
    pub fn sanitize(original: &str) -> Option<ServerName> {
        let name: String = original
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(Self::MAX_LEN)
            .collect();
        ServerName::new(name).ok()
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ServerName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ServerName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl FromStr for ServerName {
    type Err = InvalidServerName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ServerName::new(name)
    }
}

impl TryFrom<String> for ServerName {
    type Error = InvalidServerName;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        ServerName::new(name)
    }
}

impl From<ServerName> for String {
    fn from(name: ServerName) -> String {
        name.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_allowed_alphabet() {
        let name = ServerName::new("My_server-2").unwrap();
        assert_eq!(name.as_str(), "My_server-2");
        assert!(ServerName::new("a".repeat(64)).is_ok());
    }

    #[test]
    fn rejects_each_kind_of_bad_name_with_a_full_message() {
        assert_eq!(
            ServerName::new("").unwrap_err().to_string(),
            r#"invalid server name: it is empty; use 1 to 64 characters from A-Z, a-z, 0-9, "_" and "-""#
        );
        assert_eq!(
            ServerName::new("my server").unwrap_err().to_string(),
            r#"invalid server name: the character ' ' is not allowed; use only A-Z, a-z, 0-9, "_" and "-""#
        );
        assert_eq!(
            "a.b".parse::<ServerName>().unwrap_err(),
            InvalidServerName::InvalidCharacter { character: '.' }
        );
        assert_eq!(
            ServerName::new("a".repeat(65)).unwrap_err().to_string(),
            "invalid server name: it has 65 characters, at most 64 are allowed"
        );
    }
}
