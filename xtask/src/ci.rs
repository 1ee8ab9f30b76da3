//! `cargo xtask ci`: every check the project's CI runs, in order, each as a child process whose
//! output streams through; a failed step does not stop the others. Ends with a summary table and
//! one closing line, `N passed, N failed`.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd;
use crate::conformance::{self, ConformanceArgs};
use crate::fuzz::{self, FuzzError};
use crate::peers;
use crate::soak::{self, SoakArgs};

/// How long the fuzz smoke run fuzzes each target when `--fuzz-seconds` is not given.
const DEFAULT_FUZZ_SECONDS: u64 = 10;

/// Set to `1` to add cargo-deny's `advisories` check.
const ADVISORIES_ENV: &str = "PLEXUS_DENY_ADVISORIES";

/// Arguments of `cargo xtask ci`.
#[derive(Debug, clap::Args)]
pub(crate) struct CiArgs {
    /// How long the fuzz smoke run fuzzes each target, in seconds.
    #[arg(long, default_value_t = DEFAULT_FUZZ_SECONDS, value_parser = clap::value_parser!(u64).range(1..))]
    fuzz_seconds: u64,
}

/// How a step ended.
enum Outcome {
    /// It ran and succeeded; the note says anything it left out.
    Passed { note: Option<String> },
    /// It ran and failed, for this reason.
    Failed(String),
    /// It did not run, for this reason.
    Skipped(String),
}

impl Outcome {
    fn passed() -> Self {
        Outcome::Passed { note: None }
    }

    fn from_result<E: std::error::Error>(result: Result<(), E>) -> Self {
        match result {
            Ok(()) => Outcome::passed(),
            Err(e) => Outcome::Failed(plexus_jsonrpc::error_chain(&e)),
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Outcome::Passed { .. } => "passed",
            Outcome::Failed(_) => "FAILED",
            Outcome::Skipped(_) => "skipped",
        }
    }

    fn detail(&self) -> Option<&str> {
        match self {
            Outcome::Passed { note } => note.as_deref(),
            Outcome::Failed(reason) | Outcome::Skipped(reason) => Some(reason),
        }
    }
}

/// One finished step.
struct StepReport {
    name: String,
    outcome: Outcome,
    elapsed: Duration,
}

/// The run so far.
struct Ci {
    root: PathBuf,
    reports: Vec<StepReport>,
}

impl Ci {
    /// Prints the step's header, runs it, prints how it ended and records it.
    fn step(&mut self, name: impl Into<String>, body: impl FnOnce(&Path) -> Outcome) {
        let name = name.into();
        print_header(&name);
        let started = Instant::now();
        let outcome = body(&self.root);
        self.record(name, outcome, started.elapsed());
    }

    fn record(&mut self, name: String, outcome: Outcome, elapsed: Duration) {
        match outcome.detail() {
            Some(detail) => println!("<== {name}: {} in {}: {detail}", outcome.label(), seconds(elapsed)),
            None => println!("<== {name}: {} in {}", outcome.label(), seconds(elapsed)),
        }
        self.reports.push(StepReport { name, outcome, elapsed });
    }

    /// A cargo command in the workspace root, streamed.
    fn cargo_step(&mut self, name: &str, args: &[&str], env: &[(&str, &str)]) {
        self.step(name, |root| {
            let mut command = cmd::cargo(args);
            command.current_dir(root).envs(env.iter().copied());
            Outcome::from_result(cmd::run_streaming(&mut command))
        });
    }
}

fn print_header(name: &str) {
    println!();
    println!("==> {name}");
}

fn seconds(elapsed: Duration) -> String {
    format!("{:.1} s", elapsed.as_secs_f64())
}

/// Runs every step and prints the summary; returns whether all of them passed.
pub(crate) fn run(args: &CiArgs) -> bool {
    let mut ci = Ci {
        root: cmd::workspace_root(),
        reports: Vec::new(),
    };

    ci.cargo_step("rustfmt", &["fmt", "--all", "--", "--check"], &[]);
    ci.cargo_step(
        "clippy",
        &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
        &[],
    );
    ci.step("facade features", facade_features);
    // The OpenTelemetry features (off by default), linted with their tests: the client's and the
    // gateway's `otel`, the facade's and the CLI's `otlp`.
    ci.cargo_step(
        "clippy (OpenTelemetry features)",
        &[
            "clippy",
            "-p",
            "plexus-client",
            "-p",
            "plexus-gateway",
            "-p",
            "plexus",
            "-p",
            "plexus-cli",
            "--all-targets",
            "--features",
            OTEL_FEATURES,
            "--",
            "-D",
            "warnings",
        ],
        &[],
    );
    if cmd::has_cargo_subcommand("nextest") {
        ci.cargo_step(
            "tests (nextest)",
            &["nextest", "run", "--workspace", "--no-fail-fast"],
            &[],
        );
        // After the workspace's tests, whose test server binary they use: only the tests of the
        // OpenTelemetry features (the client's unit tests, the facade's in-memory exporter
        // tests, the CLI's OTLP receiver tests), built with them.
        ci.cargo_step(
            "tests (OpenTelemetry features)",
            &[
                "nextest", "run", "--no-fail-fast", "-p", "plexus-client", "-p", "plexus", "-p", "plexus-cli",
                "--features", OTEL_FEATURES, "-E",
                "(package(plexus-client) & kind(lib)) | (package(plexus) & (kind(lib) | binary(otel))) | (package(plexus-cli) & binary(otlp))",
            ],
            &[],
        );
    } else {
        println!("\ncargo-nextest is not installed: running the tests with cargo test");
        ci.cargo_step("tests (cargo test)", &["test", "--workspace", "--no-fail-fast"], &[]);
    }
    // Right after the tests, whose build it reuses (see `soak`).
    ci.step("soak (short)", |_| {
        Outcome::from_result(soak::run(&SoakArgs {
            short: true,
            seed: None,
        }))
    });
    // Real third-party peers and the official conformance suite (npm registry and PyPI needed).
    ci.step("peers", |_| Outcome::from_result(peers::run()));
    ci.step("conformance", |_| {
        Outcome::from_result(conformance::run(&ConformanceArgs::default()))
    });
    ci.cargo_step("doctests", &["test", "--workspace", "--doc"], &[]);
    ci.cargo_step(
        "rustdoc",
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    );
    // The peer bench (`cargo xtask bench --peers`) is a crate of its own outside the workspace:
    // built with its unit tests, then a smoke run in debug mode (every row and workload runs;
    // the figures of a debug build are not judged), so that it keeps working as plexus changes.
    ci.cargo_step(
        "rustfmt (peer bench)",
        &[
            "fmt",
            "--manifest-path",
            crate::bench::PEER_BENCH_MANIFEST,
            "--",
            "--check",
        ],
        &[],
    );
    // In the workspace's target directory (as the smoke run builds it): what the workspace's
    // steps compiled is reused, not built a second time in the bench's own.
    let target = crate::peers::target_dir().display().to_string();
    ci.cargo_step(
        "peer bench (build, unit tests)",
        &["test", "--manifest-path", crate::bench::PEER_BENCH_MANIFEST, "--locked"],
        &[("CARGO_TARGET_DIR", &target)],
    );
    ci.step("peer bench (smoke run)", |_| {
        Outcome::from_result(crate::bench::peer_bench_smoke())
    });
    ci.step("layer check", check_layers);
    ci.step("cargo deny", |root| {
        deny(root, std::env::var(ADVISORIES_ENV).is_ok_and(|v| v == "1"))
    });
    fuzz_smoke(&mut ci, args.fuzz_seconds);

    print_summary(&ci.reports)
}

/// The OpenTelemetry features of every crate that has one.
const OTEL_FEATURES: &str = "plexus-client/otel,plexus-gateway/otel,plexus/otlp,plexus-cli/otlp";

/// The `plexus` facade's features, each alone and none at all: a host that depends on only the
/// layers it needs builds, without warnings (clippy, which reuses the clippy step's build).
const FACADE_FEATURES: [&str; 10] = [
    "", "stdio", "http", "sse", "ws", "auth", "tools", "watch", "otel", "otlp",
];

fn facade_features(root: &Path) -> Outcome {
    let mut failed = Vec::new();
    for feature in FACADE_FEATURES {
        let mut args = vec!["clippy", "-p", "plexus", "--no-default-features"];
        if !feature.is_empty() {
            args.extend(["--features", feature]);
        }
        args.extend(["--", "-D", "warnings"]);
        let mut command = cmd::cargo(&args);
        command.current_dir(root);
        if cmd::run_streaming(&mut command).is_err() {
            failed.push(if feature.is_empty() { "none" } else { feature });
        }
    }
    if failed.is_empty() {
        Outcome::passed()
    } else {
        Outcome::Failed(format!("the facade does not build cleanly with: {}", failed.join(", ")))
    }
}

/// `../shared/tools/check-layers`, which must exit 0 and print nothing.
fn check_layers(root: &Path) -> Outcome {
    let shared = root.join("..").join("shared");
    if !shared.is_dir() {
        println!("skipped: ../shared not found");
        return Outcome::Skipped("../shared not found".to_owned());
    }
    let mut command = Command::new(shared.join("tools").join("check-layers"));
    command.current_dir(root);
    cmd::echo(&command);
    let captured = match cmd::run_captured(&mut command) {
        Ok(captured) => captured,
        Err(e) => return Outcome::Failed(plexus_jsonrpc::error_chain(&e)),
    };
    print!("{}", captured.stdout);
    eprint!("{}", captured.stderr);
    if !captured.status.success() {
        Outcome::Failed(format!("check-layers failed ({})", captured.status))
    } else if !captured.stdout.trim().is_empty() || !captured.stderr.trim().is_empty() {
        Outcome::Failed("check-layers printed problems (above)".to_owned())
    } else {
        Outcome::passed()
    }
}

/// `cargo deny check bans licenses sources`, plus `advisories` when asked for.
fn deny(root: &Path, with_advisories: bool) -> Outcome {
    if let Err(e) = cmd::ensure_cargo_subcommand("deny", "cargo-deny") {
        return Outcome::Failed(plexus_jsonrpc::error_chain(&e));
    }
    let mut args = vec!["deny", "check", "bans", "licenses", "sources"];
    let note = if with_advisories {
        args.push("advisories");
        None
    } else {
        println!(
            "advisories skipped: the RustSec advisory database is fetched from outside the package registries, \
             which this machine may not reach; set {ADVISORIES_ENV}=1 to check it"
        );
        Some(format!("advisories skipped (set {ADVISORIES_ENV}=1)"))
    };
    let mut command = cmd::cargo(args);
    command.current_dir(root);
    match cmd::run_streaming(&mut command) {
        Ok(()) => Outcome::Passed { note },
        Err(e) => Outcome::Failed(plexus_jsonrpc::error_chain(&e)),
    }
}

/// One step per fuzz target, through the same code as `cargo xtask fuzz TARGET SECONDS`.
fn fuzz_smoke(ci: &mut Ci, seconds: u64) {
    let name = "fuzz smoke";
    print_header(&format!("{name}: finding the fuzz targets"));
    let started = Instant::now();
    let listed = fuzz::ensure_cargo_fuzz()
        .map_err(FuzzError::from)
        .and_then(|()| fuzz::targets(&ci.root));
    match listed {
        Ok(targets) => {
            println!("fuzz targets: {}", targets.join(", "));
            for target in targets {
                ci.step(format!("fuzz {target} ({seconds} s)"), |root| {
                    Outcome::from_result(fuzz::run_target(root, &target, seconds))
                });
            }
        }
        Err(e) => ci.record(
            name.to_owned(),
            Outcome::Failed(plexus_jsonrpc::error_chain(&e)),
            started.elapsed(),
        ),
    }
}

/// Prints the table and the closing line; returns whether no step failed.
fn print_summary(reports: &[StepReport]) -> bool {
    let width = reports
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max("step".len());
    println!();
    println!("{:<width$}  {:<7}  {:>8}  note", "step", "result", "time");
    println!("{:-<width$}  {:-<7}  {:->8}  {:-<4}", "", "", "", "");
    for report in reports {
        let detail = report.outcome.detail().map(first_line).unwrap_or_default();
        println!(
            "{:<width$}  {:<7}  {:>8}  {detail}",
            report.name,
            report.outcome.label(),
            seconds(report.elapsed)
        );
    }
    let total: Duration = reports.iter().map(|r| r.elapsed).sum();
    println!("{:<width$}  {:<7}  {:>8}", "total", "", seconds(total));
    let tally = Tally::of(reports);
    if tally.skipped > 0 {
        println!("({} skipped, not counted)", tally.skipped);
    }
    println!("{tally}");
    tally.failed == 0
}

/// How many steps passed, failed and were skipped.
#[derive(Debug, PartialEq, Eq)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Tally {
    fn of(reports: &[StepReport]) -> Self {
        let count = |f: fn(&Outcome) -> bool| reports.iter().filter(|r| f(&r.outcome)).count();
        Tally {
            passed: count(|o| matches!(o, Outcome::Passed { .. })),
            failed: count(|o| matches!(o, Outcome::Failed(_))),
            skipped: count(|o| matches!(o, Outcome::Skipped(_))),
        }
    }
}

/// The closing line: `N passed, N failed` (skipped steps are not counted).
impl Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)
    }
}

/// The first line of a possibly multi-line reason, for the table.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn report(outcome: Outcome) -> StepReport {
        StepReport {
            name: "step".to_owned(),
            outcome,
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn closing_line_counts_passed_and_failed_but_not_skipped() {
        let reports = [
            report(Outcome::passed()),
            report(Outcome::Failed("`cargo fmt` failed".to_owned())),
            report(Outcome::Skipped("../shared not found".to_owned())),
            report(Outcome::Passed {
                note: Some("advisories skipped".to_owned()),
            }),
        ];
        let tally = Tally::of(&reports);
        assert_eq!(
            tally,
            Tally {
                passed: 2,
                failed: 1,
                skipped: 1
            }
        );
        assert_eq!(tally.to_string(), "2 passed, 1 failed");
        assert!(!print_summary(&reports));
        assert!(print_summary(&reports[..1]));
    }

    /// A workspace `ws/` with `shared/tools/check-layers` beside it running `script`.
    fn workspace_with_layer_check(script: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir(&root).unwrap();
        let tools = dir.path().join("shared/tools");
        fs::create_dir_all(&tools).unwrap();
        let tool = tools.join("check-layers");
        fs::write(&tool, format!("#!/bin/sh\n{script}\n")).unwrap();
        fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
        (dir, root)
    }

    #[test]
    fn layer_check_is_skipped_without_shared() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir(&root).unwrap();
        assert!(matches!(check_layers(&root), Outcome::Skipped(reason) if reason == "../shared not found"));
    }

    #[test]
    fn layer_check_passes_only_when_silent_and_successful() {
        let _lock = crate::process_test_lock();
        let (_dir, root) = workspace_with_layer_check("exit 0");
        assert!(matches!(check_layers(&root), Outcome::Passed { note: None }));

        let (_dir, root) = workspace_with_layer_check("echo 'plexus-stdio -> plexus-sse: same layer'");
        assert!(
            matches!(check_layers(&root), Outcome::Failed(reason) if reason == "check-layers printed problems (above)")
        );

        let (_dir, root) = workspace_with_layer_check("exit 1");
        assert!(
            matches!(check_layers(&root), Outcome::Failed(reason) if reason == "check-layers failed (exit status: 1)")
        );
    }
}
