//! A revision's conformance statement: `conformance client --requirements REVISION` runs exactly
//! the client scenarios that revision requires, frozen at its release, and the run is read
//! strictly from every scenario's `checks.json`: no `FAILURE`, no `WARNING`, no `SKIPPED` but the
//! [`NOT_APPLICABLE`](crate::checks::NOT_APPLICABLE) ones, and at least one check per scenario.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::checks::read_results;
use crate::conformance::{CLIENT_TIMEOUT_MS, ConformanceError, Suite, io_error, shell_quote};

/// The revisions whose statement a suite version runs: (suite version, revision).
pub(crate) const REQUIREMENTS: &[(&str, &str)] = &[("0.2.0-alpha.12", "2026-07-28")];

/// The hang guard of one statement run (every required scenario, run by the suite).
const STATEMENT_LIMIT: Duration = Duration::from_secs(600);

impl Suite<'_> {
    /// Runs the statement of `revision` and returns its failures (`version requirements
    /// REVISION: scenario: check STATUS: message`).
    pub(crate) fn run_requirements(&self, client: &Path, revision: &str) -> Result<Vec<String>, ConformanceError> {
        let results = self
            .results
            .with_file_name(format!("{}-requirements-{revision}", self.version));
        if results.exists() {
            fs::remove_dir_all(&results).map_err(io_error(&results))?;
        }
        fs::create_dir_all(&results).map_err(io_error(&results))?;
        let started = Instant::now();
        let mut runner = self.runner();
        let command = shell_quote(&client.to_string_lossy());
        runner.args(["client", "--command", &command, "--requirements", revision, "--timeout"]);
        runner.arg(CLIENT_TIMEOUT_MS.to_string()).arg("-o").arg(&results);
        let log = format!("requirements-{revision}.log");
        self.run_logged(&mut runner, &log, true, STATEMENT_LIMIT)?;
        let read = read_results(&results)?;
        let mut failures = Vec::new();
        let mut checks = 0;
        for (scenario, result) in &read {
            match &result.checks {
                Ok(found) => {
                    let verdicts: Vec<_> = found.iter().filter(|check| check.status != "INFO").collect();
                    checks += verdicts.len();
                    if verdicts.is_empty() {
                        failures.push(format!("{scenario}: no verdict checks"));
                    }
                    failures.extend(
                        verdicts
                            .iter()
                            .filter(|check| check.status != "SUCCESS" && !check.not_applicable())
                            .map(|check| {
                                let message = check.message.as_deref().unwrap_or_default();
                                format!("{scenario}: {} {}: {message}", check.id, check.status)
                            }),
                    );
                }
                Err(reason) => failures.push(format!("{scenario}: {reason}")),
            }
        }
        if read.is_empty() {
            failures.push("no scenario wrote a checks.json".to_owned());
        }
        println!(
            "\nrequirements {revision} (suite {}): {} scenario(s), {checks} check(s), {} failing, in {:.1} s",
            self.version,
            read.len(),
            failures.len(),
            started.elapsed().as_secs_f64()
        );
        for failure in &failures {
            println!("    {failure}");
        }
        Ok(failures
            .into_iter()
            .map(|failure| format!("{} requirements {revision}: {failure}", self.version))
            .collect())
    }
}
