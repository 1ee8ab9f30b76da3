//! The subcommands that list servers and tools and call tools (`servers`, `tools`, `call`), the
//! choice of servers a command starts, and the dispatcher.

use std::io::Read;
use std::time::Duration;

use plexus::pool::{Pool, ServerStatus};
use plexus::tools::naming::{PREFIX, SEPARATOR, plain_name};
use plexus::tools::{CallError, CallOptions, UrlElicitationError};
use plexus::{Hub, HubError};
use serde_json::{Map, Value};

use crate::connect::{close, start};
use crate::output::{ServerRow, print_call_result, print_servers, print_tools};
use crate::progress::View;
use crate::sources::{self, Configured, Server};
use crate::{AdHoc, Cli, Command, Outcome, block_on, content, edit, get, import, login};

/// The most text read from stdin for `call NAME -` and `add-json NAME -` (16 MiB).
const MAX_STDIN: u64 = 16 * 1024 * 1024;

/// Runs one command and says how it ended.
pub(crate) fn run(cli: Cli) -> Outcome {
    let globals = &cli.globals;
    if let Command::Completions { shell } = cli.command {
        return completions(shell);
    }
    let (discovery, sources) = match sources::discover_or_report(globals) {
        Ok(found) => found,
        Err(outcome) => return outcome,
    };
    let json = globals.json;
    let configured = |ad_hoc: &AdHoc, job: &mut dyn FnMut(Configured) -> Outcome| match sources::load(
        &discovery, &sources, ad_hoc,
    ) {
        Ok(configured) => job(configured),
        Err(outcome) => outcome,
    };
    let none = AdHoc::default();
    match cli.command {
        Command::Servers { ad_hoc } => configured(&ad_hoc, &mut |c| block_on(servers_command(c, json))),
        Command::Tools { server, ad_hoc } => {
            configured(&ad_hoc, &mut |c| block_on(tools_command(c, server.as_deref(), json)))
        }
        Command::Call {
            name,
            arguments,
            args,
            ad_hoc,
        } => {
            // Bad arguments are reported before anything is read or started.
            let arguments = match parse_arguments(arguments.as_deref()).and_then(|map| with_args(map, &args)) {
                Ok(arguments) => arguments,
                Err(e) => {
                    crate::terminal::say(format_args!("{e}"));
                    return Outcome::Usage;
                }
            };
            let mut arguments = Some(arguments);
            configured(&ad_hoc, &mut |c| {
                block_on(call_command(c, &name, arguments.take().unwrap_or_default(), json))
            })
        }
        Command::Resources { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::resources_command(c, server.as_deref(), json))
        }),
        Command::Templates { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::templates_command(c, server.as_deref(), json))
        }),
        Command::Read { server, uri, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::read_command(c, &server, &uri, json))
        }),
        Command::Prompts { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::prompts_command(c, server.as_deref(), json))
        }),
        Command::Prompt {
            name,
            arguments,
            ad_hoc,
        } => match content::prompt_arguments(&arguments) {
            Ok(arguments) => configured(&ad_hoc, &mut |c| {
                block_on(content::prompt_command(c, &name, arguments.clone(), json))
            }),
            Err(e) => crate::fail(e),
        },
        Command::Ping { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::ping_command(c, server.as_deref(), json))
        }),
        Command::Serve {
            http,
            token_file,
            session_idle,
            ad_hoc,
        } => match crate::serve::token(token_file.as_deref()) {
            Ok(token) => {
                let options = crate::serve::ServeOptions {
                    http,
                    token,
                    session_idle: std::time::Duration::from_secs(session_idle),
                };
                configured(&ad_hoc, &mut |c| crate::serve::run(c, options.clone()))
            }
            Err(e) => crate::fail(e),
        },
        Command::Get { name } => configured(&none, &mut |c| get::get_command(&c, &name, json)),
        Command::Add(args) => edit::add(&sources, &args),
        Command::AddJson { name, entry, scope } => edit::add_json(&sources, &name, &entry, scope),
        Command::Remove { name, scope } => edit::remove(&sources, &name, scope),
        Command::Approve { names, all } => edit::approve(&sources, &names, all),
        Command::Reject { names } => edit::reject(&sources, &names),
        Command::Import(args) => import::import_command(&sources, &args, json),
        Command::Login { name, timeout } => configured(&none, &mut |c| {
            login::login_command(&c, &name, Duration::from_secs(timeout))
        }),
        Command::Logout { name } => configured(&none, &mut |c| login::logout_command(&c, &name)),
        Command::DemoServer(_) | Command::Completions { .. } => {
            unreachable!("handled before the config is read")
        }
    }
}

/// Prints the completion script of `shell` for the whole command line.
fn completions(shell: clap_complete::Shell) -> Outcome {
    use clap::CommandFactory;
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "plexus", &mut std::io::stdout());
    Outcome::Ok
}

/// The servers a listing command starts: every configured one, or the one named `only`. Prints
/// the chosen servers' diagnostics, and for each waiting for approval why it is not started;
/// fails (exit 2) when `only` names no server or one that may not run.
pub(crate) fn select<'a>(configured: &'a Configured, only: Option<&str>) -> Result<Vec<&'a Server>, Outcome> {
    let selected: Vec<&Server> = match only {
        None => configured.servers.iter().collect(),
        Some(name) => match configured.server(name) {
            Some(server) => vec![server],
            None => {
                crate::terminal::say(format_args!(
                    "no server named {name:?} is configured (configured: {})",
                    configured.names()
                ));
                return Err(Outcome::Usage);
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
        return Err(Outcome::Usage);
    }
    for server in selected.iter().filter(|server| server.is_pending()) {
        crate::terminal::say(format_args!("{}", server.not_started()));
    }
    Ok(selected)
}

/// Prints why each server of `hub` that failed or needs a login could not be used.
pub(crate) fn report_unusable(hub: &Hub) {
    for (_, state) in hub.pool().states() {
        if matches!(state.status, ServerStatus::Failed | ServerStatus::NeedsAuth)
            && let Some(error) = &state.error
        {
            crate::terminal::say(format_args!("{error}"));
        }
    }
}

async fn servers_command(configured: Configured, json: bool) -> Outcome {
    let all: Vec<&Server> = configured.servers.iter().collect();
    let view = if json { View::Spinner } else { View::Lines };
    let hub = match start(&configured, &all, view).await {
        Ok(hub) => hub,
        Err(outcome) => return outcome,
    };
    let pool = hub.pool();
    let mut rows = Vec::with_capacity(configured.servers.len());
    for server in &configured.servers {
        rows.push(ServerRow::new(server, pool).await);
    }
    let outcome = none_usable(configured.servers.len(), pool).unwrap_or(Outcome::Ok);
    let outcome = required_outcome(pool).unwrap_or(outcome);
    close(&hub).await;
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
pub(crate) fn partial_outcome(configured: usize, pool: &Pool, listing_failed: bool) -> Outcome {
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
    let selected = match select(&configured, only) {
        Ok(selected) => selected,
        Err(outcome) => return outcome,
    };
    let hub = match start(&configured, &selected, View::Spinner).await {
        Ok(hub) => hub,
        Err(outcome) => return outcome,
    };
    report_unusable(&hub);
    let (pool, failures) = hub.tool_pool_report().await;
    for failure in &failures {
        crate::terminal::say(format_args!("{failure}"));
    }
    for collision in hub.tool_collisions() {
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
    let outcome = partial_outcome(selected.len(), hub.pool(), !failures.is_empty());
    close(&hub).await;
    print_tools(&pool.entries, json);
    outcome
}

/// Whether a tool of `server` may be named `name`: the name starts with the server's part
/// (`mcp__<server>__`), or, for a long name whose head was cut to make room for its hash, the
/// head is a start of that part. Only such servers are started for a call.
pub(crate) fn may_hold(server: &str, name: &str) -> bool {
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

/// Adds each `--arg KEY=VALUE` to `arguments`: VALUE as JSON when it parses, else as a string.
fn with_args(mut arguments: Map<String, Value>, args: &[String]) -> Result<Map<String, Value>, String> {
    for arg in args {
        let Some((key, value)) = arg.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            return Err(format!("--arg {arg:?}: expected KEY=VALUE"));
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        arguments.insert(key.to_owned(), value);
    }
    Ok(arguments)
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
    let hub = match start(&configured, &candidates, View::Spinner).await {
        Ok(hub) => hub,
        Err(outcome) => return outcome,
    };
    let outcome = call_in(&hub, name, arguments, json).await;
    close(&hub).await;
    outcome
}

/// Calls `name` through the Hub, with the server's progress shown, and prints the result.
async fn call_in(hub: &Hub, name: &str, arguments: Map<String, Value>, json: bool) -> Outcome {
    let (on_progress, display) = crate::progress::call_progress(name);
    let options = CallOptions {
        on_progress: Some(on_progress),
        ..CallOptions::default()
    };
    let called = hub.call_with(name, &arguments, &options).await;
    drop(display);
    match called {
        Ok(processed) => {
            print_call_result(&processed, json, hub.result_store());
            if processed.is_error {
                Outcome::ToolError
            } else {
                Outcome::Ok
            }
        }
        Err(HubError::UnknownTool { .. }) => {
            // A server that could not be used may hold it: its error says why.
            let states = hub.pool().states();
            let unusable = |status| states.iter().any(|(_, state)| state.status == status);
            report_unusable(hub);
            if unusable(ServerStatus::Failed) {
                Outcome::Connection
            } else if unusable(ServerStatus::NeedsAuth) {
                Outcome::NeedsAuth
            } else {
                crate::terminal::say(format_args!("no tool is named {name:?} (see `plexus tools`)"));
                Outcome::Usage
            }
        }
        Err(HubError::Call(error)) => {
            crate::terminal::say(format_args!("calling {name}: {}", error.reason()));
            if let CallError::UrlElicitation {
                source: UrlElicitationError::NoHandler { .. },
                ..
            } = &*error
            {
                crate::terminal::say("plexus sends you to such pages only when stdin is a terminal");
            }
            match *error {
                CallError::TaskRequired { .. } => Outcome::Usage,
                _ => Outcome::Connection,
            }
        }
        Err(other) => {
            crate::terminal::say(format_args!("{other}"));
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
    fn arg_flags_add_json_values_or_strings() {
        let args = ["n=3", "s=hello", "o={\"a\":[1]}", "e="].map(str::to_owned);
        let map = with_args(Map::new(), &args).unwrap();
        assert_eq!(
            Value::Object(map),
            serde_json::json!({"n": 3, "s": "hello", "o": {"a": [1]}, "e": ""})
        );
        assert_eq!(
            with_args(Map::new(), &["=1".to_owned()]).unwrap_err(),
            "--arg \"=1\": expected KEY=VALUE"
        );
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
