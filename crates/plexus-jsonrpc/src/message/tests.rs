use super::*;
use proptest::prelude::*;

fn decode(text: &str) -> Result<Message, DecodeError> {
    Message::from_str(text)
}

#[test]
fn classifies_the_four_shapes() {
    let Message::Request(r) =
        decode(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"x"}}"#).unwrap()
    else {
        panic!()
    };
    assert_eq!(r.id, RequestId::from("a"));
    assert_eq!(r.method, "tools/list");
    assert_eq!(r.params.unwrap().get(), r#"{"cursor":"x"}"#);
    let Message::Notification(n) = decode(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap() else {
        panic!()
    };
    assert!(n.params.is_none());
    let Message::Response(ok) = decode(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#).unwrap() else {
        panic!()
    };
    assert_eq!(ok.outcome.unwrap().get(), "{}");
    let Message::Response(err) =
        decode(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#).unwrap()
    else {
        panic!()
    };
    assert_eq!(err.id, None);
    assert_eq!(err.outcome.unwrap_err(), ErrorObject::new(-32700, "Parse error"));
}

#[test]
fn rejects_each_malformed_shape_with_its_reason() {
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            "request x has a null id (MCP forbids null ids)",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
            "a message has both \"method\" and \"result\"/\"error\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            "a response has both \"result\" and \"error\"",
        ),
        (r#"{"jsonrpc":"2.0","result":{}}"#, "a result response without an id"),
        (
            r#"{"jsonrpc":"2.0","id":1}"#,
            "neither \"method\" nor \"result\" nor \"error\"",
        ),
        (
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
            "\"params\" of x must be an object or array",
        ),
    ];
    for (text, reason) in cases {
        let error = decode(text).unwrap_err();
        assert!(matches!(error, DecodeError::Invalid { .. }), "{text}: {error:?}");
        assert_eq!(
            crate::error_chain(&error),
            format!("invalid JSON-RPC message: {reason}"),
            "{text}"
        );
    }
    assert_eq!(
        decode(r#"{"method":"x"}"#).unwrap_err(),
        DecodeError::WrongVersion {
            found: "missing".into()
        }
    );
    assert_eq!(
        decode(r#"[{"jsonrpc":"2.0","method":"x"}]"#).unwrap_err(),
        DecodeError::Batch
    );
    assert_eq!(decode("true").unwrap_err(), DecodeError::NotAnObject);
    assert!(matches!(decode("[oops").unwrap_err(), DecodeError::InvalidJson { .. }));
}

#[test]
fn a_null_result_is_still_a_result() {
    let Message::Response(r) = decode(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap() else {
        panic!()
    };
    assert_eq!(r.outcome.unwrap().get(), "null");
}

#[test]
fn pretty_printed_raw_values_encode_on_one_line() {
    let msg = decode("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\r\n  \"text\": \"a\\nb\"\n}}").unwrap();
    let mut out = Vec::new();
    msg.encode_line(&mut out);
    assert_eq!(memchr::memchr_iter(b'\n', &out).count(), 1);
    assert_eq!(out.last(), Some(&b'\n'));
    let again = decode(std::str::from_utf8(&out).unwrap().trim_end()).unwrap();
    let Message::Response(r) = again else { panic!() };
    let v: serde_json::Value = serde_json::from_str(r.outcome.unwrap().get()).unwrap();
    assert_eq!(v["text"], "a\nb");
}

#[test]
fn typed_encoders_match_message_encoding() {
    let params = serde_json::json!({"name": "echo", "arguments": {"text": "hi\n"}});
    let mut typed = Vec::new();
    encode_request(&mut typed, &RequestId::Number(9), "tools/call", Some(&params)).unwrap();
    let raw = RawValue::from_string(params.to_string()).unwrap();
    let mut generic = Vec::new();
    Message::Request(Request {
        id: RequestId::Number(9),
        method: "tools/call".into(),
        params: Some(raw),
    })
    .encode_line(&mut generic);
    assert_eq!(String::from_utf8(typed).unwrap(), String::from_utf8(generic).unwrap());
    let mut n = Vec::new();
    encode_notification::<()>(&mut n, "notifications/initialized", None).unwrap();
    assert_eq!(n, b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    let mut r = Vec::new();
    encode_response(&mut r, &RequestId::from("s"), &serde_json::json!({})).unwrap();
    assert_eq!(r, b"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{}}\n");
}

fn arb_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        ".{0,16}".prop_map(RequestId::String)
    ]
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        ".{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// encode → decode is the identity on requests, and the encoding is exactly one line.
    #[test]
    fn request_round_trip(id in arb_id(), method in ".{1,24}", params in proptest::option::of(proptest::collection::btree_map(".{0,6}", arb_json(), 0..4))) {
        let params = params.map(|p| serde_json::Value::Object(p.into_iter().collect()));
        let mut line = Vec::new();
        encode_request(&mut line, &id, &method, params.as_ref()).unwrap();
        prop_assert_eq!(memchr::memchr_iter(b'\n', &line).count(), 1);
        let Message::Request(r) = Message::from_slice(&line[..line.len() - 1]).unwrap() else { panic!("not a request") };
        prop_assert_eq!(r.id, id);
        prop_assert_eq!(r.method.as_ref(), method.as_str());
        let back = r.params.map(|p| serde_json::from_str::<serde_json::Value>(p.get()).unwrap());
        prop_assert_eq!(back, params);
    }

    /// Decoding arbitrary text never panics.
    #[test]
    fn decode_never_panics(text in ".{0,200}") {
        let _ = Message::from_str(&text);
    }
}
