//! The Hub against the test server on 127.0.0.1: one environment for everything below it, the
//! host's built-ins winning over MCP tools, calls by qualified name, the host's handlers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use plexus::config::{DiscoveryOptions, Environment};
use plexus::transport::error_chain;
use plexus::{Hub, HubError, HubOptions};
use plexus_testserver::RemoteServer;
use serde_json::{Map, json};

/// A Hub over one explicit config file naming `url`, whose environment is `vars` only.
async fn hub(dir: &tempfile::TempDir, url: &str, vars: &[(&str, &str)], builtins: &[&str]) -> Hub {
    hub_with(dir, url, vars, |options| options.builtins(builtins.iter().copied())).await
}

/// [`hub`] with options of the test's own.
async fn hub_with(
    dir: &tempfile::TempDir,
    url: &str,
    vars: &[(&str, &str)],
    options: impl FnOnce(HubOptions) -> HubOptions,
) -> Hub {
    let config = dir.path().join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"demo": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
        .with_explicit_files(vec![config], true)
        .with_managed_file(None)
        .with_env(Environment::from_fn(move |name| vars.get(name).cloned()));
    let hub = Hub::start(options(HubOptions::new(discovery))).await.unwrap();
    hub.wait_ready(Duration::from_secs(30)).await.unwrap();
    hub
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hubs_environment_sets_the_tool_timeout() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(&dir, server.url(), &[("MCP_TOOL_TIMEOUT", "300")], &[]).await;
    let arguments = json!({"ms": 3000, "steps": 1}).as_object().cloned().unwrap();
    let error = hub.call("mcp__demo__slow", arguments).await.unwrap_err();
    assert!(
        error_chain(&error).ends_with("tools/call timed out after 300 ms"),
        "{error}"
    );
    hub.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_built_in_name_wins_and_the_mcp_tool_is_left_out() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(&dir, server.url(), &[], &["Read", "mcp__demo__echo"]).await;
    let pool = hub.tool_pool().await;
    let names: Vec<&str> = pool.names().take(3).collect();
    assert_eq!(names[..2], ["Read", "mcp__demo__echo"]);
    assert!(pool.entries.iter().all(|entry| entry.name != "mcp__demo__echo"));
    assert_eq!(pool.left_out.len(), 1);
    assert_eq!(pool.left_out[0].tool, "echo");
    // The built-in is the host's to run: the Hub does not know it.
    let error = hub.call("mcp__demo__echo", Map::new()).await.unwrap_err();
    assert!(matches!(error, HubError::UnknownTool { .. }), "{error:?}");
    // Another tool works, and its names stay the same from one pool to the next.
    assert_eq!(
        hub.tool_pool().await.names().collect::<Vec<_>>(),
        pool.names().collect::<Vec<_>>()
    );
    let sum = hub
        .call("mcp__demo__add", json!({"a": 2, "b": 3}).as_object().cloned().unwrap())
        .await
        .unwrap();
    assert_eq!(sum.content[0].as_text(), Some("5"));
    hub.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_named_like_tools_and_resources_by_reference() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(&dir, server.url(), &[], &[]).await;
    let prompts: Vec<String> = hub.prompts().await.entries.into_iter().map(|p| p.name).collect();
    assert_eq!(
        prompts,
        ["mcp__demo__code-review", "mcp__demo__greeting", "mcp__demo__simple"]
    );
    let arguments = std::collections::BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
    let greeting = hub.get_prompt("mcp__demo__greeting", arguments).await.unwrap();
    let text = serde_json::to_string(&greeting.messages).unwrap();
    assert!(text.contains("Ada"), "{text}");
    let missing = hub
        .get_prompt("mcp__demo__greeting", std::collections::BTreeMap::new())
        .await
        .unwrap_err();
    let chain = plexus::transport::error_chain(&missing);
    assert!(
        chain.starts_with("a request to server \"demo\" failed: prompts/get failed: "),
        "{chain}"
    );
    assert!(matches!(
        hub.get_prompt("mcp__demo__nope", std::collections::BTreeMap::new())
            .await
            .unwrap_err(),
        HubError::UnknownPrompt { .. }
    ));

    let resources = hub.resources().await;
    assert!(resources.failures.is_empty());
    let hello = resources
        .entries
        .iter()
        .find(|r| r.resource.name == "hello.txt")
        .unwrap();
    assert_eq!(hello.reference, "@demo:test://static/hello.txt");
    let read = hub.read_resource(&hello.reference).await.unwrap();
    let contents = serde_json::to_value(&read.contents).unwrap();
    assert_eq!(contents[0]["text"], "Hello from plexus-testserver!\n");
    let bad = hub.read_resource("demo:test://static/hello.txt").await.unwrap_err();
    assert_eq!(
        bad.to_string(),
        "\"demo:test://static/hello.txt\" is not a resource reference (@server:uri)"
    );
    let templates: Vec<String> = hub
        .resource_templates()
        .await
        .entries
        .into_iter()
        .map(|t| t.template.uri_template)
        .collect();
    assert_eq!(templates, ["test://items/{id}", "test://echo/{text}"]);
    assert!(hub.ping("demo").await.is_ok());
    hub.shutdown().await;
    server.shutdown().await;
}

/// Answers roots with one directory, and accepts every URL elicitation.
struct Host;

#[plexus::client::async_trait]
impl plexus::client::ClientHandler for Host {
    fn capabilities(&self) -> plexus::protocol::ClientCapabilities {
        plexus::protocol::ClientCapabilities {
            roots: Some(plexus::protocol::RootsCapability::default()),
            ..plexus::protocol::ClientCapabilities::default()
        }
    }

    async fn list_roots(
        &self,
        _context: plexus::client::ServerRequestContext,
    ) -> Result<plexus::protocol::ListRootsResult, plexus::jsonrpc::ErrorObject> {
        Ok(plexus::protocol::ListRootsResult {
            roots: vec![plexus::protocol::Root::new("file:///project", None)],
            ..plexus::protocol::ListRootsResult::default()
        })
    }
}

#[async_trait::async_trait]
impl plexus::tools::UrlElicitationHandler for Host {
    async fn open(
        &self,
        _server: &str,
        _elicitation: &plexus::protocol::ElicitRequestUrlParams,
    ) -> plexus::protocol::ElicitAction {
        plexus::protocol::ElicitAction::Accept
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_handlers_answer_the_servers_requests_and_url_elicitations() {
    // A server of the `initialize` era: it asks for roots by request, and for URL elicitations
    // by -32042 (the stateless era asks for both in `input_required` results).
    let server = RemoteServer::from_args("http", &["--era", "legacy"]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hub = hub_with(&dir, server.url(), &[], |options| {
        options.handler(Arc::new(Host)).url_elicitation(Arc::new(Host))
    })
    .await;
    let roots = hub.call("mcp__demo__roots", Map::new()).await.unwrap();
    assert!(
        roots.content[0].as_text().unwrap().contains("file:///project"),
        "{roots:?}"
    );
    let arguments = json!({"rounds": 2, "notify": false}).as_object().cloned().unwrap();
    let done = hub.call("mcp__demo__url-elicit", arguments).await.unwrap();
    assert_eq!(
        done.content[0].as_text(),
        Some("url-elicit: done after 2 URL elicitations")
    );
    hub.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_pool_follows_a_list_change_and_only_the_chosen_servers_start() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ad_hoc, _) = plexus::config::ServerConfig::from_json(&json!({"type": "http", "url": server.url()})).unwrap();
    let hub = hub_with(&dir, server.url(), &[], |options| {
        options.ad_hoc("mine", ad_hoc).only(["mine"])
    })
    .await;
    assert_eq!(hub.pool().names(), ["mine"], "the configured demo is not started");
    let mut events = hub.subscribe();
    let before = hub.tool_pool().await;
    assert!(!before.names().any(|name| name == "mcp__mine__dynamic-1"));
    hub.call("mcp__mine__trigger-list-changed", Map::new()).await.unwrap();
    // The pool's cache is invalidated by the server's notification; the next tool pool has it.
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
            Ok(Ok(plexus::pool::PoolEvent::ListChanged { .. })) => break,
            Ok(Ok(_)) => {}
            other => panic!("no list change: {other:?}"),
        }
    }
    let (after, failures) = hub.tool_pool_report().await;
    assert!(failures.is_empty());
    assert!(after.names().any(|name| name == "mcp__mine__dynamic-1"));
    assert_eq!(after.entries.len(), before.entries.len() + 1);
    hub.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_servers_notifications_come_through_one_stream_with_their_server() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(&dir, server.url(), &[], &[]).await;
    let mut messages = hub.server_messages();
    // The session started before this reader subscribed; a reconnect starts another.
    hub.pool().reconnect("demo").await.unwrap();
    let started = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let plexus::ServerMessage::SessionStarted { server, .. } = messages.recv().await.unwrap() {
                return server;
            }
        }
    })
    .await
    .expect("the new session was announced");
    assert_eq!(&*started, "demo");
    // The server sends a log message on the call's stream, or on the session's own stream when
    // the call's is gone; that one opens just after the session starts, so a message sent
    // before may be lost on the server's side: ask again until one arrives.
    let arguments = json!({"level": "warning", "message": "from demo"});
    for _ in 0..10 {
        let sent = hub.call("mcp__demo__log", &arguments).await.unwrap();
        assert_eq!(sent.content[0].as_text(), Some("sent notifications/message"));
        let logged = tokio::time::timeout(Duration::from_secs(2), async {
            loop {
                if let plexus::ServerMessage::Notification {
                    server,
                    notification: plexus::client::ServerNotification::LogMessage(params),
                } = messages.recv().await.unwrap()
                {
                    return (server.to_string(), params.data);
                }
            }
        })
        .await;
        if let Ok(logged) = logged {
            assert_eq!(logged, ("demo".to_owned(), json!("from demo")));
            hub.shutdown().await;
            server.shutdown().await;
            return;
        }
    }
    panic!("no log message came through");
}

/// A host's own connector: the default one, counting its connects.
struct Counting {
    inner: plexus::DefaultConnector,
    connects: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl plexus::pool::Connector for Counting {
    async fn connect(
        &self,
        server: &plexus::pool::ServerSpec,
        options: plexus::ClientOptions,
    ) -> Result<plexus::pool::Connection, plexus::pool::ConnectFailure> {
        self.connects.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        plexus::pool::Connector::connect(&self.inner, server, options).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_brings_its_own_connector() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let counting = Arc::new(Counting {
        inner: plexus::DefaultConnector::new(),
        connects: std::sync::atomic::AtomicUsize::new(0),
    });
    let connector = Arc::clone(&counting) as Arc<dyn plexus::pool::Connector>;
    let hub = hub_with(&dir, server.url(), &[], |options| options.connector(connector)).await;
    let echoed = hub
        .call("mcp__demo__echo", json!({"text": "through mine"}))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("through mine"));
    assert_eq!(counting.connects.load(std::sync::atomic::Ordering::SeqCst), 1);
    hub.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_every_call_in_flight_and_the_hub_goes_on() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hub = Arc::new(hub(&dir, server.url(), &[], &[]).await);
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let hub = Arc::clone(&hub);
            tokio::spawn(async move { hub.call("mcp__demo__slow", json!({"ms": 60000, "steps": 0})).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    hub.interrupt("the user pressed Ctrl-C").await;
    for call in calls {
        let error = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("the call ended at once")
            .unwrap()
            .unwrap_err();
        assert!(error_chain(&error).contains("the user pressed Ctrl-C"), "{error}");
    }
    let echoed = hub
        .call("mcp__demo__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("still here"));
    hub.shutdown().await;
    server.shutdown().await;
}

/// The test server on the server's end of an in-memory pipe, logging to `log`.
fn in_process_test_server(log: std::path::PathBuf) -> impl plexus::InProcessServer {
    move |pipe: plexus::in_process::DuplexStream| {
        let mut options = plexus_testserver::StdioOptions::default();
        options.process.event_log = Some(log.clone());
        async move {
            let (input, output) = tokio::io::split(pipe);
            plexus_testserver::serve_io(options, Box::pin(input), Box::pin(output))
                .await
                .unwrap();
        }
    }
}

/// A Hub with no config file: only the servers `options` adds.
async fn bare_hub(dir: &tempfile::TempDir, options: impl FnOnce(HubOptions) -> HubOptions) -> Hub {
    let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
        .with_managed_file(None)
        .with_env(Environment::from_fn(|_| None));
    let hub = Hub::start(options(HubOptions::new(discovery))).await.unwrap();
    hub.wait_ready(Duration::from_secs(30)).await.unwrap();
    hub
}

fn events(log: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

async fn wait_for_event(log: &std::path::Path, wanted: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(event) = events(log).into_iter().find(|event| wanted(event)) {
            return event;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no such event in {:?}",
            events(log)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_server_joins_the_hub_and_a_cancelled_call_tells_it_why() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let hub = bare_hub(&dir, |options| {
        options.in_process("inside", in_process_test_server(log.clone()))
    })
    .await;
    assert!(hub.tool_pool().await.names().any(|name| name == "mcp__inside__echo"));
    let echoed = hub
        .call("mcp__inside__echo", json!({"text": "no process"}))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("no process"));

    let cancel = plexus::CancelHandle::new();
    let hub = Arc::new(hub);
    let call = tokio::spawn({
        let (hub, cancel) = (Arc::clone(&hub), cancel.clone());
        async move {
            let options = plexus::tools::CallOptions::default().cancel_with(cancel);
            hub.call_with("mcp__inside__slow", &json!({"ms": 60000, "steps": 0}), &options)
                .await
        }
    });
    wait_for_event(&log, |e| e["event"] == "request" && e["params"]["name"] == "slow").await;
    assert!(cancel.cancel("the user pressed stop"));
    let error = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the cancel ends the call at once")
        .unwrap()
        .unwrap_err();
    assert!(error.is_cancelled(), "{error:?}");
    assert_eq!((error.server(), error.tool()), (Some("inside"), Some("slow")));
    assert!(!error.is_retryable() && !error.is_timeout(), "{error:?}");
    let told = wait_for_event(&log, |e| e["method"] == "notifications/cancelled").await;
    assert_eq!(told["params"]["reason"], "the user pressed stop");
    // The session goes on.
    let echoed = hub.call("mcp__inside__echo", json!({"text": "still"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("still"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_error_says_what_it_means() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(&dir, server.url(), &[("MCP_TOOL_TIMEOUT", "300")], &[]).await;
    let timeout = hub
        .call("mcp__demo__slow", json!({"ms": 3000, "steps": 1}))
        .await
        .unwrap_err();
    assert!(timeout.is_timeout() && timeout.is_retryable(), "{timeout:?}");
    assert_eq!((timeout.server(), timeout.tool()), (Some("demo"), Some("slow")));
    assert_eq!(timeout.rpc_code(), None);

    let missing = hub.read_resource_of("demo", "test://nothing/here").await.unwrap_err();
    assert_eq!(missing.rpc_code(), Some(plexus::jsonrpc::ErrorCode::RESOURCE_NOT_FOUND));
    assert_eq!(missing.server(), Some("demo"));
    assert!(!missing.is_retryable() && !missing.is_timeout() && !missing.is_cancelled());
    // Its message names the server; the cause is its source, said once.
    assert_eq!(missing.to_string(), "a request to server \"demo\" failed");
    let chain = plexus::transport::error_chain(&missing);
    assert_eq!(chain.matches("test://nothing/here (").count(), 1, "{chain}");

    let unknown = hub.call("mcp__demo__nope", json!({})).await.unwrap_err();
    assert_eq!(unknown.tool(), Some("mcp__demo__nope"));
    assert!(!unknown.is_retryable());
    hub.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_hub_ends_its_stdio_servers_before_the_drop_returns() {
    drop_ends_the_stdio_servers().await;
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_the_hub_on_a_current_thread_runtime_ends_its_stdio_servers_too() {
    drop_ends_the_stdio_servers().await;
}

async fn drop_ends_the_stdio_servers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let binary = plexus_testserver::child_test::testserver_binary();
    let entry = plexus::config::ServerConfig::from_json(&json!({
        "command": binary,
        "args": ["stdio", "--event-log", log],
    }))
    .unwrap()
    .0;
    let hub = bare_hub(&dir, |options| options.ad_hoc("child", entry)).await;
    let start = wait_for_event(&log, |e| e["event"] == "start").await;
    let pid = start["pid"].as_u64().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(hub);
    // No shutdown was awaited: the drop itself ended the server and reaped it.
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} still runs after the Hub was dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_settings_file_stops_the_start_and_an_invalid_entry_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let settings = home.join("settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{\"mcpServers\": {\n  \"a\": nope\n}}").unwrap();
    let discovery = || {
        DiscoveryOptions::new(&home, dir.path())
            .with_managed_file(None)
            .with_env(Environment::from_fn(|_| None))
    };
    let error = Hub::start(HubOptions::new(discovery())).await.unwrap_err();
    assert!(
        matches!(&error, HubError::Config { path, .. } if *path == settings),
        "{error:?}"
    );
    let chain = plexus::transport::error_chain(&error);
    assert!(chain.contains("settings.json:2:9: invalid JSON"), "{chain}");

    // An invalid entry does not stop the start: the report names it and its file.
    std::fs::write(
        &settings,
        json!({"mcpServers": {"broken": {"type": "http"}, "fine": {"command": "true", "disabled": true}}}).to_string(),
    )
    .unwrap();
    let hub = Hub::start(HubOptions::new(discovery())).await.unwrap();
    let report = hub.startup_report();
    assert!(report.broken_files.is_empty());
    assert_eq!(report.invalid_servers.len(), 1, "{report:?}");
    assert_eq!(report.invalid_servers[0].name, "broken");
    assert_eq!(report.invalid_servers[0].source, settings);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_servers_are_approved_and_rejected_through_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let binary = plexus_testserver::child_test::testserver_binary();
    std::fs::write(
        dir.path().join(".mcp.json"),
        json!({"mcpServers": {"proj": {"command": binary, "args": ["stdio"]}}}).to_string(),
    )
    .unwrap();
    let hub = bare_hub(&dir, |options| options).await;
    assert_eq!(
        hub.pool().state("proj").map(|state| state.status),
        Some(plexus::pool::ServerStatus::Pending)
    );
    assert!(hub.tool_pool().await.entries.is_empty());

    let written = hub.approve(&["proj"]).await.unwrap();
    assert!(
        written.starts_with(dir.path().join("home")) && written.ends_with("settings.local.json"),
        "{}",
        written.display()
    );
    hub.wait_ready(Duration::from_secs(30)).await.unwrap();
    assert!(hub.tool_pool().await.names().any(|name| name == "mcp__proj__echo"));
    let echoed = hub.call("mcp__proj__echo", json!({"text": "approved"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("approved"));

    hub.reject(&["proj"]).await.unwrap();
    assert!(hub.tool_pool().await.entries.is_empty());
    assert_eq!(
        hub.pool().state("proj").map(|state| state.status),
        Some(plexus::pool::ServerStatus::Disabled)
    );
    let error = hub.approve(&["nope"]).await.unwrap_err();
    assert!(matches!(error, HubError::NotAProjectServer { .. }), "{error:?}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hubs_in_one_process_each_use_their_own_proxy() {
    let server = RemoteServer::from_args("http", &[]).await.unwrap();
    let (log_a, log_b) = (
        plexus_testserver::EventLogFile::new("hub-proxy-a"),
        plexus_testserver::EventLogFile::new("hub-proxy-b"),
    );
    let proxy_a = plexus_testserver::ProxyServer::from_args(&[&log_a.arg()])
        .await
        .unwrap();
    let proxy_b = plexus_testserver::ProxyServer::from_args(&[&log_b.arg()])
        .await
        .unwrap();
    let through =
        |log: &plexus_testserver::EventLogFile| log.matching(&json!({"event": "proxy", "target": server.url()})).len();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let hub_a = hub(&dir_a, server.url(), &[("HTTP_PROXY", proxy_a.url())], &[]).await;
    let echoed = hub_a.call("mcp__demo__echo", json!({"text": "via a"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("via a"));
    let seen_a = through(&log_a);
    assert!(seen_a > 0, "hub A's requests go through its proxy");
    assert_eq!(through(&log_b), 0);

    // The second Hub's environment names the other proxy; the process's names none.
    let hub_b = hub(&dir_b, server.url(), &[("http_proxy", proxy_b.url())], &[]).await;
    let echoed = hub_b.call("mcp__demo__echo", json!({"text": "via b"})).await.unwrap();
    assert_eq!(echoed.content[0].as_text(), Some("via b"));
    assert!(through(&log_b) > 0, "hub B's requests go through its proxy");
    assert_eq!(through(&log_a), seen_a, "none of hub B's through A's");
    hub_a.shutdown().await;
    hub_b.shutdown().await;
    server.shutdown().await;
}
