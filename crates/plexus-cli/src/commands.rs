//! The subcommands that talk to servers (`servers`, `tools`, `call`), and the dispatcher.

use std::io::Read;
use std::time::Duration;

use plexus::config::ConfigSources;
use plexus::protocol::CallToolResult;
use plexus::tools::{ToolEntry, normalize_name};
use serde_json::{Map, Value};

use crate::connect::{Attempt, Connection, Startable, close_all, connect_all, connector};
use crate::output::{ServerRow, print_call_result, print_servers, print_tools};
use crate::sources::{self, Configured, Server};
use crate::{Cli, Command, Outcome, block_on, edit, get, import, login};

/// The most text read from stdin for `call NAME -` and `add-json NAME -` (16 MiB).
const MAX_STDIN: u64 = 16 * 1024 * 1024;

/// Runs one command and says how it ended.
pub(crate) fn run(cli: Cli) -> Outcome {
    let globals = &cli.globals;
    let sources = match sources::discover_or_report(globals) {
        Ok(sources) => sources,
        Err(outcome) => return outcome,
    };
    let json = globals.json;
    match cli.command {
        Command::Servers => with_config(&sources, |configured| block_on(servers_command(configured, json))),
        Command::Tools { server } => with_config(&sources, |configured| {
            block_on(tools_command(configured, server.as_deref(), json))
        }),
        Command::Call { name, arguments } => {
            // Bad arguments are reported before anything is read or started.
            let arguments = match parse_arguments(arguments.as_deref()) {
                Ok(arguments) => arguments,
                Err(e) => {
                    crate::terminal::say(format_args!("{e}"));
                    return Outcome::Usage;
                }
            };
            with_config(&sources, |configured| {
                block_on(call_command(configured, &name, arguments, json))
            })
        }
        Command::Get { name } => with_config(&sources, |configured| get::get_command(&configured, &name, json)),
        Command::Add(args) => edit::add(&sources, &args),
        Command::AddJson { name, entry, scope } => edit::add_json(&sources, &name, &entry, scope),
        Command::Remove { name, scope } => edit::remove(&sources, &name, scope),
        Command::Approve { names, all } => edit::approve(&sources, &names, all),
        Command::Reject { names } => edit::reject(&sources, &names),
        Command::Import(args) => import::import_command(&sources, &args, json),
        Command::Login { name, timeout } => with_config(&sources, |configured| {
            login::login_command(&configured, &name, Duration::from_secs(timeout))
        }),
        Command::Logout { name } => with_config(&sources, |configured| login::logout_command(&configured, &name)),
        Command::DemoServer(_) => unreachable!("the demo server runs before the runtime starts"),
    }
}

/// Loads every scope (see [`sources::load`]) and runs `job` on the result.
fn with_config(sources: &ConfigSources, job: impl FnOnce(Configured) -> Outcome) -> Outcome {
    match sources::load(sources) {
        Ok(configured) => job(configured),
        Err(outcome) => outcome,
    }
}

/// The servers among `selected` that may run, as `connect_all` takes them.
fn runnable<'s>(selected: impl IntoIterator<Item = &'s Server>) -> Vec<Startable> {
    selected
        .into_iter()
        .filter_map(|server| Some((server.name.clone(), server.runnable()?.clone(), server.scope)))
        .collect()
}

async fn servers_command(configured: Configured, json: bool) -> Outcome {
    let connector = connector();
    let attempts = connect_all(&connector, &runnable(&configured.servers)).await;
    let mut rows = Vec::with_capacity(configured.servers.len());
    for server in &configured.servers {
        let attempt = attempts.iter().find(|attempt| attempt.name == server.name);
        rows.push(ServerRow::new(server, attempt).await);
    }
    close_all(&connector, &attempts).await;
    print_servers(&rows, json);
    none_usable(configured.servers.len(), &attempts).unwrap_or(Outcome::Ok)
}

/// How a command that needs servers ends when none of the `configured` ones could be used (and
/// says so on stderr): 2 when none was started (every entry invalid, refused, disabled or waiting
/// for approval), 4 when every one started needs a login, else 3. `None` when one is usable or
/// none is configured.
fn none_usable(configured: usize, attempts: &[Attempt]) -> Option<Outcome> {
    if configured == 0
        || attempts
            .iter()
            .any(|a| matches!(a.connection, Connection::Connected(..)))
    {
        return None;
    }
    let failed = |auth: bool| {
        attempts
            .iter()
            .any(|a| matches!(&a.connection, Connection::Failed(e) if crate::connect::needs_auth(e) == auth))
    };
    let (outcome, why) = if failed(false) {
        (Outcome::Connection, "none could be connected")
    } else if failed(true) {
        (
            Outcome::NeedsAuth,
            "every one started needs a login (plexus login NAME)",
        )
    } else {
        (
            Outcome::Usage,
            "none may run (invalid, disabled, rejected or waiting for approval)",
        )
    };
    let noun = if configured == 1 { "server" } else { "servers" };
    crate::terminal::say(format_args!(
        "no server could be used: of {configured} configured {noun}, {why}"
    ));
    Some(outcome)
}

/// How a command ends after using the servers it could: see [`none_usable`]; else 3 when some
/// failed for another reason than a login, 4 when some need one, 0 when all worked.
fn partial_outcome(configured: usize, attempts: &[Attempt], listing_failed: bool) -> Outcome {
    if let Some(outcome) = none_usable(configured, attempts) {
        return outcome;
    }
    let failures = attempts.iter().filter_map(|a| match &a.connection {
        Connection::Failed(e) => Some(Outcome::of_connect_error(e)),
        Connection::Connected(..) => None,
    });
    let worst = failures.fold(None, |worst, outcome| match (worst, outcome) {
        (Some(Outcome::Connection), _) | (_, Outcome::Connection) => Some(Outcome::Connection),
        (_, outcome) => Some(outcome),
    });
    match (worst, listing_failed) {
        (_, true) | (Some(Outcome::Connection), _) => Outcome::Connection,
        (Some(outcome), false) => outcome,
        (None, false) => Outcome::Ok,
    }
}

async fn tools_command(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    let selected: Vec<&Server> = match only {
        None => configured.servers.iter().collect(),
        Some(name) => match configured.server(name) {
            Some(server) => vec![server],
            None => {
                crate::terminal::say(format_args!(
                    "no server named {name:?} is configured (configured: {})",
                    configured.names()
                ));
                return Outcome::Usage;
            }
        },
    };
    for server in &selected {
        server.report_diagnostics();
    }
    if let [server] = selected[..]
        && only.is_some()
        && server.runnable().is_none()
    {
        crate::terminal::say(format_args!("{}", server.not_started()));
        return Outcome::Usage;
    }
    for server in selected.iter().filter(|server| server.is_pending()) {
        crate::terminal::say(format_args!("{}", server.not_started()));
    }
    let connector = connector();
    let attempts = connect_all(&connector, &runnable(selected.iter().copied())).await;
    let mut entries = Vec::new();
    let mut listing_failed = false;
    for attempt in &attempts {
        match &attempt.connection {
            Connection::Connected(client, _) => match client.list_tools().await {
                Ok(tools) => entries.extend(tools.iter().map(|tool| ToolEntry::new(&attempt.name, tool))),
                Err(e) => {
                    crate::terminal::say(format_args!("server {:?}: listing tools failed: {e}", attempt.name));
                    listing_failed = true;
                }
            },
            Connection::Failed(e) => crate::terminal::say(format_args!("{e}")),
        }
    }
    close_all(&connector, &attempts).await;
    print_tools(&entries, json);
    partial_outcome(selected.len(), &attempts, listing_failed)
}

/// Reads at most [`MAX_STDIN`] bytes of text from stdin.
pub(crate) fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_STDIN)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    Ok(text)
}

/// Reads the arguments: none → `{}`, `-` → stdin, else the text; it must be a JSON object.
fn parse_arguments(arguments: Option<&str>) -> Result<Map<String, Value>, String> {
    let text = match arguments {
        None => return Ok(Map::new()),
        Some("-") => read_stdin().map_err(|e| format!("cannot read the arguments: {e}"))?,
        Some(text) => text.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, not {}",
            plexus::jsonrpc::value_kind(&other)
        )),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

async fn call_command(configured: Configured, name: &str, arguments: Map<String, Value>, json: bool) -> Outcome {
    // Only the servers whose prefix matches can hold the tool.
    let candidates: Vec<&Server> = configured
        .servers
        .iter()
        .filter(|server| name.starts_with(&format!("mcp__{}__", normalize_name(&server.name))))
        .collect();
    if candidates.is_empty() {
        crate::terminal::say(format_args!(
            "{name:?} names no tool of a configured server (tool names look like mcp__<server>__<tool>; servers: {})",
            configured.names()
        ));
        return Outcome::Usage;
    }
    for server in &candidates {
        server.report_diagnostics();
        if server.runnable().is_none() {
            crate::terminal::say(format_args!("{}", server.not_started()));
        }
    }
    let startable = runnable(candidates);
    if startable.is_empty() {
        return Outcome::Usage;
    }
    let connector = connector();
    let attempts = connect_all(&connector, &startable).await;
    let outcome = call_in(&attempts, name, arguments, json).await;
    close_all(&connector, &attempts).await;
    outcome
}

async fn call_in(attempts: &[Attempt], name: &str, arguments: Map<String, Value>, json: bool) -> Outcome {
    let mut outcome = Outcome::Usage;
    for attempt in attempts {
        let client = match &attempt.connection {
            Connection::Connected(client, _) => client,
            Connection::Failed(e) => {
                crate::terminal::say(format_args!("{e}"));
                outcome = Outcome::of_connect_error(e);
                continue;
            }
        };
        let tools = match client.list_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                crate::terminal::say(format_args!("server {:?}: listing tools failed: {e}", attempt.name));
                outcome = Outcome::Connection;
                continue;
            }
        };
        let Some(tool) = tools
            .iter()
            .find(|t| plexus::tools::qualified_name(&attempt.name, &t.name) == name)
        else {
            continue;
        };
        return match client.call_tool(&tool.name, Some(arguments)).await {
            Ok(result) => report(&result, json),
            Err(e) => {
                crate::terminal::say(format_args!("calling {name}: {e}"));
                Outcome::Connection
            }
        };
    }
    if outcome == Outcome::Usage {
        crate::terminal::say(format_args!("no tool is named {name:?} (see `plexus tools`)"));
    }
    outcome
}

fn report(result: &CallToolResult, json: bool) -> Outcome {
    print_call_result(result, json);
    if result.is_error() {
        Outcome::ToolError
    } else {
        Outcome::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments(None).unwrap(), Map::new());
        assert_eq!(parse_arguments(Some(r#"{"a":1}"#)).unwrap()["a"], 1);
        assert_eq!(
            parse_arguments(Some("[1]")).unwrap_err(),
            "the arguments must be a JSON object, not an array"
        );
        assert!(
            parse_arguments(Some("{"))
                .unwrap_err()
                .starts_with("the arguments are not valid JSON: EOF while parsing an object")
        );
    }
}
