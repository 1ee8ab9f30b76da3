//! The stateless era (2026-07-28): eras and version choice, the request envelope, `resultType`
//! and multi-round-trip requests, caching hints, subscriptions and the new errors; and that the
//! initialize era's messages encode exactly as before.

use plexus_jsonrpc::{ErrorCode, ErrorObject, RequestId};
use plexus_protocol::envelope::{self, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY};
use plexus_protocol::{
    CacheScope, CallToolRequestParams, CallToolResult, ClientCapabilities, CreateMessageResult, DiscoverResult,
    ElicitResult, ElicitationCapability, EnvelopeError, Era, GetPromptRequestParams, Implementation, InputRequest,
    InputRequiredResult, InputResponse, InputResponseParams, InputResponses, JsonObject, ListRootsResult,
    ListToolsResult, LoggingLevel, MissingCapabilityData, NegotiationError, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, RequestEnvelope, RequestMeta, ResultOrInputRequired, ResultType,
    ResultTypeError, SamplingCapability, SamplingContentBlock, SubscriptionFilter, SubscriptionsListenResult,
    UnsupportedVersionData, effective_ttl_ms, errors,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn eras_and_the_version_sets() {
    assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Stateless);
    assert!(
        ProtocolVersion::SUPPORTED
            .iter()
            .all(|v| v.era() == Era::Initialize && !v.is_stateless())
    );
    assert!(ProtocolVersion::STATELESS.iter().all(|v| v.is_stateless()));
    assert_eq!(ProtocolVersion::LATEST_STATELESS, ProtocolVersion::STATELESS[0]);
    assert_eq!(Era::Initialize.versions(), ProtocolVersion::SUPPORTED);
    assert_eq!(Era::Stateless.versions(), ProtocolVersion::STATELESS);
    // ALL is both sets, newest first.
    let mut both: Vec<_> = ProtocolVersion::STATELESS
        .into_iter()
        .chain(ProtocolVersion::SUPPORTED)
        .collect();
    both.sort_by(|a, b| b.cmp(a));
    assert_eq!(both, ProtocolVersion::ALL);
    assert_eq!("2026-07-28".parse(), Ok(ProtocolVersion::V2026_07_28));
    assert_eq!(ProtocolVersion::V2026_07_28.to_string(), "2026-07-28");
    assert_eq!(Era::Stateless.to_string(), "stateless");
    // Tasks left the core protocol in 2026-07-28; the rest carried on.
    let modern = ProtocolVersion::V2026_07_28;
    assert!(!modern.has_tasks() && !modern.has_json_rpc_batching());
    assert!(modern.has_url_elicitation() && modern.has_sampling_tools() && modern.has_protocol_version_header());
}

#[test]
fn the_initialize_era_never_offers_or_accepts_a_stateless_version() {
    assert_eq!(ProtocolVersion::LATEST, ProtocolVersion::V2025_11_25);
    assert!(!ProtocolVersion::SUPPORTED.contains(&ProtocolVersion::V2026_07_28));
    assert!(matches!(
        ProtocolVersion::negotiate("2026-07-28"),
        Err(NegotiationError::UnsupportedVersion { .. })
    ));
    assert_eq!(ProtocolVersion::answer("2026-07-28"), ProtocolVersion::LATEST);
}

#[test]
fn a_stateless_version_is_chosen_from_the_servers_list() {
    let choose = |list: &[&str]| ProtocolVersion::choose_stateless(list);
    assert_eq!(choose(&["2026-07-28"]), Ok(ProtocolVersion::V2026_07_28));
    assert_eq!(
        choose(&["2025-11-25", "2099-01-01", "2026-07-28"]),
        Ok(ProtocolVersion::V2026_07_28)
    );
    let err = choose(&["2025-11-25", "2025-06-18"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the server supports protocol versions \"2025-11-25\", \"2025-06-18\", none of which this client speaks \
         (it speaks: 2026-07-28)"
    );
    assert!(
        matches!(err, NegotiationError::NoCommonVersion { ref server_supported, .. } if server_supported.len() == 2)
    );
    assert_eq!(
        choose(&[]).unwrap_err().to_string(),
        "the server supports protocol versions [], none of which this client speaks (it speaks: 2026-07-28)"
    );
    // A pinned set of either era: the newest common one, whatever the orders.
    let ours = [
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
    ];
    assert_eq!(
        ProtocolVersion::choose_among(&ours, &["2025-06-18", "2025-11-25"]),
        Ok(ProtocolVersion::V2025_11_25)
    );
}

#[test]
fn the_version_is_chosen_from_a_32022_error() {
    let line = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28","2025-11-25"],"requested":"1900-01-01"}}}"#;
    let plexus_jsonrpc::Message::Response(response) = plexus_jsonrpc::Message::from_str(line).unwrap() else {
        panic!("not a response")
    };
    let error = response.outcome.unwrap_err();
    assert_eq!(error.code, errors::UNSUPPORTED_PROTOCOL_VERSION);
    assert!(errors::is_stateless_era_error(&error));
    let data = UnsupportedVersionData::from_error(&error).unwrap();
    assert_eq!(data.requested, "1900-01-01");
    assert_eq!(data.choose_version(), Ok(ProtocolVersion::V2026_07_28));

    // Only initialize-era versions in common: no stateless version to retry with.
    let data = UnsupportedVersionData {
        supported: vec!["2025-11-25".to_owned()],
        requested: "2026-07-28".to_owned(),
        ..Default::default()
    };
    assert!(data.choose_version().is_err());
    // Built and read back.
    let error = data.to_error("Unsupported protocol version").unwrap();
    assert_eq!(error.code, ErrorCode(-32022));
    assert_eq!(UnsupportedVersionData::from_error(&error).unwrap(), data);
}

#[test]
fn error_codes_and_their_data() {
    assert_eq!(errors::HEADER_MISMATCH, ErrorCode(-32020));
    assert_eq!(errors::MISSING_REQUIRED_CLIENT_CAPABILITY, ErrorCode(-32021));
    assert_eq!(errors::UNSUPPORTED_PROTOCOL_VERSION, ErrorCode(-32022));
    assert_eq!(
        errors::name(ErrorCode(-32021)),
        Some("missing required client capability")
    );
    assert_eq!(errors::name(ErrorCode::METHOD_NOT_FOUND), Some("method not found"));
    assert_eq!(errors::name(ErrorCode(-32001 - 3)), None);

    assert!(errors::is_resource_not_found(ErrorCode(-32602)));
    assert!(errors::is_resource_not_found(ErrorCode(-32002)));
    assert!(!errors::is_resource_not_found(ErrorCode(-32601)));
    // The numbers of earlier drafts mean nothing.
    for code in [-32001, -32003, -32004] {
        assert!(!errors::is_stateless_era_error(&ErrorObject::new(ErrorCode(code), "x")));
    }

    let needed = MissingCapabilityData {
        required_capabilities: ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        },
        ..Default::default()
    };
    let error = needed.to_error("elicitation needed").unwrap();
    assert_eq!(
        serde_json::to_value(&error).unwrap(),
        json!({"code": -32021, "message": "elicitation needed", "data": {"requiredCapabilities": {"elicitation": {}}}})
    );
    assert!(errors::is_stateless_era_error(&error));
    assert_eq!(MissingCapabilityData::from_error(&error).unwrap(), needed);
    // Without its data, -32021 and -32022 prove nothing; -32020 has none.
    assert!(!errors::is_stateless_era_error(&ErrorObject::new(
        ErrorCode(-32021),
        "x"
    )));
    assert!(!errors::is_stateless_era_error(&ErrorObject::new(
        ErrorCode(-32022),
        "x"
    )));
    assert!(errors::is_stateless_era_error(&ErrorObject::new(
        ErrorCode(-32020),
        "x"
    )));
    assert!(matches!(
        UnsupportedVersionData::from_error(&error),
        Err(plexus_protocol::ErrorDataError::WrongCode { .. })
    ));
    assert!(matches!(
        UnsupportedVersionData::from_error(&ErrorObject::new(ErrorCode(-32022), "x")),
        Err(plexus_protocol::ErrorDataError::Missing { .. })
    ));
}

#[test]
fn result_types_are_classified() {
    assert_eq!(ResultType::classify(&json!({"content": []})), Ok(ResultType::Complete));
    assert_eq!(
        ResultType::classify(&json!({"resultType": "complete"})),
        Ok(ResultType::Complete)
    );
    assert_eq!(
        ResultType::classify(&json!({"resultType": "input_required", "requestState": "x"})),
        Ok(ResultType::InputRequired)
    );
    assert_eq!(
        ResultType::classify(&json!({"resultType": "Complete"})),
        Err(ResultTypeError::Unknown {
            value: "Complete".to_owned()
        })
    );
    assert_eq!(
        ResultType::classify(&json!({"resultType": 1})).unwrap_err().to_string(),
        "resultType must be a string, found 1"
    );
    assert_eq!(
        ResultType::classify(&json!([])),
        Err(ResultTypeError::NotAnObject { found: "an array" })
    );
    assert_eq!(
        serde_json::to_value(ResultType::InputRequired).unwrap(),
        json!("input_required")
    );
}

#[test]
fn a_result_is_complete_or_input_required() {
    let decode = |value: Value| serde_json::from_value::<ResultOrInputRequired<CallToolResult>>(value);
    // No resultType: complete (a server of an earlier revision), and encoded back unchanged.
    let plain = json!({"content": [{"type": "text", "text": "ok"}]});
    let ResultOrInputRequired::Complete(result) = decode(plain.clone()).unwrap() else {
        panic!("not complete")
    };
    assert_eq!(serde_json::to_value(&result).unwrap(), plain);
    let complete = json!({"resultType": "complete", "content": []});
    assert_eq!(
        serde_json::to_value(decode(complete.clone()).unwrap()).unwrap(),
        complete
    );
    // input_required, with the request state kept byte for byte.
    let state = "{\"nonce\":\"a b\\u00e9\",\"originalId\":2}  ";
    let input = json!({"resultType": "input_required", "requestState": state});
    let ResultOrInputRequired::InputRequired(required) = decode(input.clone()).unwrap() else {
        panic!("not input_required")
    };
    assert_eq!(required.request_state.as_deref(), Some(state));
    assert!(required.input_requests.is_none() && !required.is_empty());
    assert_eq!(serde_json::to_value(&required).unwrap(), input);
    // Anything else is an error, even when the rest would decode.
    let err = decode(json!({"resultType": "partial", "content": []})).unwrap_err();
    assert!(err.to_string().contains("unknown resultType \"partial\""), "{err}");
    // An InputRequiredResult is never complete.
    assert!(serde_json::from_value::<InputRequiredResult>(json!({"resultType": "complete"})).is_err());
    assert!(serde_json::from_value::<InputRequiredResult>(json!({"requestState": "x"})).is_err());
}

#[test]
fn input_requests_keep_the_servers_order_and_unknown_methods() {
    let result: InputRequiredResult = serde_json::from_value(json!({
        "resultType": "input_required",
        "inputRequests": {
            "z_roots": {"method": "roots/list"},
            "a_confirm": {"method": "elicitation/create", "params": {"message": "Go?", "requestedSchema": {"type": "object", "properties": {}}}},
            "m_sample": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
            "b_future": {"method": "files/pick", "params": {"glob": "*.rs"}}
        }
    }))
    .unwrap();
    let requests = result.input_requests.as_ref().unwrap();
    let keys: Vec<_> = requests.keys().map(String::as_str).collect();
    assert_eq!(keys, ["z_roots", "a_confirm", "m_sample", "b_future"]);
    let tags: Vec<_> = requests.values().map(InputRequest::tag).collect();
    assert_eq!(
        tags,
        [
            "roots/list",
            "elicitation/create",
            "sampling/createMessage",
            "files/pick"
        ]
    );
    assert!(matches!(requests["b_future"], InputRequest::Unknown(_)));
    assert!(matches!(requests["a_confirm"], InputRequest::Elicit(ref e) if e.params.message() == "Go?"));
    // A known method with malformed params is an error naming it, not Unknown.
    let err =
        serde_json::from_value::<InputRequest>(json!({"method": "sampling/createMessage", "params": {}})).unwrap_err();
    assert!(err.to_string().contains("sampling/createMessage"), "{err}");
}

#[test]
fn input_responses_decode_by_their_fields() {
    let responses: InputResponses = serde_json::from_value(json!({
        "e": {"action": "decline"},
        "s": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
        "r": {"roots": [{"uri": "file:///p"}]},
        "x": {"files": []}
    }))
    .unwrap();
    assert!(matches!(responses["e"], InputResponse::Elicit(_)));
    assert!(matches!(responses["s"], InputResponse::Sampling(_)));
    assert!(matches!(responses["r"], InputResponse::ListRoots(_)));
    assert!(matches!(responses["x"], InputResponse::Unknown(_)));
    let keys: Vec<_> = responses.keys().map(String::as_str).collect();
    assert_eq!(keys, ["e", "s", "r", "x"]);
}

#[test]
fn a_retry_echoes_the_state_exactly_and_carries_the_responses() {
    let required = InputRequiredResult {
        request_state: Some("opaque ✓ state".to_owned()),
        ..Default::default()
    };
    let mut responses = InputResponses::new();
    responses.insert("confirm".to_owned(), ElicitResult::accept(None).into());
    responses.insert(
        "sample".to_owned(),
        CreateMessageResult::new("m", SamplingContentBlock::text("hi"), None).into(),
    );
    responses.insert("roots".to_owned(), ListRootsResult::default().into());

    let mut call = CallToolRequestParams::new("deploy", Some(object(json!({"env": "prod"}))));
    required.prepare_retry(&mut call, responses.clone());
    let wire = serde_json::to_value(&call).unwrap();
    assert_eq!(wire["requestState"], "opaque ✓ state");
    assert_eq!(wire["inputResponses"]["confirm"], json!({"action": "accept"}));
    assert_eq!(wire["inputResponses"]["roots"], json!({"roots": []}));
    assert_eq!(wire["arguments"], json!({"env": "prod"}));
    let back: CallToolRequestParams = serde_json::from_value(wire).unwrap();
    assert_eq!(back, call);

    // No state from the server: none in the retry, even if the params had one.
    let mut prompt = GetPromptRequestParams::new("p", None);
    prompt.request_state = Some("stale".to_owned());
    InputRequiredResult::default().prepare_retry(&mut prompt, responses);
    assert_eq!(prompt.request_state(), None);
    assert_eq!(prompt.input_responses().map(InputResponses::len), Some(3));

    let mut read = ReadResourceRequestParams::new("file:///a");
    read.set_input(None, Some("s".to_owned()));
    assert_eq!(
        serde_json::to_value(&read).unwrap(),
        json!({"uri": "file:///a", "requestState": "s"})
    );
}

#[test]
fn the_initialize_era_encodes_exactly_as_before() {
    // The new optional fields are not written when absent.
    assert_eq!(
        serde_json::to_value(CallToolRequestParams::new("t", None)).unwrap(),
        json!({"name": "t"})
    );
    assert_eq!(
        serde_json::to_value(GetPromptRequestParams::new("p", None)).unwrap(),
        json!({"name": "p"})
    );
    assert_eq!(
        serde_json::to_value(ReadResourceRequestParams::new("u")).unwrap(),
        json!({"uri": "u"})
    );
    assert_eq!(
        serde_json::to_value(ListToolsResult::default()).unwrap(),
        json!({"tools": []})
    );
    assert_eq!(
        serde_json::to_value(ReadResourceResult::default()).unwrap(),
        json!({"contents": []})
    );
    // The envelope's keys in an initialize-era `_meta` stay where they were: in `extra`.
    let meta: RequestMeta = serde_json::from_value(json!({"progressToken": 1, PROTOCOL_VERSION_KEY: 7})).unwrap();
    assert_eq!(meta.extra[PROTOCOL_VERSION_KEY], 7);
}

#[test]
fn ttl_and_cache_scope() {
    assert_eq!(effective_ttl_ms(None), 0);
    assert_eq!(effective_ttl_ms(Some(-5)), 0);
    assert_eq!(effective_ttl_ms(Some(300_000)), 300_000);
    let page: ListToolsResult =
        serde_json::from_value(json!({"tools": [], "ttlMs": 1500, "cacheScope": "private"})).unwrap();
    assert_eq!(page.ttl_ms(), 1500);
    assert_eq!(page.ttl(), std::time::Duration::from_millis(1500));
    assert_eq!(page.cache_scope, Some(CacheScope::Private));
    assert!(page.extra.is_empty());
    let negative: ReadResourceResult = serde_json::from_value(json!({"contents": [], "ttlMs": -1})).unwrap();
    assert_eq!((negative.ttl_ms(), negative.ttl_ms), (0, Some(-1)));
    assert_eq!(serde_json::to_value(&negative).unwrap()["ttlMs"], -1);
    let absent = DiscoverResult::default();
    assert_eq!(absent.ttl_ms(), 0);
    // An unknown scope is kept, and not shared.
    let odd: ListToolsResult = serde_json::from_value(json!({"tools": [], "cacheScope": "tenant"})).unwrap();
    assert_eq!(odd.cache_scope, Some(CacheScope::Other("tenant".to_owned())));
    assert!(!odd.cache_scope.as_ref().unwrap().is_shared() && CacheScope::Public.is_shared());
    assert_eq!(
        serde_json::to_value(&odd).unwrap(),
        json!({"tools": [], "cacheScope": "tenant"})
    );
}

#[test]
fn the_envelope_is_written_next_to_other_meta_keys_and_read_back() {
    let envelope = RequestEnvelope::new(
        ProtocolVersion::V2026_07_28,
        ClientCapabilities {
            sampling: Some(SamplingCapability::default()),
            ..Default::default()
        },
    )
    .with_client_info(Implementation::new("plexus", "0.1.0"))
    .with_log_level(LoggingLevel::Warning);

    // Typed params: through RequestMeta, keeping the progress token.
    let mut call = CallToolRequestParams::new("t", None);
    call.meta = Some(RequestMeta::with_progress_token("p-1"));
    call.meta.as_mut().unwrap().set_envelope(&envelope).unwrap();
    let wire = serde_json::to_value(&call).unwrap();
    assert_eq!(
        wire["_meta"],
        json!({
            "progressToken": "p-1",
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"sampling": {}},
            CLIENT_INFO_KEY: {"name": "plexus", "version": "0.1.0"},
            LOG_LEVEL_KEY: "warning",
        })
    );
    let back: CallToolRequestParams = serde_json::from_value(wire).unwrap();
    assert_eq!(back.meta.as_ref().unwrap().envelope().unwrap(), envelope);

    // Raw params: `_meta` created when absent, other keys kept, stale optional keys removed.
    let mut params = object(json!({"cursor": "c", "_meta": {"traceparent": "00-1", LOG_LEVEL_KEY: "debug"}}));
    let plain = RequestEnvelope::new(ProtocolVersion::V2026_07_28, ClientCapabilities::default());
    plain.write_to_params(&mut params).unwrap();
    assert_eq!(
        Value::Object(params.clone()),
        json!({"cursor": "c", "_meta": {"traceparent": "00-1", PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}})
    );
    assert_eq!(RequestEnvelope::read_from_params(&params).unwrap(), plain);
    let enveloped = plain
        .envelop(&PaginatedRequestParams::page(Some("c".to_owned())))
        .unwrap();
    assert_eq!(enveloped["cursor"], "c");
    assert_eq!(plain.envelop(&()).unwrap().keys().collect::<Vec<_>>(), ["_meta"]);
    assert!(matches!(plain.envelop(&[1]), Err(EnvelopeError::ParamsNotAnObject)));

    // What a server checks: required keys, their types.
    let missing = object(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}));
    assert_eq!(
        RequestEnvelope::read_from_params(&missing).unwrap_err().to_string(),
        "the request's _meta lacks the required key \"io.modelcontextprotocol/clientCapabilities\""
    );
    assert!(matches!(
        RequestEnvelope::read_from_params(&JsonObject::new()),
        Err(EnvelopeError::Missing {
            key: PROTOCOL_VERSION_KEY
        })
    ));
    let bad_level = object(
        json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}, LOG_LEVEL_KEY: "loud"}}),
    );
    assert!(matches!(
        RequestEnvelope::read_from_params(&bad_level),
        Err(EnvelopeError::Invalid { key: LOG_LEVEL_KEY, .. })
    ));
    let not_object = object(json!({"_meta": 3}));
    assert!(matches!(
        plain.write_to_params(&mut not_object.clone()),
        Err(EnvelopeError::MetaNotAnObject)
    ));
    // An unknown version is kept, and said to be unknown.
    let future = object(json!({"_meta": {PROTOCOL_VERSION_KEY: "2099-01-01", CLIENT_CAPABILITIES_KEY: {}}}));
    let read = RequestEnvelope::read_from_params(&future).unwrap();
    assert_eq!(read.protocol_version, "2099-01-01");
    assert!(read.version().is_err());
}

#[test]
fn server_info_and_subscription_ids_in_meta() {
    let mut meta = JsonObject::new();
    assert_eq!(envelope::server_info(Some(&meta)).unwrap(), None);
    envelope::set_server_info(&mut meta, &Implementation::new("srv", "2")).unwrap();
    assert_eq!(envelope::server_info(Some(&meta)).unwrap().unwrap().name, "srv");
    envelope::set_subscription_id(&mut meta, &RequestId::Number(7)).unwrap();
    assert_eq!(
        envelope::subscription_id(Some(&meta)).unwrap(),
        Some(RequestId::Number(7))
    );

    let params = json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}});
    assert_eq!(
        envelope::notification_subscription_id(Some(&params)).unwrap(),
        Some(RequestId::String("listen-1".to_owned()))
    );
    assert_eq!(envelope::notification_subscription_id(Some(&json!({}))).unwrap(), None);
    assert_eq!(envelope::notification_subscription_id(None).unwrap(), None);
    assert!(
        envelope::notification_subscription_id(Some(
            &json!({"_meta": {"io.modelcontextprotocol/subscriptionId": true}})
        ))
        .is_err()
    );

    let ended: SubscriptionsListenResult = serde_json::from_value(
        json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 3}}),
    )
    .unwrap();
    assert_eq!(ended.subscription_id().unwrap(), Some(RequestId::Number(3)));
    assert_eq!(ended.result_type, Some(ResultType::Complete));
}

#[test]
fn a_subscription_filter_says_what_was_not_granted() {
    let asked = SubscriptionFilter {
        tools_list_changed: Some(true),
        prompts_list_changed: Some(true),
        resource_subscriptions: Some(vec!["file:///a".to_owned(), "file:///b".to_owned()]),
        ..Default::default()
    };
    let granted = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["file:///b".to_owned()]),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(asked.not_granted_by(&granted)).unwrap(),
        json!({"promptsListChanged": true, "resourceSubscriptions": ["file:///a"]})
    );
    assert!(asked.not_granted_by(&asked).is_empty());
    assert!(SubscriptionFilter::default().is_empty() && !asked.is_empty());
}

fn any_capabilities() -> impl Strategy<Value = ClientCapabilities> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(roots, sampling, elicitation)| ClientCapabilities {
        roots: roots.then(Default::default),
        sampling: sampling.then(Default::default),
        elicitation: elicitation.then(|| ElicitationCapability {
            form: Some(JsonObject::new()),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn any_envelope() -> impl Strategy<Value = RequestEnvelope> {
    (
        prop_oneof![Just("2026-07-28".to_owned()), "\\PC{0,12}"],
        any_capabilities(),
        proptest::option::of(("[a-z]{1,8}", "[0-9.]{1,6}")),
        proptest::option::of(prop::sample::select(LoggingLevel::ALL.to_vec())),
    )
        .prop_map(
            |(protocol_version, client_capabilities, info, log_level)| RequestEnvelope {
                protocol_version,
                client_capabilities,
                client_info: info.map(|(name, version)| Implementation::new(name, version)),
                log_level,
            },
        )
}

proptest! {
    /// Whatever the params' `_meta` held, writing an envelope and reading it back gives the same
    /// envelope, and every other key of `_meta` and of the params is unchanged.
    #[test]
    fn the_envelope_round_trips_and_keeps_other_keys(
        envelope in any_envelope(),
        earlier in any_envelope(),
        others in prop::collection::btree_map("[a-zA-Z./]{1,12}", "\\PC{0,8}", 0..5),
        cursor in proptest::option::of("\\PC{0,8}"),
    ) {
        let mut meta: JsonObject = others.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        earlier.write_to_meta(&mut meta).unwrap();
        let mut params = JsonObject::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".to_owned(), Value::String(cursor.clone()));
        }
        params.insert("_meta".to_owned(), Value::Object(meta));

        envelope.write_to_params(&mut params).unwrap();
        // Through text, as a server would get it.
        let text = serde_json::to_string(&params).unwrap();
        let received: JsonObject = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(RequestEnvelope::read_from_params(&received).unwrap(), envelope.clone());
        prop_assert_eq!(received.get("cursor").and_then(Value::as_str), cursor.as_deref());
        let meta = received["_meta"].as_object().unwrap();
        let envelope_keys = [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY];
        for (key, value) in &others {
            if !envelope_keys.contains(&key.as_str()) {
                prop_assert_eq!(&meta[key], &Value::String(value.clone()));
            }
        }
        let expected = others.keys().filter(|k| !envelope_keys.contains(&k.as_str())).count()
            + 2 + usize::from(envelope.client_info.is_some()) + usize::from(envelope.log_level.is_some());
        prop_assert_eq!(meta.len(), expected);

        // The same through a typed RequestMeta.
        let mut typed: RequestMeta = serde_json::from_value(received["_meta"].clone()).unwrap();
        typed.set_envelope(&earlier).unwrap();
        typed.set_envelope(&envelope).unwrap();
        let again: RequestMeta = serde_json::from_value(serde_json::to_value(&typed).unwrap()).unwrap();
        prop_assert_eq!(again.envelope().unwrap(), envelope);
    }
}

#[test]
fn discover_result_reads_identity_and_version() {
    let result: DiscoverResult = serde_json::from_value(json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}},
        "ttlMs": 0,
        "cacheScope": "private",
        "serverInfo": {"name": "mock", "version": "1"}
    }))
    .unwrap();
    // The conformance mocks' top-level serverInfo is kept, but the identity is read from _meta.
    assert!(result.extra.contains_key("serverInfo"));
    assert_eq!(result.server_info().unwrap(), None);
    assert_eq!(result.choose_version(), Ok(ProtocolVersion::V2026_07_28));
    let legacy_only = DiscoverResult {
        supported_versions: vec!["2025-11-25".to_owned()],
        ..Default::default()
    };
    assert!(legacy_only.choose_version().is_err());
}
