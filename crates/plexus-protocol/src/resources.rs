//! Resources: listing, templates, reading, subscriptions and update notifications.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::{Annotations, CacheScope, Icon, InputResponses, JsonObject, RequestMeta};

/// A resource the server can read (also the body of a `resource_link` content block).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A display name (since 2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The raw size in bytes, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Display and use hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for a user interface (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A family of resources named by an RFC 6570 URI template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// The programmatic name.
    pub name: String,
    /// A display name (since 2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every matching resource, if they share one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display and use hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for a user interface (since 2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The text contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The binary contents of a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The base64-encoded bytes.
    pub blob: String,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The contents of a resource: text or binary, told apart by which of `text` and `blob` is present.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text (`text`).
    Text(TextResourceContents),
    /// Binary (`blob`).
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The resource's URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(text) => &text.uri,
            ResourceContents::Blob(blob) => &blob.uri,
        }
    }

    /// The MIME type, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(text) => text.mime_type.as_deref(),
            ResourceContents::Blob(blob) => blob.mime_type.as_deref(),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentsVisitor;

        impl<'de> Visitor<'de> for ContentsVisitor {
            type Value = ResourceContents;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("resource contents (an object with `text` or `blob`)")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ResourceContents, A::Error> {
                let object = JsonObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let (kind, decoded) = if object.contains_key("text") {
                    (
                        "text",
                        serde_json::from_value(object.into()).map(ResourceContents::Text),
                    )
                } else if object.contains_key("blob") {
                    (
                        "blob",
                        serde_json::from_value(object.into()).map(ResourceContents::Blob),
                    )
                } else {
                    let uri = object
                        .get("uri")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("<no uri>");
                    return Err(de::Error::custom(format_args!(
                        "resource contents of {uri} have neither `text` nor `blob`"
                    )));
                };
                decoded.map_err(|err| de::Error::custom(format_args!("invalid {kind} resource contents: {err}")))
            }
        }

        deserializer.deserialize_map(ContentsVisitor)
    }
}

paginated_result!(
    cacheable
    /// The result of `resources/list`: one page of resources.
    ListResourcesResult,
    /// The resources on this page.
    resources: Resource
);

paginated_result!(
    cacheable
    /// The result of `resources/templates/list`: one page of resource templates.
    ListResourceTemplatesResult,
    /// The templates on this page.
    resource_templates: ResourceTemplate
);

/// The params of a request about one resource: `resources/read`, `resources/subscribe` and
/// `resources/unsubscribe`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequestParams {
    /// The resource's URI.
    pub uri: String,
    /// `resources/read` only, stateless era: the answers to the input requests of an
    /// `input_required` result, on the retry (not written when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// `resources/read` only, stateless era: the `requestState` of the `input_required` result,
    /// echoed byte for byte on the retry (not written when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceRequestParams {
    /// The params naming the resource `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceRequestParams {
            uri: uri.into(),
            ..Self::default()
        }
    }
}

/// The params of `resources/read`.
pub type ReadResourceRequestParams = ResourceRequestParams;
/// The params of `resources/subscribe`.
pub type SubscribeRequestParams = ResourceRequestParams;
/// The params of `resources/unsubscribe`.
pub type UnsubscribeRequestParams = ResourceRequestParams;

/// The result of `resources/read`. In the stateless era the server may answer with an
/// [`InputRequiredResult`](crate::InputRequiredResult) instead; see
/// [`ResultOrInputRequired`](crate::ResultOrInputRequired).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents (one resource may have several parts, e.g. a directory).
    pub contents: Vec<ResourceContents>,
    /// How long the contents stay fresh, in milliseconds (2026-07-28); read it through
    /// [`ReadResourceResult::ttl_ms()`], which treats an absent or negative value as 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse the contents from a cache (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `notifications/resources/updated`: a subscribed resource changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// The URI of the resource that changed (possibly a sub-resource of the one subscribed to).
    pub uri: String,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}
