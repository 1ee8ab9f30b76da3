//! The quick requests of a session about resources, prompts, completions and logging:
//! `resources/read`, `resources/subscribe` and `resources/unsubscribe` (the `initialize` era's
//! subscriptions; the stateless era has `subscriptions/listen`, see `listen`), `prompts/get`,
//! `completion/complete` and `logging/setLevel`.

use std::borrow::Cow;

use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::catalog::{self, CompletionRef};
use crate::server::{LogLevel, Session, empty, lock, parse_params, raw};

#[derive(Deserialize)]
struct UriParams<'a> {
    #[serde(borrow)]
    uri: Cow<'a, str>,
}

#[derive(Deserialize)]
struct GetPromptParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Map<String, Value>,
}

#[derive(Deserialize)]
struct CompleteParams {
    #[serde(rename = "ref")]
    reference: CompleteRef,
    argument: CompleteArgument,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum CompleteRef {
    #[serde(rename = "ref/prompt")]
    Prompt { name: String },
    #[serde(rename = "ref/resource")]
    Resource { uri: String },
}

#[derive(Deserialize)]
struct CompleteArgument {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct SetLevelParams {
    level: LogLevel,
}

impl Session {
    pub(crate) fn read_resource(&self, params: &str) -> Result<Box<RawValue>, ErrorObject> {
        let UriParams { uri } = parse_params("resources/read", params)?;
        if let Some(text) = self.server.skills.as_ref().and_then(|skills| skills.file(&uri)) {
            return raw(&json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}));
        }
        let contents = catalog::read_resource(&uri).ok_or_else(|| resource_not_found(&uri))?;
        raw(&json!({"contents": [contents]}))
    }

    pub(crate) fn subscribe(&self, params: &str, subscribe: bool) -> Result<Box<RawValue>, ErrorObject> {
        let method = if subscribe {
            "resources/subscribe"
        } else {
            "resources/unsubscribe"
        };
        let UriParams { uri } = parse_params(method, params)?;
        let mut state = lock(&self.state);
        if subscribe {
            if catalog::read_resource(&uri).is_none() {
                return Err(resource_not_found(&uri));
            }
            state.subscriptions.insert(uri.into_owned());
        } else {
            state.subscriptions.remove(&*uri);
        }
        empty()
    }

    pub(crate) fn get_prompt(params: &str) -> Result<Box<RawValue>, ErrorObject> {
        let GetPromptParams { name, arguments } = parse_params("prompts/get", params)?;
        let messages = catalog::prompt_messages(&name, &arguments).map_err(|e| {
            ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("invalid params for prompts/get: {e}"),
            )
        })?;
        raw(&json!({"description": format!("The {name} prompt."), "messages": messages}))
    }

    pub(crate) fn complete(params: &str) -> Result<Box<RawValue>, ErrorObject> {
        let CompleteParams { reference, argument } = parse_params("completion/complete", params)?;
        let (reference, what) = match &reference {
            CompleteRef::Prompt { name } => (CompletionRef::Prompt(name), format!("prompt {name:?}")),
            CompleteRef::Resource { uri } => (CompletionRef::Resource(uri), format!("resource template {uri:?}")),
        };
        let values = catalog::complete(&reference, &argument.name, &argument.value).ok_or_else(|| {
            ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("invalid params for completion/complete: unknown {what}"),
            )
        })?;
        raw(&json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
    }

    pub(crate) fn set_level(&self, params: &str) -> Result<Box<RawValue>, ErrorObject> {
        let SetLevelParams { level } = parse_params("logging/setLevel", params)?;
        lock(&self.state).log_level = Some(level);
        empty()
    }
}

/// -32002: no resource has the URI `uri`.
pub(crate) fn resource_not_found(uri: &str) -> ErrorObject {
    let mut error = ErrorObject::new(ErrorCode::RESOURCE_NOT_FOUND, format!("resource not found: {uri}"));
    error.data = raw(&json!({"uri": uri})).ok();
    error
}
