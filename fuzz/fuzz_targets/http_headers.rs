//! Fuzzes the modern era's HTTP request headers (`plexus_protocol::http_headers`): the input is
//! both a header value, straight from a peer, and a tool's input schema, straight from the server
//! (JSON; its `arguments` member, unknown to JSON Schema, is the call's arguments when it is an
//! object).
//!
//! Checked: nothing panics; a header value that decodes encodes again to a value that decodes to
//! the same text, and every encoded value is a valid header value (visible ASCII and spaces, no
//! leading or trailing space); a schema that is accepted gives `Mcp-Param-` headers named by
//! distinct (ignoring ASCII case) HTTP tokens, at most one per annotation, whose values are valid
//! header values that decode; a rejected schema's error renders.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_protocol::http_headers::{MCP_PARAM_HEADER_PREFIX, ParamHeaders, decode_header_value, encode_header_value};
use serde_json::Value;

/// What an encoded value must be: visible ASCII and spaces, no leading or trailing space.
fn assert_valid_header_value(value: &str) {
    assert!(value.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{value:?}");
    assert_eq!(value.trim_matches(' '), value, "{value:?}");
}

fn assert_round_trips(text: &str) {
    let encoded = encode_header_value(text);
    assert_valid_header_value(&encoded);
    assert_eq!(decode_header_value(&encoded).as_deref(), Ok(text), "{encoded:?}");
}

fuzz_target!(|data: &[u8]| {
    let value = String::from_utf8_lossy(data);
    assert_round_trips(&value);
    if let Ok(decoded) = decode_header_value(&value) {
        assert_round_trips(&decoded);
    }

    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    match ParamHeaders::from_input_schema(&schema) {
        Ok(params) => {
            let mut names: Vec<String> = Vec::with_capacity(params.len());
            for param in &params {
                assert_eq!(
                    param.header_name(),
                    format!("{MCP_PARAM_HEADER_PREFIX}{}", param.name())
                );
                assert!(!param.name().is_empty());
                assert!(
                    param
                        .name()
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
                );
                assert!(!param.path().is_empty());
                names.push(param.name().to_ascii_lowercase());
            }
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), params.len(), "two annotations name the same header");

            let arguments = match schema.get("arguments") {
                Some(Value::Object(arguments)) => Some(arguments),
                _ => schema.as_object(),
            };
            if let Some(arguments) = arguments {
                let headers = params.headers(arguments);
                assert!(headers.len() <= params.len());
                for (name, value) in &headers {
                    assert!(name.starts_with(MCP_PARAM_HEADER_PREFIX));
                    assert_valid_header_value(value);
                    assert!(decode_header_value(value).is_ok(), "{value:?}");
                }
            }
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
