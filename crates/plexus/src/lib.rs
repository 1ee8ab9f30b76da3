//! The facade of plexus, the MCP client stack: every layer re-exported, and the connector that
//! turns a configured server into a live [`Client`].
//!
//! Depend on this crate to get everything; depend on a single `plexus-*` crate to get only that
//! layer. Features (all on by default): `stdio` (child processes), `http` (Streamable HTTP, with
//! the fallback to legacy SSE when `sse` is on too), `sse` (legacy HTTP+SSE), `ws` (WebSocket),
//! `auth` (OAuth 2.1 and its token store, headers helpers, IDE and session ingress tokens, the
//! needs-auth cache; the `sse-ide`, `ws-ide` and `claudeai-proxy` kinds need it) and `tools` (the
//! tool adapter).
//!
//! [`DefaultConnector`] maps every kind to its transport and its authentication; [`connect`] is
//! the connector without a plexus home, [`DefaultConnector::from_env`] the one with the process's
//! home, its OAuth token store and its needs-auth cache. [`DefaultConnector::login`] and
//! [`DefaultConnector::logout`] are `plexus login` and `plexus logout`. It is the
//! [`pool::Connector`] of a [`pool::Pool`], which owns every connection's life (windows, states,
//! caches, reconnection); [`classify`] is how it tells the pool what a failure means.
//!
//! [`Hub`] is what a host embeds: every config scope, the pool, the tool pool, calls by name.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
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
//!
//! // The user, project and local scopes under a home and a project, with policy and approvals;
//! // here one explicit file only.
//! let discovery = DiscoveryOptions::new(dir.path().join("home"), dir.path())
//!     .with_explicit_files(vec![config], true)
//!     .with_managed_file(None);
//! let hub = Hub::start(HubOptions::new(discovery).builtins(["Read", "Write"])).await?;
//! hub.wait_ready(Duration::from_secs(10)).await?;
//! let pool = hub.tool_pool().await;
//! assert!(pool.names().any(|name| name == "mcp__demo__echo"));
//!
//! let arguments = serde_json::json!({"text": "hello"}).as_object().cloned().unwrap_or_default();
//! let result = hub.call("mcp__demo__echo", arguments).await?;
//! assert_eq!(result.content[0].as_text(), Some("hello"));
//! hub.shutdown().await;
//! # server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Below the Hub, a [`pool::Pool`] with the [`DefaultConnector`] can be driven directly:
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
#![forbid(unsafe_code)]

mod connect;
mod connector;
mod entry_auth;
#[cfg(feature = "tools")]
pub mod hub;
#[cfg(feature = "tools")]
mod hub_content;
#[cfg(feature = "tools")]
mod hub_error;
#[cfg(feature = "tools")]
mod hub_messages;
pub mod in_process;
#[cfg(feature = "auth")]
mod login;
mod pooled;

pub use connect::{ConnectError, Connected, connect, connect_detailed};
#[cfg(feature = "auth")]
pub use connector::CREDENTIALS_FILE;
pub use connector::{DefaultConnector, SECRET_VARIABLES};
#[cfg(feature = "tools")]
pub use hub::{Hub, HubOptions};
#[cfg(feature = "tools")]
pub use hub_content::{Listed, PromptEntry, ResourceEntry, TemplateEntry, parse_reference};
#[cfg(feature = "tools")]
pub use hub_error::{HubError, ServerFailure};
#[cfg(feature = "tools")]
pub use hub_messages::{SERVER_MESSAGES_CAPACITY, ServerMessage};
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
pub use plexus_auth as auth;
/// One MCP session (`plexus-client`).
pub use plexus_client as client;
/// Configuration files and entries (`plexus-config`).
pub use plexus_config as config;
/// The Streamable HTTP transport (`plexus-http`).
#[cfg(feature = "http")]
pub use plexus_http as http;
/// JSON-RPC 2.0 messages and framing (`plexus-jsonrpc`).
pub use plexus_jsonrpc as jsonrpc;
/// What the remote transports and OAuth share: credentials, challenges, the SSE decoder, TLS
/// (`plexus-net`).
pub use plexus_net as net;
/// The connection pool (`plexus-pool`).
pub use plexus_pool as pool;
/// MCP schema types, methods and versions (`plexus-protocol`).
pub use plexus_protocol as protocol;
/// The legacy HTTP+SSE transport (`plexus-sse`).
#[cfg(feature = "sse")]
pub use plexus_sse as sse;
/// The stdio transport (`plexus-stdio`).
#[cfg(feature = "stdio")]
pub use plexus_stdio as stdio;
/// The tool adapter (`plexus-tools`).
#[cfg(feature = "tools")]
pub use plexus_tools as tools;
/// The transport trait and errors (`plexus-transport`).
pub use plexus_transport as transport;
/// The WebSocket transport (`plexus-ws`).
#[cfg(feature = "ws")]
pub use plexus_ws as ws;
