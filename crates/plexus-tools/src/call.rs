//! Calling a pool's tool: `ensure_connected` → `tools/call` with the caller's progress and the
//! tool timeout (restarted by progress, up to a maximum total) → on an expired session, one
//! reconnect through the pool and one retry → the result, or an error naming server and tool.
//!
//! A request whose bytes may have reached the server is never re-sent (the transports keep to
//! that); the one retry here is for a session the server ended, which it answers with a 404
//! before running anything.

use std::time::Duration;

use plexus_client::{ClientError, ProgressCallback, RequestOptions};
use plexus_pool::{Pool, PoolError};
use plexus_protocol::{CallToolResult, Tool};
use plexus_transport::ErrorClass;
use serde_json::{Map, Value};

/// How one call behaves.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// The tool timeout; `None` uses the session's (`MCP_TOOL_TIMEOUT`, 60 s by default).
    pub timeout: Option<Duration>,
    /// Receives the server's progress notifications; each restarts the timeout…
    pub on_progress: Option<ProgressCallback>,
    /// …but never past this total (default: 10 × the timeout).
    pub max_total: Option<Duration>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("max_total", &self.max_total)
            .finish()
    }
}

/// Why a call did not give a result (a result with `isError: true` is a result, not this).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// The server could not be reached.
    #[error("calling {tool} of server \"{server}\": {source}")]
    Unavailable {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
        /// Why.
        #[source]
        source: PoolError,
    },
    /// The request failed (a timeout, a protocol error, a lost connection).
    #[error("calling {tool} of server \"{server}\": {source}")]
    Failed {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
        /// Why.
        #[source]
        source: ClientError,
    },
    /// The tool must be called as a task, which this client does not do.
    #[error("calling {tool} of server \"{server}\": {TASK_REQUIRED}")]
    TaskRequired {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
    },
}

/// Why a tool that requires tasks is not called.
const TASK_REQUIRED: &str =
    "the tool must be called as a task (execution.taskSupport is \"required\"), which this client does not support";

impl CallError {
    /// What went wrong, without the `calling TOOL of server "S": ` the message starts with (for
    /// a place that names the tool already).
    pub fn reason(&self) -> String {
        match self {
            CallError::Unavailable { source, .. } => source.to_string(),
            CallError::Failed { source, .. } => source.to_string(),
            CallError::TaskRequired { .. } => TASK_REQUIRED.to_owned(),
        }
    }
}

/// Calls `tool` of `server` in `pool` with `arguments`.
pub async fn call_tool(
    pool: &Pool,
    server: &str,
    tool: &Tool,
    arguments: Map<String, Value>,
    options: &CallOptions,
) -> Result<CallToolResult, CallError> {
    if crate::entry::requires_task(tool) {
        return Err(CallError::TaskRequired {
            server: server.to_owned(),
            tool: tool.name.clone(),
        });
    }
    let unavailable = |source| CallError::Unavailable {
        server: server.to_owned(),
        tool: tool.name.clone(),
        source,
    };
    let mut expired_once = false;
    loop {
        let client = pool.ensure_connected(server).await.map_err(unavailable)?;
        let mut request = RequestOptions {
            timeout: options.timeout,
            ..RequestOptions::default()
        };
        if let Some(progress) = &options.on_progress {
            let timeout = options.timeout.unwrap_or(plexus_client::DEFAULT_TOOL_TIMEOUT);
            request = request
                .progress(progress.clone())
                .reset_on_progress(Some(options.max_total.unwrap_or(timeout * 10)));
        }
        match client
            .call_tool_with(&tool.name, Some(arguments.clone()), request)
            .await
        {
            // The server ended the session before running the call: the pool drops the
            // connection, and the next `ensure_connected` opens a fresh session. Once.
            Err(error) if error.transport_class() == Some(ErrorClass::SessionExpired) && !expired_once => {
                expired_once = true;
                tracing::info!(server, tool = %tool.name, "the session expired; calling again in a new one");
            }
            Err(source) => {
                return Err(CallError::Failed {
                    server: server.to_owned(),
                    tool: tool.name.clone(),
                    source,
                });
            }
            Ok(result) => return Ok(result),
        }
    }
}
