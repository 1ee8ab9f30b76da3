//! Properties of the tool-pool lockfile: the hash ignores key order and spacing and sees every
//! change of a pinned member; a diff is empty exactly when the hashes are equal; a lockfile reads
//! back as written.

use std::path::Path;

use plexus_protocol::Tool;
use plexus_tools::lock::{Definition, HASHED_FIELDS, ToolLock, diff_definitions, diff_server};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(Value::from),
        "[a-z~/ \\n\u{1b}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z/~]{1,4}", inner, 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-z$]{1,5}", json_value(), 0..4).prop_map(|members| members.into_iter().collect())
}

/// A tool with any of the pinned members, of the kinds the protocol gives them.
fn tool() -> impl Strategy<Value = Tool> {
    (
        prop::option::of("[ -~\\n]{0,40}"),
        prop::option::of("[ -~]{0,10}"),
        object(),
        prop::option::of(object()),
        prop::option::of((any::<bool>(), any::<bool>())),
        prop::option::of(prop_oneof![Just("forbidden"), Just("optional"), Just("required")]),
    )
        .prop_map(|(description, title, input, output, hints, task)| {
            let mut value = json!({"name": "t", "inputSchema": input});
            if let Some(description) = description {
                value["description"] = json!(description);
            }
            if let Some(title) = title {
                value["title"] = json!(title);
            }
            if let Some(output) = output {
                value["outputSchema"] = Value::Object(output);
            }
            if let Some((read_only, destructive)) = hints {
                value["annotations"] = json!({"readOnlyHint": read_only, "destructiveHint": destructive});
            }
            if let Some(task) = task {
                value["execution"] = json!({"taskSupport": task});
            }
            serde_json::from_value(value).unwrap()
        })
}

/// `value` with every object's members in reverse order.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(object.iter().rev().map(|(k, v)| (k.clone(), reversed(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn the_hash_ignores_key_order_and_spacing(tool in tool()) {
        let definition = Definition::of(&tool);
        let whole = serde_json::to_value(&tool).unwrap();
        let pretty: Tool = serde_json::from_str(&serde_json::to_string_pretty(&reversed(&whole)).unwrap()).unwrap();
        let parsed = Definition::of(&pretty);
        prop_assert_eq!(parsed.sha256(), definition.sha256());
        let again = Definition::from_fields(reversed(&Value::Object(definition.fields().clone())).as_object().unwrap().clone()).unwrap();
        prop_assert_eq!(again.sha256(), definition.sha256());
    }

    #[test]
    fn any_change_of_a_pinned_member_changes_the_hash(tool in tool(), field in 0..HASHED_FIELDS.len(), value in json_value()) {
        let field = HASHED_FIELDS[field];
        let before = Definition::of(&tool);
        let mut fields = before.fields().clone();
        let old = fields.insert(field.to_owned(), value.clone());
        let after = Definition::from_fields(fields).unwrap();
        let same = old.is_some_and(|old| plexus_config::canonical_json(&old) == plexus_config::canonical_json(&value));
        prop_assert_eq!(after.sha256() == before.sha256(), same);
        let mut removed = before.fields().clone();
        let had = removed.shift_remove(field).is_some();
        prop_assert_eq!(Definition::from_fields(removed).unwrap().sha256() != before.sha256(), had);
    }

    #[test]
    fn a_diff_is_empty_exactly_when_the_hashes_are_equal(a in tool(), b in tool(), same in any::<bool>()) {
        let b = if same { a.clone() } else { b };
        let (da, db) = (Definition::of(&a), Definition::of(&b));
        let fields = diff_definitions(&da, &db);
        prop_assert_eq!(fields.is_empty(), da.sha256() == db.sha256());
        // Every JSON member that changed says where.
        for field in &fields {
            if !plexus_tools::lock::is_text_field(&field.field) {
                prop_assert!(!field.changes.is_empty(), "{:?}", field);
            }
        }
        let mut lock = ToolLock::default();
        lock.lock_server("s", std::slice::from_ref(&a));
        let diff = diff_server("s", &lock.servers["s"], std::slice::from_ref(&b));
        prop_assert_eq!(diff.is_empty(), da.sha256() == db.sha256());
    }

    #[test]
    fn a_lockfile_reads_back_as_written(tools in prop::collection::vec(tool(), 0..4), servers in prop::collection::vec("[a-z]{1,6}", 0..3)) {
        let mut lock = ToolLock::default();
        for (n, server) in servers.iter().enumerate() {
            let named: Vec<Tool> = tools.iter().enumerate().map(|(i, tool)| Tool { name: format!("t{n}-{i}"), ..tool.clone() }).collect();
            lock.lock_server(server, &named);
        }
        let text = lock.to_json();
        let again = ToolLock::parse(text.as_bytes(), Path::new("/l.json")).unwrap();
        prop_assert_eq!(again.to_json(), text);
        prop_assert_eq!(again, lock);
    }
}
