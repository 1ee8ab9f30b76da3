//! JSON-RPC 2.0 messages, ids, error codes and the newline framing codec that MCP's stdio transport uses.
//!
//! Decoding reads the envelope once and keeps `params`, `result` and `error.data` as raw JSON
//! ([`RawValue`]) until a typed consumer asks for them, so routing a message never builds a value tree.
//!
//! ```
//! use plexus_jsonrpc::{Message, RequestId};
//!
//! let msg = Message::from_slice(br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#).unwrap();
//! let Message::Response(resp) = msg else { panic!("a response") };
//! assert_eq!(resp.id, Some(RequestId::Number(7)));
//! let result: serde_json::Value = resp.into_result().unwrap();
//! assert_eq!(result["tools"], serde_json::json!([]));
//! ```
//!
//! Dependencies: `memchr` finds line ends, `bytes` and `tokio-util` give the codec its buffers;
//! with the `stdio` feature, `tokio` polls this process's own stdin and stdout
//! (the `process_stdio` module) and `nix` restores their file status flags.
#![forbid(unsafe_code)]

mod codec;
mod decode;
mod error;
mod id;
mod message;
#[cfg(feature = "stdio")]
pub mod process_stdio;
mod scan;

pub use codec::{DEFAULT_MAX_MESSAGE_SIZE, FrameError, LineCodec};
pub use decode::{InvalidMessage, JsonError};
pub use error::{ErrorCode, ErrorObject, error_causes, error_chain};
pub use id::RequestId;
pub use message::{
    DecodeError, Message, Notification, Request, Response, encode_notification, encode_request, encode_response,
};
pub use scan::{IdScanner, ReplyScan};
pub use serde_json::value::RawValue;

/// The only JSON-RPC version this crate speaks; every message carries it as `"jsonrpc"`.
pub const JSONRPC_VERSION: &str = "2.0";

/// What kind of JSON value `value` is, as error messages say it: `null`, `a boolean`, `a number`,
/// `a string`, `an array`, `an object`.
///
/// ```
/// assert_eq!(plexus_jsonrpc::value_kind(&serde_json::json!([1])), "an array");
/// ```
pub fn value_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
