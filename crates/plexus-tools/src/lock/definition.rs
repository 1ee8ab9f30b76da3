//! A tool's canonical definition: the members of its `tools/list` entry that a lockfile pins,
//! and their SHA-256.

use plexus_config::{canonical_json, sha256_hex};
use plexus_protocol::Tool;
use serde_json::{Map, Value};

/// The members of a tool's definition that a lockfile pins, in the order they are compared and
/// shown: what the model reads (`description`, `title`, `inputSchema`, `outputSchema`) and what
/// a host decides with (`annotations`: read-only, destructive, …; `execution`: task support).
/// The tool's `name` is the key it is locked under; `icons`, `_meta` and members this version
/// of the protocol does not define are not pinned (they reach no model and decide nothing).
pub const HASHED_FIELDS: [&str; 6] = [
    "description",
    "title",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
];

/// Whether `field` is one of [`HASHED_FIELDS`] whose value is text (shown as a line diff rather
/// than by JSON pointer).
pub fn is_text_field(field: &str) -> bool {
    matches!(field, "description" | "title")
}

/// The pinned part of one tool's definition, as the server sent it (raw: text from a server is
/// kept as it came, and escaped only where it is shown), with its SHA-256.
///
/// The hash is the SHA-256, in lowercase hex, of the canonical JSON of the object holding the
/// [`HASHED_FIELDS`] the tool has (an absent member is left out, never `null`): keys sorted by
/// their bytes at every level, no whitespace, strings and numbers as `serde_json` writes them. So
/// key order and spacing never change it, and any change of a pinned member does.
///
/// ```
/// use plexus_tools::lock::Definition;
///
/// let tool = serde_json::from_value(serde_json::json!({
///     "name": "search", "description": "Searches.", "inputSchema": {"type": "object"},
///     "_meta": {"ignored": true}
/// })).unwrap();
/// let definition = Definition::of(&tool);
/// assert_eq!(definition.fields().keys().collect::<Vec<_>>(), ["description", "inputSchema"]);
/// assert_eq!(definition.sha256().len(), 64);
/// ```
#[derive(Debug, Clone)]
pub struct Definition {
    fields: Map<String, Value>,
    sha256: String,
}

impl PartialEq for Definition {
    fn eq(&self, other: &Definition) -> bool {
        self.sha256 == other.sha256
    }
}

impl Eq for Definition {}

impl Definition {
    /// The pinned members of `tool`.
    pub fn of(tool: &Tool) -> Definition {
        let fields = match serde_json::to_value(tool) {
            Ok(Value::Object(mut whole)) => HASHED_FIELDS
                .iter()
                .filter_map(|field| whole.shift_remove(*field).map(|value| ((*field).to_owned(), value)))
                .collect(),
            // A `Tool` always serializes as an object.
            _ => Map::new(),
        };
        Definition::hashed(fields)
    }

    /// The definition of the pinned members `fields` (as a lockfile holds them); fails naming the
    /// first member that is not one of [`HASHED_FIELDS`].
    pub fn from_fields(fields: Map<String, Value>) -> Result<Definition, String> {
        if let Some(other) = fields.keys().find(|key| !HASHED_FIELDS.contains(&key.as_str())) {
            return Err(format!(
                "its definition has the member {other:?}, which is not one a lockfile pins ({})",
                HASHED_FIELDS.join(", ")
            ));
        }
        Ok(Definition::hashed(fields))
    }

    fn hashed(fields: Map<String, Value>) -> Definition {
        let sha256 = sha256_hex(canonical_json(&Value::Object(fields.clone())).as_bytes());
        Definition { fields, sha256 }
    }

    /// The pinned members, as the server sent them.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The member `field`, if the tool has it.
    pub fn field(&self, field: &str) -> Option<&Value> {
        self.fields.get(field)
    }

    /// The SHA-256 of the canonical JSON of [`fields`](Self::fields), in lowercase hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The members as a JSON object with every object's keys sorted (how a lockfile writes them,
    /// so that re-locking an unchanged tool changes no byte of the file).
    pub fn sorted_json(&self) -> Value {
        sorted(&Value::Object(self.fields.clone()))
    }
}

/// `value` with the keys of every object sorted by their bytes (the depth of a tool's schema is
/// bounded by the JSON decoder's recursion limit).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut members: Vec<(&String, &Value)> = object.iter().collect();
            members.sort_unstable_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
            Value::Object(members.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_the_pinned_members_are_kept_and_hashed() {
        let a = Definition::of(&tool(json!({
            "name": "t", "description": "d", "title": "T",
            "inputSchema": {"type": "object", "properties": {"b": {}, "a": {}}},
            "annotations": {"readOnlyHint": true}, "execution": {"taskSupport": "optional"},
            "icons": [{"src": "https://example.com/i.png"}], "_meta": {"x": 1}, "other": 2
        })));
        assert_eq!(
            a.fields().keys().collect::<Vec<_>>(),
            ["description", "title", "inputSchema", "annotations", "execution"]
        );
        // Another name, icons or _meta: the same hash.
        let b = Definition::of(&tool(json!({
            "name": "u", "execution": {"taskSupport": "optional"}, "annotations": {"readOnlyHint": true},
            "inputSchema": {"properties": {"a": {}, "b": {}}, "type": "object"}, "title": "T", "description": "d"
        })));
        assert_eq!(a.sha256(), b.sha256());
        assert_eq!(
            a.sha256(),
            sha256_hex(
                br#"{"annotations":{"readOnlyHint":true},"description":"d","execution":{"taskSupport":"optional"},"inputSchema":{"properties":{"a":{},"b":{}},"type":"object"},"title":"T"}"#
            )
        );
        assert_eq!(
            a.sorted_json().to_string(),
            r#"{"annotations":{"readOnlyHint":true},"description":"d","execution":{"taskSupport":"optional"},"inputSchema":{"properties":{"a":{},"b":{}},"type":"object"},"title":"T"}"#
        );
    }

    #[test]
    fn a_member_that_is_not_pinned_is_refused() {
        let error =
            Definition::from_fields(json!({"description": "d", "name": "x"}).as_object().unwrap().clone()).unwrap_err();
        assert!(error.contains("\"name\""), "{error}");
        assert!(Definition::from_fields(Map::new()).is_ok());
    }
}
