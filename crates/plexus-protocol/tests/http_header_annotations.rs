//! The `x-mcp-header` annotation rules of `plexus_protocol::http_headers`, with the tools of the
//! conformance scenario `http-invalid-tool-headers`: every invalid annotation makes its tool
//! invalid, with the reason and where.

mod header_support;

use header_support::{object, one_property, pairs};
use plexus_protocol::http_headers::{
    FoundType, InvalidHeaderAnnotation, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, ParamHeaders,
};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Invalid annotations: the `http-invalid-tool-headers` scenario
// ---------------------------------------------------------------------------------------------

fn invalid_tool_headers_tools() -> Value {
    // CONF alpha.12 `http-invalid-tool-headers`, descriptions left out.
    json!([
        {"name": "valid_tool", "inputSchema": {"type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}},
        {"name": "invalid_empty_header", "inputSchema": {"type": "object",
            "properties": {"value": {"type": "string", "x-mcp-header": ""}}, "required": ["value"]}},
        {"name": "invalid_object_header", "inputSchema": {"type": "object",
            "properties": {"data": {"type": "object", "x-mcp-header": "Data"}}, "required": ["data"]}},
        {"name": "invalid_array_header", "inputSchema": {"type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}},
            "required": ["items"]}},
        {"name": "invalid_null_header", "inputSchema": {"type": "object",
            "properties": {"nil": {"type": "null", "x-mcp-header": "Nil"}}, "required": ["nil"]}},
        {"name": "invalid_number_header", "inputSchema": {"type": "object",
            "properties": {"score": {"type": "number", "x-mcp-header": "Score"}}, "required": ["score"]}},
        {"name": "invalid_duplicate_same_case", "inputSchema": {"type": "object",
            "properties": {"field1": {"type": "string", "x-mcp-header": "Region"},
                           "field2": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["field1", "field2"]}},
        {"name": "invalid_duplicate_diff_case", "inputSchema": {"type": "object",
            "properties": {"field1": {"type": "string", "x-mcp-header": "MyField"},
                           "field2": {"type": "string", "x-mcp-header": "myfield"}},
            "required": ["field1", "field2"]}},
        {"name": "invalid_space_in_name", "inputSchema": {"type": "object",
            "properties": {"value": {"type": "string", "x-mcp-header": "My Region"}}, "required": ["value"]}},
        {"name": "invalid_colon_in_name", "inputSchema": {"type": "object",
            "properties": {"value": {"type": "string", "x-mcp-header": "Region:Primary"}}, "required": ["value"]}},
        {"name": "invalid_non_ascii_name", "inputSchema": {"type": "object",
            "properties": {"value": {"type": "string", "x-mcp-header": "Région"}}, "required": ["value"]}},
        {"name": "invalid_control_char_name", "inputSchema": {"type": "object",
            "properties": {"value": {"type": "string", "x-mcp-header": "Region\t1"}}, "required": ["value"]}}
    ])
}

fn wrong_type(pointer: &str, name: &str, found: &str) -> InvalidHeaderAnnotation {
    InvalidHeaderAnnotation::WrongType {
        pointer: pointer.to_owned(),
        name: name.to_owned(),
        found: FoundType::Named(found.to_owned()),
    }
}

fn not_a_token(name: &str, character: char) -> InvalidHeaderAnnotation {
    InvalidHeaderAnnotation::NotAToken {
        pointer: "/properties/value".to_owned(),
        name: name.to_owned(),
        character,
    }
}

fn duplicate(name: &str, other_name: &str) -> InvalidHeaderAnnotation {
    InvalidHeaderAnnotation::Duplicate {
        pointer: "/properties/field2".to_owned(),
        name: name.to_owned(),
        other_pointer: "/properties/field1".to_owned(),
        other_name: other_name.to_owned(),
    }
}

#[test]
fn invalid_tool_headers_scenario() {
    let tools = invalid_tool_headers_tools();
    let results: Vec<(&str, Result<ParamHeaders, InvalidHeaderAnnotation>)> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap(),
                ParamHeaders::from_input_schema(&tool["inputSchema"]),
            )
        })
        .collect();
    let expected = [
        (
            "invalid_empty_header",
            InvalidHeaderAnnotation::Empty {
                pointer: "/properties/value".to_owned(),
            },
        ),
        (
            "invalid_object_header",
            wrong_type("/properties/data", "Data", "object"),
        ),
        (
            "invalid_array_header",
            wrong_type("/properties/items", "Items", "array"),
        ),
        ("invalid_null_header", wrong_type("/properties/nil", "Nil", "null")),
        (
            "invalid_number_header",
            wrong_type("/properties/score", "Score", "number"),
        ),
        ("invalid_duplicate_same_case", duplicate("Region", "Region")),
        ("invalid_duplicate_diff_case", duplicate("myfield", "MyField")),
        ("invalid_space_in_name", not_a_token("My Region", ' ')),
        ("invalid_colon_in_name", not_a_token("Region:Primary", ':')),
        ("invalid_non_ascii_name", not_a_token("Région", 'é')),
        ("invalid_control_char_name", not_a_token("Region\t1", '\t')),
    ];
    assert_eq!(results.len(), 1 + expected.len());

    // The valid tool is kept, with its header.
    let (name, valid) = &results[0];
    assert_eq!(*name, "valid_tool");
    let valid = valid.as_ref().unwrap();
    let arguments = json!({"region": "us-west1"});
    assert_eq!(
        valid.headers(object(&arguments)),
        pairs(&[("Mcp-Param-Region", "us-west1")])
    );

    for ((name, result), (expected_name, expected_error)) in results[1..].iter().zip(expected) {
        assert_eq!(*name, expected_name);
        assert_eq!(result.as_ref().unwrap_err(), &expected_error, "{name}");
    }
}

#[test]
fn invalid_annotation_messages() {
    let message = |schema: Value| ParamHeaders::from_input_schema(&schema).unwrap_err().to_string();
    let tools = invalid_tool_headers_tools();
    let schema_of = |index: usize| tools[index]["inputSchema"].clone();
    assert_eq!(
        message(schema_of(1)),
        "the `x-mcp-header` annotation at /properties/value is empty"
    );
    assert_eq!(
        message(schema_of(5)),
        "the `x-mcp-header` annotation \"Score\" at /properties/score is on a property whose `type` is \"number\"; \
         only string, integer and boolean properties can be mirrored into a header"
    );
    assert_eq!(
        message(schema_of(7)),
        "the `x-mcp-header` annotation \"myfield\" at /properties/field2 repeats \"MyField\" at /properties/field1 \
         (header names are case-insensitive)"
    );
    assert_eq!(
        message(schema_of(11)),
        "the `x-mcp-header` annotation \"Region\\t1\" at /properties/value is not an HTTP header name: it contains '\\t'"
    );
    assert_eq!(
        message(json!({"properties": {"a": {"items": {"type": "string", "x-mcp-header": "A"}}}})),
        "the `x-mcp-header` annotation at /properties/a/items is not statically reachable: its path goes through \
         `items` (only a chain of `properties` may lead to an annotated property)"
    );
    assert_eq!(
        message(json!({"type": "string", "x-mcp-header": "Root"})),
        "the `x-mcp-header` annotation is on the input schema's root, not on a property"
    );
    assert_eq!(
        message(one_property(json!({"x-mcp-header": 7, "type": "string"}))),
        "the `x-mcp-header` annotation at /properties/value is a JSON number, not a string"
    );
}

#[test]
fn every_tchar_is_accepted() {
    let name = "!#$%&'*+-.^_`|~09AZaz";
    let headers =
        ParamHeaders::from_input_schema(&one_property(json!({"type": "boolean", "x-mcp-header": name}))).unwrap();
    assert_eq!(
        headers.iter().next().unwrap().header_name(),
        format!("Mcp-Param-{name}")
    );
    for bad in [
        '"', '(', ')', ',', '/', ';', '<', '=', '>', '?', '@', '[', '\\', ']', '{', '}', '\u{7f}', '\0',
    ] {
        let annotation = format!("A{bad}");
        let error =
            ParamHeaders::from_input_schema(&one_property(json!({"type": "string", "x-mcp-header": annotation})))
                .unwrap_err();
        assert_eq!(error, not_a_token(&annotation, bad));
    }
}

#[test]
fn type_must_be_exactly_one_allowed_name() {
    let error = |property: Value| ParamHeaders::from_input_schema(&one_property(property)).unwrap_err();
    let InvalidHeaderAnnotation::WrongType { found, .. } = error(json!({"x-mcp-header": "A"})) else {
        panic!()
    };
    assert_eq!(found, FoundType::Missing);
    assert_eq!(found.to_string(), "missing");
    let InvalidHeaderAnnotation::WrongType { found, .. } =
        error(json!({"type": ["string", "null"], "x-mcp-header": "A"}))
    else {
        panic!()
    };
    assert_eq!(found, FoundType::Other(r#"["string","null"]"#.to_owned()));
    let InvalidHeaderAnnotation::WrongType { found, .. } = error(json!({"type": ["string"], "x-mcp-header": "A"}))
    else {
        panic!()
    };
    assert_eq!(found, FoundType::Other(r#"["string"]"#.to_owned()));
    let InvalidHeaderAnnotation::WrongType { found, .. } = error(json!({"type": "String", "x-mcp-header": "A"})) else {
        panic!()
    };
    assert_eq!(found, FoundType::Named("String".to_owned()));
    // A long odd `type` is quoted cut short.
    let long: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
    let InvalidHeaderAnnotation::WrongType { found, .. } = error(json!({"type": long, "x-mcp-header": "A"})) else {
        panic!()
    };
    let FoundType::Other(text) = found else { panic!() };
    assert_eq!(text.chars().count(), 101);
    assert!(text.ends_with('…'));
}

#[test]
fn non_string_annotations() {
    for (annotation, found) in [
        (json!(null), "null"),
        (json!(true), "boolean"),
        (json!(1), "number"),
        (json!(["A"]), "array"),
        (json!({"A": 1}), "object"),
    ] {
        let error =
            ParamHeaders::from_input_schema(&one_property(json!({"type": "string", "x-mcp-header": annotation})))
                .unwrap_err();
        assert_eq!(
            error,
            InvalidHeaderAnnotation::NotAString {
                pointer: "/properties/value".to_owned(),
                found
            }
        );
    }
}

#[test]
fn unreachable_positions_are_rejected() {
    let annotated = json!({"type": "string", "x-mcp-header": "A"});
    let cases = [
        (json!({"items": annotated}), "/items", "items"),
        (json!({"items": [{}, annotated]}), "/items/1", "items"),
        (json!({"prefixItems": [annotated]}), "/prefixItems/0", "prefixItems"),
        (
            json!({"additionalItems": annotated}),
            "/additionalItems",
            "additionalItems",
        ),
        (json!({"contains": annotated}), "/contains", "contains"),
        (
            json!({"unevaluatedItems": annotated}),
            "/unevaluatedItems",
            "unevaluatedItems",
        ),
        (
            json!({"additionalProperties": annotated}),
            "/additionalProperties",
            "additionalProperties",
        ),
        (
            json!({"unevaluatedProperties": annotated}),
            "/unevaluatedProperties",
            "unevaluatedProperties",
        ),
        (json!({"propertyNames": annotated}), "/propertyNames", "propertyNames"),
        (
            json!({"patternProperties": {"^a/b~": annotated}}),
            "/patternProperties/^a~1b~0",
            "patternProperties",
        ),
        (json!({"oneOf": [annotated]}), "/oneOf/0", "oneOf"),
        (json!({"anyOf": [{}, {}, annotated]}), "/anyOf/2", "anyOf"),
        (json!({"allOf": [annotated]}), "/allOf/0", "allOf"),
        (json!({"not": annotated}), "/not", "not"),
        (json!({"if": annotated}), "/if", "if"),
        (json!({"then": annotated}), "/then", "then"),
        (json!({"else": annotated}), "/else", "else"),
        (json!({"$defs": {"a": annotated}}), "/$defs/a", "$defs"),
        (
            json!({"definitions": {"a": annotated}}),
            "/definitions/a",
            "definitions",
        ),
        (
            json!({"dependentSchemas": {"a": annotated}}),
            "/dependentSchemas/a",
            "dependentSchemas",
        ),
        (
            json!({"dependencies": {"a": annotated, "b": ["a"]}}),
            "/dependencies/a",
            "dependencies",
        ),
        (json!({"contentSchema": annotated}), "/contentSchema", "contentSchema"),
        // Properties of an unreachable schema are unreachable too; the first keyword is named.
        (
            json!({"properties": {"list": {"type": "array", "items": {"type": "object", "properties": {"a": annotated}}}}}),
            "/properties/list/items/properties/a",
            "items",
        ),
        (
            json!({"properties": {"a": {"anyOf": [{"not": {"properties": {"b": annotated}}}]}}}),
            "/properties/a/anyOf/0/not/properties/b",
            "anyOf",
        ),
        (
            json!({"properties": {"a/b": {"additionalProperties": annotated}}}),
            "/properties/a~1b/additionalProperties",
            "additionalProperties",
        ),
    ];
    for (schema, pointer, keyword) in cases {
        let error = ParamHeaders::from_input_schema(&schema).unwrap_err();
        assert_eq!(
            error,
            InvalidHeaderAnnotation::Unreachable {
                pointer: pointer.to_owned(),
                keyword
            },
            "{schema}"
        );
    }
    // `$ref` is not followed: the annotation it points to is unreachable where it is.
    let schema = json!({"properties": {"a": {"$ref": "#/$defs/region"}}, "$defs": {"region": annotated}});
    assert_eq!(
        ParamHeaders::from_input_schema(&schema).unwrap_err(),
        InvalidHeaderAnnotation::Unreachable {
            pointer: "/$defs/region".to_owned(),
            keyword: "$defs"
        }
    );
    // On the root.
    assert_eq!(
        ParamHeaders::from_input_schema(&json!({"type": "object", "x-mcp-header": "A"})).unwrap_err(),
        InvalidHeaderAnnotation::AtRoot
    );
}

#[test]
fn one_invalid_annotation_spoils_the_schema() {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "tags": {"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}}
    }});
    assert!(matches!(
        ParamHeaders::from_input_schema(&schema),
        Err(InvalidHeaderAnnotation::Unreachable { keyword: "items", .. })
    ));
}

#[test]
fn the_first_duplicate_in_schema_order_is_reported() {
    // Many annotations (the sorted path), two duplicate groups: the earliest repeat is named.
    let mut properties = Map::new();
    for i in 0..40 {
        properties.insert(
            format!("p{i}"),
            json!({"type": "string", "x-mcp-header": format!("H{i}")}),
        );
    }
    properties.insert("late".to_owned(), json!({"type": "string", "x-mcp-header": "h3"}));
    properties.insert("later".to_owned(), json!({"type": "string", "x-mcp-header": "H1"}));
    properties.insert("latest".to_owned(), json!({"type": "string", "x-mcp-header": "h1"}));
    let schema = json!({"type": "object", "properties": properties});
    assert_eq!(
        ParamHeaders::from_input_schema(&schema).unwrap_err(),
        InvalidHeaderAnnotation::Duplicate {
            pointer: "/properties/late".to_owned(),
            name: "h3".to_owned(),
            other_pointer: "/properties/p3".to_owned(),
            other_name: "H3".to_owned(),
        }
    );
    // Duplicates across nesting levels count too.
    let schema = json!({"properties": {
        "a": {"type": "object", "properties": {"b": {"type": "string", "x-mcp-header": "Zone"}}},
        "zone": {"type": "string", "x-mcp-header": "ZONE"}
    }});
    assert_eq!(
        ParamHeaders::from_input_schema(&schema).unwrap_err(),
        InvalidHeaderAnnotation::Duplicate {
            pointer: "/properties/zone".to_owned(),
            name: "ZONE".to_owned(),
            other_pointer: "/properties/a/properties/b".to_owned(),
            other_name: "Zone".to_owned(),
        }
    );
}

#[test]
fn the_walk_is_bounded() {
    // Too deep: built by hand, deeper than the JSON parser would nest.
    let mut schema = json!({"type": "string"});
    for _ in 0..=MAX_SCHEMA_DEPTH {
        schema = json!({"items": schema});
    }
    let error = ParamHeaders::from_input_schema(&schema).unwrap_err();
    let InvalidHeaderAnnotation::TooDeep { pointer, limit } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(*limit, MAX_SCHEMA_DEPTH);
    assert_eq!(pointer.matches("/items").count(), MAX_SCHEMA_DEPTH + 1);
    assert!(
        error
            .to_string()
            .starts_with("the input schema nests subschemas more than 128 deep (at /items/items/")
    );
    // Just within the limit: fine.
    let mut schema = json!({"type": "string"});
    for _ in 0..MAX_SCHEMA_DEPTH {
        schema = json!({"not": schema});
    }
    assert!(ParamHeaders::from_input_schema(&schema).unwrap().is_empty());

    // Too many subschemas.
    let branches: Vec<Value> = (0..MAX_SCHEMA_NODES).map(|_| json!({})).collect();
    let error = ParamHeaders::from_input_schema(&json!({ "anyOf": branches })).unwrap_err();
    assert_eq!(
        error,
        InvalidHeaderAnnotation::TooLarge {
            limit: MAX_SCHEMA_NODES
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "the input schema has more than {MAX_SCHEMA_NODES} subschemas; its `x-mcp-header` annotations cannot be checked"
        )
    );
    let branches: Vec<Value> = (0..MAX_SCHEMA_NODES - 1).map(|_| json!({})).collect();
    assert!(ParamHeaders::from_input_schema(&json!({ "anyOf": branches })).is_ok());
}
