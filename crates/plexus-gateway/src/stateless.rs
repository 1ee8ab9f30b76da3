//! The gateway's answers in the stateless era (revision 2026-07-28), which has no `initialize`:
//! `server/discover` says who the gateway is, the versions it speaks (of both eras) and what it
//! offers (what `initialize` offers, of the backends up within [`DISCOVER_WAIT`]); every result says its `resultType` (`complete`, or
//! `input_required`: see [`rounds`](crate::rounds)), and a list or a read its caching (`ttlMs`
//! 0, `cacheScope` `private`: the gateway's lists follow its backends and its configuration).
//!
//! The requests both eras have are answered by the same code as in the `initialize` era; a
//! `tools/call`, `prompts/get` or `resources/read` through [`rounds`](crate::rounds), since its
//! backend may ask the client something; `subscriptions/listen` by
//! [`listening`](crate::listening). The `initialize` era's `initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe` are refused with -32601
//! naming what the stateless era has instead.

use std::sync::Arc;

use plexus::jsonrpc::{ErrorCode, ErrorObject, Request};
use plexus::protocol::envelope::SERVER_INFO_KEY;
use plexus::protocol::{CacheScope, DiscoverResult, JsonObject, ProtocolVersion, ResultType, methods};
use serde_json::{Value, json};

use crate::era::Stateless;
use crate::gateway::{Gateway, INSTRUCTIONS, params_of, server_info};
use crate::rounds::Outcome;
use crate::session::{Session, Sink, success_response};

/// How long `server/discover` waits for the backends starting with the gateway: a client's
/// probe waits about a second for its answer (then it tries `initialize`, which tells it to
/// probe again). A backend that starts later adds its capabilities to the next discover.
const DISCOVER_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The members of a result that the gateway writes itself in the stateless era (a backend's own
/// are dropped).
const OWN_MEMBERS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// Whether the result of `method` says how it may be cached (lists and reads do).
pub(crate) fn caching(method: &str) -> bool {
    matches!(
        method,
        methods::TOOLS_LIST
            | methods::PROMPTS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ
    )
}

/// `result` (an object) as a complete result of the stateless era: `resultType` first, and,
/// when `cached`, `ttlMs` 0 and `cacheScope` `private`.
pub(crate) fn complete(result: Value, cached: bool) -> Outcome {
    let Value::Object(members) = result else {
        return Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            "a result that is not an object cannot be marked complete",
        ));
    };
    let mut object = JsonObject::with_capacity(members.len() + 3);
    object.insert("resultType".to_owned(), json!(ResultType::Complete));
    if cached {
        object.insert("ttlMs".to_owned(), json!(0));
        object.insert("cacheScope".to_owned(), json!(CacheScope::Private));
    }
    object.extend(
        members
            .into_iter()
            .filter(|(key, _)| !OWN_MEMBERS.contains(&key.as_str())),
    );
    serde_json::value::to_raw_value(&object).map_err(|e| encode_failed(&e))
}

/// The error of a result that does not encode.
pub(crate) fn encode_failed(error: &serde_json::Error) -> ErrorObject {
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot encode the result: {error}"))
}

/// -32601 for a request of the `initialize` era only, naming what replaced it.
fn not_stateless(method: &str) -> ErrorObject {
    let instead = match method {
        methods::INITIALIZE => {
            "send each request with the envelope in its _meta (server/discover says what the gateway offers)"
        }
        methods::PING => "server/discover is its cheapest request",
        methods::LOGGING_SET_LEVEL => "a request asks for log messages with _meta's io.modelcontextprotocol/logLevel",
        _ => "subscriptions/listen asks for resource updates (resourceSubscriptions)",
    };
    ErrorObject::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} is not part of the stateless era (2026-07-28): {instead}"),
    )
}

impl Gateway {
    /// The response line to `request` of the stateless era from `session`'s client, or the error
    /// to answer it with; what it sends before that (its progress, a listen's notifications)
    /// goes to `sink`.
    pub(crate) async fn answer_stateless(
        self: &Arc<Self>,
        session: &Arc<Session>,
        request: &Request,
        stateless: Box<Stateless>,
        sink: &Sink,
    ) -> Result<Vec<u8>, ErrorObject> {
        let method = request.method.as_ref();
        let result = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ => {
                self.answer_with_input(session, request, *stateless, sink).await?
            }
            methods::SUBSCRIPTIONS_LISTEN => {
                let _open = session.listening_on(&request.id);
                self.listen(request, sink).await?
            }
            methods::SERVER_DISCOVER => {
                // What the gateway offers depends on the servers that are up by then; a client's
                // probe waits about a second for its answer.
                let _ = tokio::time::timeout(DISCOVER_WAIT, self.wait_ready()).await;
                self.discover()?
            }
            methods::INITIALIZE
            | methods::PING
            | methods::LOGGING_SET_LEVEL
            | methods::RESOURCES_SUBSCRIBE
            | methods::RESOURCES_UNSUBSCRIBE => return Err(not_stateless(method)),
            _ => {
                let params = params_of(request)?;
                let result = Box::pin(self.served(method, &params)).await?;
                complete(result, caching(method))?
            }
        };
        success_response(&request.id, &result)
    }

    /// `server/discover`'s result.
    fn discover(&self) -> Outcome {
        let capabilities = serde_json::from_value(self.offers()).map_err(|e| encode_failed(&e))?;
        let mut meta = JsonObject::new();
        meta.insert(SERVER_INFO_KEY.to_owned(), server_info());
        let result = DiscoverResult {
            result_type: Some(ResultType::Complete),
            supported_versions: ProtocolVersion::ALL
                .iter()
                .map(|version| version.as_str().to_owned())
                .collect(),
            capabilities,
            instructions: Some(INSTRUCTIONS.to_owned()),
            ttl_ms: Some(0),
            cache_scope: Some(CacheScope::Private),
            meta: Some(meta),
            extra: JsonObject::new(),
        };
        serde_json::value::to_raw_value(&result).map_err(|e| encode_failed(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_result_says_so_first_and_a_list_how_it_is_cached() {
        let listed = complete(json!({"tools": [], "ttlMs": 5000, "resultType": "complete"}), true).unwrap();
        assert_eq!(
            listed.get(),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}"#
        );
        let called = complete(json!({"content": [], "isError": false}), false).unwrap();
        assert_eq!(
            called.get(),
            r#"{"resultType":"complete","content":[],"isError":false}"#
        );
        assert!(complete(json!([1]), false).is_err());
    }

    #[test]
    fn the_initialize_eras_own_requests_name_what_replaced_them() {
        assert_eq!(
            not_stateless("ping").message,
            "ping is not part of the stateless era (2026-07-28): server/discover is its cheapest request"
        );
        assert_eq!(not_stateless("resources/subscribe").code, ErrorCode::METHOD_NOT_FOUND);
    }
}
