//! `cargo xtask conformance [SCENARIO]...`: runs the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, every pinned version in [`SUITES`]) against
//! `plexus-conformance-client`, one scenario at a time, and judges each scenario by its
//! `checks.json`, not by the suite's exit code (which lets a client that does nothing pass some
//! scenarios). Prints a table per suite version and fails unless every must-pass scenario of
//! that version ([`must_pass`]) passes.
//!
//! A scenario passes when it has at least one verdict check and every verdict check is `SUCCESS`
//! or `WARNING`. `INFO` entries are the suite's log of the traffic, not verdicts, and are ignored.
//! `WARNING` is what the suite itself calls acceptable (e.g. `sse-retry` reconnecting "slightly
//! late" on a busy machine); warnings are counted in the table. `FAILURE`, `SKIPPED` (a check that
//! could not run; except the few a correct client leaves skipped,
//! [`NOT_APPLICABLE`](crate::checks::NOT_APPLICABLE)) and any other status fail the scenario.
//!
//! A suite that names required revisions ([`REQUIREMENTS`])
//! also runs as the revision's conformance statement (`client --requirements REVISION`), read
//! strictly: every check of every scenario it runs, with no `FAILURE` and no `WARNING`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::checks::{ScenarioResult, Verdict, read_results};
use crate::cmd;
use crate::peers::{self, NpmPackage, PeersError};
use crate::requirements::REQUIREMENTS;

/// The npm package of the suite.
const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// The suite versions run, each installed in `target/conformance/<version>/`.
pub(crate) const SUITES: &[&str] = &["0.1.16", "0.2.0-alpha.12"];
/// The scenarios that must pass in every suite version. Later issues extend this list.
pub(crate) const MUST_PASS: &[&str] = &[
    // The session.
    "initialize",
    "tools_call",
    "sse-retry",
    "elicitation-sep1034-client-defaults",
    // OAuth: discovery.
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    // OAuth: client identity and token endpoint authentication.
    "auth/basic-cimd",
    "auth/pre-registration",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    // OAuth: scopes.
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    // OAuth extensions: client credentials (client_secret_basic, and private_key_jwt with ES256).
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

/// The scenarios that must pass in one suite version only (the others do not have them).
pub(crate) const MUST_PASS_IN: &[(&str, &[&str])] = &[
    (
        "0.1.16",
        &[
            // OAuth extension: cross-app access (token exchange at the IdP, then jwt-bearer).
            "auth/cross-app-access-complete-flow",
        ],
    ),
    (
        "0.2.0-alpha.12",
        &[
            // OAuth 2026-07-28: issuer checks (RFC 9207, RFC 8414) and a server that moves.
            "auth/iss-supported",
            "auth/iss-not-advertised",
            "auth/iss-supported-missing",
            "auth/iss-wrong-issuer",
            "auth/iss-unexpected",
            "auth/iss-normalized",
            "auth/metadata-issuer-mismatch",
            "auth/authorization-server-migration",
            // OAuth extensions: enterprise-managed authorization (the 0.1.16 cross-app access),
            // workload identity federation (jwt-bearer), DPoP-bound tokens (RFC 9449) with the
            // authorization and resource servers' nonces.
            "auth/enterprise-managed-authorization",
            "auth/wif-jwt-bearer",
            "auth/dpop",
            "auth/dpop-nonce",
            // Tool schemas pass through untouched: `$schema`, `$defs`, `additionalProperties`, and a
            // `$ref` is not dereferenced.
            "json-schema-2020-12-preservation",
            "json-schema-ref-no-deref",
            // The skills extension (SEP-2640): listing reads no file; loading a skill verifies its
            // SKILL.md (size, digest, front matter) and a failed one reads nothing more.
            "sep-2640-client-no-prefetch",
            "sep-2640-client-verify-digest",
            "sep-2640-client-verify-size",
            "sep-2640-client-verify-frontmatter",
            // The stateless revision (2026-07-28): the request envelope and the retry at a
            // version the server names, multi-round-trip requests, the Mcp-Method / Mcp-Name /
            // Mcp-Param-* headers, and tools with invalid x-mcp-header annotations left out.
            "request-metadata",
            "sep-2322-client-request-state",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
        ],
    ),
];

/// The must-pass scenarios of suite `version`: [`MUST_PASS`], then its own from [`MUST_PASS_IN`].
pub(crate) fn must_pass(version: &str) -> Vec<&'static str> {
    let own = MUST_PASS_IN
        .iter()
        .filter(|(suite, _)| *suite == version)
        .flat_map(|(_, scenarios)| scenarios.iter());
    MUST_PASS.iter().chain(own).copied().collect()
}

/// The client binary (crate `plexus-conformance`).
const CLIENT_BIN: &str = "plexus-conformance-client";
/// The suite's own limit for one client run, in milliseconds (its `--timeout`).
pub(crate) const CLIENT_TIMEOUT_MS: u64 = 30_000;
/// The hang guard for one run of the suite's CLI (one scenario, or the scenario list).
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// How many failing checks of one scenario the table shows.
const MAX_TABLE_CHECKS: usize = 6;
/// How many lines of a log are shown for a failed must-pass scenario.
const LOG_TAIL_LINES: usize = 40;

/// Arguments of `cargo xtask conformance`.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct ConformanceArgs {
    /// Run only these scenarios (e.g. `sse-retry`); every client scenario of each suite when none.
    pub(crate) scenarios: Vec<String>,
}

/// Why the conformance run failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConformanceError {
    /// Installing, building or running failed.
    #[error(transparent)]
    Peers(#[from] PeersError),
    /// A results or log file or directory could not be read or written.
    #[error("{}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// `conformance list --client` named no scenario.
    #[error("`conformance list --client` of suite {version} named no scenario; its output is in {}", .log.display())]
    NoScenarios {
        /// The suite version.
        version: String,
        /// Its output.
        log: PathBuf,
    },
    /// Must-pass scenarios failed.
    #[error("{} must-pass scenario(s) failed: {}", .failures.len(), .failures.join("; "))]
    MustPass {
        /// `version scenario: reason`, one per failure.
        failures: Vec<String>,
    },
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(io::Error) -> ConformanceError + '_ {
    move |source| ConformanceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Installs Node and the suites, builds the client, runs the scenarios and judges them.
pub(crate) fn run(args: &ConformanceArgs) -> Result<(), ConformanceError> {
    let target = peers::target_dir();
    let base = target.join("conformance");
    let node = peers::ensure_node(&peers::peers_dir())?;
    let mut build = cmd::cargo(["build", "--package", "plexus-conformance", "--bin", CLIENT_BIN]);
    build.current_dir(cmd::workspace_root());
    cmd::run_streaming(&mut build).map_err(PeersError::from)?;
    let client = target.join("debug").join(CLIENT_BIN);

    let mut failures = Vec::new();
    for version in SUITES {
        let package = peers::npm_install(
            &base.join(version),
            NpmPackage {
                name: SUITE_PACKAGE,
                version,
            },
        )?;
        let suite = Suite {
            version,
            node: &node,
            cli: package.join("dist").join("index.js"),
            results: base.join("results").join(version),
            logs: base.join("logs").join(version),
        };
        failures.extend(suite.run(&client, &args.scenarios)?);
        if args.scenarios.is_empty() {
            for (_, revision) in REQUIREMENTS
                .iter()
                .filter(|(suite_version, _)| suite_version == version)
            {
                failures.extend(suite.run_requirements(&client, revision)?);
            }
        }
    }
    if failures.is_empty() {
        let counts: Vec<String> = SUITES
            .iter()
            .map(|version| format!("{} in {version}", must_pass(version).len()))
            .collect();
        println!("every must-pass scenario passed ({})", counts.join(", "));
        Ok(())
    } else {
        Err(ConformanceError::MustPass { failures })
    }
}

/// One installed suite version.
pub(crate) struct Suite<'a> {
    pub(crate) version: &'a str,
    node: &'a Path,
    cli: PathBuf,
    /// Where its runs write their results.
    pub(crate) results: PathBuf,
    logs: PathBuf,
}

impl Suite<'_> {
    /// Runs the chosen scenarios (must-pass first), prints the table, and returns the must-pass
    /// failures.
    fn run(&self, client: &Path, only: &[String]) -> Result<Vec<String>, ConformanceError> {
        for dir in [&self.results, &self.logs] {
            if dir.exists() {
                fs::remove_dir_all(dir).map_err(io_error(dir))?;
            }
            fs::create_dir_all(dir).map_err(io_error(dir))?;
        }
        let offered = self.list()?;
        let must = must_pass(self.version);
        let mut scenarios: Vec<String> = must.iter().map(|s| (*s).to_owned()).collect();
        scenarios.extend(offered.iter().filter(|s| !must.contains(&s.as_str())).cloned());
        if !only.is_empty() {
            scenarios.retain(|s| only.contains(s));
        }
        println!(
            "\nsuite {SUITE_PACKAGE}@{}: {} scenario(s)",
            self.version,
            scenarios.len()
        );
        let command = shell_quote(&client.to_string_lossy());
        for (index, scenario) in scenarios.iter().enumerate() {
            let started = Instant::now();
            let mut runner = self.runner();
            runner.args(["client", "--command", &command, "--scenario", scenario, "--timeout"]);
            runner.arg(CLIENT_TIMEOUT_MS.to_string()).arg("-o").arg(&self.results);
            if index == 0 {
                println!("each scenario runs: {}", cmd::describe(&runner));
            }
            let status = self.run_logged(&mut runner, &log_name(scenario), false, RUN_LIMIT)?;
            let exit = status
                .code()
                .map_or_else(|| status.to_string(), |code| format!("exit {code}"));
            println!(
                "[{}/{}] {scenario}: suite {exit} in {:.1} s",
                index + 1,
                scenarios.len(),
                started.elapsed().as_secs_f64()
            );
        }
        let results = read_results(&self.results)?;
        print!("{}", format_table(self.version, &scenarios, &results));
        let mut failures = Vec::new();
        for scenario in must.iter().filter(|s| scenarios.iter().any(|c| c == *s)) {
            let reason = match results.get(*scenario).map(ScenarioResult::verdict) {
                Some(Verdict::Passed { .. }) => continue,
                Some(Verdict::Failed { reason, .. }) => reason,
                None if offered.iter().any(|s| s == scenario) => "no checks.json was written".to_owned(),
                None => "this suite version has no such scenario".to_owned(),
            };
            self.show_logs(scenario, results.get(*scenario));
            failures.push(format!("{} {scenario}: {reason}", self.version));
        }
        Ok(failures)
    }

    /// The scenarios the suite offers for clients (`list --client`).
    fn list(&self) -> Result<Vec<String>, ConformanceError> {
        let mut runner = self.runner();
        runner.args(["list", "--client"]);
        let name = "list.log";
        let status = self.run_logged(&mut runner, name, true, RUN_LIMIT)?;
        let log = self.logs.join(name);
        let text = fs::read_to_string(&log).map_err(io_error(&log))?;
        let scenarios = parse_scenario_list(&text);
        if !status.success() || scenarios.is_empty() {
            return Err(ConformanceError::NoScenarios {
                version: self.version.to_owned(),
                log,
            });
        }
        Ok(scenarios)
    }

    pub(crate) fn runner(&self) -> Command {
        let mut runner = Command::new(self.node);
        runner.arg(&self.cli);
        runner
    }

    /// Runs the suite's CLI with its output in `logs/NAME`, bounded by `limit`, echoing the
    /// command line when asked to.
    pub(crate) fn run_logged(
        &self,
        runner: &mut Command,
        name: &str,
        echo: bool,
        limit: Duration,
    ) -> Result<std::process::ExitStatus, ConformanceError> {
        let log_path = self.logs.join(name);
        let log = File::create(&log_path).map_err(io_error(&log_path))?;
        let log_err = log.try_clone().map_err(io_error(&log_path))?;
        runner.stdout(Stdio::from(log)).stderr(Stdio::from(log_err));
        let status = if echo {
            peers::run_bounded(runner, limit)?
        } else {
            peers::run_bounded_quiet(runner, limit)?
        };
        Ok(status)
    }

    /// Prints the tail of the suite's log and the client's stderr for a failed scenario.
    fn show_logs(&self, scenario: &str, result: Option<&ScenarioResult>) {
        let mut files = vec![self.logs.join(log_name(scenario))];
        if let Some(result) = result {
            files.push(result.dir.join("stderr.txt"));
        }
        for file in files {
            let text = fs::read_to_string(&file).unwrap_or_else(|e| format!("(unreadable: {e})"));
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            println!(
                "--- {} {scenario}: last {} line(s) of {}",
                self.version,
                tail.len(),
                file.display()
            );
            for line in tail {
                println!("    {line}");
            }
        }
    }
}

/// The log file of one scenario's run (`auth/x` → `auth_x.log`).
fn log_name(scenario: &str) -> String {
    let safe: String = scenario
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.log")
}

/// `text` quoted for `sh` (the suite runs `--command` through a shell).
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The names in `list --client` output: the first word of each `  - NAME [versions]` line.
fn parse_scenario_list(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The table of one suite version: scenario, result (must-pass ones marked `*`), failing checks.
fn format_table(version: &str, scenarios: &[String], results: &BTreeMap<String, ScenarioResult>) -> String {
    let width = scenarios
        .iter()
        .map(|s| s.len() + 2)
        .max()
        .unwrap_or(0)
        .max("scenario".len());
    let mut text = String::new();
    let _ = writeln!(text, "\n{SUITE_PACKAGE}@{version} (* = must pass)");
    let _ = writeln!(text, "{:<width$}  {:<18}  failing checks", "scenario", "result");
    let _ = writeln!(text, "{:-<width$}  {:-<18}  {:-<14}", "", "", "");
    let (mut passed, mut failed) = (0, 0);
    let must = must_pass(version);
    for scenario in scenarios {
        let marked = if must.contains(&scenario.as_str()) {
            format!("{scenario} *")
        } else {
            scenario.clone()
        };
        let (label, details) = match results.get(scenario).map(ScenarioResult::verdict) {
            Some(Verdict::Passed { warnings: 0 }) => ("passed".to_owned(), Vec::new()),
            Some(Verdict::Passed { warnings }) => (format!("passed ({warnings} warn.)"), Vec::new()),
            Some(Verdict::Failed { reason, failing }) if failing.is_empty() => ("FAILED".to_owned(), vec![reason]),
            Some(Verdict::Failed { failing, .. }) => ("FAILED".to_owned(), failing),
            None => ("FAILED".to_owned(), vec!["no checks.json was written".to_owned()]),
        };
        if label.starts_with("passed") {
            passed += 1;
        } else {
            failed += 1;
        }
        let hidden = details.len().saturating_sub(MAX_TABLE_CHECKS);
        let mut details = details
            .into_iter()
            .take(MAX_TABLE_CHECKS)
            .map(|d| shorten(&d, 160))
            .chain((hidden > 0).then(|| format!("(and {hidden} more)")));
        let first = format!("{marked:<width$}  {label:<18}  {}", details.next().unwrap_or_default());
        let _ = writeln!(text, "{}", first.trim_end());
        for more in details {
            let _ = writeln!(text, "{:<width$}  {:<18}  {more}", "", "");
        }
    }
    let _ = writeln!(text, "{version}: {passed} passed, {failed} failed");
    text
}

/// The first line of `text`, cut to `max` characters.
fn shorten(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::{Check, split_timestamp};

    /// A results directory as the suite writes it: `initialize` with only traffic logs,
    /// `tools_call` passed, `sse-retry` passed with a timing warning, an older failed run of
    /// `sse-retry`, `auth/metadata-default` failed, and one broken file.
    fn sample_results() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let write = |run: &str, checks: &str| {
            let run_dir = dir.path().join(run);
            fs::create_dir_all(&run_dir).unwrap();
            fs::write(run_dir.join("checks.json"), checks).unwrap();
            fs::write(run_dir.join("stderr.txt"), "").unwrap();
        };
        write("initialize-2026-11-30T18-49-17-976Z", "[]");
        write(
            "tools_call-2026-11-30T18-49-20-606Z",
            r#"[{"id":"incoming-request","status":"INFO"},
                {"id":"tool-add-numbers","name":"ToolAddNumbers","status":"SUCCESS","details":{"a":1,"b":1}}]"#,
        );
        write(
            "sse-retry-2026-11-30T18-49-21-167Z",
            r#"[{"id":"client-sse-graceful-reconnect","status":"FAILURE","errorMessage":"no GET"}]"#,
        );
        write(
            "sse-retry-2026-11-30T18-59-00-000Z",
            r#"[{"id":"client-sse-graceful-reconnect","status":"SUCCESS"},
                {"id":"client-sse-retry-timing","status":"WARNING","errorMessage":"slightly late"},
                {"id":"outgoing-sse-event","status":"INFO"}]"#,
        );
        write(
            "auth/metadata-default-2026-11-30T18-49-22-081Z",
            r#"[{"id":"prm-pathbased-requested","status":"FAILURE","errorMessage":"Expected Check Missing"},
                {"id":"token-request","status":"SKIPPED","details":{"message":"never reached"}},
                {"id":"server-info","status":"SUCCESS"}]"#,
        );
        write(
            "elicitation-sep1034-client-defaults-2026-11-30T18-49-21-629Z",
            "{not json",
        );
        fs::create_dir_all(dir.path().join("not-a-run")).unwrap();
        dir
    }

    #[test]
    fn every_checks_json_is_read_and_judged_strictly() {
        let dir = sample_results();
        let results = read_results(dir.path()).unwrap();
        let verdicts: BTreeMap<&str, Verdict> = results.iter().map(|(k, v)| (k.as_str(), v.verdict())).collect();
        assert_eq!(
            verdicts.keys().copied().collect::<Vec<_>>(),
            [
                "auth/metadata-default",
                "elicitation-sep1034-client-defaults",
                "initialize",
                "sse-retry",
                "tools_call"
            ]
        );
        assert_eq!(
            verdicts["initialize"],
            Verdict::Failed {
                reason: "no verdict checks (the client did nothing the suite could judge)".to_owned(),
                failing: Vec::new()
            }
        );
        assert_eq!(verdicts["tools_call"], Verdict::Passed { warnings: 0 });
        // The later run wins over the earlier failure.
        assert_eq!(verdicts["sse-retry"], Verdict::Passed { warnings: 1 });
        assert_eq!(
            verdicts["auth/metadata-default"],
            Verdict::Failed {
                reason: "2 of 3 check(s) failed".to_owned(),
                failing: vec![
                    "prm-pathbased-requested FAILURE: Expected Check Missing".to_owned(),
                    "token-request SKIPPED: never reached".to_owned()
                ]
            }
        );
        let Verdict::Failed { reason, .. } = &verdicts["elicitation-sep1034-client-defaults"] else {
            panic!("a broken checks.json must fail");
        };
        assert!(
            reason.ends_with("checks.json: not JSON: key must be a string at line 1 column 2"),
            "{reason}"
        );
    }

    #[test]
    fn the_table_lists_every_scenario_with_its_failing_checks() {
        let dir = sample_results();
        let results = read_results(dir.path()).unwrap();
        let scenarios: Vec<String> = ["tools_call", "sse-retry", "auth/metadata-default", "never-ran"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let table = format_table("0.1.16", &scenarios, &results);
        let expected = "
@modelcontextprotocol/conformance@0.1.16 (* = must pass)
scenario                 result              failing checks
-----------------------  ------------------  --------------
tools_call *             passed
sse-retry *              passed (1 warn.)
auth/metadata-default *  FAILED              prm-pathbased-requested FAILURE: Expected Check Missing
                                             token-request SKIPPED: never reached
never-ran                FAILED              no checks.json was written
0.1.16: 2 passed, 2 failed
";
        assert_eq!(table, expected);
    }

    #[test]
    fn the_table_shows_at_most_a_few_failing_checks_per_scenario() {
        let checks: Vec<Check> = (1..=8)
            .map(|n| Check {
                id: format!("check-{n}"),
                name: None,
                status: "FAILURE".to_owned(),
                message: None,
            })
            .collect();
        let result = ScenarioResult {
            dir: PathBuf::from("/results/x-2026-01-01T00-00-00-000Z"),
            timestamp: "2026-01-01T00-00-00-000Z".to_owned(),
            checks: Ok(checks),
        };
        let results = BTreeMap::from([("x".to_owned(), result)]);
        let table = format_table("v", &["x".to_owned()], &results);
        let rows: Vec<&str> = table.lines().skip(4).map(str::trim).collect();
        assert_eq!(
            rows,
            [
                "x         FAILED              check-1 FAILURE",
                "check-2 FAILURE",
                "check-3 FAILURE",
                "check-4 FAILURE",
                "check-5 FAILURE",
                "check-6 FAILURE",
                "(and 2 more)",
                "v: 0 passed, 1 failed"
            ]
        );
    }

    #[test]
    fn timestamps_are_split_off_run_directories() {
        assert_eq!(
            split_timestamp("tools_call-2026-11-30T18-49-20-606Z"),
            Some(("tools_call", "2026-11-30T18-49-20-606Z"))
        );
        assert_eq!(
            split_timestamp("auth/scope-step-up-2026-01-02T03-04-05-006Z"),
            Some(("auth/scope-step-up", "2026-01-02T03-04-05-006Z"))
        );
        assert_eq!(split_timestamp("-2026-11-30T18-49-20-606Z"), None);
        assert_eq!(split_timestamp("tools_call-2026-11-30T18:49:20.606Z"), None);
        assert_eq!(split_timestamp("short"), None);
    }

    #[test]
    fn the_scenario_list_is_read_from_list_output() {
        let output = "Client scenarios (test against a client):\n  - initialize [2025-06-18,2025-11-25]\n  \
                      - auth/metadata-default [2025-11-25]\n  - sse-retry\n\nsomething else\n";
        assert_eq!(
            parse_scenario_list(output),
            ["initialize", "auth/metadata-default", "sse-retry"]
        );
        assert!(parse_scenario_list("Usage: conformance list\n").is_empty());
    }

    #[test]
    fn each_suite_version_has_its_must_pass_scenarios() {
        let old = must_pass("0.1.16");
        let new = must_pass("0.2.0-alpha.12");
        assert_eq!(&old[..MUST_PASS.len()], MUST_PASS);
        assert_eq!(&new[..MUST_PASS.len()], MUST_PASS);
        assert!(new.contains(&"auth/iss-normalized") && !old.contains(&"auth/iss-normalized"));
        assert!(
            old.contains(&"auth/cross-app-access-complete-flow")
                && !new.contains(&"auth/cross-app-access-complete-flow")
        );
        for version in SUITES {
            let list = must_pass(version);
            let mut distinct = list.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), list.len(), "{version} lists a scenario twice");
        }
        assert!(MUST_PASS_IN.iter().all(|(version, _)| SUITES.contains(version)));
    }

    #[test]
    fn helpers_quote_and_name_safely() {
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(log_name("auth/scope-step-up"), "auth_scope-step-up.log");
        assert_eq!(shorten("a\nb", 10), "a");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }
}
