//! The params of the notifications both sides send: progress and cancellation.

use plexus_jsonrpc::RequestId;
use serde::{Deserialize, Serialize};

use crate::{JsonObject, ProgressToken};

/// The params of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token of the request this reports on.
    pub progress_token: ProgressToken,
    /// The progress so far; increases with every notification.
    #[serde(serialize_with = "crate::number::serialize")]
    pub progress: f64,
    /// The total, if known.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub total: Option<f64>,
    /// A human-readable note (since 2025-03-26).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ProgressNotificationParams {
    /// Progress `progress` of `total` for the request that sent `token`.
    pub fn new(token: impl Into<ProgressToken>, progress: f64, total: Option<f64>) -> Self {
        ProgressNotificationParams {
            progress_token: token.into(),
            progress,
            total,
            message: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The params of `notifications/cancelled`: the sender no longer wants the answer to a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The request to cancel. Always present for ordinary requests (and required before 2025-11-25);
    /// 2025-11-25 made it optional because tasks are cancelled with `tasks/cancel` instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs or the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl CancelledNotificationParams {
    /// Cancels request `id`, with an optional reason.
    pub fn new(id: RequestId, reason: Option<String>) -> Self {
        CancelledNotificationParams {
            request_id: Some(id),
            reason,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}
