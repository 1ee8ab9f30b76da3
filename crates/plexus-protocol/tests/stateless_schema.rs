//! What a stateless-era client sends (every request with its `_meta` envelope, MRTR retries with
//! `inputResponses` and `requestState`, `subscriptions/listen`, the input responses) validates
//! against the JSON Schema of each stateless-era revision.

mod support;

#[path = "support/schema.rs"]
mod schema;

use std::collections::BTreeMap;

use plexus_jsonrpc::RequestId;
use plexus_protocol::messages::{
    CallToolRequest, CancelledNotification, CompleteRequest, DiscoverRequest, GetPromptRequest, ListPromptsRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest, ReadResourceRequest,
    SubscriptionsListenRequest,
};
use plexus_protocol::{
    CallToolRequestParams, CancelledNotificationParams, ClientCapabilities, CompleteRequestParams, CompletionReference,
    CreateMessageResult, ElicitResult, ElicitValue, ElicitationCapability, GetPromptRequestParams, Icon,
    Implementation, InputRequiredResult, InputResponse, InputResponses, JsonObject, ListRootsResult, LoggingLevel,
    PaginatedRequestParams, PromptReference, ProtocolVersion, ReadResourceRequestParams, RequestEnvelope, RequestMeta,
    RequestParams, Root, RootsCapability, SamplingCapability, SamplingContentBlock, StopReason, SubscriptionFilter,
    SubscriptionsListenRequestParams,
};
use schema::{Schema, notification, object, request, result};
use serde_json::{Value, json};

/// The client's identity, with every field 2026-07-28 has.
fn client_info() -> Implementation {
    let mut info = Implementation::new("plexus", "0.1.0");
    info.title = Some("Plexus".to_owned());
    info.description = Some("An MCP client stack".to_owned());
    info.website_url = Some("https://example.com/plexus".to_owned());
    info.icons = Some(vec![Icon {
        src: "https://example.com/plexus.png".to_owned(),
        mime_type: Some("image/png".to_owned()),
        sizes: Some(vec!["48x48".to_owned()]),
        ..Default::default()
    }]);
    info
}

/// The envelopes a stateless-era client sends: the least it may, and everything.
fn envelopes(version: ProtocolVersion) -> Vec<RequestEnvelope> {
    let full = RequestEnvelope::new(
        version,
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            sampling: Some(SamplingCapability {
                context: Some(JsonObject::new()),
                tools: Some(JsonObject::new()),
                ..Default::default()
            }),
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: Some(JsonObject::new()),
                ..Default::default()
            }),
            experimental: Some(BTreeMap::from([("plexus/demo".to_owned(), JsonObject::new())])),
            ..Default::default()
        },
    )
    .with_client_info(client_info())
    .with_log_level(LoggingLevel::Notice);
    vec![RequestEnvelope::new(version, ClientCapabilities::default()), full]
}

/// `params` with the envelope in its `_meta` (next to a progress token when it has one).
fn enveloped<P: HasRequestMeta>(mut params: P, envelope: &RequestEnvelope) -> P {
    let meta = params.meta_mut().get_or_insert_with(RequestMeta::default);
    meta.set_envelope(envelope).unwrap();
    params
}

/// The params types with a `_meta` of type `RequestMeta`.
trait HasRequestMeta {
    fn meta_mut(&mut self) -> &mut Option<RequestMeta>;
}

macro_rules! with_meta {
    ($($t:ty),+) => { $(impl HasRequestMeta for $t { fn meta_mut(&mut self) -> &mut Option<RequestMeta> { &mut self.meta } })+ };
}

with_meta!(
    RequestParams,
    PaginatedRequestParams,
    CallToolRequestParams,
    GetPromptRequestParams,
    ReadResourceRequestParams,
    CompleteRequestParams,
    SubscriptionsListenRequestParams
);

/// Every request the client sends in a stateless-era `version`, with the definition it must satisfy.
#[allow(clippy::too_many_lines)] // a table: one entry per message
fn stateless_client_messages(version: ProtocolVersion) -> Vec<(&'static str, Value)> {
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), ElicitResult::accept(None).into());
    responses.insert(
        "form".to_owned(),
        InputResponse::Elicit(ElicitResult::accept(Some(BTreeMap::from([(
            "name".to_owned(),
            ElicitValue::String("octocat".to_owned()),
        )])))),
    );
    responses.insert(
        "sample".to_owned(),
        CreateMessageResult::new(
            "claude-sonnet",
            SamplingContentBlock::text("Paris."),
            Some(StopReason::EndTurn),
        )
        .into(),
    );
    responses.insert(
        "roots".to_owned(),
        ListRootsResult {
            roots: vec![Root::new("file:///home/user/project", Some("project".to_owned()))],
            ..Default::default()
        }
        .into(),
    );
    let state = InputRequiredResult {
        request_state: Some("{\"nonce\":\"n-1\"}".to_owned()),
        ..Default::default()
    };

    let mut messages = Vec::new();
    for (i, envelope) in envelopes(version).iter().enumerate() {
        let id = i64::try_from(i).unwrap() * 100;
        let mut call = CallToolRequestParams::new("get_weather", Some(object(json!({"city": "Paris"}))));
        call.meta = Some(RequestMeta::with_progress_token("call-7"));
        let mut retry = call.clone();
        state.prepare_retry(&mut retry, responses.clone());
        let mut prompt = GetPromptRequestParams::new("code_review", None);
        state.prepare_retry(&mut prompt, responses.clone());
        let mut read = ReadResourceRequestParams::new("file:///tmp/a.txt");
        InputRequiredResult::default().prepare_retry(&mut read, responses.clone());
        let listen = SubscriptionsListenRequestParams::new(SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(false),
            resources_list_changed: Some(true),
            resource_subscriptions: Some(vec!["file:///project/config.json".to_owned()]),
            ..Default::default()
        });
        messages.extend([
            (
                "DiscoverRequest",
                request::<DiscoverRequest>(id + 1, &enveloped(RequestParams::default(), envelope)),
            ),
            (
                "ListToolsRequest",
                request::<ListToolsRequest>(id + 2, &enveloped(PaginatedRequestParams::default(), envelope)),
            ),
            (
                "ListToolsRequest",
                request::<ListToolsRequest>(
                    id + 3,
                    &enveloped(PaginatedRequestParams::page(Some("page-2".to_owned())), envelope),
                ),
            ),
            (
                "ListResourcesRequest",
                request::<ListResourcesRequest>(id + 4, &enveloped(PaginatedRequestParams::default(), envelope)),
            ),
            (
                "ListResourceTemplatesRequest",
                request::<ListResourceTemplatesRequest>(
                    id + 5,
                    &enveloped(PaginatedRequestParams::default(), envelope),
                ),
            ),
            (
                "ListPromptsRequest",
                request::<ListPromptsRequest>(id + 6, &enveloped(PaginatedRequestParams::default(), envelope)),
            ),
            (
                "CallToolRequest",
                request::<CallToolRequest>(id + 7, &enveloped(call, envelope)),
            ),
            (
                "CallToolRequest",
                request::<CallToolRequest>(id + 8, &enveloped(retry, envelope)),
            ),
            (
                "GetPromptRequest",
                request::<GetPromptRequest>(id + 9, &enveloped(prompt, envelope)),
            ),
            (
                "ReadResourceRequest",
                request::<ReadResourceRequest>(id + 10, &enveloped(read, envelope)),
            ),
            (
                "CompleteRequest",
                request::<CompleteRequest>(
                    id + 11,
                    &enveloped(
                        CompleteRequestParams::new(
                            CompletionReference::Prompt(PromptReference {
                                name: "code_review".to_owned(),
                                ..Default::default()
                            }),
                            "language",
                            "py",
                        ),
                        envelope,
                    ),
                ),
            ),
            (
                "SubscriptionsListenRequest",
                request::<SubscriptionsListenRequest>(id + 12, &enveloped(listen, envelope)),
            ),
        ]);
        assert_eq!(
            messages.last().unwrap().1["params"]["notifications"]["toolsListChanged"],
            true
        );
    }
    messages.extend([
        (
            "CancelledNotification",
            notification::<CancelledNotification>(&CancelledNotificationParams::new(
                RequestId::Number(7),
                Some("the user pressed Esc".to_owned()),
            )),
        ),
        ("InputResponses", result(&responses)),
    ]);
    messages
}

#[test]
#[cfg_attr(
    not(plexus_spec_data),
    ignore = "the MCP schema data is absent (PLEXUS_SPEC_DIR, or ../shared/spec)"
)]
fn stateless_client_messages_validate_against_their_revision() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for version in ProtocolVersion::STATELESS {
        let schema = Schema::load(version);
        let messages = stateless_client_messages(version);
        checked += messages.len();
        failures.extend(schema.invalid_messages(&messages));
        // Not vacuous: a request without the envelope, or with a retired method, fails.
        let bare = request::<ListToolsRequest>(1, &PaginatedRequestParams::default());
        assert!(!schema.errors("ListToolsRequest", &bare).is_empty(), "{version}");
        assert!(
            !schema.has("InitializeRequest") && !schema.has("PingRequest"),
            "{version}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} messages are invalid:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 26, "only {checked} messages checked");
}
