//! `plexus lock` (write the tool-pool lockfile, or re-lock some tools or servers with
//! `--update`), `plexus diff` (what changed since the lock, field by field) and what `plexus
//! tools` says of the tools a lockfile holds. Text from servers is escaped as it is printed.

use std::collections::HashMap;

use plexus::Hub;
use plexus::tools::ToolPool;
use plexus::tools::lock::{DiffLine, FieldChange, LockScope, ServerDiff, diff_server, is_text_field, line_diff};
use serde::Serialize;
use serde_json::Value;

use crate::Outcome;
use crate::commands::start_selected;
use crate::connect::close;
use crate::sources::Configured;
use crate::terminal::{block, line, outln};

/// `--scope` of `plexus lock`: `project` or `user`.
pub(crate) fn parse_scope(text: &str) -> Result<LockScope, String> {
    match text {
        "project" => Ok(LockScope::Project),
        "user" => Ok(LockScope::User),
        other => Err(format!(
            "{other:?} is not a lockfile scope: project (<project>/.mcp.lock.json) or user (<home>/mcp.lock.json)"
        )),
    }
}

/// `plexus lock`, on the runtime.
pub(crate) fn lock(configured: Configured, update: &[String], scope: Option<LockScope>) -> Outcome {
    crate::block_on(lock_command(configured, update, scope))
}

/// `plexus diff`, on the runtime.
pub(crate) fn diff(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    crate::block_on(diff_command(configured, only, json))
}

/// `plexus lock [--scope S]` and `plexus lock --update NAME... [--scope S]`.
async fn lock_command(configured: Configured, update: &[String], scope: Option<LockScope>) -> Outcome {
    let hub = match start_selected(&configured, None).await {
        Ok((hub, _)) => hub,
        Err(outcome) => return outcome,
    };
    let written = if update.is_empty() {
        hub.lock_tools(scope.unwrap_or(LockScope::User)).await
    } else {
        hub.relock(update, scope).await
    };
    close(&hub).await;
    let written = match written {
        Ok(written) => written,
        Err(error) => return crate::fail_error(&error),
    };
    for file in &written.files {
        let tools: usize = file.servers.iter().map(|(_, tools)| tools.len()).sum();
        let verb = if update.is_empty() { "locked" } else { "re-locked" };
        outln!(
            "{verb} {} server(s) in {} ({} tool lock(s) changed)",
            file.servers.len(),
            line(&file.path.display().to_string()),
            tools
        );
        for (server, changed) in &file.servers {
            if changed.is_empty() {
                outln!("  server {}: unchanged", line(&format!("{server:?}")));
            } else {
                let changed: Vec<String> = changed.iter().map(|tool| line(tool).into_owned()).collect();
                outln!("  server {}: {}", line(&format!("{server:?}")), changed.join(", "));
            }
        }
        for server in &file.kept {
            outln!(
                "  server {}: not connected; its lock is kept as it was",
                line(&format!("{server:?}"))
            );
        }
    }
    for (server, why) in &written.not_connected {
        crate::terminal::say(format_args!("not locked: server {server:?} is not connected ({why})"));
    }
    if written.files.is_empty() {
        crate::terminal::say("nothing was locked");
    }
    Outcome::Ok
}

/// One server's diff against one lockfile, for `--json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileDiff<'a> {
    scope: LockScope,
    file: String,
    #[serde(flatten)]
    diff: &'a ServerDiff,
}

/// `plexus diff --json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiffReport<'a> {
    drift: bool,
    servers: Vec<FileDiff<'a>>,
    not_locked: Vec<String>,
    not_connected: Vec<NotConnected>,
}

#[derive(Serialize)]
struct NotConnected {
    server: String,
    reason: String,
}

/// `plexus diff [SERVER]`: exit 0 when nothing changed since the lock, 1 when something did, 2
/// when a lockfile cannot be read.
async fn diff_command(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    let hub = match start_selected(&configured, only).await {
        Ok((hub, _)) => hub,
        Err(outcome) => return outcome,
    };
    let pool = hub.tool_pool().await;
    let set = hub.tool_locks().await;
    let mut diffs = Vec::new();
    let mut not_locked = Vec::new();
    let mut not_connected = Vec::new();
    for (server, state) in hub.pool().states() {
        let locks: Vec<_> = set.locks_of(&server).collect();
        if state.status != plexus::pool::ServerStatus::Connected {
            if !locks.is_empty() {
                not_connected.push(NotConnected {
                    server,
                    reason: state.status.as_str().to_owned(),
                });
            }
            continue;
        }
        if locks.is_empty() {
            not_locked.push(server);
            continue;
        }
        let list = match hub.pool().tools(&server).await {
            Ok(list) => list,
            Err(error) => {
                crate::terminal::say_error(&error);
                not_connected.push(NotConnected {
                    server,
                    reason: "its tools could not be listed".to_owned(),
                });
                continue;
            }
        };
        for (file, _, locked) in locks {
            diffs.push((file.scope, file.path.clone(), diff_server(&server, locked, &list)));
        }
    }
    let problems: Vec<_> = set.problems().cloned().collect();
    close(&hub).await;
    for problem in &problems {
        crate::terminal::say_error(&**problem);
    }
    let drift = diffs.iter().any(|(_, _, diff)| !diff.is_empty());
    if json {
        crate::output::print_json(&DiffReport {
            drift,
            servers: diffs
                .iter()
                .map(|(scope, file, diff)| FileDiff {
                    scope: *scope,
                    file: file.display().to_string(),
                    diff,
                })
                .collect(),
            not_locked,
            not_connected,
        });
    } else {
        let names = qualified_names(&pool);
        for (_, file, diff) in &diffs {
            print_diff(diff, &file.display().to_string(), &names);
        }
        for server in &not_locked {
            crate::terminal::note(format_args!("server {server:?} is in no lockfile"));
        }
        for NotConnected { server, reason } in &not_connected {
            crate::terminal::say(format_args!(
                "server {server:?} is locked but {reason}: its tools could not be compared"
            ));
        }
        if diffs.is_empty() && problems.is_empty() {
            outln!("no server is locked (plexus lock writes a lockfile)");
        }
    }
    if !problems.is_empty() {
        Outcome::Usage
    } else if drift {
        Outcome::ToolError
    } else {
        Outcome::Ok
    }
}

/// Each tool's qualified name in the pool (held ones included), by server and tool.
fn qualified_names(pool: &ToolPool) -> HashMap<(String, String), String> {
    pool.entries
        .iter()
        .map(|entry| ((entry.server.clone(), entry.tool.clone()), entry.name.clone()))
        .chain(
            pool.left_out
                .iter()
                .map(|left| ((left.server.clone(), left.tool.clone()), left.name.clone())),
        )
        .collect()
}

/// A tool as `mcp__s__t (tool "t")`, or `tool "t"` when it has no name in the pool.
fn tool_label(names: &HashMap<(String, String), String>, server: &str, tool: &str) -> String {
    let quoted = line(&format!("{tool:?}")).into_owned();
    match names.get(&(server.to_owned(), tool.to_owned())) {
        Some(name) => format!("{} (tool {quoted})", line(name)),
        None => format!("tool {quoted}"),
    }
}

/// One server's diff, readably.
fn print_diff(diff: &ServerDiff, file: &str, names: &HashMap<(String, String), String>) {
    let server = line(&format!("{:?}", diff.server)).into_owned();
    if diff.is_empty() {
        outln!("server {server}: no change since it was locked in {}", line(file));
        return;
    }
    outln!("server {server}: changed since it was locked in {}", line(file));
    for change in &diff.changed {
        outln!("  changed: {}", tool_label(names, &diff.server, &change.tool));
        for field in &change.fields {
            print_field(field);
        }
    }
    for added in &diff.added {
        outln!("  added: {}", tool_label(names, &diff.server, &added.tool));
    }
    for removed in &diff.removed {
        outln!("  removed: tool {}", line(&format!("{:?}", removed.tool)));
    }
}

/// One member that changed: a text as a line diff, JSON by pointer.
fn print_field(field: &FieldChange) {
    outln!("    {}:", field.field);
    let text = |value: &Option<Value>| value.as_ref().and_then(Value::as_str).map(str::to_owned);
    if is_text_field(&field.field) && field.changes.is_empty() {
        let (before, after) = (text(&field.before), text(&field.after));
        if before.is_none() {
            outln!("      (none before)");
        }
        for diff_line in line_diff(before.as_deref().unwrap_or(""), after.as_deref().unwrap_or("")) {
            match diff_line {
                DiffLine::Same(same) => outln!("        {}", line(same)),
                DiffLine::Removed(removed) => outln!("      - {}", line(removed)),
                DiffLine::Added(added) => outln!("      + {}", line(added)),
            }
        }
        if after.is_none() {
            outln!("      (none now)");
        }
        return;
    }
    for change in &field.changes {
        let pointer = if change.pointer.is_empty() {
            "(the whole member)".to_owned()
        } else {
            line(&change.pointer).into_owned()
        };
        outln!("      {pointer}:");
        outln!("      - {}", shown(change.before.as_ref()));
        outln!("      + {}", shown(change.after.as_ref()));
    }
}

/// A JSON value on one line (escaped), or `(none)`.
fn shown(value: Option<&Value>) -> String {
    value.map_or_else(
        || "(none)".to_owned(),
        |value| block(&serde_json::to_string(value).unwrap_or_default()).into_owned(),
    )
}

/// What `plexus tools` says of the tools a lockfile holds (on stderr, as it says of the other
/// tools it leaves out), and of a lockfile that cannot be read.
pub(crate) async fn report_held(hub: &Hub, pool: &ToolPool) {
    for problem in hub.tool_locks().await.problems() {
        crate::terminal::say_error(&**problem);
    }
    let names = qualified_names(pool);
    for held in hub.held_tools() {
        let Some(name) = names.get(&(held.server.clone(), held.tool.clone())) else {
            continue;
        };
        crate::terminal::say(format_args!(
            "held: {name} (server {:?}, tool {:?}): {}",
            held.server,
            held.tool,
            approval_hint(name, &held.reason)
        ));
    }
}

/// Why a tool is held, and how to see and approve the change.
fn approval_hint(name: &str, reason: &plexus::tools::lock::HoldReason) -> String {
    format!("{reason}; see plexus diff, approve with plexus lock --update {name}")
}

/// `plexus call` of a tool a lockfile holds: says so (exit 2) rather than that there is no
/// such tool.
pub(crate) fn refuse_held(hub: &Hub, pool: &ToolPool, name: &str) -> Option<Outcome> {
    let left = pool
        .left_out
        .iter()
        .find(|left| left.name == name && matches!(left.because, plexus::tools::LeftOutBecause::Held(_)))?;
    let held = hub
        .held_tools()
        .into_iter()
        .find(|held| held.server == left.server && held.tool == left.tool)?;
    crate::terminal::say(format_args!(
        "error: tool {name} is held out of the tool pool: {}",
        approval_hint(name, &held.reason)
    ));
    Some(Outcome::Usage)
}
