//! The facade of plexus, the MCP client stack: every layer re-exported, and the connector that
//! turns a configured server into a live [`Client`].
//!
//! Depend on this crate to get everything; depend on a single `plexus-*` crate to get only that
//! layer. Features: `stdio` (the child-process transport, default) and `tools` (the tool adapter,
//! default).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let file = plexus::config::ConfigFile::load(std::path::Path::new(".mcp.json"))?;
//! for (name, server) in file.servers() {
//!     let name = name.as_str();
//!     let client = plexus::connect(name, server, plexus::ClientOptions::from_env(name)).await?;
//!     println!("{name}: {} tools", client.list_tools().await?.len());
//!     client.close().await?;
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod connect;

pub use connect::{ConnectError, connect};
pub use plexus_client::{Client, ClientError, ClientOptions};

/// One MCP session (`plexus-client`).
pub use plexus_client as client;
/// Configuration files and entries (`plexus-config`).
pub use plexus_config as config;
/// JSON-RPC 2.0 messages and framing (`plexus-jsonrpc`).
pub use plexus_jsonrpc as jsonrpc;
/// MCP schema types, methods and versions (`plexus-protocol`).
pub use plexus_protocol as protocol;
/// The stdio transport (`plexus-stdio`).
#[cfg(feature = "stdio")]
pub use plexus_stdio as stdio;
/// The tool adapter (`plexus-tools`).
#[cfg(feature = "tools")]
pub use plexus_tools as tools;
/// The transport trait and errors (`plexus-transport`).
pub use plexus_transport as transport;
