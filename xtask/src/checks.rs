//! Reading and judging the suite's `checks.json` files: each check's id, name, status and
//! message, a scenario's verdict, and the checks whose `SKIPPED` is right for this client.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::conformance::{ConformanceError, io_error};

/// Checks that a correct client of the stateless revision leaves `SKIPPED`, with why: their
/// `SKIPPED` is neutral (every other `SKIPPED` fails its scenario). (check id, check name, why.)
pub(crate) const NOT_APPLICABLE: &[(&str, &str, &str)] = &[
    (
        "sep-2575-client-declares-roots-capability",
        "ClientDeclaresRootsCapability",
        "the conformance client has no roots to offer, so it declares none",
    ),
    (
        "sep-2575-client-declares-sampling-capability",
        "ClientDeclaresSamplingCapability",
        "the conformance client has no model to sample with, so it declares no sampling",
    ),
    (
        "sep-2243-client-includes-standard-headers",
        "ClientMcpMethodHeader_initialize",
        "a client of the stateless revision sends no initialize",
    ),
    (
        "sep-2243-client-includes-standard-headers",
        "ClientMcpMethodHeader_notifications_initialized",
        "a client of the stateless revision sends no notifications/initialized",
    ),
];

impl Check {
    /// A `SKIPPED` check of [`NOT_APPLICABLE`].
    pub(crate) fn not_applicable(&self) -> bool {
        self.status == "SKIPPED"
            && NOT_APPLICABLE
                .iter()
                .any(|(id, name, _)| self.id == *id && self.name.as_deref() == Some(*name))
    }
}

/// One check of a `checks.json`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Check {
    pub(crate) id: String,
    /// Its `name` (which of several checks under one id).
    pub(crate) name: Option<String>,
    pub(crate) status: String,
    /// `errorMessage`, else `details.message`.
    pub(crate) message: Option<String>,
}

/// A scenario's recorded checks and where they are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScenarioResult {
    pub(crate) dir: PathBuf,
    /// The suite's timestamp, to keep the latest of several runs.
    pub(crate) timestamp: String,
    /// The checks, or why `checks.json` could not be read.
    pub(crate) checks: Result<Vec<Check>, String>,
}

/// How a scenario did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Every verdict check succeeded (`warnings` of them with a warning).
    Passed { warnings: usize },
    /// Why not, and the failing checks as `id: message`.
    Failed { reason: String, failing: Vec<String> },
}

impl ScenarioResult {
    pub(crate) fn verdict(&self) -> Verdict {
        let checks = match &self.checks {
            Ok(checks) => checks,
            Err(reason) => {
                return Verdict::Failed {
                    reason: reason.clone(),
                    failing: Vec::new(),
                };
            }
        };
        let verdicts: Vec<&Check> = checks.iter().filter(|check| check.status != "INFO").collect();
        if verdicts.is_empty() {
            return Verdict::Failed {
                reason: "no verdict checks (the client did nothing the suite could judge)".to_owned(),
                failing: Vec::new(),
            };
        }
        let failing: Vec<String> = verdicts
            .iter()
            .filter(|check| check.status != "SUCCESS" && check.status != "WARNING" && !check.not_applicable())
            .map(|check| match &check.message {
                Some(message) => format!("{} {}: {message}", check.id, check.status),
                None => format!("{} {}", check.id, check.status),
            })
            .collect();
        if failing.is_empty() {
            let warnings = verdicts.iter().filter(|check| check.status == "WARNING").count();
            Verdict::Passed { warnings }
        } else {
            Verdict::Failed {
                reason: format!("{} of {} check(s) failed", failing.len(), verdicts.len()),
                failing,
            }
        }
    }
}

/// Every `checks.json` under `dir` (results are in `<scenario>-<timestamp>/`, where a scenario such
/// as `auth/x` is a subdirectory), by scenario; the latest run wins.
pub(crate) fn read_results(dir: &Path) -> Result<BTreeMap<String, ScenarioResult>, ConformanceError> {
    let mut found = Vec::new();
    find_checks(dir, 0, &mut found)?;
    let mut results: BTreeMap<String, ScenarioResult> = BTreeMap::new();
    for file in found {
        let Some(run_dir) = file.parent() else { continue };
        let relative = run_dir
            .strip_prefix(dir)
            .unwrap_or(run_dir)
            .to_string_lossy()
            .into_owned();
        let Some((scenario, timestamp)) = split_timestamp(&relative) else {
            continue;
        };
        let result = ScenarioResult {
            dir: run_dir.to_path_buf(),
            timestamp: timestamp.to_owned(),
            checks: parse_checks(&file),
        };
        match results.get(scenario) {
            Some(existing) if existing.timestamp >= result.timestamp => {}
            _ => {
                results.insert(scenario.to_owned(), result);
            }
        }
    }
    Ok(results)
}

/// Collects the `checks.json` files under `dir`, at most 8 levels down.
fn find_checks(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) -> Result<(), ConformanceError> {
    for entry in fs::read_dir(dir).map_err(io_error(dir))? {
        let path = entry.map_err(io_error(dir))?.path();
        if path.is_dir() && depth < 8 {
            find_checks(&path, depth + 1, found)?;
        } else if path.file_name().is_some_and(|name| name == "checks.json") {
            found.push(path);
        }
    }
    Ok(())
}

/// Splits `NAME-2026-11-30T18-49-17-976Z` into the name and the timestamp.
pub(crate) fn split_timestamp(dir_name: &str) -> Option<(&str, &str)> {
    const PATTERN: &str = "-dddd-dd-ddTdd-dd-dd-dddZ";
    let split = dir_name.len().checked_sub(PATTERN.len())?;
    let (name, suffix) = (dir_name.get(..split)?, dir_name.get(split..)?);
    let matches = suffix.chars().zip(PATTERN.chars()).all(|(c, p)| match p {
        'd' => c.is_ascii_digit(),
        other => c == other,
    });
    (matches && !name.is_empty()).then(|| (name, &suffix[1..]))
}

/// The checks of one `checks.json`, or a reason naming the file.
pub(crate) fn parse_checks(file: &Path) -> Result<Vec<Check>, String> {
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    let Value::Array(items) = value else {
        return Err(format!("{}: expected an array of checks", file.display()));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let field = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_owned);
            let (Some(id), Some(status)) = (field("id"), field("status")) else {
                return Err(format!(
                    "{}: check {index} has no string `id` and `status`",
                    file.display()
                ));
            };
            let message = field("errorMessage").or_else(|| {
                item.pointer("/details/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            Ok(Check {
                id,
                name: field("name"),
                status,
                message,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &str, name: &str, status: &str) -> Check {
        Check {
            id: id.to_owned(),
            name: Some(name.to_owned()),
            status: status.to_owned(),
            message: None,
        }
    }

    #[test]
    fn only_the_named_skipped_checks_are_neutral() {
        let result = |checks: Vec<Check>| ScenarioResult {
            dir: PathBuf::from("x"),
            timestamp: String::new(),
            checks: Ok(checks),
        };
        let header = "sep-2243-client-includes-standard-headers";
        let passed = result(vec![
            check(header, "ClientMcpMethodHeader_tools_list", "SUCCESS"),
            check(header, "ClientMcpMethodHeader_initialize", "SKIPPED"),
        ]);
        assert_eq!(passed.verdict(), Verdict::Passed { warnings: 0 });
        let failed = result(vec![
            check(header, "ClientMcpMethodHeader_tools_list", "SUCCESS"),
            check(header, "ClientMcpMethodHeader_tools_call", "SKIPPED"),
        ]);
        assert!(
            matches!(failed.verdict(), Verdict::Failed { .. }),
            "{:?}",
            failed.verdict()
        );
        assert!(!check(header, "ClientMcpMethodHeader_initialize", "FAILURE").not_applicable());
    }
}
