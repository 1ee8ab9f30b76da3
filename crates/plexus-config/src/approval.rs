//! Approval of project servers: `.mcp.json` is someone else's code, so its servers wait for the
//! user's yes (or no), recorded in the local settings.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Severity};
use crate::json::describe;

/// The settings key that approves every project server (user or local settings).
pub const ENABLE_ALL_KEY: &str = "enableAllProjectMcpServers";
/// The settings key that lists approved project servers.
pub const ENABLED_KEY: &str = "enabledMcpjsonServers";
/// The settings key that lists rejected project servers.
pub const DISABLED_KEY: &str = "disabledMcpjsonServers";

/// The keys of a user or local settings file that this crate reads besides `mcpServers`.
pub(crate) const SETTINGS_KEYS: [&str; 3] = [ENABLE_ALL_KEY, ENABLED_KEY, DISABLED_KEY];

/// What the user decided about one project server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Approved,
    Rejected,
    Undecided,
}

/// The approvals and rejections found in the user and local settings.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    enable_all: bool,
    enabled: BTreeSet<String>,
    disabled: BTreeSet<String>,
}

impl Approvals {
    /// Adds what one settings file (`path`) says; values of the wrong type are reported and
    /// ignored.
    pub(crate) fn read(
        &mut self,
        path: &Path,
        settings: &std::collections::BTreeMap<String, Value>,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
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
        for (key, names) in [(ENABLED_KEY, &mut self.enabled), (DISABLED_KEY, &mut self.disabled)] {
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
    }

    /// The decision about the project server `name`: a rejection wins over any approval.
    pub(crate) fn decision(&self, name: &str) -> Decision {
        if self.disabled.contains(name) {
            Decision::Rejected
        } else if self.enable_all || self.enabled.contains(name) {
            Decision::Approved
        } else {
            Decision::Undecided
        }
    }
}
