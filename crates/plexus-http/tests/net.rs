//! What plexus-net's client brings to Streamable HTTP, over real sockets on 127.0.0.1 against
//! plexus-testserver (and its proxy): HTTP/2 over TLS with a CA made for the test, mutual TLS,
//! gzip bodies (JSON and SSE, capped by their decoded size), proxies (a `CONNECT` tunnel and
//! absolute-form forwarding, with credentials; from the environment, and bypassed by
//! `NO_PROXY`), and a folded response header.

mod common;

use common::mcp::{exchange, handshake, request, result_of, script, transport};
use common::{Reply, TestServer, guard};
use plexus_net::RemoteConfig as _;
use plexus_net::http::ProxyChoice;
use plexus_net::tls::ClientIdentity;
use plexus_testserver::EventLogFile as EventLog;
use plexus_testserver::child_test::{PROXY_VARIABLES, run_ignored_test};
use plexus_testserver::{ProxyServer, RemoteServer, TestCertificates};
use plexus_transport::{TransportError, TransportSender, error_chain};
use serde_json::json;

/// Starts `plexus-testserver http ARGS…` in this process.
async fn serve(args: &[String]) -> RemoteServer {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    RemoteServer::from_args("http", &args).await.unwrap()
}

/// Certificates made for this test, in a directory removed with the guard.
fn certificates() -> (tempfile::TempDir, TestCertificates) {
    let dir = tempfile::tempdir().unwrap();
    let certificates = TestCertificates::generate(dir.path()).unwrap();
    (dir, certificates)
}

/// `initialize`, then `tools/list` answered with the test server's tools.
async fn session(url: &str, configure: impl FnOnce(plexus_http::HttpConfig) -> plexus_http::HttpConfig) {
    let (sender, mut receiver, _info) = transport(url, configure);
    handshake(&sender, &mut receiver).await;
    let listed = exchange(&sender, &mut receiver, request(1, "tools/list")).await;
    assert!(
        result_of(&listed)["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty()),
        "{listed:?}"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn http2_over_tls_trusting_the_entrys_ca_with_json_and_sse_answers() {
    let (_dir, certificates) = certificates();
    for mode in ["--json-response", "--no-delete"] {
        let log = EventLog::new(&format!("h2{mode}"));
        let mut args = vec![mode.to_owned(), log.arg()];
        args.extend(certificates.server_args());
        let server = serve(&args).await;
        assert!(server.url().starts_with("https://127.0.0.1:"), "{}", server.url());
        session(server.url(), |c| c.ca(Some(certificates.ca.clone()))).await;
        let handshakes = log.matching(&json!({"event": "tls"}));
        assert!(!handshakes.is_empty(), "{mode}: no TLS handshake was logged");
        assert!(
            handshakes.iter().all(|h| h["alpn"] == "h2"),
            "{mode}: every connection speaks HTTP/2: {handshakes:?}"
        );
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_server_that_wants_a_client_certificate_gets_the_entrys() {
    let (_dir, certificates) = certificates();
    let log = EventLog::new("mtls");
    let mut args = vec![
        "--json-response".to_owned(),
        format!("--client-ca={}", certificates.ca.display()),
        log.arg(),
    ];
    args.extend(certificates.server_args());
    let server = serve(&args).await;
    let identity = ClientIdentity {
        cert: certificates.client_cert.clone(),
        key: certificates.client_key.clone(),
    };
    session(server.url(), |c| {
        c.ca(Some(certificates.ca.clone())).client_identity(Some(identity))
    })
    .await;
    assert!(
        !log.matching(&json!({"event": "tls", "client_certificate": true}))
            .is_empty(),
        "the client presented its certificate"
    );
    // Without one, the handshake fails and says so.
    let (sender, _receiver, _info) = transport(server.url(), |c| c.ca(Some(certificates.ca.clone())));
    let error = guard(sender.send(common::mcp::initialize(0))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: could not connect: TLS: the server ended the handshake (received fatal alert: \
             CertificateRequired); the server requires a client certificate (an entry's clientCert and clientKey)",
            server.url()
        )
    );
    server.shutdown().await;
}

#[tokio::test]
async fn gzip_json_and_gzip_event_streams_are_decoded() {
    for mode in ["--json-response", "--no-delete"] {
        let log = EventLog::new(&format!("gzip{mode}"));
        let server = serve(&[mode.to_owned(), "--gzip".to_owned(), log.arg()]).await;
        session(server.url(), |c| c).await;
        let requests = log.matching(&json!({"event": "http", "method": "POST"}));
        assert!(
            requests
                .iter()
                .all(|r| r["headers"]["accept-encoding"] == "gzip, br, deflate"),
            "{requests:?}"
        );
        assert!(
            !log.matching(&json!({"event": "compressed", "encoding": "gzip"}))
                .is_empty(),
            "{mode}: the server compressed its answers"
        );
        server.shutdown().await;
    }
}

/// A gzip stream of `size` zero bytes (which compresses to a few KiB).
fn gzip_of_zeros(size: usize) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&vec![0u8; size]).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test]
async fn a_compressed_body_is_capped_by_its_decoded_size() {
    let bomb = gzip_of_zeros(4 << 20);
    let compressed = bomb.len();
    let server = TestServer::start(script(move |r| {
        (r.rpc_method().as_deref() == Some("bomb")).then(|| {
            Reply::Raw(
                [
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: \
                         {compressed}\r\n\r\n"
                    )
                    .into_bytes(),
                    bomb.clone(),
                ]
                .concat(),
            )
        })
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c.max_message_size(64 * 1024));
    handshake(&sender, &mut receiver).await;
    let error = guard(sender.send(request(1, "bomb"))).await.unwrap_err();
    let TransportError::DroppedReply { reason, .. } = &error else {
        panic!("a dropped reply, got {error:?}")
    };
    assert!(
        matches!(**reason, TransportError::TooLarge { size, limit: 65_536 } if size == 4 << 20),
        "the decoded size is what counts: {error}"
    );
    sender.close().await.unwrap();
}

#[tokio::test]
async fn a_folded_response_header_is_read() {
    let server = TestServer::start(script(|r| {
        (r.rpc_method().as_deref() == Some("folded")).then(|| {
            let body = json!({"jsonrpc": "2.0", "id": r.rpc_id(), "result": {"folded": true}}).to_string();
            Reply::Raw(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-note: first\r\n  second\r\ncontent-length: \
                     {}\r\n\r\n{body}",
                    body.len()
                )
                .into_bytes(),
            )
        })
    }))
    .await;
    let (sender, mut receiver, _info) = transport(&server.url, |c| c);
    handshake(&sender, &mut receiver).await;
    let response = exchange(&sender, &mut receiver, request(1, "folded")).await;
    assert_eq!(result_of(&response), json!({"folded": true}));
    sender.close().await.unwrap();
}

#[tokio::test]
async fn https_goes_through_a_connect_tunnel_with_the_proxys_credentials() {
    let (_dir, certificates) = certificates();
    let proxy_log = EventLog::new("connect-proxy");
    let proxy = ProxyServer::from_args(&["--require-auth=me:secret", &proxy_log.arg()])
        .await
        .unwrap();
    let server_log = EventLog::new("connect-origin");
    let mut args = vec!["--json-response".to_owned(), server_log.arg()];
    args.extend(certificates.server_args());
    let server = serve(&args).await;
    let proxy_url = proxy.url().replace("http://", "http://me:secret@");
    session(server.url(), |c| {
        c.ca(Some(certificates.ca.clone()))
            .proxy(ProxyChoice::Url(proxy_url.clone()))
    })
    .await;
    let authority = server
        .url()
        .trim_start_matches("https://")
        .trim_end_matches("/mcp")
        .to_owned();
    let tunnels = proxy_log.matching(&json!({"event": "proxy", "method": "CONNECT", "target": authority}));
    assert!(!tunnels.is_empty(), "the proxy tunnelled to the server");
    assert!(tunnels.iter().all(|t| t["authorized"] == true), "{tunnels:?}");
    // The credentials went to the proxy only: the server never saw them (through the tunnel,
    // the proxy sees no header).
    let requests = server_log.matching(&json!({"event": "http"}));
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|r| r["headers"].get("proxy-authorization").is_none())
    );

    // Wrong credentials: the tunnel is refused, and the error says by whom.
    let (sender, _receiver, _info) = transport(server.url(), |c| {
        c.ca(Some(certificates.ca.clone()))
            .proxy(ProxyChoice::Url(proxy.url().to_owned()))
    });
    let error = guard(sender.send(common::mcp::initialize(0))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: could not connect: the proxy {} refused the tunnel to {authority}: HTTP 407 Proxy Authentication \
             Required",
            server.url(),
            proxy.url()
        )
    );
    server.shutdown().await;
}

#[tokio::test]
async fn plain_http_is_forwarded_in_absolute_form_and_none_means_none() {
    let proxy_log = EventLog::new("forward-proxy");
    let proxy = ProxyServer::from_args(&["--require-auth=me:secret", &proxy_log.arg()])
        .await
        .unwrap();
    let server = serve(&["--json-response".to_owned()]).await;
    let proxy_url = proxy.url().replace("http://", "http://me:secret@");
    session(server.url(), |c| c.proxy(ProxyChoice::Url(proxy_url.clone()))).await;
    let forwarded = proxy_log.matching(&json!({"event": "proxy", "method": "POST", "target": server.url()}));
    assert!(!forwarded.is_empty(), "the proxy forwarded the POSTs");
    assert!(forwarded.iter().all(|f| f["authorized"] == true));
    // Without the credentials, the proxy's refusal is said to be the proxy's.
    let (sender, _receiver, _info) = transport(server.url(), |c| c.proxy(ProxyChoice::Url(proxy.url().to_owned())));
    let error = guard(sender.send(common::mcp::initialize(0))).await.unwrap_err();
    assert_eq!(
        error_chain(&error),
        format!(
            "POST {}: could not connect: the proxy {} refused the request: HTTP 407 Proxy Authentication Required",
            server.url(),
            proxy.url()
        )
    );
    let seen = proxy_log.matching(&json!({"event": "proxy"})).len();
    session(server.url(), |c| c.proxy(ProxyChoice::Disabled)).await;
    assert_eq!(
        proxy_log.matching(&json!({"event": "proxy"})).len(),
        seen,
        "no proxy: none used"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_environments_proxy_is_used_unless_no_proxy_names_the_host() {
    let log = EventLog::new("environment-proxy");
    let proxy = ProxyServer::from_args(&[&log.arg()]).await.unwrap();
    let server = serve(&["--json-response".to_owned()]).await;
    let through_proxy = || log.matching(&json!({"event": "proxy", "target": server.url()})).len();
    // A child process, whose environment is its own: HTTP_PROXY names the proxy.
    run_session_in_child(server.url(), &[("HTTP_PROXY", proxy.url())]).await;
    let seen = through_proxy();
    assert!(seen > 0, "HTTP_PROXY is honoured");
    run_session_in_child(server.url(), &[("HTTP_PROXY", proxy.url()), ("NO_PROXY", "127.0.0.1")]).await;
    assert_eq!(through_proxy(), seen, "NO_PROXY=127.0.0.1 bypasses the proxy");
    server.shutdown().await;
}

/// Runs `environment_session` against `url` in a child process with only these proxy variables.
async fn run_session_in_child(url: &str, env: &[(&str, &str)]) {
    let mut set = vec![("PLEXUS_TEST_URL".to_owned(), url.to_owned())];
    set.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    tokio::task::spawn_blocking(move || {
        let set: Vec<(&str, &str)> = set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        run_ignored_test("environment_session", &set, &PROXY_VARIABLES);
    })
    .await
    .unwrap();
}

/// A session with the environment as it is (run in a child process).
#[tokio::test]
#[ignore = "run by the_environments_proxy_is_used_unless_no_proxy_names_the_host"]
async fn environment_session() {
    let url = std::env::var("PLEXUS_TEST_URL").unwrap();
    session(&url, |c| c).await;
}
