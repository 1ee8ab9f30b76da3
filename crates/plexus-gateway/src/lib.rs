//! The MCP server side of the plexus Hub: a Hub's servers served to MCP clients as one server, over stdio (or any byte stream) or Streamable HTTP.
//!
//! Its tools are the tool pool (qualified names, truncated descriptions, annotations, schemas and
//! `execution` as sent, but for `taskSupport`: a tool that must run as a task is run as one by
//! the gateway, which answers with its result); calls go through the Hub's call chain; prompts and resources are every
//! server's (a resource's URI becomes `plexus://SERVER/URI`); completions and resource
//! subscriptions go to the server that owns them; list changes and logs are passed on; a backend
//! that cannot serve is reported to the clients, never silently missing; a call waits only for
//! its own server; and a backend's request to a client (elicitation, sampling, roots) reaches
//! only the client whose call caused it, and is refused when that cannot be known, never guessed.
//!
//! It speaks both protocol eras to its clients, whichever each backend speaks. A client of the
//! `initialize` era (2024-11-05 to 2025-11-25) gets a session: `initialize`, then requests,
//! notifications on its own stream, and the backends' requests forwarded to it. A client of the
//! stateless era (2026-07-28) sends `server/discover` (optionally) and requests that each carry
//! the envelope in `params._meta`; every result says its `resultType`; a backend's question
//! during its call comes back in the call's `input_required` result and the call waits in the
//! gateway for the client's retry (multi-round-trip requests); list changes and resource updates
//! reach it on its `subscriptions/listen` stream. Over stdio a connection's first such request
//! decides its era; over Streamable HTTP each stateless POST stands alone, without a session,
//! its headers checked against its body, and closing its stream cancels it.
//!
//! Replicas: in the stateless era any replica of the gateway answers any request, with one
//! exception: a call held for its client's answer lives on the replica that answered
//! `input_required`, and the retry (which names it by its `requestState`) must reach that
//! replica. A load balancer that routes every request anywhere serves the stateless era except
//! for backends' questions; one that keeps a client on one replica serves it all.
//!
//! A host builds its Hub with the gateway's [`Backends`] answering the servers' requests, then
//! serves it:
//!
//! ```no_run
//! # async fn run(discovery: plexus::config::DiscoveryOptions) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//!
//! use plexus::{Hub, HubOptions};
//! use plexus_gateway::{Backends, Gateway, GatewayOptions};
//!
//! let backends = Backends::new();
//! let hub = Hub::start(backends.hub_options(HubOptions::new(discovery))).await?;
//! let gateway = Gateway::new(Arc::new(hub), backends, GatewayOptions::default());
//! gateway.serve_stdio().await?; // until the client closes its input
//! # Ok(())
//! # }
//! ```
//!
//! Over HTTP, [`HttpListeners::bind`] takes the addresses first (so that the host can say where
//! it serves), then [`Gateway::serve_http`] serves them. The HTTP side's rules: while it listens
//! on loopback addresses only, the `Host` (and an `Origin`) must name this gateway (against DNS
//! rebinding); with a [token](GatewayOptions::token) every request must carry it as
//! `Authorization: Bearer` (a host must give one to listen off loopback: see
//! [`off_loopback`]); every connection and request is bounded in time and size before any work
//! is done.
//!
//! A host with an HTTP server of its own mounts the gateway in it instead:
//! [`Gateway::http_service`] is a hyper and tower service that answers Streamable HTTP at
//! whatever path the host routes to it (an axum app: `Router::new().route_service("/mcp",
//! gateway.http_service(MountOptions::default().allow_hosts(["localhost:3000"])))`), with the
//! `Host` and `Origin` it may be reached by named in [`MountOptions`].
//!
//! Dependencies: `hyper` (server, HTTP/1.1) with `hyper-util` and `http-body-util` serves
//! Streamable HTTP, never parsed by hand; `getrandom` makes session ids; `bytes` frames input;
//! `async-trait` for plexus-tools' URL elicitation handler; `tower-service` for the mounted
//! service's tower trait; `thiserror` for [`GatewayError`].
#![forbid(unsafe_code)]

mod content;
mod deferred;
mod era;
mod follow;
mod forward;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod gateway;
mod health;
mod http;
mod listen;
mod listening;
mod rounds;
mod service;
mod session;
mod stateless;
mod stdio;
mod subscriptions;
#[cfg(feature = "otel")]
mod telemetry;
mod tools;
mod uri;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use plexus::{Hub, HubOptions};
use tokio::sync::watch;

pub use http::{HttpListeners, RequestBody, ResponseBody};
pub use listen::{ListenAddress, off_loopback};
pub use service::{HttpService, MountOptions, ResponseFuture};

/// The environment variable a host may take the HTTP clients' token from (`plexus serve` does).
pub const TOKEN_VAR: &str = "PLEXUS_GATEWAY_TOKEN";

/// How the gateway serves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// How long `initialize` and the first lists wait for the servers still starting (default
    /// 2 s; `server/discover` waits half a second at most, as a client's probe waits about a
    /// second); those that start later join with a `list_changed` notification.
    pub ready_grace: Duration,
    /// How long a server the pool stopped for crashing too often stays off before the gateway
    /// starts it again (default 60 s; doubled each time, at most 15 minutes).
    pub crash_pause: Duration,
    /// How long an HTTP session may sit unused (no request, no open stream, no call running)
    /// before it ends (default 30 minutes).
    pub session_idle: Duration,
    /// The bearer token HTTP clients must send (required to listen off loopback).
    pub token: Option<String>,
    /// Deferred tools: `tools/list` shows three meta-tools instead of every tool of the pool,
    /// `search_tools`, `describe_tools` and `call_tool`, which find tools, answer their full
    /// definitions, and call them through the same call path as a direct call (off by default).
    pub deferred: bool,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            ready_grace: Duration::from_secs(2),
            crash_pause: Duration::from_secs(60),
            session_idle: Duration::from_secs(30 * 60),
            token: None,
            deferred: false,
        }
    }
}

/// Why the gateway could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// Reading the client's input failed.
    #[error("cannot read the client's input")]
    Input {
        /// The read's error.
        #[source]
        source: std::io::Error,
    },
    /// No address could be listened on; the first one that failed, and why.
    #[error("cannot listen on {address}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No address was given to listen on.
    #[error("no address to listen on")]
    NoAddress,
    /// A host name to listen on did not resolve.
    #[error("cannot resolve {host:?}")]
    Resolve {
        /// The name.
        host: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// What was given is not `HOST:PORT`.
    #[error("expected HOST:PORT (such as localhost:8931 or 127.0.0.1:8931), not {given:?}")]
    NotAnAddress {
        /// The text given.
        given: String,
    },
}

/// What the gateway answers the backends with: their requests to a client (roots, sampling,
/// elicitation, the URLs of a `-32042` answer). Give it to the Hub before it starts
/// ([`hub_options`](Self::hub_options)), then to [`Gateway::new`].
#[derive(Default)]
pub struct Backends {
    forwarder: Arc<forward::Forwarder>,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends").finish_non_exhaustive()
    }
}

impl Backends {
    /// Answers nothing until a gateway is made with it.
    pub fn new() -> Self {
        Backends::default()
    }

    /// The handler of the servers' requests, for [`HubOptions::handler`].
    pub fn handler(&self) -> Arc<dyn plexus::client::ClientHandler> {
        Arc::clone(&self.forwarder) as Arc<dyn plexus::client::ClientHandler>
    }

    /// The handler of URL elicitations, for [`HubOptions::url_elicitation`].
    pub fn url_elicitation(&self) -> Arc<dyn plexus::tools::UrlElicitationHandler> {
        Arc::clone(&self.forwarder) as Arc<dyn plexus::tools::UrlElicitationHandler>
    }

    /// `options` with both handlers set.
    pub fn hub_options(&self, options: HubOptions) -> HubOptions {
        options.handler(self.handler()).url_elicitation(self.url_elicitation())
    }
}

/// A Hub served as one MCP server, to clients of both protocol eras. Its background work (following the backends, starting again
/// those that crashed) ends when it is dropped; the Hub's servers are the host's to shut down.
pub struct Gateway {
    core: Arc<gateway::Gateway>,
    /// Attached to this gateway: a Backends serves one gateway.
    _backends: Backends,
    options: GatewayOptions,
    /// Following the backends and their notifications, and the timer anchor.
    _tasks: AbortOnDrop,
    /// Starts again the backends that died (a client cannot ask for one whose tools left).
    _supervisor: plexus::pool::Supervisor,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// The gateway over `hub`, whose servers' requests `backends` answers (the Hub must have
    /// been started with its handlers: [`Backends::hub_options`]). Must be called within a
    /// Tokio runtime: it starts following the backends at once.
    pub fn new(hub: Arc<Hub>, backends: Backends, options: GatewayOptions) -> Gateway {
        let (ready_tx, ready) = watch::channel(false);
        let supervisor = hub
            .pool()
            .supervise(plexus::pool::RestartPolicy::with_crash_pause(options.crash_pause));
        let core = gateway::Gateway::new(hub, ready, options.deferred);
        backends.forwarder.attach(&core);
        let watcher = tokio::spawn(follow::watch_servers(Arc::clone(&core), options.ready_grace, ready_tx));
        let messages = tokio::spawn(follow::pass_on(Arc::downgrade(&core), core.hub().server_messages()));
        let anchor = tokio::spawn(anchor_timers());
        Gateway {
            core,
            _backends: backends,
            options,
            _tasks: AbortOnDrop(vec![
                watcher.abort_handle(),
                messages.abort_handle(),
                anchor.abort_handle(),
            ]),
            _supervisor: supervisor,
        }
    }

    /// The Hub it serves.
    pub fn hub(&self) -> &Hub {
        self.core.hub()
    }

    /// Serves one client on this process's stdin and stdout until stdin ends, then answers
    /// what the client had asked (within 60 s, while someone reads).
    pub async fn serve_stdio(&self) -> Result<(), GatewayError> {
        let input = plexus::jsonrpc::process_stdio::Stdin::open().into_inner();
        let output = plexus::jsonrpc::process_stdio::Stdout::open().into_inner();
        self.serve_io(input, output).await
    }

    /// Serves one client that writes newline-delimited JSON-RPC to `input` and reads `output`,
    /// until `input` ends (an in-process client, a socket, a pipe).
    pub async fn serve_io(
        &self,
        input: std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>,
        output: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    ) -> Result<(), GatewayError> {
        // In a task: on worker threads, a request's task then starts on the same worker, not
        // after a wake.
        let core = Arc::clone(&self.core);
        let serving = tokio::spawn(async move { stdio::serve(&core, input, output).await });
        let _abort = AbortOnDrop(vec![serving.abort_handle()]);
        match serving.await {
            Ok(outcome) => outcome,
            // A panic of the session is the gateway's bug: it goes on up, not as an input error.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled: the runtime is shutting down.
            Err(_) => Ok(()),
        }
    }

    /// The Streamable HTTP side as a service a host mounts at a path of its own in its own
    /// hyper or axum server (see [`HttpService`]); its token and session idle time are this
    /// gateway's options. Must be called within a Tokio runtime.
    pub fn http_service(&self, mount: MountOptions) -> HttpService {
        HttpService::new(&self.core, mount, &self.options)
    }

    /// Serves Streamable HTTP at `http://ADDRESS/mcp` on each of `listeners` until the future
    /// is dropped.
    pub async fn serve_http(&self, listeners: HttpListeners) {
        http::serve(
            &self.core,
            listeners,
            self.options.token.clone(),
            self.options.session_idle,
        )
        .await;
    }
}

/// Tasks aborted when dropped.
struct AbortOnDrop(Vec<tokio::task::AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// How often [`anchor_timers`] wakes: well within the tool timeout (60 s by default).
const ANCHOR_PERIOD: Duration = Duration::from_secs(20);

/// Keeps a timer in the runtime's timer wheel that is due before any call's timeout. tokio
/// wakes its driver (a write to its eventfd, then one more `epoll_wait`) whenever a timer is
/// registered that is due before the driver's next wake (tokio 1.54, `runtime/time/mod.rs`,
/// `reregister`); with the wheel otherwise empty, every call's timeout was such a timer. With
/// this one due first, it is not: the gateway makes 6 syscalls per `tools/call` (a read and a
/// write on each side, two `epoll_wait`s) instead of 7.5 (strace over 1 000 calls). Costs one
/// wake every [`ANCHOR_PERIOD`] when idle.
async fn anchor_timers() {
    loop {
        tokio::time::sleep(ANCHOR_PERIOD).await;
    }
}
