//! Where `plexus serve --http` sends a backend's request to a client (issue 25, point 2): two
//! clients of one gateway, over real sockets on 127.0.0.1, whose backend is the demo server over
//! stdio or the test server over Streamable HTTP. An elicitation reaches only the client whose
//! call caused it. Over HTTP the backend says which call that is (it asks on the call's response
//! stream); over stdio, when the gateway cannot tell (two clients have calls running on the
//! backend), the backend gets an error that says so, and no client is asked. A backend of the
//! stateless era asks in its call's `input_required` result, over stdio too.

mod support;

use std::sync::Arc;
use std::time::Duration;

use plexus::config::ServerConfig;
use plexus::protocol::CallToolResult;
use plexus::{Client, ClientOptions, DefaultConnector};
use serde_json::{Map, Value, json};
use support::gateway::{Answerer, HttpGateway, serve_http};
use support::remote::Remote;
use support::{Workspace, demo};

/// The question the backend asks on behalf of client A's call.
const QUESTION: &str = "PRIVATE question for A";

/// A workspace whose backends are two demo servers, `demo` and `other`, run with `demo_args`,
/// and its gateway on a free port of 127.0.0.1 with the gateway's URL.
fn gateway(demo_args: &[&str]) -> (Workspace, HttpGateway, String) {
    let ws = Workspace::new();
    ws.write_servers(
        ws.user_file(),
        &json!({"demo": demo(demo_args), "other": demo(demo_args)}),
    );
    let (gateway, address) = serve_http(&ws, "127.0.0.1", &[], &[]);
    (ws, gateway, format!("http://{address}/mcp"))
}

/// A client of the `initialize` era (whose requests the gateway routes by the calls in flight;
/// a stateless client's questions come in its own calls' results: see `serve_eras.rs`) of the
/// gateway at `url`, whose requests from the gateway `handler` answers.
async fn connect(url: &str, handler: Arc<Answerer>) -> Client {
    let config = ServerConfig::from_json(&json!({"type": "http", "url": url})).unwrap().0;
    let mut options = ClientOptions::new("routing").handler(handler);
    options.era = plexus::client::EraChoice::Initialize;
    options.request_timeout = Duration::from_secs(60);
    options.tool_timeout = Duration::from_secs(60);
    DefaultConnector::new()
        .connect("gateway", &config, options)
        .await
        .unwrap()
}

/// Calls `tool` with `arguments` (an object) and returns its result.
async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let arguments: Option<Map<String, Value>> = arguments.as_object().cloned();
    client
        .call_tool(tool, arguments)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The text of a result's first content block.
fn text(result: &CallToolResult) -> &str {
    result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("no text in {result:?}"))
}

/// Lets a call started just before reach the backend.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_reaches_only_the_client_whose_calls_run_on_its_backend() {
    // Backends of the `initialize` era, whose requests come apart from the calls.
    let (_ws, child, url) = gateway(&["--era", "legacy"]);
    let (ada, bob) = (Answerer::new("Ada"), Answerer::new("Bob"));
    let a = connect(&url, Arc::clone(&ada)).await;
    let b = connect(&url, Arc::clone(&bob)).await;
    // A has two calls running on `demo` (one client, so no doubt); B, the newer client, has a
    // call running on the other backend only.
    let question = call(&a, "mcp__demo__elicit", json!({"message": QUESTION, "ms": 1500}));
    let own_slow = async {
        settle().await;
        call(&a, "mcp__demo__slow", json!({"ms": 3000, "steps": 0})).await
    };
    let other_slow = async {
        settle().await;
        call(&b, "mcp__other__slow", json!({"ms": 3000, "steps": 0})).await
    };
    let (answered, own_slow, other_slow) = tokio::join!(question, own_slow, other_slow);
    assert!(answered.is_error != Some(true), "{answered:?}");
    assert!(text(&answered).contains(r#""name":"Ada""#), "{answered:?}");
    assert_eq!(text(&own_slow), "slow: done after 3000 ms");
    assert_eq!(text(&other_slow), "slow: done after 3000 ms");
    assert_eq!(ada.asked(), [QUESTION]);
    assert!(bob.asked().is_empty(), "B was asked {:?}", bob.asked());
    a.close().await.unwrap();
    b.close().await.unwrap();
    drop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_the_gateway_cannot_place_is_refused_to_the_backend_not_guessed() {
    let (_ws, child, url) = gateway(&["--era", "legacy"]);
    let (ada, bob) = (Answerer::new("Ada"), Answerer::new("Bob"));
    let a = connect(&url, Arc::clone(&ada)).await;
    let b = connect(&url, Arc::clone(&bob)).await;
    // When the backend asks, A's and B's calls both run on it: the stdio backend cannot say which
    // call its request belongs to, so neither client may be asked.
    let question = call(&a, "mcp__demo__elicit", json!({"message": QUESTION, "ms": 1500}));
    let slow = async {
        settle().await;
        call(&b, "mcp__demo__slow", json!({"ms": 3000, "steps": 0})).await
    };
    let (refused, slow) = tokio::join!(question, slow);
    // The backend's tool reports the gateway's error, exactly as the backend got it.
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(
        text(&refused),
        "the client answered elicitation/create with an error: \
         elicitation/create refused: 2 clients of the gateway have calls running on server \"demo\"; \
         the gateway cannot tell which of its clients this request is for (internal error, code -32603)"
    );
    assert_eq!(text(&slow), "slow: done after 3000 ms");
    assert!(ada.asked().is_empty(), "A was asked {:?}", ada.asked());
    assert!(bob.asked().is_empty(), "B was asked {:?}", bob.asked());
    a.close().await.unwrap();
    b.close().await.unwrap();
    drop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_stateless_era_a_backends_question_belongs_to_its_call_over_stdio_too() {
    // The same two calls as above, to backends of the stateless era: the question comes in the
    // `input_required` result of A's call, so the gateway knows it is A's.
    let (_ws, child, url) = gateway(&[]);
    let (ada, bob) = (Answerer::new("Ada"), Answerer::new("Bob"));
    let a = connect(&url, Arc::clone(&ada)).await;
    let b = connect(&url, Arc::clone(&bob)).await;
    let question = call(&a, "mcp__demo__elicit", json!({"message": QUESTION}));
    let slow = call(&b, "mcp__demo__slow", json!({"ms": 1000, "steps": 0}));
    let (answered, slow) = tokio::join!(question, slow);
    assert!(answered.is_error != Some(true), "{answered:?}");
    assert!(text(&answered).contains(r#""name":"Ada""#), "{answered:?}");
    assert_eq!(text(&slow), "slow: done after 1000 ms");
    assert_eq!(ada.asked(), [QUESTION]);
    assert!(bob.asked().is_empty(), "B was asked {:?}", bob.asked());
    a.close().await.unwrap();
    b.close().await.unwrap();
    drop(child);
}

#[test]
fn over_http_an_elicitation_reaches_the_client_whose_call_caused_it_though_others_call_too() {
    // The backend speaks Streamable HTTP in the `initialize` era: it asks on the response
    // stream of the call it asks for, so the gateway knows whose question it is even while B's
    // calls run there too.
    let backend = Remote::http(&["--era", "legacy"]);
    let ws = Workspace::new();
    ws.write_servers(
        ws.user_file(),
        &json!({"remote": {"type": "http", "url": backend.url()}}),
    );
    let (child, address) = serve_http(&ws, "127.0.0.1", &[], &[]);
    let url = format!("http://{address}/mcp");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (ada, bob) = (Answerer::new("Ada"), Answerer::new("Bob"));
        let a = connect(&url, Arc::clone(&ada)).await;
        let b = connect(&url, Arc::clone(&bob)).await;
        // B's calls run on the same backend before, while and after the backend asks A.
        let question = call(&a, "mcp__remote__elicit", json!({"message": QUESTION, "ms": 1500}));
        let slow = async {
            settle().await;
            call(&b, "mcp__remote__slow", json!({"ms": 3000, "steps": 0})).await
        };
        let (answered, slow) = tokio::join!(question, slow);
        assert!(answered.is_error != Some(true), "{answered:?}");
        assert!(text(&answered).contains(r#""name":"Ada""#), "{answered:?}");
        assert_eq!(text(&slow), "slow: done after 3000 ms");
        assert_eq!(ada.asked(), [QUESTION]);
        assert!(bob.asked().is_empty(), "B was asked {:?}", bob.asked());
        // And the other way round: B's question goes to B while A's call runs there.
        let question = call(&b, "mcp__remote__elicit", json!({"message": "for B", "ms": 1500}));
        let slow = async {
            settle().await;
            call(&a, "mcp__remote__slow", json!({"ms": 3000, "steps": 0})).await
        };
        let (answered, _) = tokio::join!(question, slow);
        assert!(text(&answered).contains(r#""name":"Bob""#), "{answered:?}");
        assert_eq!(bob.asked(), ["for B"]);
        assert_eq!(ada.asked(), [QUESTION]);
        a.close().await.unwrap();
        b.close().await.unwrap();
    });
    drop(child);
}
