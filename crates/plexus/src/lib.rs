//! The facade of plexus, the MCP client stack: a [`Hub`] that a host embeds, the connector
//! that turns a configured server into a live [`Client`], and every layer re-exported.
//!
//! # A host in twenty lines
//!
//! [`Hub::start`] reads and merges every config scope (the user's, the project's, the local one,
//! with policy and approvals applied), starts every server that may run, and keeps them
//! connected; [`Hub::tool_pool`] is the host's tool list (`mcp__server__tool` names,
//! annotations, bounded descriptions); [`Hub::call`] runs a tool by that name and processes its
//! result (images resized, binary content and large output saved to files). This is
//! `examples/embed.rs`, against a test server:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = plexus_testserver::RemoteServer::from_args("http", &[]).await?;
//! # let dir = tempfile::tempdir()?;
//! # let config = dir.path().join("servers.json");
//! # let servers = serde_json::json!({"mcpServers": {"demo": {"type": "http", "url": server.url()}}});
//! # std::fs::write(&config, servers.to_string())?;
//! use std::time::Duration;
//!
//! use plexus::config::DiscoveryOptions;
//! use plexus::{Hub, HubOptions};
//! use serde_json::json;
//!
//! // The scopes under a plexus home and a project directory; here one explicit file only.
//! // `HubOptions::from_process(None)` is what a command-line host uses.
//! let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
//!     .with_explicit_files(vec![config], true)
//!     .with_managed_file(None);
//! let hub = Hub::start(HubOptions::new(discovery).builtins(["Read", "Write"])).await?;
//! let ready = hub.wait_ready(Duration::from_secs(10)).await?;
//! assert_eq!(ready.connected, ["demo"]);
//! let pool = hub.tool_pool().await;
//! assert!(pool.names().any(|name| name == "mcp__demo__echo"));
//!
//! let result = hub.call("mcp__demo__echo", json!({"text": "hello"})).await?;
//! assert_eq!(result.content[0].as_text(), Some("hello"));
//! hub.shutdown().await;
//! # server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Servers in the host's process, and cancelling a call
//!
//! [`HubOptions::in_process`] adds a server that runs inside the host, on an in-memory pipe
//! ([`in_process`]); it is connected, listed and called like any other. A [`CancelHandle`]
//! given in a call's [`CallOptions`](tools::CallOptions) stops the call from anywhere, and the
//! server is told why before the call returns (dropping the call's future cancels it too). This
//! is `examples/in_process.rs`, with the test server in the host:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! use std::time::Duration;
//!
//! use plexus::config::DiscoveryOptions;
//! use plexus::in_process::DuplexStream;
//! use plexus::tools::CallOptions;
//! use plexus::{CancelHandle, Hub, HubOptions};
//! use serde_json::json;
//!
//! async fn test_server(pipe: DuplexStream) {
//!     let (input, output) = tokio::io::split(pipe);
//!     let options = plexus_testserver::StdioOptions::default();
//!     let _ = plexus_testserver::serve_io(options, Box::pin(input), Box::pin(output)).await;
//! }
//!
//! let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path()).with_managed_file(None);
//! let hub = Hub::start(HubOptions::new(discovery).in_process("inside", test_server)).await?;
//! hub.wait_ready(Duration::from_secs(10)).await?;
//!
//! let cancel = CancelHandle::new();
//! let options = CallOptions::default().cancel_with(cancel.clone());
//! let arguments = json!({"ms": 60_000});
//! let call = hub.call_with("mcp__inside__slow", &arguments, &options);
//! let stop = async {
//!     tokio::time::sleep(Duration::from_millis(100)).await;
//!     cancel.cancel("the user pressed stop");
//! };
//! let (result, ()) = tokio::join!(call, stop);
//! let error = result.unwrap_err();
//! assert!(error.is_cancelled() && !error.is_retryable());
//! assert_eq!((error.server(), error.tool()), (Some("inside"), Some("slow")));
//! hub.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Errors
//!
//! Every Hub method returns a [`HubError`]. It answers what a host asks of it
//! ([`is_timeout`](HubError::is_timeout), [`is_retryable`](HubError::is_retryable),
//! [`is_cancelled`](HubError::is_cancelled), [`needs_auth`](HubError::needs_auth),
//! [`server`](HubError::server), [`tool`](HubError::tool), [`rpc_code`](HubError::rpc_code)),
//! and keeps its causes as [`source`](std::error::Error::source)s without repeating them in its
//! own text: [`transport::error_chain`] prints the whole chain on one line.
//!
//! # Below the Hub
//!
//! [`DefaultConnector`] maps every kind to its transport and its authentication; [`connect`] is
//! the connector without a plexus home, [`DefaultConnector::from_env`] the one with the process's
//! home, its OAuth token store and its needs-auth cache. [`DefaultConnector::login`] and
//! [`DefaultConnector::logout`] are `plexus login` and `plexus logout`. It is the
//! [`pool::Connector`] of a [`pool::Pool`], which owns every connection's life (windows, states,
//! caches, reconnection); [`classify`] is how it tells the pool what a failure means.
//!
//! ```no_run
//! # async fn demo(servers: Vec<plexus::pool::ServerSpec>) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use plexus::pool::{Pool, PoolSettings};
//!
//! let pool = Pool::new(Arc::new(plexus::DefaultConnector::from_env()), PoolSettings::from_env());
//! pool.set_servers(servers).await;
//! for name in pool.wait_ready(Duration::from_secs(10)).await?.connected {
//!     println!("{name}: {} tools", pool.tools(&name).await?.len());
//! }
//! pool.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Layers and features
//!
//! Each module below is one layer's crate, documented here in full: depend on this crate to get
//! everything, or on a single `plexus-*` crate to get only that layer. Features (all on by
//! default): `stdio` (child processes), `http` (Streamable HTTP, with the fallback to legacy SSE
//! when `sse` is on too), `sse` (legacy HTTP+SSE), `ws` (WebSocket), `auth` (OAuth 2.1 and its
//! token store, headers helpers, IDE and session ingress tokens, the needs-auth cache; the
//! `sse-ide`, `ws-ide` and `claudeai-proxy` kinds need it) and `tools` (the tool adapter and
//! the Hub). Off by default: `otel` (a span and histograms in OpenTelemetry's MCP semantic
//! conventions for every request, and the W3C trace context in each request's `_meta`:
//! `client::telemetry`) and `otlp` (`otel` exported over OTLP/HTTP: the `telemetry` module; its
//! dependencies are the OpenTelemetry SDK, its OTLP exporter on reqwest with rustls, and
//! `tracing-opentelemetry`).
#![forbid(unsafe_code)]

mod connect;
mod connector;
mod entry_auth;
pub mod era_verdicts;
#[cfg(feature = "tools")]
pub mod hub;
#[cfg(feature = "tools")]
mod hub_config;
#[cfg(feature = "tools")]
mod hub_content;
#[cfg(feature = "tools")]
mod hub_error;
#[cfg(feature = "tools")]
pub mod hub_lock;
#[cfg(feature = "tools")]
mod hub_messages;
#[cfg(feature = "tools")]
mod hub_search;
#[cfg(feature = "tools")]
mod hub_skills;
#[cfg(feature = "watch")]
mod hub_watch;
pub mod in_process;
#[cfg(feature = "auth")]
mod login;
mod pooled;
#[cfg(feature = "otlp")]
pub mod telemetry;

pub use connect::{ConnectError, Connected, connect, connect_detailed};
#[cfg(feature = "auth")]
pub use connector::CREDENTIALS_FILE;
pub use connector::{DefaultConnector, SECRET_VARIABLES};
pub use era_verdicts::{ERA_VERDICTS_FILE, EraVerdictError, EraVerdicts};
#[cfg(feature = "tools")]
pub use hub::{Hub, HubOptions};
#[cfg(feature = "tools")]
pub use hub_config::{BrokenFile, ConfigChange, StartupReport};
#[cfg(feature = "tools")]
pub use hub_content::{Listed, PromptEntry, ResourceEntry, TemplateEntry, parse_reference};
#[cfg(feature = "tools")]
pub use hub_error::{HubError, ServerFailure};
#[cfg(feature = "tools")]
pub use hub_lock::{HeldTool, LockWritten, TOOL_LOCK_EVENTS_CAPACITY, ToolLockEvent, WrittenFile};
#[cfg(feature = "tools")]
pub use hub_messages::{SERVER_MESSAGES_CAPACITY, ServerMessage};
#[cfg(feature = "tools")]
pub use hub_skills::SkillEntry;
#[cfg(feature = "watch")]
pub use hub_watch::{CONFIG_EVENTS_CAPACITY, ConfigEvent, ConfigWatcher, DEFAULT_SETTLE, WatchError};
pub use in_process::InProcessServer;
#[cfg(feature = "auth")]
pub use login::LoginError;
pub use plexus_client::{CancelHandle, Client, ClientError, ClientOptions};
pub use pooled::classify;

/// Locks a mutex, recovering from poisoning (no invariant of ours spans a panic).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Authentication providers (`plexus-auth`).
#[cfg(feature = "auth")]
#[doc(inline)]
pub use plexus_auth as auth;
/// One MCP session (`plexus-client`).
#[doc(inline)]
pub use plexus_client as client;
/// Configuration files and entries (`plexus-config`).
#[doc(inline)]
pub use plexus_config as config;
/// The Streamable HTTP transport (`plexus-http`).
#[cfg(feature = "http")]
#[doc(inline)]
pub use plexus_http as http;
/// JSON-RPC 2.0 messages and framing (`plexus-jsonrpc`).
#[doc(inline)]
pub use plexus_jsonrpc as jsonrpc;
/// What the remote transports and OAuth share: credentials, challenges, the SSE decoder, TLS
/// (`plexus-net`).
#[doc(inline)]
pub use plexus_net as net;
/// The connection pool (`plexus-pool`).
#[doc(inline)]
pub use plexus_pool as pool;
/// MCP schema types, methods and versions (`plexus-protocol`).
#[doc(inline)]
pub use plexus_protocol as protocol;
/// The legacy HTTP+SSE transport (`plexus-sse`).
#[cfg(feature = "sse")]
#[doc(inline)]
pub use plexus_sse as sse;
/// The stdio transport (`plexus-stdio`).
#[cfg(feature = "stdio")]
#[doc(inline)]
pub use plexus_stdio as stdio;
/// The tool adapter (`plexus-tools`).
#[cfg(feature = "tools")]
#[doc(inline)]
pub use plexus_tools as tools;
/// The transport trait and errors (`plexus-transport`).
#[doc(inline)]
pub use plexus_transport as transport;
/// The WebSocket transport (`plexus-ws`).
#[cfg(feature = "ws")]
#[doc(inline)]
pub use plexus_ws as ws;
