//! Which protocol era a session speaks: the `initialize` era, or the stateless 2026-07-28
//! revision whose requests each carry a `_meta` envelope; and how a server that speaks one era
//! only treats a client of the other (the answers real servers give a `server/discover` probe).
//!
//! A dual-era server (the default) lets a connection's first request decide, as the Python SDK's
//! server does: a request carrying the envelope's protocol version makes the session modern,
//! anything else (`initialize` first of all) makes it legacy.

use clap::ValueEnum;
use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The envelope key of a request's protocol version.
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The envelope key of a request's client capabilities.
pub(crate) const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The result `_meta` key naming the server.
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The stateless revision this server speaks (`--modern-version` replaces it).
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

pub(crate) use plexus_protocol::errors::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};

/// Which protocol eras the server speaks (`--era`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum EraSupport {
    /// Both: a connection's first request decides.
    #[default]
    Dual,
    /// Only the `initialize` era: the envelope is ignored, and `server/discover` is answered as
    /// `--probe-answer` says.
    Legacy,
    /// Only the stateless revision: `initialize` is answered with -32022 naming the versions
    /// served.
    Modern,
}

/// How a legacy-only server answers a `server/discover` probe (`--probe-answer`): the answers
/// servers of the `initialize` era give in the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ProbeAnswer {
    /// -32601, method not found (what most SDKs answer).
    #[default]
    MethodNotFound,
    /// -32602, invalid params (servers that check a request's params before its method); over
    /// Streamable HTTP, with status 400.
    InvalidParams,
    /// Over Streamable HTTP, status 400 with an empty body (servers that refuse what they do not
    /// know without saying why); on stdio, which has no status, the same as `method-not-found`.
    Empty400,
    /// No answer at all (servers that drop what comes before `initialize`); over Streamable
    /// HTTP, the POST is held open unanswered (60 s at most).
    Silence,
    /// Exits with status 1 (servers that die on an unknown request before `initialize`); over
    /// Streamable HTTP, the connection is dropped unanswered (the process lives on).
    Exit,
}

/// The era a session speaks, once its first request decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionEra {
    /// The `initialize` era.
    Legacy,
    /// The stateless revision.
    Modern,
}

/// What to do with a request, given the session's era.
#[derive(Debug)]
pub(crate) enum Routing {
    /// Handle it as the `initialize` era does.
    Legacy,
    /// Handle it as the stateless revision does (the envelope was checked).
    Modern,
    /// Answer it with this, without handling it.
    Answer(Result<Box<RawValue>, ErrorObject>),
    /// A legacy server's silence: no answer.
    Ignore,
    /// A legacy server that dies of the probe.
    Exit,
}

#[derive(Deserialize)]
struct Enveloped {
    #[serde(default, rename = "_meta")]
    meta: Option<Map<String, Value>>,
}

/// The envelope of `params` (the raw params text), if it carries one: its protocol version, and
/// whether it declares the client's capabilities (one parse of the params).
fn envelope_of(params: &str) -> Option<(String, bool)> {
    let mut meta = serde_json::from_str::<Enveloped>(params).ok()?.meta?;
    let capabilities = meta.get(CLIENT_CAPABILITIES_KEY).is_some_and(Value::is_object);
    match meta.remove(PROTOCOL_VERSION_KEY)? {
        Value::String(version) => Some((version, capabilities)),
        _ => None,
    }
}

/// The era settings of a server.
#[derive(Debug, Clone)]
pub(crate) struct EraOptions {
    pub(crate) support: EraSupport,
    pub(crate) probe_answer: ProbeAnswer,
    pub(crate) modern_version: String,
    pub(crate) reject_first_modern: bool,
}

impl EraOptions {
    /// Decides how to treat `method` with `params` in a session whose era is `era` (set here when
    /// this request decides it); `rejected_once` is set once a modern request was rejected under
    /// `--reject-first-modern-request`.
    pub(crate) fn route(
        &self,
        era: &mut Option<SessionEra>,
        rejected_once: &mut bool,
        method: &str,
        params: &str,
    ) -> Routing {
        // A legacy session never looks at the envelope again (no parse per request).
        if *era == Some(SessionEra::Legacy) && method != "server/discover" {
            return Routing::Legacy;
        }
        let envelope = envelope_of(params);
        let decided = *era.get_or_insert(match (self.support, method, &envelope) {
            (EraSupport::Modern, _, _) => SessionEra::Modern,
            (EraSupport::Legacy, _, _) | (_, "initialize", _) | (_, _, None) => SessionEra::Legacy,
            (EraSupport::Dual, _, Some(_)) => SessionEra::Modern,
        });
        match decided {
            SessionEra::Legacy if method == "server/discover" && self.support == EraSupport::Legacy => {
                self.probe_routing()
            }
            SessionEra::Legacy if method == "server/discover" => Routing::Answer(Err(discover_not_found())),
            SessionEra::Legacy => Routing::Legacy,
            SessionEra::Modern => self.route_modern(rejected_once, method, params, envelope, None),
        }
    }

    /// How a legacy-only server answers a `server/discover` probe (`--probe-answer`), as a
    /// routing; `empty400` is `method-not-found` here (a transport with statuses checks for it
    /// first).
    pub(crate) fn probe_routing(&self) -> Routing {
        match self.probe_answer {
            ProbeAnswer::InvalidParams => Routing::Answer(Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                "invalid params: the session is not initialized",
            ))),
            ProbeAnswer::Silence => Routing::Ignore,
            ProbeAnswer::Exit => Routing::Exit,
            ProbeAnswer::MethodNotFound | ProbeAnswer::Empty400 => Routing::Answer(Err(discover_not_found())),
        }
    }

    /// Routes a stateless request that came with `MCP-Protocol-Version: header` (Streamable HTTP):
    /// as [`route`](Self::route) routes a request of a modern session, and the header must equal
    /// the envelope's version (-32020 otherwise). `rejected_once` is the server's, not a session's.
    #[cfg(feature = "remote")]
    pub(crate) fn route_stateless(
        &self,
        rejected_once: &mut bool,
        method: &str,
        params: &str,
        header: &str,
    ) -> Routing {
        let envelope = if method == "initialize" {
            None
        } else {
            envelope_of(params)
        };
        self.route_modern(rejected_once, method, params, envelope, Some(header))
    }

    /// The refusal a modern-only server gives a request of the `initialize` era (Streamable HTTP:
    /// one without a stateless `MCP-Protocol-Version` header): -32022 naming the version served
    /// and the one asked for, `initialize`'s `protocolVersion`, else the header's, else `""`.
    #[cfg(feature = "remote")]
    pub(crate) fn refuse_legacy_request(&self, method: &str, params: &str, header: Option<&str>) -> ErrorObject {
        let requested = match method {
            "initialize" => initialize_version(params),
            _ => header.unwrap_or_default().to_owned(),
        };
        self.unsupported(&requested)
    }

    /// -32022 naming the version served, for a request that asked for `requested`.
    pub(crate) fn unsupported(&self, requested: &str) -> ErrorObject {
        let mut error = ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        let data = json!({"supported": [self.modern_version], "requested": requested});
        error.data = serde_json::value::to_raw_value(&data).ok();
        error
    }

    fn route_modern(
        &self,
        rejected_once: &mut bool,
        method: &str,
        params: &str,
        envelope: Option<(String, bool)>,
        header: Option<&str>,
    ) -> Routing {
        let (requested, capabilities) = match (method, envelope) {
            ("initialize", _) => (initialize_version(params), false),
            (_, Some(envelope)) => envelope,
            (_, None) => {
                return Routing::Answer(Err(ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("invalid params for {method}: _meta has no {PROTOCOL_VERSION_KEY}"),
                )));
            }
        };
        if let Some(header) = header.filter(|header| method != "initialize" && *header != requested) {
            return Routing::Answer(Err(ErrorObject::new(
                HEADER_MISMATCH,
                format!(
                    "Header mismatch: MCP-Protocol-Version is {header:?} but _meta's {PROTOCOL_VERSION_KEY} is {requested:?}"
                ),
            )));
        }
        let reject = self.reject_first_modern && !std::mem::replace(rejected_once, true);
        if method == "initialize" || requested != self.modern_version || reject {
            return Routing::Answer(Err(self.unsupported(&requested)));
        }
        if !capabilities {
            return Routing::Answer(Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("invalid params for {method}: _meta has no {CLIENT_CAPABILITIES_KEY}"),
            )));
        }
        match method {
            // Gone in the stateless revision.
            "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => Routing::Answer(Err(
                ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {method}")),
            )),
            _ => Routing::Modern,
        }
    }

    /// The `server/discover` result (its `resultType` is added with every modern result's).
    pub(crate) fn discover(&self, capabilities: &Value, server_info: &Value, instructions: &str) -> Value {
        json!({
            "supportedVersions": [self.modern_version],
            "capabilities": capabilities,
            "instructions": instructions,
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {SERVER_INFO_KEY: server_info},
        })
    }
}

/// -32601 for `server/discover`, as a server of the `initialize` era answers it.
fn discover_not_found() -> ErrorObject {
    ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "method not found: server/discover")
}

/// The version an `initialize` asks for.
fn initialize_version(params: &str) -> String {
    serde_json::from_str::<Value>(params)
        .ok()
        .and_then(|params| params.get("protocolVersion")?.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The `resultType` of a complete result, as [`prepend_fields`] takes it.
pub(crate) const COMPLETE: &str = r#""resultType":"complete""#;

/// `result` (a JSON object's text) with `fields` (`"ttlMs":0,"cacheScope":"public"`) first: a
/// splice, not a parse, so the modern era costs the server no more per call than the legacy one.
pub(crate) fn prepend_fields(result: &RawValue, fields: &str) -> Box<RawValue> {
    let text = result.get();
    let Some(body) = text.trim_start().strip_prefix('{') else {
        return result.to_owned();
    };
    let body = body.trim_start();
    let separator = if body.starts_with('}') { "" } else { "," };
    let mut spliced = String::with_capacity(text.len() + fields.len() + 2);
    spliced.push('{');
    spliced.push_str(fields);
    spliced.push_str(separator);
    spliced.push_str(body);
    RawValue::from_string(spliced).unwrap_or_else(|_| result.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(support: EraSupport, probe_answer: ProbeAnswer) -> EraOptions {
        EraOptions {
            support,
            probe_answer,
            modern_version: MODERN_PROTOCOL_VERSION.to_owned(),
            reject_first_modern: false,
        }
    }

    const ENVELOPE: &str = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;

    #[test]
    fn the_first_request_decides_a_dual_sessions_era() {
        let dual = options(EraSupport::Dual, ProbeAnswer::MethodNotFound);
        let (mut era, mut first) = (None, false);
        assert!(matches!(
            dual.route(&mut era, &mut first, "server/discover", ENVELOPE),
            Routing::Modern
        ));
        assert_eq!(era, Some(SessionEra::Modern));
        let initialize =
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#;
        let Routing::Answer(Err(error)) = dual.route(&mut era, &mut first, "initialize", initialize) else {
            panic!("initialize on a modern session")
        };
        assert_eq!(error.code, UNSUPPORTED_PROTOCOL_VERSION);
        let data: Value = serde_json::from_str(error.data.unwrap().get()).unwrap();
        assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}));
        let mut era = None;
        assert!(matches!(
            dual.route(&mut era, &mut first, "initialize", initialize),
            Routing::Legacy
        ));
        assert_eq!(era, Some(SessionEra::Legacy));
    }

    #[test]
    fn a_legacy_server_answers_the_probe_as_asked() {
        for (answer, code) in [
            (ProbeAnswer::MethodNotFound, Some(ErrorCode::METHOD_NOT_FOUND)),
            (ProbeAnswer::InvalidParams, Some(ErrorCode::INVALID_PARAMS)),
            // Without statuses, an empty 400 is the common -32601.
            (ProbeAnswer::Empty400, Some(ErrorCode::METHOD_NOT_FOUND)),
            (ProbeAnswer::Silence, None),
            (ProbeAnswer::Exit, None),
        ] {
            let legacy = options(EraSupport::Legacy, answer);
            let routed = legacy.route(&mut None, &mut false, "server/discover", ENVELOPE);
            match (routed, code) {
                (Routing::Answer(Err(error)), Some(code)) => assert_eq!(error.code, code),
                (Routing::Ignore, None) => assert_eq!(answer, ProbeAnswer::Silence),
                (Routing::Exit, None) => assert_eq!(answer, ProbeAnswer::Exit),
                (other, _) => panic!("{answer:?}: {other:?}"),
            }
        }
        // The envelope of another request is ignored.
        let legacy = options(EraSupport::Legacy, ProbeAnswer::MethodNotFound);
        assert!(matches!(
            legacy.route(&mut None, &mut false, "tools/list", ENVELOPE),
            Routing::Legacy
        ));
    }

    #[test]
    fn a_modern_request_needs_the_envelope_and_a_version_served() {
        let modern = options(EraSupport::Modern, ProbeAnswer::MethodNotFound);
        let Routing::Answer(Err(error)) = modern.route(&mut None, &mut false, "tools/list", "{}") else {
            panic!("no envelope")
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        let old = ENVELOPE.replace("2026-07-28", "2026-01-01");
        let Routing::Answer(Err(error)) = modern.route(&mut None, &mut false, "tools/list", &old) else {
            panic!("unsupported version")
        };
        assert_eq!(error.code, UNSUPPORTED_PROTOCOL_VERSION);
        let Routing::Answer(Err(error)) = modern.route(&mut None, &mut false, "ping", ENVELOPE) else {
            panic!("ping is gone")
        };
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        let rejecting = EraOptions {
            reject_first_modern: true,
            ..modern
        };
        let mut first = false;
        let rejected = rejecting.route(&mut None, &mut first, "tools/list", ENVELOPE);
        assert!(matches!(rejected, Routing::Answer(Err(ref e)) if e.code == UNSUPPORTED_PROTOCOL_VERSION));
        assert!(matches!(
            rejecting.route(&mut None, &mut first, "tools/list", ENVELOPE),
            Routing::Modern
        ));
    }

    #[test]
    #[cfg(feature = "remote")]
    fn a_stateless_request_needs_its_header_to_match_the_envelope() {
        let dual = options(EraSupport::Dual, ProbeAnswer::MethodNotFound);
        let mut rejected = false;
        assert!(matches!(
            dual.route_stateless(&mut rejected, "tools/list", ENVELOPE, "2026-07-28"),
            Routing::Modern
        ));
        let Routing::Answer(Err(error)) = dual.route_stateless(&mut rejected, "tools/list", ENVELOPE, "2026-01-01")
        else {
            panic!("a header that differs from _meta")
        };
        assert_eq!(error.code, HEADER_MISMATCH);
        assert!(error.message.contains("\"2026-01-01\"") && error.message.contains("\"2026-07-28\""));
        let initialize =
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#;
        let Routing::Answer(Err(error)) = dual.route_stateless(&mut rejected, "initialize", initialize, "2026-07-28")
        else {
            panic!("initialize is not stateless")
        };
        assert_eq!(error.code, UNSUPPORTED_PROTOCOL_VERSION);
        let refused = dual.refuse_legacy_request("initialize", initialize, None);
        let data: Value = serde_json::from_str(refused.data.unwrap().get()).unwrap();
        assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}));
        let refused = dual.refuse_legacy_request("tools/list", "{}", None);
        let data: Value = serde_json::from_str(refused.data.unwrap().get()).unwrap();
        assert_eq!(data["requested"], "");
    }

    #[test]
    fn results_are_marked_complete_without_being_parsed() {
        let raw = |text: &str| RawValue::from_string(text.to_owned()).unwrap();
        assert_eq!(
            prepend_fields(&raw("{}"), COMPLETE).get(),
            r#"{"resultType":"complete"}"#
        );
        assert_eq!(
            prepend_fields(&raw(r#"{"tools":[]}"#), r#""ttlMs":0,"cacheScope":"public""#).get(),
            r#"{"ttlMs":0,"cacheScope":"public","tools":[]}"#
        );
        let marked: Value = serde_json::from_str(prepend_fields(&raw(r#" { "a" : 1 } "#), COMPLETE).get()).unwrap();
        assert_eq!(marked, json!({"resultType": "complete", "a": 1}));
        assert_eq!(prepend_fields(&raw("[1]"), COMPLETE).get(), "[1]");
    }
}
