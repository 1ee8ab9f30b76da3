//! The backends' requests to the client (roots, sampling, elicitation, and the URLs of a
//! `-32042` answer), forwarded to the gateway's client when it declared the capability, else
//! answered as not supported: they go to the client whose call caused them, and are refused,
//! with an error the backend sees, when that client cannot be told.
//!
//! Which call caused a request: over Streamable HTTP the backend sends it on that call's
//! response stream, and the client library hands back the call's tag; the URLs of a `-32042`
//! answer belong to the call that got it. Otherwise (stdio, SSE, WebSocket, or a request on the
//! standalone stream) only the calls in flight tell: the one client with calls on that backend,
//! or the gateway's only client (of the `initialize` era: a client of the stateless era is
//! sent no request).
//!
//! A client of the stateless era is asked in its request's result instead: see
//! [`rounds`](crate::rounds).

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use plexus::client::{ClientHandler, ServerRequestContext};
use plexus::jsonrpc::{ErrorCode, ErrorObject, RawValue, RequestId};
use plexus::protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitRequestUrlParams, ElicitResult, ElicitationCapability, JsonObject, ListRootsResult, RootsCapability,
    SamplingCapability, methods,
};
use plexus::tools::UrlElicitationHandler;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::gateway::Gateway;
use crate::session::{Session, Sink, lock, notification, trim};

/// How long a forwarded request (an elicitation a person answers) may wait for the client.
pub(super) const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// The error a backend gets when the gateway's client went away before it answered.
pub(super) fn went_away() -> ErrorObject {
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the gateway's client went away")
}

/// The error a backend gets when the gateway's client did not answer its `method` in time.
pub(super) fn not_answered(method: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!(
            "the gateway's client did not answer {method} within {} s",
            ASK_TIMEOUT.as_secs()
        ),
    )
}

/// Declares roots, sampling and elicitation to every backend and forwards their requests.
#[derive(Default)]
pub(crate) struct Forwarder {
    gateway: OnceLock<Weak<Gateway>>,
}

impl Forwarder {
    /// Starts forwarding to `gateway` (the Hub is made before it).
    pub(crate) fn attach(&self, gateway: &Arc<Gateway>) {
        let _ = self.gateway.set(Arc::downgrade(gateway));
    }

    async fn forward<P: Serialize, R: DeserializeOwned>(
        &self,
        server: &str,
        method: &str,
        capability: fn(&ClientCapabilities) -> bool,
        params: &P,
        tag: Option<u64>,
    ) -> Result<R, ErrorObject> {
        let gateway = self.gateway.get().and_then(Weak::upgrade).ok_or_else(|| {
            ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("no client to forward {method} to"))
        })?;
        ask_as(&gateway, server, method, capability, params, tag).await
    }
}

/// [`Gateway::ask`] with typed params and result.
async fn ask_as<P: Serialize, R: DeserializeOwned>(
    gateway: &Gateway,
    server: &str,
    method: &str,
    capability: fn(&ClientCapabilities) -> bool,
    params: &P,
    tag: Option<u64>,
) -> Result<R, ErrorObject> {
    let params = serde_json::to_value(params)
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot encode {method}: {e}")))?;
    let answer: Box<RawValue> = gateway.ask(server, method, capability, &params, tag).await?;
    serde_json::from_str(answer.get()).map_err(|e| {
        ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the gateway's client answered {method} with a malformed result: {e}"),
        )
    })
}

#[async_trait::async_trait]
impl ClientHandler for Forwarder {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability::default()),
            sampling: Some(SamplingCapability::default()),
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: Some(JsonObject::new()),
                ..ElicitationCapability::default()
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn list_roots(&self, context: ServerRequestContext) -> Result<ListRootsResult, ErrorObject> {
        self.forward(
            &context.server,
            methods::ROOTS_LIST,
            |c| c.roots.is_some(),
            &serde_json::json!({}),
            context.tag,
        )
        .await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: ServerRequestContext,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.forward(
            &context.server,
            methods::SAMPLING_CREATE_MESSAGE,
            |c| c.sampling.is_some(),
            &params,
            context.tag,
        )
        .await
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        context: ServerRequestContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let capability = match &params {
            ElicitRequestParams::Url(_) => supports_url,
            _ => supports_form,
        };
        self.forward(
            &context.server,
            methods::ELICITATION_CREATE,
            capability,
            &params,
            context.tag,
        )
        .await
    }
}

/// Whether a client takes form-mode elicitations.
fn supports_form(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(ElicitationCapability::supports_form)
}

/// Whether a client takes URL-mode elicitations.
fn supports_url(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(ElicitationCapability::supports_url)
}

/// Asks the client (URL mode) for the URLs of a `-32042` answer. Its "accept" is consent, not
/// completion: the call goes on when the backend reports the elicitation complete (or the wait
/// times out).
async fn open_url(
    gateway: &Gateway,
    server: &str,
    elicitation: &ElicitRequestUrlParams,
    tag: Option<u64>,
) -> ElicitAction {
    let request = ElicitRequestParams::Url(elicitation.clone());
    let answer: Result<ElicitResult, ErrorObject> = ask_as(
        gateway,
        server,
        methods::ELICITATION_CREATE,
        supports_url,
        &request,
        tag,
    )
    .await;
    match answer.map(|result| result.action) {
        Ok(ElicitAction::Accept) => std::future::pending().await,
        Ok(action) => action,
        Err(_) => ElicitAction::Decline,
    }
}

#[async_trait::async_trait]
impl UrlElicitationHandler for Forwarder {
    async fn open(&self, server: &str, elicitation: &ElicitRequestUrlParams) -> ElicitAction {
        self.open_for_call(server, elicitation, None).await
    }

    /// To the client whose call got the `-32042` answer (the gateway tags each call).
    async fn open_for_call(
        &self,
        server: &str,
        elicitation: &ElicitRequestUrlParams,
        tag: Option<u64>,
    ) -> ElicitAction {
        match self.gateway.get().and_then(Weak::upgrade) {
            Some(gateway) => open_url(&gateway, server, elicitation, tag).await,
            None => ElicitAction::Decline,
        }
    }
}

/// The most URL elicitations remembered at once for passing on their completion; past it, a
/// completion goes where [`Gateway::client_for`] says.
const MAX_SHOWN_URLS: usize = 256;

impl Gateway {
    /// The client that hears from `server`, with the stream its messages go to: the client
    /// whose call is tagged `tag` (the call the backend's request relates to), while it runs;
    /// else the one client whose calls run on `server` (its newest call's stream); else, when
    /// no call runs there, the gateway's only client (its own stream). Never a guess: when
    /// several clients have calls running on `server`, or no call runs there and there is not
    /// exactly one client, the error says why.
    fn client_for(&self, server: &str, tag: Option<u64>) -> Result<(Arc<Session>, Sink), String> {
        if let Some(tag) = tag {
            let running = lock(&self.running);
            let call = running.iter().find(|call| call.tag == tag);
            if let Some((session, sink)) = call.and_then(|call| Some((call.session.upgrade()?, call.sink.clone()))) {
                return Ok((session, sink));
            }
        }
        let mut callers: Vec<(Arc<Session>, Sink)> = Vec::new();
        for call in lock(&self.running).iter().rev() {
            let Some(session) = call.session.upgrade() else {
                continue;
            };
            let on_server = call.runs_on(&self.hub, server);
            if on_server && !callers.iter().any(|(known, _)| Arc::ptr_eq(known, &session)) {
                callers.push((session, call.sink.clone()));
            }
        }
        let cannot_tell = "the gateway cannot tell which of its clients this request is for";
        if callers.len() > 1 {
            return Err(format!(
                "{} clients of the gateway have calls running on server {server:?}; {cannot_tell}",
                callers.len()
            ));
        }
        if let Some(caller) = callers.pop() {
            return Ok(caller);
        }
        let clients: Vec<Arc<Session>> = lock(&self.sessions)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|session| !session.is_stateless())
            .take(2)
            .collect();
        match <[_; 1]>::try_from(clients) {
            Ok([only]) => {
                let sink = lock(&only.out).clone();
                let sink = sink.ok_or("the gateway's only client has no stream open for requests")?;
                Ok((only, sink))
            }
            Err(clients) => Err(format!(
                "no call runs on server {server:?} and the gateway has {} clients; {cannot_tell}",
                if clients.is_empty() { "no" } else { "several" }
            )),
        }
    }

    /// Passes a backend's `notifications/elicitation/complete` on to the client that was shown
    /// the URL (the one [`ask`](Self::ask) chose), if it declared URL-mode elicitation.
    pub(crate) fn forward_completion(&self, server: &str, params: &Value) {
        let shown = params
            .get("elicitationId")
            .and_then(Value::as_str)
            .and_then(|id| lock(&self.shown_urls).remove(id))
            .and_then(|(session, sink)| Some((session.upgrade()?, sink)));
        let (session, sink) = match shown.map_or_else(|| self.client_for(server, None), Ok) {
            Ok(target) => target,
            Err(why) => {
                tracing::warn!("notifications/elicitation/complete from server {server:?} is dropped: {why}");
                return;
            }
        };
        if lock(&session.capabilities).as_ref().is_some_and(supports_url) {
            let _ = sink.try_send(notification(methods::ELICITATION_COMPLETE, Some(params)));
        }
    }

    /// Sends `method` with `params` to the client whose call caused it (see
    /// [`client_for`](Self::client_for)), if it declared `capability`, and waits for its
    /// answer; when that client cannot be told, the backend gets an error that says why.
    pub(crate) async fn ask(
        &self,
        server: &str,
        method: &str,
        capability: fn(&ClientCapabilities) -> bool,
        params: &Value,
        tag: Option<u64>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let (session, sink) = self.client_for(server, tag).map_err(|why| {
            tracing::warn!("{method} from server {server:?} is refused: {why}");
            ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("{method} refused: {why}"))
        })?;
        if !lock(&session.capabilities).as_ref().is_some_and(capability) {
            return Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("the gateway's client does not support {method}"),
            ));
        }
        if let Some(asker) = session.asker() {
            return asker.ask(method, params).await;
        }
        self.remember_url(&session, &sink, params);
        let number = session.next_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("plexus-{number}"));
        // The backend's progress token becomes one of the gateway's: tokens of two backends
        // may be the same.
        let mut params = params.clone();
        let progress = params.pointer_mut("/_meta/progressToken").map(|token| {
            let ours = format!("plexus-progress-{number}");
            let theirs = std::mem::replace(token, json!(ours));
            lock(&session.progress).insert(ours.clone(), (server.to_owned(), theirs));
            ours
        });
        let (answer, answered) = oneshot::channel();
        lock(&session.asked).insert(id.clone(), answer);
        // If the backend gives up first (it cancelled, or timed out), the client is told too.
        let mut pending = Asked {
            session: &session,
            sink: &sink,
            id: Some(id.clone()),
            progress,
        };
        let mut line = Vec::with_capacity(128);
        let _ = plexus::jsonrpc::encode_request(&mut line, &id, method, Some(&params));
        if sink.send(trim(line)).await.is_err() {
            return Err(went_away());
        }
        let outcome = match tokio::time::timeout(ASK_TIMEOUT, answered).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(went_away()),
            Err(_) => return Err(not_answered(method)),
        };
        pending.id = None;
        outcome
    }
}

impl Gateway {
    /// Remembers which client is shown a URL elicitation (`params` of `elicitation/create` in
    /// URL mode), for passing on its completion (within [`MAX_SHOWN_URLS`]).
    fn remember_url(&self, session: &Arc<Session>, sink: &Sink, params: &Value) {
        let Some(id) = params
            .get("elicitationId")
            .and_then(Value::as_str)
            .filter(|_| params.get("mode").and_then(Value::as_str) == Some("url"))
        else {
            return;
        };
        let mut shown = lock(&self.shown_urls);
        if shown.len() >= MAX_SHOWN_URLS {
            shown.retain(|_, (session, _)| session.strong_count() > 0);
        }
        if shown.len() < MAX_SHOWN_URLS {
            shown.insert(id.to_owned(), (Arc::downgrade(session), sink.clone()));
        }
    }
}

/// A request sent to a client for a backend: dropping it forgets its progress token and, unless
/// it was answered, the request too, sending the client `notifications/cancelled`.
struct Asked<'a> {
    session: &'a Session,
    sink: &'a Sink,
    id: Option<RequestId>,
    progress: Option<String>,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        if let Some(token) = self.progress.take() {
            lock(&self.session.progress).remove(&token);
        }
        let Some(id) = self.id.take() else { return };
        if lock(&self.session.asked).remove(&id).is_some() {
            let params = json!({"requestId": id, "reason": "the server no longer waits for the answer"});
            let _ = self.sink.try_send(notification(methods::CANCELLED, Some(&params)));
        }
    }
}
