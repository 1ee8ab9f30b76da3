//! What every message of a stateless-era session carries: the request `_meta` envelope (as JSON
//! text spliced into each request) and, over a transport that
//! [carries headers](plexus_transport::TransportSender::carries_headers) (Streamable HTTP), the
//! revision's headers: `MCP-Protocol-Version` (always the envelope's version), `Mcp-Method`,
//! `Mcp-Name` and the `Mcp-Param-*` headers of the tools' `x-mcp-header` annotations.
//!
//! A tool whose annotations are invalid cannot be called correctly over HTTP: a listing leaves
//! it out and says which and why ([`RejectedTool`]), with a warning in the log.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use plexus_jsonrpc::RawValue;
use plexus_protocol::envelope::{EnvelopeError, RequestEnvelope};
use plexus_protocol::http_headers::{
    InvalidHeaderAnnotation, MCP_METHOD_HEADER, MCP_NAME_HEADER, ParamHeaders, encode_header_value, name_param,
};
use plexus_protocol::{ProtocolVersion, Tool, methods};
use plexus_transport::{MessageHeader, PROTOCOL_VERSION_HEADER};
use serde::Deserialize;

use crate::listen::Listening;
use crate::session::lock;

/// A tool a listing left out ([`Client::rejected_tools`](crate::Client::rejected_tools)): its
/// definition does not decode, or its `x-mcp-header` annotations are invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedTool {
    /// The tool's name (`#N`, its place in the page, when even the name cannot be read).
    pub tool: String,
    /// What is wrong with it.
    pub problem: ToolProblem,
}

/// Why a listing left a tool out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolProblem {
    /// Its definition is not a tool (a member missing or of the wrong type, a schema nested
    /// deeper than the decoder's limit): the server's other tools are listed all the same.
    #[error("its definition is not a valid tool: {0}")]
    Undecodable(String),
    /// Over Streamable HTTP in the stateless era, its `x-mcp-header` annotations are invalid,
    /// so it cannot be called with the headers the revision requires.
    #[error(transparent)]
    HeaderAnnotation(#[from] InvalidHeaderAnnotation),
}

impl std::fmt::Display for RejectedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tool {:?} is left out: {}", self.tool, self.problem)
    }
}

/// The wire of a stateless-era session (see the module docs).
pub(crate) struct StatelessWire {
    /// The envelope's `_meta` entries as JSON text, without braces.
    fragment: Box<str>,
    /// The envelope's version, sent as `MCP-Protocol-Version`.
    version: ProtocolVersion,
    /// Whether the transport carries headers (else none are worked out).
    headers: bool,
    /// The `x-mcp-header` annotations of the listed tools that have any, by tool name.
    param_headers: RwLock<HashMap<String, Arc<ParamHeaders>>>,
    /// The tools the last listing left out.
    rejected: Mutex<Vec<RejectedTool>>,
    /// The session's `subscriptions/listen`.
    listening: Listening,
}

impl StatelessWire {
    /// The wire of `envelope`, whose version is `version`; `headers` when the transport carries
    /// them.
    pub(crate) fn new(
        envelope: &RequestEnvelope,
        version: ProtocolVersion,
        headers: bool,
    ) -> Result<StatelessWire, EnvelopeError> {
        let mut meta = serde_json::Map::new();
        envelope.write_to_meta(&mut meta)?;
        // A map of JSON values always serializes, as `{…}`.
        let text = serde_json::Value::Object(meta).to_string();
        let inner = text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or_default();
        Ok(StatelessWire {
            fragment: inner.into(),
            version,
            headers,
            param_headers: RwLock::default(),
            rejected: Mutex::default(),
            listening: Listening::default(),
        })
    }

    /// Whether the transport carries headers (Streamable HTTP).
    pub(crate) fn carries_headers(&self) -> bool {
        self.headers
    }

    /// The session's change notifications (`subscriptions/listen`).
    pub(crate) fn listening(&self) -> &Listening {
        &self.listening
    }

    /// The `_meta` entries every request carries (JSON text without braces).
    pub(crate) fn fragment(&self) -> &str {
        &self.fragment
    }

    /// The headers of the request `line` (encoded, envelope included) of `method`: none when the
    /// transport carries none. `Mcp-Name` for `tools/call`, `prompts/get`, `resources/read` and
    /// a task's requests is `name` when the encoder read it, else it is read from the line, as are the tool's
    /// `Mcp-Param-*` headers (only a tool with `x-mcp-header` annotations has its line read for
    /// them).
    pub(crate) fn request_headers(
        &self,
        method: &'static str,
        name: Option<String>,
        line: &[u8],
    ) -> Vec<MessageHeader> {
        if !self.headers {
            return Vec::new();
        }
        let mut headers = self.notification_headers(method);
        let Some(key) = name_param(method) else {
            return headers;
        };
        let annotated = |name: &str| {
            (method == methods::TOOLS_CALL)
                .then(|| self.annotations_of(name))
                .flatten()
        };
        if let Some(name) = name
            && annotated(&name).is_none()
        {
            headers.push((Cow::Borrowed(MCP_NAME_HEADER), Cow::Owned(owned_header_value(name))));
            return headers;
        }
        let Ok(request) = serde_json::from_slice::<NamedRequest<'_>>(line) else {
            // The line is one the session encoded; a params that is not an object names nothing.
            return headers;
        };
        let Some(params) = request.params else {
            return headers;
        };
        let name = match key {
            "uri" => params.uri,
            "taskId" => params.task_id,
            _ => params.name,
        };
        let Some(name) = name else { return headers };
        if let Some(annotated) = annotated(&name)
            && let Some(arguments) = params.arguments
            && let Ok(arguments) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(arguments.get())
        {
            headers.extend(
                annotated
                    .headers(&arguments)
                    .into_iter()
                    .map(|(name, value)| (Cow::Owned(name), Cow::Owned(value))),
            );
        }
        headers.push((
            Cow::Borrowed(MCP_NAME_HEADER),
            Cow::Owned(encode_header_value(&name).into_owned()),
        ));
        headers
    }

    /// The headers of a message of `method` with no name: the version and the method.
    pub(crate) fn notification_headers(&self, method: &'static str) -> Vec<MessageHeader> {
        if !self.headers {
            return Vec::new();
        }
        let mut headers = Vec::with_capacity(4);
        headers.push((
            Cow::Borrowed(PROTOCOL_VERSION_HEADER),
            Cow::Borrowed(self.version.as_str()),
        ));
        headers.push((Cow::Borrowed(MCP_METHOD_HEADER), encode_header_value(method)));
        headers
    }

    fn annotations_of(&self, tool: &str) -> Option<Arc<ParamHeaders>> {
        let annotated = self
            .param_headers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if annotated.is_empty() {
            return None;
        }
        annotated.get(tool).cloned()
    }

    /// Checks the `x-mcp-header` annotations of a listing's `tools` (over a transport that
    /// carries headers; over others the annotations need not be mirrored and nothing is
    /// checked): keeps those of the valid tools for their calls and leaves the invalid tools
    /// out, with a warning naming `server`, the tool and why. `whole` says that `tools` is the
    /// whole list (every page): the annotations and the rejections of an earlier listing are
    /// replaced; a single page adds to them.
    pub(crate) fn check_tools(&self, server: &str, tools: &mut Vec<Tool>, whole: bool) {
        if !self.headers {
            return;
        }
        let mut annotated = HashMap::new();
        let mut rejected = Vec::new();
        tools.retain(|tool| match ParamHeaders::from_schema_object(&tool.input_schema) {
            Ok(headers) => {
                if !headers.is_empty() {
                    annotated.insert(tool.name.clone(), Arc::new(headers));
                }
                true
            }
            Err(problem) => {
                tracing::warn!(server, tool = %tool.name, "the tool is left out: {problem}");
                rejected.push(RejectedTool {
                    tool: tool.name.clone(),
                    problem: problem.into(),
                });
                false
            }
        });
        {
            let mut known = self
                .param_headers
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if whole {
                *known = annotated;
            } else {
                known.extend(annotated);
            }
        }
        let mut known = lock(&self.rejected);
        if whole {
            *known = rejected;
        } else {
            known.extend(rejected);
        }
    }

    /// The tools the last listing left out.
    pub(crate) fn rejected(&self) -> Vec<RejectedTool> {
        lock(&self.rejected).clone()
    }
}

/// The part of a request line the name headers are read from.
#[derive(Deserialize)]
struct NamedRequest<'a> {
    #[serde(borrow)]
    params: Option<NameParams<'a>>,
}

#[derive(Deserialize)]
struct NameParams<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "taskId")]
    task_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// `value` as a header value: itself when it needs no encoding (no copy), else encoded.
fn owned_header_value(value: String) -> String {
    match encode_header_value(&value) {
        Cow::Borrowed(_) => value,
        Cow::Owned(encoded) => encoded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plexus_protocol::ClientCapabilities;

    fn wire(headers: bool) -> StatelessWire {
        let envelope = RequestEnvelope::new(ProtocolVersion::V2026_07_28, ClientCapabilities::default());
        StatelessWire::new(&envelope, ProtocolVersion::V2026_07_28, headers).unwrap()
    }

    fn names(headers: &[MessageHeader]) -> Vec<(String, String)> {
        headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_tool_call_carries_version_method_name_and_its_annotated_arguments() {
        let wire = wire(true);
        let tool: Tool = serde_json::from_value(serde_json::json!({
            "name": "q",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "free": {"type": "string"}
            }}
        }))
        .unwrap();
        let mut tools = vec![tool];
        wire.check_tools("s", &mut tools, true);
        assert_eq!(tools.len(), 1);
        let line = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{},"name":"q","arguments":{"region":" eu","n":null,"free":"x"}}}"#;
        assert_eq!(
            names(&wire.request_headers("tools/call", None, line)),
            [
                ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
                ("Mcp-Method".to_owned(), "tools/call".to_owned()),
                ("Mcp-Param-Region".to_owned(), "=?base64?IGV1?=".to_owned()),
                ("Mcp-Name".to_owned(), "q".to_owned()),
            ]
        );
        // The name the encoder read does not spare an annotated tool the reading of its arguments.
        assert_eq!(
            names(&wire.request_headers("tools/call", Some("q".to_owned()), line)),
            names(&wire.request_headers("tools/call", None, line))
        );
        // An unannotated tool's name is taken as given; its line is not read.
        assert_eq!(
            names(&wire.request_headers("tools/call", Some("plain é".to_owned()), b"not read")),
            [
                ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
                ("Mcp-Method".to_owned(), "tools/call".to_owned()),
                ("Mcp-Name".to_owned(), "=?base64?cGxhaW4gw6k=?=".to_owned()),
            ]
        );
        let read = br#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a b\u00e9"}}"#;
        assert_eq!(
            names(&wire.request_headers("resources/read", None, read))[2],
            ("Mcp-Name".to_owned(), "=?base64?ZmlsZTovLy9hIGLDqQ==?=".to_owned())
        );
        assert_eq!(names(&wire.request_headers("tools/list", None, b"{}")).len(), 2);
    }

    #[test]
    fn an_invalid_annotation_leaves_its_tool_out_over_http_only() {
        let bad: Tool = serde_json::from_value(serde_json::json!({
            "name": "bad",
            "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "My Region"}}}
        }))
        .unwrap();
        let good: Tool =
            serde_json::from_value(serde_json::json!({"name": "good", "inputSchema": {"type": "object"}})).unwrap();
        let mut tools = vec![bad.clone(), good.clone()];
        wire(true).check_tools("s", &mut tools, true);
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["good"]);
        let http = wire(true);
        let mut again = vec![bad.clone(), good.clone()];
        http.check_tools("s", &mut again, true);
        let rejected = http.rejected();
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].tool, "bad");
        assert!(
            rejected[0].to_string().starts_with("tool \"bad\" is left out: "),
            "{}",
            rejected[0]
        );
        let mut stdio = vec![bad, good];
        wire(false).check_tools("s", &mut stdio, true);
        assert_eq!(stdio.len(), 2);
        assert!(wire(false).request_headers("tools/call", None, b"{}").is_empty());
    }
}
