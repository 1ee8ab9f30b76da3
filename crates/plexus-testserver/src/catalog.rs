//! What the server offers: tool definitions, resources, resource templates, prompts and the
//! completion candidates, as the JSON that the list methods return.

use serde_json::{Value, json};

use crate::faults::MAX_FAULT_BYTES;
use crate::tools::{
    MAX_DRIP_CHUNK, MAX_DRIP_DELAY_MS, MAX_ELICIT_ROUNDS, MAX_SLOW_MS, MAX_SLOW_STEPS, MAX_URL_ELICIT_ROUNDS,
};

/// A 1×1 RGBA PNG, base64-encoded (the `image` tool's content).
pub(crate) const TINY_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The text resource `test://static/hello.txt`.
pub(crate) const HELLO_URI: &str = "test://static/hello.txt";
const HELLO_TEXT: &str = "Hello from plexus-testserver!\n";
/// The binary resource `test://static/data.bin`: the bytes 0 to 15.
const DATA_URI: &str = "test://static/data.bin";
const DATA_BASE64: &str = "AAECAwQFBgcICQoLDA0ODw==";
const README_URI: &str = "test://static/readme.md";
const README_TEXT: &str =
    "# plexus-testserver\n\nA real MCP server with switchable faults, for tests, benchmarks and demos.\n";
const ITEM_PREFIX: &str = "test://items/";
const ECHO_PREFIX: &str = "test://echo/";

/// Completion candidates of the `id` argument of `test://items/{id}`.
const ITEM_IDS: &[&str] = &["1", "2", "3", "10", "42"];
const LANGUAGES: &[&str] = &["go", "python", "rust", "typescript"];
const STYLES: &[&str] = &["concise", "thorough"];

/// The server's `instructions` in the initialize result.
pub(crate) const INSTRUCTIONS: &str = "plexus-testserver is a test MCP server. Call `echo` to get your text back, `add` to add two numbers, \
`slow` for progress notifications, `elicit`, `sample` and `roots` for requests to the client, `url-elicit` for \
URL elicitation required (-32042), and the fault tools \
(`crash`, `hang`, `garbage`, `oversize`, `drip`, `stderr`) to see how a client copes.";

/// The name of generated tool `n` (1-based) out of `count`: `tool-0001`, zero-padded to at least 4
/// digits.
pub(crate) fn generated_tool_name(n: usize, count: usize) -> String {
    let width = count.to_string().len().max(4);
    format!("tool-{n:0width$}")
}

/// Whether `name` is one of the `count` generated tools.
pub(crate) fn is_generated_tool(name: &str, count: usize) -> bool {
    name.strip_prefix("tool-")
        .and_then(|digits| digits.parse::<usize>().ok())
        .is_some_and(|n| (1..=count).contains(&n) && generated_tool_name(n, count) == name)
}

fn schema(properties: &Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn tool(name: &str, title: &str, description: &str, input_schema: Value, annotations: &Value) -> Value {
    let mut annotations = annotations.clone();
    annotations["title"] = json!(title);
    let mut tool = json!({"name": name, "title": title, "description": description, "annotations": annotations});
    tool["inputSchema"] = input_schema;
    tool
}

fn read_only() -> Value {
    json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
}

fn side_effects() -> Value {
    json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false})
}

fn asks_client() -> Value {
    json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
}

fn bytes_property(what: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": MAX_FAULT_BYTES, "description": what})
}

/// The built-in tools, in list order.
pub(crate) fn builtin_tools() -> Vec<Value> {
    let mut tools = basic_tools();
    tools.extend(client_tools());
    tools.extend(fault_tools());
    tools
}

fn no_arguments() -> Value {
    schema(&json!({}), &[])
}

/// The tools that answer by themselves.
fn basic_tools() -> Vec<Value> {
    let mut add = tool(
        "add",
        "Add",
        "Adds two numbers; the sum comes as text and as structured content.",
        schema(&json!({"a": {"type": "number"}, "b": {"type": "number"}}), &["a", "b"]),
        &read_only(),
    );
    add["outputSchema"] = schema(&json!({"sum": {"type": "number"}}), &["sum"]);
    vec![
        tool(
            "echo",
            "Echo",
            "Returns `text` unchanged as one text content.",
            schema(&json!({"text": {"type": "string"}}), &["text"]),
            &read_only(),
        ),
        add,
        tool(
            "large",
            "Large output",
            "Returns one text content of exactly `bytes` bytes.",
            schema(&json!({"bytes": bytes_property("the length of the text")}), &["bytes"]),
            &read_only(),
        ),
        tool(
            "image",
            "Image",
            "Returns a tiny PNG image and a text.",
            no_arguments(),
            &read_only(),
        ),
        tool(
            "slow",
            "Slow",
            "Waits `ms` milliseconds; with a progress token, sends `steps` progress notifications along the way.",
            schema(
                &json!({"ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLOW_MS}, "steps": {"type": "integer", "minimum": 0, "maximum": MAX_SLOW_STEPS, "default": 5}}),
                &["ms"],
            ),
            &read_only(),
        ),
        tool(
            "trigger-list-changed",
            "Trigger tools/list_changed",
            "Adds a new tool and sends notifications/tools/list_changed; with `list` `prompts` or `resources`, sends notifications/prompts/list_changed or notifications/resources/list_changed instead (those lists stay as they are). In the stateless era the notification goes to the subscriptions that listen for it.",
            schema(
                &json!({"list": {"type": "string", "enum": ["tools", "prompts", "resources"], "default": "tools"}}),
                &[],
            ),
            &side_effects(),
        ),
        tool(
            "update-resource",
            "Update a resource",
            "Sends notifications/resources/updated for `uri` if the client subscribed to it (in the stateless era, to the subscriptions that listen to it).",
            schema(&json!({"uri": {"type": "string"}}), &["uri"]),
            &side_effects(),
        ),
    ]
}

/// The tools that talk to the client (or fail on purpose).
fn client_tools() -> Vec<Value> {
    let log_levels = json!([
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency"
    ]);
    vec![
        tool(
            "elicit",
            "Elicit",
            "Asks the client for input (elicitation/create, form mode), after waiting `ms` milliseconds, and returns its answer as JSON. In the stateless era it asks `rounds` times (input_required, then again on each retry) before it answers.",
            schema(
                &json!({"message": {"type": "string"}, "ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLOW_MS, "default": 0}, "rounds": {"type": "integer", "minimum": 1, "maximum": MAX_ELICIT_ROUNDS, "default": 1}}),
                &["message"],
            ),
            &asks_client(),
        ),
        tool(
            "sample",
            "Sample",
            "Asks the client's model (sampling/createMessage, progress token `sample-progress`) and returns the answer's text.",
            schema(
                &json!({"prompt": {"type": "string"}, "maxTokens": {"type": "integer", "minimum": 1, "default": 100}}),
                &["prompt"],
            ),
            &asks_client(),
        ),
        tool(
            "roots",
            "Roots",
            "Asks the client for its roots (roots/list) and returns them as JSON.",
            no_arguments(),
            &asks_client(),
        ),
        tool(
            "url-elicit",
            "URL elicitation",
            "Answers -32042 (URL elicitation required) `rounds` times in a row, each time with one URL-mode \
             elicitation (at `url`, as given, else https://auth.example.test/step/N) and then, unless `notify` is \
             false, notifications/elicitation/complete for it; the next call succeeds.",
            schema(
                &json!({"rounds": {"type": "integer", "minimum": 0, "maximum": MAX_URL_ELICIT_ROUNDS, "default": 1}, "notify": {"type": "boolean", "default": true}, "url": {"type": "string"}}),
                &[],
            ),
            &asks_client(),
        ),
        tool(
            "log",
            "Log",
            "Sends a notifications/message at `level` (unless logging/setLevel set a higher one).",
            schema(
                &json!({"level": {"type": "string", "enum": log_levels}, "message": {"type": "string"}, "logger": {"type": "string"}}),
                &["level", "message"],
            ),
            &side_effects(),
        ),
        tool(
            "error",
            "Tool error",
            "Returns a result with isError: true.",
            no_arguments(),
            &read_only(),
        ),
        tool(
            "fail",
            "Protocol error",
            "Answers with a JSON-RPC error response.",
            no_arguments(),
            &read_only(),
        ),
    ]
}

/// The fault tools.
fn fault_tools() -> Vec<Value> {
    vec![
        tool(
            "crash",
            "Crash",
            "Fault: writes to stderr and exits the process with `code` without answering.",
            schema(
                &json!({"code": {"type": "integer", "minimum": 0, "maximum": 255, "default": 1}}),
                &[],
            ),
            &json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}),
        ),
        tool(
            "hang",
            "Hang",
            "Fault: never answers (until cancelled).",
            no_arguments(),
            &read_only(),
        ),
        tool(
            "garbage",
            "Garbage",
            "Fault: writes a line that is not a JSON-RPC message (`line`, else a fixed one that is not JSON), then answers.",
            schema(
                &json!({"line": {"type": "string", "description": "the line to write, without a newline"}}),
                &[],
            ),
            &read_only(),
        ),
        tool(
            "oversize",
            "Oversize",
            "Fault: writes one valid JSON line (a log notification) of exactly `bytes` bytes, then answers.",
            schema(
                &json!({"bytes": bytes_property("the line's length without its newline")}),
                &["bytes"],
            ),
            &read_only(),
        ),
        tool(
            "drip",
            "Drip",
            "Fault: writes the response line in chunks of `chunk` bytes, `delay_ms` apart.",
            schema(
                &json!({"delay_ms": {"type": "integer", "minimum": 0, "maximum": MAX_DRIP_DELAY_MS}, "chunk": {"type": "integer", "minimum": 1, "maximum": MAX_DRIP_CHUNK, "default": 8}}),
                &["delay_ms"],
            ),
            &read_only(),
        ),
        tool(
            "stderr",
            "Stderr",
            "Fault: writes `bytes` bytes of lines to stderr, then answers.",
            schema(&json!({"bytes": bytes_property("how much to write")}), &["bytes"]),
            &read_only(),
        ),
    ]
}

/// Generated tool `n` of `count` (see `--tools`).
pub(crate) fn generated_tool(n: usize, count: usize) -> Value {
    let name = generated_tool_name(n, count);
    json!({
        "name": name,
        "description": format!("Generated tool {n} of {count} (for pagination tests); returns its arguments as JSON."),
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": read_only(),
    })
}

/// The tool named `name` that `trigger-list-changed` adds.
/// Terminal escape sequences a hostile server puts in its text: an OSC that sets the window
/// title (ended by BEL), a clear screen, and an 8-bit CSI.
pub(crate) const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";

/// The tool of `--hostile-text`: escape sequences in its title and description; calling it
/// (`mode`: `result`, `error` or `crash`) answers, fails or dies with more of them.
pub(crate) fn hostile_tool() -> Value {
    tool(
        "hostile",
        &format!("Hostile{HOSTILE}"),
        &format!("Fault: text with escape sequences{HOSTILE} in every field.\nSecond line{HOSTILE}"),
        schema(
            &json!({"mode": {"type": "string", "enum": ["result", "error", "crash"], "default": "result"}}),
            &[],
        ),
        &read_only(),
    )
}

/// The tool of `--task-required-tool`: it must be called as a task.
pub(crate) fn task_required_tool() -> Value {
    let mut tool = tool(
        "task-required",
        "Task required",
        "Must be called as a task (execution.taskSupport is required); this server runs no tasks, so every call \
         is answered with -32601.",
        no_arguments(),
        &read_only(),
    );
    tool["execution"] = json!({"taskSupport": "required"});
    tool
}

/// The tool of `--misbehave-tool`: each call commits one protocol fault `count` times around
/// its answer (see [`crate::misbehave::Act`]).
pub(crate) fn misbehave_tool() -> Value {
    tool(
        "misbehave",
        "Misbehave",
        "Fault: before answering, sends `count` messages of one kind a client must survive: `list-changed` \
         (a storm of tools/list_changed), `progress` (a flood of progress for this call), `unknown-id` (responses \
         to requests never made), `duplicate-request` (server requests that reuse one id), `bad-notification` \
         (notifications whose params have the wrong shape).",
        schema(
            &json!({
                "act": {"type": "string", "enum": ["list-changed", "progress", "unknown-id", "duplicate-request", "bad-notification"]},
                "count": {"type": "integer", "minimum": 1, "maximum": crate::misbehave::MAX_COUNT, "default": 100},
            }),
            &["act"],
        ),
        &read_only(),
    )
}

/// The tool of `--nested-schema-depth N`: `nested`, whose input schema nests `depth` objects.
pub(crate) fn nested_tool(depth: usize) -> Value {
    let mut inner = json!({"type": "string"});
    for _ in 0..depth {
        inner = json!({"type": "object", "properties": {"next": inner}});
    }
    tool(
        "nested",
        "Nested",
        &format!("Fault: an input schema {depth} objects deep; returns its arguments as JSON."),
        inner,
        &read_only(),
    )
}

/// The name of the `--header-tools` tool whose arguments become `Mcp-Param-*` headers.
pub(crate) const HEADERS_ECHO: &str = "headers_echo";
/// The name of the `--header-tools` tool whose `x-mcp-header` annotation is invalid.
pub(crate) const BAD_HEADER_TOOL: &str = "bad_header_tool";

/// The tools of `--header-tools`: `headers_echo`, three of whose parameters carry `x-mcp-header`
/// annotations (a string, an integer, a boolean) and one not, and `bad_header_tool`, whose
/// annotation is no HTTP token (a client of the stateless era leaves it out of its list over HTTP).
pub(crate) fn header_tools() -> Vec<Value> {
    let echo = tool(
        HEADERS_ECHO,
        "Headers echo",
        "Returns, as a JSON object, every mcp-* header of the HTTP request that called it (names lowercase, values as \
         sent); `{}` on stdio. region, priority and verbose are mirrored into Mcp-Param-Region, Mcp-Param-Priority and \
         Mcp-Param-Verbose headers; query is not.",
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"},
        }}),
        &read_only(),
    );
    let bad = tool(
        BAD_HEADER_TOOL,
        "Bad header tool",
        "Its x-mcp-header annotation (\"My Region\") is not an HTTP token, which makes the tool invalid over HTTP; \
         returns its arguments as JSON.",
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "My Region"},
        }}),
        &read_only(),
    );
    vec![echo, bad]
}

pub(crate) fn dynamic_tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Added by trigger-list-changed or --tool-named; returns its arguments as JSON.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": read_only(),
    })
}

/// The static resources, in list order.
pub(crate) fn resources() -> Vec<Value> {
    vec![
        json!({"uri": HELLO_URI, "name": "hello.txt", "title": "Hello", "description": "A short text.", "mimeType": "text/plain", "size": HELLO_TEXT.len()}),
        json!({"uri": DATA_URI, "name": "data.bin", "title": "Binary data", "description": "The bytes 0 to 15.", "mimeType": "application/octet-stream", "size": 16}),
        json!({"uri": README_URI, "name": "readme.md", "title": "Read me", "description": "What this server is.", "mimeType": "text/markdown", "size": README_TEXT.len()}),
    ]
}

/// The resource templates, in list order.
pub(crate) fn resource_templates() -> Vec<Value> {
    vec![
        json!({"uriTemplate": format!("{ITEM_PREFIX}{{id}}"), "name": "item", "title": "Item by id", "description": "A numbered item.", "mimeType": "text/plain"}),
        json!({"uriTemplate": format!("{ECHO_PREFIX}{{text}}"), "name": "echo", "title": "Echo", "description": "A resource whose text is the end of its URI.", "mimeType": "text/plain"}),
    ]
}

/// The contents of the resource at `uri` (a `contents` entry of resources/read), if it exists.
pub(crate) fn read_resource(uri: &str) -> Option<Value> {
    match uri {
        HELLO_URI => {
            return Some(json!({"uri": uri, "mimeType": "text/plain", "text": HELLO_TEXT}));
        }
        DATA_URI => {
            return Some(json!({"uri": uri, "mimeType": "application/octet-stream", "blob": DATA_BASE64}));
        }
        README_URI => {
            return Some(json!({"uri": uri, "mimeType": "text/markdown", "text": README_TEXT}));
        }
        _ => {}
    }
    if let Some(id) = uri
        .strip_prefix(ITEM_PREFIX)
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    {
        return Some(json!({"uri": uri, "mimeType": "text/plain", "text": format!("item {id}")}));
    }
    let text = uri.strip_prefix(ECHO_PREFIX).filter(|text| !text.is_empty())?;
    Some(json!({"uri": uri, "mimeType": "text/plain", "text": text}))
}

/// The prompts, in list order.
pub(crate) fn prompts() -> Vec<Value> {
    vec![
        json!({"name": "simple", "title": "Simple prompt", "description": "A prompt without arguments."}),
        json!({"name": "greeting", "title": "Greeting", "description": "Greets someone by name.", "arguments": [
            {"name": "name", "title": "Name", "description": "Who to greet.", "required": true}
        ]}),
        json!({"name": "code-review", "title": "Code review", "description": "Asks for a review of code in a language.", "arguments": [
            {"name": "language", "title": "Language", "description": "The code's language.", "required": true},
            {"name": "style", "title": "Style", "description": "concise or thorough.", "required": false}
        ]}),
    ]
}

/// Why prompts/get could not build a prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PromptError {
    /// No prompt has that name.
    #[error("unknown prompt {name:?}")]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// A required argument is missing.
    #[error("prompt {prompt:?} needs the argument {argument:?}")]
    MissingArgument {
        /// The prompt.
        prompt: &'static str,
        /// The missing argument.
        argument: &'static str,
    },
}

/// The `messages` of prompt `name` with `arguments` (string values by argument name).
pub(crate) fn prompt_messages(name: &str, arguments: &serde_json::Map<String, Value>) -> Result<Value, PromptError> {
    let argument = |prompt: &'static str, argument: &'static str| -> Result<String, PromptError> {
        match arguments.get(argument).and_then(Value::as_str) {
            Some(value) => Ok(value.to_owned()),
            None => Err(PromptError::MissingArgument { prompt, argument }),
        }
    };
    let user = |text: String| json!([{"role": "user", "content": {"type": "text", "text": text}}]);
    Ok(match name {
        "simple" => user("This is a simple prompt without arguments.".to_owned()),
        "greeting" => user(format!(
            "Hello, {}! Please greet me back.",
            argument("greeting", "name")?
        )),
        "code-review" => {
            let language = argument("code-review", "language")?;
            let style = arguments.get("style").and_then(Value::as_str).unwrap_or("thorough");
            user(format!(
                "Please give a {style} review of the following {language} code."
            ))
        }
        other => return Err(PromptError::Unknown { name: other.to_owned() }),
    })
}

/// What a completion request refers to.
pub(crate) enum CompletionRef<'a> {
    /// A prompt's argument.
    Prompt(&'a str),
    /// A resource template's argument.
    Resource(&'a str),
}

/// The candidates for argument `argument` of `reference` that start with `prefix`; `None` if the
/// prompt or template does not exist.
pub(crate) fn complete(reference: &CompletionRef<'_>, argument: &str, prefix: &str) -> Option<Vec<&'static str>> {
    let candidates: &[&str] = match reference {
        CompletionRef::Prompt("code-review") => match argument {
            "language" => LANGUAGES,
            "style" => STYLES,
            _ => &[],
        },
        CompletionRef::Prompt("simple" | "greeting") => &[],
        CompletionRef::Resource(template) if *template == format!("{ITEM_PREFIX}{{id}}") => {
            if argument == "id" {
                ITEM_IDS
            } else {
                &[]
            }
        }
        CompletionRef::Resource(template) if *template == format!("{ECHO_PREFIX}{{text}}") => &[],
        CompletionRef::Prompt(_) | CompletionRef::Resource(_) => return None,
    };
    Some(candidates.iter().copied().filter(|c| c.starts_with(prefix)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_are_padded_and_recognized() {
        assert_eq!(generated_tool_name(1, 25), "tool-0001");
        assert_eq!(generated_tool_name(7, 12_345), "tool-00007");
        assert!(is_generated_tool("tool-0025", 25));
        assert!(!is_generated_tool("tool-0026", 25));
        assert!(!is_generated_tool("tool-0000", 25));
        assert!(!is_generated_tool("tool-25", 25));
        assert!(!is_generated_tool("tool-0001", 0));
    }

    #[test]
    fn every_listed_resource_reads_and_templates_resolve() {
        for resource in resources() {
            let uri = resource["uri"].as_str().unwrap();
            assert_eq!(read_resource(uri).unwrap()["uri"], uri);
        }
        assert_eq!(read_resource("test://items/42").unwrap()["text"], "item 42");
        assert_eq!(read_resource("test://echo/hi there").unwrap()["text"], "hi there");
        assert!(read_resource("test://items/x").is_none());
        assert!(read_resource("test://items/").is_none());
        assert!(read_resource("file:///etc/passwd").is_none());
    }

    #[test]
    fn prompts_check_their_arguments() {
        let mut args = serde_json::Map::new();
        assert_eq!(
            prompt_messages("greeting", &args).unwrap_err().to_string(),
            "prompt \"greeting\" needs the argument \"name\""
        );
        args.insert("name".into(), json!("Ada"));
        assert_eq!(
            prompt_messages("greeting", &args).unwrap()[0]["content"]["text"],
            "Hello, Ada! Please greet me back."
        );
        assert_eq!(
            prompt_messages("nope", &args).unwrap_err(),
            PromptError::Unknown { name: "nope".into() }
        );
    }

    #[test]
    fn completion_filters_by_prefix() {
        assert_eq!(
            complete(&CompletionRef::Prompt("code-review"), "language", "r"),
            Some(vec!["rust"])
        );
        assert_eq!(
            complete(&CompletionRef::Resource("test://items/{id}"), "id", "1"),
            Some(vec!["1", "10"])
        );
        assert_eq!(complete(&CompletionRef::Prompt("greeting"), "name", ""), Some(vec![]));
        assert_eq!(complete(&CompletionRef::Prompt("nope"), "x", ""), None);
        assert_eq!(complete(&CompletionRef::Resource("test://nope/{x}"), "x", ""), None);
    }
}
