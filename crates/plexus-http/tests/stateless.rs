//! Messages of the stateless 2026-07-28 revision (with headers of their own) against the test
//! server's Streamable HTTP mode in this process: they carry their own headers and no session,
//! an error status with a JSON-RPC error body is the request's answer, another body is an HTTP
//! error, and a `notifications/cancelled` is not sent (closing the stream is the cancellation).

mod common;

use std::borrow::Cow;

use common::guard;
use common::mcp::transport;
use plexus_jsonrpc::{ErrorCode, Message, Request, RequestId};
use plexus_testserver::RemoteServer;
use plexus_transport::{MessageHeader, OutboundMessage, TransportError, TransportSender};
use serde_json::{Value, json};

/// Request `id` of `method` with `params` enveloped at 2026-07-28, with `headers`.
fn stateless(id: i64, method: &str, params: Value, headers: &[(&'static str, &str)]) -> OutboundMessage {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let message = Message::Request(Request {
        id: RequestId::Number(id),
        method: method.to_owned().into(),
        params: Some(serde_json::value::to_raw_value(&params).unwrap()),
    });
    let headers: Vec<MessageHeader> = headers
        .iter()
        .map(|(name, value)| (Cow::Borrowed(*name), Cow::Owned((*value).to_owned())))
        .collect();
    OutboundMessage::from_message(&message).with_headers(headers)
}

#[tokio::test]
async fn a_stateless_request_carries_its_headers_and_an_error_status_with_a_json_rpc_body_is_its_answer() {
    let server = RemoteServer::from_args("http", &["--json-response"]).await.unwrap();
    let (sender, _receiver, info) = transport(server.url(), |c| c);
    let version = ("MCP-Protocol-Version", "2026-07-28");
    let discover = stateless(
        1,
        "server/discover",
        json!({}),
        &[version, ("Mcp-Method", "server/discover")],
    );
    let answer = guard(sender.send(discover)).await.unwrap().expect("a JSON body");
    let result: Value = serde_json::from_str(answer.outcome.unwrap().get()).unwrap();
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{result}"
    );
    assert_eq!(info.session_id(), None);
    // A wrong Mcp-Method: 400 with -32020, given back as the request's answer (under its id).
    let wrong = stateless(2, "tools/list", json!({}), &[version, ("Mcp-Method", "tools/call")]);
    let answer = guard(sender.send(wrong)).await.unwrap().expect("the error body");
    assert_eq!(answer.id, Some(RequestId::Number(2)));
    assert_eq!(answer.outcome.unwrap_err().code, ErrorCode(-32020));
    // A cancellation is closing the stream: nothing is POSTed, and the transport goes on.
    let cancelled =
        Message::from_slice(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#)
            .unwrap();
    let cancelled = OutboundMessage::from_message(&cancelled).with_headers(vec![(
        Cow::Borrowed("MCP-Protocol-Version"),
        Cow::Borrowed("2026-07-28"),
    )]);
    assert!(guard(sender.send(cancelled)).await.unwrap().is_none());
    let list = stateless(3, "tools/list", json!({}), &[version, ("Mcp-Method", "tools/list")]);
    assert!(
        guard(sender.send(list))
            .await
            .unwrap()
            .expect("a JSON body")
            .outcome
            .is_ok()
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn an_error_status_without_a_json_rpc_body_is_an_http_error() {
    let server = RemoteServer::from_args("http", &["--era", "legacy", "--probe-answer", "empty400"])
        .await
        .unwrap();
    let (sender, _receiver, _info) = transport(server.url(), |c| c);
    let probe = stateless(
        1,
        "server/discover",
        json!({}),
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "server/discover"),
        ],
    );
    let error = guard(sender.send(probe)).await.unwrap_err();
    assert!(
        matches!(error, TransportError::Http { status: 400, ref body, .. } if body.is_empty()),
        "{error:?}"
    );
    sender.close().await.unwrap();
}
