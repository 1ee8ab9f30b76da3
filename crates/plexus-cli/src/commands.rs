//! The subcommands that list servers and tools and call tools (`servers`, `tools`, `call`), the
//! choice of servers a command starts, and the dispatcher.

use std::io::Read;
use std::time::Duration;

use plexus::pool::{Pool, ServerStatus};
use plexus::tools::naming::PREFIX;
use plexus::tools::{CallError, CallOptions, ToolPool, UrlElicitationError};
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
#[allow(clippy::too_many_lines)] // the dispatcher: one arm per command.
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
        Command::Tools { server, search, ad_hoc } => {
            configured(&ad_hoc, &mut |c| tools(c, server.as_deref(), &search, json))
        }
        Command::Describe { name, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(crate::describe::describe_command(c, &name, json))
        }),
        Command::Call {
            name,
            arguments,
            args,
            ad_hoc,
        } => call(&name, &arguments, &args, &|job| configured(&ad_hoc, job), json),
        Command::Resources { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::resources_command(c, server.as_deref(), json))
        }),
        Command::Templates { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::templates_command(c, server.as_deref(), json))
        }),
        Command::Read { server, uri, ad_hoc } => match content::read_target(&server, uri.as_deref()) {
            Ok((server, uri)) => configured(&ad_hoc, &mut |c| block_on(content::read_command(c, server, uri, json))),
            Err(e) => crate::fail(e),
        },
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
        Command::Skills { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(crate::skills::skills_command(c, server.as_deref(), json))
        }),
        Command::Skill { server, uri, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(crate::skills::skill_command(c, &server, &uri, json))
        }),
        Command::Ping { server, ad_hoc } => configured(&ad_hoc, &mut |c| {
            block_on(content::ping_command(c, server.as_deref(), json))
        }),
        Command::Serve(args) => match crate::serve::ServeOptions::of(&args) {
            Ok(options) => configured(&args.ad_hoc, &mut |c| crate::serve::run(c, options.clone())),
            Err(e) => crate::fail(e),
        },
        Command::Lock { update, scope, ad_hoc } => configured(&ad_hoc, &mut |c| crate::lock::lock(c, &update, scope)),
        Command::Diff { server, ad_hoc } => configured(&ad_hoc, &mut |c| crate::lock::diff(c, server.as_deref(), json)),
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

/// Runs a job on the configured servers (or says why they could not be loaded).
type WithConfig<'a> = dyn Fn(&mut dyn FnMut(Configured) -> Outcome) -> Outcome + 'a;

/// `plexus tools`: the tools of every server or one (`server`); a tool in full when `server`
/// is a tool's qualified name; the best matches of `--search`.
fn tools(c: Configured, server: Option<&str>, search: &crate::search::SearchArgs, json: bool) -> Outcome {
    match (server, &search.search) {
        (only, Some(query)) => block_on(crate::search::search_command(c, only, query, search.limit.into(), json)),
        // A tool's qualified name rather than a server's: that tool in full.
        (Some(name), None) if c.server(name).is_none() && name.starts_with(PREFIX) => {
            block_on(crate::describe::describe_command(c, name, json))
        }
        (only, None) => block_on(tools_command(c, only, json)),
    }
}

/// `plexus call`: bad arguments are reported before anything is read or started (the `--arg`
/// values are typed by the tool's schema once its server has listed it); then `configured` runs
/// the call on the configured servers.
fn call(name: &str, arguments: &[String], args: &[String], configured: &WithConfig<'_>, json: bool) -> Outcome {
    let (map, args) = match parse_arguments(name, arguments)
        .and_then(|map| crate::arguments::split_args(args).map(|args| (map, args)))
    {
        Ok(given) => given,
        Err(e) => return crate::fail(e),
    };
    let mut map = Some(map);
    configured(&mut |c| block_on(call_command(c, name, map.take().unwrap_or_default(), &args, json)))
}

/// Prints the completion script of `shell` for the whole command line.
fn completions(shell: clap_complete::Shell) -> Outcome {
    use clap::CommandFactory;
    let mut command = Cli::command();
    // Written whole through the output's writer, which survives a closed pipe (clap_complete's own
    // writes panic on one).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "plexus", &mut script);
    crate::terminal::out!("{}", String::from_utf8_lossy(&script));
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
                crate::terminal::say(configured.unknown_server(name));
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
        crate::terminal::note(format_args!("{}", server.not_started()));
    }
    Ok(selected)
}

/// Prints why each server of `hub` that failed or needs a login could not be used.
pub(crate) fn report_unusable(hub: &Hub) {
    for (_, state) in hub.pool().states() {
        if matches!(state.status, ServerStatus::Failed | ServerStatus::NeedsAuth)
            && let Some(failure) = &state.error
        {
            match failure.error() {
                Some(error) => crate::terminal::say_error(&**error),
                None => crate::terminal::say(format_args!("{failure}")),
            }
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
    match with_tool_pool(configured, only, |_, pool| pool.entries.clone()).await {
        Ok((entries, outcome)) => {
            print_tools(&entries, json);
            outcome
        }
        Err(outcome) => outcome,
    }
}

/// The Hub of the servers `only` selects (every one when `None`; see [`select`]), started, with
/// the servers that failed or need a login reported; and how many were selected.
pub(crate) async fn start_selected(configured: &Configured, only: Option<&str>) -> Result<(Hub, usize), Outcome> {
    let selected = select(configured, only)?;
    let hub = start(configured, &selected, View::Spinner).await?;
    report_unusable(&hub);
    Ok((hub, selected.len()))
}

/// The tool pool of the `only` server (else of every server) as `plexus tools` gets it: the
/// servers started, what could not be listed, collisions and rejected tools said; `pick`
/// takes what the command prints from the Hub and its pool before the servers are closed.
/// With the command's outcome; the outcome alone when no server could be started.
pub(crate) async fn with_tool_pool<T>(
    configured: Configured,
    only: Option<&str>,
    pick: impl FnOnce(&Hub, &ToolPool) -> T,
) -> Result<(T, Outcome), Outcome> {
    let (hub, selected) = start_selected(&configured, only).await?;
    let (pool, failures) = hub.tool_pool_report().await;
    for failure in &failures {
        crate::terminal::say_error(failure);
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
    // Tools left out by their server's session: over HTTP in the stateless era, a tool whose
    // `x-mcp-header` annotations are invalid cannot be called as the revision requires.
    for server in hub.pool().names() {
        for rejected in hub
            .pool()
            .client(&server)
            .map(|client| client.rejected_tools())
            .unwrap_or_default()
        {
            crate::terminal::say(format_args!("server {server:?}: {rejected}"));
        }
    }
    crate::lock::report_held(&hub, &pool).await;
    let outcome = partial_outcome(selected, hub.pool(), !failures.is_empty());
    let picked = pick(&hub, &pool);
    close(&hub).await;
    Ok((picked, outcome))
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

/// Reads the arguments of `call NAME`: none → `{}`, `-` → stdin, else the text; it must be one
/// JSON object. `KEY=VALUE` words get a hint to use `--arg`.
fn parse_arguments(name: &str, given: &[String]) -> Result<Map<String, Value>, String> {
    let looks_like_pairs = !given.is_empty()
        && given.iter().all(|word| {
            word.split_once('=')
                .is_some_and(|(key, _)| !key.is_empty() && !key.contains(['{', '[', '"', ' ']))
        });
    if looks_like_pairs {
        let args: Vec<String> = given.iter().map(|word| format!("-a {word}")).collect();
        return Err(format!(
            "the arguments are one JSON object; give them one by one with --arg (-a): plexus call {name} {}",
            args.join(" ")
        ));
    }
    let text = match given {
        [] => return Ok(Map::new()),
        [one] if one == "-" => read_stdin().map_err(|e| format!("cannot read the arguments: {e}"))?,
        [one] => one.clone(),
        _ => {
            return Err(format!(
                "the arguments are one JSON object (quote it), not {} words",
                given.len()
            ));
        }
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

/// The servers a command about the tool or prompt `name` (`what`) starts: those whose part the
/// name has ([`may_belong_to`](plexus::tools::naming::may_belong_to)), or, when none has it, every one that may run, so that the nearest
/// names can be suggested. Says why a candidate is not started; fails (exit 2) when none may run.
fn named_candidates<'a>(configured: &'a Configured, name: &str, what: &str) -> Result<Vec<&'a Server>, Outcome> {
    let holding: Vec<&Server> = configured
        .servers
        .iter()
        .filter(|server| plexus::tools::naming::may_belong_to(&server.name, name))
        .collect();
    if holding.is_empty() {
        let runnable: Vec<&Server> = configured
            .servers
            .iter()
            .filter(|server| server.runnable().is_some())
            .collect();
        if runnable.is_empty() {
            crate::terminal::say(format_args!(
                "{name:?} names no {what} of a configured server ({what} names look like mcp__<server>__<{what}>; \
                 servers: {})",
                configured.names()
            ));
            return Err(Outcome::Usage);
        }
        return Ok(runnable);
    }
    for server in &holding {
        server.report_diagnostics();
        if server.runnable().is_none() {
            crate::terminal::say(format_args!("{}", server.not_started()));
        }
    }
    if !holding.iter().any(|server| server.runnable().is_some()) {
        return Err(Outcome::Usage);
    }
    Ok(holding)
}

/// Starts a Hub over the servers that may hold the tool or prompt `name` (`what`): see
/// [`named_candidates`].
pub(crate) async fn start_for(configured: &Configured, name: &str, what: &str) -> Result<Hub, Outcome> {
    let candidates = named_candidates(configured, name, what)?;
    start(configured, &candidates, View::Spinner).await
}

/// How a command about the tool `name`, which `pool` does not have, ends: a server that could
/// not be used may hold it (its error says why: exit 3, or 4 for a login); else the nearest names
/// are suggested (exit 2).
pub(crate) fn unknown_tool(hub: &Hub, name: &str, pool: &ToolPool) -> Outcome {
    let states = hub.pool().states();
    let unusable = |status| states.iter().any(|(_, state)| state.status == status);
    report_unusable(hub);
    if unusable(ServerStatus::Failed) {
        Outcome::Connection
    } else if unusable(ServerStatus::NeedsAuth) {
        Outcome::NeedsAuth
    } else {
        let names = pool.entries.iter().map(|entry| entry.name.as_str());
        crate::terminal::say(format_args!(
            "no tool is named {name:?}{} (see `plexus tools`)",
            crate::suggest::did_you_mean(name, names)
        ));
        Outcome::Usage
    }
}

async fn call_command(
    configured: Configured,
    name: &str,
    arguments: Map<String, Value>,
    args: &[(String, String)],
    json: bool,
) -> Outcome {
    let hub = match start_for(&configured, name, "tool").await {
        Ok(hub) => hub,
        Err(outcome) => return outcome,
    };
    let outcome = call_in(&hub, name, arguments, args, json).await;
    close(&hub).await;
    outcome
}

/// Calls `name` through the Hub, with the server's progress shown, and prints the result.
async fn call_in(
    hub: &Hub,
    name: &str,
    mut arguments: Map<String, Value>,
    args: &[(String, String)],
    json: bool,
) -> Outcome {
    let pool = hub.tool_pool().await;
    let Some(entry) = pool.entries.iter().find(|entry| entry.name == name) else {
        return crate::lock::refuse_held(hub, &pool, name).unwrap_or_else(|| unknown_tool(hub, name, &pool));
    };
    // Nothing is sent with an argument that does not fit the tool's schema.
    if let Err(e) = crate::arguments::add_typed(&mut arguments, args, &entry.input_schema) {
        crate::terminal::say(format_args!("{e} (see `plexus describe {name}`)"));
        return Outcome::Usage;
    }
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
        Err(HubError::UnknownTool { .. }) => unknown_tool(hub, name, &pool),
        Err(HubError::Call(error)) => {
            match std::error::Error::source(&*error) {
                Some(cause) => crate::terminal::say_failure(format_args!("calling {name}"), cause),
                None => crate::terminal::say_error(&*error),
            }
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
            crate::terminal::say_error(&other);
            Outcome::Connection
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_one_object() {
        let words = |words: &[&str]| words.iter().map(|word| (*word).to_owned()).collect::<Vec<_>>();
        assert_eq!(parse_arguments("t", &[]).unwrap(), Map::new());
        assert_eq!(parse_arguments("t", &words(&[r#"{"a":1}"#])).unwrap()["a"], 1);
        assert_eq!(
            parse_arguments("t", &words(&["[1]"])).unwrap_err(),
            "the arguments must be a JSON object, not an array"
        );
        assert!(
            parse_arguments("t", &words(&["{"]))
                .unwrap_err()
                .starts_with("the arguments are not valid JSON: EOF while parsing an object")
        );
        assert_eq!(
            parse_arguments("mcp__demo__add", &words(&["a=2", "b=3"])).unwrap_err(),
            "the arguments are one JSON object; give them one by one with --arg (-a): plexus call mcp__demo__add -a a=2 -a b=3"
        );
        assert_eq!(
            parse_arguments("t", &words(&["{}", "{}"])).unwrap_err(),
            "the arguments are one JSON object (quote it), not 2 words"
        );
    }
}
