//! Fuzzes the stateless era's (2026-07-28) message parts, straight from a peer: the request
//! envelope in `params._meta`, results with their `resultType`, the `input_required` result with
//! its input requests and `requestState`, the client's input responses, the `server/discover`
//! result, and the subscription a notification names.
//!
//! Checked: nothing panics; whatever decodes encodes to JSON that decodes to an equal value
//! (unknown fields kept), and encodes to the same JSON again; an envelope read from params and
//! written into them (or into an empty `_meta`) reads back the same, keeping the other keys;
//! `resultType` classifies a result exactly as the result types decode it; a retry prepared from
//! an `input_required` result echoes its `requestState` byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_protocol::envelope::{notification_subscription_id, server_info};
use plexus_protocol::{
    CallToolRequestParams, CallToolResult, DiscoverResult, GetPromptResult, InputRequiredResult, InputResponse,
    InputResponseParams, InputResponses, JsonObject, ReadResourceResult, RequestEnvelope, ResultOrInputRequired,
    ResultType,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes `value` as `T`; when it does, checks that it encodes to JSON that decodes to an
/// equal `T` and encodes to the same JSON again.
fn round_trips<T>(value: &Value) -> Option<T>
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let decoded: T = serde_json::from_value(value.clone()).ok()?;
    let encoded = serde_json::to_value(&decoded).expect("a decoded value encodes");
    let again: T = serde_json::from_value(encoded.clone())
        .unwrap_or_else(|e| panic!("{encoded} (from {value}) does not decode again: {e}"));
    assert_eq!(again, decoded, "{value} changed through {encoded}");
    assert_eq!(
        serde_json::to_value(&again).expect("encodes"),
        encoded,
        "encoding is not stable"
    );
    Some(decoded)
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };

    if let Value::Object(params) = &value {
        check_envelope(params);
    }
    let _ = notification_subscription_id(Some(&value));
    let _ = server_info(value.get("_meta").and_then(Value::as_object));

    let classified = ResultType::classify(&value);
    let input_required = round_trips::<InputRequiredResult>(&value);
    if let Some(input) = &input_required {
        assert_eq!(classified, Ok(ResultType::InputRequired), "{value}");
        let mut retry = CallToolRequestParams::new("tool", None);
        input.prepare_retry(&mut retry, InputResponses::new());
        assert_eq!(retry.request_state(), input.request_state.as_deref());
        assert!(retry.input_responses().is_none());
    }
    check_answer::<CallToolResult>(&value, classified.as_ref().ok(), input_required.as_ref());
    check_answer::<GetPromptResult>(&value, classified.as_ref().ok(), input_required.as_ref());
    check_answer::<ReadResourceResult>(&value, classified.as_ref().ok(), input_required.as_ref());

    let _ = round_trips::<InputResponse>(&value);
    let _ = round_trips::<InputResponses>(&value);
    let _ = round_trips::<DiscoverResult>(&value);
});

/// A result that may need input, as `T` or the input-required result, by its `resultType`.
fn check_answer<T>(value: &Value, classified: Option<&ResultType>, input_required: Option<&InputRequiredResult>)
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    match round_trips::<ResultOrInputRequired<T>>(value) {
        Some(ResultOrInputRequired::Complete(_)) => assert_eq!(classified, Some(&ResultType::Complete), "{value}"),
        Some(ResultOrInputRequired::InputRequired(input)) => {
            assert_eq!(Some(&input), input_required, "{value}");
        }
        None => assert!(
            input_required.is_none(),
            "{value} is an input-required result but not an answer"
        ),
    }
}

/// The envelope of `params`, when it has one, written back and read again.
fn check_envelope(params: &JsonObject) {
    let Ok(envelope) = RequestEnvelope::read_from_params(params) else {
        return;
    };
    let mut written = params.clone();
    envelope
        .write_to_params(&mut written)
        .expect("an envelope read from params is written back");
    assert_eq!(
        RequestEnvelope::read_from_params(&written).expect("reads again"),
        envelope
    );
    let (Some(Value::Object(before)), Some(Value::Object(after))) = (params.get("_meta"), written.get("_meta")) else {
        panic!("_meta vanished")
    };
    for (key, value) in before {
        if !key.starts_with("io.modelcontextprotocol/") {
            assert_eq!(after.get(key), Some(value), "the _meta key {key:?} was not kept");
        }
    }
    let mut meta = JsonObject::new();
    envelope.write_to_meta(&mut meta).expect("writes");
    assert_eq!(RequestEnvelope::read_from_meta(&meta).expect("reads"), envelope);
    let encoded = serde_json::to_string(&Value::Object(meta)).expect("encodes");
    let reread: JsonObject = serde_json::from_str(&encoded).expect("decodes");
    assert_eq!(RequestEnvelope::read_from_meta(&reread).expect("reads"), envelope);
}
