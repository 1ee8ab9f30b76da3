//! The scenarios the suite runs at the 2026-07-28 wire version (`MCP_CONFORMANCE_PROTOCOL_VERSION`),
//! whose servers are stateless: no `initialize`; every request carries `MCP-Protocol-Version` and
//! the protocol version, client capabilities and client info in its `_meta`. plexus's session
//! layer speaks up to 2025-11-25, so this module does the scenario's few requests
//! (`server/discover`, `tools/list`, `tools/call`) as plain JSON-RPC POSTs; authentication goes
//! through the transports' own [`Credentials`] (the provider's headers, one retry after a
//! challenge), so the auth logic under test is plexus's.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use plexus::net::Credentials;
use plexus::net::http::{BodyError, HttpClient, HttpSettings, Request, Target};
use plexus::transport::{AuthProvider, body_excerpt};
use serde_json::{Map, Value, json};

use crate::scenario::{CLIENT_NAME, ExchangeProblem, Limits, ScenarioError, planned_calls};

/// The protocol version of the stateless era.
pub const STATELESS_VERSION: &str = "2026-07-28";
/// The largest response body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// One stateless client: the endpoint, the HTTP client and the credentials.
struct Stateless {
    url: String,
    http: HttpClient,
    target: Target,
    credentials: Credentials,
    next_id: i64,
    limits: Limits,
}

/// Runs the scenario `name` at the stateless wire version: `server/discover`, `tools/list`, and
/// the scenario's tool calls. Returns the transcript.
pub async fn run_stateless(
    url: &str,
    name: &str,
    auth: Option<Arc<dyn AuthProvider>>,
    limits: Limits,
) -> Result<Vec<String>, ScenarioError> {
    let exchange = |what: &str, below: Box<dyn std::error::Error + Send + Sync>| ScenarioError::Exchange {
        what: what.to_owned(),
        problem: ExchangeProblem::Below(below),
    };
    let settings =
        HttpSettings::new(concat!("plexus-conformance/", env!("CARGO_PKG_VERSION"))).connect_timeout(limits.initialize);
    let http = HttpClient::new(settings).map_err(|e| exchange("setting up HTTP", Box::new(e)))?;
    let parsed = url::Url::parse(url).map_err(|e| exchange("setting up HTTP", Box::new(e)))?;
    let target = http
        .target(&parsed)
        .map_err(|e| exchange("setting up HTTP", Box::new(e)))?;
    let credentials =
        Credentials::new(Vec::new(), auth).map_err(|e| exchange("setting up credentials", Box::new(e)))?;
    let mut client = Stateless {
        url: url.to_owned(),
        http,
        target,
        credentials,
        next_id: 1,
        limits,
    };
    let discovered = client.request("server/discover", Map::new()).await?;
    let mut transcript = vec![format!(
        "discovered (protocol {STATELESS_VERSION}): versions {}",
        discovered.get("supportedVersions").unwrap_or(&Value::Null)
    )];
    let listed = client.request("tools/list", Map::new()).await?;
    let tools: Vec<(String, Map<String, Value>)> = listed
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| {
                    let name = tool.get("name")?.as_str()?.to_owned();
                    let schema = tool
                        .get("inputSchema")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    Some((name, schema))
                })
                .collect()
        })
        .unwrap_or_default();
    let names: Vec<&str> = tools.iter().map(|(name, _)| name.as_str()).collect();
    transcript.push(format!("tools: {}", names.join(", ")));
    let listed: Vec<(&str, &Map<String, Value>)> = tools.iter().map(|(name, schema)| (name.as_str(), schema)).collect();
    for (tool, arguments) in planned_calls(name, &listed)? {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(tool.clone()));
        params.insert("arguments".into(), Value::Object(arguments.clone()));
        let result = client.request("tools/call", params).await?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(ScenarioError::ToolError {
                tool,
                text: result.get("content").map(ToString::to_string).unwrap_or_default(),
            });
        }
        transcript.push(format!(
            "called {tool} {}: {}",
            Value::Object(arguments),
            result.get("content").unwrap_or(&Value::Null)
        ));
    }
    Ok(transcript)
}

impl Stateless {
    /// Sends one request (with the stateless `_meta`) and returns its result.
    async fn request(&mut self, method: &str, mut params: Map<String, Value>) -> Result<Value, ScenarioError> {
        let id = self.next_id;
        self.next_id += 1;
        params.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
            }),
        );
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let failed = |problem| ScenarioError::Exchange {
            what: method.to_owned(),
            problem,
        };
        let timeout = self.limits.request;
        let answer = tokio::time::timeout(timeout, self.post(method, &body))
            .await
            .map_err(|_| failed(ExchangeProblem::NoAnswer { after: timeout }))??;
        let message: Value = serde_json::from_slice(&answer).map_err(|source| {
            failed(ExchangeProblem::NotJson {
                source,
                answer: body_excerpt(&answer),
            })
        })?;
        if let Some(error) = message.get("error") {
            return Err(failed(ExchangeProblem::ErrorAnswer { answer: error.clone() }));
        }
        message.get("result").cloned().ok_or_else(|| {
            failed(ExchangeProblem::NoResult {
                answer: body_excerpt(&answer),
            })
        })
    }

    /// POSTs the body, answering a 401 or 403 through the credentials (one retry, and one more
    /// for a DPoP nonce challenge).
    async fn post(&self, method: &str, body: &Value) -> Result<Vec<u8>, ScenarioError> {
        let failed = |problem| ScenarioError::Exchange {
            what: method.to_owned(),
            problem,
        };
        let below = |e: Box<dyn std::error::Error + Send + Sync>| failed(ExchangeProblem::Below(e));
        let what = format!("POST {} ({method})", self.url);
        let mut retries = 0;
        loop {
            let headers = self
                .credentials
                .headers("POST", &self.url)
                .await
                .map_err(|e| below(Box::new(e)))?;
            let mut map: HeaderMap = plexus::net::headers::to_http(&headers, &[]).collect();
            map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            map.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
            map.insert(
                HeaderName::from_static("mcp-protocol-version"),
                HeaderValue::from_static(STATELESS_VERSION),
            );
            let request = Request {
                method: Method::POST,
                headers: map,
                body: Some(Bytes::from(body.to_string())),
            };
            let mut response = self
                .http
                .send(&self.target, request)
                .await
                .map_err(|e| below(Box::new(e)))?;
            let status = response.status.as_u16();
            let bytes = match response.body.read_capped(MAX_BODY).await {
                Ok(bytes) => bytes.to_vec(),
                Err(BodyError::TooLarge { .. }) => return Err(failed(ExchangeProblem::TooLarge { limit: MAX_BODY })),
                Err(e) => return Err(below(Box::new(e))),
            };
            // The headers matter only for a 401 or 403, whose challenge the credentials read.
            let rejected_headers = matches!(status, 401 | 403).then_some(&response.headers);
            if let Some(headers) = rejected_headers {
                let rejection = plexus::net::rejection_of(&what, &self.url, status, headers, &bytes);
                self.credentials
                    .rejected(&rejection, retries)
                    .await
                    .map_err(|e| below(Box::new(e)))?;
                retries += 1;
                continue;
            }
            if !(200..300).contains(&status) {
                return Err(failed(ExchangeProblem::Status {
                    status,
                    answer: body_excerpt(&bytes),
                }));
            }
            return Ok(bytes);
        }
    }
}
