//! Elicitation: a server asks the client's user for input, through a form (since 2025-06-18) or by
//! sending them to a URL (since 2025-11-25).

mod answer;
mod schema;

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::tasks::TaskMetadata;
use crate::{JsonObject, RequestMeta};

pub use answer::AnswerError;
pub use schema::{
    BooleanSchema, LegacyTitledEnumSchema, NumberSchema, NumberType, PrimitiveSchemaDefinition, RequestedSchema,
    StringFormat, StringSchema, TitledEnumItems, TitledEnumOption, TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema, UntitledEnumItems, UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};

/// The params of a form-mode `elicitation/create`: a message and a flat schema of the fields to ask for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// What to tell the user.
    pub message: String,
    /// The fields to ask for.
    pub requested_schema: RequestedSchema,
    /// Asks for task-augmented execution (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of a URL-mode `elicitation/create` (since 2025-11-25): the user is sent to a URL, out of
/// band, for input that must not pass through the client (credentials, payments).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestUrlParams {
    /// What to tell the user: why the URL is needed.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// The id `notifications/elicitation/complete` will name. Required in 2025-11-25; later
    /// revisions dropped it, so a request without one still decodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Asks for task-augmented execution (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

tagged_enum! {
    /// The params of `elicitation/create`, tagged by `mode`; a request without `mode` is a form (the
    /// only kind before 2025-11-25). Encode and decode through this enum: the variant structs do not
    /// carry the `mode` field.
    pub enum ElicitRequestParams {
        what: "elicitation request",
        tag: "mode", absent: "form";
        /// `"form"`: ask through a form the client renders.
        Form(ElicitRequestFormParams) = "form",
        /// `"url"`: send the user to a URL (since 2025-11-25).
        Url(ElicitRequestUrlParams) = "url",
    }
}

impl ElicitRequestParams {
    /// The message to show the user, whatever the mode (empty for an unknown mode without one).
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(form) => &form.message,
            ElicitRequestParams::Url(url) => &url.message,
            ElicitRequestParams::Unknown(object) => {
                object.get("message").and_then(serde_json::Value::as_str).unwrap_or("")
            }
        }
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted the form, or agreed to open the URL.
    Accept,
    /// Explicitly refused.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// One submitted form value: a string, an integer, a number, a boolean or (for multi-select fields,
/// since 2025-11-25) a list of strings.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A string (also a single-select choice).
    String(String),
    /// An integer.
    Integer(i64),
    /// A number that is not an integer.
    Number(f64),
    /// A boolean.
    Boolean(bool),
    /// The choices of a multi-select field.
    StringArray(Vec<String>),
}

impl<'de> Deserialize<'de> for ElicitValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = ElicitValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a form value (string, number, boolean or array of strings)")
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ElicitValue, E> {
                Ok(ElicitValue::Boolean(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ElicitValue, E> {
                Ok(ElicitValue::Integer(v))
            }

            #[allow(clippy::cast_precision_loss)] // beyond i64 only an approximation can be kept
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ElicitValue, E> {
                Ok(i64::try_from(v).map_or(ElicitValue::Number(v as f64), ElicitValue::Integer))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ElicitValue, E> {
                Ok(ElicitValue::Number(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<ElicitValue, E> {
                Ok(ElicitValue::String(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<ElicitValue, E> {
                Ok(ElicitValue::String(v))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ElicitValue, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(ElicitValue::StringArray)
            }
        }

        deserializer.deserialize_any(ValueVisitor)
    }
}

/// The result of `elicitation/create` (sent by the client).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values, by field name: only for an accepted form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitResult {
    /// The user accepted: a submitted form's values, or `None` for URL mode.
    pub fn accept(content: Option<BTreeMap<String, ElicitValue>>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The user declined.
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `notifications/elicitation/complete`: a URL-mode elicitation finished (since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The [`ElicitRequestUrlParams::elicitation_id`] of the finished elicitation.
    pub elicitation_id: String,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `data` of a JSON-RPC error with code `-32042` (`ErrorCode::URL_ELICITATION_REQUIRED`): the
/// request needs these URL-mode elicitations to complete first (since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UrlElicitationRequiredErrorData {
    /// The elicitations (URL mode; decoded through [`ElicitRequestParams`] so that they keep their
    /// `mode`).
    pub elicitations: Vec<ElicitRequestParams>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}
