//! The backends' requests to the client (roots, sampling, elicitation, and the URLs of a
//! `-32042` answer), forwarded to the gateway's client when it declared the capability, else
//! answered as not supported.

use std::sync::{Arc, OnceLock, Weak};

use plexus::client::{BoxFuture, ClientHandler, ServerRequestContext};
use plexus::jsonrpc::{ErrorCode, ErrorObject, RawValue};
use plexus::protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitRequestUrlParams, ElicitResult, ElicitationCapability, JsonObject, ListRootsResult, RootsCapability,
    SamplingCapability,
};
use plexus::tools::UrlElicitationHandler;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::gateway::Gateway;

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
    ) -> Result<R, ErrorObject> {
        let gateway = self.gateway.get().and_then(Weak::upgrade).ok_or_else(|| {
            ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("no client to forward {method} to"))
        })?;
        let params = serde_json::to_value(params)
            .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot encode {method}: {e}")))?;
        let answer: Box<RawValue> = gateway.ask(server, method, capability, &params).await?;
        serde_json::from_str(answer.get()).map_err(|e| {
            ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the gateway's client answered {method} with a malformed result: {e}"),
            )
        })
    }
}

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

    fn list_roots(&self, context: ServerRequestContext) -> BoxFuture<'_, Result<ListRootsResult, ErrorObject>> {
        Box::pin(async move {
            self.forward(
                &context.server,
                "roots/list",
                |c| c.roots.is_some(),
                &serde_json::json!({}),
            )
            .await
        })
    }

    fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: ServerRequestContext,
    ) -> BoxFuture<'_, Result<CreateMessageResult, ErrorObject>> {
        Box::pin(async move {
            self.forward(
                &context.server,
                "sampling/createMessage",
                |c| c.sampling.is_some(),
                &params,
            )
            .await
        })
    }

    fn elicit(
        &self,
        params: ElicitRequestParams,
        context: ServerRequestContext,
    ) -> BoxFuture<'_, Result<ElicitResult, ErrorObject>> {
        Box::pin(async move {
            let capability = match &params {
                ElicitRequestParams::Url(_) => supports_url,
                _ => supports_form,
            };
            self.forward(&context.server, "elicitation/create", capability, &params)
                .await
        })
    }
}

fn supports_form(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(ElicitationCapability::supports_form)
}

pub(crate) fn supports_url(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(ElicitationCapability::supports_url)
}

#[async_trait::async_trait]
impl UrlElicitationHandler for Forwarder {
    /// Asks the client (URL mode). Its "accept" is consent, not completion: the call goes on
    /// when the backend reports the elicitation complete (or the wait times out).
    async fn open(&self, server: &str, elicitation: &ElicitRequestUrlParams) -> ElicitAction {
        let request = ElicitRequestParams::Url(elicitation.clone());
        let answer: Result<ElicitResult, ErrorObject> =
            self.forward(server, "elicitation/create", supports_url, &request).await;
        match answer.map(|result| result.action) {
            Ok(ElicitAction::Accept) => std::future::pending().await,
            Ok(action) => action,
            Err(_) => ElicitAction::Decline,
        }
    }
}
