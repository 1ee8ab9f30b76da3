//! Notifications the server sends, as subscribers see them.

use plexus_jsonrpc::{Notification, RawValue};
use plexus_protocol::{
    ElicitationCompleteNotificationParams, LoggingMessageNotificationParams, ResourceUpdatedNotificationParams, methods,
};

/// A notification from the server (progress and cancellation are handled by the session itself).
///
/// The variants with params box them: notifications wait for subscribers in a broadcast buffer
/// allocated whole with each session, whose every slot is as large as the largest variant.
#[derive(Debug, Clone)]
pub enum ServerNotification {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated(Box<ResourceUpdatedNotificationParams>),
    /// `notifications/message`: a log message.
    LogMessage(Box<LoggingMessageNotificationParams>),
    /// `notifications/elicitation/complete`: a URL-mode elicitation finished (since 2025-11-25).
    ElicitationComplete(Box<ElicitationCompleteNotificationParams>),
    /// Any other notification, or a known one whose params did not parse.
    Other {
        /// The method.
        method: String,
        /// The params, raw.
        params: Option<Box<RawValue>>,
    },
}

impl ServerNotification {
    pub(crate) fn parse(notification: Notification) -> Self {
        let Notification { method, params } = notification;
        let typed = match method.as_ref() {
            methods::TOOLS_LIST_CHANGED => Some(ServerNotification::ToolsListChanged),
            methods::PROMPTS_LIST_CHANGED => Some(ServerNotification::PromptsListChanged),
            methods::RESOURCES_LIST_CHANGED => Some(ServerNotification::ResourcesListChanged),
            methods::RESOURCES_UPDATED => params
                .as_deref()
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .map(ServerNotification::ResourceUpdated),
            methods::LOGGING_MESSAGE => params
                .as_deref()
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .map(ServerNotification::LogMessage),
            methods::ELICITATION_COMPLETE => params
                .as_deref()
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .map(ServerNotification::ElicitationComplete),
            _ => None,
        };
        typed.unwrap_or_else(|| ServerNotification::Other {
            method: method.into_owned(),
            params,
        })
    }
}
