//! Streamable HTTP in the stateless era (revision 2026-07-28): a POST whose
//! `MCP-Protocol-Version` names no version of the `initialize` era is one request that stands
//! alone. No `Mcp-Session-Id` is issued or read, and nothing it does depends on an earlier POST
//! (but the retry of a call held for its client's input, see [`crate::rounds`]), so any replica
//! of the gateway can answer it.
//!
//! - Checked before anything else: the version (-32022 naming the stateless versions the gateway
//!   speaks), the envelope (-32602), and the headers against the body (-32020): the
//!   `MCP-Protocol-Version` equal to the envelope's version, `Mcp-Method` to the method, and
//!   `Mcp-Name` to `params.name` (`tools/call`, `prompts/get`) or `params.uri`
//!   (`resources/read`), and on a `tools/call` one `Mcp-Param-{Name}` header for each argument
//!   present of a parameter its tool annotates with `x-mcp-header`, carrying the argument, and
//!   no other `Mcp-Param-*` header; values decoded from `=?base64?…?=` first.
//! - A `tools/call` or `subscriptions/listen` is answered as an event stream (the call's
//!   progress, the listen's notifications, then the response), other requests as JSON. An error
//!   known before anything is sent is a JSON body whose status says its code: 400 for what is
//!   wrong with the request, 404 for a method the gateway does not serve.
//! - The client closing the stream before the response cancels the request: its call is dropped,
//!   which cancels it on its backend; a listen ends.
//! - A notification gets 202 (a stateless client cancels by closing the stream); a response gets
//!   -32600 (the gateway sends such a client no request); GET and DELETE get 405 (`Allow: POST`).

use std::sync::Arc;

use bytes::Bytes;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use plexus::jsonrpc::{ErrorCode, ErrorObject, Message, RawValue, RequestId};
use plexus::protocol::errors::{HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION};
use plexus::protocol::http_headers::{MCP_METHOD_HEADER, MCP_NAME_HEADER, ParamHeaders, expect_received, name_param};
use plexus::protocol::version::PROTOCOL_VERSION_HEADER;
use plexus::protocol::{ProtocolVersion, methods};
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::{Body, Http, RequestBody, events, full, read_message};
use crate::era::{Peek, Route, Stateless, unsupported_version};
use crate::session::{SINK_CAPACITY, Session};

/// Whether a request's `MCP-Protocol-Version` names no version of the `initialize` era (an
/// unreadable one included): it is of the stateless era.
pub(super) fn is_stateless(headers: &HeaderMap) -> bool {
    headers.get(PROTOCOL_VERSION_HEADER).is_some_and(|value| {
        !value
            .to_str()
            .is_ok_and(|value| ProtocolVersion::SUPPORTED.iter().any(|known| known.as_str() == value))
    })
}

/// The HTTP status of a stateless request's error answer: 400 for what is wrong with the request
/// (-32700, -32600, -32602, -32020, -32021, -32022), 404 for a method not served (-32601), 200 for
/// the rest (the request was taken and failed).
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST
        | ErrorCode::INVALID_PARAMS
        | HEADER_MISMATCH
        | MISSING_REQUIRED_CLIENT_CAPABILITY
        | UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// A JSON body holding the error response to `id`, with the status its code calls for.
fn error_answer(id: Option<RequestId>, error: ErrorObject) -> Response<Body> {
    let status = status_of(error.code);
    let mut line = Vec::with_capacity(128 + error.message.len());
    Message::Response(plexus::jsonrpc::Response::error(id, error)).encode_line(&mut line);
    full(status, Some("application/json"), line)
}

/// A JSON body holding the response `line` to `id`, with the status its error's code calls for
/// (200 for a result).
fn json_answer(id: &RequestId, line: Vec<u8>) -> Response<Body> {
    #[derive(Deserialize)]
    struct Failed {
        error: Code,
    }
    #[derive(Deserialize)]
    struct Code {
        code: ErrorCode,
    }
    // The gateway writes `{"jsonrpc":"2.0","id":ID,` then `"result"` or `"error"`: only an
    // error (small) is parsed for its code.
    let mut error_prefix = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    let _ = serde_json::to_writer(&mut error_prefix, id);
    error_prefix.extend_from_slice(br#","error":"#);
    let status = if line.starts_with(&error_prefix) {
        serde_json::from_slice::<Failed>(&line).map_or(StatusCode::OK, |failed| status_of(failed.error.code))
    } else {
        StatusCode::OK
    };
    full(status, Some("application/json"), line)
}

/// -32020 saying `message`.
fn mismatch(message: &str) -> ErrorObject {
    ErrorObject::new(HEADER_MISMATCH, format!("Header mismatch: {message}"))
}

/// Checks that header `name` was sent and decodes to `expected` (what the body says as `what`).
fn expect_header(headers: &HeaderMap, name: &str, expected: &str, what: &str) -> Result<(), ErrorObject> {
    let value = headers.get(name).map(HeaderValue::as_bytes);
    expect_received(name, value, expected, what).map_err(|why| mismatch(&why))
}

/// The arguments of a `tools/call`'s params.
#[derive(Deserialize)]
struct Arguments {
    arguments: Option<Map<String, Value>>,
}

/// Checks the `Mcp-Param-{Name}` headers of a `tools/call` with `params` of a tool whose
/// annotated parameters are `annotated` (see the module docs). The arguments are read only when
/// there is something to check.
pub(crate) fn check_param_headers(
    headers: &HeaderMap,
    annotated: &ParamHeaders,
    params: Option<&RawValue>,
) -> Result<(), ErrorObject> {
    let arguments = if annotated.is_empty() {
        Map::new()
    } else {
        params
            .and_then(|params| serde_json::from_str::<Arguments>(params.get()).ok())
            .and_then(|params| params.arguments)
            .unwrap_or_default()
    };
    annotated
        .check_received(&arguments, headers.keys().map(HeaderName::as_str), |name| {
            headers.get(name).map(HeaderValue::as_bytes)
        })
        .map_err(|why| mismatch(&why))
}

/// Checks a stateless request against its headers; what it says of itself.
fn check(headers: &HeaderMap, request: &plexus::jsonrpc::Request) -> Result<Box<Stateless>, ErrorObject> {
    let header = headers
        .get(PROTOCOL_VERSION_HEADER)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    if !ProtocolVersion::STATELESS.iter().any(|known| known.as_str() == header) {
        return Err(unsupported_version(&header));
    }
    let method = request.method.as_ref();
    let peek = Peek::of(request)?;
    if let Some(version) = peek.version()
        && version != header
    {
        return Err(mismatch(&format!(
            "{PROTOCOL_VERSION_HEADER} is {header:?} but _meta's {} is {version:?}",
            plexus::protocol::envelope::PROTOCOL_VERSION_KEY
        )));
    }
    let stateless = peek.stateless(method)?;
    expect_header(headers, MCP_METHOD_HEADER, method, "the body's method")?;
    if let Some(member) = name_param(method) {
        let named = stateless.named.as_deref().unwrap_or_default();
        expect_header(headers, MCP_NAME_HEADER, named, &format!("params.{member}"))?;
    }
    Ok(stateless)
}

/// A GET or DELETE of the stateless era: it has no stream to open and no session to end.
pub(super) fn refuse_method<B>(request: &Request<B>) -> Response<Body> {
    let mut response = error_answer(
        None,
        ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "{} is not part of the stateless era: POST each request (subscriptions/listen for changes)",
                request.method()
            ),
        ),
    );
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// Closes a stateless request's session when dropped (the client went away before its answer).
struct CloseOnDrop(Arc<Session>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Why a stateless POST's message is answered at once, before any backend work.
pub(crate) enum Rejected {
    /// A notification: 202, nothing else.
    Notification,
    /// This error answers it (to this id).
    Error(Option<RequestId>, ErrorObject),
}

impl Rejected {
    fn answer(self) -> Response<Body> {
        match self {
            Rejected::Notification => full(StatusCode::ACCEPTED, None, Bytes::new()),
            Rejected::Error(id, error) => error_answer(id, error),
        }
    }
}

/// A stateless POST's `message` with its `headers`, before any backend work: the request and
/// what it says of itself, checked against the headers (but for a `tools/call`'s
/// `Mcp-Param-*` headers, which need its tool: [`check_param_headers`]), or why it is answered
/// at once.
pub(crate) fn admit(
    headers: &HeaderMap,
    message: Message,
) -> Result<(plexus::jsonrpc::Request, Box<Stateless>), Rejected> {
    let request = match message {
        Message::Request(request) => request,
        Message::Notification(_) => return Err(Rejected::Notification),
        Message::Response(response) => {
            let error = ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                "a client of the stateless era answers nothing: the gateway sends it no request",
            );
            return Err(Rejected::Error(response.id, error));
        }
    };
    match check(headers, &request) {
        Ok(stateless) => Ok((request, stateless)),
        Err(error) => Err(Rejected::Error(Some(request.id), error)),
    }
}

impl Http {
    /// A POST of the stateless era (see the module docs).
    pub(super) async fn post_stateless<B: RequestBody>(&self, request: Request<B>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let message = match read_message(body).await {
            Ok(message) => message,
            Err(refusal) => return *refusal,
        };
        let (request, mut stateless) = match admit(&parts.headers, message) {
            Ok(admitted) => admitted,
            Err(rejected) => return rejected.answer(),
        };
        if request.method == methods::TOOLS_CALL {
            let tool = stateless.named.take().unwrap_or_default();
            let annotated = self.gateway.param_headers(&tool).await;
            if let Err(error) = check_param_headers(&parts.headers, &annotated, request.params.as_deref()) {
                return error_answer(Some(request.id), error);
            }
            stateless.named = Some(tool);
        }
        let session = Session::stateless_request();
        #[cfg(feature = "otel")]
        session.telemetry.over_http(None);
        let id = request.id.clone();
        let streamed = matches!(
            request.method.as_ref(),
            methods::TOOLS_CALL | methods::SUBSCRIPTIONS_LISTEN
        );
        let (sink, mut messages) = mpsc::channel(SINK_CAPACITY);
        self.gateway
            .handle_request(&session, request, Ok(Route::Stateless(stateless)), sink);
        if streamed {
            return events(messages, Some(id), Some(session));
        }
        let _close = CloseOnDrop(session);
        match messages.recv().await {
            Some(line) => json_answer(&id, line),
            None => error_answer(
                Some(id),
                ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the request was abandoned"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    header::HeaderName::from_static(name),
                    HeaderValue::from_str(value).unwrap(),
                )
            })
            .collect()
    }

    fn call(name: &str, version: &str) -> plexus::jsonrpc::Request {
        let params = serde_json::json!({"name": name, "_meta": {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {}}});
        plexus::jsonrpc::Request {
            id: RequestId::Number(1),
            method: "tools/call".into(),
            params: Some(serde_json::value::to_raw_value(&params).unwrap()),
        }
    }

    #[test]
    fn the_headers_must_say_what_the_body_says() {
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?bWNwX19kZW1vX19lY2hv?="),
        ];
        assert!(check(&headers(&good), &call("mcp__demo__echo", "2026-07-28")).is_ok());
        let refused = |pairs: &[(&'static str, &str)], request| check(&headers(pairs), &request).err().unwrap();
        let error = refused(&good, call("mcp__demo__add", "2026-07-28"));
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Name is \"mcp__demo__echo\" but params.name is \"mcp__demo__add\""
            )
        );
        let error = refused(&good[..2], call("mcp__demo__echo", "2026-07-28"));
        assert_eq!(
            error.message,
            "Header mismatch: Mcp-Name is missing (params.name is \"mcp__demo__echo\")"
        );
        let other = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list")];
        let error = refused(&other, call("x", "2026-07-28"));
        assert_eq!(
            error.message,
            "Header mismatch: Mcp-Method is \"tools/list\" but the body's method is \"tools/call\""
        );
        let error = refused(&good, call("mcp__demo__echo", "2027-01-01"));
        assert_eq!(error.code, HEADER_MISMATCH);
        let newer = [("mcp-protocol-version", "2027-01-01")];
        assert_eq!(
            refused(&newer, call("x", "2027-01-01")).code,
            UNSUPPORTED_PROTOCOL_VERSION
        );
    }

    /// Found by the `gateway` fuzz target: a task's request names its task in `Mcp-Name`, as
    /// the client sends it, and the gateway read only `name` and `uri`, so it refused the
    /// client's right header as a mismatch with an empty `params.taskId`.
    #[test]
    fn a_tasks_request_is_named_by_its_task_id() {
        let get = |task_id: &str| {
            let params = serde_json::json!({"taskId": task_id, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}});
            plexus::jsonrpc::Request {
                id: RequestId::Number(1),
                method: "tasks/get".into(),
                params: Some(serde_json::value::to_raw_value(&params).unwrap()),
            }
        };
        let sent = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tasks/get"),
            ("mcp-name", "t-1"),
        ];
        let stateless = check(&headers(&sent), &get("t-1")).unwrap();
        assert_eq!(stateless.named.as_deref(), Some("t-1"));
        let error = check(&headers(&sent), &get("t-2")).err().unwrap();
        assert_eq!(
            error.message,
            "Header mismatch: Mcp-Name is \"t-1\" but params.taskId is \"t-2\""
        );
    }

    #[test]
    fn a_calls_param_headers_carry_its_annotated_arguments_and_nothing_else() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"}}});
        let annotated = ParamHeaders::from_input_schema(&schema).unwrap();
        let params =
            |arguments: Value| serde_json::value::to_raw_value(&serde_json::json!({"arguments": arguments})).unwrap();
        let check = |pairs: &[(&'static str, &str)], arguments: Value| {
            check_param_headers(&headers(pairs), &annotated, Some(&params(arguments))).map_err(|e| e.message)
        };
        let arguments = serde_json::json!({"region": "Zürich", "priority": 3, "query": "x"});
        let good = [
            ("mcp-param-region", "=?base64?WsO8cmljaA==?="),
            ("mcp-param-priority", "3"),
        ];
        assert_eq!(check(&good, arguments.clone()), Ok(()));
        assert_eq!(
            check(&good[..1], arguments.clone()),
            Err("Header mismatch: Mcp-Param-Priority is missing (arguments.priority is \"3\")".to_owned())
        );
        assert_eq!(
            check(&[good[0], ("mcp-param-priority", "4")], arguments.clone()),
            Err("Header mismatch: Mcp-Param-Priority is \"4\" but arguments.priority is \"3\"".to_owned())
        );
        assert_eq!(
            check(&good, serde_json::json!({"region": "Zürich"})),
            Err(
                "Header mismatch: Mcp-Param-Priority (\"3\") was sent but arguments.priority is absent or null"
                    .to_owned()
            )
        );
        assert_eq!(
            check(&[good[0], good[1], ("mcp-param-query", "x")], arguments),
            Err(
                "Header mismatch: mcp-param-query was sent but the tool has no parameter annotated x-mcp-header \"query\""
                    .to_owned()
            )
        );
        // A tool without annotations: its arguments are not even read.
        assert!(check_param_headers(&HeaderMap::new(), &ParamHeaders::default(), None).is_ok());
    }

    #[test]
    fn an_error_answer_says_its_kind_in_its_status() {
        let id = RequestId::Number(7);
        let error = |code: ErrorCode| {
            let mut line = Vec::new();
            Message::Response(plexus::jsonrpc::Response::error(
                Some(id.clone()),
                ErrorObject::new(code, "x"),
            ))
            .encode_line(&mut line);
            json_answer(&id, line).status()
        };
        assert_eq!(error(ErrorCode::INVALID_PARAMS), StatusCode::BAD_REQUEST);
        assert_eq!(error(ErrorCode::METHOD_NOT_FOUND), StatusCode::NOT_FOUND);
        assert_eq!(error(ErrorCode::INTERNAL_ERROR), StatusCode::OK);
        let result = br#"{"jsonrpc":"2.0","id":7,"result":{"error":{"code":-32602}}}"#.to_vec();
        assert_eq!(json_answer(&id, result).status(), StatusCode::OK);
        assert!(is_stateless(&headers(&[("mcp-protocol-version", "2026-07-28")])));
        assert!(!is_stateless(&headers(&[("mcp-protocol-version", "2025-11-25")])));
        assert!(!is_stateless(&HeaderMap::new()));
    }
}
