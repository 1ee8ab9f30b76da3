//! The gateway as a service a host mounts in its own HTTP server: a hyper
//! [`Service`](hyper::service::Service) and a tower [`Service`](tower_service::Service), so that
//! a hyper or axum app offers its MCP servers at a path of its own, with its own listener, TLS
//! and routes. It answers Streamable HTTP at whatever path the host routes to it.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::{Request, Response};

use crate::http::{Http, RequestBody, ResponseBody, Trust};

/// Who may use a mounted gateway, besides the token of
/// [`GatewayOptions::token`](crate::GatewayOptions::token).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct MountOptions {
    /// The authorities a request's `Host` and `Origin` may name: `host` (any port) or
    /// `host:port`, in any case (`localhost:3000`, `tools.example.com`). With none, `Host` is
    /// not checked and every request that carries an `Origin` (a browser's) is refused: name
    /// the app's own origin to let its pages call the gateway.
    pub allowed_hosts: Vec<String>,
}

impl MountOptions {
    /// Allows `hosts` (see [`allowed_hosts`](Self::allowed_hosts)).
    #[must_use]
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> MountOptions {
        self.allowed_hosts.extend(hosts.into_iter().map(Into::into));
        self
    }
}

/// The gateway's Streamable HTTP side as a service (see [`Gateway::http_service`]). Clones
/// share the sessions; unused sessions end after
/// [`GatewayOptions::session_idle`](crate::GatewayOptions::session_idle).
///
/// [`Gateway::http_service`]: crate::Gateway::http_service
#[derive(Clone)]
pub struct HttpService {
    state: Arc<Http>,
}

impl std::fmt::Debug for HttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpService").finish_non_exhaustive()
    }
}

/// What [`HttpService`] answers with.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

impl HttpService {
    pub(crate) fn new(
        gateway: &Arc<crate::gateway::Gateway>,
        mount: MountOptions,
        options: &crate::GatewayOptions,
    ) -> Self {
        let trust = Trust::Mounted(mount.allowed_hosts);
        HttpService {
            state: Http::start(gateway, trust, options.token.clone(), options.session_idle),
        }
    }

    fn answer<B: RequestBody>(&self, request: Request<B>) -> ResponseFuture {
        let state = Arc::clone(&self.state);
        Box::pin(async move { Ok(state.handle(request).await) })
    }
}

impl<B: RequestBody> hyper::service::Service<Request<B>> for HttpService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, request: Request<B>) -> Self::Future {
        self.answer(request)
    }
}

impl<B: RequestBody> tower_service::Service<Request<B>> for HttpService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.answer(request)
    }
}
