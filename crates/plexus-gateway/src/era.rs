//! Which era a client's request is of, read from the request itself: the stateless era's
//! (revision 2026-07-28) when it is `server/discover` or its `params._meta` carries the envelope
//! with a version of no `initialize`-era revision, else the `initialize` era's.
//!
//! On stdio one connection is one client: its first such request decides its era for good. A
//! stateless connection's requests must each carry the envelope (-32602 otherwise, saying so),
//! and its `initialize` gets -32022 naming the stateless versions (what a server of both eras
//! answers a client whose probe gave up before the answer came: it probes again); a connection
//! of the `initialize` era is answered as it always was, whatever its `_meta` holds
//! (its `server/discover` included). Over HTTP each stateless POST says its era in its
//! `MCP-Protocol-Version` header ([`crate::http`]); its envelope is read here all the same.

use plexus::jsonrpc::{ErrorObject, Request};
use plexus::protocol::envelope::{CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, RequestEnvelope};
use plexus::protocol::errors::UnsupportedVersionData;
use plexus::protocol::{ClientCapabilities, Era, JsonObject, ProtocolVersion, methods};
use serde::Deserialize;
use serde_json::Value;

use crate::gateway::{invalid_params, params_of};
use crate::session::Session;

/// How a request is answered.
pub(crate) enum Route {
    /// As the `initialize` era answers it.
    Initialize,
    /// As the stateless era answers it (its envelope checked).
    Stateless(Box<Stateless>),
}

/// What a stateless request says of itself besides its method.
pub(crate) struct Stateless {
    /// The capabilities the client declared in the envelope.
    pub(crate) capabilities: ClientCapabilities,
    /// What the request names: `params.name` (`tools/call`, `prompts/get`), `params.uri`
    /// (`resources/read`) or `params.taskId` (the tasks extension's requests on one task), as
    /// `Mcp-Name` must carry it over HTTP and a retry must repeat it.
    pub(crate) named: Option<String>,
    /// A retry's `requestState` (see [`crate::rounds`]).
    pub(crate) request_state: Option<String>,
    /// A retry's `inputResponses`.
    pub(crate) input_responses: Option<JsonObject>,
    /// `_meta.progressToken`: the request asks for its progress.
    pub(crate) progress_token: Option<Value>,
}

/// What the gateway reads of a request's params before answering it: `_meta` (the envelope),
/// the member `Mcp-Name` must equal over HTTP (`name`, `uri` or `taskId`: see
/// [`name_param`](plexus::protocol::http_headers::name_param)) and a retry's input. Other
/// members (a call's arguments) are skipped.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Peek {
    #[serde(rename = "_meta")]
    meta: Option<Value>,
    /// `params.name` (`tools/call`, `prompts/get`).
    name: Option<Value>,
    /// `params.uri` (`resources/read`).
    uri: Option<Value>,
    /// `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`).
    task_id: Option<Value>,
    request_state: Option<String>,
    input_responses: Option<JsonObject>,
}

impl Peek {
    /// Reads `request`'s params (none read as empty); -32602 when they are not an object.
    pub(crate) fn of(request: &Request) -> Result<Peek, ErrorObject> {
        match request.params.as_deref() {
            None => Ok(Peek::default()),
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| invalid_params(&request.method, e)),
        }
    }

    /// The envelope's protocol version, when `_meta` has one (as a string).
    pub(crate) fn version(&self) -> Option<&str> {
        self.meta.as_ref()?.get(PROTOCOL_VERSION_KEY)?.as_str()
    }

    /// Whether the request is of the stateless era: its envelope names no `initialize`-era
    /// version (an unknown one included: it is refused naming those the gateway speaks).
    fn is_stateless(&self) -> bool {
        self.version()
            .is_some_and(|version| !ProtocolVersion::SUPPORTED.iter().any(|known| known.as_str() == version))
    }

    /// What a stateless request says, once its envelope is checked: a version the gateway
    /// speaks (-32022 naming those it does), and the client's capabilities (-32602).
    pub(crate) fn stateless(self, method: &str) -> Result<Box<Stateless>, ErrorObject> {
        let missing = |key: &str| {
            invalid_params(
                method,
                format!("_meta has no {key}: a request of the stateless era carries the envelope"),
            )
        };
        let meta: JsonObject = match &self.meta {
            Some(Value::Object(meta)) => meta.clone(),
            Some(_) => return Err(invalid_params(method, "_meta is not an object")),
            None => return Err(missing(PROTOCOL_VERSION_KEY)),
        };
        if !meta.contains_key(PROTOCOL_VERSION_KEY) {
            return Err(missing(PROTOCOL_VERSION_KEY));
        }
        if !meta.contains_key(CLIENT_CAPABILITIES_KEY) {
            return Err(missing(CLIENT_CAPABILITIES_KEY));
        }
        let envelope = RequestEnvelope::read_from_meta(&meta).map_err(|e| invalid_params(method, e))?;
        if !envelope.version().is_ok_and(ProtocolVersion::is_stateless) {
            return Err(unsupported_version(&envelope.protocol_version));
        }
        let named = match plexus::protocol::http_headers::name_param(method) {
            Some("name") => self.name,
            Some("uri") => self.uri,
            Some("taskId") => self.task_id,
            _ => None,
        };
        Ok(Box::new(Stateless {
            progress_token: meta.get("progressToken").cloned(),
            capabilities: envelope.client_capabilities,
            named: named.and_then(|named| named.as_str().map(str::to_owned)),
            request_state: self.request_state,
            input_responses: self.input_responses,
        }))
    }
}

/// -32022 for a stateless request that asked for `requested`, naming the stateless versions the
/// gateway speaks.
pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    let data = UnsupportedVersionData {
        supported: ProtocolVersion::STATELESS
            .iter()
            .map(|v| v.as_str().to_owned())
            .collect(),
        requested: requested.to_owned(),
        extra: JsonObject::new(),
    };
    let message = format!("the gateway does not speak protocol version {requested:?}");
    data.to_error(message.clone())
        .unwrap_or_else(|_| ErrorObject::new(plexus::protocol::errors::UNSUPPORTED_PROTOCOL_VERSION, message))
}

impl Session {
    /// How `request` of this session's client is answered, deciding the session's era when it
    /// is the first to tell: `initialize` (or any request but `ping` without the envelope) makes
    /// it of the `initialize` era, `server/discover` or a request with the stateless envelope of
    /// the stateless era. The error answers the request instead.
    pub(crate) fn route(&self, request: &Request) -> Result<Route, ErrorObject> {
        let decided = self.era();
        // A connection of the `initialize` era never has its requests' params read here.
        if decided == Some(Era::Initialize) {
            return Ok(Route::Initialize);
        }
        let method = request.method.as_ref();
        let peek = Peek::of(request);
        let stateless = method == methods::SERVER_DISCOVER || peek.as_ref().is_ok_and(Peek::is_stateless);
        match (decided, stateless) {
            // What a server of both eras answers a handshake after it answered the probe: the
            // client's probe may have given up before the answer came (its backends starting),
            // and this tells it to ask again.
            (Some(_), false) if method == methods::INITIALIZE => {
                let requested = params_of(request)
                    .ok()
                    .and_then(|params| params.get("protocolVersion")?.as_str().map(str::to_owned))
                    .unwrap_or_default();
                Err(unsupported_version(&requested))
            }
            (Some(_), false) => Err(peek.map_or_else(
                |error| error,
                |_| {
                    invalid_params(
                        method,
                        format!(
                            "_meta has no {PROTOCOL_VERSION_KEY} of a stateless revision: this client speaks the \
                             stateless era (it began with server/discover or an envelope), in which every request \
                             carries the envelope"
                        ),
                    )
                },
            )),
            (_, true) => {
                self.set_era(Era::Stateless);
                Ok(Route::Stateless(peek?.stateless(method)?))
            }
            (None, false) => {
                if method != methods::PING {
                    self.set_era(Era::Initialize);
                }
                Ok(Route::Initialize)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use plexus::jsonrpc::ErrorCode;
    use serde_json::json;

    use super::*;

    fn request(method: &'static str, params: &Value) -> Request {
        let raw = serde_json::value::to_raw_value(params).unwrap();
        Request {
            id: plexus::jsonrpc::RequestId::Number(1),
            method: method.into(),
            params: Some(raw),
        }
    }

    fn envelope(version: &str) -> Value {
        json!({"_meta": {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {"elicitation": {}}}})
    }

    #[test]
    fn server_discover_makes_a_connection_stateless_for_good() {
        let session = Session::new(None);
        let Ok(Route::Stateless(stateless)) = session.route(&request("server/discover", &envelope("2026-07-28")))
        else {
            panic!("discover is stateless")
        };
        assert!(stateless.capabilities.elicitation.is_some());
        assert_eq!(session.era(), Some(Era::Stateless));
        // A request without the envelope is refused, saying why.
        let refused = session.route(&request("tools/list", &json!({}))).err().unwrap();
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
        assert!(
            refused
                .message
                .starts_with("invalid tools/list params: _meta has no io.modelcontextprotocol/protocolVersion"),
            "{}",
            refused.message
        );
        // `initialize` gets what a server of both eras answers after the probe: try the probe.
        let refused = session
            .route(&request("initialize", &json!({"protocolVersion": "2025-11-25"})))
            .err()
            .unwrap();
        assert_eq!(refused.code, plexus::protocol::errors::UNSUPPORTED_PROTOCOL_VERSION);
        let data: Value = serde_json::from_str(refused.data.unwrap().get()).unwrap();
        assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}));
        // A version the gateway does not speak is refused naming those it does.
        let refused = session
            .route(&request("tools/list", &envelope("2027-01-01")))
            .err()
            .unwrap();
        assert_eq!(refused.code, plexus::protocol::errors::UNSUPPORTED_PROTOCOL_VERSION);
        let data: Value = serde_json::from_str(refused.data.unwrap().get()).unwrap();
        assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "2027-01-01"}));
        // The capabilities are required.
        let bare = json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}});
        let refused = session.route(&request("tools/list", &bare)).err().unwrap();
        assert!(
            refused
                .message
                .contains("_meta has no io.modelcontextprotocol/clientCapabilities"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn initialize_keeps_a_connection_in_its_era_whatever_its_meta_says() {
        let session = Session::new(None);
        // `ping` decides nothing.
        assert!(matches!(
            session.route(&request("ping", &json!({}))),
            Ok(Route::Initialize)
        ));
        assert_eq!(session.era(), None);
        assert!(matches!(
            session.route(&request("initialize", &json!({"protocolVersion": "2025-11-25"}))),
            Ok(Route::Initialize)
        ));
        for method in ["server/discover", "tools/list"] {
            assert!(matches!(
                session.route(&request(method, &envelope("2026-07-28"))),
                Ok(Route::Initialize)
            ));
        }
        // An envelope naming an `initialize`-era version is no stateless request.
        let session = Session::new(None);
        assert!(matches!(
            session.route(&request("tools/list", &envelope("2025-11-25"))),
            Ok(Route::Initialize)
        ));
        assert_eq!(session.era(), Some(Era::Initialize));
    }
}
