//! The client that the official MCP conformance suite drives: each scenario run through the `plexus` facade over Streamable HTTP.
//!
//! The suite (`@modelcontextprotocol/conformance`, run by `cargo xtask conformance`) starts a test
//! server per scenario and runs `plexus-conformance-client <server-url>` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO` and, for some scenarios, a JSON context in `MCP_CONFORMANCE_CONTEXT`.
//! The client connects with [`plexus::connect`], lists the tools, calls the ones the scenario needs
//! ([`KNOWN_SCENARIOS`]; every listed tool for an unknown scenario) with arguments filled from their
//! input schemas ([`fill_object`]), answers elicitation forms with their defaults
//! ([`AcceptDefaults`]), and exits 0, or non-zero with the reason on stderr.
//!
//! Auth scenarios (`auth/…`) connect with plexus's OAuth provider ([`oauth_provider`]): a
//! temporary token store, the pre-registered client of the scenario's context when it has one,
//! the client metadata document URL the suite expects ([`CLIENT_METADATA_URL`]), and a user agent
//! that follows the authorization server's redirect to the provider's loopback listener.
//! Scenarios the suite runs at the stateless 2026-07-28 wire version
//! (`MCP_CONFORMANCE_PROTOCOL_VERSION`) speak that revision through the same client
//! ([`stateless_version`]): the envelope on every request, `Mcp-Method`, `Mcp-Name` and
//! `Mcp-Param-*` headers, multi-round-trip requests, tools with invalid `x-mcp-header`
//! annotations left out; they also read the resources and get the prompts ([`browse`]).
//!
//! ```
//! use plexus_conformance::{ToolCalls, tool_calls};
//!
//! assert_eq!(tool_calls("tools_call"), ToolCalls::Named(&["add_numbers"]));
//! let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]});
//! assert_eq!(plexus_conformance::fill_object(schema.as_object().unwrap())["a"], 1);
//! ```
//!
//! The crate's integration test `peers` runs plexus against third-party MCP servers (the reference
//! "everything" server and the Python SDK's servers) that `cargo xtask peers` installs.
//!
//! Dependencies: `tracing-subscriber` prints the session's tracing on stderr when `RUST_LOG` is
//! set (the suite saves the client's stderr with each scenario's results); `tempfile` holds an
//! auth scenario's token store.
#![forbid(unsafe_code)]

mod auth;
mod browse;
mod elicitation;
mod fill;
mod scenario;
mod skills;

pub use auth::{AuthSetup, CLIENT_METADATA_URL, is_auth_scenario, oauth_provider, oauth_settings};
pub use browse::{MAX_BROWSED, browse};
pub use elicitation::{AcceptDefaults, form_answer};
pub use fill::{PLACEHOLDER_TEXT, fill_object, value_for};
pub use scenario::{
    CLIENT_NAME, CONTEXT_ENV, KNOWN_SCENARIOS, Limits, PROTOCOL_VERSION_ENV, PlannedCall, SCENARIO_ENV, Scenario,
    ScenarioError, ToolCalls, client_options, context_calls, exercise, parse_context, run, server_config,
    stateless_version, tool_calls,
};
pub use skills::skills;
