//! Requests the server sends to the client (roots, sampling, elicitation, ping).

use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue, RequestId};
use plexus_protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestParams,
    ElicitResult, ListRootsResult, methods,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Where a server request comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerRequestContext {
    /// The server's name (as configured).
    pub server: String,
    /// The id of the server's request.
    pub request_id: RequestId,
    /// The id of the client's request on whose behalf the server asks, when that is known: in
    /// the stateless era always (the input request came in that request's `input_required`
    /// result); in the `initialize` era over Streamable HTTP (the server sent it on that
    /// request's response stream), not over stdio, SSE and WebSocket, nor for a request on the
    /// standalone stream.
    pub related_request: Option<RequestId>,
    /// The host's [`RequestOptions::tag`](crate::RequestOptions::tag) of that related request,
    /// when it had one and is still pending.
    pub tag: Option<u64>,
}

impl ServerRequestContext {
    /// The context of request `request_id` of `server`, related to no request of the client.
    pub fn new(server: impl Into<String>, request_id: RequestId) -> Self {
        ServerRequestContext {
            server: server.into(),
            request_id,
            related_request: None,
            tag: None,
        }
    }
}

/// Answers the requests a server sends to the client. Implement it with
/// [`#[async_trait]`](crate::async_trait) and `async fn`s.
///
/// Only the capabilities returned by [`capabilities`](Self::capabilities) are declared in
/// `initialize` and answered; a request for an undeclared one gets "method not found". `ping` is
/// always answered. A handler runs in its own task; a `notifications/cancelled` from the server
/// aborts it.
#[async_trait::async_trait]
pub trait ClientHandler: Send + Sync + 'static {
    /// The capabilities this handler implements (declared to the server).
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::default()
    }

    /// `roots/list`: the client's roots.
    async fn list_roots(&self, context: ServerRequestContext) -> Result<ListRootsResult, ErrorObject> {
        let _ = context;
        Err(not_supported(methods::ROOTS_LIST))
    }

    /// `sampling/createMessage`: ask the host's model.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: ServerRequestContext,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let _ = (params, context);
        Err(not_supported(methods::SAMPLING_CREATE_MESSAGE))
    }

    /// `elicitation/create`: ask the user (form or URL mode).
    async fn elicit(
        &self,
        params: ElicitRequestParams,
        context: ServerRequestContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let _ = (params, context);
        Err(not_supported(methods::ELICITATION_CREATE))
    }
}

/// A handler that declares no capability: the server's requests other than `ping` are refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHandler;

#[async_trait::async_trait]
impl ClientHandler for NoHandler {}

fn not_supported(method: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("the client does not support {method}"),
    )
}

fn decode<T: DeserializeOwned>(method: &str, params: Option<&RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
        .map_err(|e| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("invalid {method} params: {e}")))
}

fn encode<T: Serialize>(result: &T) -> Result<Box<RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(result)
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("could not encode the result: {e}")))
}

/// Routes one server request to the handler, honouring the declared capabilities.
pub(crate) async fn dispatch(
    handler: &dyn ClientHandler,
    method: &str,
    params: Option<&RawValue>,
    context: ServerRequestContext,
) -> Result<Box<RawValue>, ErrorObject> {
    let capabilities = handler.capabilities();
    match method {
        methods::PING => encode(&serde_json::json!({})),
        methods::ROOTS_LIST if capabilities.roots.is_some() => encode(&handler.list_roots(context).await?),
        methods::SAMPLING_CREATE_MESSAGE if capabilities.sampling.is_some() => {
            let params = decode(method, params)?;
            encode(&handler.create_message(params, context).await?)
        }
        methods::ELICITATION_CREATE if capabilities.elicitation.is_some() => {
            let params: ElicitRequestParams = decode(method, params)?;
            let form = match &params {
                ElicitRequestParams::Form(form) => Some(form.requested_schema.clone()),
                _ => None,
            };
            let result = handler.elicit(params, context).await?;
            // An accepted form goes to the server only when it fits the form.
            if let (Some(form), ElicitAction::Accept, Some(content)) = (&form, &result.action, &result.content)
                && let Err(misfit) = form.check_answer(content)
            {
                return Err(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("the client's answer does not fit the requested form: {misfit}"),
                ));
            }
            encode(&result)
        }
        other => Err(not_supported(other)),
    }
}

#[cfg(test)]
mod tests {
    use plexus_protocol::{Root, RootsCapability};

    use super::*;

    /// Declares roots only.
    struct RootsOnly;

    #[async_trait::async_trait]
    impl ClientHandler for RootsOnly {
        fn capabilities(&self) -> ClientCapabilities {
            ClientCapabilities {
                roots: Some(RootsCapability::default()),
                ..ClientCapabilities::default()
            }
        }

        async fn list_roots(&self, _context: ServerRequestContext) -> Result<ListRootsResult, ErrorObject> {
            Ok(ListRootsResult {
                roots: vec![Root::new("file:///work", None)],
                ..ListRootsResult::default()
            })
        }
    }

    fn context() -> ServerRequestContext {
        ServerRequestContext::new("s", RequestId::Number(1))
    }

    #[tokio::test]
    async fn declared_capabilities_are_answered_and_others_refused() {
        let roots = dispatch(&RootsOnly, methods::ROOTS_LIST, None, context())
            .await
            .unwrap();
        assert_eq!(roots.get(), r#"{"roots":[{"uri":"file:///work"}]}"#);
        let ping = dispatch(&RootsOnly, methods::PING, None, context()).await.unwrap();
        assert_eq!(ping.get(), "{}");
        let refused = dispatch(&RootsOnly, methods::ELICITATION_CREATE, None, context())
            .await
            .unwrap_err();
        assert_eq!(
            refused,
            ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                "the client does not support elicitation/create"
            )
        );
        let nothing = dispatch(&NoHandler, methods::ROOTS_LIST, None, context())
            .await
            .unwrap_err();
        assert_eq!(nothing.message, "the client does not support roots/list");
        assert_eq!(
            dispatch(&NoHandler, methods::PING, None, context())
                .await
                .unwrap()
                .get(),
            "{}"
        );
    }

    #[tokio::test]
    async fn bad_params_are_invalid_params() {
        struct Sampler;
        #[async_trait::async_trait]
        impl ClientHandler for Sampler {
            fn capabilities(&self) -> ClientCapabilities {
                ClientCapabilities {
                    sampling: Some(plexus_protocol::SamplingCapability::default()),
                    ..ClientCapabilities::default()
                }
            }
        }
        let params = RawValue::from_string(r#"{"messages": 3}"#.to_owned()).unwrap();
        let error = dispatch(&Sampler, methods::SAMPLING_CREATE_MESSAGE, Some(&params), context())
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.starts_with("invalid sampling/createMessage params: "),
            "{}",
            error.message
        );
    }

    /// Answers every form with `{"email": "Ada"}`.
    struct Careless;

    #[async_trait::async_trait]
    impl ClientHandler for Careless {
        fn capabilities(&self) -> ClientCapabilities {
            ClientCapabilities {
                elicitation: Some(plexus_protocol::ElicitationCapability::default()),
                ..ClientCapabilities::default()
            }
        }

        async fn elicit(
            &self,
            _params: ElicitRequestParams,
            _context: ServerRequestContext,
        ) -> Result<ElicitResult, ErrorObject> {
            let content = std::collections::BTreeMap::from([(
                "email".to_owned(),
                plexus_protocol::ElicitValue::String("Ada".to_owned()),
            )]);
            Ok(ElicitResult::accept(Some(content)))
        }
    }

    #[tokio::test]
    async fn an_answer_that_does_not_fit_the_form_is_not_sent() {
        let ask = |format: &str| {
            serde_json::value::to_raw_value(&serde_json::json!({
                "message": "Your email?",
                "requestedSchema": {"type": "object", "properties": {"email": {"type": "string", "format": format}}}
            }))
            .unwrap()
        };
        let refused = dispatch(&Careless, methods::ELICITATION_CREATE, Some(&ask("email")), context())
            .await
            .unwrap_err();
        assert_eq!(
            refused.message,
            "the client's answer does not fit the requested form: the field \"email\" must be an email address"
        );
        // The same answer to a form it fits is sent.
        let sent = dispatch(&Careless, methods::ELICITATION_CREATE, Some(&ask("x-any")), context())
            .await
            .unwrap();
        assert!(sent.get().contains(r#""email":"Ada""#), "{}", sent.get());
    }
}
