//! The unattended user: a [`ClientHandler`] that declares form elicitation and accepts every form
//! with its schema's defaults filled in.

use std::collections::BTreeMap;

use plexus::client::{ClientHandler, ServerRequestContext};
use plexus::jsonrpc::{ErrorCode, ErrorObject};
use plexus::protocol::{
    ClientCapabilities, ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ElicitValue, ElicitationCapability,
    RequestedSchema,
};
use serde_json::Value;

use crate::fill::fill_object;

/// Declares form-mode elicitation and answers each form with "accept", submitting every field's
/// default and, for a required field without one, a value of its type (see
/// [`fill_object`](crate::fill_object)). URL-mode requests, which need a person to open a page,
/// are declined.
#[derive(Debug, Clone, Copy, Default)]
pub struct AcceptDefaults;

#[plexus::client::async_trait]
impl ClientHandler for AcceptDefaults {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(plexus::protocol::JsonObject::new()),
                ..ElicitationCapability::default()
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        context: ServerRequestContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let _ = context;
        match params {
            ElicitRequestParams::Form(form) => form_answer(&form).map(|content| ElicitResult::accept(Some(content))),
            ElicitRequestParams::Url(_) | ElicitRequestParams::Unknown(_) => Ok(ElicitResult::decline()),
        }
    }
}

/// The values submitted for a form: its schema filled by [`fill_object`].
pub fn form_answer(form: &ElicitRequestFormParams) -> Result<BTreeMap<String, ElicitValue>, ErrorObject> {
    let schema = schema_object(&form.requested_schema)?;
    fill_object(&schema)
        .into_iter()
        .map(|(name, value)| {
            let submitted = serde_json::from_value::<ElicitValue>(value.clone()).map_err(|e| {
                ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("elicitation field \"{name}\": cannot submit {value} ({e})"),
                )
            })?;
            Ok((name, submitted))
        })
        .collect()
}

fn schema_object(schema: &RequestedSchema) -> Result<plexus::protocol::JsonObject, ErrorObject> {
    match serde_json::to_value(schema) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the requested schema encoded as {other}, not an object"),
        )),
        Err(e) => Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("could not encode the requested schema: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(params: &Value) -> ElicitRequestFormParams {
        match serde_json::from_value::<ElicitRequestParams>(params.clone()).unwrap() {
            ElicitRequestParams::Form(form) => form,
            other => panic!("not a form: {other:?}"),
        }
    }

    /// The request of the conformance suite's `elicitation-sep1034-client-defaults` scenario.
    #[test]
    fn the_suite_form_gets_every_default_with_its_type() {
        let request = form(&json!({
            "message": "Test client default value handling - please accept with defaults",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                },
                "required": []
            }
        }));
        let answer = form_answer(&request).unwrap();
        assert_eq!(
            answer,
            BTreeMap::from([
                ("age".to_owned(), ElicitValue::Integer(30)),
                ("name".to_owned(), ElicitValue::String("John Doe".to_owned())),
                ("score".to_owned(), ElicitValue::Number(95.5)),
                ("status".to_owned(), ElicitValue::String("active".to_owned())),
                ("verified".to_owned(), ElicitValue::Boolean(true)),
            ])
        );
    }

    #[test]
    fn required_fields_without_defaults_get_a_value_and_optional_ones_are_left_out() {
        let request = form(&json!({
            "message": "Who are you?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "email": {"type": "string", "format": "email"},
                    "colors": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["red", "blue"]}},
                    "nickname": {"type": "string"}
                },
                "required": ["email", "colors"]
            }
        }));
        let answer = form_answer(&request).unwrap();
        assert_eq!(
            answer,
            BTreeMap::from([
                ("colors".to_owned(), ElicitValue::StringArray(vec!["red".to_owned()])),
                ("email".to_owned(), ElicitValue::String("plexus@example.com".to_owned())),
            ])
        );
    }

    /// One form field schema of any kind the 2025-11-25 schema allows, with or without a default.
    fn field_schema() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = "[a-z]{1,8}";
        prop_oneof![
            (
                proptest::option::of(prop_oneof![Just("email"), Just("uri"), Just("date"), Just("date-time")]),
                proptest::option::of(0u64..12),
                proptest::option::of(text)
            )
                .prop_map(|(format, min_length, default)| {
                    let mut field = json!({"type": "string"});
                    if let Some(format) = format {
                        field["format"] = json!(format);
                    }
                    if let Some(min_length) = min_length {
                        field["minLength"] = json!(min_length);
                    }
                    if let Some(default) = default {
                        field["default"] = json!(default);
                    }
                    field
                }),
            (
                prop_oneof![Just("integer"), Just("number")],
                proptest::option::of(-100i32..100),
                proptest::option::of(-100i32..100)
            )
                .prop_map(|(kind, minimum, default)| {
                    let mut field = json!({"type": kind});
                    if let Some(minimum) = minimum {
                        field["minimum"] = json!(minimum);
                    }
                    if let Some(default) = default {
                        field["default"] = json!(default);
                    }
                    field
                }),
            proptest::option::of(any::<bool>()).prop_map(|default| match default {
                Some(default) => json!({"type": "boolean", "default": default}),
                None => json!({"type": "boolean"}),
            }),
            proptest::collection::vec(text, 1..4).prop_map(|choices| json!({"type": "string", "enum": choices})),
            proptest::collection::vec(text, 1..4).prop_map(|choices| {
                let options: Vec<Value> = choices.iter().map(|c| json!({"const": c, "title": c})).collect();
                json!({"type": "string", "oneOf": options})
            }),
            (proptest::collection::vec(text, 1..4), 0u64..3).prop_map(|(choices, min_items)| {
                json!({"type": "array", "minItems": min_items, "items": {"type": "string", "enum": choices}})
            }),
        ]
    }

    proptest::proptest! {
        /// Every form of the restricted schema gets an answer: each field's default, a value for
        /// each required field, and nothing else, every value submittable.
        #[test]
        fn every_form_gets_an_answer(
            fields in proptest::collection::btree_map("[a-z]{1,6}", field_schema(), 0..6),
            required_mask in proptest::collection::vec(proptest::bool::ANY, 6),
        ) {
            let required: Vec<String> = fields
                .keys()
                .zip(&required_mask)
                .filter(|(_, required)| **required)
                .map(|(name, _)| name.clone())
                .collect();
            let params = json!({
                "message": "fill me",
                "requestedSchema": {"type": "object", "properties": fields, "required": required}
            });
            let answer = form_answer(&form(&params)).unwrap();
            let expected: Vec<&String> = fields
                .iter()
                .filter(|(name, field)| field.get("default").is_some() || required.contains(name))
                .map(|(name, _)| name)
                .collect();
            proptest::prop_assert_eq!(answer.keys().collect::<Vec<_>>(), expected);
            for (name, field) in &fields {
                if let (Some(default), Some(value)) = (field.get("default"), answer.get(name)) {
                    proptest::prop_assert_eq!(&serde_json::to_value(value).unwrap(), default);
                }
            }
        }
    }

    #[test]
    fn declares_form_elicitation_only() {
        let capabilities = serde_json::to_value(AcceptDefaults.capabilities()).unwrap();
        assert_eq!(capabilities, json!({"elicitation": {"form": {}}}));
    }

    #[tokio::test]
    async fn accepts_forms_and_declines_urls() {
        let context = ServerRequestContext::new("suite", plexus::jsonrpc::RequestId::Number(1));
        let accepted = AcceptDefaults
            .elicit(
                serde_json::from_value(json!({
                    "message": "ok?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean", "default": false}}}
                }))
                .unwrap(),
                context.clone(),
            )
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&accepted).unwrap(),
            json!({"action": "accept", "content": {"ok": false}})
        );

        let declined = AcceptDefaults
            .elicit(
                serde_json::from_value(json!({
                    "mode": "url", "message": "sign in", "url": "https://example.com", "elicitationId": "e1"
                }))
                .unwrap(),
                context,
            )
            .await
            .unwrap();
        assert_eq!(serde_json::to_value(&declined).unwrap(), json!({"action": "decline"}));
    }
}
