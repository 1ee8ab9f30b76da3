//! The subcommands that talk to servers (`servers`, `tools`, `call`), and the dispatcher.

use std::io::Read;
use std::time::Duration;

use plexus::config::ConfigSources;
use plexus::protocol::{CallToolResult, Tool};
use plexus::tools::naming::{PREFIX, SEPARATOR, plain_name};
use plexus::tools::{CallError, CallOptions, ServerTools, ToolFilter, ToolIndex, assemble, call_tool, server_entries};
use plexus::tools::{ResultSettings, ResultStore, process};
use serde_json::{Map, Value};

use plexus::pool::{Pool, ServerStatus};

use crate::connect::{close, connect, connector};
use crate::output::{ServerRow, print_call_result, print_servers, print_tools};
use crate::progress::View;
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

async fn servers_command(configured: Configured, json: bool) -> Outcome {
    let connector = connector();
    let all: Vec<&Server> = configured.servers.iter().collect();
    let view = if json { View::Spinner } else { View::Lines };
    let pool = connect(&connector, &all, view).await;
    let mut rows = Vec::with_capacity(configured.servers.len());
    for server in &configured.servers {
        rows.push(ServerRow::new(server, &pool).await);
    }
    let outcome = none_usable(configured.servers.len(), &pool).unwrap_or(Outcome::Ok);
    let outcome = required_outcome(&pool).unwrap_or(outcome);
    close(&connector, &pool).await;
    print_servers(&rows, json);
    outcome
}

/// How a command that needs servers ends when none of the `configured` ones could be used (and
/// says so on stderr): 2 when none was started (every entry invalid, refused, disabled or waiting
/// for approval), 4 when every one started needs a login, else 3. `None` when one is usable or
/// none is configured.
fn none_usable(configured: usize, pool: &Pool) -> Option<Outcome> {
    let states = pool.states();
    if configured == 0 || states.iter().any(|(_, state)| state.status == ServerStatus::Connected) {
        return None;
    }
    let any = |status: ServerStatus| states.iter().any(|(_, state)| state.status == status);
    let (outcome, why) = if any(ServerStatus::Failed) {
        (Outcome::Connection, "none could be connected")
    } else if any(ServerStatus::NeedsAuth) {
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

/// A server whose entry says `"required": true` and that could not be used fails the command
/// (said on stderr): 4 when it needs a login, else 3.
fn required_outcome(pool: &Pool) -> Option<Outcome> {
    let mut outcome = None;
    for (name, state) in pool.states() {
        let required = pool.spec(&name).is_some_and(|spec| spec.is_required());
        if !required || state.status == ServerStatus::Connected {
            continue;
        }
        let what = match state.status {
            ServerStatus::NeedsAuth => "needs a login",
            ServerStatus::Failed => "could not connect",
            _ => "is not started",
        };
        let why = match &state.error {
            Some(e) => Some(plexus::pool::text::without_server(&name, &e.to_string()).to_owned()),
            None => state.reason.clone(),
        };
        crate::terminal::say(format_args!(
            "required server {name:?} {what}{}",
            why.map(|why| format!(": {why}")).unwrap_or_default()
        ));
        let this = if state.status == ServerStatus::NeedsAuth {
            Outcome::NeedsAuth
        } else {
            Outcome::Connection
        };
        outcome = Some(outcome.map_or(this, |o: Outcome| o.min(this)));
    }
    outcome
}

/// How a command ends after using the servers it could: see [`none_usable`]; else 3 when some
/// failed for another reason than a login, 4 when some need one, 0 when all worked.
fn partial_outcome(configured: usize, pool: &Pool, listing_failed: bool) -> Outcome {
    if let Some(outcome) = none_usable(configured, pool).or_else(|| required_outcome(pool)) {
        return outcome;
    }
    let states = pool.states();
    let any = |status: ServerStatus| states.iter().any(|(_, state)| state.status == status);
    if listing_failed || any(ServerStatus::Failed) {
        Outcome::Connection
    } else if any(ServerStatus::NeedsAuth) {
        Outcome::NeedsAuth
    } else {
        Outcome::Ok
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
    let pool = connect(&connector, &selected, View::Spinner).await;
    let mut listed = Vec::new();
    let mut listing_failed = false;
    for server in &selected {
        let Some(state) = pool.state(&server.name) else {
            continue;
        };
        match state.status {
            ServerStatus::Connected => match pool.tools(&server.name).await {
                Ok(tools) => listed.push((server.name.as_str(), tools, filter_of(server))),
                Err(e) => {
                    crate::terminal::say(format_args!("{e}"));
                    listing_failed = true;
                }
            },
            ServerStatus::Failed | ServerStatus::NeedsAuth => {
                if let Some(error) = &state.error {
                    crate::terminal::say(format_args!("{error}"));
                }
            }
            _ => {}
        }
    }
    let mut index = ToolIndex::default();
    let built: Vec<_> = listed
        .iter()
        .map(|(server, tools, filter)| (*server, server_entries(server, tools, &mut index), filter))
        .collect();
    let servers: Vec<ServerTools<'_>> = built
        .iter()
        .map(|(server, entries, filter)| ServerTools {
            server,
            entries,
            filter,
        })
        .collect();
    let entries = assemble(&[], &servers).entries;
    for collision in index.collisions() {
        let names: Vec<String> = collision
            .names
            .iter()
            .map(|(origin, name)| format!("{:?} of server {:?} is {name}", origin.tool, origin.server))
            .collect();
        crate::terminal::say(format_args!(
            "tools share the name {}; each keeps one of its own: {}",
            collision.plain,
            names.join(", ")
        ));
    }
    let outcome = partial_outcome(selected.len(), &pool, listing_failed);
    close(&connector, &pool).await;
    print_tools(&entries, json);
    outcome
}

/// The entry's `enabledTools` / `disabledTools`.
fn filter_of(server: &Server) -> ToolFilter {
    server.config.as_ref().map_or_else(ToolFilter::default, |config| {
        let options = config.options();
        ToolFilter::new(options.enabled_tools.as_deref(), &options.disabled_tools)
    })
}

/// Whether a tool of `server` may be named `name`: the name starts with the server's part
/// (`mcp__<server>__`), or, for a long name whose head was cut to make room for its hash, the
/// head is a start of that part. Only such servers are started for a call.
fn may_hold(server: &str, name: &str) -> bool {
    let part = plain_name(server, "");
    if name.starts_with(&part) {
        return true;
    }
    let Some((head, hash)) = name.rsplit_once(SEPARATOR) else {
        return false;
    };
    let hashed = hash.len() >= 8 && hash.chars().all(|c| c.is_ascii_hexdigit());
    hashed && head.len() > PREFIX.len() && part.starts_with(head)
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
    // Only the servers whose part of a name matches can hold the tool.
    let candidates: Vec<&Server> = configured
        .servers
        .iter()
        .filter(|server| may_hold(&server.name, name))
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
    if !candidates.iter().any(|server| server.runnable().is_some()) {
        return Outcome::Usage;
    }
    let connector = connector();
    let pool = connect(&connector, &candidates, View::Spinner).await;
    let outcome = call_in(&pool, &candidates, name, arguments, connector.home(), json).await;
    close(&connector, &pool).await;
    outcome
}

async fn call_in(
    pool: &Pool,
    candidates: &[&Server],
    name: &str,
    arguments: Map<String, Value>,
    home: Option<&std::path::Path>,
    json: bool,
) -> Outcome {
    let mut outcome = Outcome::Usage;
    for server in candidates.iter().filter(|server| server.runnable().is_some()) {
        let Some(state) = pool.state(&server.name) else {
            continue;
        };
        if state.status != ServerStatus::Connected {
            if let Some(error) = &state.error {
                crate::terminal::say(format_args!("{error}"));
            }
            outcome = if state.status == ServerStatus::NeedsAuth {
                Outcome::NeedsAuth
            } else {
                Outcome::Connection
            };
            continue;
        }
        let tools = match pool.tools(&server.name).await {
            Ok(tools) => tools,
            Err(e) => {
                crate::terminal::say(format_args!("{e}"));
                outcome = Outcome::Connection;
                continue;
            }
        };
        // The name resolves through the index of this server's tools, never by splitting it.
        let mut index = ToolIndex::default();
        for tool in tools.iter() {
            index.insert(&server.name, &tool.name);
        }
        // A tool its entry's filter leaves out is not in the pool: it cannot be called.
        let filter = filter_of(server);
        let Some(tool) = index
            .resolve(name)
            .and_then(|origin| tools.iter().find(|t| t.name == origin.tool))
            .filter(|tool| filter.allows(&tool.name))
        else {
            continue;
        };
        return match call_tool(pool, &server.name, tool, arguments, &CallOptions::default()).await {
            Ok(result) => report(result, tool, home, json),
            Err(e) => {
                crate::terminal::say(format_args!("calling {name}: {}", e.reason()));
                match e {
                    CallError::TaskRequired { .. } => Outcome::Usage,
                    _ => Outcome::Connection,
                }
            }
        };
    }
    if outcome == Outcome::Usage {
        crate::terminal::say(format_args!("no tool is named {name:?} (see `plexus tools`)"));
    }
    outcome
}

/// Processes the result (large images downsampled, binary content and output over
/// `MAX_MCP_OUTPUT_TOKENS` saved under `<home>/tool-results/<session>/`) and prints it.
fn report(result: CallToolResult, tool: &Tool, home: Option<&std::path::Path>, json: bool) -> Outcome {
    // Without a plexus home (no HOME), a directory of the system's temporary one.
    let home = home.map_or_else(|| std::env::temp_dir().join("plexus"), std::path::Path::to_path_buf);
    // Sessions older than a week go first (bounded work).
    ResultStore::remove_old_sessions(&home, plexus::tools::store::KEEP_FOR);
    let store = ResultStore::new(&home, &ResultStore::session_name());
    let settings = ResultSettings::from_lookup(|name| std::env::var(name).ok());
    match process(result, Some(tool), &store, &settings) {
        Ok(processed) => {
            print_call_result(&processed, json);
            if processed.is_error {
                Outcome::ToolError
            } else {
                Outcome::Ok
            }
        }
        Err(e) => {
            crate::terminal::say(format_args!(
                "the result of {:?} could not be processed: {e}",
                tool.name
            ));
            Outcome::Connection
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_starts_only_the_servers_whose_part_the_name_has() {
        assert!(may_hold("s", "mcp__s__t"));
        assert!(!may_hold("sx", "mcp__s__t"));
        let long = plexus::tools::qualified_name(&"v".repeat(70), "t");
        assert!(may_hold(&"v".repeat(70), &long), "{long}");
        assert!(!may_hold("v", &long));
    }

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
