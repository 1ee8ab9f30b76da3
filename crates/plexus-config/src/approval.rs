//! Approval of project servers: `.mcp.json` is someone else's code, so its servers wait for the
//! user's yes (or no), recorded in the local settings in the plexus home.
//!
//! A yes is bound to the entry as written in the project file (before `${VAR}` expansion): the
//! record under [`APPROVED_KEY`] holds the SHA-256 of the entry's canonical JSON
//! ([`canonical_json`]), so reordered keys or other whitespace change nothing, and any other change
//! of the entry (its command, arguments, environment, URL, headers, or any other field) makes it
//! wait for approval again. A changed environment does not: the binding is to the file, not to
//! what the variables hold today. Beside the digest, the record keeps the entry with the values of
//! `env`, `headers`, `oauth.clientSecret` and `authToken` replaced by their own digests, so that
//! a change can be shown field by field ("`env.TOKEN` changed") without a secret being written.
//!
//! A no ([`DISABLED_KEY`]) is by name: a rejected name stays rejected whatever its entry holds.
//! [`ENABLE_ALL_KEY`] approves every project server, whatever its entry holds, now and later.
//! A name listed in [`ENABLED_KEY`] (how earlier versions, and other clients, record a yes) says
//! nothing about what was approved: such a server waits for approval again
//! ([`PendingReason::ApprovedByNameOnly`]), since binding it to whatever the file holds today
//! could bless an entry the user never saw.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Severity};
use crate::json::{describe, key_path, quote};
use crate::{canonical_json, sha256_hex};

/// The settings key that approves every project server (user or local settings).
pub const ENABLE_ALL_KEY: &str = "enableAllProjectMcpServers";
/// The settings key that lists project servers approved by name only, as earlier versions of
/// plexus (and other clients) recorded them; such an approval is no longer enough (see
/// [`PendingReason::ApprovedByNameOnly`]).
pub const ENABLED_KEY: &str = "enabledMcpjsonServers";
/// The settings key that lists rejected project servers, by name.
pub const DISABLED_KEY: &str = "disabledMcpjsonServers";
/// The settings key that holds the approvals of project servers, each bound to its entry: an
/// object from server name to `{"sha256": HEX, "entry": ENTRY}`, where `HEX` is the SHA-256 of the
/// canonical JSON of the entry as written and `ENTRY` is the entry with its secret values replaced
/// by digests.
pub const APPROVED_KEY: &str = "approvedMcpjsonServers";

/// The keys of a user or local settings file that this crate reads besides `mcpServers`.
pub(crate) const SETTINGS_KEYS: [&str; 4] = [ENABLE_ALL_KEY, ENABLED_KEY, DISABLED_KEY, APPROVED_KEY];

/// The prefix of a digest that stands for a value not written to the approvals.
const DIGEST_PREFIX: &str = "sha256:";

/// Why a project server waits for the user's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PendingReason {
    /// Nobody approved it.
    NotApproved,
    /// It was approved by name only ([`ENABLED_KEY`]), which does not say what was approved.
    ApprovedByNameOnly,
    /// It was approved, and its entry changed since: each change (empty when the approval record
    /// holds no readable entry to compare with).
    Changed(Vec<EntryChange>),
}

impl PendingReason {
    /// The fields that changed, for a short message: `command, env.TOKEN`.
    pub fn changed_fields(&self) -> Vec<&str> {
        match self {
            PendingReason::Changed(changes) => changes.iter().map(|change| change.field.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for PendingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PendingReason::NotApproved => f.write_str("a project server runs only once approved"),
            PendingReason::ApprovedByNameOnly => write!(
                f,
                "it was approved by name only ({ENABLED_KEY}), which does not say what was approved; approve it \
                 again to bind the approval to this entry"
            ),
            PendingReason::Changed(changes) if changes.is_empty() => {
                f.write_str("its entry changed since it was approved")
            }
            PendingReason::Changed(changes) => {
                f.write_str("its entry changed since it was approved: ")?;
                for (index, change) in changes.iter().enumerate() {
                    if index > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{change}")?;
                }
                Ok(())
            }
        }
    }
}

/// A value of an entry as an approval shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    /// A value that is not secret, as written.
    Shown(Value),
    /// A secret value (of `env`, `headers`, `oauth.clientSecret`, `authToken`): only its digest is
    /// kept, so only the fact that it changed is shown.
    Hidden,
}

/// One field of a project server's entry that differs from the approved entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryChange {
    /// The field's path: `command`, `args`, `env.TOKEN`, `oauth.clientId`.
    pub field: String,
    /// Its approved value; `None` when the approved entry did not have it.
    pub before: Option<FieldValue>,
    /// Its value now; `None` when the entry no longer has it.
    pub after: Option<FieldValue>,
}

/// `field "command": was "node", now "python"`; secret values are never shown, and the JSON
/// form escapes every control character.
impl fmt::Display for EntryChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field {}: ", quote(&self.field))?;
        match (&self.before, &self.after) {
            (None, Some(FieldValue::Shown(after))) => write!(f, "added, {after}"),
            (None, _) => f.write_str("added (the value is not shown)"),
            (Some(FieldValue::Shown(before)), None) => write!(f, "removed (was {before})"),
            (Some(_), None) => f.write_str("removed"),
            (Some(FieldValue::Shown(before)), Some(FieldValue::Shown(after))) => {
                write!(f, "was {before}, now {after}")
            }
            (Some(_), Some(_)) => f.write_str("changed (the value is not shown)"),
        }
    }
}

/// What the user decided about one project server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Approved,
    Rejected,
    Pending(PendingReason),
}

/// One approval record as read: the digest it binds to, and the entry to compare with.
#[derive(Debug)]
struct Record {
    sha256: String,
    entry: Option<Value>,
}

/// The approvals and rejections found in the user and local settings.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    enable_all: bool,
    by_name_only: BTreeSet<String>,
    disabled: BTreeSet<String>,
    records: BTreeMap<String, Record>,
}

impl Approvals {
    /// Adds what one settings file (`path`) says; values of the wrong type are reported and
    /// ignored.
    pub(crate) fn read(&mut self, path: &Path, settings: &BTreeMap<String, Value>, diagnostics: &mut Vec<Diagnostic>) {
        let mut warn = |field: &str, message: String| {
            diagnostics.push(Diagnostic {
                severity: Severity::Warning,
                file: Some(path.to_owned()),
                server: None,
                field: Some(field.to_owned()),
                message,
            });
        };
        match settings.get(ENABLE_ALL_KEY) {
            None => {}
            Some(Value::Bool(flag)) => self.enable_all |= flag,
            Some(other) => warn(
                ENABLE_ALL_KEY,
                format!("expected true or false, found {}; ignored", describe(other)),
            ),
        }
        for (key, names) in [
            (ENABLED_KEY, &mut self.by_name_only),
            (DISABLED_KEY, &mut self.disabled),
        ] {
            match settings.get(key) {
                None => {}
                Some(Value::Array(items)) => {
                    for (index, item) in items.iter().enumerate() {
                        match item {
                            Value::String(name) => {
                                names.insert(name.clone());
                            }
                            other => warn(
                                &format!("{key}[{index}]"),
                                format!("expected a server name, found {}; ignored", describe(other)),
                            ),
                        }
                    }
                }
                Some(other) => warn(
                    key,
                    format!("expected an array of server names, found {}; ignored", describe(other)),
                ),
            }
        }
        match settings.get(APPROVED_KEY) {
            None => {}
            Some(Value::Object(records)) => {
                for (name, record) in records {
                    let sha256 = record.get("sha256").and_then(Value::as_str);
                    match sha256 {
                        Some(sha256) if is_sha256_hex(sha256) => {
                            let entry = record.get("entry").filter(|entry| entry.is_object()).cloned();
                            self.records.insert(
                                name.clone(),
                                Record {
                                    sha256: sha256.to_owned(),
                                    entry,
                                },
                            );
                        }
                        _ => warn(
                            &key_path(APPROVED_KEY, name),
                            "expected an object with the entry's \"sha256\" (64 hexadecimal digits); ignored, so \
                             the server waits for approval"
                                .to_owned(),
                        ),
                    }
                }
            }
            Some(other) => warn(
                APPROVED_KEY,
                format!("expected an object of approvals, found {}; ignored", describe(other)),
            ),
        }
    }

    /// The decision about the project server `name` whose entry, as written in the project file,
    /// is `entry`: a rejection wins over any approval.
    pub(crate) fn decision(&self, name: &str, entry: &Value) -> Decision {
        if self.disabled.contains(name) {
            return Decision::Rejected;
        }
        if self.enable_all {
            return Decision::Approved;
        }
        match self.records.get(name) {
            Some(record) if record.sha256 == entry_digest(entry) => Decision::Approved,
            Some(record) => Decision::Pending(PendingReason::Changed(
                record
                    .entry
                    .as_ref()
                    .map(|approved| changes(approved, &redacted(entry)))
                    .unwrap_or_default(),
            )),
            None if self.by_name_only.contains(name) => Decision::Pending(PendingReason::ApprovedByNameOnly),
            None => Decision::Pending(PendingReason::NotApproved),
        }
    }
}

/// The record that binds an approval to `entry` (as written in the project file): the digest of
/// its canonical JSON, and the entry with its secret values replaced by digests.
pub(crate) fn approval_record(entry: &Value) -> Value {
    let mut record = Map::new();
    record.insert("sha256".to_owned(), Value::String(entry_digest(entry)));
    record.insert("entry".to_owned(), redacted(entry));
    Value::Object(record)
}

/// The SHA-256 (hexadecimal) of the canonical JSON of `entry`.
fn entry_digest(entry: &Value) -> String {
    sha256_hex(canonical_json(entry).as_bytes())
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `value`, member `key` of the object at `parent` (of an entry), is a secret: every member
/// of `env` and `headers` (and either of them whole when it is not an object),
/// `oauth.clientSecret` and `authToken`.
fn is_secret(parent: &str, key: &str, value: &Value) -> bool {
    matches!(parent, "env" | "headers")
        || matches!((parent, key), ("oauth", "clientSecret") | ("", "authToken"))
        || (parent.is_empty() && matches!(key, "env" | "headers") && !value.is_object())
}

/// `entry` with every secret value replaced by `sha256:` and the digest of its canonical JSON.
fn redacted(entry: &Value) -> Value {
    fn redact(parent: &str, value: &Value) -> Value {
        match value {
            Value::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(key, member)| {
                        let member = if is_secret(parent, key, member) {
                            Value::String(format!("{DIGEST_PREFIX}{}", entry_digest(member)))
                        } else {
                            redact(&key_path(parent, key), member)
                        };
                        (key.clone(), member)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    redact("", entry)
}

/// The leaves of a (redacted) entry by path: objects are walked into, arrays and scalars are
/// leaves.
fn leaves<'v>(parent: &str, value: &'v Value, out: &mut BTreeMap<String, (bool, &'v Value)>) {
    if let Value::Object(members) = value {
        for (key, member) in members {
            let path = key_path(parent, key);
            let secret = is_secret(parent, key, member);
            match member {
                Value::Object(_) if !secret => leaves(&path, member, out),
                _ => {
                    out.insert(path, (secret, member));
                }
            }
        }
    }
}

/// The fields in which the redacted entries `approved` and `now` differ, in path order.
fn changes(approved: &Value, now: &Value) -> Vec<EntryChange> {
    let (mut before, mut after) = (BTreeMap::new(), BTreeMap::new());
    leaves("", approved, &mut before);
    leaves("", now, &mut after);
    let shown = |(secret, value): (bool, &Value)| {
        if secret {
            FieldValue::Hidden
        } else {
            FieldValue::Shown(value.clone())
        }
    };
    let paths: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    paths
        .into_iter()
        .filter_map(|path| {
            let (was, is) = (before.get(path).copied(), after.get(path).copied());
            if was.map(|(_, value)| value) == is.map(|(_, value)| value) {
                return None;
            }
            Some(EntryChange {
                field: path.clone(),
                before: was.map(shown),
                after: is.map(shown),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approvals_of(entry: &Value) -> Approvals {
        let mut approvals = Approvals::default();
        let settings = [(APPROVED_KEY.to_owned(), json!({"s": approval_record(entry)}))]
            .into_iter()
            .collect();
        let mut diagnostics = Vec::new();
        approvals.read(Path::new("/h/settings.local.json"), &settings, &mut diagnostics);
        assert_eq!(diagnostics, []);
        approvals
    }

    #[test]
    fn the_record_keeps_no_secret_value() {
        let entry = json!({
            "command": "node",
            "env": {"TOKEN": "hunter2-secret"},
            "headers": {"Authorization": "Bearer abc-secret"},
            "oauth": {"clientId": "id", "clientSecret": "shh-secret"},
            "authToken": "tok-secret",
        });
        assert!(
            !approval_record(&json!({"env": ["A=secret"]}))
                .to_string()
                .contains("secret")
        );
        let text = approval_record(&entry).to_string();
        assert!(!text.contains("secret"), "{text}");
        assert!(
            text.contains("\"clientId\":\"id\"") && text.contains("\"command\":\"node\""),
            "{text}"
        );
    }

    #[test]
    fn a_change_is_shown_field_by_field_without_secrets() {
        let approved = json!({"command": "node", "args": ["a"], "env": {"TOKEN": "one", "GONE": "x"}, "timeout": 5});
        let now = json!({"command": "python", "args": ["a"], "env": {"TOKEN": "two", "NEW": "y"}, "cwd": "/tmp"});
        let Decision::Pending(reason) = approvals_of(&approved).decision("s", &now) else {
            panic!("a changed entry waits")
        };
        let shown: Vec<String> = match &reason {
            PendingReason::Changed(changes) => changes.iter().map(ToString::to_string).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            shown,
            [
                r#"field "command": was "node", now "python""#,
                r#"field "cwd": added, "/tmp""#,
                r#"field "env.GONE": removed"#,
                r#"field "env.NEW": added (the value is not shown)"#,
                r#"field "env.TOKEN": changed (the value is not shown)"#,
                r#"field "timeout": removed (was 5)"#,
            ]
        );
        assert_eq!(
            reason.changed_fields(),
            ["command", "cwd", "env.GONE", "env.NEW", "env.TOKEN", "timeout"]
        );
        assert!(!reason.to_string().contains("one") && !reason.to_string().contains("two"));
    }

    #[test]
    fn control_characters_of_a_change_are_escaped() {
        let approved = json!({"command": "a"});
        let now = json!({"command": "\u{1b}[2Jb", "x\u{7}": "\n"});
        let Decision::Pending(reason) = approvals_of(&approved).decision("s", &now) else {
            panic!()
        };
        let text = reason.to_string();
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(text.contains(r#"now "\u001b[2Jb""#), "{text}");
    }

    #[test]
    fn rejection_wins_and_names_alone_no_longer_approve() {
        let entry = json!({"command": "c"});
        let mut approvals = approvals_of(&entry);
        assert_eq!(approvals.decision("s", &entry), Decision::Approved);
        assert_eq!(
            approvals.decision("other", &entry),
            Decision::Pending(PendingReason::NotApproved)
        );
        approvals.by_name_only.insert("other".to_owned());
        assert_eq!(
            approvals.decision("other", &entry),
            Decision::Pending(PendingReason::ApprovedByNameOnly)
        );
        approvals.enable_all = true;
        assert_eq!(
            approvals.decision("other", &json!({"command": "x"})),
            Decision::Approved
        );
        approvals.disabled.insert("s".to_owned());
        assert_eq!(approvals.decision("s", &entry), Decision::Rejected);
    }

    #[test]
    fn malformed_records_are_reported_and_approve_nothing() {
        let mut approvals = Approvals::default();
        let settings = [(
            APPROVED_KEY.to_owned(),
            json!({"a": {"sha256": "00"}, "b": "yes", "c": {"sha256": "0".repeat(64)}}),
        )]
        .into_iter()
        .collect();
        let mut diagnostics = Vec::new();
        approvals.read(Path::new("/l.json"), &settings, &mut diagnostics);
        let fields: Vec<_> = diagnostics.iter().map(|d| d.field.clone().unwrap()).collect();
        assert_eq!(fields, ["approvedMcpjsonServers.a", "approvedMcpjsonServers.b"]);
        assert_eq!(
            approvals.decision("c", &json!({"command": "c"})),
            Decision::Pending(PendingReason::Changed(Vec::new()))
        );
        assert_eq!(
            PendingReason::Changed(Vec::new()).to_string(),
            "its entry changed since it was approved"
        );
    }
}
