//! The gateway's prompts and resources: every backend's, prompts named like tools and
//! resources by gateway URIs ([`uri`](super::uri)).

use plexus::jsonrpc::{ErrorCode, ErrorObject};
use serde_json::{Map, Value, json};

use super::gateway::{Gateway, hub_error, invalid_params};
use super::uri;

impl Gateway {
    /// The prompts and resources requests.
    pub(super) async fn content(&self, method: &str, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        Ok(match method {
            "prompts/list" => {
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
            "prompts/get" => {
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
            "resources/list" => {
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
            "resources/templates/list" => {
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
            "resources/read" => {
                let given = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params(method, "no uri"))?;
                let (server, original) = uri::from_gateway(given).ok_or_else(|| {
                    ErrorObject::new(
                        ErrorCode::RESOURCE_NOT_FOUND,
                        format!("{given:?} is not a resource of this gateway (plexus://SERVER/URI)"),
                    )
                })?;
                let result = self
                    .hub
                    .read_resource(&format!("@{server}:{original}"))
                    .await
                    .map_err(hub_error)?;
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
}
