//! Tagged objects (content blocks and the other `type`-tagged enums) decode alike whether the tag
//! comes first (straight from the input) or later (through an object read whole), and a tag given
//! twice is refused rather than half-kept.

use plexus_protocol::{CallToolResult, ContentBlock};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A text block's fields other than `type`, in the order given, with the tag spliced in at
/// `at` (clamped), written as JSON text.
fn block_text(fields: &[(String, Value)], at: usize) -> String {
    let mut entries: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("{}:{value}", Value::String(name.clone())))
        .collect();
    entries.insert(at.min(entries.len()), r#""type":"text""#.to_owned());
    format!("{{{}}}", entries.join(","))
}

fn extra_field() -> impl Strategy<Value = (String, Value)> {
    (
        "[a-z]{1,6}".prop_filter("not a known field", |name| {
            !["type", "text", "annotations"].contains(&name.as_str())
        }),
        prop_oneof![
            any::<i32>().prop_map(Value::from),
            "[ -~]{0,8}".prop_map(Value::from),
            Just(json!({"nested": [1, 2]})),
        ],
    )
}

proptest! {
    #[test]
    fn a_block_decodes_the_same_wherever_its_tag_is(
        text in "[ -~]{0,16}",
        extras in proptest::collection::vec(extra_field(), 0..4),
        at in 0usize..6,
    ) {
        let mut fields = vec![("text".to_owned(), Value::String(text.clone()))];
        let mut seen = std::collections::HashSet::new();
        fields.extend(extras.into_iter().filter(|(name, _)| seen.insert(name.clone())));
        let first: ContentBlock = serde_json::from_str(&block_text(&fields, 0)).unwrap();
        let later: ContentBlock = serde_json::from_str(&block_text(&fields, at)).unwrap();
        // From a `Value` too (the deserializer lends no text).
        let from_value: ContentBlock = serde_json::from_str::<Value>(&block_text(&fields, at))
            .map(|value| serde_json::from_value(value).unwrap())
            .unwrap();
        prop_assert_eq!(&first, &later);
        prop_assert_eq!(&first, &from_value);
        let ContentBlock::Text(block) = first else { panic!("not a text block") };
        prop_assert_eq!(block.text, text);
        prop_assert_eq!(block.extra.len(), fields.len() - 1);
    }
}

#[test]
fn a_tag_given_twice_is_refused() {
    let error = serde_json::from_str::<ContentBlock>(r#"{"type":"text","text":"a","type":"image"}"#).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid content block (type `text`): duplicate field `type` at line 1 column 32"
    );
    let error = serde_json::from_str::<ContentBlock>(r#"{"type":"chart","type":"text"}"#).unwrap_err();
    assert_eq!(
        error.to_string(),
        "content block: duplicate field `type` at line 1 column 22"
    );
}

#[test]
fn an_unknown_kind_keeps_its_fields_in_the_order_they_came() {
    let block: ContentBlock = serde_json::from_str(r#"{"type":"chart","series":[1,2],"title":"t"}"#).unwrap();
    let ContentBlock::Unknown(object) = &block else {
        panic!("not unknown: {block:?}")
    };
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "series", "title"]);
    assert_eq!(block.tag(), "chart");
    assert_eq!(
        serde_json::to_string(&block).unwrap(),
        r#"{"type":"chart","series":[1,2],"title":"t"}"#
    );
}

#[test]
fn blocks_with_the_tag_first_or_later_decode_in_one_result() {
    let result: CallToolResult =
        serde_json::from_str(r#"{"content":[{"type":"text","text":"a"},{"text":"b","type":"text"}]}"#).unwrap();
    let texts: Vec<Option<&str>> = result.content.iter().map(ContentBlock::as_text).collect();
    assert_eq!(texts, [Some("a"), Some("b")]);
    let error = serde_json::from_str::<CallToolResult>(r#"{"content":[{"type":"text","text":"a"},{}]}"#).unwrap_err();
    assert_eq!(
        error.to_string(),
        "content block: missing field `type` at line 1 column 41"
    );
}
