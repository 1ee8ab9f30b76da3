//! Fuzzes the modern era's HTTP request headers (`plexus_protocol::http_headers`): the input is
//! both a header value, straight from a peer, and a tool's input schema, straight from the server
//! (JSON; its `arguments` member, unknown to JSON Schema, is the call's arguments when it is an
//! object).
//!
//! Checked: nothing panics; a header value that decodes encodes again to a value that decodes to
//! the same text (decode(encode(v)) == v), encoding is stable across a decode
//! (encode(decode(encode(v))) == encode(v)), and every encoded value is a valid header value
//! (visible ASCII and spaces, no leading or trailing space); the server's reading of a received
//! value (`decode_received`) agrees with `decode_header_value` on visible ASCII and refuses
//! anything else; a schema that is accepted gives `Mcp-Param-` headers named by distinct
//! (ignoring ASCII case) HTTP tokens, at most one per annotation, whose values are valid header
//! values that decode, and that the server's check of a call (`check_received`) accepts, in any
//! case of their names; a rejected schema's error renders.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_protocol::http_headers::{
    MCP_PARAM_HEADER_PREFIX, ParamHeaders, decode_header_value, decode_received, encode_header_value,
};
use serde_json::Value;

/// What an encoded value must be: visible ASCII and spaces, no leading or trailing space.
fn assert_valid_header_value(value: &str) {
    assert!(value.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{value:?}");
    assert_eq!(value.trim_matches(' '), value, "{value:?}");
}

fn assert_round_trips(text: &str) {
    let encoded = encode_header_value(text);
    assert_valid_header_value(&encoded);
    let decoded = decode_header_value(&encoded);
    assert_eq!(decoded.as_deref(), Ok(text), "{encoded:?}");
    let again = encode_header_value(text);
    assert_eq!(
        encode_header_value(&decoded.unwrap_or_default()),
        again,
        "encoding is not stable"
    );
    assert_eq!(
        decode_received("Mcp-Name", Some(encoded.as_bytes()))
            .ok()
            .flatten()
            .as_deref(),
        Some(text),
        "the server does not read {encoded:?} back"
    );
}

fuzz_target!(|data: &[u8]| {
    let value = String::from_utf8_lossy(data);
    assert_round_trips(&value);
    if let Ok(decoded) = decode_header_value(&value) {
        assert_round_trips(&decoded);
    }
    let visible = data.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b));
    match decode_received("Mcp-Name", Some(data)) {
        Ok(received) => {
            assert!(visible, "{value:?} is not visible ASCII but was read");
            assert_eq!(received.as_deref(), decode_header_value(&value).ok().as_deref());
        }
        Err(why) => {
            assert!(!visible || decode_header_value(&value).is_err(), "{value:?}: {why}");
            assert!(why.starts_with("Mcp-Name "), "{why}");
        }
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
                // The server accepts what the client sends, whatever the case of the names (HTTP
                // hands them over in lower case).
                let received: Vec<(String, &[u8])> = headers
                    .iter()
                    .map(|(name, value)| (name.to_ascii_lowercase(), value.as_bytes()))
                    .collect();
                let lookup = |name: &str| {
                    received
                        .iter()
                        .find(|(sent, _)| sent.eq_ignore_ascii_case(name))
                        .map(|(_, value)| *value)
                };
                if let Err(why) =
                    params.check_received(arguments, received.iter().map(|(name, _)| name.as_str()), lookup)
                {
                    panic!("the server refuses the client's headers {headers:?}: {why}");
                }
            }
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
