//! The restricted JSON Schema of form-mode elicitation: a flat object of primitive fields.

use std::fmt;

use indexmap::IndexMap;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::JsonObject;
use crate::tagged::{decode, take_tag};

/// The schema of the fields a form-mode elicitation asks for: an object schema whose properties are
/// all primitive (no nesting).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestedSchema {
    /// The JSON Schema dialect, if the server names one.
    #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub schema_type: String,
    /// The fields, by name, in the order the server gave them (the order a form asks them in).
    pub properties: IndexMap<String, PrimitiveSchemaDefinition>,
    /// The names of the fields the user must fill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Default for RequestedSchema {
    fn default() -> Self {
        RequestedSchema::new(IndexMap::new(), None)
    }
}

impl RequestedSchema {
    /// An object schema with these fields, of which `required` must be filled.
    pub fn new(properties: IndexMap<String, PrimitiveSchemaDefinition>, required: Option<Vec<String>>) -> Self {
        RequestedSchema {
            dialect: None,
            schema_type: "object".to_owned(),
            properties,
            required,
            extra: JsonObject::new(),
        }
    }
}

open_string_enum! {
    /// The format of a string field.
    pub enum StringFormat {
        /// An email address.
        Email = "email",
        /// A URI.
        Uri = "uri",
        /// A date (`YYYY-MM-DD`).
        Date = "date",
        /// A date and time (RFC 3339).
        DateTime = "date-time",
    }
}

/// A string field (`"type": "string"` without `enum` or `oneOf`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to enter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The shortest allowed length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// The longest allowed length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// The expected format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// The default value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Whether a number field takes integers only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    #[default]
    Number,
    /// Integers only.
    Integer,
}

/// A number field (`"type": "number"` or `"integer"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `number` or `integer`.
    #[serde(rename = "type")]
    pub number_type: NumberType,
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to enter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The smallest allowed value.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub minimum: Option<f64>,
    /// The largest allowed value.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub maximum: Option<f64>,
    /// The default value.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::number::serialize_option"
    )]
    pub default: Option<f64>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A boolean field (`"type": "boolean"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to choose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The default value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A choice of one of several strings shown as they are (`"type": "string"` with `enum`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to choose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub choices: Vec<String>,
    /// The default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A choice with a display title.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TitledEnumOption {
    /// The value submitted.
    #[serde(rename = "const")]
    pub value: String,
    /// The label shown.
    pub title: String,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A choice of one of several titled strings (`"type": "string"` with `oneOf`, since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to choose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub one_of: Vec<TitledEnumOption>,
    /// The default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The 2025-06-18 form of a titled choice (`"type": "string"` with `enum` and `enumNames`), deprecated
/// in 2025-11-25.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to choose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values submitted.
    #[serde(rename = "enum")]
    pub choices: Vec<String>,
    /// The labels shown, one per choice.
    pub enum_names: Vec<String>,
    /// The default choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `items` of an untitled multi-select field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub item_type: String,
    /// The choices.
    #[serde(rename = "enum")]
    pub choices: Vec<String>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl UntitledEnumItems {
    /// String items chosen from `choices`.
    pub fn new(choices: Vec<String>) -> Self {
        UntitledEnumItems {
            item_type: "string".to_owned(),
            choices,
            extra: JsonObject::new(),
        }
    }
}

/// A choice of several strings shown as they are (`"type": "array"`, `items.enum`; since 2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to choose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest choices allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most choices allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: UntitledEnumItems,
    /// The default choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The `items` of a titled multi-select field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The choices.
    pub any_of: Vec<TitledEnumOption>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A choice of several titled strings (`"type": "array"`, `items.anyOf`; since 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// The field's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What to choose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest choices allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most choices allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: TitledEnumItems,
    /// The default choices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The schema of one form field, told apart by `type` and by which of `enum`, `enumNames`, `oneOf`,
/// `items.enum` and `items.anyOf` it has. Encode and decode through this enum: the variant structs do
/// not carry `type` (except [`NumberSchema`], where it is data).
#[derive(Debug, Clone, PartialEq)]
pub enum PrimitiveSchemaDefinition {
    /// A string.
    String(StringSchema),
    /// A number or integer.
    Number(NumberSchema),
    /// A boolean.
    Boolean(BooleanSchema),
    /// One of several strings.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// One of several titled strings.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// One of several titled strings, in the 2025-06-18 form.
    LegacyTitledEnum(LegacyTitledEnumSchema),
    /// Several of several strings.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// Several of several titled strings.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// A field schema this crate does not know, kept verbatim (`type` included).
    Unknown(JsonObject),
}

/// A variant struct written after its `type`.
#[derive(Serialize)]
struct WithType<'a, T> {
    #[serde(rename = "type")]
    schema_type: &'static str,
    #[serde(flatten)]
    schema: &'a T,
}

impl Serialize for PrimitiveSchemaDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn with_type<T: Serialize, S: Serializer>(
            schema_type: &'static str,
            schema: &T,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            WithType { schema_type, schema }.serialize(serializer)
        }
        match self {
            Self::String(schema) => with_type("string", schema, serializer),
            Self::Number(schema) => schema.serialize(serializer),
            Self::Boolean(schema) => with_type("boolean", schema, serializer),
            Self::UntitledSingleSelect(schema) => with_type("string", schema, serializer),
            Self::TitledSingleSelect(schema) => with_type("string", schema, serializer),
            Self::LegacyTitledEnum(schema) => with_type("string", schema, serializer),
            Self::UntitledMultiSelect(schema) => with_type("array", schema, serializer),
            Self::TitledMultiSelect(schema) => with_type("array", schema, serializer),
            Self::Unknown(object) => object.serialize(serializer),
        }
    }
}

const WHAT: &str = "elicitation field schema";

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SchemaVisitor;

        impl<'de> Visitor<'de> for SchemaVisitor {
            type Value = PrimitiveSchemaDefinition;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an elicitation field schema (an object with `type`)")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PrimitiveSchemaDefinition, A::Error> {
                let object = JsonObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                classify(object)
            }
        }

        deserializer.deserialize_map(SchemaVisitor)
    }
}

/// Decodes a field schema by its `type` and shape.
fn classify<E: de::Error>(mut object: JsonObject) -> Result<PrimitiveSchemaDefinition, E> {
    use PrimitiveSchemaDefinition as P;

    let schema_type = take_tag::<E>(&mut object, "type", WHAT, None)?;
    let items_have = |object: &JsonObject, key: &str| {
        object
            .get("items")
            .and_then(Value::as_object)
            .is_some_and(|items| items.contains_key(key))
    };
    match schema_type.as_ref() {
        "string" if object.contains_key("oneOf") => {
            decode(object, WHAT, "type `string` with `oneOf`").map(P::TitledSingleSelect)
        }
        "string" if object.contains_key("enum") && object.contains_key("enumNames") => {
            decode(object, WHAT, "type `string` with `enumNames`").map(P::LegacyTitledEnum)
        }
        "string" if object.contains_key("enum") => {
            decode(object, WHAT, "type `string` with `enum`").map(P::UntitledSingleSelect)
        }
        "string" => decode(object, WHAT, "type `string`").map(P::String),
        "boolean" => decode(object, WHAT, "type `boolean`").map(P::Boolean),
        "number" | "integer" => {
            let kind = if schema_type == "number" {
                "type `number`"
            } else {
                "type `integer`"
            };
            object.insert("type".to_owned(), Value::String(schema_type.into_owned()));
            decode(object, WHAT, kind).map(P::Number)
        }
        "array" if items_have(&object, "anyOf") => {
            decode(object, WHAT, "type `array` with `items.anyOf`").map(P::TitledMultiSelect)
        }
        "array" if items_have(&object, "enum") => {
            decode(object, WHAT, "type `array` with `items.enum`").map(P::UntitledMultiSelect)
        }
        _ => {
            object.insert("type".to_owned(), Value::String(schema_type.into_owned()));
            Ok(P::Unknown(object))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RequestedSchema;

    #[test]
    fn the_fields_keep_the_servers_order() {
        let text = r#"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"},"mid":{"type":"boolean"}},"required":["alpha"]}"#;
        let schema: RequestedSchema = serde_json::from_str(text).unwrap();
        let names: Vec<&str> = schema.properties.keys().map(String::as_str).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
        assert_eq!(serde_json::to_string(&schema).unwrap(), text);
    }
}
