//! Types shared by every part of the schema: roles, annotations, icons, implementation info, progress
//! tokens, request `_meta`, pagination and the empty result.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::JsonObject;

/// The sender or recipient of a message or content block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user (or the client on their behalf).
    User,
    /// The model.
    Assistant,
}

/// Hints to the client about how to use or display an object (content blocks, resources).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is meant for: the user, the model, or both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important the object is, from 0 (optional) to 1 (required).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub priority: Option<f64>,
    /// When the object was last modified, as an ISO 8601 timestamp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// The background an [`Icon`] is designed for.
    pub enum IconTheme {
        /// A light background.
        Light = "light",
        /// A dark background.
        Dark = "dark",
    }
}

/// An icon a user interface can show for a server, tool, prompt or resource (since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `http(s):` URL or a `data:` URI of the image.
    pub src: String,
    /// The image's MIME type, when the source does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes the icon fits, as `WxH` strings or `any`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The background the icon is designed for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The name and version of an MCP client or server (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// The programmatic name.
    pub name: String,
    /// The version.
    pub version: String,
    /// A display name (since 2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A human-readable description (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons for a user interface (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// The implementation's website (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            ..Self::default()
        }
    }
}

/// The token that ties `notifications/progress` to the request that asked for them: a string or an
/// integer, chosen by the requester.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

impl fmt::Display for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressToken::Number(n) => write!(f, "{n}"),
            ProgressToken::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        ProgressToken::Number(n)
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken::String(s.to_owned())
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken::String(s)
    }
}

impl Serialize for ProgressToken {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProgressToken::Number(n) => serializer.serialize_i64(*n),
            ProgressToken::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TokenVisitor;

        impl Visitor<'_> for TokenVisitor {
            type Value = ProgressToken;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a progress token (string or integer)")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ProgressToken, E> {
                Ok(ProgressToken::Number(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ProgressToken, E> {
                i64::try_from(v).map(ProgressToken::Number).map_err(|_| {
                    E::custom(format_args!(
                        "progress token {v} does not fit in a 64-bit signed integer"
                    ))
                })
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<ProgressToken, E> {
                Ok(ProgressToken::String(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<ProgressToken, E> {
                Ok(ProgressToken::String(v))
            }
        }

        deserializer.deserialize_any(TokenVisitor)
    }
}

/// The `_meta` object of request params: the optional progress token, and any other keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestMeta {
    /// Asks the receiver to send `notifications/progress` carrying this token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<ProgressToken>,
    /// Other `_meta` keys, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestMeta {
    /// A `_meta` that asks for progress notifications with `token`.
    pub fn with_progress_token(token: impl Into<ProgressToken>) -> Self {
        RequestMeta {
            progress_token: Some(token.into()),
            extra: JsonObject::new(),
        }
    }
}

/// The params of a request that carries nothing but `_meta` (`ping`, `roots/list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of a notification that carries nothing but `_meta` (`notifications/initialized`, the
/// `list_changed` notifications).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Notification metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of a paginated list request (`tools/list`, `resources/list`, `prompts/list`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// The `nextCursor` of the previous page; absent for the first page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PaginatedRequestParams {
    /// The params that ask for the page after `cursor` (the first page when `None`).
    pub fn page(cursor: Option<String>) -> Self {
        PaginatedRequestParams {
            cursor,
            ..Self::default()
        }
    }
}

/// A result that carries nothing (`ping`, `logging/setLevel`, `resources/subscribe`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// Result metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}
