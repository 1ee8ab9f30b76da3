//! What the client does in each scenario of the conformance suite, and running it against the
//! scenario's server through the `plexus` facade.

use std::sync::Arc;
use std::time::Duration;

use plexus::config::ServerConfig;
use plexus::protocol::{CallToolResult, ContentBlock, Implementation, ProtocolVersion};
use plexus::transport::AuthProvider;
use plexus::{ClientError, ClientOptions, ConnectError};
use serde_json::{Map, Value};

use crate::auth::{is_auth_scenario, oauth_provider};
use crate::elicitation::AcceptDefaults;
use crate::fill::fill_object;

/// The environment variable holding the scenario's name (set by the suite).
pub const SCENARIO_ENV: &str = "MCP_CONFORMANCE_SCENARIO";
/// The environment variable holding the scenario's context, a JSON object (set by the suite for
/// scenarios that need one).
pub const CONTEXT_ENV: &str = "MCP_CONFORMANCE_CONTEXT";

/// The environment variable holding the wire version the scenario runs at (set by suite 0.2 and
/// later; `2026-07-28` means the stateless era).
pub const PROTOCOL_VERSION_ENV: &str = "MCP_CONFORMANCE_PROTOCOL_VERSION";

/// What the suite asked for: the scenario, its context and its wire version.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scenario {
    /// The scenario's name (`MCP_CONFORMANCE_SCENARIO`).
    pub name: String,
    /// Its context (`MCP_CONFORMANCE_CONTEXT`, see [`parse_context`]).
    pub context: Map<String, Value>,
    /// Its wire version (`MCP_CONFORMANCE_PROTOCOL_VERSION`), when the suite names one.
    pub protocol_version: Option<String>,
}

impl Scenario {
    /// The scenario `name` with an empty context and no wire version.
    pub fn named(name: &str) -> Self {
        Scenario {
            name: name.to_owned(),
            ..Scenario::default()
        }
    }
}

/// The name the client gives itself in `initialize`.
pub const CLIENT_NAME: &str = "plexus-conformance-client";

/// Which tools a scenario calls after listing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCalls {
    /// None: the scenario checks the handshake and the listing.
    None,
    /// These tools, which the server must list.
    Named(&'static [&'static str]),
    /// Every tool the server lists (scenarios this client has no entry for).
    EveryListed,
    /// `focal`, then `echo` with `{"schema": …}`: the input schema this client observed for
    /// `focal`, so that the suite sees what survived parsing.
    EchoSchema {
        /// The tool whose schema is echoed.
        focal: &'static str,
        /// The tool that takes it back.
        echo: &'static str,
    },
}

impl ToolCalls {
    /// The tools the calls need, in call order (none for [`ToolCalls::EveryListed`]).
    fn needed(self) -> Vec<&'static str> {
        match self {
            ToolCalls::None | ToolCalls::EveryListed => Vec::new(),
            ToolCalls::Named(names) => names.to_vec(),
            ToolCalls::EchoSchema { focal, echo } => vec![focal, echo],
        }
    }
}

/// The scenarios this client knows, with the tools each calls; any other scenario calls every
/// listed tool. Arguments always come from the tool's input schema (see
/// [`fill_object`](crate::fill_object)).
pub const KNOWN_SCENARIOS: &[(&str, ToolCalls)] = &[
    ("initialize", ToolCalls::None),
    ("tools_call", ToolCalls::Named(&["add_numbers"])),
    // The server asks for a form with defaults while the tool runs; `AcceptDefaults` answers.
    (
        "elicitation-sep1034-client-defaults",
        ToolCalls::Named(&["test_client_elicitation_defaults"]),
    ),
    // The server closes the tool call's SSE stream after a priming event; the transport resumes
    // with a GET carrying `Last-Event-ID` after the `retry` delay, where the result arrives.
    ("sse-retry", ToolCalls::Named(&["test_reconnection"])),
    // `$schema`, `$defs`, `additionalProperties` and the 2020-12 vocabulary must survive.
    (
        "json-schema-2020-12-preservation",
        ToolCalls::EchoSchema {
            focal: "json_schema_2020_12_tool",
            echo: "json_schema_echo",
        },
    ),
];

/// The tools the scenario `name` calls.
pub fn tool_calls(name: &str) -> ToolCalls {
    KNOWN_SCENARIOS
        .iter()
        .find(|(known, _)| *known == name)
        .map_or(ToolCalls::EveryListed, |(_, calls)| *calls)
}

/// How long the client may take: the handshake, each request, and the whole scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The timeout of `initialize`.
    pub initialize: Duration,
    /// The timeout of every other request, tool calls included.
    pub request: Duration,
    /// The whole run; the suite kills a client after 30 s by default, so this stays below.
    pub total: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            initialize: Duration::from_secs(10),
            request: Duration::from_secs(20),
            total: Duration::from_secs(25),
        }
    }
}

/// Why a scenario run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The server URL is not a usable Streamable HTTP endpoint.
    #[error("the server URL {url:?} is not usable: {}", joined(.diagnostics))]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What the config's checks found wrong with it.
        diagnostics: Vec<plexus::config::Diagnostic>,
    },
    /// `MCP_CONFORMANCE_CONTEXT` is not a JSON object, or names another scenario.
    #[error("{CONTEXT_ENV} is invalid")]
    BadContext {
        /// What is wrong with it.
        #[source]
        problem: ContextProblem,
    },
    /// Connecting (transport or handshake) failed.
    #[error("connecting to {url} failed")]
    Connect {
        /// The server URL.
        url: String,
        /// What failed.
        #[source]
        source: ConnectError,
    },
    /// A request after the handshake failed.
    #[error("{what} failed")]
    Request {
        /// What was being done, e.g. `tools/call add_numbers`.
        what: String,
        /// What failed.
        #[source]
        source: ClientError,
    },
    /// Listing or loading skills failed (a skill that fails verification is refused, not an
    /// error).
    #[error("{what} failed")]
    Skill {
        /// What was being done, e.g. `skills/list`.
        what: String,
        /// What failed.
        #[source]
        source: plexus::client::SkillError,
    },
    /// The scenario needs a tool the server does not list.
    #[error("scenario {scenario}: the server lists no tool {tool:?} (it lists: {})", listed.join(", "))]
    MissingTool {
        /// The scenario.
        scenario: String,
        /// The tool the scenario calls.
        tool: String,
        /// The tools the server listed.
        listed: Vec<String>,
    },
    /// The scenario calls tools but the server declares no `tools` capability.
    #[error("scenario {scenario}: the server declares no tools capability, but the scenario calls {tools}")]
    NoTools {
        /// The scenario.
        scenario: String,
        /// The tools it would call.
        tools: String,
    },
    /// A tool answered with `isError`.
    #[error("tool {tool:?} returned an error: {text}")]
    ToolError {
        /// The tool.
        tool: String,
        /// The text of its result.
        text: String,
    },
    /// The auth scenario's OAuth provider could not be set up.
    #[error("setting up OAuth failed")]
    AuthSetup {
        /// Why.
        #[source]
        problem: AuthSetupProblem,
    },
    /// The scenario did not finish within [`Limits::total`].
    #[error("the scenario did not finish within {} s", .after.as_secs())]
    TimedOut {
        /// The limit.
        after: Duration,
    },
}

/// Diagnostics on one line.
fn joined(diagnostics: &[plexus::config::Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What is wrong with `MCP_CONFORMANCE_CONTEXT`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextProblem {
    /// It is JSON, but not an object.
    #[error("expected a JSON object, found {found}")]
    NotAnObject {
        /// What the harness gave.
        found: Value,
    },
    /// It is not JSON.
    #[error("not JSON")]
    NotJson(#[source] serde_json::Error),
    /// It is about another scenario.
    #[error("it is for scenario {name:?}, but {SCENARIO_ENV} is {scenario:?}")]
    OtherScenario {
        /// The scenario it names.
        name: String,
        /// The scenario being run.
        scenario: String,
    },
}

/// Why the auth scenario's OAuth provider could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthSetupProblem {
    /// The context's `private_key_pem` is not a usable key.
    #[error("the context's private_key_pem")]
    PrivateKey(#[source] plexus::auth::oauth::jwt::JwtError),
    /// No temporary token store could be made.
    #[error("cannot create a temporary token store")]
    TokenStore(#[source] std::io::Error),
    /// The redirect follower or the provider could not be built (the error says which).
    #[error(transparent)]
    Provider(Box<dyn std::error::Error + Send + Sync>),
}

/// The scenario's context: the JSON object in `MCP_CONFORMANCE_CONTEXT`, checked to be about this
/// scenario when it names one. An absent or empty value is an empty context.
pub fn parse_context(scenario: &str, raw: Option<&str>) -> Result<Map<String, Value>, ScenarioError> {
    let raw = raw.map(str::trim).unwrap_or_default();
    if raw.is_empty() {
        return Ok(Map::new());
    }
    let context = match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(context)) => context,
        Ok(other) => {
            return Err(ScenarioError::BadContext {
                problem: ContextProblem::NotAnObject { found: other },
            });
        }
        Err(e) => {
            return Err(ScenarioError::BadContext {
                problem: ContextProblem::NotJson(e),
            });
        }
    };
    match context.get("name") {
        Some(Value::String(name)) if name != scenario => Err(ScenarioError::BadContext {
            problem: ContextProblem::OtherScenario {
                name: name.clone(),
                scenario: scenario.to_owned(),
            },
        }),
        _ => Ok(context),
    }
}

/// The `http` server entry for `url`, checked as a config file entry would be.
pub fn server_config(url: &str) -> Result<ServerConfig, ScenarioError> {
    ServerConfig::from_json(&serde_json::json!({ "type": "http", "url": url }))
        .map(|(config, _warnings)| config)
        .map_err(|diagnostics| ScenarioError::BadUrl {
            url: url.to_owned(),
            diagnostics,
        })
}

/// Runs the scenario against the server at `url`: connects over Streamable HTTP with
/// [`client_options`] (an auth scenario with plexus's OAuth provider, see
/// [`oauth_provider`](crate::oauth_provider)), runs [`exercise`] and closes the session. A
/// scenario at a stateless wire version (2026-07-28) speaks that revision, pinned
/// ([`EraChoice::Stateless`](plexus::client::EraChoice::Stateless)): no `initialize`, the
/// envelope and the revision's headers on every request. Returns the transcript, one line per
/// step.
pub async fn run(url: &str, scenario: &Scenario, limits: Limits) -> Result<Vec<String>, ScenarioError> {
    let name = scenario.name.as_str();
    let config = server_config(url)?;
    let auth = if is_auth_scenario(name) {
        Some(oauth_provider(name, url, &scenario.context)?)
    } else {
        None
    };
    let provider = auth
        .as_ref()
        .map(|setup| Arc::clone(&setup.provider) as Arc<dyn AuthProvider>);
    let steps = async {
        let mut options = client_options(name, limits);
        // A scenario of the `initialize` era gets the handshake at once, as it expects (no probe).
        options.era = match stateless_version(scenario) {
            Some(version) => plexus::client::EraChoice::Stateless(version),
            None => plexus::client::EraChoice::Initialize,
        };
        let connected = match provider {
            Some(provider) => connect_with_auth(name, url, provider, options).await,
            None => plexus::connect(name, &config, options).await,
        };
        let client = connected.map_err(|source| ScenarioError::Connect {
            url: url.to_owned(),
            source,
        })?;
        let outcome = exercise(&client, scenario).await;
        let closed = client.close().await;
        let mut transcript = outcome?;
        closed.map_err(|source| ScenarioError::Request {
            what: "closing the session".to_owned(),
            source,
        })?;
        transcript.push("closed".to_owned());
        Ok(transcript)
    };
    match tokio::time::timeout(limits.total, Box::pin(steps)).await {
        Ok(result) => result,
        Err(_) => Err(ScenarioError::TimedOut { after: limits.total }),
    }
}

/// The stateless revision the scenario runs at, when its wire version
/// (`MCP_CONFORMANCE_PROTOCOL_VERSION`) names one this client speaks.
pub fn stateless_version(scenario: &Scenario) -> Option<ProtocolVersion> {
    let version: ProtocolVersion = scenario.protocol_version.as_deref()?.trim().parse().ok()?;
    version.is_stateless().then_some(version)
}

/// Connects over Streamable HTTP with `provider` answering the server's challenges.
async fn connect_with_auth(
    name: &str,
    url: &str,
    provider: Arc<dyn AuthProvider>,
    options: ClientOptions,
) -> Result<plexus::Client, ConnectError> {
    let failed = |source: ClientError| ConnectError::Client {
        server: name.to_owned(),
        source,
    };
    let mut endpoint = plexus::net::RemoteEndpoint::new(url);
    endpoint.name = name.to_owned();
    endpoint.auth = Some(provider);
    endpoint.connect_timeout = options.initialize_timeout;
    let config = plexus::http::HttpConfig::new(endpoint);
    let transport = plexus::http::HttpTransport::new(config).map_err(|e| failed(e.into()))?;
    plexus::Client::connect(Box::new(transport), options)
        .await
        .map_err(failed)
}

/// The session options of the conformance client: its name and version in `initialize`, the
/// timeouts of `limits`, and the [`AcceptDefaults`] handler (which declares form elicitation).
pub fn client_options(name: &str, limits: Limits) -> ClientOptions {
    let mut options = ClientOptions::new(name);
    options.client_info = Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION"));
    options.initialize_timeout = limits.initialize;
    options.request_timeout = limits.request;
    options.tool_timeout = limits.request;
    options.handler(Arc::new(AcceptDefaults))
}

/// The scenario's steps on a connected session: lists the tools when the server has any and calls
/// the scenario's tools: those of the context's `toolCalls` with their arguments as given, else
/// [`tool_calls`] with arguments filled from their input schemas. In the stateless era it then
/// reads the server's resources and gets its prompts ([`browse`](crate::browse)), so that every
/// method whose headers the revision names is sent. Returns the transcript, one line per step.
pub async fn exercise(client: &plexus::Client, scenario: &Scenario) -> Result<Vec<String>, ScenarioError> {
    let details = client.server();
    let mut transcript = vec![format!(
        "initialized: {} {} (protocol {})",
        details.server_info.name, details.server_info.version, details.protocol_version
    )];
    let context_calls = context_calls(&scenario.context);
    let scenario = scenario.name.as_str();
    crate::skills(client, scenario, &mut transcript).await?;
    let calls = if context_calls.is_empty() {
        tool_calls(scenario)
    } else {
        ToolCalls::EveryListed
    };
    if details.capabilities.tools.is_none() {
        let needed = calls.needed();
        if needed.is_empty() {
            transcript.push("the server has no tools".to_owned());
            return Ok(transcript);
        }
        return Err(ScenarioError::NoTools {
            scenario: scenario.to_owned(),
            tools: needed.join(", "),
        });
    }
    let tools = client.list_tools().await.map_err(|source| ScenarioError::Request {
        what: "tools/list".to_owned(),
        source,
    })?;
    for rejected in client.rejected_tools() {
        transcript.push(rejected.to_string());
    }
    let listed: Vec<(&str, &Map<String, Value>)> = tools
        .iter()
        .map(|tool| (tool.name.as_str(), &tool.input_schema))
        .collect();
    transcript.push(format!(
        "tools: {}",
        listed.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
    ));
    let planned = if context_calls.is_empty() {
        planned_calls(scenario, &listed)?
    } else {
        context_calls
    };
    for (tool, arguments) in planned {
        let shown = Value::Object(arguments.clone());
        let result = client
            .call_tool(&tool, Some(arguments))
            .await
            .map_err(|source| ScenarioError::Request {
                what: format!("tools/call {tool}"),
                source,
            })?;
        if result.is_error() {
            return Err(ScenarioError::ToolError {
                tool,
                text: result_text(&result),
            });
        }
        transcript.push(format!("called {tool} {shown}: {}", result_text(&result)));
    }
    if details.protocol_version.is_stateless() {
        crate::browse::browse(client, &mut transcript).await?;
    }
    Ok(transcript)
}

/// The calls the context's `toolCalls` names (`[{"name": …, "arguments": {…}}, …]`), in order,
/// with their arguments exactly as given.
pub fn context_calls(context: &Map<String, Value>) -> Vec<PlannedCall> {
    let Some(Value::Array(calls)) = context.get("toolCalls") else {
        return Vec::new();
    };
    calls
        .iter()
        .filter_map(|call| {
            let name = call.get("name")?.as_str()?.to_owned();
            let arguments = call
                .get("arguments")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            Some((name, arguments))
        })
        .collect()
}

/// A tool to call and its arguments.
pub type PlannedCall = (String, Map<String, Value>);

/// The calls the scenario `scenario` makes, in order, given the listed tools (name and input
/// schema): each tool's name and arguments, filled from its input schema.
pub(crate) fn planned_calls(
    scenario: &str,
    listed: &[(&str, &Map<String, Value>)],
) -> Result<Vec<PlannedCall>, ScenarioError> {
    let find = |wanted: &str| {
        listed
            .iter()
            .find(|(name, _)| *name == wanted)
            .copied()
            .ok_or_else(|| ScenarioError::MissingTool {
                scenario: scenario.to_owned(),
                tool: wanted.to_owned(),
                listed: listed.iter().map(|(name, _)| (*name).to_owned()).collect(),
            })
    };
    let filled = |(name, schema): (&str, &Map<String, Value>)| (name.to_owned(), fill_object(schema));
    Ok(match tool_calls(scenario) {
        ToolCalls::None => Vec::new(),
        ToolCalls::EveryListed => listed.iter().copied().map(filled).collect(),
        ToolCalls::Named(names) => names
            .iter()
            .map(|name| find(name).map(filled))
            .collect::<Result<_, _>>()?,
        ToolCalls::EchoSchema { focal, echo } => {
            let (focal_name, schema) = find(focal)?;
            let (echo_name, _) = find(echo)?;
            let mut arguments = Map::new();
            arguments.insert("schema".to_owned(), Value::Object(schema.clone()));
            vec![filled((focal_name, schema)), (echo_name.to_owned(), arguments)]
        }
    })
}

/// The text blocks of a result joined by spaces, with other blocks named by kind.
pub(crate) fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(_) => "[image]".to_owned(),
            ContentBlock::Audio(_) => "[audio]".to_owned(),
            ContentBlock::ResourceLink(link) => format!("[link {}]", link.uri),
            ContentBlock::Resource(embedded) => format!("[resource {}]", embedded.resource.uri()),
            ContentBlock::Unknown(_) => "[unknown content]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use plexus::transport::error_chain;

    #[test]
    fn known_scenarios_call_their_tools_and_others_call_everything() {
        assert_eq!(tool_calls("initialize"), ToolCalls::None);
        assert_eq!(tool_calls("tools_call"), ToolCalls::Named(&["add_numbers"]));
        assert_eq!(tool_calls("sse-retry"), ToolCalls::Named(&["test_reconnection"]));
        assert_eq!(
            tool_calls("elicitation-sep1034-client-defaults"),
            ToolCalls::Named(&["test_client_elicitation_defaults"])
        );
        assert_eq!(tool_calls("auth/metadata-default"), ToolCalls::EveryListed);
    }

    #[test]
    fn the_schema_echo_sends_back_the_focal_schema_as_observed() {
        let focal: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addr", "type": "object"}},
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": false,
        }))
        .unwrap();
        let echo = Map::new();
        let listed = [("json_schema_echo", &echo), ("json_schema_2020_12_tool", &focal)];
        let calls = planned_calls("json-schema-2020-12-preservation", &listed).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, "json_schema_2020_12_tool");
        assert_eq!(Value::Object(calls[0].1.clone()), serde_json::json!({"name": "plexus"}));
        assert_eq!(calls[1].0, "json_schema_echo");
        assert_eq!(calls[1].1["schema"], Value::Object(focal.clone()));
        let missing = planned_calls("json-schema-2020-12-preservation", &listed[..1]).unwrap_err();
        assert!(matches!(missing, ScenarioError::MissingTool { .. }), "{missing:?}");
    }

    #[test]
    fn context_must_be_an_object_about_this_scenario() {
        assert!(parse_context("initialize", None).unwrap().is_empty());
        assert!(parse_context("initialize", Some("  ")).unwrap().is_empty());
        let context = parse_context(
            "auth/pre-registration",
            Some(r#"{"name":"auth/pre-registration","client_id":"c"}"#),
        )
        .unwrap();
        assert_eq!(context["client_id"], "c");
        assert_eq!(
            plexus::transport::error_chain(&parse_context("initialize", Some("[1]")).unwrap_err()),
            "MCP_CONFORMANCE_CONTEXT is invalid: expected a JSON object, found [1]"
        );
        assert_eq!(
            plexus::transport::error_chain(&parse_context("initialize", Some(r#"{"name":"tools_call"}"#)).unwrap_err()),
            "MCP_CONFORMANCE_CONTEXT is invalid: it is for scenario \"tools_call\", but MCP_CONFORMANCE_SCENARIO is \"initialize\""
        );
        assert!(
            plexus::transport::error_chain(&parse_context("initialize", Some("{")).unwrap_err())
                .starts_with("MCP_CONFORMANCE_CONTEXT is invalid: not JSON: EOF while parsing an object")
        );
    }

    #[test]
    fn the_server_url_must_be_http() {
        let config = server_config("http://localhost:4000/mcp").unwrap();
        assert_eq!(config.kind(), plexus::config::ServerKind::Http);
        assert_eq!(config.url().unwrap().as_str(), "http://localhost:4000/mcp");
        let err = server_config("ftp://localhost/mcp").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the server URL \"ftp://localhost/mcp\" is not usable: field \"url\": "),
            "{err}"
        );
    }

    /// Nothing listens on the address: the run fails with the connect error, within the limits.
    #[tokio::test]
    async fn a_server_that_is_not_there_fails_the_run_with_the_reason() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().unwrap().port());
        drop(listener);
        let err = run(&url, &Scenario::named("initialize"), Limits::default())
            .await
            .unwrap_err();
        assert!(
            error_chain(&err).starts_with(&format!("connecting to {url} failed: server \"initialize\": ")),
            "{err}"
        );
    }
}
