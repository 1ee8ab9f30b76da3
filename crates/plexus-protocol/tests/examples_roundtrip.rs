//! Every official example message (`shared/spec/2026-07-28/examples/<Type>/*.json`) whose type exists
//! in the 2025-11-25 era decodes into this crate's type and encodes back to the same JSON value.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use plexus_jsonrpc::{ErrorObject, Message};
use plexus_protocol::messages::{
    CallToolRequest, CancelledNotification, CompleteRequest, CreateMessageRequest, ElicitRequest, GetPromptRequest,
    ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListRootsRequest, ListToolsRequest,
    LoggingMessageNotification, McpNotification, McpRequest, ProgressNotification, PromptListChangedNotification,
    ReadResourceRequest, ResourceListChangedNotification, ResourceUpdatedNotification, ToolListChangedNotification,
};
use plexus_protocol::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParams, ClientCapabilities, CompleteRequestParams,
    CompleteResult, ContentBlock, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListRootsResult, ListToolsResult, LoggingMessageNotificationParams, ModelPreferences, PaginatedRequestParams,
    PrimitiveSchemaDefinition, ProgressNotificationParams, ReadResourceResult, Resource, ResourceContents,
    ResourceUpdatedNotificationParams, Root, SamplingContentBlock, SamplingMessage, ServerCapabilities, Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes an example and encodes it again; `Err` says why it could not.
type Check = Box<dyn Fn(&Value) -> Result<Value, String>>;

fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_json::from_value(value.clone()).map_err(|err| format!("does not decode: {err}"))
}

fn encode<T: Serialize>(typed: &T) -> Result<Value, String> {
    serde_json::to_value(typed).map_err(|err| format!("does not encode: {err}"))
}

fn plain<T: DeserializeOwned + Serialize>() -> Check {
    Box::new(|value| encode(&decode::<T>(value)?))
}

/// Through a tagged enum, which must decode to the variant `expected` names (never `Unknown`).
fn variant<T: DeserializeOwned + Serialize + std::fmt::Debug + 'static>(
    expected: &'static str,
    name: fn(&T) -> &str,
) -> Check {
    Box::new(move |value| {
        let typed = decode::<T>(value)?;
        if name(&typed) != expected {
            return Err(format!("decoded as the wrong variant: {typed:?}"));
        }
        encode(&typed)
    })
}

fn content_block(tag: &'static str) -> Check {
    variant::<ContentBlock>(tag, |block| match block {
        ContentBlock::Unknown(_) => "Unknown",
        known => known.tag(),
    })
}

fn sampling_block(tag: &'static str) -> Check {
    variant::<SamplingContentBlock>(tag, |block| match block {
        SamplingContentBlock::Unknown(_) => "Unknown",
        known => known.tag(),
    })
}

fn elicitation(mode: &'static str) -> Check {
    variant::<ElicitRequestParams>(mode, |params| match params {
        ElicitRequestParams::Unknown(_) => "Unknown",
        known => known.tag(),
    })
}

fn resource_contents(kind: &'static str) -> Check {
    variant::<ResourceContents>(kind, |contents| match contents {
        ResourceContents::Text(_) => "text",
        ResourceContents::Blob(_) => "blob",
    })
}

fn field_schema(kind: &'static str) -> Check {
    variant::<PrimitiveSchemaDefinition>(kind, |schema| match schema {
        PrimitiveSchemaDefinition::String(_) => "string",
        PrimitiveSchemaDefinition::Number(_) => "number",
        PrimitiveSchemaDefinition::Boolean(_) => "boolean",
        PrimitiveSchemaDefinition::UntitledSingleSelect(_) => "untitled single",
        PrimitiveSchemaDefinition::TitledSingleSelect(_) => "titled single",
        PrimitiveSchemaDefinition::LegacyTitledEnum(_) => "legacy",
        PrimitiveSchemaDefinition::UntitledMultiSelect(_) => "untitled multi",
        PrimitiveSchemaDefinition::TitledMultiSelect(_) => "titled multi",
        PrimitiveSchemaDefinition::Unknown(_) => "Unknown",
    })
}

/// Replaces `message[key]`, when present, by its decoded-and-encoded form.
fn roundtrip_member<T: DeserializeOwned + Serialize>(message: &Value, key: &str) -> Result<Value, String> {
    let mut message = message.clone();
    if let Some(member) = message.get(key) {
        let again = encode(&decode::<T>(member).map_err(|err| format!("`{key}` {err}"))?)?;
        message[key] = again;
    }
    Ok(message)
}

fn check_method(message: &Value, method: &str) -> Result<(), String> {
    match message.get("method") {
        Some(found) if found == method => Ok(()),
        found => Err(format!("method is {found:?}, expected {method:?}")),
    }
}

/// A request message: its method is `R`'s, and its params round-trip as `R::Params`.
fn request<R: McpRequest>() -> Check {
    Box::new(|message| {
        check_method(message, R::METHOD)?;
        roundtrip_member::<R::Params>(message, "params")
    })
}

/// A notification message: its method is `N`'s, and its params round-trip as `N::Params`.
fn notification<N: McpNotification>() -> Check {
    Box::new(|message| {
        check_method(message, N::METHOD)?;
        roundtrip_member::<N::Params>(message, "params")
    })
}

/// A success response to `R`: its result round-trips as `R::Result`.
fn response<R: McpRequest>() -> Check {
    Box::new(|message| roundtrip_member::<R::Result>(message, "result"))
}

/// A JSON-RPC error response, through `plexus_jsonrpc`.
fn error_response() -> Check {
    Box::new(|message| {
        let decoded = Message::from_str(&message.to_string()).map_err(|err| format!("does not decode: {err}"))?;
        match &decoded {
            Message::Response(response) if response.outcome.is_err() => {}
            other => return Err(format!("is not an error response: {other:?}")),
        }
        serde_json::from_str(&decoded.to_json()).map_err(|err| err.to_string())
    })
}

#[allow(clippy::too_many_lines)] // a table: one entry per message
fn covered() -> BTreeMap<&'static str, Check> {
    BTreeMap::from([
        ("AudioContent", content_block("audio")),
        ("ImageContent", content_block("image")),
        ("TextContent", content_block("text")),
        ("ResourceLink", content_block("resource_link")),
        ("EmbeddedResource", content_block("resource")),
        ("ToolUseContent", sampling_block("tool_use")),
        ("ToolResultContent", sampling_block("tool_result")),
        ("TextResourceContents", resource_contents("text")),
        ("BlobResourceContents", resource_contents("blob")),
        ("StringSchema", field_schema("string")),
        ("NumberSchema", field_schema("number")),
        ("BooleanSchema", field_schema("boolean")),
        ("UntitledSingleSelectEnumSchema", field_schema("untitled single")),
        ("TitledSingleSelectEnumSchema", field_schema("titled single")),
        ("UntitledMultiSelectEnumSchema", field_schema("untitled multi")),
        ("TitledMultiSelectEnumSchema", field_schema("titled multi")),
        ("ElicitRequestFormParams", elicitation("form")),
        ("ElicitRequestURLParams", elicitation("url")),
        ("CallToolRequestParams", plain::<CallToolRequestParams>()),
        ("CallToolResult", plain::<CallToolResult>()),
        ("CancelledNotificationParams", plain::<CancelledNotificationParams>()),
        ("ClientCapabilities", plain::<ClientCapabilities>()),
        ("ServerCapabilities", plain::<ServerCapabilities>()),
        ("CompleteRequestParams", plain::<CompleteRequestParams>()),
        ("CompleteResult", plain::<CompleteResult>()),
        ("CreateMessageRequestParams", plain::<CreateMessageRequestParams>()),
        ("CreateMessageResult", plain::<CreateMessageResult>()),
        ("ElicitResult", plain::<ElicitResult>()),
        ("GetPromptRequestParams", plain::<GetPromptRequestParams>()),
        ("GetPromptResult", plain::<GetPromptResult>()),
        ("ListPromptsResult", plain::<ListPromptsResult>()),
        ("ListResourceTemplatesResult", plain::<ListResourceTemplatesResult>()),
        ("ListResourcesResult", plain::<ListResourcesResult>()),
        ("ListRootsResult", plain::<ListRootsResult>()),
        ("ListToolsResult", plain::<ListToolsResult>()),
        (
            "LoggingMessageNotificationParams",
            plain::<LoggingMessageNotificationParams>(),
        ),
        ("ModelPreferences", plain::<ModelPreferences>()),
        ("PaginatedRequestParams", plain::<PaginatedRequestParams>()),
        ("ProgressNotificationParams", plain::<ProgressNotificationParams>()),
        ("ReadResourceResult", plain::<ReadResourceResult>()),
        ("Resource", plain::<Resource>()),
        (
            "ResourceUpdatedNotificationParams",
            plain::<ResourceUpdatedNotificationParams>(),
        ),
        ("Root", plain::<Root>()),
        ("SamplingMessage", plain::<SamplingMessage>()),
        ("Tool", plain::<Tool>()),
        ("CallToolRequest", request::<CallToolRequest>()),
        ("CompleteRequest", request::<CompleteRequest>()),
        ("CreateMessageRequest", request::<CreateMessageRequest>()),
        ("ElicitRequest", request::<ElicitRequest>()),
        ("GetPromptRequest", request::<GetPromptRequest>()),
        ("ListPromptsRequest", request::<ListPromptsRequest>()),
        (
            "ListResourceTemplatesRequest",
            request::<ListResourceTemplatesRequest>(),
        ),
        ("ListResourcesRequest", request::<ListResourcesRequest>()),
        ("ListRootsRequest", request::<ListRootsRequest>()),
        ("ListToolsRequest", request::<ListToolsRequest>()),
        ("ReadResourceRequest", request::<ReadResourceRequest>()),
        ("CancelledNotification", notification::<CancelledNotification>()),
        (
            "LoggingMessageNotification",
            notification::<LoggingMessageNotification>(),
        ),
        ("ProgressNotification", notification::<ProgressNotification>()),
        (
            "PromptListChangedNotification",
            notification::<PromptListChangedNotification>(),
        ),
        (
            "ResourceListChangedNotification",
            notification::<ResourceListChangedNotification>(),
        ),
        (
            "ResourceUpdatedNotification",
            notification::<ResourceUpdatedNotification>(),
        ),
        (
            "ToolListChangedNotification",
            notification::<ToolListChangedNotification>(),
        ),
        ("CallToolResultResponse", response::<CallToolRequest>()),
        ("CompleteResultResponse", response::<CompleteRequest>()),
        ("GetPromptResultResponse", response::<GetPromptRequest>()),
        ("ListPromptsResultResponse", response::<ListPromptsRequest>()),
        (
            "ListResourceTemplatesResultResponse",
            response::<ListResourceTemplatesRequest>(),
        ),
        ("ListResourcesResultResponse", response::<ListResourcesRequest>()),
        ("ListToolsResultResponse", response::<ListToolsRequest>()),
        ("ReadResourceResultResponse", response::<ReadResourceRequest>()),
        ("HeaderMismatchError", error_response()),
        ("MissingRequiredClientCapabilityError", error_response()),
        ("UnsupportedProtocolVersionError", error_response()),
        ("InternalError", plain::<ErrorObject>()),
        ("InvalidParamsError", plain::<ErrorObject>()),
        ("MethodNotFoundError", plain::<ErrorObject>()),
        ("ParseError", plain::<ErrorObject>()),
    ])
}

/// Example types with no counterpart in the 2025-11-25 era, and why.
const SKIPPED: &[(&str, &str)] = &[
    (
        "DiscoverRequest",
        "`server/discover` is new in 2026-07-28 (stateless era)",
    ),
    (
        "DiscoverResult",
        "`server/discover` is new in 2026-07-28 (stateless era)",
    ),
    (
        "DiscoverResultResponse",
        "`server/discover` is new in 2026-07-28 (stateless era)",
    ),
    ("InputRequests", "multi-round-trip input requests are new in 2026-07-28"),
    (
        "InputRequiredResult",
        "multi-round-trip input requests are new in 2026-07-28",
    ),
    (
        "InputResponses",
        "multi-round-trip input requests are new in 2026-07-28",
    ),
    (
        "SubscriptionsAcknowledgedNotification",
        "`subscriptions/listen` is new in 2026-07-28",
    ),
    (
        "SubscriptionsListenRequest",
        "`subscriptions/listen` is new in 2026-07-28",
    ),
    (
        "SubscriptionsListenResult",
        "`subscriptions/listen` is new in 2026-07-28",
    ),
    (
        "SubscriptionsListenResultResponse",
        "`subscriptions/listen` is new in 2026-07-28",
    ),
];

#[test]
#[cfg_attr(
    not(plexus_spec_data),
    ignore = "the MCP schema data is absent (PLEXUS_SPEC_DIR, or ../shared/spec)"
)]
fn every_example_round_trips_or_is_skipped_with_a_reason() {
    let examples = support::spec_dir().join("2026-07-28/examples");
    let covered = covered();
    let skipped: BTreeMap<&str, &str> = SKIPPED.iter().copied().collect();
    let mut failures = Vec::new();
    let mut seen = Vec::new();
    let mut files = 0;

    let mut dirs: Vec<_> = std::fs::read_dir(&examples)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", examples.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        seen.push(name.clone());
        if skipped.contains_key(name.as_str()) {
            continue;
        }
        let Some(check) = covered.get(name.as_str()) else {
            failures.push(format!("{name}: neither covered nor skipped with a reason"));
            continue;
        };
        for file in json_files(&dir) {
            files += 1;
            let value = support::read_json(&file);
            let label = format!("{name}/{}", file.file_name().unwrap().to_str().unwrap());
            match check(&value) {
                Ok(again) if again == value => {}
                Ok(again) => failures.push(format!(
                    "{label}: encodes back differently:\n  was {value}\n  now {again}"
                )),
                Err(err) => failures.push(format!("{label}: {err}")),
            }
        }
    }
    for name in covered.keys().chain(skipped.keys()) {
        if !seen.iter().any(|seen| seen == name) {
            failures.push(format!("{name}: listed here, but there is no such example directory"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(files >= 100, "only {files} example files checked");
}

fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no examples", dir.display());
    files
}
