//! The subcommands for what servers offer besides tools: `resources`, `templates`, `read`,
//! `prompts`, `prompt`, and `ping`.

use std::collections::BTreeMap;

use base64::Engine as _;
use plexus::protocol::{ContentBlock, PromptMessage, ResourceContents};
use plexus::tools::save_binary;
use plexus::{Hub, HubError, Listed, PromptEntry, ResourceEntry, TemplateEntry};
use serde_json::{Value, json};

use crate::commands::{partial_outcome, report_unusable, select};
use crate::connect::{close, start};
use crate::output::print_json;
use crate::progress::View;
use crate::sources::Configured;
use crate::table::{self, Column};
use crate::terminal::outln;
use crate::{Outcome, terminal};

/// Starts the servers a listing needs (every one, or `only`), or says why not.
pub(crate) async fn started(configured: &Configured, only: Option<&str>) -> Result<(Hub, usize), Outcome> {
    let selected = select(configured, only)?;
    let hub = start(configured, &selected, View::Spinner).await?;
    report_unusable(&hub);
    Ok((hub, selected.len()))
}

/// How one kind of listing is shown.
pub(crate) struct Shown<T> {
    /// Said when there is nothing.
    pub(crate) nothing: &'static str,
    /// The table's columns.
    pub(crate) columns: &'static [Column],
    /// An entry's row of the table.
    pub(crate) row: fn(&T) -> Vec<String>,
    /// An entry's `--json` object.
    pub(crate) json: fn(&T) -> Value,
}

/// Ends a listing: says why a server's list could not be had, closes the servers, prints the
/// entries (a table, or `--json`), and says how the command ended.
pub(crate) async fn finish_listing<T, E: std::error::Error>(
    hub: Hub,
    count: usize,
    listed: Listed<T, E>,
    shown: &Shown<T>,
    json: bool,
) -> Outcome {
    for failure in &listed.failures {
        terminal::say_error(failure);
    }
    let outcome = partial_outcome(count, hub.pool(), !listed.failures.is_empty());
    close(&hub).await;
    if json {
        let rows: Vec<Value> = listed.entries.iter().map(shown.json).collect();
        print_json(&rows);
    } else if listed.entries.is_empty() {
        outln!("{}", shown.nothing);
    } else {
        let rows: Vec<Vec<String>> = listed.entries.iter().map(shown.row).collect();
        table::print_fitted(shown.columns, &rows, Vec::new());
    }
    outcome
}

pub(crate) const fn column(header: &'static str, flexible: bool) -> Column {
    Column { header, flexible }
}

/// `value` (an object) with `extra` members added.
fn with_members(value: impl serde::Serialize, extra: &[(&str, &str)]) -> Value {
    let mut value = serde_json::to_value(value).unwrap_or_default();
    for (key, member) in extra {
        value[*key] = json!(member);
    }
    value
}

const RESOURCES: Shown<ResourceEntry> = Shown {
    nothing: "no resources",
    columns: &[
        column("REFERENCE", true),
        column("NAME", true),
        column("TYPE", false),
        column("DESCRIPTION", true),
    ],
    row: |entry| {
        let resource = &entry.resource;
        vec![
            entry.reference.clone(),
            resource.title.clone().unwrap_or_else(|| resource.name.clone()),
            resource.mime_type.clone().unwrap_or_default(),
            resource.description.clone().unwrap_or_default(),
        ]
    },
    json: |entry| {
        with_members(
            &entry.resource,
            &[("server", &entry.server), ("reference", &entry.reference)],
        )
    },
};

const TEMPLATES: Shown<TemplateEntry> = Shown {
    nothing: "no resource templates",
    columns: &[
        column("SERVER", false),
        column("URI TEMPLATE", true),
        column("NAME", true),
        column("DESCRIPTION", true),
    ],
    row: |entry| {
        let template = &entry.template;
        vec![
            entry.server.clone(),
            template.uri_template.clone(),
            template.title.clone().unwrap_or_else(|| template.name.clone()),
            template.description.clone().unwrap_or_default(),
        ]
    },
    json: |entry| with_members(&entry.template, &[("server", &entry.server)]),
};

const PROMPTS: Shown<PromptEntry> = Shown {
    nothing: "no prompts",
    columns: &[
        column("NAME", false),
        column("ARGUMENTS (* required)", true),
        column("DESCRIPTION", true),
    ],
    row: |entry| {
        let prompt = &entry.prompt;
        let arguments: Vec<String> = prompt
            .arguments
            .iter()
            .flatten()
            .map(|argument| {
                if argument.required == Some(true) {
                    format!("{}*", argument.name)
                } else {
                    argument.name.clone()
                }
            })
            .collect();
        vec![
            entry.name.clone(),
            arguments.join(" "),
            prompt.description.clone().unwrap_or_default(),
        ]
    },
    // `name` is the qualified name; `prompt` the server's own.
    json: |entry| {
        with_members(
            &entry.prompt,
            &[
                ("prompt", &entry.prompt.name),
                ("name", &entry.name),
                ("server", &entry.server),
            ],
        )
    },
};

/// `plexus resources [SERVER]`.
pub(crate) async fn resources_command(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    match started(&configured, only).await {
        Ok((hub, count)) => {
            let listed = hub.resources().await;
            finish_listing(hub, count, listed, &RESOURCES, json).await
        }
        Err(outcome) => outcome,
    }
}

/// `plexus templates [SERVER]`.
pub(crate) async fn templates_command(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    match started(&configured, only).await {
        Ok((hub, count)) => {
            let listed = hub.resource_templates().await;
            finish_listing(hub, count, listed, &TEMPLATES, json).await
        }
        Err(outcome) => outcome,
    }
}

/// `plexus prompts [SERVER]`.
pub(crate) async fn prompts_command(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    match started(&configured, only).await {
        Ok((hub, count)) => {
            let listed = hub.prompts().await;
            finish_listing(hub, count, listed, &PROMPTS, json).await
        }
        Err(outcome) => outcome,
    }
}

/// The server and URI of `plexus read SERVER URI` or `plexus read @SERVER:URI`.
pub(crate) fn read_target<'a>(first: &'a str, uri: Option<&'a str>) -> Result<(&'a str, &'a str), String> {
    match (first.starts_with('@'), uri) {
        (false, Some(uri)) => Ok((first, uri)),
        (true, None) => plexus::parse_reference(first).ok_or_else(|| {
            format!("{first:?} is not a resource reference (@server:uri, as `plexus resources` shows it)")
        }),
        (true, Some(_)) => Err(format!(
            "give the resource as SERVER URI or as one @server:uri reference, not {first:?} and a URI"
        )),
        (false, None) => Err(format!(
            "read needs the resource's URI: plexus read {first} URI (or plexus read @{first}:URI)"
        )),
    }
}

/// `plexus read SERVER URI`: text printed, binary content written to a file whose path is
/// printed. A URI the server does not know gets the nearest of its listed ones.
pub(crate) async fn read_command(configured: Configured, server: &str, uri: &str, json: bool) -> Outcome {
    let (hub, _) = match started(&configured, Some(server)).await {
        Ok(started) => started,
        Err(outcome) => return outcome,
    };
    let read = hub.read_resource(&format!("@{server}:{uri}")).await;
    let outcome = match read {
        Ok(result) => print_contents(&hub, &result.contents, json),
        Err(e @ HubError::Server { .. }) => {
            let listed = hub.resources().await;
            let uris = listed
                .entries
                .iter()
                .filter(|entry| entry.server == server)
                .map(|entry| entry.resource.uri.as_str());
            terminal::say(format_args!(
                "{}{}",
                terminal::chain(&e),
                crate::suggest::did_you_mean(uri, uris)
            ));
            Outcome::Connection
        }
        Err(e) => failed(&e),
    };
    close(&hub).await;
    outcome
}

/// Prints each content of a read resource; a blob goes to a file.
fn print_contents(hub: &Hub, contents: &[ResourceContents], json: bool) -> Outcome {
    let mut shown = Vec::with_capacity(contents.len());
    let mut outcome = Outcome::Ok;
    for content in contents {
        match content {
            ResourceContents::Text(text) => {
                if !json {
                    terminal::print_block(&text.text);
                }
                shown.push(json!({"uri": text.uri, "mimeType": text.mime_type, "text": text.text}));
            }
            ResourceContents::Blob(blob) => {
                let mime = blob.mime_type.as_deref().unwrap_or("application/octet-stream");
                let saved = base64::engine::general_purpose::STANDARD
                    .decode(blob.blob.trim())
                    .map_err(|e| format!("its base64 does not decode: {e}"))
                    .and_then(|bytes| save_binary(hub.result_store(), mime, &bytes).map_err(|e| terminal::chain(&e)));
                match saved {
                    Ok(file) => {
                        if !json {
                            outln!(
                                "[{} {mime}, {} bytes, saved to {}]",
                                terminal::line(&blob.uri),
                                file.bytes,
                                file.path.display()
                            );
                        }
                        shown.push(json!({"uri": blob.uri, "mimeType": mime, "file": file.path, "bytes": file.bytes}));
                    }
                    Err(why) => {
                        terminal::say(format_args!("{}: not saved: {why}", blob.uri));
                        outcome = Outcome::Connection;
                    }
                }
            }
        }
    }
    if json {
        print_json(&json!({"contents": shown}));
    }
    outcome
}

/// The `ARG=VALUE` words of `plexus prompt`.
pub(crate) fn prompt_arguments(words: &[String]) -> Result<BTreeMap<String, String>, String> {
    words
        .iter()
        .map(|word| match word.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
            _ => Err(format!("prompt argument {word:?}: expected ARG=VALUE")),
        })
        .collect()
}

/// `plexus prompt NAME [ARG=VALUE...]`: the prompt's messages, one block per message.
pub(crate) async fn prompt_command(
    configured: Configured,
    name: &str,
    arguments: BTreeMap<String, String>,
    json: bool,
) -> Outcome {
    // Prompts are named like tools: only the servers whose part the name has are started.
    let hub = match crate::commands::start_for(&configured, name, "prompt").await {
        Ok(hub) => hub,
        Err(outcome) => return outcome,
    };
    let outcome = match hub.get_prompt(name, arguments).await {
        Ok(result) if json => {
            print_json(&result);
            Outcome::Ok
        }
        Ok(result) => {
            if let Some(description) = &result.description {
                terminal::print_block(description);
                outln!();
            }
            for message in &result.messages {
                print_message(message);
            }
            Outcome::Ok
        }
        Err(HubError::UnknownPrompt { .. }) => {
            report_unusable(&hub);
            let listed = hub.prompts().await;
            let names = listed.entries.iter().map(|entry| entry.name.as_str());
            terminal::say(format_args!(
                "no prompt is named {name:?}{} (see `plexus prompts`)",
                crate::suggest::did_you_mean(name, names)
            ));
            Outcome::Usage
        }
        Err(e) => failed(&e),
    };
    close(&hub).await;
    outcome
}

/// `user: text`, other content summarised.
fn print_message(message: &PromptMessage) {
    let role = serde_json::to_value(message.role)
        .ok()
        .and_then(|role| role.as_str().map(str::to_owned))
        .unwrap_or_default();
    let body = match &message.content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
        ContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        ContentBlock::Resource(embedded) => format!("[resource {}]", embedded.resource.uri()),
        ContentBlock::Unknown(_) => "[content of an unknown type]".to_owned(),
    };
    terminal::print_block(&format!("{role}: {body}"));
}

/// `plexus ping [SERVER]`: each started server's answer time.
pub(crate) async fn ping_command(configured: Configured, only: Option<&str>, json: bool) -> Outcome {
    let (hub, count) = match started(&configured, only).await {
        Ok(started) => started,
        Err(outcome) => return outcome,
    };
    let mut rows = Vec::new();
    let mut failed_any = false;
    for (name, state) in hub.pool().states() {
        if state.status != plexus::pool::ServerStatus::Connected {
            continue;
        }
        match hub.ping(&name).await {
            Ok(took) => rows.push((name, Ok(took))),
            Err(e) => {
                failed_any = true;
                rows.push((name, Err(terminal::chain(&e))));
            }
        }
    }
    let outcome = partial_outcome(count, hub.pool(), failed_any);
    close(&hub).await;
    if json {
        let shown: Vec<Value> = rows
            .iter()
            .map(|(server, answer)| match answer {
                Ok(took) => json!({"server": server, "ms": took.as_secs_f64() * 1000.0}),
                Err(error) => json!({"server": server, "error": error}),
            })
            .collect();
        print_json(&shown);
    } else {
        for (server, answer) in rows {
            match answer {
                Ok(took) => outln!("{server}: {:.1} ms", took.as_secs_f64() * 1000.0),
                Err(error) => terminal::print_block(&format!("{server}: {error}")),
            }
        }
    }
    outcome
}

/// Says why a request failed, and the exit status for it.
fn failed(error: &HubError) -> Outcome {
    terminal::say_error(error);
    match error {
        HubError::BadReference { .. } | HubError::UnknownPrompt { .. } => Outcome::Usage,
        _ => Outcome::Connection,
    }
}
