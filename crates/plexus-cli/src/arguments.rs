//! A tool's arguments as its input schema describes them: the rows of `plexus describe`'s table
//! (name, type, required, default, choices, description), and `--arg KEY=VALUE` values typed by
//! the schema rather than guessed from the text (`-a id=123` stays a string for a string
//! argument, `-a count=007` is the number 7 for an integer one, `-a count=abc` is an error before
//! anything is sent).
//!
//! The schema comes from the server: it is read defensively (any shape, only the top level's
//! `properties` and one level of `anyOf` / `oneOf`).

use serde_json::{Map, Value};

/// The JSON types, in the order a value that several allow is tried (a string last: any text is
/// one).
const TYPES: [&str; 7] = ["null", "boolean", "integer", "number", "array", "object", "string"];

/// One argument of a tool.
#[derive(Debug)]
pub(crate) struct Argument<'a> {
    /// Its name (a key of the schema's `properties`).
    pub(crate) name: &'a str,
    /// Its own schema.
    pub(crate) schema: &'a Value,
    /// Whether the schema's `required` lists it.
    pub(crate) required: bool,
}

/// The arguments `input_schema` describes, in its order.
pub(crate) fn arguments(input_schema: &Value) -> Vec<Argument<'_>> {
    let required: Vec<&str> = input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, schema)| Argument {
            name,
            schema,
            required: required.contains(&name.as_str()),
        })
        .collect()
}

/// The JSON types `schema` allows, in [`TYPES`] order: its `type` (a name or a list), else those
/// of its `anyOf` / `oneOf` branches, else those of its `enum` / `const` values. Empty: it does
/// not say.
fn types(schema: &Value) -> Vec<&'static str> {
    let mut found: Vec<&'static str> = Vec::new();
    let mut add = |name: &str| {
        if let Some(known) = TYPES.iter().find(|known| **known == name)
            && !found.contains(known)
        {
            found.push(known);
        }
    };
    match schema.get("type") {
        Some(Value::String(name)) => add(name),
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).for_each(&mut add),
        _ => {
            let branches = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|key| schema.get(*key).and_then(Value::as_array))
                .flatten();
            for branch in branches {
                match branch.get("type") {
                    Some(Value::String(name)) => add(name),
                    Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).for_each(&mut add),
                    _ => {}
                }
            }
            for value in choices(schema).unwrap_or_default() {
                add(kind(value));
            }
        }
    }
    found.sort_by_key(|name| TYPES.iter().position(|known| known == name));
    found
}

/// The values `schema` allows, if it lists them (`enum`, or a `const`).
fn choices(schema: &Value) -> Option<Vec<&Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.iter().collect());
    }
    schema.get("const").map(|value| vec![value])
}

/// The JSON type of `value` (`integer` for a whole number).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `integer`, `string | null`, `array of string`: the type column of the table.
pub(crate) fn type_label(schema: &Value) -> String {
    let types = types(schema);
    if types.is_empty() {
        return "any".to_owned();
    }
    let labels: Vec<String> = types
        .iter()
        .map(|name| match (*name, schema.get("items").map(self::types).as_deref()) {
            ("array", Some([item])) => format!("array of {item}"),
            (name, _) => name.to_owned(),
        })
        .collect();
    labels.join(" | ")
}

/// The default as JSON, if the schema gives one.
pub(crate) fn default_label(schema: &Value) -> String {
    schema.get("default").map(Value::to_string).unwrap_or_default()
}

/// The allowed values, `a, b, c`, if the schema lists them.
pub(crate) fn choices_label(schema: &Value) -> String {
    let Some(values) = choices(schema) else {
        return String::new();
    };
    let shown: Vec<String> = values
        .iter()
        .map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    shown.join(", ")
}

/// The argument's description (its `description`, else its `title`).
pub(crate) fn description(schema: &Value) -> &str {
    schema
        .get("description")
        .or_else(|| schema.get("title"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `an integer`, `a string or null`: what an error says the argument takes.
fn expected(types: &[&str]) -> String {
    let named: Vec<String> = types
        .iter()
        .map(|name| match *name {
            "null" => "null".to_owned(),
            "integer" | "array" | "object" => format!("an {name}"),
            other => format!("a {other}"),
        })
        .collect();
    named.join(" or ")
}

/// `text` read as a value of the JSON type `name`, if it is one.
fn read_as(name: &str, text: &str) -> Option<Value> {
    let trimmed = text.trim();
    match name {
        "null" => (trimmed == "null").then_some(Value::Null),
        "boolean" => match trimmed {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "integer" => trimmed
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| trimmed.parse::<u64>().map(Value::from))
            .ok(),
        "number" => read_as("integer", trimmed).or_else(|| {
            let number: f64 = trimmed.parse().ok().filter(|n: &f64| n.is_finite())?;
            serde_json::Number::from_f64(number).map(Value::Number)
        }),
        "array" | "object" => serde_json::from_str::<Value>(trimmed)
            .ok()
            .filter(|value| kind(value) == name),
        _ => Some(Value::String(text.to_owned())),
    }
}

/// `text` as the value of the argument `key` of a tool whose input schema is `input_schema`: the
/// schema's type decides (a string argument takes the text as it is, a number argument a number,
/// an array or object argument JSON); listed values must be one of the list; an argument the
/// schema does not describe is read as JSON when it parses, else as a string, unless the schema
/// allows no other arguments. `Err` says which argument and what it takes.
pub(crate) fn typed_value(input_schema: &Value, key: &str, text: &str) -> Result<Value, String> {
    let described = arguments(input_schema);
    let Some(argument) = described.iter().find(|argument| argument.name == key) else {
        if input_schema.get("additionalProperties") == Some(&Value::Bool(false)) {
            let names: Vec<&str> = described.iter().map(|argument| argument.name).collect();
            let shown = if names.is_empty() {
                "it takes none".to_owned()
            } else {
                format!("it takes {}", names.join(", "))
            };
            return Err(format!(
                "--arg {key}: the tool has no argument {key:?} ({shown}){}",
                crate::suggest::did_you_mean(key, names.iter().copied())
            ));
        }
        return Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())));
    };
    let schema = argument.schema;
    if let Some(values) = choices(schema) {
        let matching = values.iter().find(|value| match value {
            Value::String(choice) => choice == text,
            other => other.to_string() == text.trim(),
        });
        return match matching {
            Some(value) => Ok((*value).clone()),
            None => Err(format!(
                "--arg {key}: {text:?} is not one of the values it takes: {}",
                choices_label(schema)
            )),
        };
    }
    let types = types(schema);
    if types.is_empty() {
        return Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())));
    }
    types.iter().find_map(|name| read_as(name, text)).ok_or_else(|| {
        let json = if types.iter().any(|name| matches!(*name, "array" | "object")) {
            ", as JSON"
        } else {
            ""
        };
        format!(
            "--arg {key}: it takes {}{json}, and {text:?} is not one",
            expected(&types)
        )
    })
}

/// Adds each `--arg KEY=VALUE` of `args` to `arguments`, typed by `input_schema` (see
/// [`typed_value`]).
pub(crate) fn add_typed(
    arguments: &mut Map<String, Value>,
    args: &[(String, String)],
    input_schema: &Value,
) -> Result<(), String> {
    for (key, text) in args {
        let value = typed_value(input_schema, key, text)?;
        arguments.insert(key.clone(), value);
    }
    Ok(())
}

/// Splits each `--arg KEY=VALUE` at its first `=`.
pub(crate) fn split_args(args: &[String]) -> Result<Vec<(String, String)>, String> {
    args.iter()
        .map(|arg| match arg.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
            _ => Err(format!("--arg {arg:?}: expected KEY=VALUE")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The id"},
                "count": {"type": "integer", "default": 1},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "options": {"type": "object"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "level": {"enum": [1, 2, 3]},
                "note": {"type": ["string", "null"]},
                "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
                "free": {}
            },
            "required": ["id", "count"]
        })
    }

    #[test]
    fn the_schema_decides_the_type_not_the_text() {
        let schema = schema();
        let typed = |key: &str, text: &str| typed_value(&schema, key, text);
        assert_eq!(typed("id", "123"), Ok(json!("123")));
        assert_eq!(typed("count", "007"), Ok(json!(7)));
        assert_eq!(typed("count", "-3"), Ok(json!(-3)));
        assert_eq!(typed("ratio", "2.5"), Ok(json!(2.5)));
        assert_eq!(typed("ratio", "2"), Ok(json!(2)));
        assert_eq!(typed("flag", "true"), Ok(json!(true)));
        assert_eq!(typed("tags", r#"["a","b"]"#), Ok(json!(["a", "b"])));
        assert_eq!(typed("options", r#"{"a":1}"#), Ok(json!({"a": 1})));
        assert_eq!(typed("mode", "fast"), Ok(json!("fast")));
        assert_eq!(typed("level", "2"), Ok(json!(2)));
        assert_eq!(typed("note", "null"), Ok(Value::Null));
        assert_eq!(typed("note", "hello"), Ok(json!("hello")));
        assert_eq!(typed("either", "false"), Ok(json!(false)));
        assert_eq!(typed("free", "[1]"), Ok(json!([1])));
        assert_eq!(typed("free", "text"), Ok(json!("text")));
        assert_eq!(typed("unknown", "3"), Ok(json!(3)));
    }

    #[test]
    fn a_value_that_does_not_fit_names_the_argument_and_the_type() {
        let schema = schema();
        let typed = |key: &str, text: &str| typed_value(&schema, key, text).unwrap_err();
        assert_eq!(
            typed("count", "abc"),
            r#"--arg count: it takes an integer, and "abc" is not one"#
        );
        assert_eq!(
            typed("count", "1.5"),
            r#"--arg count: it takes an integer, and "1.5" is not one"#
        );
        assert_eq!(
            typed("ratio", "NaN"),
            r#"--arg ratio: it takes a number, and "NaN" is not one"#
        );
        assert_eq!(
            typed("flag", "yes"),
            r#"--arg flag: it takes a boolean, and "yes" is not one"#
        );
        assert_eq!(
            typed("tags", "a,b"),
            r#"--arg tags: it takes an array, as JSON, and "a,b" is not one"#
        );
        assert_eq!(
            typed("either", "x"),
            r#"--arg either: it takes a boolean or an integer, and "x" is not one"#
        );
        assert_eq!(
            typed("mode", "medium"),
            r#"--arg mode: "medium" is not one of the values it takes: fast, slow"#
        );
        let closed =
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": false});
        assert_eq!(
            typed_value(&closed, "txt", "hi").unwrap_err(),
            r#"--arg txt: the tool has no argument "txt" (it takes text); did you mean "text"?"#
        );
    }

    #[test]
    fn the_table_shows_each_argument() {
        let schema = schema();
        let described = arguments(&schema);
        let row = |name: &str| {
            let argument = described.iter().find(|argument| argument.name == name).unwrap();
            (
                type_label(argument.schema),
                argument.required,
                default_label(argument.schema),
                choices_label(argument.schema),
                description(argument.schema).to_owned(),
            )
        };
        assert_eq!(described[0].name, "id");
        assert_eq!(
            row("id"),
            ("string".into(), true, String::new(), String::new(), "The id".into())
        );
        assert_eq!(
            row("count"),
            ("integer".into(), true, "1".into(), String::new(), String::new())
        );
        assert_eq!(row("tags").0, "array of string");
        assert_eq!(row("mode").3, "fast, slow");
        assert_eq!(
            row("level"),
            ("integer".into(), false, String::new(), "1, 2, 3".into(), String::new())
        );
        assert_eq!(row("note").0, "null | string");
        assert_eq!(row("free").0, "any");
        assert!(arguments(&json!({"type": "object"})).is_empty());
        assert!(arguments(&json!("not a schema")).is_empty());
    }

    #[test]
    fn split_needs_a_key() {
        assert_eq!(
            split_args(&["a=1=2".to_owned(), "e=".to_owned()]),
            Ok(vec![
                ("a".to_owned(), "1=2".to_owned()),
                ("e".to_owned(), String::new())
            ])
        );
        assert_eq!(
            split_args(&["=1".to_owned()]).unwrap_err(),
            "--arg \"=1\": expected KEY=VALUE"
        );
    }

    proptest! {
        /// A string argument gets the text exactly as typed, whatever it looks like.
        #[test]
        fn a_string_argument_takes_any_text_as_it_is(text in any::<String>()) {
            prop_assert_eq!(typed_value(&schema(), "id", &text), Ok(Value::String(text.clone())));
        }

        /// An integer argument takes exactly the texts that are integers, as that integer.
        #[test]
        fn an_integer_argument_takes_integers_only(n in any::<i64>(), junk in "[a-z.]{1,4}") {
            prop_assert_eq!(typed_value(&schema(), "count", &n.to_string()), Ok(json!(n)));
            let text = format!("{n}{junk}");
            prop_assert!(typed_value(&schema(), "count", &text).is_err());
        }
    }
}
