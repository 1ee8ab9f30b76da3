//! `plexus import --from SOURCE [FILE] [--scope S] [--overwrite]`: another client's servers
//! converted, checked and written, with a line for everything changed or skipped. VS Code inputs
//! become `${VARIABLE}`s; on a terminal, their values are asked for.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use plexus::config::{
    ConfigSources, Import, ImportContext, ImportNote, Scope, ServerKind, ServerName, WriteOutcome, import_servers,
};
use serde::Serialize;

use crate::edit::entry_kind;
use crate::output::print_json;
use crate::terminal::outln;
use crate::terminal::read_answer;
use crate::{ImportArgs, Outcome, fail};

/// `plexus import --json`: the stable shape.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ImportReport {
    from: &'static str,
    file: String,
    scope: &'static str,
    target: String,
    added: Vec<String>,
    replaced: Vec<String>,
    kept_existing: Vec<String>,
    notes: Vec<NoteJson>,
    inputs: Vec<InputJson>,
}

#[derive(Debug, Serialize)]
struct NoteJson {
    kind: &'static str,
    server: Option<String>,
    field: Option<String>,
    message: String,
}

impl From<&ImportNote> for NoteJson {
    fn from(note: &ImportNote) -> NoteJson {
        NoteJson {
            kind: note.kind.as_str(),
            server: note.server.clone(),
            field: note.field.clone(),
            message: note.message.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
struct InputJson {
    id: String,
    variable: String,
    description: Option<String>,
    password: bool,
    /// Whether its value was typed on the terminal and written into the entries.
    filled: bool,
}

pub(crate) fn import_command(sources: &ConfigSources, args: &ImportArgs, json: bool) -> Outcome {
    let user_home = match std::env::var_os("HOME").filter(|home| !home.is_empty()) {
        Some(home) => PathBuf::from(home),
        None => return fail("cannot find your home directory (for the clients' default files): set HOME"),
    };
    let context = ImportContext {
        user_home,
        project_dir: sources.paths().project_dir.clone(),
        env: sources.env().clone(),
    };
    let mut imported = match import_servers(args.from, args.file.as_deref(), &context) {
        Ok(imported) => imported,
        Err(e) => return crate::fail_error(&e),
    };
    if !json {
        for note in &imported.notes {
            crate::terminal::print_block(&note.to_string());
        }
    }
    let filled = if imported.inputs.is_empty() || !io::stdin().is_terminal() {
        Vec::new()
    } else {
        ask_inputs(&mut imported)
    };
    if !json {
        for input in imported.inputs.iter().filter(|input| filled.contains(&input.variable)) {
            outln!(
                "filled: input {:?}: the value given is written in place of ${{{}}}",
                input.id,
                input.variable
            );
        }
    }
    let mut edit = match sources.edit(args.scope) {
        Ok(edit) => edit,
        Err(e) => return crate::fail_error(&e),
    };
    let written = match imported.write_to(&mut edit, args.overwrite) {
        Ok(written) => written,
        Err(e) => return crate::fail_error(&e),
    };
    let target = edit.path().to_owned();
    if let Err(e) = edit.commit() {
        return crate::fail_error(&e);
    }
    let target = target.display().to_string();
    if json {
        print_json(&report(&imported, &written, &filled, args.scope.as_str(), target));
        return Outcome::Ok;
    }
    let kind = |name: &ServerName| {
        imported
            .servers
            .iter()
            .find(|server| &server.name == name)
            .map_or(ServerKind::Stdio, |server| entry_kind(&server.entry))
    };
    let scope = args.scope;
    for name in &written.added {
        outln!(
            "added {} server {:?} to {target} ({scope} scope)",
            kind(name),
            name.as_str()
        );
    }
    for name in &written.replaced {
        outln!(
            "replaced {} server {:?} in {target} ({scope} scope)",
            kind(name),
            name.as_str()
        );
    }
    for name in &written.kept_existing {
        outln!(
            "kept server {:?}: {target} already defines it (use --overwrite to replace it)",
            name.as_str()
        );
    }
    if imported.servers.is_empty() {
        outln!("no server to import from {}", imported.file.display());
    }
    let changed: Vec<&str> = written
        .added
        .iter()
        .chain(&written.replaced)
        .map(ServerName::as_str)
        .collect();
    if scope == Scope::Project && !changed.is_empty() {
        outln!(
            "project servers run once approved: plexus approve {}",
            changed.join(" ")
        );
    }
    Outcome::Ok
}

fn report(
    imported: &Import,
    written: &WriteOutcome,
    filled: &[String],
    scope: &'static str,
    target: String,
) -> ImportReport {
    let names = |names: &[ServerName]| names.iter().map(ToString::to_string).collect();
    ImportReport {
        from: imported.source.as_str(),
        file: imported.file.display().to_string(),
        scope,
        target,
        added: names(&written.added),
        replaced: names(&written.replaced),
        kept_existing: names(&written.kept_existing),
        notes: imported.notes.iter().map(NoteJson::from).collect(),
        inputs: imported
            .inputs
            .iter()
            .map(|input| InputJson {
                id: input.id.clone(),
                variable: input.variable.clone(),
                description: input.description.clone(),
                password: input.password,
                filled: filled.contains(&input.variable),
            })
            .collect(),
    }
}

/// Asks on the terminal for each input's value (hidden for a password); an empty answer keeps the
/// `${VARIABLE}`. Returns the variables whose value was written into the entries.
fn ask_inputs(imported: &mut Import) -> Vec<String> {
    let mut filled = Vec::new();
    for input in imported.inputs.clone() {
        let described = input
            .description
            .as_deref()
            .map(|description| format!(" ({description})"))
            .unwrap_or_default();
        eprint!(
            "value for input {:?}{described}, written into the entries as plain text; empty keeps ${{{}}}: ",
            input.id, input.variable
        );
        let _ = io::stderr().flush();
        let answer = match read_answer(input.password) {
            Ok(Some(answer)) => answer,
            Ok(None) => {
                eprintln!();
                break;
            }
            Err(e) => {
                crate::terminal::say(format_args!("cannot read the answer: {e}"));
                break;
            }
        };
        if !answer.is_empty() && imported.fill_input(&input.variable, &answer) > 0 {
            filled.push(input.variable);
        }
    }
    filled
}
