//! `cargo xtask fuzz [TARGET] [SECONDS]`: builds and runs the cargo-fuzz targets in `fuzz/` on the
//! stable toolchain, each from a scratch copy of its seed corpus, and fails on a crash.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::cmd::{self, CommandError};

/// How long each target runs when no duration is given.
pub(crate) const DEFAULT_SECONDS: u64 = 30;

/// The longest a single input may run before libFuzzer reports it as a hang. Inputs are at most a
/// few KiB and decoding them takes microseconds, so this only catches real hangs.
const INPUT_TIMEOUT_SECONDS: u64 = 20;

/// The most memory (resident set) a target may use, in MiB, and the largest single allocation
/// (libFuzzer's `-malloc_limit_mb` defaults to this): inputs are at most a few KiB and every
/// parser is bounded, so an input that needs more (a decompression bomb, say) is a bug,
/// reported as a crash with its input saved. libFuzzer's own default, made explicit.
const RSS_LIMIT_MB: u64 = 2048;

/// The TARGET that means every target, so that a duration can be given for all of them.
const ALL_TARGETS: &str = "all";

/// Arguments of `cargo xtask fuzz`.
#[derive(Debug, clap::Args)]
pub(crate) struct FuzzArgs {
    /// The fuzz target to run (see `fuzz/fuzz_targets/`); every target when omitted or `all`.
    pub(crate) target: Option<String>,
    /// How long to fuzz each target, in seconds.
    #[arg(default_value_t = DEFAULT_SECONDS, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) seconds: u64,
}

/// Why fuzzing failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FuzzError {
    /// A command (install, list, build, run) could not be run or failed.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// `cargo fuzz list` exited unsuccessfully.
    #[error("`cargo fuzz list` failed in {dir}: {stderr}")]
    List {
        /// The fuzz directory.
        dir: PathBuf,
        /// What it printed on standard error.
        stderr: String,
    },
    /// `cargo fuzz list` named no target.
    #[error("`cargo fuzz list` found no fuzz target in {dir}")]
    NoTargets {
        /// The fuzz directory.
        dir: PathBuf,
    },
    /// The requested target does not exist.
    #[error("there is no fuzz target `{target}`; the targets are: {}", known.join(", "))]
    UnknownTarget {
        /// The name asked for.
        target: String,
        /// The targets that exist.
        known: Vec<String>,
    },
    /// Preparing the scratch corpus failed.
    #[error("could not prepare the scratch corpus {path}")]
    Corpus {
        /// The file or directory involved.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The fuzzer found an input that crashes, hangs or exhausts memory.
    #[error(
        "fuzz target `{target}` failed ({status}); {}",
        describe_artifacts(artifacts, target)
    )]
    Crash {
        /// The target.
        target: String,
        /// How the fuzzer exited.
        status: String,
        /// The inputs it saved (crash-*, timeout-*, oom-*, leak-*), written during this run.
        artifacts: Vec<PathBuf>,
    },
    /// More than one target failed (when running all of them).
    #[error("{} of {total} fuzz targets failed:\n{}", failures.len(), failures.iter().map(|e| format!("  - {}", plexus_jsonrpc::error_chain(e))).collect::<Vec<_>>().join("\n"))]
    Several {
        /// How many targets ran.
        total: usize,
        /// Each target's failure.
        failures: Vec<FuzzError>,
    },
}

fn describe_artifacts(artifacts: &[PathBuf], target: &str) -> String {
    if artifacts.is_empty() {
        return "no artifact was written (see the fuzzer's output above)".to_owned();
    }
    let paths: Vec<String> = artifacts.iter().map(|p| p.display().to_string()).collect();
    format!(
        "the failing input is saved at {}; reproduce with `RUSTC_BOOTSTRAP=1 cargo fuzz run {target} {}` in fuzz/",
        paths.join(", "),
        paths[0]
    )
}

/// The fuzz project directory.
pub(crate) fn fuzz_dir(root: &Path) -> PathBuf {
    root.join("fuzz")
}

/// A `cargo fuzz …` command run in `fuzz/` with the stable toolchain allowed to use the nightly
/// features cargo-fuzz relies on (`-Zsanitizer`, `-Cpasses=sancov-module`).
fn cargo_fuzz(root: &Path, args: &[&str]) -> Command {
    let mut command = cmd::cargo(["fuzz"]);
    command
        .args(args)
        .current_dir(fuzz_dir(root))
        .env("RUSTC_BOOTSTRAP", "1");
    command
}

/// Installs cargo-fuzz when it is missing.
pub(crate) fn ensure_cargo_fuzz() -> Result<(), CommandError> {
    cmd::ensure_cargo_subcommand("fuzz", "cargo-fuzz")
}

/// The fuzz targets, as `cargo fuzz list` reports them (cargo-fuzz must be installed).
pub(crate) fn targets(root: &Path) -> Result<Vec<String>, FuzzError> {
    let captured = cmd::run_captured(&mut cargo_fuzz(root, &["list"]))?;
    let dir = fuzz_dir(root);
    if !captured.status.success() {
        return Err(FuzzError::List {
            dir,
            stderr: captured.stderr.trim().to_owned(),
        });
    }
    let targets: Vec<String> = captured
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if targets.is_empty() {
        return Err(FuzzError::NoTargets { dir });
    }
    Ok(targets)
}

/// `cargo xtask fuzz`: runs one target or all of them for `args.seconds` each.
pub(crate) fn run(args: &FuzzArgs) -> Result<(), FuzzError> {
    let root = cmd::workspace_root();
    ensure_cargo_fuzz()?;
    let known = targets(&root)?;
    let selected = match args.target.as_deref() {
        None | Some(ALL_TARGETS) => known,
        Some(target) if known.iter().any(|k| k == target) => vec![target.to_owned()],
        Some(target) => {
            return Err(FuzzError::UnknownTarget {
                target: target.to_owned(),
                known,
            });
        }
    };
    let total = selected.len();
    let mut failures = Vec::new();
    for target in &selected {
        println!("==> fuzzing `{target}` for {} s", args.seconds);
        if let Err(e) = run_target(&root, target, args.seconds) {
            failures.push(e);
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 if total == 1 => Err(failures.remove(0)),
        _ => Err(FuzzError::Several { total, failures }),
    }
}

/// Builds `target` and fuzzes it for `seconds`, starting from a scratch copy of its seed corpus
/// (`fuzz/corpus/TARGET`), so the inputs the fuzzer generates stay under `fuzz/target/` and the
/// repository's corpus holds only the seeds. Fails if the fuzzer stops with an error.
pub(crate) fn run_target(root: &Path, target: &str, seconds: u64) -> Result<(), FuzzError> {
    // cargo-fuzz's default build (release, debug assertions, AddressSanitizer); `run` below uses
    // the same options and so reuses this build.
    cmd::run_streaming(&mut cargo_fuzz(root, &["build", target]))?;

    let corpus = scratch_corpus(root, target)?;
    let corpus_arg = corpus.to_string_lossy().into_owned();
    let max_total_time = format!("-max_total_time={seconds}");
    let timeout = format!("-timeout={INPUT_TIMEOUT_SECONDS}");
    let rss_limit = format!("-rss_limit_mb={RSS_LIMIT_MB}");
    let run_args = [
        "run",
        target,
        corpus_arg.as_str(),
        "--",
        max_total_time.as_str(),
        timeout.as_str(),
        rss_limit.as_str(),
    ];

    // A second of slack: file times come from a coarser clock than `SystemTime::now`.
    let started = SystemTime::now() - Duration::from_secs(1);
    match cmd::run_streaming(&mut cargo_fuzz(root, &run_args)) {
        Ok(()) => Ok(()),
        Err(CommandError::Failed { status, .. }) => Err(FuzzError::Crash {
            target: target.to_owned(),
            status: status.to_string(),
            artifacts: artifacts_since(&fuzz_dir(root).join("artifacts").join(target), started),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Makes `fuzz/target/xtask-corpus/TARGET` and copies the seeds (`fuzz/corpus/TARGET/*`) into it.
/// Inputs found by earlier runs stay, so repeated runs build on each other.
fn scratch_corpus(root: &Path, target: &str) -> Result<PathBuf, FuzzError> {
    let seeds = fuzz_dir(root).join("corpus").join(target);
    let scratch = fuzz_dir(root).join("target").join("xtask-corpus").join(target);
    let corpus_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| FuzzError::Corpus { path, source }
    };
    fs::create_dir_all(&scratch).map_err(corpus_error(&scratch))?;
    let entries = match fs::read_dir(&seeds) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            println!(
                "warning: {} does not exist: fuzzing `{target}` from an empty corpus",
                seeds.display()
            );
            return Ok(scratch);
        }
        Err(e) => return Err(corpus_error(&seeds)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(corpus_error(&seeds))?;
        let source = entry.path();
        if source.is_file() {
            let dest = scratch.join(entry.file_name());
            fs::copy(&source, &dest).map_err(corpus_error(&dest))?;
        }
    }
    Ok(scratch)
}

/// Files in `dir` modified at or after `since` (libFuzzer names them by the input's hash, so a
/// crash found again overwrites the same file).
fn artifacts_since(dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified >= since)
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_corpus_copies_the_seeds_and_leaves_them_alone() {
        let root = tempfile::tempdir().unwrap();
        let seeds = root.path().join("fuzz/corpus/framing");
        fs::create_dir_all(seeds.join("nested")).unwrap();
        fs::write(seeds.join("seed-a"), b"a\n").unwrap();
        fs::write(seeds.join("seed-b"), b"b\n").unwrap();

        let scratch = scratch_corpus(root.path(), "framing").unwrap();
        assert_eq!(scratch, root.path().join("fuzz/target/xtask-corpus/framing"));
        fs::write(scratch.join("generated"), b"found by the fuzzer").unwrap();
        fs::write(seeds.join("seed-a"), b"a changed\n").unwrap();
        // A second run refreshes the seeds and keeps what earlier runs found.
        scratch_corpus(root.path(), "framing").unwrap();

        let mut names: Vec<String> = fs::read_dir(&scratch)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["generated", "seed-a", "seed-b"]);
        assert_eq!(fs::read(scratch.join("seed-a")).unwrap(), b"a changed\n");
        let mut seed_names: Vec<String> = fs::read_dir(&seeds)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        seed_names.sort();
        assert_eq!(
            seed_names,
            ["nested", "seed-a", "seed-b"],
            "nothing is written into the repository corpus"
        );
    }

    #[test]
    fn scratch_corpus_without_seeds_is_empty() {
        let root = tempfile::tempdir().unwrap();
        let scratch = scratch_corpus(root.path(), "message").unwrap();
        assert_eq!(fs::read_dir(scratch).unwrap().count(), 0);
    }

    #[test]
    fn artifacts_since_lists_only_files_written_during_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("crash-old");
        fs::write(&old, b"x").unwrap();
        let long_ago = SystemTime::now() - Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        let since = SystemTime::now() - Duration::from_secs(60);
        fs::write(dir.path().join("crash-new"), b"y").unwrap();

        assert_eq!(artifacts_since(dir.path(), since), [dir.path().join("crash-new")]);
        assert!(artifacts_since(&dir.path().join("missing"), since).is_empty());
    }

    #[test]
    fn crash_error_names_the_artifact_and_how_to_reproduce() {
        let err = FuzzError::Crash {
            target: "framing".to_owned(),
            status: "exit status: 77".to_owned(),
            artifacts: vec![PathBuf::from("/w/fuzz/artifacts/framing/crash-1")],
        };
        assert_eq!(
            err.to_string(),
            "fuzz target `framing` failed (exit status: 77); the failing input is saved at \
             /w/fuzz/artifacts/framing/crash-1; reproduce with `RUSTC_BOOTSTRAP=1 cargo fuzz run framing \
             /w/fuzz/artifacts/framing/crash-1` in fuzz/"
        );
    }
}
