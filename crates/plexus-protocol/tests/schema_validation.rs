//! What the client sends validates against the JSON Schema of every initialize-era revision it
//! speaks (the stateless era's requests: `stateless_schema.rs`), the per-version feature table
//! matches the schemas of both eras, and the method names match the schemas'.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use plexus_jsonrpc::RequestId;
use plexus_protocol::messages::{
    CallToolRequest, CancelledNotification, CompleteRequest, GetPromptRequest, InitializeRequest,
    InitializedNotification, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest,
    PingRequest, ProgressNotification, ReadResourceRequest, RootsListChangedNotification, SetLevelRequest,
    SubscribeRequest, UnsubscribeRequest,
};
use plexus_protocol::{
    CallToolRequestParams, CancelledNotificationParams, ClientCapabilities, ClientTaskRequests, ClientTasksCapability,
    CompleteRequestParams, CompletionContext, CompletionReference, CreateMessageResult, ElicitResult, ElicitValue,
    ElicitationCapability, ElicitationTaskRequests, EmptyResult, GetPromptRequestParams, Icon, Implementation,
    InitializeRequestParams, JsonObject, ListRootsResult, LoggingLevel, MediaContent, NotificationParams,
    PaginatedRequestParams, ProgressNotificationParams, PromptReference, ProtocolVersion, ReadResourceRequestParams,
    RequestMeta, RequestParams, ResourceTemplateReference, Root, RootsCapability, SamplingCapability, SamplingContent,
    SamplingContentBlock, SamplingTaskRequests, SetLevelRequestParams, StopReason, TaskMetadata, ToolUseContent,
    methods,
};
use serde_json::{Value, json};

#[path = "support/schema.rs"]
mod schema;

use schema::{Schema, notification, object, request, result};

fn client_capabilities(version: ProtocolVersion) -> ClientCapabilities {
    let mut capabilities = ClientCapabilities {
        roots: Some(RootsCapability {
            list_changed: Some(true),
            ..Default::default()
        }),
        sampling: Some(SamplingCapability::default()),
        experimental: Some(BTreeMap::from([("plexus/demo".to_owned(), JsonObject::new())])),
        ..Default::default()
    };
    if version.has_elicitation() {
        capabilities.elicitation = Some(ElicitationCapability::default());
    }
    if version.has_url_elicitation() {
        capabilities.elicitation = Some(ElicitationCapability {
            form: Some(JsonObject::new()),
            url: Some(JsonObject::new()),
            ..Default::default()
        });
    }
    if version.has_sampling_tools() {
        capabilities.sampling = Some(SamplingCapability {
            context: Some(JsonObject::new()),
            tools: Some(JsonObject::new()),
            ..Default::default()
        });
    }
    if version.has_tasks() {
        capabilities.tasks = Some(ClientTasksCapability {
            list: Some(JsonObject::new()),
            cancel: Some(JsonObject::new()),
            requests: Some(ClientTaskRequests {
                sampling: Some(SamplingTaskRequests {
                    create_message: Some(JsonObject::new()),
                    ..Default::default()
                }),
                elicitation: Some(ElicitationTaskRequests {
                    create: Some(JsonObject::new()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    capabilities
}

fn client_info(version: ProtocolVersion) -> Implementation {
    let mut info = Implementation::new("plexus", "0.1.0");
    if version.has_titles() {
        info.title = Some("Plexus".to_owned());
    }
    if version.has_icons() {
        info.description = Some("An MCP client stack".to_owned());
        info.website_url = Some("https://example.com/plexus".to_owned());
        info.icons = Some(vec![Icon {
            src: "https://example.com/plexus.png".to_owned(),
            mime_type: Some("image/png".to_owned()),
            sizes: Some(vec!["48x48".to_owned()]),
            ..Default::default()
        }]);
    }
    info
}

/// Every message the client sends in `version`, with the schema definition it must satisfy.
#[allow(clippy::too_many_lines)] // a table: one entry per message
fn client_messages(version: ProtocolVersion) -> Vec<(&'static str, Value)> {
    let mut messages = vec![
        (
            "InitializeRequest",
            request::<InitializeRequest>(
                0,
                &InitializeRequestParams::new(version, client_capabilities(version), client_info(version)),
            ),
        ),
        (
            "InitializedNotification",
            notification::<InitializedNotification>(&NotificationParams::default()),
        ),
        ("PingRequest", request::<PingRequest>(1, &RequestParams::default())),
        (
            "ListToolsRequest",
            request::<ListToolsRequest>(2, &PaginatedRequestParams::default()),
        ),
        (
            "ListToolsRequest",
            request::<ListToolsRequest>(3, &PaginatedRequestParams::page(Some("page-2".to_owned()))),
        ),
        (
            "ListResourcesRequest",
            request::<ListResourcesRequest>(4, &PaginatedRequestParams::default()),
        ),
        (
            "ListResourceTemplatesRequest",
            request::<ListResourceTemplatesRequest>(5, &PaginatedRequestParams::default()),
        ),
        (
            "ListPromptsRequest",
            request::<ListPromptsRequest>(6, &PaginatedRequestParams::default()),
        ),
        (
            "ReadResourceRequest",
            request::<ReadResourceRequest>(7, &ReadResourceRequestParams::new("file:///tmp/a.txt")),
        ),
        (
            "SubscribeRequest",
            request::<SubscribeRequest>(8, &ReadResourceRequestParams::new("file:///tmp/a.txt")),
        ),
        (
            "UnsubscribeRequest",
            request::<UnsubscribeRequest>(9, &ReadResourceRequestParams::new("file:///tmp/a.txt")),
        ),
        (
            "GetPromptRequest",
            request::<GetPromptRequest>(
                10,
                &GetPromptRequestParams::new(
                    "code_review",
                    Some(BTreeMap::from([("code".to_owned(), "fn main() {}".to_owned())])),
                ),
            ),
        ),
        (
            "CompleteRequest",
            request::<CompleteRequest>(
                11,
                &CompleteRequestParams::new(
                    CompletionReference::Prompt(PromptReference {
                        name: "code_review".to_owned(),
                        ..Default::default()
                    }),
                    "language",
                    "py",
                ),
            ),
        ),
        (
            "CompleteRequest",
            request::<CompleteRequest>(
                12,
                &CompleteRequestParams::new(
                    CompletionReference::ResourceTemplate(ResourceTemplateReference {
                        uri: "file:///{path}".to_owned(),
                        ..Default::default()
                    }),
                    "path",
                    "src/",
                ),
            ),
        ),
        (
            "SetLevelRequest",
            request::<SetLevelRequest>(13, &SetLevelRequestParams::new(LoggingLevel::Warning)),
        ),
        (
            "CancelledNotification",
            notification::<CancelledNotification>(&CancelledNotificationParams::new(
                RequestId::Number(11),
                Some("the user pressed Esc".to_owned()),
            )),
        ),
        (
            "CancelledNotification",
            notification::<CancelledNotification>(&CancelledNotificationParams::new(
                RequestId::String("server-req-1".to_owned()),
                None,
            )),
        ),
        (
            "ProgressNotification",
            notification::<ProgressNotification>(&ProgressNotificationParams::new(7, 0.5, Some(1.0))),
        ),
        (
            "RootsListChangedNotification",
            notification::<RootsListChangedNotification>(&NotificationParams::default()),
        ),
        (
            "ListRootsResult",
            result(&ListRootsResult {
                roots: vec![
                    Root::new("file:///home/user/project", Some("project".to_owned())),
                    Root::new("file:///home/user/lib", None),
                ],
                ..Default::default()
            }),
        ),
        ("ListRootsResult", result(&ListRootsResult::default())),
        ("EmptyResult", result(&EmptyResult::default())),
        (
            "CreateMessageResult",
            result(&CreateMessageResult::new(
                "claude-sonnet",
                SamplingContentBlock::text("Paris."),
                Some(StopReason::EndTurn),
            )),
        ),
        (
            "CreateMessageResult",
            result(&CreateMessageResult::new(
                "claude-sonnet",
                SamplingContentBlock::Image(MediaContent::new("iVBORw0KGgo=", "image/png")),
                Some(StopReason::Other("refusal".to_owned())),
            )),
        ),
    ];

    messages.extend(feature_messages(version));
    messages
}

/// The messages whose shape depends on what `version` has.
#[allow(clippy::too_many_lines)] // a table: one entry per message
fn feature_messages(version: ProtocolVersion) -> Vec<(&'static str, Value)> {
    let progress = Some(RequestMeta::with_progress_token("call-7"));
    let mut messages = Vec::new();
    let mut call = CallToolRequestParams::new("get_weather", Some(object(json!({"city": "Paris", "days": 3}))));
    call.meta.clone_from(&progress);
    messages.push(("CallToolRequest", request::<CallToolRequest>(14, &call)));
    messages.push((
        "CallToolRequest",
        request::<CallToolRequest>(15, &CallToolRequestParams::new("now", None)),
    ));
    let mut read = ReadResourceRequestParams::new("https://example.com/data.json");
    read.meta = progress;
    messages.push(("ReadResourceRequest", request::<ReadResourceRequest>(16, &read)));

    if version.has_progress_message() {
        let mut params = ProgressNotificationParams::new("call-7", 3.0, None);
        params.message = Some("3 files indexed".to_owned());
        messages.push(("ProgressNotification", notification::<ProgressNotification>(&params)));
    }
    if version.has_audio_content() {
        messages.push((
            "CreateMessageResult",
            result(&CreateMessageResult::new(
                "voice-1",
                SamplingContentBlock::Audio(MediaContent::new("UklGRg==", "audio/wav")),
                None,
            )),
        ));
    }
    if version.has_completion_context() {
        let mut params = CompleteRequestParams::new(
            CompletionReference::Prompt(PromptReference {
                name: "code_review".to_owned(),
                title: Some("Code review".to_owned()),
                ..Default::default()
            }),
            "framework",
            "fla",
        );
        params.context = Some(CompletionContext {
            arguments: Some(BTreeMap::from([("language".to_owned(), "python".to_owned())])),
            ..Default::default()
        });
        messages.push(("CompleteRequest", request::<CompleteRequest>(17, &params)));
    }
    if version.has_elicitation() {
        let content = BTreeMap::from([
            ("name".to_owned(), ElicitValue::String("octocat".to_owned())),
            ("age".to_owned(), ElicitValue::Integer(30)),
            ("subscribe".to_owned(), ElicitValue::Boolean(true)),
        ]);
        messages.push(("ElicitResult", result(&ElicitResult::accept(Some(content)))));
        messages.push(("ElicitResult", result(&ElicitResult::decline())));
        messages.push(("ElicitResult", result(&ElicitResult::cancel())));
    }
    if version.has_url_elicitation() {
        messages.push(("ElicitResult", result(&ElicitResult::accept(None))));
        let content = BTreeMap::from([(
            "colors".to_owned(),
            ElicitValue::StringArray(vec!["red".to_owned(), "blue".to_owned()]),
        )]);
        messages.push(("ElicitResult", result(&ElicitResult::accept(Some(content)))));
    }
    if version.has_sampling_tools() {
        let uses = ["Paris", "London"]
            .into_iter()
            .enumerate()
            .map(|(i, city)| {
                SamplingContentBlock::ToolUse(ToolUseContent {
                    id: format!("call_{i}"),
                    name: "get_weather".to_owned(),
                    input: object(json!({ "city": city })),
                    ..Default::default()
                })
            })
            .collect();
        messages.push((
            "CreateMessageResult",
            result(&CreateMessageResult::new(
                "claude-sonnet",
                SamplingContent::Multiple(uses),
                Some(StopReason::ToolUse),
            )),
        ));
    }
    if version.has_tasks() {
        let mut call = CallToolRequestParams::new("build", None);
        call.task = Some(TaskMetadata {
            ttl: Some(60_000),
            ..Default::default()
        });
        messages.push(("CallToolRequest", request::<CallToolRequest>(18, &call)));
    }
    messages
}

#[test]
#[cfg_attr(
    not(plexus_spec_data),
    ignore = "the MCP schema data is absent (PLEXUS_SPEC_DIR, or ../shared/spec)"
)]
fn client_messages_validate_against_every_revision() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for version in ProtocolVersion::SUPPORTED {
        let schema = Schema::load(version);
        let messages = client_messages(version);
        checked += messages.len();
        failures.extend(schema.invalid_messages(&messages));
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} messages are invalid:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 100, "only {checked} messages checked");
}

/// The validator is not vacuous: a message missing a required field, or with a wrong type, fails.
#[test]
#[cfg_attr(
    not(plexus_spec_data),
    ignore = "the MCP schema data is absent (PLEXUS_SPEC_DIR, or ../shared/spec)"
)]
fn the_validator_rejects_invalid_messages() {
    let no_name = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}});
    for version in ProtocolVersion::SUPPORTED {
        assert_eq!(
            Schema::load(version).errors("CallToolRequest", &no_name),
            vec![r#""name" is a required property (at `/params`)"#],
            "{version}"
        );
    }
    let schema = Schema::load(ProtocolVersion::LATEST);
    let bad_level = json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "loud"}});
    assert_eq!(schema.errors("SetLevelRequest", &bad_level).len(), 1);
    let wrong_method = request::<PingRequest>(1, &RequestParams::default());
    assert!(!schema.errors("ListToolsRequest", &wrong_method).is_empty());
}

/// The per-version feature table agrees with what each revision's schema defines.
#[test]
#[cfg_attr(
    not(plexus_spec_data),
    ignore = "the MCP schema data is absent (PLEXUS_SPEC_DIR, or ../shared/spec)"
)]
fn feature_table_matches_the_schemas() {
    type Claim = fn(ProtocolVersion) -> bool;
    type Probe = fn(&Schema) -> bool;
    let features: [(&str, Claim, Probe); 14] = [
        ("tool annotations", ProtocolVersion::has_tool_annotations, |s| {
            s.has("ToolAnnotations")
        }),
        ("audio content", ProtocolVersion::has_audio_content, |s| {
            s.has("AudioContent")
        }),
        (
            "completions capability",
            ProtocolVersion::has_completions_capability,
            |s| s.has_property("ServerCapabilities", &["completions"]),
        ),
        ("progress message", ProtocolVersion::has_progress_message, |s| {
            s.has_property("ProgressNotificationParams", &["message"])
                || s.has_property("ProgressNotification", &["params", "message"])
        }),
        ("JSON-RPC batching", ProtocolVersion::has_json_rpc_batching, |s| {
            s.has("JSONRPCBatchRequest")
        }),
        ("structured content", ProtocolVersion::has_structured_content, |s| {
            s.has_property("CallToolResult", &["structuredContent"]) && s.has_property("Tool", &["outputSchema"])
        }),
        ("elicitation", ProtocolVersion::has_elicitation, |s| {
            s.has("ElicitRequest") && s.has("ElicitResult")
        }),
        ("resource links", ProtocolVersion::has_resource_links, |s| {
            s.has("ResourceLink")
        }),
        ("titles", ProtocolVersion::has_titles, |s| {
            s.has_property("Tool", &["title"]) && s.has_property("Implementation", &["title"])
        }),
        ("completion context", ProtocolVersion::has_completion_context, |s| {
            s.has_property("CompleteRequestParams", &["context"])
                || s.has_property("CompleteRequest", &["params", "context"])
        }),
        ("URL elicitation", ProtocolVersion::has_url_elicitation, |s| {
            s.has("ElicitRequestURLParams")
        }),
        ("sampling tools", ProtocolVersion::has_sampling_tools, |s| {
            s.has("ToolUseContent") && s.has("ToolChoice")
        }),
        ("icons", ProtocolVersion::has_icons, |s| s.has("Icon")),
        ("tasks", ProtocolVersion::has_tasks, |s| {
            s.has("Task") && s.has_property("ServerCapabilities", &["tasks"])
        }),
    ];
    let mut mismatches = Vec::new();
    for version in ProtocolVersion::ALL {
        let schema = Schema::load(version);
        for (feature, claimed, probe) in &features {
            let (claimed, defined) = (claimed(version), probe(&schema));
            if claimed != defined {
                mismatches.push(format!("{version}: {feature} claimed {claimed}, schema says {defined}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Every `"method": {"const": ...}` of a schema.
fn schema_methods(node: &Value, out: &mut BTreeSet<String>) {
    match node {
        Value::Object(object) => {
            if let Some(method) = object
                .get("properties")
                .and_then(|p| p.get("method"))
                .and_then(|m| m.get("const"))
            {
                out.insert(method.as_str().unwrap().to_owned());
            }
            object.values().for_each(|value| schema_methods(value, out));
        }
        Value::Array(items) => items.iter().for_each(|value| schema_methods(value, out)),
        _ => {}
    }
}

#[test]
#[cfg_attr(
    not(plexus_spec_data),
    ignore = "the MCP schema data is absent (PLEXUS_SPEC_DIR, or ../shared/spec)"
)]
fn method_names_match_the_schemas() {
    let ours: BTreeSet<String> = methods::REQUESTS
        .iter()
        .chain(methods::NOTIFICATIONS)
        .map(|m| (*m).to_owned())
        .collect();
    assert_eq!(
        ours.len(),
        methods::REQUESTS.len() + methods::NOTIFICATIONS.len(),
        "a method is listed twice"
    );
    let mut union = BTreeSet::new();
    for version in ProtocolVersion::ALL {
        let mut theirs = BTreeSet::new();
        schema_methods(&Schema::load(version).root, &mut theirs);
        let missing: Vec<_> = theirs.difference(&ours).collect();
        assert!(
            missing.is_empty(),
            "{version} defines methods `methods` lacks: {missing:?}"
        );
        union.extend(theirs);
    }
    let unknown: Vec<_> = ours.difference(&union).collect();
    assert!(
        unknown.is_empty(),
        "`methods` has names no revision defines: {unknown:?}"
    );
}
