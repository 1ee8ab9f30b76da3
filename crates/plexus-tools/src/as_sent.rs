//! Results that need no processing, kept as their server wrote them. A result of text blocks
//! only, without `structuredContent`, whose text is within the output limit is one that
//! [`process`](crate::result::process) hands on unchanged; a host that forwards results (the
//! gateway) takes its `content` as the server's bytes instead of decoding every block and
//! encoding it again. Every other result, and any result that would not decode, goes the
//! processed way, which reports what is wrong with it.

use std::fmt;

use plexus_protocol::{Annotations, ResultType, Tool};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::result::{ProcessedResult, ResultSettings};

/// A tool's result that needs no processing: its `content` (text blocks only) as its server
/// wrote it, and whether the tool reported a failure. What the result had besides (`_meta`,
/// fields of later revisions) is left out, as a processed result leaves it out.
#[derive(Debug, Clone)]
pub struct AsSentResult {
    content: Box<RawValue>,
    is_error: bool,
}

/// A call's result for a host that passes results on: as sent when it needs no processing,
/// processed otherwise.
#[derive(Debug, Clone)]
pub enum CallOutcome {
    /// Text within the limit, as the server wrote it.
    AsSent(AsSentResult),
    /// Processed: images fitted, binary content saved, output over the limit cut.
    Processed(ProcessedResult),
}

impl AsSentResult {
    /// `raw` (a `tools/call` result) as sent, when processing would leave it unchanged for
    /// `tool` under `settings`: every block of its `content` is a text block, it has no
    /// `structuredContent`, and its text is at most [`ResultSettings::max_chars`] (counted by its
    /// bytes as JSON, which are never fewer than its characters). `None` for any other result,
    /// and for one that is not a well-formed result: the processed way decodes it and says what
    /// is wrong.
    pub fn of(raw: &RawValue, tool: Option<&Tool>, settings: &ResultSettings) -> Option<AsSentResult> {
        let shape: Shape<'_> = serde_json::from_str(raw.get()).ok()?;
        if shape.structured_content.is_some() || shape.meta.is_some_and(|meta| !meta.get().starts_with('{')) {
            return None;
        }
        let blocks: TextBlocks = serde_json::from_str(shape.content.get()).ok()?;
        if !blocks.all_text || blocks.text_bytes > settings.max_chars(tool) {
            return None;
        }
        Some(AsSentResult {
            content: shape.content.to_owned(),
            is_error: shape.is_error.unwrap_or(false),
        })
    }

    /// The `content` array as the server wrote it.
    pub fn content(&self) -> &RawValue {
        &self.content
    }

    /// Whether the tool reported a failure (`isError`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }
}

impl Serialize for AsSentResult {
    /// `{"content": …, "isError": …}`, as a processed result of the same blocks is written.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut result = serializer.serialize_struct("AsSentResult", 2)?;
        result.serialize_field("content", &self.content)?;
        result.serialize_field("isError", &self.is_error)?;
        result.end()
    }
}

/// The fields of a `tools/call` result that decide whether it passes as sent, borrowed from it;
/// typed where the result's own decoding checks them, so that what passes would decode.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shape<'a> {
    #[serde(borrow)]
    content: &'a RawValue,
    #[serde(borrow)]
    structured_content: Option<&'a RawValue>,
    is_error: Option<bool>,
    #[allow(dead_code)] // read to be checked: an unknown `resultType` does not decode.
    result_type: Option<ResultType>,
    #[serde(borrow, rename = "_meta")]
    meta: Option<&'a RawValue>,
}

/// A `content` array read without keeping it: whether every block is a well-formed text block,
/// and the bytes of their texts.
struct TextBlocks {
    all_text: bool,
    text_bytes: usize,
}

impl<'de> Deserialize<'de> for TextBlocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Blocks;
        impl<'de> Visitor<'de> for Blocks {
            type Value = TextBlocks;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of content blocks")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut blocks: A) -> Result<TextBlocks, A::Error> {
                let mut read = TextBlocks {
                    all_text: true,
                    text_bytes: 0,
                };
                while let Some(block) = blocks.next_element::<Block>()? {
                    match block {
                        Block::Text(bytes) => read.text_bytes = read.text_bytes.saturating_add(bytes),
                        // The rest is skipped: the result goes the processed way.
                        Block::Other => read.all_text = false,
                    }
                }
                Ok(read)
            }
        }
        deserializer.deserialize_seq(Blocks)
    }
}

/// One block of `content`: a well-formed text block (the bytes of its text as JSON, quotes left
/// out), or anything else.
enum Block {
    Text(usize),
    Other,
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Block;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<Block, A::Error> {
                let (mut kind, mut text, mut valid) = (None::<&'de str>, None::<&'de RawValue>, true);
                while let Some(key) = fields.next_key::<&'de str>()? {
                    match key {
                        "type" => valid &= kind.replace(fields.next_value()?).is_none(),
                        "text" => valid &= text.replace(fields.next_value()?).is_none(),
                        // Checked as the block's decoding checks them.
                        "annotations" => drop(fields.next_value::<Option<Annotations>>()?),
                        "_meta" => {
                            let meta: &'de RawValue = fields.next_value()?;
                            valid &= meta.get().starts_with('{') || meta.get() == "null";
                        }
                        _ => drop(fields.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(match (kind, text) {
                    (Some("text"), Some(text)) if valid && text.get().starts_with('"') => {
                        Block::Text(text.get().len() - 2)
                    }
                    _ => Block::Other,
                })
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

#[cfg(test)]
mod tests {
    use plexus_protocol::CallToolResult;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::result::process;
    use crate::store::ResultStore;

    fn raw(value: &Value) -> Box<RawValue> {
        RawValue::from_string(value.to_string()).unwrap()
    }

    fn as_sent(value: &Value) -> Option<AsSentResult> {
        AsSentResult::of(&raw(value), None, &ResultSettings::default())
    }

    /// What the processed way hands on for `value`: its content, structured content and
    /// `isError`, written as the gateway writes a processed result.
    fn processed(value: &Value) -> Value {
        let home = tempfile::tempdir().unwrap();
        let result: CallToolResult = serde_json::from_value(value.clone()).unwrap();
        let processed = process(
            result,
            None,
            &ResultStore::new(home.path(), "s"),
            &ResultSettings::default(),
        )
        .unwrap();
        json!({"content": processed.content, "isError": processed.is_error})
    }

    #[test]
    fn text_passes_as_the_server_wrote_it() {
        let result = json!({
            "content": [
                {"type": "text", "text": "a \"quoted\" line\n", "annotations": {"audience": ["user"], "priority": 0.5}},
                {"type": "text", "text": "é", "_meta": {"k": 1}, "later": [1, 2]},
            ],
            "isError": true,
            "_meta": {"trace": "x"},
            "resultType": "complete",
            "structuredContent": null,
            "somethingNew": {"a": 1},
        });
        let passed = as_sent(&result).expect("text only, within the limit");
        assert!(passed.is_error());
        assert_eq!(passed.content().get(), result["content"].to_string());
        let written = serde_json::to_value(&passed).unwrap();
        assert_eq!(written, processed(&result));
        assert_eq!(
            serde_json::to_string(&passed).unwrap(),
            format!(r#"{{"content":{},"isError":true}}"#, result["content"])
        );
    }

    #[test]
    fn what_processing_changes_or_checks_is_not_passed() {
        let text = json!({"type": "text", "text": "t"});
        for result in [
            json!({"content": [text, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
            json!({"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]}),
            json!({"content": [{"type": "resource", "resource": {"uri": "x:/a", "text": "t"}}]}),
            json!({"content": [{"type": "resource_link", "uri": "x:/a", "name": "a"}]}),
            json!({"content": [text], "structuredContent": {"a": 1}}),
            json!({"content": [text], "structuredContent": 5}),
        ] {
            assert!(as_sent(&result).is_none(), "{result}");
        }
    }

    #[test]
    fn a_result_that_would_not_decode_is_left_to_the_processed_way() {
        for result in [
            json!({}),
            json!({"content": {}}),
            json!({"content": [5]}),
            json!({"content": [{"text": "no type"}]}),
            json!({"content": [{"type": "text"}]}),
            json!({"content": [{"type": "text", "text": 5}]}),
            json!({"content": [{"type": "text", "text": "t", "annotations": {"priority": "high"}}]}),
            json!({"content": [{"type": "text", "text": "t", "_meta": []}]}),
            json!({"content": [{"type": "text", "text": "t"}], "isError": "yes"}),
            json!({"content": [{"type": "text", "text": "t"}], "_meta": 1}),
            json!({"content": [{"type": "text", "text": "t"}], "resultType": "later"}),
            json!([]),
        ] {
            assert!(as_sent(&result).is_none(), "{result}");
        }
        // Twice the same member of a block.
        let twice = RawValue::from_string(r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#.to_owned()).unwrap();
        assert!(AsSentResult::of(&twice, None, &ResultSettings::default()).is_none());
    }

    #[test]
    fn text_over_the_limit_is_processed() {
        let settings = ResultSettings {
            max_output_tokens: 10,
            ..ResultSettings::default()
        };
        let at_limit = raw(
            &json!({"content": [{"type": "text", "text": "x".repeat(20)}, {"type": "text", "text": "y".repeat(20)}]}),
        );
        assert!(AsSentResult::of(&at_limit, None, &settings).is_some());
        let over = raw(
            &json!({"content": [{"type": "text", "text": "x".repeat(20)}, {"type": "text", "text": "y".repeat(21)}]}),
        );
        assert!(AsSentResult::of(&over, None, &settings).is_none());
        // Counted by its bytes as JSON: 40 characters written as 41 bytes are not passed.
        let escaped = raw(&json!({"content": [{"type": "text", "text": format!("{}\n", "x".repeat(39))}]}));
        assert!(AsSentResult::of(&escaped, None, &settings).is_none());
    }

    fn text_block() -> impl Strategy<Value = Value> {
        (
            any::<String>(),
            proptest::option::of(0.0f64..=1.0),
            proptest::option::of(any::<u8>()),
        )
            .prop_map(|(text, priority, meta)| {
                let mut block = json!({"type": "text", "text": text});
                if let Some(priority) = priority {
                    block["annotations"] = json!({"priority": priority});
                }
                if let Some(meta) = meta {
                    block["_meta"] = json!({"n": meta});
                }
                block
            })
    }

    proptest! {
        /// A result of text blocks within the limit passes, and is written as the processed way
        /// writes it; one over the limit does not pass.
        #[test]
        fn passing_changes_nothing(blocks in proptest::collection::vec(text_block(), 0..6), is_error in any::<Option<bool>>()) {
            let mut result = json!({"content": blocks});
            if let Some(is_error) = is_error {
                result["isError"] = json!(is_error);
            }
            let passed = as_sent(&result).expect("text within the limit");
            prop_assert_eq!(serde_json::to_value(&passed).unwrap(), processed(&result));
            let settings = ResultSettings { max_output_tokens: 1, ..ResultSettings::default() };
            let chars: usize = result["content"].as_array().unwrap().iter().map(|b| b["text"].as_str().unwrap().chars().count()).sum();
            if chars > 4 {
                prop_assert!(AsSentResult::of(&raw(&result), None, &settings).is_none());
            }
        }
    }
}
