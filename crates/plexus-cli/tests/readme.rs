//! The README's walk-through, run as written: every `$ ` line of its `console` block is run by
//! `sh` in a fresh workspace (no config file, so the built-in demo server), with this build's
//! `plexus` first on `PATH`, and must exit 0 and print what the README shows under it (a `...`
//! line stands for any number of lines). A README claim that breaks fails here.

mod support;

use std::path::Path;
use std::process::Stdio;

use support::{PLEXUS, Workspace};

/// One command of the walk-through and the output the README shows for it.
#[derive(Debug)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// The steps of the first `console` block after the `## Walk-through` heading.
fn walk_through(readme: &str) -> Vec<Step> {
    let section = readme
        .split_once("\n## Walk-through\n")
        .expect("the README has a `## Walk-through` section")
        .1;
    let block = section
        .split_once("```console\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .expect("the walk-through has a console block")
        .0;
    let mut steps: Vec<Step> = Vec::new();
    for line in block.lines() {
        match (line.strip_prefix("$ "), steps.last_mut()) {
            (Some(command), _) => steps.push(Step {
                command: command.to_owned(),
                expected: Vec::new(),
            }),
            (None, Some(step)) => step.expected.push(line.to_owned()),
            (None, None) => panic!("the console block starts with output: {line:?}"),
        }
    }
    steps
}

/// Whether `actual` is `expected`, a `...` line in `expected` standing for any lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => (0..=actual.len()).any(|skip| matches(rest, &actual[skip..])),
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, left)| line == first && matches(rest, left)),
    }
}

#[test]
fn the_walk_through_runs_as_written() {
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let steps = walk_through(&readme);
    assert!(steps.len() >= 5, "{steps:?}");
    let ws = Workspace::new();
    let bin = Path::new(PLEXUS).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    for step in &steps {
        // The workspace's environment (its plexus home, user home, managed file), for a shell.
        let plexus = ws.command(ws.path(), &[]);
        let mut shell = std::process::Command::new("sh");
        shell
            .arg("-c")
            .arg(&step.command)
            .current_dir(ws.path())
            .envs(plexus.get_envs().filter_map(|(key, value)| Some((key, value?))))
            .env("PATH", &path)
            .env_remove("COLUMNS")
            .stdin(Stdio::null());
        let output = shell.output().unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "$ {}\n{stderr}", step.command);
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(
            matches(&step.expected, &lines),
            "$ {}\nthe README shows:\n{}\nplexus printed:\n{stdout}",
            step.command,
            step.expected.join("\n")
        );
    }
}

#[test]
fn an_ellipsis_stands_for_any_lines() {
    let expected: Vec<String> = ["a", "...", "d"].map(str::to_owned).to_vec();
    assert!(matches(&expected, &["a", "b", "c", "d"]));
    assert!(matches(&expected, &["a", "d"]));
    assert!(!matches(&expected, &["a", "b"]));
    assert!(!matches(&expected, &["x", "d"]));
}
