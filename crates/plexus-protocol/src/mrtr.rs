//! Multi-round-trip requests (stateless era): `resultType`, `input_required` results, the input
//! requests they carry and the responses a client retries with.
//!
//! `tools/call`, `prompts/get` and `resources/read` may answer with an [`InputRequiredResult`]: the
//! server needs the client to elicit, sample or list roots first. The client fulfils the
//! [`InputRequests`], then sends the original request again, with a new id, the
//! [`InputResponses`] under the same keys, and the `requestState` echoed byte for byte (or none when
//! the server sent none): [`InputRequiredResult::prepare_retry`].
//!
//! ```
//! use plexus_protocol::{CallToolRequestParams, CallToolResult, ElicitResult, InputResponse, InputResponses, ResultOrInputRequired};
//!
//! let answer: ResultOrInputRequired<CallToolResult> = serde_json::from_str(
//!     r#"{"resultType":"input_required","requestState":"s-1",
//!         "inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Go?",
//!             "requestedSchema":{"type":"object","properties":{}}}}}}"#,
//! )
//! .unwrap();
//! let ResultOrInputRequired::InputRequired(input) = answer else { unreachable!() };
//! let mut responses = InputResponses::new();
//! responses.insert("confirm".to_owned(), InputResponse::Elicit(ElicitResult::accept(None)));
//! let mut params = CallToolRequestParams::new("deploy", None);
//! input.prepare_retry(&mut params, responses);
//! assert_eq!(params.request_state.as_deref(), Some("s-1"));
//! ```

use std::fmt;
use std::str::FromStr;

use indexmap::IndexMap;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::{
    CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    GetPromptRequestParams, JsonObject, ListRootsResult, ReadResourceRequestParams, RequestParams,
};

/// What kind of result a stateless-era server sent (`resultType`). An absent `resultType` means
/// [`ResultType::Complete`] (servers of earlier revisions send none); `"task"` is the tasks
/// extension's; any other value is invalid ([`ResultTypeError::Unknown`]), as the specification
/// requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// `"complete"`: the final result of the request.
    Complete,
    /// `"input_required"`: an [`InputRequiredResult`]; retry with the input it asks for.
    InputRequired,
    /// `"task"`: the tasks extension's answer to a `tools/call`, a [`DetailedTask`] to poll
    /// (only to a request whose client declared the extension).
    ///
    /// [`DetailedTask`]: crate::DetailedTask
    Task,
}

/// A `resultType` that is neither absent, `"complete"`, `"input_required"` nor `"task"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResultTypeError {
    /// A string this crate does not know.
    #[error("unknown resultType {value:?} (expected \"complete\", \"input_required\" or \"task\")")]
    Unknown {
        /// The value.
        value: String,
    },
    /// Not a string.
    #[error("resultType must be a string, found {found}")]
    NotAString {
        /// The value, as JSON.
        found: String,
    },
    /// The result is not a JSON object.
    #[error("a result must be a JSON object, found {found}")]
    NotAnObject {
        /// The kind of JSON value found (`array`, `string`, ...).
        found: &'static str,
    },
}

impl ResultType {
    /// The value as spelled on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
        }
    }

    /// Classifies a raw result: its `resultType`, with an absent one read as `complete`.
    ///
    /// ```
    /// use plexus_protocol::ResultType;
    /// use serde_json::json;
    ///
    /// assert_eq!(ResultType::classify(&json!({"content": []})), Ok(ResultType::Complete));
    /// assert_eq!(ResultType::classify(&json!({"resultType": "input_required"})), Ok(ResultType::InputRequired));
    /// assert!(ResultType::classify(&json!({"resultType": "partial"})).is_err());
    /// ```
    pub fn classify(result: &Value) -> Result<ResultType, ResultTypeError> {
        match result {
            Value::Object(object) => Self::classify_object(object),
            other => Err(ResultTypeError::NotAnObject {
                found: plexus_jsonrpc::value_kind(other),
            }),
        }
    }

    /// [`ResultType::classify`] for a result already known to be an object.
    pub fn classify_object(result: &JsonObject) -> Result<ResultType, ResultTypeError> {
        match result.get("resultType") {
            None => Ok(ResultType::Complete),
            Some(Value::String(value)) => value.parse(),
            Some(other) => Err(ResultTypeError::NotAString {
                found: other.to_string(),
            }),
        }
    }
}

impl FromStr for ResultType {
    type Err = ResultTypeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "complete" => Ok(ResultType::Complete),
            "input_required" => Ok(ResultType::InputRequired),
            "task" => Ok(ResultType::Task),
            other => Err(ResultTypeError::Unknown {
                value: other.to_owned(),
            }),
        }
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(D::Error::custom)
    }
}

/// `elicitation/create` as an input request: ask the user (the params of a form or a URL).
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitInputRequest {
    /// What to ask.
    pub params: ElicitRequestParams,
    /// The params came without `mode` (a form, implicitly, as servers of the stateless era may
    /// send it); encoding leaves `mode` out again, so the request encodes back as it arrived.
    pub implicit_mode: bool,
    /// Fields this crate does not know, kept verbatim.
    pub extra: JsonObject,
}

/// The wire form of an [`ElicitInputRequest`], its params still JSON.
#[derive(Serialize, Deserialize)]
struct ElicitInputWire<E> {
    params: Value,
    #[serde(flatten)]
    extra: E,
}

impl Serialize for ElicitInputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut params = serde_json::to_value(&self.params).map_err(serde::ser::Error::custom)?;
        if let (true, ElicitRequestParams::Form(_), Value::Object(object)) =
            (self.implicit_mode, &self.params, &mut params)
        {
            object.shift_remove("mode");
        }
        ElicitInputWire {
            params,
            extra: &self.extra,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ElicitInputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = ElicitInputWire::<JsonObject>::deserialize(deserializer)?;
        let implicit_mode = wire
            .params
            .as_object()
            .is_some_and(|params| !params.contains_key("mode"));
        let params = ElicitRequestParams::deserialize(wire.params).map_err(D::Error::custom)?;
        Ok(ElicitInputRequest {
            params,
            implicit_mode,
            extra: wire.extra,
        })
    }
}

/// `sampling/createMessage` as an input request: sample from the client's model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingInputRequest {
    /// What to sample.
    pub params: CreateMessageRequestParams,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `roots/list` as an input request: list the client's roots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RootsInputRequest {
    /// The params (only `_meta`), when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<RequestParams>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

tagged_enum! {
    /// One input a server needs before it can complete a request: a server-to-client request
    /// without `jsonrpc` or `id`, tagged by `method`. A method this crate does not know is kept as
    /// `Unknown` (the client should answer that it cannot fulfil it, or give up).
    #[allow(clippy::large_enum_variant)] // a few per result, read once: boxing buys nothing.
    pub enum InputRequest {
        what: "input request",
        tag: "method";
        /// `elicitation/create` (needs the `elicitation` capability).
        Elicit(ElicitInputRequest) = "elicitation/create",
        /// `sampling/createMessage` (needs the `sampling` capability).
        Sampling(SamplingInputRequest) = "sampling/createMessage",
        /// `roots/list` (needs the `roots` capability).
        ListRoots(RootsInputRequest) = "roots/list",
    }
}

/// The input requests of an [`InputRequiredResult`], by the keys the server chose. Kept in the
/// order the server sent them (so that a person is asked in that order); a response goes under
/// the same key.
pub type InputRequests = IndexMap<String, InputRequest>;

/// The client's answers to [`InputRequests`], under the same keys, in the order they are inserted.
pub type InputResponses = IndexMap<String, InputResponse>;

/// The answer to one [`InputRequest`]: the plain result of the request it stands for (no
/// `resultType`). Decoded by the field that tells the results apart (`action` for an elicitation,
/// `roots` for a list of roots, `model` or `role` for a sampled message); any other object is kept
/// as `Unknown`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // a few per retry, built once: boxing buys nothing.
pub enum InputResponse {
    /// The answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// The answer to `sampling/createMessage`.
    Sampling(CreateMessageResult),
    /// The answer to `roots/list`.
    ListRoots(ListRootsResult),
    /// An object of no kind this crate knows, kept verbatim.
    Unknown(JsonObject),
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fn decode<T: DeserializeOwned, E: serde::de::Error>(object: JsonObject, kind: &str) -> Result<T, E> {
            serde_json::from_value(Value::Object(object))
                .map_err(|err| E::custom(format_args!("invalid input response ({kind}): {err}")))
        }
        let object = JsonObject::deserialize(deserializer)?;
        if object.contains_key("action") {
            decode(object, "elicitation result").map(InputResponse::Elicit)
        } else if object.contains_key("roots") {
            decode(object, "roots").map(InputResponse::ListRoots)
        } else if object.contains_key("model") || object.contains_key("role") {
            decode(object, "sampling result").map(InputResponse::Sampling)
        } else {
            Ok(InputResponse::Unknown(object))
        }
    }
}

impl From<ElicitResult> for InputResponse {
    fn from(result: ElicitResult) -> Self {
        InputResponse::Elicit(result)
    }
}

impl From<CreateMessageResult> for InputResponse {
    fn from(result: CreateMessageResult) -> Self {
        InputResponse::Sampling(result)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(result: ListRootsResult) -> Self {
        InputResponse::ListRoots(result)
    }
}

/// A stateless-era result saying the server needs input first (`resultType: "input_required"`).
/// The specification wants at least one of `inputRequests` and `requestState`; one with neither
/// still decodes (check [`InputRequiredResult::is_empty`] before retrying).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "InputRequiredWire", try_from = "InputRequiredWire")]
pub struct InputRequiredResult {
    /// What the server needs, by key (absent when it only wants the request sent again).
    pub input_requests: Option<InputRequests>,
    /// Opaque state to echo byte for byte in the retry's `requestState`.
    pub request_state: Option<String>,
    /// Metadata, kept verbatim.
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    pub extra: JsonObject,
}

/// The wire form of [`InputRequiredResult`]: the same fields and a `resultType` that must be
/// `input_required`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequiredWire {
    result_type: ResultType,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_requests: Option<InputRequests>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_state: Option<String>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<JsonObject>,
    #[serde(flatten)]
    extra: JsonObject,
}

impl From<InputRequiredResult> for InputRequiredWire {
    fn from(result: InputRequiredResult) -> Self {
        InputRequiredWire {
            result_type: ResultType::InputRequired,
            input_requests: result.input_requests,
            request_state: result.request_state,
            meta: result.meta,
            extra: result.extra,
        }
    }
}

impl TryFrom<InputRequiredWire> for InputRequiredResult {
    type Error = String;

    fn try_from(wire: InputRequiredWire) -> Result<Self, Self::Error> {
        if wire.result_type != ResultType::InputRequired {
            return Err(format!(
                "an input-required result must have resultType \"input_required\", not {:?}",
                wire.result_type.as_str()
            ));
        }
        Ok(InputRequiredResult {
            input_requests: wire.input_requests,
            request_state: wire.request_state,
            meta: wire.meta,
            extra: wire.extra,
        })
    }
}

impl InputRequiredResult {
    /// Whether the server sent neither input requests nor state (a malformed result: a retry
    /// would be the same request again).
    pub fn is_empty(&self) -> bool {
        self.input_requests.as_ref().is_none_or(IndexMap::is_empty) && self.request_state.is_none()
    }

    /// Makes `params` (those of the original request) the params of the retry: `responses` as
    /// `inputResponses` (none when empty), and this result's `requestState` echoed exactly, or
    /// removed when the server sent none. The caller sends the retry with a new request id.
    pub fn prepare_retry<P: InputResponseParams>(&self, params: &mut P, responses: InputResponses) {
        let responses = (!responses.is_empty()).then_some(responses);
        params.set_input(responses, self.request_state.clone());
    }
}

/// The params of the requests that may answer `input_required` (`tools/call`, `prompts/get`,
/// `resources/read`): where a retry's `inputResponses` and `requestState` go.
pub trait InputResponseParams {
    /// The answers carried, if any.
    fn input_responses(&self) -> Option<&InputResponses>;
    /// The echoed request state, if any.
    fn request_state(&self) -> Option<&str>;
    /// Sets both (`None` removes them: a first request, or one unrelated to an earlier round).
    fn set_input(&mut self, responses: Option<InputResponses>, request_state: Option<String>);
}

macro_rules! input_response_params {
    ($($params:ty),+) => {
        $(
            impl InputResponseParams for $params {
                fn input_responses(&self) -> Option<&InputResponses> {
                    self.input_responses.as_ref()
                }

                fn request_state(&self) -> Option<&str> {
                    self.request_state.as_deref()
                }

                fn set_input(&mut self, responses: Option<InputResponses>, request_state: Option<String>) {
                    self.input_responses = responses;
                    self.request_state = request_state;
                }
            }
        )+
    };
}

input_response_params!(CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams);

/// The answer to a request that may need input (`tools/call`, `prompts/get`, `resources/read` in
/// the stateless era): its final result, or an [`InputRequiredResult`]. Decoding reads
/// `resultType` first ([`ResultType::classify`]): absent or `complete` decodes `T` (which keeps
/// `resultType` in its `extra`, so the result encodes back unchanged), `input_required` the
/// input-required result, anything else is an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per response, unwrapped at once: boxing buys nothing.
pub enum ResultOrInputRequired<T> {
    /// The final result.
    Complete(T),
    /// The server needs input; retry.
    InputRequired(InputRequiredResult),
}

impl<T: DeserializeOwned> ResultOrInputRequired<T> {
    /// Decodes a raw result (see the type's documentation).
    pub fn from_value(result: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(result)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for ResultOrInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = JsonObject::deserialize(deserializer)?;
        let result_type = ResultType::classify_object(&object).map_err(D::Error::custom)?;
        let value = Value::Object(object);
        match result_type {
            ResultType::Complete => serde_json::from_value(value)
                .map(ResultOrInputRequired::Complete)
                .map_err(D::Error::custom),
            ResultType::InputRequired => serde_json::from_value(value)
                .map(ResultOrInputRequired::InputRequired)
                .map_err(|err| D::Error::custom(format_args!("invalid input-required result: {err}"))),
            ResultType::Task => Err(D::Error::custom(
                "a task (resultType \"task\") where a result or an input-required result was expected",
            )),
        }
    }
}
