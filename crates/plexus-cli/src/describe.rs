//! `plexus describe NAME` (and `plexus tools NAME` for a tool's qualified name): one tool in full,
//! its description whole and a table of its arguments, so that nobody needs `--json` to learn
//! how to call it.

use plexus::tools::ToolEntry;

use crate::Outcome;
use crate::arguments::{arguments, choices_label, default_label, description, type_label};
use crate::commands::{start_for, unknown_tool};
use crate::connect::close;
use crate::output::print_json;
use crate::sources::Configured;
use crate::table::{self, Column};
use crate::terminal::{self, outln};

/// The columns of the argument table.
const ARGUMENT_COLUMNS: [Column; 6] = [
    Column {
        header: "ARGUMENT",
        flexible: false,
    },
    Column {
        header: "TYPE",
        flexible: true,
    },
    Column {
        header: "REQUIRED",
        flexible: false,
    },
    Column {
        header: "DEFAULT",
        flexible: true,
    },
    Column {
        header: "VALUES",
        flexible: true,
    },
    Column {
        header: "DESCRIPTION",
        flexible: true,
    },
];

/// Starts the servers that may hold the tool `name` and prints it (`--json`: its entry, as
/// `plexus tools --json` has it).
pub(crate) async fn describe_command(configured: Configured, name: &str, json: bool) -> Outcome {
    let hub = match start_for(&configured, name, "tool").await {
        Ok(hub) => hub,
        Err(outcome) => return outcome,
    };
    let pool = hub.tool_pool().await;
    let outcome = match pool.entries.iter().find(|entry| entry.name == name) {
        Some(entry) if json => {
            print_json(&**entry);
            Outcome::Ok
        }
        Some(entry) => {
            print_tool(entry);
            Outcome::Ok
        }
        None => unknown_tool(&hub, name, &pool),
    };
    close(&hub).await;
    outcome
}

/// The tool for a person: its name and title, where it comes from, its flags, its description
/// whole, then its arguments.
fn print_tool(entry: &ToolEntry) {
    let title = if entry.title.is_empty() || entry.title == entry.tool {
        String::new()
    } else {
        format!(" ({})", terminal::line(&entry.title))
    };
    outln!("{}{title}", terminal::line(&entry.name));
    outln!(
        "tool {:?} of server {:?}",
        terminal::line(&entry.tool),
        terminal::line(&entry.server)
    );
    let flags = flags(entry);
    if !flags.is_empty() {
        outln!("{}", flags.join(", "));
    }
    match entry.task_support.as_str() {
        "forbidden" => {}
        "required" => outln!("runs as a task only (required), which plexus does not do yet: it cannot be called"),
        other => outln!("runs as a task: {}", terminal::line(other)),
    }
    if !entry.description.trim().is_empty() {
        outln!();
        terminal::print_block(entry.description.trim());
    }
    outln!();
    let described = arguments(&entry.input_schema);
    if described.is_empty() {
        outln!("no arguments");
    } else {
        let rows: Vec<Vec<String>> = described
            .iter()
            .map(|argument| {
                vec![
                    argument.name.to_owned(),
                    type_label(argument.schema),
                    if argument.required { "yes" } else { "no" }.to_owned(),
                    default_label(argument.schema),
                    choices_label(argument.schema),
                    description(argument.schema).to_owned(),
                ]
            })
            .collect();
        table::print_fitted(&ARGUMENT_COLUMNS, &rows, Vec::new());
    }
    if entry.output_schema.is_some() {
        outln!();
        outln!(
            "returns structured content too (its schema: plexus describe --json {})",
            terminal::line(&entry.name)
        );
    }
}

/// `read-only`, `destructive`, `open-world`: the tool's hints that are set.
pub(crate) fn flags(entry: &ToolEntry) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if entry.read_only {
        flags.push("read-only");
    }
    if entry.destructive {
        flags.push("destructive");
    }
    if entry.open_world {
        flags.push("open-world");
    }
    flags
}
