//! Managed policy: the administrator's allow- and deny-lists, and exclusive managed servers.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use url::Url;

use crate::diagnostic::{Diagnostic, Severity};
use crate::json::{describe, index_path, quote};
use crate::{ServerConfig, ServerName};

/// The managed file's key for the allow-list.
pub const ALLOWED_KEY: &str = "allowedMcpServers";
/// The managed file's key for the deny-list.
pub const DENIED_KEY: &str = "deniedMcpServers";
/// The managed file's key that requires a tool-pool lockfile: `true` holds every tool of a
/// server that no lockfile locks out of the tool pool.
pub const REQUIRE_TOOL_LOCK_KEY: &str = "requireToolLock";

/// What one allow- or deny-list entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyMatcher {
    /// `{"serverName": "..."}`: the server's name, exactly.
    ServerName(String),
    /// `{"serverUrl": "..."}`: a remote server's URL; `*` matches any run of characters, and the
    /// scheme and host are compared without regard to case.
    ServerUrl(String),
    /// `{"serverCommand": [...]}`: a stdio server's command and arguments, exactly.
    ServerCommand(Vec<String>),
}

impl PolicyMatcher {
    /// Whether the server `name` with the (expanded) entry `config` matches.
    pub fn matches(&self, name: &ServerName, config: &ServerConfig) -> bool {
        match self {
            PolicyMatcher::ServerName(wanted) => wanted == name.as_str(),
            PolicyMatcher::ServerUrl(pattern) => config.url().is_some_and(|url| url_matches(pattern, url)),
            PolicyMatcher::ServerCommand(argv) => match config {
                ServerConfig::Stdio(stdio) => argv.first() == Some(&stdio.command) && argv[1..] == stdio.args[..],
                _ => false,
            },
        }
    }
}

impl fmt::Display for PolicyMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyMatcher::ServerName(name) => write!(f, "serverName {}", quote(name)),
            PolicyMatcher::ServerUrl(pattern) => write!(f, "serverUrl {}", quote(pattern)),
            PolicyMatcher::ServerCommand(argv) => {
                let quoted: Vec<String> = argv.iter().map(|arg| quote(arg)).collect();
                write!(f, "serverCommand [{}]", quoted.join(", "))
            }
        }
    }
}

/// Why managed policy keeps a server from running. `Display` gives a sentence naming the rule and
/// the managed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyBlock {
    /// An entry of `deniedMcpServers` matches it (deny always wins).
    Denied {
        /// The managed file.
        file: PathBuf,
        /// The entry's position in the list.
        index: usize,
        /// What the entry matches.
        matcher: PolicyMatcher,
    },
    /// There is an `allowedMcpServers` list and no entry of it matches (an empty list allows none).
    NotAllowed {
        /// The managed file.
        file: PathBuf,
        /// Whether the list is empty.
        empty: bool,
    },
    /// The managed file lists servers, which replace every other scope's.
    ExclusiveManaged {
        /// The managed file.
        file: PathBuf,
    },
    /// The managed file exists but cannot be applied; every server is blocked until it is fixed.
    Unusable {
        /// The managed file.
        file: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

impl fmt::Display for PolicyBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyBlock::Denied { file, index, matcher } => {
                write!(f, "denied by {DENIED_KEY}[{index}] ({matcher}) in {}", file.display())
            }
            PolicyBlock::NotAllowed { file, empty: true } => write!(
                f,
                "{ALLOWED_KEY} in {} is empty, so no server is allowed",
                file.display()
            ),
            PolicyBlock::NotAllowed { file, empty: false } => {
                write!(f, "not matched by any entry of {ALLOWED_KEY} in {}", file.display())
            }
            PolicyBlock::ExclusiveManaged { file } => write!(
                f,
                "{} defines mcpServers, which replace the servers of every other scope",
                file.display()
            ),
            PolicyBlock::Unusable { file, problem } => write!(
                f,
                "the managed policy {} cannot be applied ({problem}); every server is blocked until it is fixed",
                file.display()
            ),
        }
    }
}

/// The managed policy read from the managed file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    file: PathBuf,
    allowed: Option<Vec<PolicyMatcher>>,
    denied: Vec<PolicyMatcher>,
    exclusive: bool,
    require_tool_lock: bool,
    unusable: Option<String>,
}

impl Policy {
    /// No managed policy: everything is allowed.
    pub(crate) fn none() -> Policy {
        Policy::default()
    }

    /// A managed file that exists but could not be read: fail closed.
    pub(crate) fn unusable(file: &Path, problem: String) -> Policy {
        Policy {
            file: file.to_owned(),
            unusable: Some(problem),
            ..Policy::default()
        }
    }

    /// Reads the lists and `requireToolLock` from the managed file's `settings`; a list, an
    /// entry or a setting that cannot be read makes the whole policy unusable (a deny rule that
    /// is silently dropped would let a server through). Problems are also reported as
    /// diagnostics of the file.
    pub(crate) fn read(
        file: &Path,
        settings: &std::collections::BTreeMap<String, Value>,
        exclusive: bool,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Policy {
        let (allowed, denied) = (settings.get(ALLOWED_KEY), settings.get(DENIED_KEY));
        let mut policy = Policy {
            file: file.to_owned(),
            exclusive,
            ..Policy::default()
        };
        let mut problems = Vec::new();
        if let Some(value) = allowed {
            policy.allowed = Some(read_list(ALLOWED_KEY, value, &mut problems));
        }
        if let Some(value) = denied {
            policy.denied = read_list(DENIED_KEY, value, &mut problems);
        }
        match settings.get(REQUIRE_TOOL_LOCK_KEY) {
            None => {}
            Some(Value::Bool(required)) => policy.require_tool_lock = *required,
            Some(other) => problems.push((
                Severity::Error,
                REQUIRE_TOOL_LOCK_KEY.to_owned(),
                format!("expected true or false, found {}", describe(other)),
            )),
        }
        for (severity, field, message) in &problems {
            diagnostics.push(Diagnostic {
                severity: *severity,
                file: Some(file.to_owned()),
                server: None,
                field: Some(field.clone()),
                message: message.clone(),
            });
        }
        if let Some((_, field, message)) = problems.iter().find(|(severity, ..)| *severity == Severity::Error) {
            policy.unusable = Some(format!("field {}: {message}", quote(field)));
        }
        policy
    }

    /// Whether a tool-pool lockfile is required (`requireToolLock`).
    pub(crate) fn requires_tool_lock(&self) -> bool {
        self.require_tool_lock
    }

    /// What blocks the server `name` with entry `config`, if anything. `from_managed` says whether
    /// the entry comes from the managed file itself (exclusivity does not block those).
    pub(crate) fn check(&self, name: &ServerName, config: &ServerConfig, from_managed: bool) -> Option<PolicyBlock> {
        let file = self.file.clone();
        if let Some(problem) = &self.unusable {
            return Some(PolicyBlock::Unusable {
                file,
                problem: problem.clone(),
            });
        }
        if self.exclusive && !from_managed {
            return Some(PolicyBlock::ExclusiveManaged { file });
        }
        if let Some((index, matcher)) = self
            .denied
            .iter()
            .enumerate()
            .find(|(_, matcher)| matcher.matches(name, config))
        {
            return Some(PolicyBlock::Denied {
                file,
                index,
                matcher: matcher.clone(),
            });
        }
        match &self.allowed {
            Some(allowed) if !allowed.iter().any(|matcher| matcher.matches(name, config)) => {
                Some(PolicyBlock::NotAllowed {
                    file,
                    empty: allowed.is_empty(),
                })
            }
            _ => None,
        }
    }
}

type Problem = (Severity, String, String);

fn read_list(key: &str, value: &Value, problems: &mut Vec<Problem>) -> Vec<PolicyMatcher> {
    let Value::Array(items) = value else {
        problems.push((
            Severity::Error,
            key.to_owned(),
            format!("expected an array of server rules, found {}", describe(value)),
        ));
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(index, item)| read_matcher(&index_path(key, index), item, problems))
        .collect()
}

const MATCHER_KEYS: [&str; 3] = ["serverName", "serverUrl", "serverCommand"];

fn read_matcher(path: &str, item: &Value, problems: &mut Vec<Problem>) -> Option<PolicyMatcher> {
    let error = |problems: &mut Vec<Problem>, field: &str, message: String| {
        problems.push((Severity::Error, field.to_owned(), message));
        None
    };
    let expected = "expected an object with exactly one of \"serverName\", \"serverUrl\" or \"serverCommand\"";
    let Value::Object(object) = item else {
        return error(problems, path, format!("{expected}, found {}", describe(item)));
    };
    let present: Vec<&str> = MATCHER_KEYS
        .into_iter()
        .filter(|key| object.contains_key(*key))
        .collect();
    let [key] = present[..] else {
        let found = if present.is_empty() {
            "none".to_owned()
        } else {
            present.join(" and ")
        };
        return error(problems, path, format!("{expected}, found {found}"));
    };
    for unknown in object.keys().filter(|k| !MATCHER_KEYS.contains(&k.as_str())) {
        problems.push((
            Severity::Warning,
            format!("{path}.{unknown}"),
            "unknown field in a server rule; ignored".to_owned(),
        ));
    }
    let value = &object[key];
    let matcher = match (key, value) {
        ("serverName", Value::String(name)) if !name.is_empty() => PolicyMatcher::ServerName(name.clone()),
        ("serverUrl", Value::String(pattern)) if !pattern.is_empty() => PolicyMatcher::ServerUrl(pattern.clone()),
        ("serverCommand", Value::Array(argv)) if !argv.is_empty() && argv.iter().all(Value::is_string) => {
            PolicyMatcher::ServerCommand(argv.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        }
        ("serverCommand", _) => {
            return error(
                problems,
                &format!("{path}.{key}"),
                format!(
                    "expected a non-empty array of strings (the command and its arguments), found {}",
                    describe(value)
                ),
            );
        }
        _ => {
            return error(
                problems,
                &format!("{path}.{key}"),
                format!(
                    "expected a non-empty string, found {}",
                    if value == "" {
                        "an empty string".to_owned()
                    } else {
                        describe(value)
                    }
                ),
            );
        }
    };
    Some(matcher)
}

/// Whether `url` (as the URL parser serializes it: scheme and host in lower case) matches
/// `pattern`, whose scheme and host are compared without regard to case. A URL whose path is just
/// `/` also matches without it, so `https://example.com` matches `https://example.com/`.
fn url_matches(pattern: &str, url: &Url) -> bool {
    let pattern = lowercase_origin(pattern);
    let text = url.as_str();
    let bare_root = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    glob_matches(&pattern, text) || (bare_root && glob_matches(&pattern, text.strip_suffix('/').unwrap_or(text)))
}

/// `pattern` with its scheme and authority (up to the first `/`, `?` or `#` after `://`) in
/// lower case.
fn lowercase_origin(pattern: &str) -> String {
    let origin_end = pattern.find("://").map_or(0, |scheme_end| {
        let authority = scheme_end + 3;
        pattern[authority..]
            .find(['/', '?', '#'])
            .map_or(pattern.len(), |end| authority + end)
    });
    let mut lowered = pattern[..origin_end].to_lowercase();
    lowered.push_str(&pattern[origin_end..]);
    lowered
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters (including none) and
/// every other character matches itself. Linear in practice, `O(len(pattern) * len(text))` at
/// worst; never recursive.
pub(crate) fn glob_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_of_characters() {
        assert!(glob_matches("*", ""));
        assert!(glob_matches("a*c", "abbbc"));
        assert!(glob_matches("a*c", "ac"));
        assert!(!glob_matches("a*c", "acb"));
        assert!(glob_matches("*.example.com/*", "api.example.com/mcp"));
        assert!(!glob_matches("abc", "ab"));
        assert!(glob_matches("**a**", "xxaxx"));
        assert!(!glob_matches(&"*a".repeat(50), &"a".repeat(40)));
    }

    #[test]
    fn urls_compare_scheme_and_host_without_case() {
        let url = |text: &str| Url::parse(text).unwrap();
        assert!(url_matches(
            "HTTPS://*.Example.COM/*",
            &url("https://API.example.com/mcp")
        ));
        assert!(!url_matches(
            "https://*.example.com/MCP",
            &url("https://a.example.com/mcp")
        ));
        assert!(url_matches("https://example.com", &url("https://example.com")));
        assert!(url_matches("https://example.com/", &url("https://example.com")));
        assert!(!url_matches("https://example.com", &url("https://example.com/x")));
        assert!(!url_matches("https://example.com/x", &url("https://example.com/x/")));
        assert_eq!(lowercase_origin("HTTP://A.B:80?Q=X"), "http://a.b:80?Q=X");
        assert_eq!(lowercase_origin("no-scheme/PATH"), "no-scheme/PATH");
    }
}
