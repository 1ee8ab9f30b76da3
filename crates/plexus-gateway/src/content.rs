//! The gateway's prompts and resources: every backend's, prompts named like tools and
//! resources by gateway URIs ([`uri`]), and the completion of their arguments by
//! the server that owns them.

use plexus::jsonrpc::ErrorObject;
use plexus::protocol::{CompleteRequestParams, CompleteResult, CompletionReference, methods};
use serde_json::{Map, Value, json};

use crate::gateway::{Gateway, hub_error, invalid_params};
use crate::uri;

impl Gateway {
    /// The prompts and resources requests.
    pub(super) async fn content(&self, method: &str, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        Ok(match method {
            methods::PROMPTS_LIST => {
                let prompts: Vec<Value> = self
                    .hub
                    .prompts()
                    .await
                    .entries
                    .into_iter()
                    .map(|entry| {
                        let mut prompt = serde_json::to_value(&entry.prompt).unwrap_or_default();
                        prompt["name"] = json!(entry.name);
                        prompt
                    })
                    .collect();
                json!({"prompts": prompts})
            }
            methods::PROMPTS_GET => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params(method, "no name"))?;
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => std::collections::BTreeMap::default(),
                    Some(arguments) => {
                        serde_json::from_value(arguments.clone()).map_err(|e| invalid_params(method, e))?
                    }
                };
                let result = self.hub.get_prompt(name, arguments).await.map_err(hub_error)?;
                serde_json::to_value(&result).unwrap_or_default()
            }
            methods::RESOURCES_LIST => {
                let resources: Vec<Value> = self
                    .hub
                    .resources()
                    .await
                    .entries
                    .into_iter()
                    .map(|entry| {
                        let mut resource = serde_json::to_value(&entry.resource).unwrap_or_default();
                        resource["uri"] = json!(uri::to_gateway(&entry.server, &entry.resource.uri));
                        resource
                    })
                    .collect();
                json!({"resources": resources})
            }
            methods::RESOURCES_TEMPLATES_LIST => {
                let templates: Vec<Value> = self
                    .hub
                    .resource_templates()
                    .await
                    .entries
                    .into_iter()
                    .map(|entry| {
                        let mut template = serde_json::to_value(&entry.template).unwrap_or_default();
                        template["uriTemplate"] = json!(uri::to_gateway(&entry.server, &entry.template.uri_template));
                        template
                    })
                    .collect();
                json!({"resourceTemplates": templates})
            }
            methods::RESOURCES_READ => {
                let given = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params(method, "no uri"))?;
                let (server, original) = uri::owner(given)?;
                let result = self.hub.read_resource_of(server, original).await.map_err(hub_error)?;
                let mut value = serde_json::to_value(&result).unwrap_or_default();
                for content in value["contents"].as_array_mut().into_iter().flatten() {
                    if let Some(inner) = content["uri"].as_str().map(str::to_owned) {
                        content["uri"] = json!(uri::to_gateway(server, &inner));
                    }
                }
                value
            }
            _ => unreachable!("only the content methods come here"),
        })
    }

    /// `completion/complete`, for a prompt by its name or a resource template by its URI as the
    /// gateway lists them, answered by the server that owns it. A server that offers no
    /// completions has no suggestions: the gateway offers completions when one of its servers
    /// does, so a client asks for any prompt.
    pub(super) async fn complete(&self, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        const METHOD: &str = methods::COMPLETION_COMPLETE;
        let mut params: CompleteRequestParams =
            serde_json::from_value(Value::Object(params.clone())).map_err(|e| invalid_params(METHOD, e))?;
        // The client's progress token and other request metadata are its own.
        params.meta = None;
        let server = match &mut params.reference {
            CompletionReference::Prompt(prompt) => {
                let entry = self
                    .hub
                    .prompts()
                    .await
                    .entries
                    .into_iter()
                    .find(|entry| entry.name == prompt.name)
                    .ok_or_else(|| invalid_params(METHOD, format!("no prompt is named {:?}", prompt.name)))?;
                prompt.name = entry.prompt.name;
                entry.server
            }
            CompletionReference::ResourceTemplate(template) => {
                let (server, original) = uri::owner(&template.uri)?;
                let server = server.to_owned();
                template.uri = original.to_owned();
                server
            }
            // No server could be chosen for it.
            CompletionReference::Unknown(_) => {
                let kind = params.reference.tag().to_owned();
                return Err(invalid_params(
                    METHOD,
                    format!("a ref of type {kind:?} names nothing of the gateway"),
                ));
            }
        };
        let client = self.backend(&server).await?;
        let result = if client.server().capabilities.completions.is_some() {
            client
                .complete(&params)
                .await
                .map_err(|e| hub_error(Gateway::server_failed(&server, e)))?
        } else {
            CompleteResult::default()
        };
        serde_json::to_value(&result).map_err(|e| {
            ErrorObject::new(
                plexus::jsonrpc::ErrorCode::INTERNAL_ERROR,
                format!("cannot encode the result: {e}"),
            )
        })
    }
}
