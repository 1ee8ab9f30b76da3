//! The subcommands.

use std::io::Read;

use plexus::protocol::CallToolResult;
use plexus::tools::{ToolEntry, normalize_name};
use serde_json::{Map, Value};

use crate::connect::{Attempt, Connection, close_all, connect_all};
use crate::output::{ServerRow, print_call_result, print_servers, print_tools};
use crate::sources::{self, Servers};
use crate::{Cli, Command, Outcome};

/// Runs one command and says how it ended.
pub(crate) async fn run(cli: Cli) -> Outcome {
    let servers = match sources::load(&cli.config) {
        Ok(servers) => servers,
        Err(e) => {
            eprintln!("plexus: {}", e.0);
            return Outcome::Usage;
        }
    };
    for diagnostic in &servers.diagnostics {
        eprintln!("plexus: {diagnostic}");
    }
    if servers.demo {
        tracing::info!("no config file found: using the built-in demo server");
    }
    match cli.command {
        Command::Servers => servers_command(&servers, cli.json).await,
        Command::Tools { server } => tools_command(&servers, server.as_deref(), cli.json).await,
        Command::Call { name, arguments } => call_command(&servers, &name, arguments.as_deref(), cli.json).await,
        Command::DemoServer(_) => unreachable!("the demo server runs before the runtime starts"),
    }
}

async fn servers_command(servers: &Servers, json: bool) -> Outcome {
    let attempts = connect_all(&servers.servers).await;
    let mut rows = Vec::with_capacity(attempts.len());
    for attempt in &attempts {
        rows.push(ServerRow::from_attempt(attempt).await);
    }
    close_all(&attempts).await;
    print_servers(&rows, json);
    Outcome::Ok
}

async fn tools_command(servers: &Servers, only: Option<&str>, json: bool) -> Outcome {
    let selected = match only {
        None => servers.servers.clone(),
        Some(name) => match servers.servers.get(name) {
            Some(config) => [(name.to_owned(), config.clone())].into(),
            None => {
                eprintln!(
                    "plexus: no server named {name:?} is configured (configured: {})",
                    configured_names(servers)
                );
                return Outcome::Usage;
            }
        },
    };
    let attempts = connect_all(&selected).await;
    let mut entries = Vec::new();
    let mut outcome = Outcome::Ok;
    for attempt in &attempts {
        match &attempt.connection {
            Connection::Connected(client) => match client.list_tools().await {
                Ok(tools) => entries.extend(tools.iter().map(|tool| ToolEntry::new(&attempt.name, tool))),
                Err(e) => {
                    eprintln!("plexus: server {:?}: listing tools failed: {e}", attempt.name);
                    outcome = outcome.max(Outcome::Connection);
                }
            },
            Connection::Failed(e) => {
                eprintln!("plexus: {e}");
                outcome = outcome.max(Outcome::Connection);
            }
            Connection::Disabled => {}
        }
    }
    close_all(&attempts).await;
    print_tools(&entries, json);
    outcome
}

fn configured_names(servers: &Servers) -> String {
    if servers.servers.is_empty() {
        return "none".to_owned();
    }
    servers
        .servers
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads the arguments: none → `{}`, `-` → stdin, else the text; it must be a JSON object.
fn parse_arguments(arguments: Option<&str>) -> Result<Map<String, Value>, String> {
    let text = match arguments {
        None => return Ok(Map::new()),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .take(16 * 1024 * 1024)
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the arguments from stdin: {e}"))?;
            text
        }
        Some(text) => text.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, not {}",
            json_kind(&other)
        )),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

async fn call_command(servers: &Servers, name: &str, arguments: Option<&str>, json: bool) -> Outcome {
    let arguments = match parse_arguments(arguments) {
        Ok(arguments) => arguments,
        Err(e) => {
            eprintln!("plexus: {e}");
            return Outcome::Usage;
        }
    };
    // Only the servers whose prefix matches can hold the tool.
    let candidates: std::collections::BTreeMap<_, _> = servers
        .servers
        .iter()
        .filter(|(server, _)| name.starts_with(&format!("mcp__{}__", normalize_name(server))))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if candidates.is_empty() {
        eprintln!(
            "plexus: {name:?} names no tool of a configured server (tool names look like mcp__<server>__<tool>; servers: {})",
            configured_names(servers)
        );
        return Outcome::Usage;
    }
    let attempts = connect_all(&candidates).await;
    let outcome = call_in(&attempts, name, arguments, json).await;
    close_all(&attempts).await;
    outcome
}

async fn call_in(attempts: &[Attempt], name: &str, arguments: Map<String, Value>, json: bool) -> Outcome {
    let mut outcome = Outcome::Usage;
    for attempt in attempts {
        let client = match &attempt.connection {
            Connection::Connected(client) => client,
            Connection::Failed(e) => {
                eprintln!("plexus: {e}");
                outcome = Outcome::Connection;
                continue;
            }
            Connection::Disabled => {
                eprintln!("plexus: server {:?} is disabled in its configuration", attempt.name);
                continue;
            }
        };
        let tools = match client.list_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                eprintln!("plexus: server {:?}: listing tools failed: {e}", attempt.name);
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
                eprintln!("plexus: calling {name}: {e}");
                Outcome::Connection
            }
        };
    }
    if outcome == Outcome::Usage {
        eprintln!("plexus: no tool is named {name:?} (see `plexus tools`)");
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
