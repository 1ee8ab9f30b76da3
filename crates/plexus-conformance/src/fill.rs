//! Values an unattended user submits for a JSON Schema object: each property's `default`, and for a
//! required property without one, a value of its type. Tool arguments and elicitation forms are
//! both filled this way.

use serde_json::{Map, Value};

/// The string submitted for a required string property without a default, format or choices.
pub const PLACEHOLDER_TEXT: &str = "plexus";

/// How deep nested object schemas are followed; deeper required objects are submitted empty.
const MAX_DEPTH: usize = 8;

/// The values for an object schema: every property that has a `default` gets it, every `required`
/// property without one gets a value of its type (see [`value_for`]); the others are left out.
///
/// ```
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": {
///         "a": {"type": "number"},
///         "mode": {"type": "string", "enum": ["fast", "slow"]},
///         "verbose": {"type": "boolean", "default": false},
///         "note": {"type": "string"}
///     },
///     "required": ["a", "mode"]
/// });
/// let values = plexus_conformance::fill_object(schema.as_object().unwrap());
/// assert_eq!(serde_json::Value::Object(values), serde_json::json!({"a": 1, "mode": "fast", "verbose": false}));
/// ```
pub fn fill_object(schema: &Map<String, Value>) -> Map<String, Value> {
    fill_object_at(schema, 0)
}

fn fill_object_at(schema: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    let mut values = Map::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return values;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        let Some(property) = property.as_object() else {
            continue;
        };
        if let Some(default) = property.get("default") {
            values.insert(name.clone(), default.clone());
        } else if required.contains(&name.as_str()) {
            values.insert(name.clone(), value_at(property, depth));
        }
    }
    values
}

/// A value of the property's type: its `const`, the first of its `enum` or `oneOf`/`anyOf` choices,
/// else by `type`: a string ([`PLACEHOLDER_TEXT`], or an example of its `format`, padded to its
/// `minLength`), a number or integer (`minimum`, else `exclusiveMinimum` + 1, else 1, within
/// `maximum`), `true`, an array of `minItems` of its items, an object filled by [`fill_object`], or
/// `null`.
pub fn value_for(property: &Map<String, Value>) -> Value {
    value_at(property, 0)
}

fn value_at(property: &Map<String, Value>, depth: usize) -> Value {
    if let Some(value) = property.get("default").or_else(|| property.get("const")) {
        return value.clone();
    }
    if let Some(first) = property.get("enum").and_then(Value::as_array).and_then(|c| c.first()) {
        return first.clone();
    }
    for key in ["oneOf", "anyOf"] {
        let first = property.get(key).and_then(Value::as_array).and_then(|c| c.first());
        if let Some(choice) = first.and_then(Value::as_object) {
            return value_at(choice, depth + 1);
        }
    }
    match schema_type(property) {
        Some("string") => string_value(property),
        Some("integer") => Value::from(integer_value(property)),
        Some("number") => number_value(property),
        Some("boolean") => Value::Bool(true),
        Some("array") => array_value(property, depth),
        Some("object") if depth < MAX_DEPTH => Value::Object(fill_object_at(property, depth + 1)),
        Some("object") => Value::Object(Map::new()),
        _ => Value::Null,
    }
}

/// `type`, or the first non-null entry of a list of types.
fn schema_type(property: &Map<String, Value>) -> Option<&str> {
    match property.get("type")? {
        Value::String(name) => Some(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).find(|name| *name != "null"),
        _ => None,
    }
}

fn string_value(property: &Map<String, Value>) -> Value {
    let mut text = match property.get("format").and_then(Value::as_str) {
        Some("email") => "plexus@example.com".to_owned(),
        Some("uri") => "https://example.com/plexus".to_owned(),
        Some("date") => "2025-01-01".to_owned(),
        Some("date-time") => "2025-01-01T00:00:00Z".to_owned(),
        _ => PLACEHOLDER_TEXT.to_owned(),
    };
    let min_length = property.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    while (text.chars().count() as u64) < min_length {
        text.push('x');
    }
    if let Some(max_length) = property.get("maxLength").and_then(Value::as_u64) {
        text = text
            .chars()
            .take(usize::try_from(max_length).unwrap_or(usize::MAX))
            .collect();
    }
    Value::String(text)
}

fn integer_value(property: &Map<String, Value>) -> i64 {
    let bound = |key: &str| property.get(key).and_then(Value::as_f64);
    let mut value = match (bound("minimum"), bound("exclusiveMinimum")) {
        (Some(minimum), _) => minimum.ceil(),
        (None, Some(exclusive)) => exclusive.floor() + 1.0,
        (None, None) => 1.0,
    };
    if let Some(maximum) = bound("maximum") {
        value = value.min(maximum.floor());
    }
    // Schemas give small bounds; a bound beyond i64 saturates.
    value as i64
}

fn number_value(property: &Map<String, Value>) -> Value {
    let bound = |key: &str| property.get(key).and_then(Value::as_f64);
    let mut value = match (bound("minimum"), bound("exclusiveMinimum")) {
        (Some(minimum), _) => minimum,
        (None, Some(exclusive)) => exclusive + 1.0,
        (None, None) => 1.0,
    };
    if let Some(maximum) = bound("maximum") {
        value = value.min(maximum);
    }
    // A whole number is sent as an integer, as a person typing it would.
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return Value::from(value as i64);
    }
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

fn array_value(property: &Map<String, Value>, depth: usize) -> Value {
    let count = property.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(16);
    let items = property.get("items").and_then(Value::as_object);
    // Distinct choices when the items are a choice list (a multi-select must not repeat one).
    let choices: Vec<Value> = items
        .and_then(|items| items.get("enum").and_then(Value::as_array).cloned())
        .or_else(|| {
            let options = items?.get("anyOf").or_else(|| items?.get("oneOf"))?.as_array()?;
            Some(
                options
                    .iter()
                    .filter_map(|option| option.get("const").cloned())
                    .collect(),
            )
        })
        .unwrap_or_default();
    let values = (0..count)
        .map(|index| {
            let index = usize::try_from(index).unwrap_or(usize::MAX);
            match (choices.get(index), items) {
                (Some(choice), _) => choice.clone(),
                (None, Some(items)) if depth < MAX_DEPTH => value_at(items, depth + 1),
                _ => Value::Null,
            }
        })
        .collect();
    Value::Array(values)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fill(schema: &Value) -> Value {
        Value::Object(fill_object(schema.as_object().unwrap()))
    }

    fn value(property: &Value) -> Value {
        value_for(property.as_object().unwrap())
    }

    #[test]
    fn defaults_win_and_only_required_fields_without_one_are_invented() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "inactive"},
                "verified": {"type": "boolean", "default": true},
                "a": {"type": "number"},
                "b": {"type": "number"},
                "optional": {"type": "string"}
            },
            "required": ["a", "b"]
        });
        assert_eq!(
            fill(&schema),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "inactive", "verified": true, "a": 1, "b": 1})
        );
    }

    #[test]
    fn a_schema_without_properties_gives_no_values() {
        assert_eq!(fill(&json!({"type": "object"})), json!({}));
        assert_eq!(
            fill(&json!({"type": "object", "properties": {}, "required": []})),
            json!({})
        );
        assert_eq!(fill(&json!({"properties": {"x": true}, "required": ["x"]})), json!({}));
    }

    #[test]
    fn strings_follow_format_and_length() {
        assert_eq!(value(&json!({"type": "string"})), json!(PLACEHOLDER_TEXT));
        assert_eq!(
            value(&json!({"type": "string", "format": "email"})),
            json!("plexus@example.com")
        );
        assert_eq!(value(&json!({"type": "string", "format": "date"})), json!("2025-01-01"));
        assert_eq!(value(&json!({"type": "string", "minLength": 9})), json!("plexusxxx"));
        assert_eq!(value(&json!({"type": "string", "maxLength": 3})), json!("ple"));
        assert_eq!(value(&json!({"type": ["null", "string"]})), json!(PLACEHOLDER_TEXT));
    }

    #[test]
    fn numbers_respect_their_bounds() {
        assert_eq!(value(&json!({"type": "integer"})), json!(1));
        assert_eq!(value(&json!({"type": "integer", "minimum": 5})), json!(5));
        assert_eq!(value(&json!({"type": "integer", "minimum": 2.5})), json!(3));
        assert_eq!(value(&json!({"type": "integer", "exclusiveMinimum": 7})), json!(8));
        assert_eq!(value(&json!({"type": "integer", "maximum": -3})), json!(-3));
        assert_eq!(value(&json!({"type": "number", "minimum": 0.5})), json!(0.5));
        assert_eq!(value(&json!({"type": "number", "maximum": 0})), json!(0));
    }

    #[test]
    fn choices_take_the_first() {
        assert_eq!(value(&json!({"type": "string", "enum": ["x", "y"]})), json!("x"));
        assert_eq!(value(&json!({"const": 4})), json!(4));
        assert_eq!(
            value(&json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]})),
            json!("a")
        );
        assert_eq!(
            value(&json!({"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["r", "g", "b"]}})),
            json!(["r", "g"])
        );
        assert_eq!(
            value(&json!({"type": "array", "minItems": 1, "items": {"anyOf": [{"const": "k", "title": "K"}]}})),
            json!(["k"])
        );
        assert_eq!(value(&json!({"type": "array", "items": {"type": "string"}})), json!([]));
    }

    #[test]
    fn nested_objects_are_filled_and_bounded() {
        let schema = json!({
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
            "required": ["inner"]
        });
        assert_eq!(fill(&schema), json!({"inner": {"n": 1}}));

        // A self-similar schema nested deeper than the bound ends in an empty object, not a loop.
        let mut deep = json!({"type": "object"});
        for _ in 0..20 {
            deep = json!({"type": "object", "properties": {"next": deep}, "required": ["next"]});
        }
        let mut filled = fill(&deep);
        let mut levels = 0;
        while let Some(next) = filled.get("next").cloned() {
            filled = next;
            levels += 1;
        }
        assert_eq!(levels, MAX_DEPTH + 1);
        assert_eq!(filled, json!({}));
    }

    #[test]
    fn unknown_types_give_null() {
        assert_eq!(value(&json!({})), Value::Null);
        assert_eq!(value(&json!({"type": "null"})), Value::Null);
    }
}
