//! Deferred tools ([`GatewayOptions::deferred`](crate::GatewayOptions::deferred), `plexus serve
//! --deferred`): `tools/list` shows three meta-tools instead of every tool of the pool, so that
//! a client whose model sees every listed definition up front loads them on demand.
//!
//! - `search_tools` (`query`, `k`: 1 to 100, default 10) answers the best hits of the Hub's
//!   tool search, each with its name, a one-line summary, its score and why it matched, and the
//!   hits' full definitions, as `structuredContent` and as its JSON text;
//! - `describe_tools` (`names`: 1 to 50 qualified names) answers their full definitions, as
//!   `tools/list` would list them, and the names no tool has;
//! - `call_tool` (`name`, `arguments`) calls the tool through the gateway's one call path
//!   ([`Gateway::call_tool`]): routing, tasks, progress, cancellation and the routing of the
//!   backend's requests all apply as to a direct call, whose result it is.
//!
//! A client that knows a tool's name may still call it directly. A meta-tool's arguments that
//! do not fit its schema get a tool error that says why (the model can correct them).

use std::collections::HashMap;
use std::sync::Arc;

use plexus::jsonrpc::{ErrorObject, RawValue};
use plexus::protocol::ContentBlock;
use plexus::tools::search::{MAX_HITS, MAX_QUERY_BYTES};
use plexus::tools::{SearchHit, ToolEntry};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::gateway::{Gateway, invalid_params};
use crate::session::{Session, Sink};
use crate::tools::{CallResult, object_arguments, served_tool};

/// The search meta-tool's name.
pub(crate) const SEARCH: &str = "search_tools";
/// The describe meta-tool's name.
pub(crate) const DESCRIBE: &str = "describe_tools";
/// The call meta-tool's name.
pub(crate) const CALL: &str = "call_tool";

/// How many hits a search answers when its `k` is absent.
const DEFAULT_HITS: usize = 10;
/// The most names one `describe_tools` takes.
const MAX_DESCRIBED: usize = 50;
/// The longest one-line summary of a hit, in characters.
const SUMMARY_CHARS: usize = 160;

/// One of the meta-tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaTool {
    Search,
    Describe,
    Call,
}

impl MetaTool {
    /// The meta-tool named `name`, if one is.
    pub(crate) fn named(name: &str) -> Option<MetaTool> {
        match name {
            SEARCH => Some(MetaTool::Search),
            DESCRIBE => Some(MetaTool::Describe),
            CALL => Some(MetaTool::Call),
            _ => None,
        }
    }
}

/// The `tools/list` result of a deferred gateway: the three meta-tools, on one page (a cursor
/// is -32602: this list never gives one).
pub(crate) fn tools_list(params: &serde_json::Map<String, Value>) -> Result<Value, ErrorObject> {
    if let Some(cursor) = params.get("cursor").filter(|cursor| !cursor.is_null()) {
        return Err(invalid_params(
            plexus::protocol::methods::TOOLS_LIST,
            format!("{cursor} is not a cursor this gateway gave"),
        ));
    }
    let read_only =
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
    let definition = json!({"type": "array", "items": {"type": "object"},
        "description": "Full tool definitions: name, title, description, inputSchema, outputSchema, annotations."});
    Ok(json!({"tools": [
        {
            "name": SEARCH,
            "title": "Search tools",
            "description": "Search the tools of every MCP server behind this gateway, which are not listed up \
                front. Search by a tool's name (any case or separators, the mcp__<server>__ prefix optional, \
                a typo or two forgiven) or by what it does; exact names rank first. Answers the best hits \
                (name, one-line summary, score, why it matched) with their full definitions; call one with \
                call_tool.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "A tool name or words of what it does.", "maxLength": MAX_QUERY_BYTES},
                    "k": {"type": "integer", "description": "How many hits, best first.", "minimum": 1, "maximum": MAX_HITS, "default": DEFAULT_HITS},
                },
                "required": ["query"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "hits": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "summary": {"type": "string"},
                            "score": {"type": "number"}, "match": {"type": "string"}},
                        "required": ["name", "summary", "score", "match"],
                    }},
                    "tools": definition,
                },
                "required": ["hits", "tools"],
            },
            "annotations": read_only,
        },
        {
            "name": DESCRIBE,
            "title": "Describe tools",
            "description": "The full definitions (input and output schemas, annotations) of tools named by \
                their qualified names (mcp__<server>__<tool>), as search_tools answers them.",
            "inputSchema": {
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DESCRIBED}},
                "required": ["names"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"tools": definition, "unknown": {"type": "array", "items": {"type": "string"}}},
                "required": ["tools", "unknown"],
            },
            "annotations": read_only,
        },
        {
            "name": CALL,
            "title": "Call a tool",
            "description": "Call a tool found with search_tools by its qualified name, with arguments that \
                fit its inputSchema. Answers the tool's own result.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's qualified name."},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                },
                "required": ["name"],
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true},
        },
    ]}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArguments {
    query: String,
    k: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DescribeArguments {
    names: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArguments<'a> {
    name: String,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// A tool error result saying `text`.
fn failure(text: impl Into<String>) -> CallResult {
    CallResult::new(vec![ContentBlock::text(text.into())], None, true)
}

/// A meta-tool's result: `structured` as `structuredContent` and as its JSON text.
fn answer(structured: Value, is_error: bool) -> CallResult {
    CallResult::new(
        vec![ContentBlock::text(structured.to_string())],
        Some(structured),
        is_error,
    )
}

/// The first line of `description`, at most [`SUMMARY_CHARS`] characters.
fn summary(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or_default().trim();
    if line.chars().count() <= SUMMARY_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(SUMMARY_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// A tool's full definition, as the gateway lists it.
fn definition(entry: &ToolEntry) -> Value {
    serde_json::to_value(served_tool(entry)).unwrap_or(Value::Null)
}

/// The search answer of `hits`.
fn search_answer(hits: &[SearchHit]) -> Value {
    let compact: Vec<Value> = hits
        .iter()
        .map(|hit| {
            json!({
                "name": hit.entry.name,
                "summary": summary(&hit.entry.description),
                // Three decimals: enough to compare, short for the model.
                "score": (f64::from(hit.score) * 1000.0).round() / 1000.0,
                "match": hit.matched.label(),
            })
        })
        .collect();
    let tools: Vec<Value> = hits.iter().map(|hit| definition(&hit.entry)).collect();
    json!({"hits": compact, "tools": tools})
}

/// Reads a meta-tool's `arguments` (an object's text) as `T`, or the tool error naming `tool`.
fn read<'a, T: Deserialize<'a>>(tool: &str, arguments: &'a RawValue) -> Result<T, CallResult> {
    serde_json::from_str(arguments.get()).map_err(|e| failure(format!("invalid arguments for {tool}: {e}")))
}

impl Gateway {
    /// Answers a call of the meta-tool `meta` with `arguments`, for `session`'s client (a
    /// forwarded call's progress under `token`, its messages to `sink`).
    pub(super) async fn meta_call(
        self: &Arc<Self>,
        meta: MetaTool,
        session: &Arc<Session>,
        arguments: &RawValue,
        token: Option<Value>,
        sink: &Sink,
    ) -> Result<CallResult, ErrorObject> {
        // The tools of the servers still starting are found once they have started, or the
        // grace period is over.
        self.wait_ready().await;
        Ok(match meta {
            MetaTool::Search => match read::<SearchArguments>(SEARCH, arguments) {
                Ok(search) => match self
                    .hub
                    .search_tools(&search.query, search.k.unwrap_or(DEFAULT_HITS))
                    .await
                {
                    Ok(hits) => answer(search_answer(&hits), false),
                    Err(e) => failure(format!("{SEARCH}: {e}")),
                },
                Err(failed) => failed,
            },
            MetaTool::Describe => match read::<DescribeArguments>(DESCRIBE, arguments) {
                Ok(describe) => self.describe(&describe.names).await,
                Err(failed) => failed,
            },
            MetaTool::Call => match read::<CallArguments>(CALL, arguments) {
                Ok(call) => match object_arguments(call.arguments, CALL) {
                    Ok(arguments) => return self.call_tool(session, &call.name, arguments, token, sink).await,
                    Err(error) => failure(error.message),
                },
                Err(failed) => failed,
            },
        })
    }

    /// The definitions of the tools `names` and the names no tool has (an error result when
    /// none is known).
    async fn describe(&self, names: &[String]) -> CallResult {
        if names.is_empty() || names.len() > MAX_DESCRIBED {
            return failure(format!(
                "{DESCRIBE} takes from 1 to {MAX_DESCRIBED} names, not {}",
                names.len()
            ));
        }
        let pool = self.hub.tool_pool().await;
        let by_name: HashMap<&str, &ToolEntry> = pool.entries.iter().map(|e| (e.name.as_str(), &**e)).collect();
        let mut tools = Vec::new();
        let mut unknown = Vec::new();
        for name in names {
            match by_name.get(name.as_str()) {
                Some(entry) => tools.push(definition(entry)),
                None => unknown.push(name.clone()),
            }
        }
        let none_known = tools.is_empty();
        answer(json!({"tools": tools, "unknown": unknown}), none_known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_the_first_line_cut() {
        assert_eq!(summary("  Adds two numbers.\nMore detail."), "Adds two numbers.");
        assert_eq!(summary(""), "");
        let long = "word ".repeat(100);
        let cut = summary(&long);
        assert!(cut.chars().count() <= SUMMARY_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn the_list_holds_the_three_meta_tools_and_no_cursor() {
        let list = tools_list(&serde_json::Map::new()).unwrap();
        let names: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, [SEARCH, DESCRIBE, CALL]);
        assert!(names.iter().all(|name| MetaTool::named(name).is_some()));
        // Each is a valid tool definition.
        for tool in list["tools"].as_array().unwrap() {
            serde_json::from_value::<plexus::protocol::Tool>(tool.clone()).unwrap();
        }
        let mut params = serde_json::Map::new();
        params.insert("cursor".into(), json!("tools@3"));
        assert!(tools_list(&params).is_err());
    }
}
