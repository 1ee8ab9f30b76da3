//! Calling a pool's tool: `ensure_connected` → `tools/call` with the caller's progress and the
//! tool timeout (restarted by progress, up to a maximum total) → on URL elicitation required
//! (`-32042`), the URLs handed to the host and the call sent again once they completed, at most
//! 3 rounds (see [`crate::elicitation`]) → on an expired session, one reconnect through the pool
//! and one retry → the result, or an error naming server and tool. A tool that must run as a task
//! is called as one and its task followed to the result ([`plexus_client::Client::call_tool_as_task_ref`]);
//! it is never called again.
//!
//! A request whose bytes may have reached the server is never re-sent (the transports keep to
//! that); the one retry here is for a session the server ended, which it answers with a 404
//! before running anything.

use std::sync::Arc;
use std::time::Duration;

use plexus_client::{CancelHandle, ClientError, ProgressCallback, RequestOptions};
use plexus_jsonrpc::ErrorCode;
use plexus_pool::{Pool, PoolError};
use plexus_protocol::{CallToolResult, Tool, methods};
use plexus_transport::{ErrorClass, error_chain};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::elicitation::{self, MAX_URL_ELICITATION_ROUNDS, UrlElicitationError, UrlElicitationHandler};

/// How one call behaves.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// The tool timeout; `None` uses the session's (`MCP_TOOL_TIMEOUT`, 60 s by default).
    pub timeout: Option<Duration>,
    /// Receives the server's progress notifications; each restarts the timeout…
    pub on_progress: Option<ProgressCallback>,
    /// …but never past this total (default: 10 × the timeout).
    pub max_total: Option<Duration>,
    /// Sends the user to the URLs of a `-32042` answer; without one, such an answer is an error
    /// that lists them.
    pub url_elicitation: Option<Arc<dyn UrlElicitationHandler>>,
    /// How long one URL elicitation may take (default 10 minutes).
    pub url_elicitation_timeout: Option<Duration>,
    /// The host's tag of the call, given back with the requests the server makes on its behalf
    /// (see [`RequestOptions::tag`]).
    pub tag: Option<u64>,
    /// Cancels the call from outside its future, with a reason the server is told: while the
    /// server is connected, while the call runs, while the user is at a URL the server asked
    /// for. Dropping the call's future cancels it too.
    pub cancel: Option<CancelHandle>,
}

impl CallOptions {
    /// Cancels the call when `handle` is cancelled (see [`CallOptions::cancel`]).
    #[must_use]
    pub fn cancel_with(mut self, handle: CancelHandle) -> Self {
        self.cancel = Some(handle);
        self
    }
}

/// Runs `work` until `cancel` (if any) is cancelled; the reason then.
async fn unless_cancelled<T>(cancel: Option<&CancelHandle>, work: impl Future<Output = T>) -> Result<T, Arc<str>> {
    match cancel {
        None => Ok(work.await),
        Some(cancel) => tokio::select! {
            biased;
            done = work => Ok(done),
            reason = cancel.cancelled() => Err(reason),
        },
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("max_total", &self.max_total)
            .field("url_elicitation", &self.url_elicitation.is_some())
            .field("url_elicitation_timeout", &self.url_elicitation_timeout)
            .field("tag", &self.tag)
            .field("cancel", &self.cancel)
            .finish()
    }
}

/// Why a call did not give a result (a result with `isError: true` is a result, not this).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The server could not be reached.
    #[error("calling {tool} of server \"{server}\"")]
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
    #[error("calling {tool} of server \"{server}\"")]
    Failed {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
        /// Why.
        #[source]
        source: ClientError,
    },
    /// The server needs the user at URLs first (`-32042`), and they did not all complete.
    #[error("calling {tool} of server \"{server}\"")]
    UrlElicitation {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
        /// Why.
        #[source]
        source: UrlElicitationError,
    },
    /// The tool must be called as a task, and its server declares no task-augmented calls.
    #[error("calling {tool} of server \"{server}\": {TASK_REQUIRED}")]
    TaskRequired {
        /// The server.
        server: String,
        /// The tool's own name.
        tool: String,
    },
}

/// Why a tool that requires tasks is not called.
const TASK_REQUIRED: &str = "the tool must be called as a task (execution.taskSupport is \"required\"), and the server \
     declares no task support for tools/call";

impl CallError {
    /// The server of the tool.
    pub fn server(&self) -> &str {
        match self {
            CallError::Unavailable { server, .. }
            | CallError::Failed { server, .. }
            | CallError::UrlElicitation { server, .. }
            | CallError::TaskRequired { server, .. } => server,
        }
    }

    /// The tool's own name (as its server names it).
    pub fn tool(&self) -> &str {
        match self {
            CallError::Unavailable { tool, .. }
            | CallError::Failed { tool, .. }
            | CallError::UrlElicitation { tool, .. }
            | CallError::TaskRequired { tool, .. } => tool,
        }
    }

    /// What went wrong, without the `calling TOOL of server "S": ` the message starts with (for
    /// a place that names the tool already).
    pub fn reason(&self) -> String {
        match self {
            CallError::Unavailable { source, .. } => error_chain(source),
            CallError::Failed { source, .. } => error_chain(source),
            CallError::UrlElicitation { source, .. } => error_chain(source),
            CallError::TaskRequired { .. } => TASK_REQUIRED.to_owned(),
        }
    }
}

/// Calls `tool` of `server` in `pool` with `arguments`: anything that serializes as a JSON
/// object (a `Map`, or the `RawValue` text of an object as a client sent it).
pub async fn call_tool<A: Serialize + ?Sized + Sync>(
    pool: &Pool,
    server: &str,
    tool: &Tool,
    arguments: &A,
    options: &CallOptions,
) -> Result<CallToolResult, CallError> {
    let raw = call_tool_raw(pool, server, tool, arguments, options).await?;
    decode_result(server, tool, &raw)
}

/// `raw`, the result of a call of `tool` of `server`, decoded; a result that does not decode
/// fails the call ([`ClientError::InvalidResult`]), as any other answer that is not a result.
#[allow(clippy::result_large_err)] // The error of every call, which `call_tool` returns too.
pub fn decode_result(server: &str, tool: &Tool, raw: &RawValue) -> Result<CallToolResult, CallError> {
    plexus_client::decode_result(methods::TOOLS_CALL, raw).map_err(|source| CallError::Failed {
        server: server.to_owned(),
        tool: tool.name.clone(),
        source,
    })
}

/// [`call_tool`], the result as the server wrote it (for a host that passes results on: see
/// [`AsSentResult`](crate::AsSentResult); [`decode_result`] decodes it).
pub async fn call_tool_raw<A: Serialize + ?Sized + Sync>(
    pool: &Pool,
    server: &str,
    tool: &Tool,
    arguments: &A,
    options: &CallOptions,
) -> Result<Box<RawValue>, CallError> {
    let as_task = crate::entry::requires_task(tool);
    let unavailable = |source| CallError::Unavailable {
        server: server.to_owned(),
        tool: tool.name.clone(),
        source,
    };
    let elicitation_failed = |source| CallError::UrlElicitation {
        server: server.to_owned(),
        tool: tool.name.clone(),
        source,
    };
    let cancelled = |reason: Arc<str>| CallError::Failed {
        server: server.to_owned(),
        tool: tool.name.clone(),
        source: ClientError::Cancelled {
            reason: reason.to_string(),
        },
    };
    let cancel = options.cancel.as_ref();
    let mut expired_once = false;
    let mut elicitation_rounds = 0;
    loop {
        let client = unless_cancelled(cancel, pool.ensure_connected(server))
            .await
            .map_err(cancelled)?
            .map_err(unavailable)?;
        let mut request = RequestOptions {
            timeout: options.timeout,
            tag: options.tag,
            cancel: options.cancel.clone(),
            ..RequestOptions::default()
        };
        if let Some(progress) = &options.on_progress {
            let timeout = options.timeout.unwrap_or(plexus_client::DEFAULT_TOOL_TIMEOUT);
            request = request
                .progress(progress.clone())
                .reset_on_progress(Some(options.max_total.unwrap_or(timeout * 10)));
        }
        // Subscribed before the call: a completion may follow the -32042 answer at once.
        let mut completions = options.url_elicitation.as_ref().map(|_| client.subscribe());
        let called = if as_task {
            client.call_tool_as_task_raw_ref(&tool.name, arguments, request).await
        } else {
            client.call_tool_raw_ref(&tool.name, arguments, request).await
        };
        match called {
            Err(ClientError::TasksUnsupported { .. }) => {
                return Err(CallError::TaskRequired {
                    server: server.to_owned(),
                    tool: tool.name.clone(),
                });
            }
            // The server ended the session before running the call: the pool drops the
            // connection, and the next `ensure_connected` opens a fresh session. Once.
            // Not a task's call: its session may have expired while the task ran (on a poll),
            // and calling again would run the tool twice.
            Err(error) if error.transport_class() == Some(ErrorClass::SessionExpired) && !expired_once && !as_task => {
                expired_once = true;
                tracing::info!(server, tool = %tool.name, "the session expired; calling again in a new one");
            }
            Err(ClientError::Rpc { error, .. }) if error.code == ErrorCode::URL_ELICITATION_REQUIRED => {
                let elicitations = elicitation::requested(&error).map_err(elicitation_failed)?;
                let (Some(handler), Some(completions)) = (&options.url_elicitation, completions.as_mut()) else {
                    let urls = elicitations.into_iter().map(|e| e.url).collect();
                    return Err(elicitation_failed(UrlElicitationError::NoHandler { urls }));
                };
                if elicitation_rounds == MAX_URL_ELICITATION_ROUNDS {
                    return Err(elicitation_failed(UrlElicitationError::TooManyRounds));
                }
                elicitation_rounds += 1;
                let timeout = options
                    .url_elicitation_timeout
                    .unwrap_or(elicitation::DEFAULT_URL_ELICITATION_TIMEOUT);
                // Boxed, as the rare path: every call's future stays small.
                let completing = Box::pin(elicitation::complete(
                    handler.as_ref(),
                    server,
                    &elicitations,
                    completions,
                    timeout,
                    options.tag,
                ));
                unless_cancelled(cancel, completing)
                    .await
                    .map_err(cancelled)?
                    .map_err(elicitation_failed)?;
                tracing::info!(server, tool = %tool.name, round = elicitation_rounds, "URL elicitation done; calling again");
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
