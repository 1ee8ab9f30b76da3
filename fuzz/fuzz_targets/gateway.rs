//! Fuzzes what the gateway makes of a client's message before any backend work: a stdio line
//! (decoded, its era decided or checked, its envelope read) and a stateless-era HTTP POST (its
//! body decoded, its envelope read, its headers checked against the body: `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` and a `tools/call`'s `Mcp-Param-*`).
//!
//! Input layout: the first byte's high bit picks HTTP; for stdio its low two bits give the
//! connection's era so far (none, `initialize`, stateless) and the rest is the line; for HTTP the
//! rest is `name: value` header lines, an empty line, and the body. A `tools/call` is of a tool
//! whose `region` and `priority` parameters are annotated `x-mcp-header`.
//!
//! Checked: nothing panics; a connection of the `initialize` era stays in it and is answered as
//! it always was; a request routed as stateless leaves the connection stateless, and
//! `server/discover` decides the stateless era; every refusal is -32602, -32600, -32020 or
//! -32022; an admitted POST carried the stateless version and its method in `Mcp-Method`; and
//! the client and the gateway agree: a stateless request, sent over HTTP with the headers a
//! client makes for it (`plexus-client`'s rules), is admitted, saying the same of itself as over
//! stdio.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use plexus_gateway::fuzzing::{Admitted, Line, Post, admit_post, route_line};
use plexus_jsonrpc::{ErrorCode, ErrorObject};
use plexus_protocol::envelope::PROTOCOL_VERSION_KEY;
use plexus_protocol::errors::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};
use plexus_protocol::http_headers::{ParamHeaders, decode_header_value, encode_header_value, name_param};
use plexus_protocol::{Era, ProtocolVersion, methods};
use serde_json::Value;

/// The annotated parameters of every `tools/call`'s tool.
fn annotated() -> &'static ParamHeaders {
    static ANNOTATED: OnceLock<ParamHeaders> = OnceLock::new();
    ANNOTATED.get_or_init(|| {
        let schema = serde_json::json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"}}});
        ParamHeaders::from_input_schema(&schema).expect("a valid schema")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector & 0x80 == 0 {
        let era = match selector & 3 {
            0 => None,
            1 => Some(Era::Initialize),
            _ => Some(Era::Stateless),
        };
        check_line(era, rest);
    } else {
        check_post(rest);
    }
});

fn assert_refusal(error: &ErrorObject) {
    assert!(
        [
            ErrorCode::INVALID_PARAMS,
            ErrorCode::INVALID_REQUEST,
            HEADER_MISMATCH,
            UNSUPPORTED_PROTOCOL_VERSION
        ]
        .contains(&error.code),
        "refused with {error:?}"
    );
}

fn check_line(era: Option<Era>, line: &[u8]) {
    let Line::Request {
        method,
        route,
        era: after,
    } = route_line(era, line)
    else {
        return;
    };
    match &route {
        Ok(None) => assert_ne!(after, Some(Era::Stateless), "{method} answered in the initialize era"),
        Ok(Some(_)) => assert_eq!(after, Some(Era::Stateless), "{method} routed as stateless"),
        Err(error) => assert_refusal(error),
    }
    match era {
        Some(Era::Initialize) => {
            assert!(matches!(route, Ok(None)), "{method} of the initialize era: {route:?}");
            assert_eq!(after, Some(Era::Initialize));
        }
        None if method == methods::SERVER_DISCOVER => assert_eq!(after, Some(Era::Stateless)),
        _ => {}
    }
    if let (None, Ok(Some(admitted))) = (era, &route) {
        check_agreement(line, &method, admitted);
    }
}

/// The stateless request `line` of `method`, which stdio admitted as `over_stdio`, sent as a
/// client sends it over HTTP, is admitted alike.
fn check_agreement(line: &[u8], method: &str, over_stdio: &Admitted) {
    let message: Value = serde_json::from_slice(line).expect("a routed request is JSON");
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let version = params["_meta"][PROTOCOL_VERSION_KEY]
        .as_str()
        .expect("a stateless request names its version");
    let mut headers: Vec<(String, String)> = vec![
        ("mcp-protocol-version".to_owned(), version.to_owned()),
        ("mcp-method".to_owned(), encode_header_value(method).into_owned()),
    ];
    if let Some(member) = name_param(method) {
        // A client sends `Mcp-Name` when the member is a string (a request without one fails
        // either way).
        let Some(name) = params[member].as_str() else {
            return;
        };
        headers.push(("mcp-name".to_owned(), encode_header_value(name).into_owned()));
    }
    if method == methods::TOOLS_CALL
        && let Some(arguments) = params["arguments"].as_object()
    {
        headers.extend(annotated().headers(arguments));
    }
    let pairs: Vec<(&[u8], &[u8])> = headers
        .iter()
        .map(|(name, value)| (name.as_bytes(), value.as_bytes()))
        .collect();
    match admit_post(&pairs, line, annotated()) {
        Post::Admitted { admitted, .. } => {
            assert_eq!(admitted.named, over_stdio.named);
            assert_eq!(admitted.request_state, over_stdio.request_state);
            assert_eq!(admitted.input_responses, over_stdio.input_responses);
            assert_eq!(admitted.capabilities, over_stdio.capabilities);
        }
        other => panic!("the gateway refuses {method} with the client's headers {headers:?}: {other:?}"),
    }
}

fn check_post(input: &[u8]) {
    let split = input.windows(2).position(|w| w == b"\n\n");
    let (head, body) = match split {
        Some(at) => (&input[..at], &input[at + 2..]),
        None => (&input[..0], input),
    };
    let headers: Vec<(&[u8], &[u8])> = head
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let value = &line[colon + 1..];
            Some((&line[..colon], value.strip_prefix(b" ").unwrap_or(value)))
        })
        .filter(|&(name, value)| is_header(name, value))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(sent, _)| sent.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
    };
    match admit_post(&headers, body, annotated()) {
        Post::NotJsonRpc | Post::Notification => {}
        Post::Error(_, error) => assert_refusal(&error),
        Post::Admitted { method, .. } => {
            let version = header("mcp-protocol-version").expect("the version header was sent");
            assert!(
                ProtocolVersion::STATELESS.iter().any(|known| known.as_str() == version),
                "admitted with version {version:?}"
            );
            let sent = header("mcp-method").expect("Mcp-Method was sent");
            assert_eq!(decode_header_value(&sent).as_deref(), Ok(method.as_str()));
        }
    }
}

/// Whether `name: value` is a header hyper hands over: the name an HTTP token, the value
/// without control characters but tab.
fn is_header(name: &[u8], value: &[u8]) -> bool {
    !name.is_empty()
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && value.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}
