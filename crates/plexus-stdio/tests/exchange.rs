//! Messages both ways through real child processes: echo, pipelining, bad lines, env and cwd.

mod common;

use std::time::Duration;

use common::{HANG_GUARD, notification, recv, recv_message, sh};
use plexus_jsonrpc::{Message, Request, RequestId};
use plexus_stdio::{StdioConfig, StdioTransport};
use plexus_transport::{ErrorClass, OutboundMessage, Transport, TransportError, TransportSender};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_comes_back_through_cat() {
    let transport = StdioTransport::spawn(StdioConfig::new("cat")).unwrap();
    assert_eq!(transport.describe(), "cat");
    let pgid = transport.pid();
    let (sender, mut receiver) = transport.into_parts();
    let request = Message::Request(Request {
        id: RequestId::String("req-1".into()),
        method: "tools/list".into(),
        params: Some(serde_json::value::to_raw_value(&serde_json::json!({"cursor": "abc"})).unwrap()),
    });
    sender.send(OutboundMessage::from_message(&request)).await.unwrap();
    let Message::Request(echoed) = recv_message(&mut receiver).await else {
        panic!("a request comes back")
    };
    assert_eq!(echoed.id, RequestId::String("req-1".into()));
    assert_eq!(echoed.method, "tools/list");
    assert_eq!(echoed.params.unwrap().get(), r#"{"cursor":"abc"}"#);
    assert!(!sender.is_closed());
    sender.close().await.unwrap();
    assert!(sender.is_closed());
    common::assert_group_gone(pgid);
    // cat exits on stdin EOF: the receiver ends with the client's reason.
    let closed = recv(&mut receiver).await.unwrap_err();
    assert!(
        matches!(&closed, TransportError::Closed { reason, .. } if reason.to_string() == "the transport was closed by the client"),
        "{closed:?}"
    );
    let send_after_close = sender.send(notification("late")).await.unwrap_err();
    assert_eq!(
        send_after_close.to_string(),
        "the connection is closed: the transport was closed by the client"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_sends_all_arrive_in_order() {
    const COUNT: usize = 5_000;
    // A small queue makes the senders wait for the writer, which must drain it in batches.
    let transport = StdioTransport::spawn(StdioConfig::new("cat").send_queue_capacity(16)).unwrap();
    let (sender, mut receiver) = Box::new(transport).split();
    let reader = tokio::spawn(async move {
        let mut methods = Vec::with_capacity(COUNT);
        while methods.len() < COUNT {
            let message = receiver.recv().await.unwrap();
            methods.push(message.method().unwrap().to_owned());
        }
        (methods, receiver)
    });
    for i in 0..COUNT {
        sender.send(notification(&format!("n/{i}"))).await.unwrap();
    }
    let (methods, _receiver) = tokio::time::timeout(HANG_GUARD, reader).await.unwrap().unwrap();
    let expected: Vec<String> = (0..COUNT).map(|i| format!("n/{i}")).collect();
    assert_eq!(methods, expected);
    sender.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_line_is_reported_and_the_next_line_still_arrives() {
    let script = r#"printf '[1,2]\nnot json\n{"jsonrpc":"2.0","method":"after"}\n'; exec cat"#;
    let (sender, mut receiver) = StdioTransport::spawn(sh(script, &[])).unwrap().into_parts();
    let batch = recv(&mut receiver).await.unwrap_err();
    assert!(!batch.is_terminal());
    assert_eq!(
        plexus_transport::error_chain(&batch),
        "the server sent an invalid message: the message is a JSON array (a JSON-RPC batch); MCP does not allow batching"
    );
    let not_json = recv(&mut receiver).await.unwrap_err();
    assert_eq!(not_json.class(), ErrorClass::Protocol);
    assert!(
        plexus_transport::error_chain(&not_json)
            .starts_with("the server sent an invalid message: the message is not valid JSON: "),
        "{not_json}"
    );
    assert_eq!(recv_message(&mut receiver).await.method(), Some("after"));
    // And the transport still works both ways.
    sender.send(notification("still-alive")).await.unwrap();
    assert_eq!(recv_message(&mut receiver).await.method(), Some("still-alive"));
    sender.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_line_is_discarded_and_reported_once() {
    let script = r#"head -c 100000 /dev/zero | tr '\0' x; echo; echo '{"jsonrpc":"2.0","method":"small"}'; exec cat"#;
    let config = sh(script, &[]).max_message_size(1024);
    let (sender, mut receiver) = StdioTransport::spawn(config).unwrap().into_parts();
    let too_large = recv(&mut receiver).await.unwrap_err();
    assert!(
        matches!(
            too_large,
            TransportError::TooLarge {
                size: 100_000,
                limit: 1024
            }
        ),
        "{too_large:?}"
    );
    assert!(!too_large.is_terminal());
    assert_eq!(recv_message(&mut receiver).await.method(), Some("small"));
    sender.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_and_cwd_reach_the_child_on_top_of_the_host_environment() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"printf '{"jsonrpc":"2.0","method":"env","params":{"var":"%s","cwd":"%s","path":"%s"}}\n' "$PLEXUS_STDIO_TEST_VAR" "$(pwd -P)" "$PATH"; exec cat"#;
    let config = sh(script, &[])
        .env("PLEXUS_STDIO_TEST_VAR", "hello from the host")
        .cwd(dir.path());
    let (sender, mut receiver) = StdioTransport::spawn(config).unwrap().into_parts();
    let Message::Notification(report) = recv_message(&mut receiver).await else {
        panic!("a notification")
    };
    let params: serde_json::Value = serde_json::from_str(report.params.unwrap().get()).unwrap();
    assert_eq!(params["var"], "hello from the host");
    assert_eq!(params["cwd"], dir.path().canonicalize().unwrap().to_str().unwrap());
    assert_eq!(
        params["path"],
        std::env::var("PATH").unwrap(),
        "the host's environment is inherited"
    );
    sender.close().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn the_transport_works_on_a_current_thread_runtime() {
    let (sender, mut receiver) = StdioTransport::spawn(StdioConfig::new("cat")).unwrap().into_parts();
    for i in 0..100 {
        sender.send(notification(&format!("m{i}"))).await.unwrap();
    }
    for i in 0..100 {
        assert_eq!(
            recv_message(&mut receiver).await.method(),
            Some(format!("m{i}").as_str())
        );
    }
    tokio::time::timeout(Duration::from_secs(10), sender.close())
        .await
        .unwrap()
        .unwrap();
}
