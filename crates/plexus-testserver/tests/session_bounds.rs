//! The session's bounds on what a server may ask of it: its requests in flight, their ids, and the
//! size of a list. The peer is a real child process over pipes: a shell script that plays a server
//! which sends exactly the messages a case needs and records what the client answers.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use plexus_client::{Client, ClientError, ClientHandler, ClientOptions, ServerRequestContext};
use plexus_jsonrpc::ErrorObject;
use plexus_protocol::{ClientCapabilities, ListRootsResult, RootsCapability};
use plexus_stdio::StdioConfig;
use serde_json::{Value, json};
use support::{connect_with, temp_dir};

/// Answers `roots/list` after a pause, so that the server's requests stay in flight for a while.
struct SlowRoots(Duration);

#[plexus_client::async_trait]
impl ClientHandler for SlowRoots {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn list_roots(&self, _context: ServerRequestContext) -> Result<ListRootsResult, ErrorObject> {
        let pause = self.0;
        tokio::time::sleep(pause).await;
        Ok(serde_json::from_value(json!({"roots": []})).unwrap())
    }
}

/// A shell-script server: answers `initialize`, runs `body` (which sends requests to the client),
/// writes the client's next `answers` lines to `record`, then stays until stdin closes.
fn script_server(body: &str, answers: usize, record: &Path) -> StdioConfig {
    let script = format!(
        r#"read -r initialize
printf '%s\n' '{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"script","version":"1"}}}}}}'
read -r initialized
roots() {{ printf '{{"jsonrpc":"2.0","id":%s,"method":"roots/list"}}\n' "$1"; }}
{body}
head -n {answers} > "$RECORD.part" && mv "$RECORD.part" "$RECORD"
exec cat > /dev/null"#
    );
    StdioConfig::new("sh")
        .name("script")
        .arg("-c")
        .arg(script)
        .env("RECORD", record.to_str().unwrap())
}

/// Waits (bounded) for the recorded answers and returns them, in the order written.
async fn recorded(record: &Path) -> Vec<Value> {
    let start = std::time::Instant::now();
    while !record.exists() {
        assert!(start.elapsed() < support::HANG_GUARD, "the script recorded no answers");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::fs::read_to_string(record)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The error code of an answer, or `None` for a result.
fn code(answer: &Value) -> Option<i64> {
    answer.get("error").map(|error| error["code"].as_i64().unwrap())
}

async fn connect(config: StdioConfig, pause: Duration) -> Client {
    let options = support::handshake_options("script").handler(Arc::new(SlowRoots(pause)));
    connect_with(config, options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_request_id_is_refused_and_never_leaks_a_slot() {
    let dir = temp_dir();
    let record = dir.path().join("answers");
    // One request with id 7, five more with the same id while it is in flight; then, once it is
    // done, as many distinct requests as the client handles at once.
    let body = r"roots 7; roots 7; roots 7; roots 7; roots 7; roots 7
sleep 1
i=100; while [ $i -lt 164 ]; do roots $i; i=$((i+1)); done";
    let client = connect(script_server(body, 6 + 64, &record), Duration::from_millis(300)).await;
    let answers = recorded(&record).await;
    let (first, rest) = answers.split_at(6);
    // The five duplicates are refused at once, before the first is answered.
    for answer in &first[..5] {
        assert_eq!(
            (answer["id"].clone(), code(answer)),
            (json!(7), Some(-32600)),
            "{answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("already in use by a request the client is handling"),
            "{answer}"
        );
    }
    assert_eq!((first[5]["id"].clone(), code(&first[5])), (json!(7), None));
    // Every one of the next 64 gets its answer: no slot was lost to the duplicates.
    let mut ids: Vec<i64> = rest.iter().map(|answer| answer["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (100..164).collect::<Vec<_>>());
    assert!(rest.iter().all(|answer| code(answer).is_none()), "{rest:?}");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_concurrency_bound_are_refused_and_the_rest_answered() {
    let dir = temp_dir();
    let record = dir.path().join("answers");
    let body = r"i=0; while [ $i -lt 70 ]; do roots $i; i=$((i+1)); done";
    let client = connect(script_server(body, 70, &record), Duration::from_millis(500)).await;
    let answers = recorded(&record).await;
    let refused: Vec<&Value> = answers.iter().filter(|answer| code(answer).is_some()).collect();
    assert_eq!(refused.len(), 6, "{answers:?}");
    for answer in &refused {
        assert_eq!(code(answer), Some(-32603));
        assert_eq!(
            answer["error"]["message"],
            "the client is already handling 64 requests of this server"
        );
    }
    assert_eq!(answers.iter().filter(|answer| code(answer).is_none()).count(), 64);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_larger_than_its_bound_is_an_error_not_a_memory_hog() {
    let options = ClientOptions {
        max_list_bytes: 2000,
        ..support::handshake_options("testserver")
    };
    let client = connect_with(support::config(&["--page-size", "3"]), options)
        .await
        .unwrap();
    let error = client.list_tools().await.unwrap_err();
    assert!(matches!(error, ClientError::Pagination { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "tools/list: the server's list does not end or is too long (its pages add up to more than 2000 bytes)"
    );
    // One page is well within it.
    assert_eq!(client.list_tools_page(None).await.unwrap().tools.len(), 3);
    client.close().await.unwrap();
}
