//! `cargo xtask faults [FILTER]`: runs the fault matrix (`crates/plexus-cli/tests/faults/`, one
//! test per cell) and prints it as Markdown: for the Hub and for `plexus serve`, a row per fault
//! and a column per transport, each cell the outcome of the call that met the fault and how long
//! it took. The same cells run in the test suite; this prints what they saw.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::PathBuf;

use serde_json::Value;

use crate::cmd::{self, CommandError};

/// The transports, in column order, as the matrix's rows name them.
const TRANSPORTS: [(&str, &str); 5] = [
    ("stdio", "stdio"),
    ("sse", "legacy SSE"),
    ("http", "Streamable HTTP (initialize era)"),
    ("stateless", "Streamable HTTP (2026-07-28)"),
    ("ws", "WebSocket"),
];

/// Arguments of `cargo xtask faults`.
#[derive(Debug, clap::Args)]
pub(crate) struct FaultsArgs {
    /// Run only the cells whose name contains this (`hub::stdio`, `gateway`, `hang`).
    pub(crate) filter: Option<String>,
}

/// Why the matrix could not be printed or did not pass.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FaultsError {
    /// The cells could not be run.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The report file could not be read or the matrix written.
    #[error("{}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A row of the report is not what the cells write.
    #[error("line {line} of {} is not a cell's row: {text}", .path.display())]
    Row {
        /// The report.
        path: PathBuf,
        /// The line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// Some cells failed (the matrix marks them).
    #[error("{failed} of {total} cells failed (marked FAILED in the matrix)")]
    Failed {
        /// How many failed.
        failed: usize,
        /// How many ran.
        total: usize,
    },
    /// No cell ran (a filter that matches none).
    #[error("no cell ran")]
    Empty,
}

/// Runs the cells, prints the matrix and writes it to `target/faults/matrix.md`.
pub(crate) fn run(args: &FaultsArgs) -> Result<(), FaultsError> {
    let root = cmd::workspace_root();
    let dir = root.join("target").join("faults");
    let report = dir.join("report.jsonl");
    fs::create_dir_all(&dir).map_err(|source| FaultsError::File {
        path: dir.clone(),
        source,
    })?;
    match fs::remove_file(&report) {
        Err(source) if source.kind() != io::ErrorKind::NotFound => {
            return Err(FaultsError::File { path: report, source });
        }
        _ => {}
    }
    let mut command = cmd::cargo(["test", "-p", "plexus-cli", "--test", "faults", "--"]);
    if let Some(filter) = &args.filter {
        command.arg(filter);
    }
    command.current_dir(&root).env("PLEXUS_FAULTS_REPORT", &report);
    // A failing cell fails the command; the matrix is printed all the same.
    let ran = cmd::run_streaming(&mut command);
    let rows = read_rows(&report)?;
    if rows.is_empty() {
        ran?;
        return Err(FaultsError::Empty);
    }
    let matrix = markdown(&rows);
    let path = dir.join("matrix.md");
    fs::write(&path, &matrix).map_err(|source| FaultsError::File {
        path: path.clone(),
        source,
    })?;
    println!("\n{matrix}");
    println!("(written to {})", path.display());
    let failed = rows.iter().filter(|row| row["passed"] != true).count();
    if failed > 0 {
        return Err(FaultsError::Failed {
            failed,
            total: rows.len(),
        });
    }
    ran?;
    Ok(())
}

fn read_rows(report: &PathBuf) -> Result<Vec<Value>, FaultsError> {
    let text = match fs::read_to_string(report) {
        Ok(text) => text,
        Err(source) if source.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(FaultsError::File {
                path: report.clone(),
                source,
            });
        }
    };
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            serde_json::from_str(line).map_err(|_| FaultsError::Row {
                path: report.clone(),
                line: n + 1,
                text: line.to_owned(),
            })
        })
        .collect()
}

/// The matrix: a table per way in (the Hub, the gateway), a row per fault in the order the
/// cells ran, a column per transport.
fn markdown(rows: &[Value]) -> String {
    let mut out = String::new();
    for (via, title) in [("hub", "Through the Hub"), ("gateway", "Through `plexus serve --http`")] {
        let mut faults: Vec<&str> = Vec::new();
        let mut cells: BTreeMap<(&str, &str), &Value> = BTreeMap::new();
        for row in rows.iter().filter(|row| row["via"] == via) {
            let fault = row["fault"].as_str().unwrap_or("?");
            if !faults.contains(&fault) {
                faults.push(fault);
            }
            cells.insert((fault, row["transport"].as_str().unwrap_or("?")), row);
        }
        if faults.is_empty() {
            continue;
        }
        let _ = writeln!(out, "#### {title}\n");
        let header: Vec<&str> = TRANSPORTS.iter().map(|(_, name)| *name).collect();
        let _ = writeln!(out, "| fault | {} |", header.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(TRANSPORTS.len()));
        for fault in faults {
            let columns: Vec<String> = TRANSPORTS
                .iter()
                .map(|(transport, _)| {
                    cells
                        .get(&(fault, *transport))
                        .map_or_else(|| "—".to_owned(), |row| cell(row))
                })
                .collect();
            let _ = writeln!(out, "| {fault} | {} |", columns.join(" | "));
        }
        out.push('\n');
    }
    out.push_str(
        "Each cell: what the call that met the fault came to and in how long; then what the next call to the \
         same server came to, and the server's state. Every cell also checks that the healthy server answered \
         throughout, that no tool call ran twice, and that no process, descriptor, thread or task was left.\n",
    );
    out
}

fn cell(row: &Value) -> String {
    let text = format!(
        "{} {} ms; then {}, {}",
        row["outcome"].as_str().unwrap_or("?"),
        row["ms"],
        row["after"].as_str().unwrap_or("?"),
        row["state"].as_str().unwrap_or("?"),
    );
    if row["passed"] == true {
        text
    } else {
        format!("**FAILED**: {text}")
    }
}
