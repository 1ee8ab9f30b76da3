//! What the tests of `plexus_protocol::http_headers` share.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part.

use serde_json::{Map, Value, json};

/// `value` as the JSON object it is.
pub(crate) fn object(value: &Value) -> &Map<String, Value> {
    value.as_object().expect("a JSON object")
}

/// Owned `(name, value)` header pairs.
pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|&(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// An input schema with one property, `value`, whose schema is `property`.
pub(crate) fn one_property(property: Value) -> Value {
    let mut properties = Map::new();
    properties.insert("value".to_owned(), property);
    json!({"type": "object", "properties": properties})
}
