//! One MCP session over any `Transport`: version negotiation, request correlation, timeouts,
//! cancellation, progress, server-to-client requests and notifications.
//!
//! The session's reader completes each caller's reply directly (no task sits between the
//! transport and the caller); a reply that the transport has in hand when its `send` returns (an
//! HTTP JSON body) completes the call in the caller's own task, through the same function.
//! Results stay raw JSON until the typed call decodes them, and a request only pays for a
//! progress token or a cancellation when it is used. When the transport
//! goes away every pending request fails at once with the reason, and close callbacks run.
//!
//! By default a session probes its server with `server/discover` and speaks the era it answers
//! in ([`EraChoice`]). A server that declares the skills extension has its skills listed, got
//! and loaded, each loaded file verified against the skill's entry ([`LoadedSkill`]). A tool call
//! the server runs as a task (the stateless era's tasks extension, or the experimental tasks of
//! 2025-11-25 for a tool that requires them: [`Client::call_tool_as_task_ref`]) is followed to
//! its result, its progress and status reported, and cancelled on the server when given up.
//!
//! ```no_run
//! # async fn demo(transport: Box<dyn plexus_transport::Transport>) -> Result<(), plexus_client::ClientError> {
//! use plexus_client::{Client, ClientOptions};
//!
//! let client = Client::connect(transport, ClientOptions::new("everything")).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("echo", serde_json::json!({"text": "hi"}).as_object().cloned()).await?;
//! println!("{result:?}");
//! client.close().await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod cancel;
mod client;
mod era;
mod error;
mod frontmatter;
mod handler;
mod listen;
mod listing;
mod notifications;
mod progress;
mod request;
mod rounds;
mod session;
mod skills;
mod tasks;
#[cfg(feature = "otel")]
pub mod telemetry;
mod trace;
mod wire;

/// The attribute with which a host implements [`ClientHandler`] (the `async-trait` crate's).
pub use async_trait::async_trait;
pub use cancel::CancelHandle;
pub use client::{
    Client, ClientOptions, DEFAULT_INITIALIZE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, DEFAULT_TOOL_TIMEOUT, MAX_LIST_BYTES,
    MAX_LIST_PAGES, RequestObserver, ServerDetails, decode_result,
};
pub use era::{DEFAULT_PROBE_TIMEOUT, EraChoice, EraSource};
pub use error::{ClientError, ListProblem, ParamsProblem, UnidentifiedDrops};
pub use frontmatter::{FrontMatterError, MAX_FRONTMATTER_BYTES, MAX_FRONTMATTER_DEPTH, parse_frontmatter};
pub use handler::{ClientHandler, NoHandler, ServerRequestContext};
pub use listen::LISTEN_RENEWAL;
pub use listing::Listing;
pub use notifications::ServerNotification;
/// The boxed future type of the transports' methods.
pub use plexus_transport::BoxFuture;
pub use progress::{ProgressCallback, progress_channel};
pub use request::RequestOptions;
pub use rounds::MAX_INPUT_ROUNDS;
pub use skills::{LoadedSkill, SkillError, VerificationProblem};
pub use tasks::{DEFAULT_TASK_POLL, MAX_TASK_POLL, MIN_TASK_POLL, TASK_WAIT_CAP_FACTOR};
pub use wire::{RejectedTool, ToolProblem};
