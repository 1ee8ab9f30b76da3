//! The four JSON-RPC message shapes, one-pass decoding and newline-free encoding.

use std::borrow::Cow;

use serde::de::{DeserializeOwned, Deserializer};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::{ErrorObject, InvalidMessage, JSONRPC_VERSION, JsonError, RequestId};

/// A JSON-RPC request: it has an id and expects a response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id, echoed by the response.
    pub id: RequestId,
    /// The method name.
    pub method: Cow<'static, str>,
    /// The parameters, kept as raw JSON.
    pub params: Option<Box<RawValue>>,
}

/// A JSON-RPC notification: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: Cow<'static, str>,
    /// The parameters, kept as raw JSON.
    pub params: Option<Box<RawValue>>,
}

/// A JSON-RPC response: a result or an error for the request with the same id.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request answered. Only an error response may lack it (a peer that could not
    /// read the request's id answers with `null`).
    pub id: Option<RequestId>,
    /// The result (raw JSON) or the error object.
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

impl Response {
    /// A success response.
    pub fn success(id: RequestId, result: Box<RawValue>) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
        }
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }

    /// Decodes the result into `T`, or returns the error object (a result that does not fit `T`
    /// becomes an [`ErrorCode::INVALID_PARAMS`](crate::ErrorCode::INVALID_PARAMS)-style error object
    /// naming the mismatch).
    pub fn into_result<T: DeserializeOwned>(self) -> Result<T, ErrorObject> {
        let raw = self.outcome?;
        serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::new(
                crate::ErrorCode::INVALID_PARAMS,
                format!("the result does not have the expected shape: {e}"),
            )
        })
    }
}

/// Any JSON-RPC 2.0 message.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response (result or error).
    Response(Response),
}

/// Why a line or frame is not a valid JSON-RPC 2.0 message. Each case is distinct so that a caller
/// can report exactly what the peer sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes are not valid UTF-8.
    #[error("the message is not valid UTF-8 (invalid byte at offset {offset})")]
    InvalidUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The text is not valid JSON.
    #[error("the message is not valid JSON")]
    InvalidJson {
        /// serde_json's error, with line and column.
        #[source]
        source: JsonError,
    },
    /// A JSON array: JSON-RPC batches, which MCP removed.
    #[error("the message is a JSON array (a JSON-RPC batch); MCP does not allow batching")]
    Batch,
    /// Valid JSON that is not an object.
    #[error("the message is JSON but not an object")]
    NotAnObject,
    /// `jsonrpc` is missing or not `"2.0"`.
    #[error("the message is not JSON-RPC 2.0 (\"jsonrpc\" is {found})")]
    WrongVersion {
        /// What the `jsonrpc` member held, or `missing`.
        found: String,
    },
    /// A JSON-RPC 2.0 object that is none of request, notification, response.
    #[error("invalid JSON-RPC message")]
    Invalid {
        /// What is wrong with it.
        #[source]
        problem: InvalidMessage,
    },
}

/// The wire shape: every member optional, classified after one parse.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present_ref")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Box<RawValue>>,
}

/// Keeps a member that is present with the value `null` (serde's `Option` would erase it).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

/// Like [`present`], borrowing.
fn present_ref<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

fn invalid(problem: InvalidMessage) -> DecodeError {
    DecodeError::Invalid { problem }
}

fn invalid_json(error: serde_json::Error) -> DecodeError {
    DecodeError::InvalidJson { source: error.into() }
}

impl Message {
    /// Decodes one message from bytes (no framing).
    pub fn from_slice(bytes: &[u8]) -> Result<Message, DecodeError> {
        let text = std::str::from_utf8(bytes).map_err(|e| DecodeError::InvalidUtf8 {
            offset: e.valid_up_to(),
        })?;
        Message::from_str(text)
    }

    /// Decodes one message from text (no framing).
    #[allow(clippy::should_implement_trait)] // `FromStr` would hide the distinct error type behind `Err`.
    pub fn from_str(text: &str) -> Result<Message, DecodeError> {
        match text.trim_start().as_bytes().first() {
            Some(b'[') => {
                // Only call it a batch if it really is a JSON array; garbage starting with `[` is invalid JSON.
                return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                    Ok(_) => Err(DecodeError::Batch),
                    Err(e) => Err(invalid_json(e)),
                };
            }
            Some(b'{') => {}
            _ => {
                return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                    Ok(_) => Err(DecodeError::NotAnObject),
                    Err(e) => Err(invalid_json(e)),
                };
            }
        }
        let env: Envelope<'_> = serde_json::from_str(text).map_err(|e| {
            if e.is_syntax() || e.is_eof() {
                invalid_json(e)
            } else {
                invalid(InvalidMessage::Members(e.into()))
            }
        })?;
        match env.jsonrpc.map(RawValue::get) {
            Some("\"2.0\"") => {}
            Some(other) => {
                return Err(DecodeError::WrongVersion {
                    found: other.to_owned(),
                });
            }
            None => {
                return Err(DecodeError::WrongVersion {
                    found: "missing".to_owned(),
                });
            }
        }
        let id = match env.id {
            None => None,
            Some(raw) if raw.get() == "null" => Some(None),
            Some(raw) => Some(Some(
                serde_json::from_str::<RequestId>(raw.get()).map_err(|e| invalid(InvalidMessage::BadId(e.into())))?,
            )),
        };
        if let Some(method) = env.method {
            if env.result.is_some() || env.error.is_some() {
                return Err(invalid(InvalidMessage::MethodAndOutcome));
            }
            let method: Cow<'static, str> = Cow::Owned(method.into_owned());
            let params = match env.params {
                Some(p) if p.get() == "null" => None,
                Some(p) if !matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) => {
                    return Err(invalid(InvalidMessage::ParamsNotStructured {
                        method: method.into_owned(),
                    }));
                }
                other => other,
            };
            return match id {
                None => Ok(Message::Notification(Notification { method, params })),
                Some(None) => Err(invalid(InvalidMessage::NullId {
                    method: method.into_owned(),
                })),
                Some(Some(id)) => Ok(Message::Request(Request { id, method, params })),
            };
        }
        match (env.result, env.error) {
            (Some(_), Some(_)) => Err(invalid(InvalidMessage::ResultAndError)),
            (Some(result), None) => match id {
                Some(Some(id)) => Ok(Message::Response(Response {
                    id: Some(id),
                    outcome: Ok(result),
                })),
                _ => Err(invalid(InvalidMessage::ResultWithoutId)),
            },
            (None, Some(error)) => {
                let error: ErrorObject =
                    serde_json::from_str(error.get()).map_err(|e| invalid(InvalidMessage::BadErrorObject(e.into())))?;
                Ok(Message::Response(Response {
                    id: id.flatten(),
                    outcome: Err(error),
                }))
            }
            (None, None) => Err(invalid(InvalidMessage::Unclassified)),
        }
    }

    /// Encodes the message as compact JSON followed by `\n` into `out`. The JSON never contains a
    /// newline: raw values captured from a pretty-printed peer have their inter-token line breaks
    /// replaced by spaces (inside JSON strings a line break is always escaped, so this is lossless).
    pub fn encode_line(&self, out: &mut Vec<u8>) {
        let start = out.len();
        // Writing into a Vec cannot fail and every member serializes.
        serde_json::to_writer(&mut *out, self).expect("a JSON-RPC message always serializes");
        finish_line(out, start);
    }

    /// The message as compact JSON text, without a trailing newline.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(128);
        self.encode_line(&mut out);
        out.pop();
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => r.id.as_ref(),
            Message::Notification(_) => None,
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

/// Replaces any newline in `out[start..]` by a space and appends the framing newline.
fn finish_line(out: &mut Vec<u8>, start: usize) {
    let body = &mut out[start..];
    if memchr::memchr2(b'\n', b'\r', body).is_some() {
        for b in body.iter_mut() {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
    }
    out.push(b'\n');
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(result) => map.serialize_entry("result", result)?,
                    Err(error) => map.serialize_entry("error", error)?,
                }
            }
        }
        map.end()
    }
}

/// Appends `,"key":value` (when there is a value), closes the object and the line. On a
/// serialization error the output is truncated back to `start`.
fn finish_object<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    start: usize,
    key: &str,
    value: Option<&P>,
) -> Result<(), serde_json::Error> {
    if let Some(value) = value {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        if let Err(e) = serde_json::to_writer(&mut *out, value) {
            out.truncate(start);
            return Err(e);
        }
    }
    out.push(b'}');
    finish_line(out, start);
    Ok(())
}

/// Encodes a request line with typed params straight into `out`, without an intermediate [`Message`]
/// or raw value.
pub fn encode_request<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    method: &str,
    params: Option<&P>,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut *out, id)?;
    out.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut *out, method)?;
    finish_object(out, start, "params", params)
}

/// Encodes a notification line with typed params.
pub fn encode_notification<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    method: &str,
    params: Option<&P>,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    serde_json::to_writer(&mut *out, method)?;
    finish_object(out, start, "params", params)
}

/// Encodes a success response line with a typed result.
pub fn encode_response<R: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &RequestId,
    result: &R,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut *out, id)?;
    finish_object(out, start, "result", Some(result))
}

#[cfg(test)]
mod tests;
