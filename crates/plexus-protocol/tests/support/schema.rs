//! The JSON Schema of a revision, and messages encoded as the client encodes them: shared by the
//! schema tests of both eras (each uses part of it).
#![allow(dead_code)]

use plexus_jsonrpc::RequestId;
use plexus_protocol::messages::{McpNotification, McpRequest};
use plexus_protocol::{JsonObject, ProtocolVersion};
use serde::Serialize;
use serde_json::{Value, json};

use crate::support;

/// One revision's schema.
pub(crate) struct Schema {
    pub(crate) version: ProtocolVersion,
    pub(crate) root: Value,
    /// `definitions` (draft-07 revisions) or `$defs` (2020-12 revisions).
    defs_key: &'static str,
}

impl Schema {
    pub(crate) fn load(version: ProtocolVersion) -> Schema {
        let path = support::spec_dir().join(version.as_str()).join("schema.json");
        let root = support::read_json(&path);
        let defs_key = if root.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        assert!(
            root.get(defs_key).is_some_and(Value::is_object),
            "{} has no definitions",
            path.display()
        );
        Schema {
            version,
            root,
            defs_key,
        }
    }

    pub(crate) fn definition(&self, name: &str) -> Option<&Value> {
        self.root[self.defs_key].get(name)
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.definition(name).is_some()
    }

    /// Whether definition `name` declares `property`, looking into `params` first when asked.
    pub(crate) fn has_property(&self, name: &str, path: &[&str]) -> bool {
        let Some(mut node) = self.definition(name) else {
            return false;
        };
        for key in path {
            match node.get("properties").and_then(|p| p.get(*key)) {
                Some(next) => node = next,
                None => return false,
            }
        }
        true
    }

    /// The errors of `instance` against definition `name`; panics when the schema lacks it.
    pub(crate) fn errors(&self, name: &str, instance: &Value) -> Vec<String> {
        assert!(self.has(name), "the {} schema has no definition {name}", self.version);
        let wrapper = json!({
            "$schema": self.root["$schema"],
            self.defs_key: self.root[self.defs_key],
            "allOf": [{ "$ref": format!("#/{}/{name}", self.defs_key) }],
        });
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&wrapper)
            .unwrap_or_else(|err| panic!("cannot build a validator for {name} of {}: {err}", self.version));
        validator
            .iter_errors(instance)
            .map(|err| format!("{err} (at `{}`)", err.instance_path))
            .collect()
    }

    /// Checks every `(definition, message)`: what is wrong with each invalid one, one entry per
    /// message.
    pub(crate) fn invalid_messages(&self, messages: &[(&str, Value)]) -> Vec<String> {
        messages
            .iter()
            .filter_map(|(definition, message)| {
                let errors = self.errors(definition, message);
                (!errors.is_empty()).then(|| {
                    format!(
                        "{} {definition}: {message}\n    {}",
                        self.version,
                        errors.join("\n    ")
                    )
                })
            })
            .collect()
    }
}

/// A request line as the client encodes it, parsed back.
pub(crate) fn request<R: McpRequest>(id: i64, params: &R::Params) -> Value {
    let mut line = Vec::new();
    plexus_jsonrpc::encode_request(&mut line, &RequestId::Number(id), R::METHOD, Some(params)).unwrap();
    serde_json::from_slice(&line).unwrap()
}

/// A notification line as the client encodes it, parsed back.
pub(crate) fn notification<N: McpNotification>(params: &N::Params) -> Value {
    let mut line = Vec::new();
    plexus_jsonrpc::encode_notification(&mut line, N::METHOD, Some(params)).unwrap();
    serde_json::from_slice(&line).unwrap()
}

/// A result as the client encodes it.
pub(crate) fn result<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

pub(crate) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}
