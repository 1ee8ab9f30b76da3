//! The stateless era's `_meta` keys: the envelope every request carries
//! (`io.modelcontextprotocol/protocolVersion`, `clientCapabilities`, `clientInfo`, `logLevel`), the
//! server's identity on results (`serverInfo`) and the subscription a notification belongs to
//! (`subscriptionId`).
//!
//! The envelope is read from and written into a `_meta` object next to its other keys (a progress
//! token, trace context, an extension's keys), which are never touched. On a typed request's params
//! it goes through [`RequestMeta::envelope`] and [`RequestMeta::set_envelope`]; on params already
//! encoded as JSON through [`RequestEnvelope::write_to_params`] and
//! [`RequestEnvelope::read_from_params`].
//!
//! ```
//! use plexus_protocol::{ClientCapabilities, Implementation, PaginatedRequestParams, ProtocolVersion, RequestEnvelope};
//!
//! let envelope = RequestEnvelope::new(ProtocolVersion::LATEST_STATELESS, ClientCapabilities::default())
//!     .with_client_info(Implementation::new("plexus", "0.1.0"));
//! let params = envelope.envelop(&PaginatedRequestParams::default()).unwrap();
//! assert_eq!(
//!     serde_json::Value::Object(params.clone()),
//!     serde_json::json!({"_meta": {
//!         "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!         "io.modelcontextprotocol/clientCapabilities": {},
//!         "io.modelcontextprotocol/clientInfo": {"name": "plexus", "version": "0.1.0"},
//!     }})
//! );
//! assert_eq!(RequestEnvelope::read_from_params(&params).unwrap(), envelope);
//! ```

use plexus_jsonrpc::RequestId;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::version::{ParseVersionError, ProtocolVersion};
use crate::{ClientCapabilities, Implementation, JsonObject, LoggingLevel, RequestMeta};

/// `_meta` key of a request: the protocol version it is written in (required in the stateless era;
/// over HTTP equal to the `MCP-Protocol-Version` header).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of a request: the client's capabilities for this request (required; `{}` for none).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of a request: who the client is (optional, but clients should send it).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of a request: the least severe log level the client wants `notifications/message`
/// for while the request runs (none without it).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of a result: who the server is (optional).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of a notification delivered on a `subscriptions/listen` stream (and of the listen
/// result): the JSON-RPC id of the listen request it belongs to.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The per-request envelope of the stateless era: what an initialize-era session fixed once, sent
/// with every request in `params._meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestEnvelope {
    /// The protocol version (`io.modelcontextprotocol/protocolVersion`). A string, because a
    /// request read back may name a version this crate does not know; see
    /// [`RequestEnvelope::version`].
    pub protocol_version: String,
    /// The client's capabilities for this request (`io.modelcontextprotocol/clientCapabilities`).
    pub client_capabilities: ClientCapabilities,
    /// Who the client is (`io.modelcontextprotocol/clientInfo`).
    pub client_info: Option<Implementation>,
    /// The log level asked for (`io.modelcontextprotocol/logLevel`).
    pub log_level: Option<LoggingLevel>,
}

/// The envelope could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// A required `_meta` key is absent (a server answers this with `-32602`).
    #[error("the request's _meta lacks the required key {key:?}")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A `_meta` key's value does not have the schema's type.
    #[error("the _meta key {key:?} is invalid: {source}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// Why it does not decode.
        source: serde_json::Error,
    },
    /// The params have a `_meta` member that is not an object (or the request has no params
    /// object to read from).
    #[error("the params' _meta is not an object")]
    MetaNotAnObject,
    /// The params are not a JSON object.
    #[error("the params are not a JSON object")]
    ParamsNotAnObject,
    /// The params or an envelope value could not be encoded.
    #[error("cannot encode the request: {0}")]
    Encode(#[source] serde_json::Error),
}

impl RequestEnvelope {
    /// An envelope for `version` declaring `capabilities`, without client info or log level.
    pub fn new(version: ProtocolVersion, capabilities: ClientCapabilities) -> Self {
        RequestEnvelope {
            protocol_version: version.as_str().to_owned(),
            client_capabilities: capabilities,
            client_info: None,
            log_level: None,
        }
    }

    /// The same envelope naming the client.
    #[must_use]
    pub fn with_client_info(mut self, info: Implementation) -> Self {
        self.client_info = Some(info);
        self
    }

    /// The same envelope asking for log messages at `level` and above.
    #[must_use]
    pub fn with_log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// The protocol version, if this crate knows it.
    pub fn version(&self) -> Result<ProtocolVersion, ParseVersionError> {
        self.protocol_version.parse()
    }

    /// Writes the envelope into a `_meta` object: its four keys become exactly this envelope's (an
    /// absent client info or log level removes the key), every other key is kept.
    pub fn write_to_meta(&self, meta: &mut JsonObject) -> Result<(), EnvelopeError> {
        meta.insert(
            PROTOCOL_VERSION_KEY.to_owned(),
            Value::String(self.protocol_version.clone()),
        );
        meta.insert(CLIENT_CAPABILITIES_KEY.to_owned(), to_value(&self.client_capabilities)?);
        match &self.client_info {
            Some(info) => meta.insert(CLIENT_INFO_KEY.to_owned(), to_value(info)?),
            None => meta.shift_remove(CLIENT_INFO_KEY),
        };
        match self.log_level {
            Some(level) => meta.insert(LOG_LEVEL_KEY.to_owned(), Value::String(level.as_str().to_owned())),
            None => meta.shift_remove(LOG_LEVEL_KEY),
        };
        Ok(())
    }

    /// Reads the envelope from a `_meta` object. The protocol version and client capabilities are
    /// required; any other key is ignored.
    pub fn read_from_meta(meta: &JsonObject) -> Result<RequestEnvelope, EnvelopeError> {
        let protocol_version = required(meta, PROTOCOL_VERSION_KEY)?;
        let client_capabilities = required(meta, CLIENT_CAPABILITIES_KEY)?;
        Ok(RequestEnvelope {
            protocol_version,
            client_capabilities,
            client_info: optional(meta, CLIENT_INFO_KEY)?,
            log_level: optional(meta, LOG_LEVEL_KEY)?,
        })
    }

    /// Writes the envelope into the `_meta` of a params object, creating `_meta` when absent (see
    /// [`RequestEnvelope::write_to_meta`]).
    pub fn write_to_params(&self, params: &mut JsonObject) -> Result<(), EnvelopeError> {
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        let Value::Object(meta) = meta else {
            return Err(EnvelopeError::MetaNotAnObject);
        };
        self.write_to_meta(meta)
    }

    /// Reads the envelope from the `_meta` of a params object (an absent `_meta` lacks the protocol
    /// version).
    pub fn read_from_params(params: &JsonObject) -> Result<RequestEnvelope, EnvelopeError> {
        match params.get("_meta") {
            Some(Value::Object(meta)) => Self::read_from_meta(meta),
            Some(_) => Err(EnvelopeError::MetaNotAnObject),
            None => Err(EnvelopeError::Missing {
                key: PROTOCOL_VERSION_KEY,
            }),
        }
    }

    /// Encodes `params` (any request's params type; `()` for a request without any) as a JSON
    /// object and writes the envelope into its `_meta`: the params of a stateless-era request.
    pub fn envelop<P: Serialize + ?Sized>(&self, params: &P) -> Result<JsonObject, EnvelopeError> {
        let mut object = match serde_json::to_value(params).map_err(EnvelopeError::Encode)? {
            Value::Object(object) => object,
            Value::Null => JsonObject::new(),
            _ => return Err(EnvelopeError::ParamsNotAnObject),
        };
        self.write_to_params(&mut object)?;
        Ok(object)
    }

    /// A request `_meta` carrying just this envelope.
    pub fn to_request_meta(&self) -> Result<RequestMeta, EnvelopeError> {
        let mut meta = RequestMeta::default();
        meta.set_envelope(self)?;
        Ok(meta)
    }
}

impl RequestMeta {
    /// The stateless-era envelope this `_meta` carries (the keys live in
    /// [`extra`](RequestMeta::extra), so an initialize-era request decodes and encodes exactly as
    /// before).
    pub fn envelope(&self) -> Result<RequestEnvelope, EnvelopeError> {
        RequestEnvelope::read_from_meta(&self.extra)
    }

    /// Writes `envelope` into this `_meta`, keeping the progress token and every other key.
    pub fn set_envelope(&mut self, envelope: &RequestEnvelope) -> Result<(), EnvelopeError> {
        envelope.write_to_meta(&mut self.extra)
    }
}

/// The server's identity in a result's `_meta` (`io.modelcontextprotocol/serverInfo`), if present.
pub fn server_info(meta: Option<&JsonObject>) -> Result<Option<Implementation>, EnvelopeError> {
    meta.map_or(Ok(None), |meta| optional(meta, SERVER_INFO_KEY))
}

/// Writes the server's identity into a result's `_meta`, keeping its other keys.
pub fn set_server_info(meta: &mut JsonObject, info: &Implementation) -> Result<(), EnvelopeError> {
    meta.insert(SERVER_INFO_KEY.to_owned(), to_value(info)?);
    Ok(())
}

/// The subscription a notification (or a `subscriptions/listen` result) belongs to, from its
/// `_meta` (`io.modelcontextprotocol/subscriptionId`): the id of the listen request. `None` for a
/// notification that came on the response stream of an ordinary request.
pub fn subscription_id(meta: Option<&JsonObject>) -> Result<Option<RequestId>, EnvelopeError> {
    meta.map_or(Ok(None), |meta| optional(meta, SUBSCRIPTION_ID_KEY))
}

/// [`subscription_id`] from a notification's raw `params` (absent params have none).
pub fn notification_subscription_id(params: Option<&Value>) -> Result<Option<RequestId>, EnvelopeError> {
    match params.and_then(|params| params.get("_meta")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(meta)) => subscription_id(Some(meta)),
        Some(_) => Err(EnvelopeError::MetaNotAnObject),
    }
}

/// Writes the subscription id into a notification's or a listen result's `_meta`.
pub fn set_subscription_id(meta: &mut JsonObject, id: &RequestId) -> Result<(), EnvelopeError> {
    meta.insert(SUBSCRIPTION_ID_KEY.to_owned(), to_value(id)?);
    Ok(())
}

fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, EnvelopeError> {
    serde_json::to_value(value).map_err(EnvelopeError::Encode)
}

fn optional<T: DeserializeOwned>(meta: &JsonObject, key: &'static str) -> Result<Option<T>, EnvelopeError> {
    meta.get(key)
        .map(|value| T::deserialize(value).map_err(|source| EnvelopeError::Invalid { key, source }))
        .transpose()
}

fn required<T: DeserializeOwned>(meta: &JsonObject, key: &'static str) -> Result<T, EnvelopeError> {
    optional(meta, key)?.ok_or(EnvelopeError::Missing { key })
}
