//! The modern era's HTTP request headers (`plexus_protocol::http_headers`): the value encoding and
//! its examples from the specification and SEP-2243, `Mcp-Name`, the `Mcp-Param-{Name}` headers of
//! the conformance scenario `http-custom-headers`, and property tests of the encoding (the
//! annotation rules are in `http_header_annotations.rs`).

use std::borrow::Cow;

use plexus_protocol::http_headers::{
    BASE64_PREFIX, BASE64_SUFFIX, HeaderValueError, MCP_METHOD_HEADER, MCP_NAME_HEADER, MCP_PARAM_HEADER_PREFIX,
    ParamHeaders, ParamType, decode_header_value, encode_header_value, name_header, name_param,
};
use proptest::prelude::*;
use serde_json::{Value, json};

mod header_support;

use header_support::{object, one_property, pairs};

// ---------------------------------------------------------------------------------------------
// Constants and value encoding
// ---------------------------------------------------------------------------------------------

#[test]
fn header_names_and_markers() {
    assert_eq!(MCP_METHOD_HEADER, "Mcp-Method");
    assert_eq!(MCP_NAME_HEADER, "Mcp-Name");
    assert_eq!(MCP_PARAM_HEADER_PREFIX, "Mcp-Param-");
    assert_eq!(BASE64_PREFIX, "=?base64?");
    assert_eq!(BASE64_SUFFIX, "?=");
}

/// SPEC streamable-http §Value Encoding and SEP-2243 §Value Encoding Edge Cases, and the
/// `http-custom-headers` arguments.
const ENCODING_EXAMPLES: &[(&str, &str)] = &[
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ("us west 1", "us west 1"),
    ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
    ("\tindented", "=?base64?CWluZGVudGVk?="),
    (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
    ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
    (" us-west1 ", "=?base64?IHVzLXdlc3QxIA==?="),
    ("日本語", "=?base64?5pel5pys6Kqe?="),
    ("", ""),
];

#[test]
fn encoding_examples_from_the_specification() {
    for &(value, header) in ENCODING_EXAMPLES {
        assert_eq!(encode_header_value(value), header, "encoding {value:?}");
        assert_eq!(decode_header_value(header).unwrap(), value, "decoding {header:?}");
    }
}

#[test]
fn plain_values_are_borrowed() {
    for value in [
        "us-west1",
        "us west 1",
        "",
        "file:///path/to/file%20name.txt",
        "a=?base64?b?=",
        "?=",
    ] {
        assert!(
            matches!(encode_header_value(value), Cow::Borrowed(v) if v == value),
            "{value:?}"
        );
        assert!(
            matches!(decode_header_value(value), Ok(Cow::Borrowed(v)) if v == value),
            "{value:?}"
        );
    }
}

#[test]
fn every_control_character_and_delete_is_encoded() {
    for c in (0u8..0x20).chain([0x7f]).map(char::from) {
        let value = format!("a{c}b");
        let encoded = encode_header_value(&value);
        assert!(encoded.starts_with(BASE64_PREFIX), "{value:?} → {encoded:?}");
        assert_eq!(decode_header_value(&encoded).unwrap(), value);
    }
}

#[test]
fn sentinel_look_alikes() {
    // Both markers, even overlapping: encoded, so that no reader mistakes them for an encoding.
    for value in ["=?base64??=", "=?base64?=", "=?base64?SGVsbG8=?="] {
        let encoded = encode_header_value(value);
        assert_ne!(encoded, value);
        assert_eq!(decode_header_value(&encoded).unwrap(), value);
    }
    // One marker only, or the markers in another case: plain, both ways (SEP-2243 §Base64 Decoding).
    for value in ["SGVsbG8=", "=?base64?SGVsbG8=", "=?BASE64?SGVsbG8=?=", "SGVsbG8=?="] {
        assert_eq!(encode_header_value(value), value);
        assert_eq!(decode_header_value(value).unwrap(), value);
    }
    // Overlapping markers are not an encoding when reading.
    assert_eq!(decode_header_value("=?base64?=").unwrap(), "=?base64?=");
    assert_eq!(decode_header_value("=?base64??=").unwrap(), "");
}

#[test]
fn malformed_base64_is_a_typed_error() {
    // SEP-2243 §Base64 Decoding: bad padding and bad characters are rejected.
    for header in [
        "=?base64?SGVsbG8?=",
        "=?base64?SGVs!!!bG8=?=",
        "=?base64?SGVsbG9=?=", // non-zero trailing bits: not canonical
        "=?base64?SGVs bG8=?=",
        "=?base64?SGVsbG8-?=", // URL-safe alphabet
        "=?base64?S?=",
    ] {
        let error = decode_header_value(header).unwrap_err();
        assert!(
            matches!(error, HeaderValueError::Base64 { .. }),
            "{header:?}: {error:?}"
        );
        assert!(std::error::Error::source(&error).is_some());
        assert_eq!(
            error.to_string(),
            "the header value has the `=?base64?…?=` form but its payload is not canonical padded Base64"
        );
    }
    let error = decode_header_value("=?base64?/+8=?=").unwrap_err();
    let HeaderValueError::NotUtf8 { source } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(source.as_bytes(), [0xff, 0xef]);
    assert_eq!(error.to_string(), "the header value's Base64 payload is not UTF-8 text");
}

// ---------------------------------------------------------------------------------------------
// Mcp-Name
// ---------------------------------------------------------------------------------------------

#[test]
fn name_header_for_the_three_name_bearing_methods() {
    // The `http-standard-headers` fixtures.
    let call = json!({"name": "my-hyphenated-tool", "arguments": {}});
    assert_eq!(name_header("tools/call", &call).as_deref(), Some("my-hyphenated-tool"));
    assert_eq!(
        name_header("prompts/get", &json!({"name": "test_prompt"})).as_deref(),
        Some("test_prompt")
    );
    for uri in ["file:///path/to/file%20name.txt", "https://example.com/resource?id=123"] {
        assert_eq!(
            name_header("resources/read", &json!({"uri": uri})).as_deref(),
            Some(uri)
        );
    }
    // Not header-safe: encoded like a parameter.
    assert_eq!(
        name_header("tools/call", &json!({"name": "Hello, 世界"})).as_deref(),
        Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
    );
    assert_eq!(name_param("tools/call"), Some("name"));
    assert_eq!(name_param("prompts/get"), Some("name"));
    assert_eq!(name_param("resources/read"), Some("uri"));
}

#[test]
fn no_name_header_otherwise() {
    for method in [
        "tools/list",
        "resources/list",
        "prompts/list",
        "initialize",
        "server/discover",
        "Tools/Call",
    ] {
        assert_eq!(name_param(method), None, "{method}");
        assert_eq!(name_header(method, &json!({"name": "x", "uri": "y"})), None, "{method}");
    }
    // The member is missing, of another type, or params is not an object.
    assert_eq!(name_header("tools/call", &json!({"uri": "x"})), None);
    assert_eq!(name_header("resources/read", &json!({"name": "x"})), None);
    assert_eq!(name_header("prompts/get", &json!({"name": 7})), None);
    assert_eq!(name_header("tools/call", &Value::Null), None);
    assert_eq!(name_header("tools/call", &json!(["name"])), None);
}

// ---------------------------------------------------------------------------------------------
// Mcp-Param-{Name}: the `http-custom-headers` scenario
// ---------------------------------------------------------------------------------------------

/// `test_custom_headers` of `http-custom-headers` (CONF alpha.12), descriptions left out.
fn custom_headers_tool() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "debug": {"type": "boolean", "x-mcp-header": "Debug"},
            "empty_val": {"type": "string", "x-mcp-header": "EmptyVal"},
            "method_val": {"type": "string", "x-mcp-header": "Method"},
            "float_val": {"type": "number"},
            "non_ascii_val": {"type": "string", "x-mcp-header": "NonAscii"},
            "whitespace_val": {"type": "string", "x-mcp-header": "Whitespace"},
            "leading_space_val": {"type": "string", "x-mcp-header": "LeadingSpace"},
            "trailing_space_val": {"type": "string", "x-mcp-header": "TrailingSpace"},
            "internal_space_val": {"type": "string", "x-mcp-header": "InternalSpace"},
            "control_char_val": {"type": "string", "x-mcp-header": "ControlChar"},
            "crlf_val": {"type": "string", "x-mcp-header": "CrLf"},
            "tab_val": {"type": "string", "x-mcp-header": "Tab"},
            "query": {"type": "string"}
        },
        "required": ["region", "priority", "query"]
    })
}

#[test]
#[allow(clippy::approx_constant)] // the scenario's `float_val`, not π
fn custom_headers_scenario() {
    let headers = ParamHeaders::from_input_schema(&custom_headers_tool()).unwrap();
    assert_eq!(headers.len(), 14);
    let arguments = json!({
        "region": "us-west1",
        "priority": 42,
        "verbose": false,
        "debug": true,
        "empty_val": "",
        "method_val": "test-method",
        "float_val": 3.14159,
        "non_ascii_val": "Hello, 世界",
        "whitespace_val": " padded ",
        "leading_space_val": " us-west1",
        "trailing_space_val": "us-west1 ",
        "internal_space_val": "us west 1",
        "control_char_val": "line1\nline2",
        "crlf_val": "line1\r\nline2",
        "tab_val": "\tindented",
        "query": "SELECT * FROM users"
    });
    assert_eq!(
        headers.headers(object(&arguments)),
        pairs(&[
            ("Mcp-Param-Region", "us-west1"),
            ("Mcp-Param-Priority", "42"),
            ("Mcp-Param-Verbose", "false"),
            ("Mcp-Param-Debug", "true"),
            ("Mcp-Param-EmptyVal", ""),
            ("Mcp-Param-Method", "test-method"),
            ("Mcp-Param-NonAscii", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            ("Mcp-Param-Whitespace", "=?base64?IHBhZGRlZCA=?="),
            ("Mcp-Param-LeadingSpace", "=?base64?IHVzLXdlc3Qx?="),
            ("Mcp-Param-TrailingSpace", "=?base64?dXMtd2VzdDEg?="),
            ("Mcp-Param-InternalSpace", "us west 1"),
            ("Mcp-Param-ControlChar", "=?base64?bGluZTEKbGluZTI=?="),
            ("Mcp-Param-CrLf", "=?base64?bGluZTENCmxpbmUy?="),
            ("Mcp-Param-Tab", "=?base64?CWluZGVudGVk?="),
        ])
    );
}

#[test]
fn custom_headers_null_scenario() {
    // `test_custom_headers_null`: a null value sends no header (`sep-2243-client-omit-null`).
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"}
        },
        "required": ["region", "priority", "query"]
    });
    let headers = ParamHeaders::from_input_schema(&schema).unwrap();
    let arguments = json!({"region": "us-east1", "priority": 1, "verbose": null, "query": "SELECT 1"});
    assert_eq!(
        headers.headers(object(&arguments)),
        pairs(&[("Mcp-Param-Region", "us-east1"), ("Mcp-Param-Priority", "1")])
    );
    // Absent: no header either.
    assert!(headers.headers(object(&json!({"query": "SELECT 1"}))).is_empty());
}

#[test]
fn param_header_accessors() {
    let headers = ParamHeaders::from_input_schema(&custom_headers_tool()).unwrap();
    let method = headers.iter().find(|p| p.name() == "Method").unwrap();
    assert_eq!(method.header_name(), "Mcp-Param-Method");
    assert_eq!(method.path(), ["method_val"]);
    assert_eq!(method.param_type(), ParamType::String);
    let types: Vec<&str> = (&headers)
        .into_iter()
        .take(3)
        .map(|p| p.param_type().as_str())
        .collect();
    assert_eq!(types, ["string", "integer", "boolean"]);
    assert_eq!(ParamType::Integer.to_string(), "integer");
}

#[test]
fn integers_in_the_safe_range_only() {
    let schema = one_property(json!({"type": "integer", "x-mcp-header": "N"}));
    let headers = ParamHeaders::from_input_schema(&schema).unwrap();
    let header = |value: Value| {
        let arguments = json!({ "value": value });
        headers.headers(object(&arguments)).pop().map(|(_, value)| value)
    };
    assert_eq!(header(json!(-7)).as_deref(), Some("-7"));
    assert_eq!(header(json!(0)).as_deref(), Some("0"));
    assert_eq!(
        header(json!(9_007_199_254_740_991_i64)).as_deref(),
        Some("9007199254740991")
    );
    assert_eq!(
        header(json!(-9_007_199_254_740_991_i64)).as_deref(),
        Some("-9007199254740991")
    );
    assert_eq!(header(json!(9_007_199_254_740_992_i64)), None);
    assert_eq!(header(json!(-9_007_199_254_740_992_i64)), None);
    assert_eq!(header(json!(u64::MAX)), None);
    assert_eq!(header(json!(i64::MIN)), None);
    // An integral float is an integer (JSON Schema); a fraction is not.
    assert_eq!(header(json!(42.0)).as_deref(), Some("42"));
    assert_eq!(header(json!(-0.0)).as_deref(), Some("0"));
    assert_eq!(header(json!(2.5)), None);
    assert_eq!(header(json!(1e300)), None);
}

#[test]
fn values_of_other_json_types_send_no_header() {
    let schema = one_property(json!({"type": "string", "x-mcp-header": "V"}));
    let headers = ParamHeaders::from_input_schema(&schema).unwrap();
    for value in [json!(null), json!([]), json!(["a"]), json!({}), json!({"a": "b"})] {
        let arguments = json!({ "value": value });
        assert!(headers.headers(object(&arguments)).is_empty(), "{value}");
    }
    // The value's own JSON type decides its rendering.
    let arguments = json!({"value": true});
    assert_eq!(headers.headers(object(&arguments)), pairs(&[("Mcp-Param-V", "true")]));
}

#[test]
fn nested_properties_are_reachable() {
    let schema = json!({
        "type": "object",
        "properties": {
            "target": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "place": {"type": "object", "properties": {
                        "zone": {"type": "string", "x-mcp-header": "Zone"}
                    }}
                }
            },
            // A property named like a keyword is still a property.
            "items": {"type": "integer", "x-mcp-header": "Items"}
        }
    });
    let headers = ParamHeaders::from_input_schema(&schema).unwrap();
    let paths: Vec<String> = headers.iter().map(|p| p.path().join(".")).collect();
    assert_eq!(paths, ["target.region", "target.place.zone", "items"]);
    let arguments = json!({"target": {"region": "eu", "place": {"zone": "b"}}, "items": 3});
    assert_eq!(
        headers.headers(object(&arguments)),
        pairs(&[
            ("Mcp-Param-Region", "eu"),
            ("Mcp-Param-Zone", "b"),
            ("Mcp-Param-Items", "3")
        ])
    );
    // A missing or non-object step on the way: no header.
    let arguments = json!({"target": "eu", "items": 3});
    assert_eq!(headers.headers(object(&arguments)), pairs(&[("Mcp-Param-Items", "3")]));
    let arguments = json!({"target": {"place": null}});
    assert!(headers.headers(object(&arguments)).is_empty());
}

#[test]
fn schemas_without_annotations_give_nothing() {
    for schema in [
        json!({"type": "object"}),
        json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        json!(true),
        json!(null),
        json!({"properties": "not an object", "items": [1, true]}),
        // Instance data and unknown keywords are not schemas.
        json!({"properties": {"q": {"type": "string", "default": {"x-mcp-header": ""},
            "examples": [{"x-mcp-header": 1}], "const": {"x-mcp-header": "A B"},
            "x-vendor": {"x-mcp-header": "Q"}}}}),
    ] {
        let headers = ParamHeaders::from_input_schema(&schema).unwrap();
        assert!(headers.is_empty(), "{schema}");
        assert_eq!(headers, ParamHeaders::default());
    }
}

// ---------------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------------

/// Whether `value` may be sent as a header value: visible ASCII and spaces, no leading or
/// trailing whitespace.
fn is_valid_header_value(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b)) && value.trim_matches(' ') == value
}

/// Strings that are mostly plain, with the characters that matter mixed in.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,24}",
        "[ \t\r\na-z=?é世]{0,16}",
        "[ -~]{0,8}".prop_map(|s| format!("=?base64?{s}?=")),
        "[ -~]{0,8}".prop_map(|s| format!("=?base64?{s}")),
    ]
}

proptest! {
    #[test]
    fn decode_inverts_encode(value in tricky_string()) {
        let encoded = encode_header_value(&value);
        prop_assert_eq!(decode_header_value(&encoded).unwrap(), value.as_str());
    }

    #[test]
    fn encoded_values_are_valid_header_values(value in tricky_string()) {
        let encoded = encode_header_value(&value);
        prop_assert!(is_valid_header_value(&encoded), "{:?} → {:?}", value, encoded);
    }

    #[test]
    fn plain_values_are_left_unchanged(value in "[!-~]([ -~]{0,30}[!-~])?") {
        let sentinel = value.starts_with(BASE64_PREFIX) && value.ends_with(BASE64_SUFFIX);
        let encoded = encode_header_value(&value);
        if sentinel {
            prop_assert_ne!(encoded.as_ref(), value.as_str());
        } else {
            prop_assert!(matches!(encoded, Cow::Borrowed(_)));
            prop_assert_eq!(encoded.as_ref(), value.as_str());
        }
    }

    #[test]
    fn decoding_never_panics(value in tricky_string()) {
        let _ = decode_header_value(&value);
    }

    #[test]
    fn string_arguments_round_trip_through_param_headers(value in tricky_string()) {
        let headers = ParamHeaders::from_input_schema(&one_property(json!({"type": "string", "x-mcp-header": "V"})))
            .unwrap();
        let arguments = json!({ "value": value });
        let sent = headers.headers(object(&arguments));
        prop_assert_eq!(sent.len(), 1);
        prop_assert_eq!(decode_header_value(&sent[0].1).unwrap(), value.as_str());
    }
}
