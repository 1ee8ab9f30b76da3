//! `plexus-testserver ws`: WebSocket with the subprotocol `mcp` — the handshake (seen raw), one
//! JSON-RPC message per text frame, pings, closing, and the faults.

mod common;
mod wire;

use std::io::ErrorKind;
use std::net::TcpStream;

use common::HANG_GUARD;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message, WebSocket};
use wire::{Remote, initialize_request, request, tool_call};

type Socket = WebSocket<TcpStream>;

/// Connects offering `mcp`, as an MCP client does.
fn connect(remote: &Remote) -> Socket {
    let mut request = remote.url.as_str().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", "mcp".parse().unwrap());
    let stream = TcpStream::connect(remote.addr).unwrap();
    stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let (socket, response) = tungstenite::client(request, stream).expect("the handshake");
    assert_eq!(response.headers()["sec-websocket-protocol"], "mcp");
    socket
}

fn send(socket: &mut Socket, message: &Value) {
    socket.send(Message::text(message.to_string())).unwrap();
}

/// The next text frame, as JSON.
fn recv(socket: &mut Socket) -> Value {
    loop {
        match socket.read().expect("a frame") {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            Message::Ping(_) | Message::Pong(_) => {}
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

/// A raw upgrade request with `protocols` offered (none when empty); the response.
fn raw_upgrade(remote: &Remote, protocols: Option<&str>) -> wire::Response {
    let mut headers = vec![
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    if let Some(protocols) = protocols {
        headers.push(("Sec-WebSocket-Protocol", protocols));
    }
    let mut conn = remote.connect();
    conn.send("GET", &remote.path, &headers, b"");
    let head = conn.head();
    let body = if head.status == 101 {
        Vec::new()
    } else {
        conn.body(&head)
    };
    wire::Response { head, body }
}

#[test]
fn a_session_speaks_one_message_per_text_frame() {
    let remote = Remote::start("ws", &[]);
    assert_eq!(remote.url, format!("ws://127.0.0.1:{}/mcp", remote.addr.port()));
    let mut socket = connect(&remote);
    send(&mut socket, &initialize_request(1, json!({})));
    let init = recv(&mut socket);
    assert_eq!(
        (init["id"].clone(), init["result"]["protocolVersion"].clone()),
        (json!(1), json!("2025-11-25"))
    );
    send(
        &mut socket,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(&mut socket, &tool_call(2, "trigger-list-changed", json!({})));
    assert_eq!(recv(&mut socket)["method"], "notifications/tools/list_changed");
    assert_eq!(recv(&mut socket)["id"], 2);
    send(&mut socket, &tool_call(3, "echo", json!({"text": "hi"})));
    assert_eq!(recv(&mut socket)["result"]["content"][0]["text"], "hi");
    socket.send(Message::Ping("are you there".into())).unwrap();
    match socket.read().unwrap() {
        Message::Pong(payload) => assert_eq!(&payload[..], b"are you there"),
        other => panic!("expected the pong, got {other:?}"),
    }
    socket.close(None).unwrap();
    loop {
        match socket.read() {
            Ok(Message::Close(_)) => {}
            Err(tungstenite::Error::ConnectionClosed) => break,
            other => panic!("expected the close handshake to finish, got {other:?}"),
        }
    }
}

#[test]
fn the_upgrade_needs_the_mcp_subprotocol() {
    let remote = Remote::start("ws", &[]);
    for offered in [None, Some("chat, superchat")] {
        let response = raw_upgrade(&remote, offered);
        assert_eq!(response.status(), 400);
        assert_eq!(
            response.text(),
            "plexus-testserver: the WebSocket subprotocol \"mcp\" is required: offer it in Sec-WebSocket-Protocol\n"
        );
    }
    let response = raw_upgrade(&remote, Some("chat, mcp"));
    assert_eq!(response.status(), 101);
    assert_eq!(response.header("sec-websocket-protocol"), Some("mcp"));
    assert_eq!(
        response.header("sec-websocket-accept"),
        Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    );
    let plain = remote.connect().exchange("GET", "/mcp", &[], b"");
    assert_eq!((plain.status(), plain.header("upgrade")), (426, Some("websocket")));
}

#[test]
fn no_subprotocol_accepts_without_echoing_it() {
    let remote = Remote::start("ws", &["--no-subprotocol"]);
    let response = raw_upgrade(&remote, Some("mcp"));
    assert_eq!(response.status(), 101);
    assert_eq!(response.header("sec-websocket-protocol"), None);
}

#[test]
fn bad_frames_get_errors_or_a_close() {
    let remote = Remote::start("ws", &["--max-body-bytes", "1000"]);
    let mut socket = connect(&remote);
    socket.send(Message::text("{not json")).unwrap();
    let error = recv(&mut socket);
    assert_eq!(
        (error["id"].clone(), error["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    socket.send(Message::text("x".repeat(2000))).unwrap();
    match socket.read() {
        Ok(Message::Close(Some(CloseFrame { code, reason }))) => {
            assert_eq!(code, CloseCode::Size);
            assert!(reason.ends_with("(--max-body-bytes 1000)"), "{reason}");
        }
        other => panic!("expected a close frame, got {other:?}"),
    }
    let mut socket = connect(&remote);
    socket.send(Message::binary(b"{}".to_vec())).unwrap();
    match socket.read() {
        Ok(Message::Close(Some(CloseFrame { code, reason }))) => {
            assert_eq!(code, CloseCode::Unsupported);
            assert_eq!(reason.as_str(), "binary frames carry no MCP messages; send text frames");
        }
        other => panic!("expected a close frame, got {other:?}"),
    }
}

#[test]
fn reset_after_drops_the_connection() {
    let remote = Remote::start("ws", &["--reset-after", "1"]);
    let mut socket = connect(&remote);
    send(&mut socket, &initialize_request(1, json!({})));
    assert_eq!(recv(&mut socket)["id"], 1);
    send(&mut socket, &request(2, "ping", json!({})));
    match socket.read() {
        Err(tungstenite::Error::Io(e)) => assert_eq!(e.kind(), ErrorKind::ConnectionReset),
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[test]
fn fail_status_refuses_the_upgrade() {
    let remote = Remote::start("ws", &["--fail-after", "1", "--fail-status", "503"]);
    assert_eq!(raw_upgrade(&remote, Some("mcp")).status(), 101);
    let response = raw_upgrade(&remote, Some("mcp"));
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.text(),
        "plexus-testserver: failing request 2 with status 503 as asked (--fail-status, --fail-after)\n"
    );
}
