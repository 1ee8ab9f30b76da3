//! The server's side of the revision's headers: what a request carried, decoded, and checked
//! against its body. Each check's error is the text of the -32020 (header mismatch) answer,
//! naming the header and what the body says.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{MCP_PARAM_HEADER_PREFIX, ParamHeaders, decode_header_value};

/// The value of header `name` as received (`value`: its bytes; `None` when absent), decoded;
/// an error when it is not visible ASCII or does not decode.
///
/// ```
/// use plexus_protocol::http_headers::decode_received;
///
/// assert_eq!(decode_received("Mcp-Name", Some(b"=?base64?w6k=?=")).unwrap().as_deref(), Some("é"));
/// assert_eq!(decode_received("Mcp-Name", None).unwrap(), None);
/// assert!(decode_received("Mcp-Name", Some(b"\xff")).is_err());
/// ```
pub fn decode_received<'v>(name: &str, value: Option<&'v [u8]>) -> Result<Option<Cow<'v, str>>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    let text = std::str::from_utf8(value)
        .ok()
        .filter(|text| text.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
        .ok_or_else(|| format!("{name} is not visible ASCII"))?;
    decode_header_value(text)
        .map(Some)
        .map_err(|e| format!("{name} {text:?} does not decode: {e}"))
}

/// Checks that header `name` was received (`value`) and decodes to `expected`, which the body
/// says as `what`.
pub fn expect_received(name: &str, value: Option<&[u8]>, expected: &str, what: &str) -> Result<(), String> {
    match decode_received(name, value)? {
        None => Err(format!("{name} is missing ({what} is {expected:?})")),
        Some(sent) if sent != expected => Err(format!("{name} is {sent:?} but {what} is {expected:?}")),
        Some(_) => Ok(()),
    }
}

impl ParamHeaders {
    /// Checks the `Mcp-Param-{Name}` headers a `tools/call` of this tool carried against its
    /// `arguments`: each annotated argument present and not null has its header, carrying its
    /// value; no other `Mcp-Param-*` header was sent. `received` is every header of the request
    /// (name and bytes); `lookup` finds one by name (in any case).
    pub fn check_received<'h>(
        &self,
        arguments: &Map<String, Value>,
        received: impl IntoIterator<Item = &'h str>,
        lookup: impl Fn(&str) -> Option<&'h [u8]>,
    ) -> Result<(), String> {
        let prefix = MCP_PARAM_HEADER_PREFIX;
        let stray = received.into_iter().find(|sent| {
            sent.len() >= prefix.len()
                && sent[..prefix.len()].eq_ignore_ascii_case(prefix)
                && !self.iter().any(|param| param.header_name().eq_ignore_ascii_case(sent))
        });
        if let Some(stray) = stray {
            return Err(format!(
                "{stray} was sent but the tool has no parameter annotated x-mcp-header {:?}",
                &stray[prefix.len()..]
            ));
        }
        for param in self {
            let name = param.header_name();
            let argument = param.path().join(".");
            // The value as a header carries it, decoded as the header is.
            let expected = param
                .value(arguments)
                .map(|value| decode_header_value(&value).map_or_else(|_| value.to_string(), Cow::into_owned));
            match (expected, decode_received(name, lookup(name))?) {
                (None, None) => {}
                (Some(expected), Some(sent)) if expected == sent => {}
                (Some(expected), None) => {
                    return Err(format!("{name} is missing (arguments.{argument} is {expected:?})"));
                }
                (Some(expected), Some(sent)) => {
                    return Err(format!("{name} is {sent:?} but arguments.{argument} is {expected:?}"));
                }
                (None, Some(sent)) => {
                    return Err(format!(
                        "{name} ({sent:?}) was sent but arguments.{argument} is absent or null"
                    ));
                }
            }
        }
        Ok(())
    }
}
