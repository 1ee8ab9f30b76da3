//! tools/call: argument parsing and the behaviour of every tool. Quick tools answer inline; tools
//! that wait run on a task of their own (see [`Session::spawn_tool_call`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value, json};

use crate::catalog::{self, TINY_PNG_BASE64};
use crate::faults::{self, GARBAGE_LINE, MAX_FAULT_BYTES, MIN_OVERSIZE_BYTES};
use crate::listen::Change;
use crate::server::{LogLevel, Output, Session, lock, notification_line, parse_params, raw};

/// The longest `slow` call, in milliseconds (10 minutes).
pub(crate) const MAX_SLOW_MS: u64 = 600_000;
/// The most progress steps of one `slow` call.
pub(crate) const MAX_SLOW_STEPS: u32 = 10_000;
/// The longest pause between two chunks of `drip`, in milliseconds.
pub(crate) const MAX_DRIP_DELAY_MS: u64 = 10_000;
/// The largest chunk of `drip`, in bytes.
pub(crate) const MAX_DRIP_CHUNK: usize = 65_536;
/// The most -32042 answers in a row `url-elicit` gives.
pub(crate) const MAX_URL_ELICIT_ROUNDS: u32 = 10;

type Outcome = Result<Box<RawValue>, ErrorObject>;

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, rename = "_meta")]
    meta: Option<RequestMeta>,
    /// The client's answers to an `input_required` result (the stateless era's retry).
    #[serde(default, rename = "inputResponses")]
    pub(crate) input_responses: Option<serde_json::Map<String, Value>>,
    /// The state the `input_required` result carried, echoed.
    #[serde(default, rename = "requestState")]
    pub(crate) request_state: Option<String>,
}

#[derive(Deserialize)]
struct RequestMeta {
    #[serde(default, rename = "progressToken")]
    progress_token: Option<Value>,
    /// The stateless era's envelope: the capabilities the client declares with this request.
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Option<serde_json::Map<String, Value>>,
}

#[derive(Serialize)]
struct TextResult<'a> {
    content: [TextContent<'a>; 1],
    #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// A result with one text content.
fn text(text: &str) -> Outcome {
    raw(&TextResult {
        content: [TextContent { kind: "text", text }],
        is_error: false,
    })
}

/// A tool execution error: one text content and `isError: true`.
pub(crate) fn tool_error(text: &str) -> Outcome {
    raw(&TextResult {
        content: [TextContent { kind: "text", text }],
        is_error: true,
    })
}

fn invalid(tool: &str, reason: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INVALID_PARAMS,
        format!("invalid arguments for tool {tool}: {reason}"),
    )
}

/// Parses the arguments of `tool` (absent arguments are `{}`).
pub(crate) fn arguments<'a, T: Deserialize<'a>>(tool: &str, arguments: Option<&'a RawValue>) -> Result<T, ErrorObject> {
    let text = arguments.map_or("{}", RawValue::get);
    if !text.trim_start().starts_with('{') {
        return Err(invalid(tool, "the arguments must be a JSON object"));
    }
    serde_json::from_str(text).map_err(|e| invalid(tool, e))
}

/// Checks that `value` is at most `max`, naming the argument otherwise.
pub(crate) fn at_most<T: Copy + PartialOrd + std::fmt::Display>(
    tool: &str,
    argument: &str,
    value: T,
    max: T,
) -> Result<T, ErrorObject> {
    if value > max {
        return Err(invalid(
            tool,
            format!("{argument} is {value}, more than the limit {max}"),
        ));
    }
    Ok(value)
}

#[derive(Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Deserialize)]
struct AddArgs {
    a: Number,
    b: Number,
}

#[derive(Deserialize)]
struct HostileArgs {
    #[serde(default)]
    mode: HostileMode,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "lowercase")]
enum HostileMode {
    #[default]
    Result,
    Error,
    Crash,
}

#[derive(Deserialize)]
struct GarbageArgs {
    line: Option<String>,
}

#[derive(Deserialize)]
struct BytesArgs {
    bytes: usize,
}

#[derive(Deserialize)]
struct SlowArgs {
    ms: u64,
    #[serde(default = "default_steps")]
    steps: u32,
}

fn default_steps() -> u32 {
    5
}

/// The arguments of `trigger-list-changed`.
#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    list: ChangedList,
}

/// Which list `trigger-list-changed` changes.
#[derive(Deserialize, Clone, Copy, Default)]
#[serde(rename_all = "lowercase")]
enum ChangedList {
    /// A tool is added.
    #[default]
    Tools,
    /// The prompts (the list stays the same; the notification is sent all the same).
    Prompts,
    /// The resources (likewise).
    Resources,
}

#[derive(Deserialize)]
struct UriArgs {
    uri: String,
}

#[derive(Deserialize)]
struct UrlElicitArgs {
    #[serde(default = "one")]
    rounds: u32,
    #[serde(default = "yes")]
    notify: bool,
    /// The URL sent, as given (a test of what a client does with an odd one).
    url: Option<String>,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

/// The `elicit` tool's arguments: the question, and how long to wait before asking it.
#[derive(Deserialize)]
pub(crate) struct ElicitArgs {
    pub(crate) message: String,
    #[serde(default)]
    ms: u64,
    /// How many `input_required` rounds it takes in the stateless era.
    #[serde(default = "one_round")]
    pub(crate) rounds: u32,
}

fn one_round() -> u32 {
    1
}

/// The most `input_required` rounds one `elicit` call asks for.
pub(crate) const MAX_ELICIT_ROUNDS: u32 = 100;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SampleArgs {
    pub(crate) prompt: String,
    #[serde(default = "default_max_tokens")]
    pub(crate) max_tokens: u32,
}

fn default_max_tokens() -> u32 {
    100
}

#[derive(Deserialize)]
struct LogArgs {
    level: LogLevel,
    message: String,
    #[serde(default)]
    logger: Option<String>,
}

#[derive(Deserialize)]
struct CrashArgs {
    #[serde(default = "default_crash_code")]
    code: u8,
}

fn default_crash_code() -> u8 {
    1
}

#[derive(Deserialize)]
struct DripArgs {
    delay_ms: u64,
    #[serde(default = "default_drip_chunk")]
    chunk: usize,
}

fn default_drip_chunk() -> usize {
    8
}

impl Session {
    /// Handles tools/call `id`: answers into `out`, or spawns the work and answers later.
    pub(crate) fn call_tool(self: &Arc<Self>, id: RequestId, params: &str, out: &mut Vec<Output>) {
        let call: CallParams<'_> = match parse_params("tools/call", params) {
            Ok(call) => call,
            Err(error) => return self.respond_to_tool_call(id, Err(error), out),
        };
        let name = &*call.name;
        let args = call.arguments;
        let outcome = match name {
            "echo" => arguments(name, args).and_then(|EchoArgs { text: echoed }| text(&echoed)),
            "add" => arguments(name, args).and_then(add),
            "large" => arguments(name, args).and_then(|BytesArgs { bytes }| large(bytes)),
            "image" => raw(&json!({"content": [
                {"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"},
                {"type": "text", "text": "a 1×1 PNG image"},
            ]})),
            "trigger-list-changed" => {
                arguments(name, args).and_then(|ListArgs { list }| self.trigger_list_changed(list, out))
            }
            "update-resource" => arguments(name, args).and_then(|UriArgs { uri }| self.update_resource(&uri, out)),
            "log" => arguments(name, args).and_then(|log| self.log(&log, out)),
            "url-elicit" => return self.url_elicit(id, args, out),
            "error" => tool_error("the error tool failed as asked"),
            "fail" => Err(ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                "the fail tool answers with a JSON-RPC error as asked",
            )),
            "garbage" => arguments(name, args).and_then(|GarbageArgs { line }| garbage(line, out)),
            "oversize" => arguments(name, args).and_then(|BytesArgs { bytes }| oversize(bytes, out)),
            "elicit" | "sample" | "roots" if self.is_modern() => {
                let declared = call.meta.as_ref().and_then(|meta| meta.client_capabilities.as_ref());
                let outcome = self.input_round(
                    name,
                    args,
                    declared,
                    call.input_responses.as_ref(),
                    call.request_state.as_deref(),
                );
                return self.respond_to_tool_call(id, outcome, out);
            }
            "slow" | "elicit" | "sample" | "roots" | "stderr" => {
                return match self.start_waiting_tool(name, args, call.meta) {
                    Ok(work) => self.spawn_tool_call(id, work, out),
                    Err(error) => self.respond_to_tool_call(id, Err(error), out),
                };
            }
            "crash" => match arguments(name, args) {
                Ok(CrashArgs { code }) => {
                    return out.push(Output::Exit {
                        code: code.into(),
                        reason: "crashing as asked".to_owned(),
                    });
                }
                Err(error) => Err(error),
            },
            "hang" => return,
            "hostile" if self.options().hostile_text => match arguments(name, args).map(|HostileArgs { mode }| mode) {
                Ok(HostileMode::Result) => text(&format!("result{}", catalog::HOSTILE)),
                Ok(HostileMode::Error) => Err(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("failed{}", catalog::HOSTILE),
                )),
                Ok(HostileMode::Crash) => {
                    return out.push(Output::Exit {
                        code: 3,
                        reason: format!("dying{}", catalog::HOSTILE),
                    });
                }
                Err(error) => Err(error),
            },
            catalog::HEADERS_ECHO if self.options().header_tools => {
                raw(&self.http_headers).and_then(|headers| text(headers.get()))
            }
            catalog::BAD_HEADER_TOOL if self.options().header_tools => arguments(name, args)
                .and_then(|echoed: serde_json::Map<String, Value>| text(&Value::Object(echoed).to_string())),
            "task-required" if self.options().task_required_tool => Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                "task-required must be called as a task, and this server runs no tasks",
            )),
            "misbehave" if self.options().misbehave_tool => {
                let token = call.meta.as_ref().and_then(|meta| meta.progress_token.as_ref());
                arguments(name, args)
                    .and_then(|misbehave| self.misbehave(&misbehave, token, out))
                    .and_then(|done| text(&done))
            }
            "nested" if self.options().nested_schema_depth.is_some() => arguments(name, args)
                .and_then(|echoed: serde_json::Map<String, Value>| text(&Value::Object(echoed).to_string())),
            "drip" => match arguments(name, args).and_then(drip_args) {
                Ok((chunk, delay)) => return self.drip(id, chunk, delay, out),
                Err(error) => Err(error),
            },
            other => self.call_listed_tool(other, args),
        };
        self.respond_to_tool_call(id, outcome, out);
    }

    /// A generated or added tool: answers with its arguments as JSON; any other name is unknown.
    fn call_listed_tool(&self, name: &str, args: Option<&RawValue>) -> Outcome {
        let listed =
            catalog::is_generated_tool(name, self.server.options.tools)
                || self.server.options.named_tools.iter().any(|named| named == name)
                || lock(&self.dynamic_tools).iter().any(|tool| tool["name"] == name)
                || self.server.options.tool_overrides.as_deref().is_some_and(|path| {
                    crate::overrides::read(path).is_ok_and(|overrides| overrides.contains_key(name))
                });
        if !listed {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("unknown tool: {name}"),
            ));
        }
        let _: serde_json::Map<String, Value> = arguments(name, args)?;
        text(args.map_or("{}", RawValue::get))
    }

    /// Changes `list` (adds a tool to the tools) and says so: to the session in the `initialize`
    /// era, to the subscriptions that listen for it in the stateless one.
    fn trigger_list_changed(&self, list: ChangedList, out: &mut Vec<Output>) -> Outcome {
        let (change, done) = match list {
            ChangedList::Tools => {
                let mut tools = lock(&self.dynamic_tools);
                let name = format!("dynamic-{}", tools.len() + 1);
                tools.push(catalog::dynamic_tool(&name));
                (Change::ToolsListChanged, format!("added tool {name} and sent"))
            }
            ChangedList::Prompts => (Change::PromptsListChanged, "sent".to_owned()),
            ChangedList::Resources => (Change::ResourcesListChanged, "sent".to_owned()),
        };
        let method = change.method();
        if !self.is_modern() {
            out.push(Output::SessionNotification(notification_line(method, None)));
            return text(&format!("{done} {method}"));
        }
        let sent = self.notify_change(change, out);
        text(&format!("{done} {method} to {sent} subscriptions"))
    }

    /// Says that resource `uri` changed: to the session if it subscribed to it (`initialize`
    /// era), to the subscriptions that listen for it (stateless era).
    fn update_resource(&self, uri: &str, out: &mut Vec<Output>) -> Outcome {
        if catalog::read_resource(uri).is_none() {
            return Err(invalid("update-resource", format!("no resource has the URI {uri:?}")));
        }
        let change = Change::ResourceUpdated(uri);
        if self.is_modern() {
            return match self.notify_change(change, out) {
                0 => text(&format!("no subscription listens to {uri}; nothing sent")),
                sent => text(&format!(
                    "sent notifications/resources/updated for {uri} to {sent} subscriptions"
                )),
            };
        }
        if !lock(&self.state).subscriptions.contains(uri) {
            return text(&format!("the client is not subscribed to {uri}; nothing sent"));
        }
        out.push(Output::SessionNotification(notification_line(
            change.method(),
            Some(&Value::Object(change.params())),
        )));
        text(&format!("sent notifications/resources/updated for {uri}"))
    }

    fn log(&self, args: &LogArgs, out: &mut Vec<Output>) -> Outcome {
        let threshold = lock(&self.state).log_level;
        if let Some(threshold) = threshold.filter(|threshold| args.level < *threshold) {
            let threshold = serde_json::to_value(threshold).unwrap_or_default();
            return text(&format!(
                "not sent: below the level {threshold} set by logging/setLevel"
            ));
        }
        let params = json!({"level": args.level, "logger": args.logger.as_deref().unwrap_or("plexus-testserver"), "data": args.message});
        out.push(Output::Message(notification_line(
            "notifications/message",
            Some(&params),
        )));
        text("sent notifications/message")
    }

    /// Answers -32042 until this session has seen `rounds` of them in a row, then succeeds (and
    /// starts counting again); each -32042 is followed by its completion unless `notify` is false.
    fn url_elicit(&self, id: RequestId, args: Option<&RawValue>, out: &mut Vec<Output>) {
        let (outcome, completed) = match arguments("url-elicit", args).and_then(|args: UrlElicitArgs| {
            at_most("url-elicit", "rounds", args.rounds, MAX_URL_ELICIT_ROUNDS)
                .map(|rounds| (rounds, args.notify, args.url))
        }) {
            Ok((rounds, notify, url)) => self.url_elicit_round(rounds, notify, url),
            Err(error) => (Err(error), None),
        };
        self.respond_to_tool_call(id, outcome, out);
        if let Some(elicitation_id) = completed {
            out.push(Output::SessionNotification(notification_line(
                "notifications/elicitation/complete",
                Some(&json!({"elicitationId": elicitation_id})),
            )));
        }
    }

    /// One `url-elicit` call: its outcome, and the elicitation to report complete after it.
    fn url_elicit_round(&self, rounds: u32, notify: bool, url: Option<String>) -> (Outcome, Option<String>) {
        let round = {
            let mut state = lock(&self.state);
            if state.url_elicitations >= rounds {
                let done = std::mem::take(&mut state.url_elicitations);
                return (text(&format!("url-elicit: done after {done} URL elicitations")), None);
            }
            state.url_elicitations += 1;
            state.url_elicitations
        };
        let elicitation_id = format!("url-elicit-{round}");
        let data = json!({"elicitations": [{
            "mode": "url",
            "message": format!("Open the link to finish step {round} of {rounds}"),
            "url": url.unwrap_or_else(|| format!("https://auth.example.test/step/{round}")),
            "elicitationId": elicitation_id,
        }]});
        let mut error = ErrorObject::new(
            ErrorCode::URL_ELICITATION_REQUIRED,
            format!("step {round} of {rounds} needs the user at a URL"),
        );
        error.data = serde_json::value::to_raw_value(&data).ok();
        (Err(error), notify.then_some(elicitation_id))
    }

    fn drip(&self, id: RequestId, chunk: usize, delay: Duration, out: &mut Vec<Output>) {
        let mut answer = Vec::with_capacity(3);
        let outcome = text(&format!(
            "this response was written {chunk} bytes at a time, {} ms apart",
            delay.as_millis()
        ));
        self.respond_to_tool_call(id, outcome, &mut answer);
        out.extend(answer.into_iter().map(|output| match output {
            Output::Response(line) => Output::Drip { line, chunk, delay },
            other => other,
        }));
    }

    /// Checks the arguments of a tool that waits and returns its work, to run on a task.
    fn start_waiting_tool(
        self: &Arc<Self>,
        name: &str,
        args: Option<&RawValue>,
        meta: Option<RequestMeta>,
    ) -> Result<std::pin::Pin<Box<dyn Future<Output = Outcome> + Send>>, ErrorObject> {
        let session = Arc::clone(self);
        Ok(match name {
            "slow" => {
                let SlowArgs { ms, steps } = arguments(name, args)?;
                let ms = at_most(name, "ms", ms, MAX_SLOW_MS)?;
                let steps = at_most(name, "steps", steps, MAX_SLOW_STEPS)?;
                let token = meta.and_then(|meta| meta.progress_token);
                check_progress_token(token.as_ref())?;
                Box::pin(async move { session.slow(ms, steps, token).await })
            }
            "elicit" => {
                let ElicitArgs { message, ms, .. } = arguments(name, args)?;
                let delay = Duration::from_millis(at_most(name, "ms", ms, MAX_SLOW_MS)?);
                Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    session.elicit(message).await
                })
            }
            "sample" => {
                let SampleArgs { prompt, max_tokens } = arguments(name, args)?;
                Box::pin(async move { session.sample(prompt, max_tokens).await })
            }
            "roots" => Box::pin(async move { session.roots().await }),
            _ => {
                let BytesArgs { bytes } = arguments(name, args)?;
                let bytes = at_most(name, "bytes", bytes, MAX_FAULT_BYTES)?;
                Box::pin(async move {
                    match tokio::task::spawn_blocking(move || faults::write_stderr_bytes(bytes, "stderr-tool")).await {
                        Ok(Ok(())) => text(&format!("wrote {bytes} bytes to stderr")),
                        Ok(Err(e)) => tool_error(&format!("cannot write to stderr: {e}")),
                        Err(e) => tool_error(&format!("the stderr writer failed: {e}")),
                    }
                })
            }
        })
    }

    async fn slow(&self, ms: u64, steps: u32, token: Option<Value>) -> Outcome {
        let total = Duration::from_millis(ms);
        match token {
            Some(token) if steps > 0 => {
                for step in 1..=steps {
                    tokio::time::sleep(total / steps).await;
                    let params = json!({"progressToken": token, "progress": step, "total": steps, "message": format!("step {step} of {steps}")});
                    self.emit(Output::Message(notification_line(
                        "notifications/progress",
                        Some(&params),
                    )))
                    .await;
                }
            }
            _ => tokio::time::sleep(total).await,
        }
        text(&format!("slow: done after {ms} ms"))
    }

    async fn elicit(&self, message: String) -> Outcome {
        let params = self.elicit_params(&message);
        elicit_outcome(
            self.ask_client("elicitation/create", &params)
                .await
                .map_err(|e| e.to_string()),
        )
    }

    /// The `elicitation/create` params of the `elicit` tool.
    pub(crate) fn elicit_params(&self, message: &str) -> Value {
        let mut params = json!({
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name", "description": "Your name"},
                    "confirm": {"type": "boolean", "title": "Confirm", "default": false},
                },
                "required": ["name"],
            },
        });
        // The `mode` member exists from 2025-11-25 on.
        if lock(&self.state)
            .protocol_version
            .as_deref()
            .is_none_or(|version| version >= "2025-11-25")
        {
            params["mode"] = json!("form");
        }
        params
    }

    async fn sample(&self, prompt: String, max_tokens: u32) -> Outcome {
        let params = sample_params(&prompt, max_tokens);
        sample_outcome(
            self.ask_client("sampling/createMessage", &params)
                .await
                .map_err(|e| e.to_string()),
        )
    }

    async fn roots(&self) -> Outcome {
        roots_outcome(
            self.ask_client("roots/list", &json!({}))
                .await
                .map_err(|e| e.to_string()),
        )
    }
}

/// The `sampling/createMessage` params of the `sample` tool (with a progress token, so that a
/// client's progress on the request can be seen in the event log).
pub(crate) fn sample_params(prompt: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": max_tokens, "_meta": {"progressToken": "sample-progress"}})
}

/// The `elicit` tool's result from the client's answer (or why there is none).
pub(crate) fn elicit_outcome(answer: Result<Box<RawValue>, String>) -> Outcome {
    match answer {
        Ok(result) => text(result.get()),
        Err(e) => tool_error(&e),
    }
}

/// The `sample` tool's result from the client's answer (or why there is none).
pub(crate) fn sample_outcome(answer: Result<Box<RawValue>, String>) -> Outcome {
    #[derive(Deserialize)]
    struct Sampled {
        content: Value,
    }
    let result = match answer {
        Ok(result) => result,
        Err(e) => return tool_error(&e),
    };
    match serde_json::from_str::<Sampled>(result.get()) {
        Ok(Sampled { content }) => match content.get("text").and_then(Value::as_str) {
            Some(answer) if content["type"] == "text" => text(answer),
            _ => text(&content.to_string()),
        },
        Err(e) => tool_error(&format!(
            "the client's sampling/createMessage result is invalid ({e}): {}",
            result.get()
        )),
    }
}

/// The `roots` tool's result from the client's answer (or why there is none).
pub(crate) fn roots_outcome(answer: Result<Box<RawValue>, String>) -> Outcome {
    #[derive(Deserialize)]
    struct Roots {
        roots: Vec<Value>,
    }
    let result = match answer {
        Ok(result) => result,
        Err(e) => return tool_error(&e),
    };
    match serde_json::from_str::<Roots>(result.get()) {
        Ok(Roots { roots }) => text(&Value::Array(roots).to_string()),
        Err(e) => tool_error(&format!(
            "the client's roots/list result is invalid ({e}): {}",
            result.get()
        )),
    }
}

fn add(AddArgs { a, b }: AddArgs) -> Outcome {
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => Number::from(a + b),
        _ => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| Number::from_f64(a + b))
            .ok_or_else(|| invalid("add", format!("the sum of {a} and {b} is not a finite number")))?,
    };
    raw(&json!({"content": [{"type": "text", "text": sum.to_string()}], "structuredContent": {"sum": sum}}))
}

fn large(bytes: usize) -> Outcome {
    const PATTERN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let bytes = at_most("large", "bytes", bytes, MAX_FAULT_BYTES)?;
    let body: Vec<u8> = PATTERN.iter().copied().cycle().take(bytes).collect();
    text(std::str::from_utf8(&body).expect("the pattern is ASCII"))
}

fn garbage(line: Option<String>, out: &mut Vec<Output>) -> Outcome {
    let line = match line {
        None => GARBAGE_LINE.to_vec(),
        Some(line) if line.contains(['\n', '\r']) => {
            return Err(invalid("garbage", "line must be one line (no CR or LF)"));
        }
        Some(line) => {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            bytes
        }
    };
    out.push(Output::Raw(line));
    text("a garbage line came before this response")
}

fn oversize(bytes: usize, out: &mut Vec<Output>) -> Outcome {
    let bytes = at_most("oversize", "bytes", bytes, MAX_FAULT_BYTES)?;
    let line = faults::oversize_line(bytes).ok_or_else(|| {
        invalid(
            "oversize",
            format!("bytes is {bytes}, less than the {MIN_OVERSIZE_BYTES} bytes of the smallest JSON-RPC notification"),
        )
    })?;
    out.push(Output::Raw(line));
    text(&format!("a {bytes}-byte line came before this response"))
}

fn drip_args(DripArgs { delay_ms, chunk }: DripArgs) -> Result<(usize, Duration), ErrorObject> {
    let delay_ms = at_most("drip", "delay_ms", delay_ms, MAX_DRIP_DELAY_MS)?;
    let chunk = at_most("drip", "chunk", chunk, MAX_DRIP_CHUNK)?;
    if chunk == 0 {
        return Err(invalid("drip", "chunk must be at least 1"));
    }
    Ok((chunk, Duration::from_millis(delay_ms)))
}

/// Refuses a `_meta.progressToken` that is neither a string nor an integer (-32602).
pub(crate) fn check_progress_token(token: Option<&Value>) -> Result<(), ErrorObject> {
    match token.filter(|token| !(token.is_string() || token.is_i64() || token.is_u64())) {
        Some(token) => Err(ErrorObject::new(
            ErrorCode::INVALID_PARAMS,
            format!("invalid params for tools/call: _meta.progressToken must be a string or an integer, not {token}"),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_keeps_integers_exact_and_refuses_infinity() {
        let sum = |a: Value, b: Value| {
            let args = serde_json::from_value(json!({"a": a, "b": b})).unwrap();
            add(args).map(|raw| serde_json::from_str::<Value>(raw.get()).unwrap()["structuredContent"]["sum"].clone())
        };
        assert_eq!(
            sum(json!(9_007_199_254_740_993_i64), json!(1)).unwrap(),
            json!(9_007_199_254_740_994_i64)
        );
        assert_eq!(sum(json!(0.5), json!(1)).unwrap(), json!(1.5));
        assert_eq!(sum(json!(i64::MAX), json!(1)).unwrap(), json!(9.223_372_036_854_776e18));
        let error = sum(json!(1.7e308), json!(1.7e308)).unwrap_err();
        assert_eq!(
            error.message,
            "invalid arguments for tool add: the sum of 1.7e+308 and 1.7e+308 is not a finite number"
        );
    }

    #[test]
    fn large_is_exact() {
        for bytes in [0, 1, 37, 100_000] {
            let raw = large(bytes).unwrap();
            let value: Value = serde_json::from_str(raw.get()).unwrap();
            assert_eq!(value["content"][0]["text"].as_str().unwrap().len(), bytes);
        }
        assert_eq!(
            large(MAX_FAULT_BYTES + 1).unwrap_err().message,
            format!(
                "invalid arguments for tool large: bytes is {}, more than the limit {MAX_FAULT_BYTES}",
                MAX_FAULT_BYTES + 1
            )
        );
    }

    #[test]
    fn arguments_must_be_an_object() {
        let raw = RawValue::from_string("[\"hi\"]".into()).unwrap();
        let error = arguments::<EchoArgs<'_>>("echo", Some(&raw)).err().unwrap();
        assert_eq!(
            error.message,
            "invalid arguments for tool echo: the arguments must be a JSON object"
        );
        let error = arguments::<EchoArgs<'_>>("echo", None).err().unwrap();
        assert_eq!(
            error.message,
            "invalid arguments for tool echo: missing field `text` at line 1 column 2"
        );
    }
}
