//! `subscriptions/listen` (stateless era): one long-lived request on whose stream the server sends
//! the change notifications the client asked for.

use plexus_jsonrpc::RequestId;
use serde::{Deserialize, Serialize};

use crate::{EnvelopeError, JsonObject, RequestMeta, ResultType, envelope};

/// Which notifications a `subscriptions/listen` asks for, or (in the acknowledgement) the ones the
/// server will send. Every field is opt-in: absent means not asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these resource URIs (what `resources/subscribe` did in
    /// the initialize era).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionFilter {
    /// Whether nothing is asked for.
    pub fn is_empty(&self) -> bool {
        !self.tools_list_changed.unwrap_or(false)
            && !self.prompts_list_changed.unwrap_or(false)
            && !self.resources_list_changed.unwrap_or(false)
            && self.resource_subscriptions.as_ref().is_none_or(Vec::is_empty)
            && self.extra.is_empty()
    }

    /// What this filter asks for that `acknowledged` (the server's answer) does not grant: the
    /// notifications the client will not get. Unknown fields are compared by value.
    #[must_use]
    pub fn not_granted_by(&self, acknowledged: &SubscriptionFilter) -> SubscriptionFilter {
        let flag = |asked: Option<bool>, granted: Option<bool>| {
            (asked.unwrap_or(false) && !granted.unwrap_or(false)).then_some(true)
        };
        let resource_subscriptions = self.resource_subscriptions.as_ref().and_then(|asked| {
            let granted = acknowledged.resource_subscriptions.as_deref().unwrap_or_default();
            let missing: Vec<String> = asked.iter().filter(|uri| !granted.contains(uri)).cloned().collect();
            (!missing.is_empty()).then_some(missing)
        });
        SubscriptionFilter {
            tools_list_changed: flag(self.tools_list_changed, acknowledged.tools_list_changed),
            prompts_list_changed: flag(self.prompts_list_changed, acknowledged.prompts_list_changed),
            resources_list_changed: flag(self.resources_list_changed, acknowledged.resources_list_changed),
            resource_subscriptions,
            extra: self
                .extra
                .iter()
                .filter(|(key, value)| acknowledged.extra.get(*key) != Some(*value))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        }
    }
}

/// The params of `subscriptions/listen`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// The notifications asked for.
    pub notifications: SubscriptionFilter,
    /// Request metadata (the envelope, and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsListenRequestParams {
    /// The params asking for `notifications` (add the envelope to `meta`).
    pub fn new(notifications: SubscriptionFilter) -> Self {
        SubscriptionsListenRequestParams {
            notifications,
            ..Self::default()
        }
    }
}

/// The params of `notifications/subscriptions/acknowledged`: the first message of a subscription,
/// saying which of the notifications asked for the server will send.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The notifications the server will send (a subset of those asked for).
    pub notifications: SubscriptionFilter,
    /// Metadata (the subscription id), kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// The subscription acknowledged: the id of its listen request.
    pub fn subscription_id(&self) -> Result<Option<RequestId>, EnvelopeError> {
        envelope::subscription_id(self.meta.as_ref())
    }
}

/// The result of `subscriptions/listen`: the server ended the subscription gracefully.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// `resultType` (`complete`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Metadata (the subscription id, and maybe the server's identity), kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl SubscriptionsListenResult {
    /// The subscription that ended: the id of its listen request.
    pub fn subscription_id(&self) -> Result<Option<RequestId>, EnvelopeError> {
        envelope::subscription_id(self.meta.as_ref())
    }
}
