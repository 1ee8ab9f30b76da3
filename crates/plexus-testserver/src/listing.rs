//! The lists (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`): pages
//! of `--page-size` entries behind opaque cursors, and the `--repeat-cursor` fault.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog;
use crate::server::{Session, lock, parse_params, raw};

#[derive(Deserialize)]
struct CursorParams {
    #[serde(default)]
    cursor: Option<String>,
}

impl Session {
    /// The range of entries of the page that `params` asks for, and the next cursor.
    fn page(
        &self,
        method: &str,
        params: &str,
        len: usize,
        repeat_cursor: bool,
    ) -> Result<(Range<usize>, Option<String>), ErrorObject> {
        let CursorParams { cursor } = parse_params(method, params)?;
        let start = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(&cursor, len).ok_or_else(|| {
                ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("invalid params for {method}: unknown cursor {cursor:?}"),
                )
            })?,
        };
        let page_size = self.options().page_size;
        let end = page_size.map_or(len, |size| start.saturating_add(size).min(len));
        let next = if repeat_cursor {
            Some(encode_cursor(page_size.unwrap_or(len).min(len)))
        } else {
            (end < len).then(|| encode_cursor(end))
        };
        Ok((start..end, next))
    }

    pub(crate) fn list(
        &self,
        method: &str,
        key: &str,
        entries: &[Value],
        params: &str,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let (range, next) = self.page(method, params, entries.len(), false)?;
        list_result(key, &entries[range], next)
    }

    pub(crate) fn list_tools(&self, params: &str) -> Result<Box<RawValue>, ErrorObject> {
        let builtin = &self.server.builtin_tools;
        let generated = self.options().tools;
        let dynamic = lock(&self.dynamic_tools);
        if let Some(path) = &self.options().tool_overrides {
            let mut tools: Vec<Value> = builtin.clone();
            tools.extend((1..=generated).map(|n| catalog::generated_tool(n, generated)));
            tools.extend(dynamic.iter().cloned());
            drop(dynamic);
            crate::overrides::apply(&mut tools, &crate::overrides::read(path)?);
            let (range, next) = self.page("tools/list", params, tools.len(), self.options().repeat_cursor)?;
            return list_result("tools", &tools[range], next);
        }
        let len = builtin.len() + generated + dynamic.len();
        let (range, next) = self.page("tools/list", params, len, self.options().repeat_cursor)?;
        let page: Vec<Cow<'_, Value>> = range
            .map(|i| {
                if i < builtin.len() {
                    Cow::Borrowed(&builtin[i])
                } else if i < builtin.len() + generated {
                    Cow::Owned(catalog::generated_tool(i - builtin.len() + 1, generated))
                } else {
                    Cow::Borrowed(&dynamic[i - builtin.len() - generated])
                }
            })
            .collect();
        list_result("tools", &page, next)
    }
}

fn list_result<T: Serialize>(key: &str, page: &[T], next: Option<String>) -> Result<Box<RawValue>, ErrorObject> {
    #[derive(Serialize)]
    struct Page<'a, T> {
        #[serde(flatten)]
        entries: HashMap<&'a str, &'a [T]>,
        #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
    }
    raw(&Page {
        entries: HashMap::from([(key, page)]),
        next_cursor: next,
    })
}

/// Cursors are opaque to the client; this server spells them `page:<offset>`.
fn encode_cursor(offset: usize) -> String {
    format!("page:{offset}")
}

fn decode_cursor(cursor: &str, len: usize) -> Option<usize> {
    cursor
        .strip_prefix("page:")?
        .parse()
        .ok()
        .filter(|offset| *offset <= len)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_strangers() {
        assert_eq!(decode_cursor(&encode_cursor(7), 10), Some(7));
        assert_eq!(decode_cursor(&encode_cursor(10), 10), Some(10));
        assert_eq!(decode_cursor(&encode_cursor(11), 10), None);
        assert_eq!(decode_cursor("7", 10), None);
        assert_eq!(decode_cursor("page:-1", 10), None);
    }

    #[test]
    fn list_results_have_the_entries_and_an_optional_cursor() {
        let page = [json!({"name": "a"})];
        assert_eq!(
            list_result("tools", &page, None).unwrap().get(),
            r#"{"tools":[{"name":"a"}]}"#
        );
        assert_eq!(
            list_result("prompts", &page[..0], Some("page:1".into())).unwrap().get(),
            r#"{"prompts":[],"nextCursor":"page:1"}"#
        );
    }
}
