//! Realistic server answers decode into the right types and fields; malformed ones fail with errors
//! that say what is wrong; what the client encodes is exactly what the wire needs.

use plexus_jsonrpc::{Message, RequestId};
use plexus_protocol::{
    CallToolResult, ClientCapabilities, ContentBlock, CreateMessageRequestParams, ElicitAction, ElicitRequestParams,
    ElicitResult, Implementation, IncludeContext, InitializeRequestParams, InitializeResult, ListToolsResult,
    LoggingLevel, LoggingMessageNotificationParams, NumberType, PrimitiveSchemaDefinition, ProgressNotificationParams,
    ProgressToken, ProtocolVersion, ReadResourceResult, ResourceContents, Role, SamplingContent, SamplingContentBlock,
    StringFormat, TaskStatus, TaskStatusNotificationParams, TaskSupport, ToolChoiceMode,
    UrlElicitationRequiredErrorData,
};
use serde_json::{Value, json};

fn response_result<T: serde::de::DeserializeOwned>(line: &str) -> T {
    let Message::Response(response) = Message::from_str(line).unwrap() else {
        panic!("not a response: {line}")
    };
    assert_eq!(response.id, Some(RequestId::Number(1)));
    response.into_result().unwrap()
}

fn decode_error<T: serde::de::DeserializeOwned + std::fmt::Debug>(json: &str) -> String {
    serde_json::from_str::<T>(json)
        .expect_err("decoding must fail")
        .to_string()
}

/// Decodes, then checks that encoding gives back the same value.
fn roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(&serde_json::to_value(&typed).unwrap(), value);
    typed
}

#[test]
fn initialize_result_of_an_older_server() {
    let answer = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {
            "prompts": {}, "resources": {"subscribe": true}, "tools": {"listChanged": true},
            "logging": {}, "completions": {}, "experimental": {"vendor/streaming": {"chunk": 4096}},
            "vendor/unknown": {"level": 2}
        },
        "serverInfo": {"name": "example-servers/everything", "title": "Everything", "version": "1.0.0"},
        "instructions": "Testing and demonstration server.",
        "_meta": {"trace": "abc"}
    });
    let result: InitializeResult = roundtrip(&answer);
    assert_eq!(
        ProtocolVersion::negotiate(&result.protocol_version),
        Ok(ProtocolVersion::V2025_06_18)
    );
    let caps = &result.capabilities;
    assert_eq!(caps.resources.as_ref().unwrap().subscribe, Some(true));
    assert_eq!(caps.resources.as_ref().unwrap().list_changed, None);
    assert_eq!(caps.tools.as_ref().unwrap().list_changed, Some(true));
    assert!(caps.logging.is_some() && caps.completions.is_some() && caps.tasks.is_none());
    assert_eq!(caps.experimental.as_ref().unwrap()["vendor/streaming"]["chunk"], 4096);
    assert_eq!(caps.extra["vendor/unknown"], json!({"level": 2}));
    assert_eq!(result.server_info.title.as_deref(), Some("Everything"));
    assert_eq!(
        result.instructions.as_deref(),
        Some("Testing and demonstration server.")
    );
    assert_eq!(result.meta.unwrap()["trace"], "abc");
}

#[test]
fn tools_list_page_with_annotations_and_output_schema() {
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
        {"name":"get_weather","title":"Weather","description":"Current weather",
         "inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
         "outputSchema":{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]},
         "annotations":{"title":"Weather lookup","readOnlyHint":true,"openWorldHint":true},
         "icons":[{"src":"https://example.com/sun.png","mimeType":"image/png","sizes":["48x48"],"theme":"light"}],
         "execution":{"taskSupport":"optional"},
         "_meta":{"vendor/cost":1}},
        {"name":"delete_file","inputSchema":{"type":"object"},
         "annotations":{"title":"Delete a file","destructiveHint":true,"idempotentHint":true,"openWorldHint":false}},
        {"name":"plain","inputSchema":{"type":"object"},"execution":{"taskSupport":"someday"},"x-extra":[1,2]}
    ],"nextCursor":"cursor-2"}}"#;
    let page: ListToolsResult = response_result(line);
    assert_eq!(page.next_cursor.as_deref(), Some("cursor-2"));
    let [weather, delete, plain] = &page.tools[..] else {
        panic!("three tools")
    };

    assert_eq!(weather.display_name(), "Weather");
    let hints = weather.annotations.as_ref().unwrap();
    assert!(hints.is_read_only() && !hints.is_destructive() && !hints.is_idempotent() && hints.is_open_world());
    assert_eq!(
        weather.output_schema.as_ref().unwrap()["required"],
        json!(["temperature"])
    );
    assert_eq!(weather.input_schema["properties"]["city"]["type"], "string");
    assert_eq!(
        weather.icons.as_ref().unwrap()[0].theme.as_ref().unwrap().as_str(),
        "light"
    );
    assert_eq!(
        weather.execution.as_ref().unwrap().task_support,
        Some(TaskSupport::Optional)
    );
    assert_eq!(weather.meta.as_ref().unwrap()["vendor/cost"], 1);

    assert_eq!(delete.display_name(), "Delete a file");
    let hints = delete.annotations.as_ref().unwrap();
    assert!(!hints.is_read_only() && hints.is_destructive() && hints.is_idempotent() && !hints.is_open_world());

    assert_eq!(plain.display_name(), "plain");
    assert!(plain.annotations.is_none());
    assert_eq!(
        plain.execution.as_ref().unwrap().task_support,
        Some(TaskSupport::Other("someday".to_owned()))
    );
    assert_eq!(plain.extra["x-extra"], json!([1, 2]));

    // Everything, unknown values included, encodes back as it came.
    let Message::Response(response) = Message::from_str(line).unwrap() else {
        unreachable!()
    };
    let sent: Value = response.into_result().unwrap();
    assert_eq!(serde_json::to_value(&page).unwrap(), sent);
}

#[test]
fn call_result_with_structured_content_and_every_content_type() {
    let answer = json!({
        "content": [
            {"type": "text", "text": "22.5 °C", "annotations": {"audience": ["user", "assistant"], "priority": 0.8, "lastModified": "2025-05-03T14:30:00Z"}},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": {"seconds": 2}},
            {"type": "resource_link", "uri": "file:///tmp/report.csv", "name": "report.csv", "mimeType": "text/csv", "size": 2048},
            {"type": "resource", "resource": {"uri": "file:///tmp/a.txt", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///tmp/a.bin", "blob": "AAEC"}},
            {"type": "x-chart", "series": [1, 2, 3]}
        ],
        "structuredContent": {"temperature": 22.5, "conditions": "cloudy"},
        "isError": false
    });
    let result: CallToolResult = roundtrip(&answer);
    assert!(!result.is_error());
    assert_eq!(result.structured_content.as_ref().unwrap()["temperature"], 22.5);
    let tags: Vec<&str> = result.content.iter().map(ContentBlock::tag).collect();
    assert_eq!(
        tags,
        [
            "text",
            "image",
            "audio",
            "resource_link",
            "resource",
            "resource",
            "x-chart"
        ]
    );

    let ContentBlock::Text(text) = &result.content[0] else {
        panic!()
    };
    assert_eq!(text.text, "22.5 °C");
    let annotations = text.annotations.as_ref().unwrap();
    assert_eq!(
        annotations.audience.as_deref(),
        Some(&[Role::User, Role::Assistant][..])
    );
    assert_eq!(annotations.priority, Some(0.8));
    assert_eq!(annotations.last_modified.as_deref(), Some("2025-05-03T14:30:00Z"));
    let ContentBlock::Audio(audio) = &result.content[2] else {
        panic!()
    };
    assert_eq!(
        (
            audio.mime_type.as_str(),
            audio.meta.as_ref().unwrap()["seconds"].as_i64()
        ),
        ("audio/wav", Some(2))
    );
    let ContentBlock::ResourceLink(link) = &result.content[3] else {
        panic!()
    };
    assert_eq!((link.uri.as_str(), link.size), ("file:///tmp/report.csv", Some(2048)));
    let ContentBlock::Resource(embedded) = &result.content[4] else {
        panic!()
    };
    let ResourceContents::Text(contents) = &embedded.resource else {
        panic!()
    };
    assert_eq!(contents.text, "hello");
    let ContentBlock::Resource(embedded) = &result.content[5] else {
        panic!()
    };
    assert!(matches!(&embedded.resource, ResourceContents::Blob(blob) if blob.blob == "AAEC"));
    assert_eq!(embedded.resource.mime_type(), None);
    let ContentBlock::Unknown(unknown) = &result.content[6] else {
        panic!()
    };
    assert_eq!(unknown["series"], json!([1, 2, 3]));
}

#[test]
fn a_tag_written_with_escapes_or_from_a_reader_decodes_as_the_plain_one() {
    // An escaped tag cannot be borrowed from the input, nor can any tag read from an `io::Read`:
    // both take the owned path of the tag's read.
    let escaped: ContentBlock = serde_json::from_str(r#"{"type":"t\u0065xt","text":"hi"}"#).unwrap();
    assert_eq!(escaped.as_text(), Some("hi"));
    let read: ContentBlock = serde_json::from_reader(&br#"{"type":"text","text":"hi"}"#[..]).unwrap();
    assert_eq!(read.as_text(), Some("hi"));
    let unknown: ContentBlock = serde_json::from_str(r#"{"type":"vide\u006f","frames":2}"#).unwrap();
    let ContentBlock::Unknown(unknown) = unknown else {
        panic!("{unknown:?}")
    };
    assert_eq!(Value::Object(unknown), json!({"type": "video", "frames": 2}));
}

#[test]
fn tool_error_results_decode_as_results() {
    let result: CallToolResult =
        serde_json::from_str(r#"{"content":[{"type":"text","text":"city not found"}],"isError":true}"#).unwrap();
    assert!(result.is_error());
    assert_eq!(result.content[0].as_text(), Some("city not found"));
}

#[test]
fn malformed_answers_fail_with_errors_that_say_what_is_wrong() {
    let cases = [
        (
            decode_error::<CallToolResult>(r#"{"content":[{"type":"text","txt":"hi"}]}"#),
            "invalid content block (type `text`): missing field `text` at line 1 column 38",
        ),
        (
            decode_error::<CallToolResult>(r#"{"content":[{"text":"hi"}]}"#),
            "content block: missing field `type` at line 1 column 25",
        ),
        (
            decode_error::<ContentBlock>(r#"{"type":7,"text":"hi"}"#),
            "content block: `type` must be a string, found 7 at line 1 column 9",
        ),
        (
            decode_error::<ContentBlock>(r#"{"type":["text"],"text":"hi"}"#),
            "content block: `type` must be a string, found [\"text\"] at line 1 column 16",
        ),
        (
            decode_error::<ContentBlock>(r#"{"type":{"is":"text"},"text":"hi"}"#),
            "content block: `type` must be a string, found {\"is\":\"text\"} at line 1 column 21",
        ),
        (
            decode_error::<ContentBlock>(r#"{"type":null,"text":"hi"}"#),
            "content block: `type` must be a string, found null at line 1 column 12",
        ),
        (
            decode_error::<ContentBlock>(r#"{"type":true,"text":"hi"}"#),
            "content block: `type` must be a string, found true at line 1 column 12",
        ),
        (
            decode_error::<ContentBlock>(r#"{"type":-1.5,"text":"hi"}"#),
            "content block: `type` must be a string, found -1.5 at line 1 column 12",
        ),
        (
            decode_error::<ReadResourceResult>(r#"{"contents":[{"uri":"file:///x","mimeType":"text/plain"}]}"#),
            "resource contents of file:///x have neither `text` nor `blob` at line 1 column 56",
        ),
        (
            decode_error::<ProgressNotificationParams>(r#"{"progressToken":1.5,"progress":1}"#),
            "invalid type: floating point `1.5`, expected a progress token (string or integer) at line 1 column 20",
        ),
        (
            decode_error::<LoggingMessageNotificationParams>(r#"{"level":"loud","data":"x"}"#),
            "unknown variant `loud`, expected one of `debug`, `info`, `notice`, `warning`, `error`, `critical`, \
             `alert`, `emergency` at line 1 column 15",
        ),
        (
            decode_error::<InitializeResult>(r#"{"protocolVersion":"2025-06-18","capabilities":{}}"#),
            "missing field `serverInfo` at line 1 column 50",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(actual, expected)| actual != expected)
        .map(|(actual, expected)| format!("expected: {expected}\n  actual: {actual}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn elicitation_requests_of_every_mode() {
    let form = json!({
        "message": "Tell us about you",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "format": "email"},
                "age": {"type": "integer", "minimum": 18},
                "ok": {"type": "boolean", "default": true},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]},
                "legacy": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 2},
                "labels": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}]}},
                "future": {"type": "date", "after": "2020-01-01"}
            },
            "required": ["name"]
        }
    });
    // Without `mode` (2025-06-18 servers) a request is a form; encoding names the mode.
    let params: ElicitRequestParams = serde_json::from_value(form.clone()).unwrap();
    let ElicitRequestParams::Form(form_params) = &params else {
        panic!("a form: {params:?}")
    };
    assert_eq!(params.message(), "Tell us about you");
    let fields = &form_params.requested_schema.properties;
    let kinds: Vec<(&str, &str)> = fields
        .iter()
        .map(|(name, schema)| {
            let kind = match schema {
                PrimitiveSchemaDefinition::String(s) if s.format == Some(StringFormat::Email) => "email",
                PrimitiveSchemaDefinition::Number(n) if n.number_type == NumberType::Integer => "integer",
                PrimitiveSchemaDefinition::Boolean(b) if b.default == Some(true) => "boolean",
                PrimitiveSchemaDefinition::UntitledSingleSelect(_) => "single",
                PrimitiveSchemaDefinition::TitledSingleSelect(_) => "titled single",
                PrimitiveSchemaDefinition::LegacyTitledEnum(_) => "legacy",
                PrimitiveSchemaDefinition::UntitledMultiSelect(_) => "multi",
                PrimitiveSchemaDefinition::TitledMultiSelect(_) => "titled multi",
                PrimitiveSchemaDefinition::Unknown(_) => "unknown",
                other => panic!("unexpected {other:?}"),
            };
            (name.as_str(), kind)
        })
        .collect();
    // In the order the server listed them.
    assert_eq!(
        kinds,
        [
            ("name", "email"),
            ("age", "integer"),
            ("ok", "boolean"),
            ("color", "single"),
            ("size", "titled single"),
            ("legacy", "legacy"),
            ("tags", "multi"),
            ("labels", "titled multi"),
            ("future", "unknown"),
        ]
    );
    let mut with_mode = form.clone();
    with_mode["mode"] = json!("form");
    assert_eq!(serde_json::to_value(&params).unwrap(), with_mode);

    let url = json!({"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e-1"});
    let params: ElicitRequestParams = roundtrip(&url);
    let ElicitRequestParams::Url(url_params) = &params else {
        panic!("a URL request: {params:?}")
    };
    assert_eq!(url_params.elicitation_id.as_deref(), Some("e-1"));

    let future = json!({"mode": "telepathy", "message": "Think of a number"});
    let params: ElicitRequestParams = roundtrip(&future);
    assert_eq!((params.tag(), params.message()), ("telepathy", "Think of a number"));
    assert!(matches!(params, ElicitRequestParams::Unknown(_)));

    assert_eq!(
        serde_json::from_value::<ElicitRequestParams>(json!({"mode": "form", "message": "x"}))
            .unwrap_err()
            .to_string(),
        "invalid elicitation request (mode `form`): missing field `requestedSchema`"
    );
}

#[test]
fn url_elicitation_required_error_data() {
    let data = json!({"elicitations": [{"mode": "url", "message": "Authorize", "url": "https://example.com/oauth", "elicitationId": "e-9"}]});
    let decoded: UrlElicitationRequiredErrorData = roundtrip(&data);
    assert!(
        matches!(&decoded.elicitations[0], ElicitRequestParams::Url(url) if url.url == "https://example.com/oauth")
    );
}

#[test]
fn sampling_request_with_tools() {
    let request = json!({
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18 °C"}], "isError": false}]}
        ],
        "systemPrompt": "Be brief.",
        "includeContext": "thisServer",
        "temperature": 0.7,
        "maxTokens": 400,
        "stopSequences": ["\n\n"],
        "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
        "toolChoice": {"mode": "required"},
        "modelPreferences": {"hints": [{"name": "sonnet"}], "costPriority": 1, "speedPriority": 0.5}
    });
    let params: CreateMessageRequestParams = roundtrip(&request);
    assert_eq!(params.include_context, Some(IncludeContext::ThisServer));
    assert_eq!(
        params.tool_choice.as_ref().unwrap().mode,
        Some(ToolChoiceMode::Required)
    );
    assert_eq!(params.model_preferences.as_ref().unwrap().cost_priority, Some(1.0));
    assert!(
        matches!(&params.messages[0].content, SamplingContent::Single(SamplingContentBlock::Text(t)) if t.text == "Weather in Paris?")
    );
    let SamplingContent::Multiple(blocks) = &params.messages[2].content else {
        panic!()
    };
    let SamplingContentBlock::ToolResult(result) = &blocks[0] else {
        panic!()
    };
    assert_eq!(
        (result.tool_use_id.as_str(), result.content[0].as_text()),
        ("c1", Some("18 °C"))
    );
    assert_eq!(params.messages[1].content.blocks()[0].tag(), "tool_use");
}

#[test]
fn notifications_from_the_server() {
    let log: LoggingMessageNotificationParams =
        roundtrip(&json!({"level": "warning", "logger": "db", "data": {"error": "slow query", "ms": 812}}));
    assert!(log.level > LoggingLevel::Info && log.level < LoggingLevel::Error);
    assert_eq!(log.data["ms"], 812);

    let progress: ProgressNotificationParams =
        roundtrip(&json!({"progressToken": "t-1", "progress": 50, "total": 100, "message": "halfway"}));
    assert_eq!(
        (progress.progress_token, progress.progress, progress.total),
        (ProgressToken::from("t-1"), 50.0, Some(100.0))
    );
    let progress: ProgressNotificationParams = roundtrip(&json!({"progressToken": 9, "progress": 0.25}));
    assert_eq!(progress.progress_token, ProgressToken::Number(9));

    let status: TaskStatusNotificationParams = roundtrip(&json!({
        "taskId": "t-7", "status": "input_required", "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:05Z", "ttl": null, "pollInterval": 500
    }));
    assert_eq!(
        (status.status.clone(), status.ttl, status.poll_interval),
        (TaskStatus::InputRequired, None, Some(500))
    );
    assert!(!status.status.is_terminal());
}

#[test]
fn what_the_client_encodes_is_minimal_and_exact() {
    let params = InitializeRequestParams::new(
        ProtocolVersion::LATEST,
        ClientCapabilities::default(),
        Implementation::new("plexus", "0.1.0"),
    );
    assert_eq!(
        serde_json::to_string(&params).unwrap(),
        r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"plexus","version":"0.1.0"}}"#
    );
    assert_eq!(
        serde_json::to_string(&ProgressNotificationParams::new(3, 50.0, Some(0.5))).unwrap(),
        r#"{"progressToken":3,"progress":50,"total":0.5}"#
    );
    assert_eq!(
        serde_json::to_string(&ElicitResult::decline()).unwrap(),
        r#"{"action":"decline"}"#
    );
    let accepted: ElicitResult = serde_json::from_str(r#"{"action":"accept","content":{"n":1}}"#).unwrap();
    assert_eq!(accepted.action, ElicitAction::Accept);
    assert_eq!(
        serde_json::to_string(&ContentBlock::text("hi")).unwrap(),
        r#"{"type":"text","text":"hi"}"#
    );
}
