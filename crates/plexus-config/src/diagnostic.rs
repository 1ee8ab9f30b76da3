//! Problems found while reading a config file, reported as data rather than log lines.

use std::fmt;
use std::path::PathBuf;

use crate::json::quote;

/// How serious a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Something was ignored or kept without being used; the entry still loads.
    Warning,
    /// The entry it names is invalid and was skipped; the rest of the file still loads.
    Error,
}

impl Severity {
    /// `"warning"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem in a config file: where it is (file, server, field) and what is wrong.
///
/// `Display` gives the location and the message, without the severity:
/// `/path/.mcp.json: server "x": field "args[2]": expected a string, found 3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Whether the entry was skipped ([`Severity::Error`]) or loaded anyway ([`Severity::Warning`]).
    pub severity: Severity,
    /// The config file; `None` only for an entry parsed on its own with
    /// [`ServerConfig::from_json`](crate::ServerConfig::from_json).
    pub file: Option<PathBuf>,
    /// The server entry, or `None` for a problem with the file as a whole.
    pub server: Option<String>,
    /// The field inside the entry, as a path: `command`, `args[2]`, `env.PORT`, `oauth.clientId`;
    /// `None` for a problem with the entry as a whole.
    pub field: Option<String>,
    /// What is wrong, and where it helps, what to do about it.
    pub message: String,
}

impl Diagnostic {
    /// Whether this diagnostic is an error (the entry was skipped).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// A diagnostic about `field` (or the whole entry), with no file or server yet.
    pub(crate) fn new(severity: Severity, field: Option<String>, message: String) -> Self {
        Diagnostic {
            severity,
            file: None,
            server: None,
            field,
            message,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(server) = &self.server {
            write!(f, "server {}: ", quote(server))?;
        }
        if let Some(field) = &self.field {
            write!(f, "field {}: ", quote(field))?;
        }
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_every_part_that_is_present() {
        let mut diagnostic = Diagnostic::new(
            Severity::Error,
            Some("args[2]".into()),
            "expected a string, found 3".into(),
        );
        assert_eq!(diagnostic.to_string(), r#"field "args[2]": expected a string, found 3"#);
        diagnostic.server = Some("x".into());
        diagnostic.file = Some("/path/.mcp.json".into());
        assert_eq!(
            diagnostic.to_string(),
            r#"/path/.mcp.json: server "x": field "args[2]": expected a string, found 3"#
        );
        diagnostic.field = None;
        assert_eq!(
            diagnostic.to_string(),
            r#"/path/.mcp.json: server "x": expected a string, found 3"#
        );
        assert!(diagnostic.is_error());
        assert_eq!(Severity::Warning.to_string(), "warning");
    }
}
