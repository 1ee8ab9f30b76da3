//! `plexus serve --http` against adversarial and unusual clients, over real sockets on loopback:
//! clients that send their headers slowly, or nothing, or keep an idle connection open cannot
//! hold the gateway's connection slots; and the `Host` and `Origin` checks take a loopback
//! address the gateway listens on as its own and names in any case, while still refusing
//! another host (DNS rebinding).

mod support;

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;
use support::Workspace;
use support::gateway::{HttpGateway, serve_http};

/// The gateway's header deadline (`HEADER_TIMEOUT` in plexus-gateway's `src/http.rs`).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The gateway's connection limit (`MAX_CONNECTIONS` in plexus-gateway's `src/http.rs`).
const MAX_CONNECTIONS: usize = 512;
/// Slack on top of the deadline for a shared, slow machine: a wait is bounded by both, and only
/// an outcome is asserted.
const MARGIN: Duration = Duration::from_secs(20);

/// An `initialize` request's body.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// Starts `plexus serve --http HOST:PORT` (no servers configured) on a free port of `host` and
/// returns it with its `HOST:PORT`, once it accepts connections.
fn start(host: &str) -> (Workspace, HttpGateway, String) {
    let ws = Workspace::new();
    ws.write_servers(ws.user_file(), &json!({}));
    let (gateway, address) = serve_http(&ws, host, &[], &[]);
    (ws, gateway, address)
}

/// A connection to `address` whose reads give up after the header deadline plus the margin.
fn connect(address: &str) -> TcpStream {
    let stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(HEADER_TIMEOUT + MARGIN)).unwrap();
    stream
}

/// Writes an `initialize` POST with `headers` (each ending in `\r\n`) to `stream`.
fn send_initialize(stream: &mut TcpStream, headers: &str) {
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    )
    .unwrap();
}

/// One `initialize` POST to `address` with `headers` on a connection of its own, which the
/// request closes; the whole answer (cut short if it takes longer than the deadline plus the
/// margin).
fn initialize(address: &str, headers: &str) -> String {
    let mut stream = connect(address);
    send_initialize(&mut stream, &format!("{headers}Connection: close\r\n"));
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Reads one whole response (its body sized or chunked) from `stream`; the response.
fn read_response(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ")?.parse().ok());
            let complete = match length {
                Some(length) => body.len() >= length,
                None => body.ends_with("0\r\n\r\n"),
            };
            if complete {
                return text;
            }
        }
        match stream.read(&mut buffer) {
            Ok(0) => panic!("the connection ended before the response did: {text:?}"),
            Ok(read) => answer.extend_from_slice(&buffer[..read]),
            Err(e) => panic!("no whole response ({e}): {text:?}"),
        }
    }
}

/// Asserts that the gateway closes `stream` (within the deadline plus the margin) without
/// writing anything to it.
#[track_caller]
fn assert_closed_without_answer(mut stream: TcpStream, what: &str) {
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Ok(_) => panic!("{what}: the gateway answered {:?}", byte[0] as char),
        Err(e) => panic!(
            "{what}: still open after {} s ({e})",
            (HEADER_TIMEOUT + MARGIN).as_secs()
        ),
    }
}

#[test]
fn a_gateway_full_of_slow_header_clients_serves_a_new_client_within_the_header_deadline() {
    let (_ws, gateway, address) = start("127.0.0.1");
    // Every slot taken: half send a request line and one header, half nothing at all.
    let slow: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|i| {
            let mut stream = connect(&address);
            if i % 2 == 0 {
                write!(stream, "POST /mcp HTTP/1.1\r\nHost: {address}\r\n").unwrap();
            }
            stream
        })
        .collect();
    // A new client is served once the slow ones are dropped, not reset.
    let answer = initialize(&address, &format!("Host: {address}\r\n"));
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
    assert!(answer.contains("\"serverInfo\""), "{answer:?}");
    for (i, stream) in slow.into_iter().enumerate() {
        assert_closed_without_answer(stream, &format!("slow connection {i}"));
    }
    drop(gateway);
}

#[test]
fn an_idle_kept_alive_connection_is_closed_after_the_header_deadline() {
    let (_ws, gateway, address) = start("127.0.0.1");
    let mut stream = connect(&address);
    send_initialize(&mut stream, &format!("Host: {address}\r\n"));
    let answer = read_response(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
    assert!(!answer.to_ascii_lowercase().contains("connection: close"), "{answer:?}");
    assert_closed_without_answer(stream, "the idle kept-alive connection");
    drop(gateway);
}

#[test]
fn a_gateway_on_another_loopback_address_takes_it_as_its_own_and_still_refuses_other_hosts() {
    let (_ws, gateway, address) = start("127.0.0.2");
    let port = address.rsplit_once(':').unwrap().1;
    for headers in [
        format!("Host: {address}\r\n"),
        format!("Host: {address}\r\nOrigin: http://{address}\r\n"),
        format!("Host: LOCALHOST:{port}\r\n"),
        format!("Host: LocalHost:{port}\r\nOrigin: http://LOCALHOST:{port}\r\n"),
        "Host: 127.0.0.2\r\n".to_owned(),
    ] {
        let answer = initialize(&address, &headers);
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{headers:?}: {answer:?}");
    }
    // DNS rebinding: a Host or Origin that is not this gateway's is still refused.
    for (headers, refusal) in [
        (
            format!("Host: evil.example:{port}\r\n"),
            format!(r#"Host \"evil.example:{port}\" is not an address or name this gateway listens on"#),
        ),
        (
            format!("Host: 127.0.0.3:{port}\r\n"),
            format!(r#"Host \"127.0.0.3:{port}\" is not an address or name this gateway listens on"#),
        ),
        (
            format!("Host: {address}\r\nOrigin: http://evil.example:{port}\r\n"),
            format!(r#"Origin \"http://evil.example:{port}\" may not use the gateway"#),
        ),
    ] {
        let answer = initialize(&address, &headers);
        assert!(
            answer.starts_with("HTTP/1.1 403 Forbidden\r\n"),
            "{headers:?}: {answer:?}"
        );
        assert!(answer.contains(&refusal), "{headers:?}: {answer:?}");
    }
    drop(gateway);
}
