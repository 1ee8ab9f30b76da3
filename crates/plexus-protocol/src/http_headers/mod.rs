//! The request headers a Streamable HTTP client sends in the 2026-07-28 ("modern") era:
//! `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-{Name}` headers mirrored from `x-mcp-header`
//! tool parameters, with the `=?base64?…?=` encoding of values that are not header-safe.
//!
//! ```
//! use plexus_protocol::http_headers::{ParamHeaders, name_header, MCP_NAME_HEADER};
//! use serde_json::json;
//!
//! // From `tools/list`: which arguments of the tool become headers (checked once per listing).
//! let schema = json!({
//!     "type": "object",
//!     "properties": {
//!         "region": {"type": "string", "x-mcp-header": "Region"},
//!         "greeting": {"type": "string", "x-mcp-header": "Greeting"},
//!         "query": {"type": "string"}
//!     }
//! });
//! let headers = ParamHeaders::from_input_schema(&schema).unwrap();
//!
//! // On `tools/call`: the headers for these arguments.
//! let params = json!({
//!     "name": "execute_sql",
//!     "arguments": {"region": "us-west1", "greeting": "Hello, 世界", "query": "SELECT 1"}
//! });
//! assert_eq!(name_header("tools/call", &params).as_deref(), Some("execute_sql"));
//! assert_eq!(
//!     headers.headers(params["arguments"].as_object().unwrap()),
//!     [
//!         ("Mcp-Param-Region".to_owned(), "us-west1".to_owned()),
//!         ("Mcp-Param-Greeting".to_owned(), "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned()),
//!     ]
//! );
//! # assert_eq!(MCP_NAME_HEADER, "Mcp-Name");
//! ```
//!
//! What is sent (SPEC `basic/transports/streamable-http` §Standard Headers and §Custom Headers from
//! Tool Parameters, SEP-2243):
//!
//! - [`MCP_METHOD_HEADER`] on every request, the JSON-RPC `method` as it is;
//! - [`MCP_NAME_HEADER`] on `tools/call` and `prompts/get` (`params.name`), `resources/read`
//!   (`params.uri`) and the tasks extension's requests on one task (`params.taskId`), encoded by
//!   [`encode_header_value`]: see [`name_header`];
//! - on `tools/call`, one `Mcp-Param-{Name}` header ([`MCP_PARAM_HEADER_PREFIX`]) for each property
//!   of the tool's input schema annotated `"x-mcp-header": "{Name}"` whose argument is present: see
//!   [`ParamHeaders`]. A tool with an invalid annotation is invalid as a whole: the client leaves it
//!   out of its tool list and says why ([`InvalidHeaderAnnotation`]).
//!
//! Everything here is pure: no I/O, and nothing allocated for a tool without annotations.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::methods;

/// The header carrying the request's JSON-RPC `method`, on every request.
pub const MCP_METHOD_HEADER: &str = "Mcp-Method";

/// The header carrying `params.name` (`tools/call`, `prompts/get`), `params.uri`
/// (`resources/read`) or `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`), encoded
/// by [`encode_header_value`].
pub const MCP_NAME_HEADER: &str = "Mcp-Name";

/// The prefix of the headers mirrored from `x-mcp-header` tool parameters: the annotation
/// `"Region"` gives `Mcp-Param-Region`.
pub const MCP_PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// The JSON Schema keyword that marks a tool parameter to mirror into a header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// What starts a Base64-encoded header value (lowercase; the markers are case-sensitive).
pub const BASE64_PREFIX: &str = "=?base64?";

/// What ends a Base64-encoded header value.
pub const BASE64_SUFFIX: &str = "?=";

/// The largest integer magnitude mirrored into a header: 2^53 − 1, the largest integer a
/// JavaScript number holds exactly. An integer argument beyond it gets no header.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// How deeply [`ParamHeaders::from_input_schema`] follows subschemas (each `properties` member,
/// `items`, `anyOf` branch, ... is one level) before giving up with
/// [`InvalidHeaderAnnotation::TooDeep`]. Input schemas come from servers; this bounds the walk's
/// recursion.
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// How many subschemas [`ParamHeaders::from_input_schema`] looks at before giving up with
/// [`InvalidHeaderAnnotation::TooLarge`]. Input schemas come from servers; this bounds the walk's
/// time. Real tool schemas have tens to a few thousand.
pub const MAX_SCHEMA_NODES: usize = 100_000;

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

/// Encodes a header value: as it is when it is header-safe, else as
/// `=?base64?{standard padded Base64 of its UTF-8 bytes}?=`.
///
/// A value is header-safe, and sent as it is, when it is empty, or when all its characters are
/// visible ASCII (`0x21`–`0x7E`) or spaces, it neither starts nor ends with a space, and it does
/// not both start with [`BASE64_PREFIX`] and end with [`BASE64_SUFFIX`] (which would read as an
/// encoded value). Anything else is Base64-encoded: non-ASCII, every control character (tab
/// included, as the conformance suite and the Python SDK do, though RFC 9110 would allow it inside
/// a value), leading or trailing whitespace, and look-alikes of the encoding. The same rule applies
/// to `Mcp-Name` and to `Mcp-Param-{Name}`.
///
/// The result is always a valid HTTP field value with no leading or trailing whitespace, and
/// [`decode_header_value`] gives the original back.
///
/// ```
/// use plexus_protocol::http_headers::encode_header_value;
///
/// assert_eq!(encode_header_value("us-west1"), "us-west1");
/// assert_eq!(encode_header_value("us west 1"), "us west 1");
/// assert_eq!(encode_header_value(""), "");
/// assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
/// assert_eq!(encode_header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
/// assert_eq!(encode_header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
/// ```
pub fn encode_header_value(value: &str) -> Cow<'_, str> {
    if is_header_safe(value) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(base64_wrap(value))
    }
}

/// Whether `value` is sent as it is (see [`encode_header_value`]).
fn is_header_safe(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.iter().all(|&b| matches!(b, b' '..=b'~'))
        && bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
        // Overlapping markers (`=?base64?=`) count too: encoding a value that is not needed is
        // harmless, and [`decode_header_value`] only decodes non-overlapping ones.
        && !(value.starts_with(BASE64_PREFIX) && value.ends_with(BASE64_SUFFIX))
}

fn base64_wrap(value: &str) -> String {
    let encoded = base64::encoded_len(value.len(), true).unwrap_or(0);
    let mut out = String::with_capacity(BASE64_PREFIX.len() + encoded + BASE64_SUFFIX.len());
    out.push_str(BASE64_PREFIX);
    STANDARD.encode_string(value, &mut out);
    out.push_str(BASE64_SUFFIX);
    out
}

/// Decodes a header value: the Base64 payload of `=?base64?{payload}?=`, anything else as it is.
///
/// The payload must be canonical, padded, standard-alphabet Base64 (what
/// [`encode_header_value`] writes) of UTF-8 text. A value missing either marker, or with the
/// markers in another case (`=?BASE64?…?=`), is a plain value. This does not check that a plain
/// value is header-safe: a server that must reject invalid characters checks that itself.
///
/// ```
/// use plexus_protocol::http_headers::{HeaderValueError, decode_header_value};
///
/// assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").unwrap(), "Hello");
/// assert_eq!(decode_header_value("us-west1").unwrap(), "us-west1");
/// assert_eq!(decode_header_value("=?BASE64?SGVsbG8=?=").unwrap(), "=?BASE64?SGVsbG8=?=");
/// assert!(matches!(decode_header_value("=?base64?SGVsbG8?="), Err(HeaderValueError::Base64 { .. })));
/// assert!(matches!(decode_header_value("=?base64?/w==?="), Err(HeaderValueError::NotUtf8 { .. })));
/// ```
pub fn decode_header_value(value: &str) -> Result<Cow<'_, str>, HeaderValueError> {
    let Some(payload) = value
        .strip_prefix(BASE64_PREFIX)
        .and_then(|rest| rest.strip_suffix(BASE64_SUFFIX))
    else {
        return Ok(Cow::Borrowed(value));
    };
    let bytes = STANDARD
        .decode(payload)
        .map_err(|source| HeaderValueError::Base64 { source })?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|source| HeaderValueError::NotUtf8 { source })
}

/// Why a `=?base64?…?=` header value does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderValueError {
    /// The payload is not canonical, padded, standard-alphabet Base64.
    #[error("the header value has the `=?base64?…?=` form but its payload is not canonical padded Base64")]
    Base64 {
        /// What is wrong with it.
        #[source]
        source: base64::DecodeError,
    },
    /// The payload decodes to bytes that are not UTF-8.
    #[error("the header value's Base64 payload is not UTF-8 text")]
    NotUtf8 {
        /// The decoding error (it holds the bytes).
        #[source]
        source: std::string::FromUtf8Error,
    },
}

// ---------------------------------------------------------------------------------------------
// Mcp-Name
// ---------------------------------------------------------------------------------------------

/// The member of `params` that a method's `Mcp-Name` header carries: `name` for `tools/call` and
/// `prompts/get`, `uri` for `resources/read`, `taskId` for the tasks extension's `tasks/get`,
/// `tasks/update` and `tasks/cancel`, none for the other methods.
///
/// ```
/// use plexus_protocol::http_headers::name_param;
///
/// assert_eq!(name_param("resources/read"), Some("uri"));
/// assert_eq!(name_param("tasks/get"), Some("taskId"));
/// assert_eq!(name_param("tools/list"), None);
/// ```
pub fn name_param(method: &str) -> Option<&'static str> {
    match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => Some("name"),
        methods::RESOURCES_READ => Some("uri"),
        // The tasks extension routes a task's requests to the instance holding it.
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => Some("taskId"),
        _ => None,
    }
}

/// The value of the `Mcp-Name` header for a request: the [`name_param`] member of `params`,
/// encoded by [`encode_header_value`]. `None` for a method without one, or when `params` lacks it
/// or it is not a string.
///
/// ```
/// use plexus_protocol::http_headers::name_header;
/// use serde_json::json;
///
/// let read = json!({"uri": "file:///path/to/file%20name.txt"});
/// assert_eq!(name_header("resources/read", &read).as_deref(), Some("file:///path/to/file%20name.txt"));
/// assert_eq!(name_header("prompts/get", &json!({"name": "résumé"})).as_deref(), Some("=?base64?csOpc3Vtw6k=?="));
/// assert_eq!(name_header("tools/list", &json!({})), None);
/// ```
pub fn name_header(method: &str, params: &Value) -> Option<String> {
    let name = params.get(name_param(method)?)?.as_str()?;
    Some(encode_header_value(name).into_owned())
}

// ---------------------------------------------------------------------------------------------
// Mcp-Param-{Name}
// ---------------------------------------------------------------------------------------------

mod params;
mod received;

pub use params::{FoundType, InvalidHeaderAnnotation, ParamHeader, ParamHeaders, ParamType};
pub use received::{decode_received, expect_received};
