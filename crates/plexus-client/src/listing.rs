//! Whole lists (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`,
//! the skills extension's `skills/list`),
//! following `nextCursor` within bounds, with the caching hints of the stateless era: `ttlMs`
//! (the shortest of the pages', an absent one read as 0) and `cacheScope` (`private` when any page
//! says so).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use plexus_jsonrpc::RawValue;
use plexus_protocol::{
    CacheScope, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, Resource, ResourceTemplate, Tool, methods,
};
use serde::de::DeserializeOwned;

use crate::ClientError;
use crate::client::{Client, MAX_LIST_PAGES};
use crate::error::ListProblem;
use crate::request::{RequestOptions, request};

/// A whole list and how long it may be cached.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Listing<T> {
    /// The items of every page, in order.
    pub items: Vec<T>,
    /// How long the list stays fresh, in the stateless era: the shortest `ttlMs` of its pages,
    /// an absent or negative one read as 0. `None` in the initialize era, whose lists stay fresh
    /// until the server says they changed.
    pub ttl: Option<Duration>,
    /// Who may reuse it: `private` when any page said so, else `public` when one did.
    pub scope: Option<CacheScope>,
    /// The items left out because they do not decode.
    left_out: Vec<LeftOut>,
}

/// One page of a list method.
pub(crate) trait Page: DeserializeOwned {
    type Item: DeserializeOwned;
    const METHOD: &'static str;
    /// The member that holds the items.
    const ITEMS: &'static str;
    /// Its items, the next cursor, and its `ttlMs` and `cacheScope`.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>, Option<i64>, Option<CacheScope>);
    /// Replaces its items.
    fn set_items(&mut self, items: Vec<Self::Item>);
}

macro_rules! page {
    ($page:ty, $item:ty, $method:expr, $items:ident, $member:literal) => {
        impl Page for $page {
            type Item = $item;
            const METHOD: &'static str = $method;
            const ITEMS: &'static str = $member;
            fn into_parts(self) -> (Vec<$item>, Option<String>, Option<i64>, Option<CacheScope>) {
                (self.$items, self.next_cursor, self.ttl_ms, self.cache_scope)
            }
            fn set_items(&mut self, items: Vec<$item>) {
                self.$items = items;
            }
        }
    };
}

page!(ListToolsResult, Tool, methods::TOOLS_LIST, tools, "tools");
page!(
    ListResourcesResult,
    Resource,
    methods::RESOURCES_LIST,
    resources,
    "resources"
);
page!(
    ListResourceTemplatesResult,
    ResourceTemplate,
    methods::RESOURCES_TEMPLATES_LIST,
    resource_templates,
    "resourceTemplates"
);
page!(ListPromptsResult, Prompt, methods::PROMPTS_LIST, prompts, "prompts");
page!(
    plexus_protocol::skills::ListSkillsResult,
    plexus_protocol::skills::Skill,
    methods::SKILLS_LIST,
    skills,
    "skills"
);

/// An item a page could not decode: its name (or `#N`, its place in the page) and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LeftOut {
    pub(crate) name: String,
    pub(crate) error: String,
}

/// Decodes one page of `P`. When the page as a whole does not decode, its items are decoded one
/// by one, so that one bad item (a tool without a name, a schema nested deeper than the
/// decoder's recursion limit) is left out rather than losing the server's whole list; the page
/// is an error only when what is not an item is wrong.
pub(crate) fn decode_page<P: Page>(raw: &RawValue) -> Result<(P, Vec<LeftOut>), ClientError> {
    let whole = match serde_json::from_str::<P>(raw.get()) {
        Ok(page) => return Ok((page, Vec::new())),
        Err(whole) => whole,
    };
    let invalid = |source: serde_json::Error| ClientError::InvalidResult {
        method: P::METHOD.to_owned(),
        source: std::sync::Arc::new(source),
    };
    // The members as raw text: skipping a value has no recursion limit, decoding one does.
    let Ok(mut members) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get()) else {
        return Err(invalid(whole));
    };
    let Some(Ok(items)) = members
        .remove(P::ITEMS)
        .map(|items| serde_json::from_str::<Vec<Box<RawValue>>>(items.get()))
    else {
        return Err(invalid(whole));
    };
    members.insert(
        P::ITEMS.to_owned(),
        RawValue::from_string("[]".to_owned()).map_err(invalid)?,
    );
    let rest = serde_json::to_string(&members).map_err(invalid)?;
    let mut page: P = serde_json::from_str(&rest).map_err(|_| invalid(whole))?;
    let mut decoded = Vec::with_capacity(items.len());
    let mut left_out = Vec::new();
    for (at, item) in items.iter().enumerate() {
        match serde_json::from_str::<P::Item>(item.get()) {
            Ok(item) => decoded.push(item),
            Err(error) => left_out.push(LeftOut {
                name: item_name(item).unwrap_or_else(|| format!("#{at}")),
                error: error.to_string(),
            }),
        }
    }
    page.set_items(decoded);
    Ok((page, left_out))
}

/// The `name` member of an item that does not decode, when it is a string.
fn item_name(item: &RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    serde_json::from_str::<Named>(item.get()).ok().map(|named| named.name)
}

impl Client {
    /// Every tool, following `nextCursor` (a repeated cursor is an error, not a loop). Over
    /// Streamable HTTP in the stateless era, a tool whose `x-mcp-header` annotations are invalid
    /// is left out (see [`rejected_tools`](Self::rejected_tools)).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.tools_listing().await.map(|listing| listing.items)
    }

    /// [`list_tools`](Self::list_tools) with the list's caching hints.
    pub async fn tools_listing(&self) -> Result<Listing<Tool>, ClientError> {
        let mut listing = self.listing::<ListToolsResult>().await?;
        self.shared
            .record_undecodable_tools(std::mem::take(&mut listing.left_out), true);
        if let Some(wire) = self.shared.stateless() {
            wire.check_tools(&self.shared.name, &mut listing.items, true);
        }
        Ok(listing)
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.resources_listing().await.map(|listing| listing.items)
    }

    /// [`list_resources`](Self::list_resources) with the list's caching hints.
    pub async fn resources_listing(&self) -> Result<Listing<Resource>, ClientError> {
        self.listing::<ListResourcesResult>().await
    }

    /// Every resource template.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.resource_templates_listing().await.map(|listing| listing.items)
    }

    /// [`list_resource_templates`](Self::list_resource_templates) with the list's caching hints.
    pub async fn resource_templates_listing(&self) -> Result<Listing<ResourceTemplate>, ClientError> {
        self.listing::<ListResourceTemplatesResult>().await
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.prompts_listing().await.map(|listing| listing.items)
    }

    /// [`list_prompts`](Self::list_prompts) with the list's caching hints.
    pub async fn prompts_listing(&self) -> Result<Listing<Prompt>, ClientError> {
        self.listing::<ListPromptsResult>().await
    }

    /// Every skill entry (`skills/list`; the extension's support is the caller's to check) and
    /// how long the list may be cached.
    pub(crate) async fn skills_listing(&self) -> Result<Listing<plexus_protocol::skills::Skill>, ClientError> {
        self.listing::<plexus_protocol::skills::ListSkillsResult>().await
    }

    /// Every page of `P`'s method, within [`MAX_LIST_PAGES`] and the session's byte limit.
    async fn listing<P: Page>(&self) -> Result<Listing<P::Item>, ClientError> {
        let method = P::METHOD;
        let stateless = self.shared.stateless().is_some();
        let mut listing = Listing {
            items: Vec::new(),
            ttl: None,
            scope: None,
            left_out: Vec::new(),
        };
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut bytes = 0;
        for _ in 0..MAX_LIST_PAGES {
            let raw = request(
                &self.shared,
                method,
                Some(&PaginatedRequestParams::page(cursor.clone())),
                &RequestOptions::default(),
                self.request_timeout,
                true,
            )
            .await?;
            bytes += raw.get().len();
            if bytes > self.max_list_bytes {
                return Err(ClientError::Pagination {
                    method: method.to_owned(),
                    problem: ListProblem::TooLarge {
                        limit: self.max_list_bytes,
                    },
                });
            }
            let (page, left_out) = decode_page::<P>(&raw)?;
            drop(raw);
            for item in left_out {
                tracing::warn!(server = %self.shared.name, method, item = %item.name, "left out: {}", item.error);
                listing.left_out.push(item);
            }
            let (mut items, next, ttl_ms, scope) = page.into_parts();
            listing.items.append(&mut items);
            if stateless {
                let ttl = Duration::from_millis(plexus_protocol::effective_ttl_ms(ttl_ms));
                listing.ttl = Some(listing.ttl.map_or(ttl, |shortest| shortest.min(ttl)));
            }
            listing.scope = match (listing.scope.take(), scope) {
                (Some(CacheScope::Public) | None, Some(scope)) => Some(scope),
                (kept, _) => kept,
            };
            match next {
                None => return Ok(listing),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(ClientError::Pagination {
                        method: method.to_owned(),
                        problem: ListProblem::RepeatedCursor { cursor: next },
                    });
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(ClientError::Pagination {
            method: method.to_owned(),
            problem: ListProblem::TooManyPages { limit: MAX_LIST_PAGES },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    /// A tool whose input schema nests `depth` objects.
    fn deep_tool(depth: usize) -> String {
        let schema = format!(
            "{}{}",
            r#"{"type":"object","properties":{"a":"#.repeat(depth),
            "{}".to_owned() + &"}}".repeat(depth)
        );
        format!(r#"{{"name":"deep","inputSchema":{schema}}}"#)
    }

    #[test]
    fn a_page_of_good_tools_decodes_whole() {
        let page = raw(r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"c"}"#);
        let (page, left_out) = decode_page::<ListToolsResult>(&page).unwrap();
        assert_eq!(page.tools.len(), 1);
        assert_eq!(page.next_cursor.as_deref(), Some("c"));
        assert!(left_out.is_empty());
    }

    #[test]
    fn a_bad_tool_is_left_out_and_the_rest_of_the_page_kept() {
        let text = format!(
            r#"{{"tools":[{{"name":"a","inputSchema":{{"type":"object"}}}},{},{{"inputSchema":{{}}}},{{"name":"b","inputSchema":{{"type":"object"}}}}],"nextCursor":"c"}}"#,
            deep_tool(200)
        );
        let (page, left_out) = decode_page::<ListToolsResult>(&raw(&text)).unwrap();
        let names: Vec<&str> = page.tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(page.next_cursor.as_deref(), Some("c"));
        let left: Vec<&str> = left_out.iter().map(|item| item.name.as_str()).collect();
        assert_eq!(left, ["deep", "#2"]);
        assert!(left_out[0].error.contains("recursion limit"), "{}", left_out[0].error);
        assert!(
            left_out[1].error.contains("missing field `name`"),
            "{}",
            left_out[1].error
        );
    }

    #[test]
    fn a_page_whose_other_members_are_wrong_is_an_error() {
        let page = raw(r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}},{}],"nextCursor":7}"#);
        let error = decode_page::<ListToolsResult>(&page).unwrap_err();
        assert!(matches!(error, ClientError::InvalidResult { .. }), "{error:?}");
    }
}
