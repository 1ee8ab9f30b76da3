//! Readers for the values inside an entry: each checks one JSON value and records what is wrong.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};
use url::{Host, Url};

use crate::diagnostic::{Diagnostic, Severity};
use crate::json::{describe, index_path, key_path, quote};
use crate::{MIN_PROBE_TIMEOUT, MIN_TIMEOUT, ServerKind};

/// The diagnostics collected while reading one entry.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) diagnostics: Vec<Diagnostic>,
    failed: bool,
}

impl Report {
    /// Records an error about `field` (`None`: the whole entry); the entry will be skipped.
    pub(crate) fn error(&mut self, field: Option<&str>, message: impl Into<String>) {
        self.failed = true;
        self.diagnostics.push(Diagnostic::new(
            Severity::Error,
            field.map(str::to_owned),
            message.into(),
        ));
    }

    /// Records a warning about `field`; the entry still loads.
    pub(crate) fn warn(&mut self, field: &str, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::new(
            Severity::Warning,
            Some(field.to_owned()),
            message.into(),
        ));
    }

    /// Whether any error was recorded.
    pub(crate) fn failed(&self) -> bool {
        self.failed
    }
}

/// The fields of one JSON object (an entry, or its `oauth`), remembering which ones were read so
/// that the rest can be reported and kept as unknown.
pub(crate) struct Fields<'a> {
    object: &'a Map<String, Value>,
    parent: String,
    read: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    /// The fields of `object`, found at `parent` (empty for an entry's top level).
    pub(crate) fn new(object: &'a Map<String, Value>, parent: &str) -> Self {
        Fields {
            object,
            parent: parent.to_owned(),
            read: Vec::new(),
        }
    }

    /// Whether the object has `key`, without reading it.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.object.contains_key(key)
    }

    /// The value of `key`, without marking it as read.
    pub(crate) fn peek(&self, key: &str) -> Option<&'a Value> {
        self.object.get(key)
    }

    /// The value of `key`, marking it as read.
    pub(crate) fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.read.push(key);
        self.object.get(key)
    }

    /// The path of `key` for messages.
    pub(crate) fn path(&self, key: &str) -> String {
        key_path(&self.parent, key)
    }

    /// Reads `key` with `reader` if it is present.
    pub(crate) fn optional<T>(&mut self, key: &'static str, report: &mut Report, reader: impl Reader<T>) -> Option<T> {
        let value = self.get(key)?;
        reader(value, &self.path(key), report)
    }

    /// Reads `key` with `reader`, recording an error if it is missing from a `kind` entry.
    pub(crate) fn required<T>(
        &mut self,
        key: &'static str,
        kind: ServerKind,
        report: &mut Report,
        reader: impl Reader<T>,
    ) -> Option<T> {
        if !self.contains(key) {
            let kind = quote(kind.as_str());
            report.error(Some(&self.path(key)), format!("missing; a {kind} server requires it"));
        }
        self.optional(key, report, reader)
    }

    /// The fields that were never read, each reported as a warning that says they are `context`
    /// (`for a "stdio" server`, `in "oauth"`).
    pub(crate) fn into_unknown(self, context: &str, report: &mut Report) -> Map<String, Value> {
        let mut unknown = Map::new();
        for (key, value) in self.object {
            if !self.read.contains(&key.as_str()) {
                report.warn(
                    &key_path(&self.parent, key),
                    format!("unknown field {context}; kept as written but not used"),
                );
                unknown.insert(key.clone(), value.clone());
            }
        }
        unknown
    }
}

/// Reads one value found at a path, recording what is wrong with it.
pub(crate) trait Reader<T>: FnOnce(&Value, &str, &mut Report) -> Option<T> {}
impl<T, F: FnOnce(&Value, &str, &mut Report) -> Option<T>> Reader<T> for F {}

/// Checks a string already known to be one; `Err` says what is wrong with it.
pub(crate) type Check = fn(&str) -> Result<(), String>;

/// Any string, as it is.
pub(crate) const ANY_STRING: Check = |_| Ok(());

/// A string handed to the operating system (a command, an argument, a path, an environment value).
pub(crate) fn no_nul(text: &str) -> Result<(), String> {
    if text.contains('\0') {
        Err("must not contain a NUL character".to_owned())
    } else {
        Ok(())
    }
}

/// What is wrong with an environment variable's name or a header's name or value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// An environment variable's name is empty.
    #[error("an environment variable name must not be empty")]
    EmptyEnvName,
    /// An environment variable's name holds `=`.
    #[error("an environment variable name must not contain \"=\"")]
    EqualsInEnvName,
    /// The text holds a NUL character.
    #[error("must not contain a NUL character")]
    Nul,
    /// A header's name is empty.
    #[error("a header name must not be empty")]
    EmptyHeaderName,
    /// A header's name holds a character a token cannot.
    #[error("a header name cannot contain {0:?}")]
    HeaderNameCharacter(char),
    /// A header's value holds a control character.
    #[error("a header value cannot contain the control character {0:?}")]
    HeaderValueControl(char),
}

/// Checks the name of an environment variable (an entry's `env` key).
pub fn env_name(name: &str) -> Result<(), ValueError> {
    if name.is_empty() {
        Err(ValueError::EmptyEnvName)
    } else if name.contains('=') {
        Err(ValueError::EqualsInEnvName)
    } else if name.contains('\0') {
        Err(ValueError::Nul)
    } else {
        Ok(())
    }
}

/// Checks the name of an HTTP header (an entry's `headers` key): an RFC 9110 token.
pub fn header_name(name: &str) -> Result<(), ValueError> {
    const SEPARATORS: &str = "!#$%&'*+-.^_`|~";
    if name.is_empty() {
        return Err(ValueError::EmptyHeaderName);
    }
    match name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || SEPARATORS.contains(c)))
    {
        Some(c) => Err(ValueError::HeaderNameCharacter(c)),
        None => Ok(()),
    }
}

/// Checks the value of an HTTP header: no control characters but tab.
pub fn header_value(value: &str) -> Result<(), ValueError> {
    match value.chars().find(|&c| c.is_control() && c != '\t') {
        Some(c) => Err(ValueError::HeaderValueControl(c)),
        None => Ok(()),
    }
}

/// [`env_name`] as a [`Check`].
pub(crate) fn checked_env_name(name: &str) -> Result<(), String> {
    env_name(name).map_err(|e| e.to_string())
}

/// [`header_name`] as a [`Check`].
pub(crate) fn checked_header_name(name: &str) -> Result<(), String> {
    header_name(name).map_err(|e| e.to_string())
}

/// [`header_value`] as a [`Check`].
pub(crate) fn checked_header_value(value: &str) -> Result<(), String> {
    header_value(value).map_err(|e| e.to_string())
}

/// The string at `path`, or an error.
pub(crate) fn string<'v>(value: &'v Value, path: &str, report: &mut Report) -> Option<&'v str> {
    if let Value::String(text) = value {
        Some(text)
    } else {
        report.error(Some(path), format!("expected a string, found {}", describe(value)));
        None
    }
}

/// A string that is not blank and passes `check`.
pub(crate) fn non_empty(check: Check) -> impl Reader<String> {
    move |value: &Value, path: &str, report: &mut Report| {
        let text = string(value, path, report)?;
        if text.trim().is_empty() {
            report.error(Some(path), "must not be empty");
            return None;
        }
        match check(text) {
            Ok(()) => Some(text.to_owned()),
            Err(message) => {
                report.error(Some(path), message);
                None
            }
        }
    }
}

/// `true` or `false`.
pub(crate) fn boolean(value: &Value, path: &str, report: &mut Report) -> Option<bool> {
    if let Value::Bool(flag) = value {
        Some(*flag)
    } else {
        report.error(Some(path), format!("expected true or false, found {}", describe(value)));
        None
    }
}

/// An array of strings, each passing `check`.
pub(crate) fn string_list(check: Check) -> impl Reader<Vec<String>> {
    move |value: &Value, path: &str, report: &mut Report| {
        let Value::Array(items) = value else {
            report.error(
                Some(path),
                format!("expected an array of strings, found {}", describe(value)),
            );
            return None;
        };
        let mut list = Vec::with_capacity(items.len());
        let mut valid = true;
        for (index, item) in items.iter().enumerate() {
            let item_path = index_path(path, index);
            match string(item, &item_path, report).map(|text| (text, check(text))) {
                Some((text, Ok(()))) => list.push(text.to_owned()),
                Some((_, Err(message))) => {
                    report.error(Some(&item_path), message);
                    valid = false;
                }
                None => valid = false,
            }
        }
        valid.then_some(list)
    }
}

/// An object of strings, with keys passing `check_key` and values passing `check_value`.
pub(crate) fn string_map(check_key: Check, check_value: Check) -> impl Reader<BTreeMap<String, String>> {
    move |value: &Value, path: &str, report: &mut Report| {
        let Value::Object(object) = value else {
            report.error(
                Some(path),
                format!("expected an object of strings, found {}", describe(value)),
            );
            return None;
        };
        let mut map = BTreeMap::new();
        let mut valid = true;
        for (key, item) in object {
            let item_path = key_path(path, key);
            let checked = check_key(key).and_then(|()| {
                let text = item
                    .as_str()
                    .ok_or_else(|| format!("expected a string, found {}", describe(item)))?;
                check_value(text).map(|()| text)
            });
            match checked {
                Ok(text) => {
                    map.insert(key.clone(), text.to_owned());
                }
                Err(message) => {
                    report.error(Some(&item_path), message);
                    valid = false;
                }
            }
        }
        valid.then_some(map)
    }
}

/// The URL schemes a field accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Schemes {
    /// `http` or `https`.
    Http,
    /// `ws` or `wss`.
    WebSocket,
}

impl Schemes {
    fn accepts(self, scheme: &str) -> bool {
        match self {
            Schemes::Http => scheme == "http" || scheme == "https",
            Schemes::WebSocket => scheme == "ws" || scheme == "wss",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Schemes::Http => "an http or https",
            Schemes::WebSocket => "a ws or wss",
        }
    }
}

/// An absolute URL with one of `schemes`. The URL itself is not repeated in messages: query strings
/// often carry keys.
pub(crate) fn url(schemes: Schemes) -> impl Reader<Url> {
    move |value: &Value, path: &str, report: &mut Report| {
        let text = string(value, path, report)?;
        let url = match Url::parse(text) {
            Ok(url) => url,
            Err(error) => {
                report.error(Some(path), format!("not a valid URL: {error}"));
                return None;
            }
        };
        if !schemes.accepts(url.scheme()) {
            report.error(
                Some(path),
                format!(
                    "expected {} URL, found a {} URL",
                    schemes.describe(),
                    quote(url.scheme())
                ),
            );
            return None;
        }
        Some(url)
    }
}

/// An `https` URL, or an `http` one on a loopback host (OAuth 2.1's rule for endpoints).
pub(crate) fn secure_url(value: &Value, path: &str, report: &mut Report) -> Option<Url> {
    let url = url(Schemes::Http)(value, path, report)?;
    let loopback = match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(address)) => address.is_loopback(),
        Some(Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    };
    if url.scheme() == "http" && !loopback {
        report.error(
            Some(path),
            "must be an https URL (plain http is allowed only for localhost)",
        );
        return None;
    }
    Some(url)
}

/// A TCP port, 1 to 65535.
pub(crate) fn port(value: &Value, path: &str, report: &mut Report) -> Option<u16> {
    let port = value
        .as_u64()
        .and_then(|number| u16::try_from(number).ok())
        .filter(|&port| port != 0);
    if port.is_none() {
        report.error(
            Some(path),
            format!("expected a port number from 1 to 65535, found {}", describe(value)),
        );
    }
    port
}

/// `protocolVersion`: `"auto"` (probe the server with `server/discover`) or a protocol revision
/// (`"2026-07-28"`, `"2025-11-25"`, …: its date, `YYYY-MM-DD`); which revisions exist is the
/// connector's to know.
pub(crate) fn protocol_version(value: &Value, path: &str, report: &mut Report) -> Option<String> {
    let Value::String(text) = value else {
        report.error(
            Some(path),
            format!(
                "expected \"auto\" or a protocol revision such as \"2026-07-28\", found {}",
                describe(value)
            ),
        );
        return None;
    };
    let dated = text.len() == 10
        && text.bytes().enumerate().all(|(at, byte)| match at {
            4 | 7 => byte == b'-',
            _ => byte.is_ascii_digit(),
        });
    if text == "auto" || dated {
        Some(text.clone())
    } else {
        report.error(
            Some(path),
            format!("{text:?} is neither \"auto\" nor a protocol revision such as \"2026-07-28\""),
        );
        None
    }
}

/// A timeout in whole milliseconds; values below [`MIN_TIMEOUT`] are ignored with a warning.
pub(crate) fn timeout(value: &Value, path: &str, report: &mut Report) -> Option<Duration> {
    millis_at_least(value, path, report, MIN_TIMEOUT)
}

/// `probeTimeout`: how long a `server/discover` probe waits, in whole milliseconds; values below
/// [`MIN_PROBE_TIMEOUT`] are ignored with a warning.
pub(crate) fn probe_timeout(value: &Value, path: &str, report: &mut Report) -> Option<Duration> {
    millis_at_least(value, path, report, MIN_PROBE_TIMEOUT)
}

/// A duration in whole milliseconds of at least `floor`: a value below it is ignored with a
/// warning (the default applies), a fraction above it or another type is an error.
fn millis_at_least(value: &Value, path: &str, report: &mut Report, floor: Duration) -> Option<Duration> {
    let Value::Number(number) = value else {
        report.error(
            Some(path),
            format!("expected a number of milliseconds, found {}", describe(value)),
        );
        return None;
    };
    let minimum = floor.as_millis();
    let below_minimum = match number.as_u64() {
        Some(millis) => u128::from(millis) < minimum,
        // Negative integers, and fractions (f64 has every integer below the minimum exactly).
        None => {
            number.as_i64().is_some()
                || number
                    .as_f64()
                    .is_some_and(|millis| millis < floor.as_secs_f64() * 1000.0)
        }
    };
    if below_minimum {
        report.warn(
            path,
            format!("{number} ms is below the {minimum} ms minimum; ignored, the default applies"),
        );
        return None;
    }
    let millis = number.as_u64();
    if millis.is_none() {
        report.error(
            Some(path),
            format!("expected a whole number of milliseconds, found {number}"),
        );
    }
    millis.map(Duration::from_millis)
}

/// OAuth scopes: one space-separated string (the common form) or an array of strings.
pub(crate) fn scopes(value: &Value, path: &str, report: &mut Report) -> Option<Vec<String>> {
    let (scopes, valid) = match value {
        Value::String(text) => {
            let mut valid = true;
            for scope in text.split_ascii_whitespace() {
                if let Err(message) = scope_token(scope) {
                    report.error(Some(path), format!("the scope {} {message}", quote(scope)));
                    valid = false;
                }
            }
            (
                text.split_ascii_whitespace().map(str::to_owned).collect::<Vec<_>>(),
                valid,
            )
        }
        Value::Array(items) => {
            let mut valid = true;
            for (index, item) in items.iter().enumerate() {
                let item_path = index_path(path, index);
                let Some(scope) = string(item, &item_path, report) else {
                    valid = false;
                    continue;
                };
                let problem = if scope.is_empty() {
                    Err("must not be empty".to_owned())
                } else if scope.contains(|c: char| c.is_ascii_whitespace()) {
                    Err("contains whitespace; give each scope its own element".to_owned())
                } else {
                    scope_token(scope).map_err(|message| format!("the scope {message}"))
                };
                if let Err(message) = problem {
                    report.error(Some(&item_path), message);
                    valid = false;
                }
            }
            (
                items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                valid,
            )
        }
        other => {
            let found = describe(other);
            report.error(
                Some(path),
                format!("expected a space-separated string or an array of strings, found {found}"),
            );
            return None;
        }
    };
    if scopes.is_empty() && valid {
        report.error(
            Some(path),
            "must name at least one scope; leave \"scopes\" out to use the server's defaults",
        );
        return None;
    }
    valid.then_some(scopes)
}

/// One RFC 6749 scope token: printable ASCII but space, `"` and `\`.
fn scope_token(scope: &str) -> Result<(), String> {
    match scope
        .chars()
        .find(|&c| !matches!(c, '\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e'))
    {
        Some(c) => Err(format!("contains {c:?}, which an OAuth scope cannot contain")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(report: &Report) -> Vec<String> {
        report.diagnostics.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_protocol_version_is_auto_or_a_dated_revision() {
        let mut report = Report::default();
        for good in ["auto", "2026-07-28", "2024-11-05"] {
            assert_eq!(
                protocol_version(&json!(good), "protocolVersion", &mut report).as_deref(),
                Some(good)
            );
        }
        assert!(!report.failed());
        for bad in [
            json!("latest"),
            json!("2026-7-28"),
            json!(20_260_728),
            json!("2026-07-28 "),
        ] {
            assert_eq!(protocol_version(&bad, "protocolVersion", &mut report), None, "{bad}");
        }
        assert_eq!(
            messages(&report)[0],
            r#"field "protocolVersion": "latest" is neither "auto" nor a protocol revision such as "2026-07-28""#
        );
    }

    #[test]
    fn a_probe_timeout_is_whole_milliseconds_from_100() {
        let mut report = Report::default();
        assert_eq!(
            probe_timeout(&json!(100), "probeTimeout", &mut report),
            Some(Duration::from_millis(100))
        );
        assert_eq!(
            probe_timeout(&json!(2500), "probeTimeout", &mut report),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(probe_timeout(&json!(99), "probeTimeout", &mut report), None);
        assert!(!report.failed());
        assert_eq!(probe_timeout(&json!("1s"), "probeTimeout", &mut report), None);
        assert!(report.failed());
        assert_eq!(
            messages(&report),
            [
                r#"field "probeTimeout": 99 ms is below the 100 ms minimum; ignored, the default applies"#,
                r#"field "probeTimeout": expected a number of milliseconds, found a string"#,
            ]
        );
    }

    #[test]
    fn timeouts_below_the_minimum_are_warnings_and_fractions_errors() {
        let mut report = Report::default();
        assert_eq!(
            timeout(&json!(1000), "timeout", &mut report),
            Some(Duration::from_secs(1))
        );
        assert_eq!(timeout(&json!(999), "timeout", &mut report), None);
        assert_eq!(timeout(&json!(-5), "timeout", &mut report), None);
        assert_eq!(timeout(&json!(0.5), "timeout", &mut report), None);
        assert!(!report.failed());
        assert_eq!(timeout(&json!(1500.5), "timeout", &mut report), None);
        assert_eq!(timeout(&json!("5000"), "timeout", &mut report), None);
        assert!(report.failed());
        assert_eq!(
            messages(&report),
            [
                r#"field "timeout": 999 ms is below the 1000 ms minimum; ignored, the default applies"#,
                r#"field "timeout": -5 ms is below the 1000 ms minimum; ignored, the default applies"#,
                r#"field "timeout": 0.5 ms is below the 1000 ms minimum; ignored, the default applies"#,
                r#"field "timeout": expected a whole number of milliseconds, found 1500.5"#,
                r#"field "timeout": expected a number of milliseconds, found a string"#,
            ]
        );
    }

    #[test]
    fn header_names_and_values_follow_http_rules() {
        assert_eq!(header_name("X-Api-Key"), Ok(()));
        assert_eq!(header_name("X Api"), Err(ValueError::HeaderNameCharacter(' ')));
        assert_eq!(
            header_name("X Api").unwrap_err().to_string(),
            "a header name cannot contain ' '"
        );
        assert_eq!(header_name(""), Err(ValueError::EmptyHeaderName));
        assert_eq!(header_value("Bearer a\tb"), Ok(()));
        assert_eq!(
            header_value("a\r\nb").unwrap_err().to_string(),
            "a header value cannot contain the control character '\\r'"
        );
        assert_eq!(env_name("A=B"), Err(ValueError::EqualsInEnvName));
        assert_eq!(env_name("A\0"), Err(ValueError::Nul));
    }

    #[test]
    fn scope_tokens_follow_rfc_6749() {
        assert_eq!(scope_token("repo:read"), Ok(()));
        assert_eq!(
            scope_token("a\\b"),
            Err("contains '\\\\', which an OAuth scope cannot contain".to_owned())
        );
        assert_eq!(
            scope_token("é"),
            Err("contains 'é', which an OAuth scope cannot contain".to_owned())
        );
    }
}
