//! The places a server can be configured, and which one wins.

use std::fmt;
use std::str::FromStr;

/// Where a server's entry comes from.
///
/// For the same name, the entry of the higher scope is used whole (fields are never merged):
/// [`Explicit`](Scope::Explicit) > [`Local`](Scope::Local) > [`Project`](Scope::Project) >
/// [`User`](Scope::User). [`Managed`](Scope::Managed) stands apart: a managed file that lists
/// servers replaces every other scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// The user's own servers, for every project: `<home>/settings.json`.
    User,
    /// The project's shared servers, checked in: `<project>/.mcp.json`. They run only once
    /// approved.
    Project,
    /// The user's private servers for one project, and their approvals of its servers:
    /// `<home>/projects/<key>/settings.local.json` (see [`ConfigPaths::local_file_for`](crate::ConfigPaths::local_file_for)).
    Local,
    /// A file named on the command line (`--config FILE`).
    Explicit,
    /// The administrator's file (`/etc/plexus/managed-mcp.json`): policy, and optionally the only
    /// servers allowed.
    Managed,
}

/// A string that names no [`Scope`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope {name:?}; expected one of \"local\", \"project\", \"user\"")]
pub struct UnknownScope {
    /// The string given.
    pub name: String,
}

impl Scope {
    /// Every scope, lowest precedence first (managed last: it is not part of the precedence).
    pub const ALL: [Scope; 5] = [
        Scope::User,
        Scope::Project,
        Scope::Local,
        Scope::Explicit,
        Scope::Managed,
    ];

    /// The scopes that `plexus add` and `plexus remove` write to.
    pub const WRITABLE: [Scope; 3] = [Scope::Local, Scope::Project, Scope::User];

    /// The scope's name: `user`, `project`, `local`, `explicit`, `managed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Explicit => "explicit",
            Scope::Managed => "managed",
        }
    }

    /// Whether entries can be added to and removed from this scope's file.
    pub fn is_writable(self) -> bool {
        Scope::WRITABLE.contains(&self)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses the name of a writable scope (`local`, `project`, `user`), as `--scope` takes it.
impl FromStr for Scope {
    type Err = UnknownScope;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Scope::WRITABLE
            .into_iter()
            .find(|scope| scope.as_str() == name)
            .ok_or_else(|| UnknownScope { name: name.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_follows_the_declaration_order() {
        assert!(Scope::User < Scope::Project);
        assert!(Scope::Project < Scope::Local);
        assert!(Scope::Local < Scope::Explicit);
    }

    #[test]
    fn only_writable_scopes_parse() {
        for scope in Scope::WRITABLE {
            assert_eq!(scope.as_str().parse::<Scope>(), Ok(scope));
        }
        assert_eq!(
            "managed".parse::<Scope>().unwrap_err().to_string(),
            r#"unknown scope "managed"; expected one of "local", "project", "user""#
        );
    }
}
