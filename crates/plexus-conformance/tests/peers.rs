//! plexus against third-party MCP servers, through the facade (`plexus::connect`), on every
//! transport each peer speaks: the reference "everything" server (npm) and the official Python SDK
//! (mcp 2.x for stdio, SSE and Streamable HTTP; mcp 1.x for WebSocket).
//!
//! `cargo xtask peers` installs the pinned peers under `target/peers/` and runs these tests with
//! `PLEXUS_PEERS_DIR` set. Without it each test prints why it skips and passes, so that the plain
//! workspace test run needs no network. With it, a peer that cannot be started or reached, or a
//! transport the facade does not connect yet, fails its test with the reason.
//!
//! Remote peers run as child processes of the test on a free port of 127.0.0.1, with their output
//! in a temporary log (shown when the test fails), and are ended when the test ends. They stay in
//! the test's process group, so that `cargo xtask peers`, which runs the tests in a group of their
//! own, ends any that a killed test left behind.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use plexus::client::{RequestOptions, progress_channel};
use plexus::protocol::{CallToolResult, ContentBlock, ResourceContents, Role};
use serde_json::{Value, json};
use support::{Peer, Transport, connect_peer};

/// The peer × transport pairs these tests cover: each line is one test. A pair whose transport
/// the facade does not connect yet fails at connect with `ConnectError::Unsupported`.
macro_rules! peer_tests {
    ($($test:ident: $peer:expr, $transport:expr;)*) => {
        /// Every covered pair, in the order of the tests.
        const COVERED: &[(Peer, Transport)] = &[$(($peer, $transport)),*];
        $(
            #[test]
            fn $test() {
                support::run_peer_test($peer, $transport, check_peer);
            }
        )*
    };
}

peer_tests! {
    everything_stdio: Peer::Everything, Transport::Stdio;
    everything_streamable_http: Peer::Everything, Transport::Http;
    everything_legacy_sse: Peer::Everything, Transport::Sse;
    everything_http_entry_falls_back_to_sse: Peer::Everything, Transport::HttpFallbackToSse;
    python_sdk_stdio: Peer::PythonSdk, Transport::Stdio;
    python_sdk_streamable_http: Peer::PythonSdk, Transport::Http;
    python_sdk_legacy_sse: Peer::PythonSdk, Transport::Sse;
    python_sdk_http_entry_falls_back_to_sse: Peer::PythonSdk, Transport::HttpFallbackToSse;
    python_sdk_websocket: Peer::PythonSdkWs, Transport::Ws;
}

/// Every transport of every peer has its test above.
#[test]
fn every_transport_of_every_peer_is_covered() {
    let wanted: Vec<(Peer, Transport)> = Peer::ALL
        .iter()
        .flat_map(|peer| peer.transports().iter().map(move |transport| (*peer, *transport)))
        .collect();
    assert_eq!(COVERED, wanted.as_slice());
}

/// Starts the peer, connects through the facade, runs the peer's checks and closes.
async fn check_peer(peer: Peer, transport: Transport, peers: support::Peers) {
    let (client, _server) = connect_peer(&peers, peer, transport).await;
    match peer {
        Peer::Everything => check_everything(&client).await,
        Peer::PythonSdk => check_python(&client, "plexus-peer-python").await,
        Peer::PythonSdkWs => check_python(&client, "plexus-peer-python-ws").await,
    }
    client.close().await.expect("closing the session");
}

/// The tools of the everything server these tests call (it has more).
const EVERYTHING_TOOLS: &[&str] = &[
    "echo",
    "get-sum",
    "get-tiny-image",
    "get-structured-content",
    "get-resource-links",
    "get-annotated-message",
    "trigger-long-running-operation",
];

/// The start of the base64 of a PNG file (its 8-byte signature and the IHDR chunk length).
const PNG_BASE64_PREFIX: &str = "iVBORw0KGgoAAAANSUhEUg";
/// base64("Resource 1: This is a base64 blob"): the fixed start of blob resource 1.
const BLOB_1_BASE64_PREFIX: &str = "UmVzb3VyY2UgMTogVGhpcyBpcyBhIGJhc2U2NCBibG9i";

async fn check_everything(client: &plexus::Client) {
    assert_eq!(client.server().server_info.name, "mcp-servers/everything");

    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    for wanted in EVERYTHING_TOOLS {
        assert!(
            names.contains(wanted),
            "tool {wanted} is not listed; the tools are {names:?}"
        );
    }

    let echo = call(client, "echo", json!({"message": "hello from plexus"})).await;
    assert_eq!(texts(&echo), ["Echo: hello from plexus"]);

    let sum = call(client, "get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(texts(&sum), ["The sum of 2 and 3 is 5."]);

    let image = call(client, "get-tiny-image", json!({})).await;
    assert_eq!(image.content.len(), 3, "{image:?}");
    assert_eq!(image.content[0].as_text(), Some("Here's the image you requested:"));
    let ContentBlock::Image(png) = &image.content[1] else {
        panic!("the second block is not an image: {:?}", image.content[1]);
    };
    assert_eq!(png.mime_type, "image/png");
    assert!(
        png.data.starts_with(PNG_BASE64_PREFIX),
        "not a PNG: {}",
        &png.data[..40.min(png.data.len())]
    );
    assert_eq!(image.content[2].as_text(), Some("The image above is the MCP logo."));

    let weather = call(client, "get-structured-content", json!({"location": "Chicago"})).await;
    let expected = json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82});
    assert_eq!(weather.structured_content.as_ref(), Some(&expected));
    let text: Value = serde_json::from_str(texts(&weather)[0]).expect("the text block is JSON");
    assert_eq!(text, expected);

    check_resource_links(client).await;
    check_annotated_message(client).await;
    check_long_running_operation(client).await;
    check_resources(client).await;
    check_prompts(client).await;
}

async fn check_resource_links(client: &plexus::Client) {
    let links = call(client, "get-resource-links", json!({"count": 2})).await;
    assert_eq!(links.content.len(), 3, "{links:?}");
    assert_eq!(
        links.content[0].as_text(),
        Some("Here are 2 resource links to resources available in this server:")
    );
    let linked: Vec<(&str, &str, Option<&str>)> = links.content[1..]
        .iter()
        .map(|block| match block {
            ContentBlock::ResourceLink(link) => (link.name.as_str(), link.uri.as_str(), link.mime_type.as_deref()),
            other => panic!("not a resource link: {other:?}"),
        })
        .collect();
    assert_eq!(
        linked,
        [
            ("Blob Resource 1", "demo://resource/dynamic/blob/1", Some("text/plain")),
            ("Text Resource 2", "demo://resource/dynamic/text/2", Some("text/plain")),
        ]
    );
    // The links lead to readable resources.
    let text = client.read_resource(linked[1].1).await.expect("reading the text link");
    match text.contents.as_slice() {
        [ResourceContents::Text(contents)] => {
            assert_eq!(contents.uri, "demo://resource/dynamic/text/2");
            assert!(
                contents
                    .text
                    .starts_with("Resource 2: This is a plaintext resource created at "),
                "{}",
                contents.text
            );
        }
        other => panic!("expected one text part: {other:?}"),
    }
    let blob = client.read_resource(linked[0].1).await.expect("reading the blob link");
    match blob.contents.as_slice() {
        [ResourceContents::Blob(contents)] => {
            assert_eq!(contents.uri, "demo://resource/dynamic/blob/1");
            assert!(contents.blob.starts_with(BLOB_1_BASE64_PREFIX), "{}", contents.blob);
        }
        other => panic!("expected one blob part: {other:?}"),
    }
}

async fn check_annotated_message(client: &plexus::Client) {
    let message = call(
        client,
        "get-annotated-message",
        json!({"messageType": "error", "includeImage": true}),
    )
    .await;
    assert_eq!(message.content.len(), 2, "{message:?}");
    let ContentBlock::Text(error) = &message.content[0] else {
        panic!("the first block is not text: {:?}", message.content[0]);
    };
    assert_eq!(error.text, "Error: Operation failed");
    let annotations = error.annotations.as_ref().expect("the error text is annotated");
    assert_eq!(annotations.priority, Some(1.0));
    assert_eq!(
        annotations.audience.as_deref(),
        Some(&[Role::User, Role::Assistant][..])
    );
    let ContentBlock::Image(image) = &message.content[1] else {
        panic!("the second block is not an image: {:?}", message.content[1]);
    };
    let annotations = image.annotations.as_ref().expect("the image is annotated");
    assert_eq!(annotations.priority, Some(0.5));
    assert_eq!(annotations.audience.as_deref(), Some(&[Role::User][..]));
}

/// The progress notifications arrive, in order, before the result.
async fn check_long_running_operation(client: &plexus::Client) {
    let (callback, mut reports) = progress_channel(16);
    let options = RequestOptions::with_timeout(Duration::from_secs(60)).progress(callback);
    let arguments = json!({"duration": 1, "steps": 2});
    let result = client
        .call_tool_with(
            "trigger-long-running-operation",
            arguments.as_object().cloned(),
            options,
        )
        .await
        .expect("tools/call trigger-long-running-operation");
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(
        texts(&result),
        ["Long running operation completed. Duration: 1 seconds, Steps: 2."]
    );
    let mut progress = Vec::new();
    while let Ok(report) = reports.try_recv() {
        progress.push((report.progress, report.total));
    }
    assert_eq!(progress, [(1.0, Some(2.0)), (2.0, Some(2.0))]);
}

async fn check_resources(client: &plexus::Client) {
    let resources = client.list_resources().await.expect("resources/list");
    let documents: Vec<&plexus::protocol::Resource> = resources
        .iter()
        .filter(|resource| resource.uri.starts_with("demo://resource/static/document/"))
        .collect();
    assert!(!documents.is_empty(), "no static documents among {resources:?}");
    let first = documents[0];
    let read = client.read_resource(&first.uri).await.expect("resources/read");
    match read.contents.as_slice() {
        [ResourceContents::Text(contents)] => {
            assert_eq!(contents.uri, first.uri);
            assert_eq!(contents.mime_type, first.mime_type);
            assert!(!contents.text.is_empty(), "{} is empty", first.uri);
        }
        other => panic!("expected one text part of {}: {other:?}", first.uri),
    }
    let templates = client
        .list_resource_templates()
        .await
        .expect("resources/templates/list");
    let uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert!(
        uris.contains(&"demo://resource/dynamic/text/{resourceId}"),
        "templates: {uris:?}"
    );
}

async fn check_prompts(client: &plexus::Client) {
    let prompts = client.list_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|prompt| prompt.name.as_str()).collect();
    assert!(
        names.contains(&"simple-prompt") && names.contains(&"args-prompt"),
        "{names:?}"
    );

    let simple = client
        .get_prompt("simple-prompt", None)
        .await
        .expect("prompts/get simple-prompt");
    let messages: Vec<(Role, Option<&str>)> = simple.messages.iter().map(|m| (m.role, m.content.as_text())).collect();
    assert_eq!(
        messages,
        [(Role::User, Some("This is a simple prompt without arguments."))]
    );

    let arguments = BTreeMap::from([
        ("city".to_owned(), "Paris".to_owned()),
        ("state".to_owned(), "Texas".to_owned()),
    ]);
    let with_args = client
        .get_prompt("args-prompt", Some(arguments))
        .await
        .expect("prompts/get args-prompt");
    let messages: Vec<(Role, Option<&str>)> = with_args
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_text()))
        .collect();
    assert_eq!(messages, [(Role::User, Some("What's weather in Paris, Texas?"))]);
}

async fn check_python(client: &plexus::Client, server_name: &str) {
    assert_eq!(client.server().server_info.name, server_name);
    let tools = client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["add"]);
    let sum = call(client, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(texts(&sum), ["5"]);
    assert_eq!(sum.structured_content, Some(json!({"result": 5})));
}

/// Calls a tool that must succeed.
async fn call(client: &plexus::Client, tool: &str, arguments: Value) -> CallToolResult {
    let result = client
        .call_tool(tool, arguments.as_object().cloned())
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool}: {e}"));
    assert!(!result.is_error(), "{tool} returned an error: {result:?}");
    result
}

/// The text of every block, which must all be text.
fn texts(result: &CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .map(|block| block.as_text().unwrap_or_else(|| panic!("not a text block: {block:?}")))
        .collect()
}
