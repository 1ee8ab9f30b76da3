//! Every official example message (`shared/spec/2026-07-28/examples/<Type>/*.json`) decodes into this
//! crate's type for it and encodes back to the same JSON value; requests carry a readable envelope,
//! the errors' data decode typed, and the stateless era's results keep no known field in `extra`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use plexus_jsonrpc::{ErrorObject, Message, RequestId};
use plexus_protocol::messages::{
    CallToolRequest, CancelledNotification, CompleteRequest, CreateMessageRequest, DiscoverRequest, ElicitRequest,
    GetPromptRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListRootsRequest,
    ListToolsRequest, LoggingMessageNotification, McpNotification, McpRequest, ProgressNotification,
    PromptListChangedNotification, ReadResourceRequest, ResourceListChangedNotification, ResourceUpdatedNotification,
    SubscriptionsAcknowledgedNotification, SubscriptionsListenRequest, ToolListChangedNotification,
};
use plexus_protocol::{
    CacheScope, CallToolRequestParams, CallToolResult, CancelledNotificationParams, ClientCapabilities,
    CompleteRequestParams, CompleteResult, ContentBlock, CreateMessageRequestParams, CreateMessageResult,
    DiscoverResult, ElicitRequestParams, ElicitResult, GetPromptRequestParams, GetPromptResult, InputRequest,
    InputRequests, InputRequiredResult, InputResponse, InputResponses, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListRootsResult, ListToolsResult,
    LoggingMessageNotificationParams, MissingCapabilityData, ModelPreferences, PaginatedRequestParams,
    PrimitiveSchemaDefinition, ProgressNotificationParams, ProtocolVersion, ReadResourceResult, RequestEnvelope,
    Resource, ResourceContents, ResourceUpdatedNotificationParams, ResultOrInputRequired, Root, SamplingContentBlock,
    SamplingMessage, ServerCapabilities, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenResult, Tool,
    UnsupportedVersionData, errors,
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

/// A request message: its method is `R`'s, and its params round-trip as `R::Params`. A JSON-RPC
/// request (not an input request embedded in a result) carries a readable envelope.
fn request<R: McpRequest>() -> Check {
    Box::new(|message| {
        check_method(message, R::METHOD)?;
        if message.get("jsonrpc").is_some() {
            let params = message
                .get("params")
                .and_then(Value::as_object)
                .ok_or("no params object")?;
            let envelope = RequestEnvelope::read_from_params(params).map_err(|err| format!("envelope: {err}"))?;
            if envelope.version() != Ok(ProtocolVersion::V2026_07_28) || envelope.client_info.is_none() {
                return Err(format!("unexpected envelope {envelope:?}"));
            }
        }
        roundtrip_member::<R::Params>(message, "params")
    })
}

/// Every check must give back the example unchanged; the last one's output is the answer.
fn all_of(checks: Vec<Check>) -> Check {
    Box::new(move |value| {
        let mut last = Err("no checks".to_owned());
        for check in &checks {
            let again = check(value)?;
            if again != *value {
                return Ok(again);
            }
            last = Ok(again);
        }
        last
    })
}

/// A value of type `T` that keeps none of its fields in `extra` (but `resultType`, which results of
/// the initialize era's types keep there), and passes `more`.
fn strict<T: DeserializeOwned + Serialize + 'static>(
    extra: fn(&T) -> &JsonObject,
    more: fn(&T) -> Result<(), String>,
) -> Check {
    Box::new(move |value| {
        let typed = decode::<T>(value)?;
        let unknown: Vec<_> = extra(&typed).keys().filter(|key| *key != "resultType").collect();
        if !unknown.is_empty() {
            return Err(format!("fields left untyped: {unknown:?}"));
        }
        more(&typed)?;
        encode(&typed)
    })
}

/// An embedded input request, which must decode to the variant `method` names.
fn input_request(method: &'static str) -> Check {
    variant::<InputRequest>(method, |request| match request {
        InputRequest::Unknown(_) => "Unknown",
        known => known.tag(),
    })
}

/// A result of a request that may need input, decoded through `ResultOrInputRequired<T>`: it must be
/// `expect_input` or complete.
fn maybe_input<T: DeserializeOwned + Serialize + std::fmt::Debug + 'static>(expect_input: bool) -> Check {
    Box::new(move |value| {
        let typed = decode::<ResultOrInputRequired<T>>(value)?;
        if matches!(typed, ResultOrInputRequired::InputRequired(_)) != expect_input {
            return Err(format!("decoded as the wrong kind of result: {typed:?}"));
        }
        encode(&typed)
    })
}

/// A success response to `R`, whose result may be `input_required`: it must be complete.
fn complete_response<R: McpRequest>() -> Check
where
    R::Result: std::fmt::Debug + 'static,
{
    Box::new(|message| {
        let result = message.get("result").ok_or("no result")?;
        maybe_input::<R::Result>(false)(result)?;
        roundtrip_member::<R::Result>(message, "result")
    })
}

/// An error response whose `data` decodes as `T`, and that shows a stateless-era server.
fn error_data<T: DeserializeOwned + Serialize + 'static>(read: fn(&ErrorObject) -> Result<T, String>) -> Check {
    Box::new(move |message| {
        let decoded = Message::from_str(&message.to_string()).map_err(|err| format!("does not decode: {err}"))?;
        let Message::Response(response) = &decoded else {
            return Err(format!("is not a response: {decoded:?}"));
        };
        let Err(error) = &response.outcome else {
            return Err("is not an error response".to_owned());
        };
        if !errors::is_stateless_era_error(error) {
            return Err(format!("not recognized as a stateless-era error: {error}"));
        }
        let data = read(error)?;
        let mut again: Value = serde_json::from_str(&decoded.to_json()).map_err(|err| err.to_string())?;
        if message["error"].get("data").is_some() {
            again["error"]["data"] = encode(&data)?;
        }
        Ok(again)
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
        ("CallToolResult", maybe_input::<CallToolResult>(false)),
        ("CancelledNotificationParams", plain::<CancelledNotificationParams>()),
        ("ClientCapabilities", plain::<ClientCapabilities>()),
        ("ServerCapabilities", plain::<ServerCapabilities>()),
        ("CompleteRequestParams", plain::<CompleteRequestParams>()),
        ("CompleteResult", plain::<CompleteResult>()),
        ("CreateMessageRequestParams", plain::<CreateMessageRequestParams>()),
        ("CreateMessageResult", plain::<CreateMessageResult>()),
        ("ElicitResult", plain::<ElicitResult>()),
        ("GetPromptRequestParams", plain::<GetPromptRequestParams>()),
        ("GetPromptResult", maybe_input::<GetPromptResult>(false)),
        (
            "ListPromptsResult",
            strict::<ListPromptsResult>(|r| &r.extra, |r| cacheable(r.ttl_ms(), r.cache_scope.as_ref())),
        ),
        (
            "ListResourceTemplatesResult",
            strict::<ListResourceTemplatesResult>(|r| &r.extra, |r| cacheable(r.ttl_ms(), r.cache_scope.as_ref())),
        ),
        (
            "ListResourcesResult",
            strict::<ListResourcesResult>(|r| &r.extra, |r| cacheable(r.ttl_ms(), r.cache_scope.as_ref())),
        ),
        ("ListRootsResult", plain::<ListRootsResult>()),
        (
            "ListToolsResult",
            strict::<ListToolsResult>(|r| &r.extra, |r| cacheable(r.ttl_ms(), r.cache_scope.as_ref())),
        ),
        (
            "LoggingMessageNotificationParams",
            plain::<LoggingMessageNotificationParams>(),
        ),
        ("ModelPreferences", plain::<ModelPreferences>()),
        ("PaginatedRequestParams", plain::<PaginatedRequestParams>()),
        ("ProgressNotificationParams", plain::<ProgressNotificationParams>()),
        (
            "ReadResourceResult",
            all_of(vec![
                maybe_input::<ReadResourceResult>(false),
                strict::<ReadResourceResult>(|r| &r.extra, |r| cacheable(r.ttl_ms(), r.cache_scope.as_ref())),
            ]),
        ),
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
        (
            "CreateMessageRequest",
            all_of(vec![
                request::<CreateMessageRequest>(),
                input_request("sampling/createMessage"),
            ]),
        ),
        (
            "ElicitRequest",
            all_of(vec![request::<ElicitRequest>(), input_request("elicitation/create")]),
        ),
        ("GetPromptRequest", request::<GetPromptRequest>()),
        ("ListPromptsRequest", request::<ListPromptsRequest>()),
        (
            "ListResourceTemplatesRequest",
            request::<ListResourceTemplatesRequest>(),
        ),
        ("ListResourcesRequest", request::<ListResourcesRequest>()),
        (
            "ListRootsRequest",
            all_of(vec![request::<ListRootsRequest>(), input_request("roots/list")]),
        ),
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
        ("CallToolResultResponse", complete_response::<CallToolRequest>()),
        ("CompleteResultResponse", response::<CompleteRequest>()),
        ("GetPromptResultResponse", complete_response::<GetPromptRequest>()),
        ("ListPromptsResultResponse", response::<ListPromptsRequest>()),
        (
            "ListResourceTemplatesResultResponse",
            response::<ListResourceTemplatesRequest>(),
        ),
        ("ListResourcesResultResponse", response::<ListResourcesRequest>()),
        ("ListToolsResultResponse", response::<ListToolsRequest>()),
        ("ReadResourceResultResponse", complete_response::<ReadResourceRequest>()),
        (
            "HeaderMismatchError",
            all_of(vec![error_response(), error_data::<()>(|_| Ok(()))]),
        ),
        (
            "MissingRequiredClientCapabilityError",
            error_data::<MissingCapabilityData>(|error| {
                let data = MissingCapabilityData::from_error(error).map_err(|err| err.to_string())?;
                if data.required_capabilities.elicitation.is_none() || !data.extra.is_empty() {
                    return Err(format!("unexpected data {data:?}"));
                }
                Ok(data)
            }),
        ),
        (
            "UnsupportedProtocolVersionError",
            error_data::<UnsupportedVersionData>(|error| {
                let data = UnsupportedVersionData::from_error(error).map_err(|err| err.to_string())?;
                if data.choose_version() != Ok(ProtocolVersion::V2026_07_28) || !data.extra.is_empty() {
                    return Err(format!("unexpected data {data:?}"));
                }
                Ok(data)
            }),
        ),
        ("DiscoverRequest", request::<DiscoverRequest>()),
        (
            "DiscoverResult",
            strict::<DiscoverResult>(
                |r| &r.extra,
                |r| {
                    cacheable(r.ttl_ms(), r.cache_scope.as_ref())?;
                    let info = r.server_info().map_err(|err| err.to_string())?;
                    match (info, r.choose_version()) {
                        (Some(_), Ok(ProtocolVersion::V2026_07_28)) => Ok(()),
                        other => Err(format!("unexpected server info or version: {other:?}")),
                    }
                },
            ),
        ),
        ("DiscoverResultResponse", response::<DiscoverRequest>()),
        (
            "InputRequests",
            strict_map::<InputRequests, InputRequest>(|request| matches!(request, InputRequest::Unknown(_))),
        ),
        (
            "InputResponses",
            strict_map::<InputResponses, InputResponse>(|response| matches!(response, InputResponse::Unknown(_))),
        ),
        (
            "InputRequiredResult",
            all_of(vec![
                maybe_input::<CallToolResult>(true),
                strict::<InputRequiredResult>(
                    |r| &r.extra,
                    |r| {
                        let unknown = r
                            .input_requests
                            .iter()
                            .flatten()
                            .any(|(_, request)| matches!(request, InputRequest::Unknown(_)));
                        if unknown || r.is_empty() {
                            return Err(format!("unexpected input requests: {r:?}"));
                        }
                        Ok(())
                    },
                ),
            ]),
        ),
        (
            "SubscriptionsAcknowledgedNotification",
            all_of(vec![
                notification::<SubscriptionsAcknowledgedNotification>(),
                acknowledged(),
            ]),
        ),
        ("SubscriptionsListenRequest", request::<SubscriptionsListenRequest>()),
        (
            "SubscriptionsListenResult",
            strict::<SubscriptionsListenResult>(|r| &r.extra, |r| expect_subscription(r.subscription_id())),
        ),
        (
            "SubscriptionsListenResultResponse",
            response::<SubscriptionsListenRequest>(),
        ),
        ("InternalError", plain::<ErrorObject>()),
        ("InvalidParamsError", plain::<ErrorObject>()),
        ("MethodNotFoundError", plain::<ErrorObject>()),
        ("ParseError", plain::<ErrorObject>()),
    ])
}

/// Example types this crate has no type for, and why (none since the stateless era's types).
const SKIPPED: &[(&str, &str)] = &[];

/// Caching hints present and typed (every such example has a positive `ttlMs` and a known scope).
fn cacheable(ttl_ms: u64, scope: Option<&CacheScope>) -> Result<(), String> {
    match scope {
        Some(CacheScope::Public | CacheScope::Private) if ttl_ms > 0 => Ok(()),
        _ => Err(format!("caching hints not typed: ttlMs {ttl_ms}, cacheScope {scope:?}")),
    }
}

/// The acknowledgement names its subscription.
fn acknowledged() -> Check {
    Box::new(|message| {
        let params: SubscriptionsAcknowledgedNotificationParams = decode(&message["params"])?;
        expect_subscription(params.subscription_id())?;
        Ok(message.clone())
    })
}

fn expect_subscription(id: Result<Option<RequestId>, plexus_protocol::EnvelopeError>) -> Result<(), String> {
    match id {
        Ok(Some(RequestId::String(id))) if id == "listen-1" => Ok(()),
        other => Err(format!("unexpected subscription id {other:?}")),
    }
}

/// A map (input requests or responses) whose values are all of a known kind.
fn strict_map<M, V>(unknown: fn(&V) -> bool) -> Check
where
    M: DeserializeOwned + Serialize + 'static,
    for<'a> &'a M: IntoIterator<Item = (&'a String, &'a V)>,
    V: std::fmt::Debug + 'static,
{
    Box::new(move |value| {
        let typed = decode::<M>(value)?;
        if let Some((key, value)) = (&typed).into_iter().find(|(_, value)| unknown(value)) {
            return Err(format!("{key} decoded as unknown: {value:?}"));
        }
        encode(&typed)
    })
}

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
