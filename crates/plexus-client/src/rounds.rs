//! Multi-round-trip requests of the stateless era (SEP-2322): a `tools/call`, `prompts/get` or
//! `resources/read` may come back `input_required`, naming what the server needs first
//! (elicitations, sampled messages, the client's roots). Each input request is answered by the
//! session's [`ClientHandler`](crate::ClientHandler), exactly as the initialize era's server
//! requests are, and the request is sent again (a new id) with the answers as `inputResponses`
//! and the server's `requestState` echoed byte for byte (or left out when it sent none), for at
//! most [`MAX_INPUT_ROUNDS`] rounds. The answers and the state belong to that retry only.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use plexus_jsonrpc::{RawValue, RequestId};
use plexus_protocol::{InputRequests, InputRequiredResult};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ClientError;
use crate::client::decode_result;
use crate::handler::{ServerRequestContext, dispatch};
use crate::request::{Call, RequestOptions, send_call};
use crate::session::Shared;

/// The most `input_required` rounds one request goes through before the client gives up.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// What a stateless-era result says it is.
enum Kind {
    Complete,
    InputRequired,
    /// The tasks extension's task (only a `tools/call` may be answered so).
    Task,
}

/// What a request with rounds ended with: its result, or (a `tools/call` only) the tasks
/// extension's task, for the caller to follow (see `crate::tasks`).
pub(crate) enum Answered {
    Complete(Box<RawValue>),
    Task(Box<RawValue>),
}

impl Answered {
    /// The raw result, whichever it is.
    pub(crate) fn into_raw(self) -> Box<RawValue> {
        match self {
            Answered::Complete(raw) | Answered::Task(raw) => raw,
        }
    }
}

/// [`request`], then the rounds an `input_required` answer asks for (only in a stateless session).
pub(crate) async fn request_with_input<P: Serialize + ?Sized>(
    shared: &Arc<Shared>,
    method: &'static str,
    params: Option<&P>,
    options: &RequestOptions,
    default_timeout: Duration,
) -> Result<Answered, ClientError> {
    let (mut id, mut raw) = round(shared, method, params, options, default_timeout).await?;
    if shared.stateless().is_none() {
        return Ok(Answered::Complete(raw));
    }
    let mut retry: Option<Map<String, Value>> = None;
    for rounds_done in 0..=MAX_INPUT_ROUNDS {
        match kind(method, &raw)? {
            Kind::Complete => return Ok(Answered::Complete(raw)),
            Kind::Task if method == plexus_protocol::methods::TOOLS_CALL => return Ok(Answered::Task(raw)),
            Kind::Task => {
                return Err(ClientError::UnknownResultType {
                    method: method.to_owned(),
                    found: "task".to_owned(),
                });
            }
            Kind::InputRequired => {}
        }
        if rounds_done == MAX_INPUT_ROUNDS {
            break;
        }
        let required: InputRequiredResult = decode_result(method, &raw)?;
        let requests = required.input_requests.clone().unwrap_or_default();
        let answers = answer(shared, method, &requests, Some(RequestId::Number(id)), options.tag).await?;
        let mut next = match retry.take() {
            Some(next) => next,
            None => first_params(method, params)?,
        };
        next.remove("inputResponses");
        next.remove("requestState");
        if !answers.is_empty() {
            next.insert("inputResponses".to_owned(), Value::Object(answers));
        }
        if let Some(state) = &required.request_state {
            next.insert("requestState".to_owned(), Value::String(state.clone()));
        }
        (id, raw) = round(shared, method, Some(&next), options, default_timeout).await?;
        retry = Some(next);
    }
    Err(ClientError::InputRounds {
        method: method.to_owned(),
        limit: MAX_INPUT_ROUNDS,
    })
}

/// One request of `method` (a new id each time, which it returns with the raw result).
async fn round<P: Serialize + ?Sized>(
    shared: &Arc<Shared>,
    method: &'static str,
    params: Option<&P>,
    options: &RequestOptions,
    default_timeout: Duration,
) -> Result<(i64, Box<RawValue>), ClientError> {
    let id = shared.next_id();
    let call = Call {
        id: Some(id),
        wire: shared.stateless(),
        method,
        options,
        default_timeout,
        cancellable: true,
    };
    send_call(shared, &call, params).await.map(|raw| (id, raw))
}

/// Whether `raw` is complete or asks for input; an absent `resultType` is complete (a server of
/// an earlier revision), any value but the two is invalid. Only a result that mentions the field
/// is parsed for it.
fn kind(method: &str, raw: &RawValue) -> Result<Kind, ClientError> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(default, borrow, rename = "resultType")]
        result_type: Option<Cow<'a, str>>,
    }
    let text = raw.get();
    // What a server that writes the field first or last sends: no parse needed. (`raw` is valid
    // JSON, so a member just inside the outer braces is the result's own, never a nested
    // object's or part of a string.)
    if text.starts_with(r#"{"resultType":"complete""#) || text.ends_with(r#","resultType":"complete"}"#) {
        return Ok(Kind::Complete);
    }
    if !text.contains("\"resultType\"") {
        return Ok(Kind::Complete);
    }
    let head: Head<'_> = serde_json::from_str(raw.get()).map_err(|e| ClientError::InvalidResult {
        method: method.to_owned(),
        source: Arc::new(e),
    })?;
    match head.result_type.as_deref() {
        None | Some("complete") => Ok(Kind::Complete),
        Some("input_required") => Ok(Kind::InputRequired),
        Some("task") => Ok(Kind::Task),
        Some(other) => Err(ClientError::UnknownResultType {
            method: method.to_owned(),
            found: other.to_owned(),
        }),
    }
}

/// The original request's params as an object, for the retry to add to.
fn first_params<P: Serialize + ?Sized>(method: &str, params: Option<&P>) -> Result<Map<String, Value>, ClientError> {
    let invalid = |source| ClientError::InvalidParams {
        method: method.to_owned(),
        source,
    };
    match params.map(serde_json::to_value).transpose() {
        Ok(None) => Ok(Map::new()),
        Ok(Some(Value::Object(object))) => Ok(object),
        Ok(Some(_)) => Err(invalid(crate::error::ParamsProblem::NotAnObject)),
        Err(e) => Err(invalid(e.into())),
    }
}

/// The handler's answers to `requests`, by their keys. `related` is the request whose answer
/// asked for them (none for a task's input requests), tagged `tag` by the host: the handler is
/// told so, as it is told of a request on a call's response stream in the `initialize` era.
pub(crate) async fn answer(
    shared: &Arc<Shared>,
    method: &str,
    requests: &InputRequests,
    related: Option<RequestId>,
    tag: Option<u64>,
) -> Result<Map<String, Value>, ClientError> {
    let mut answers = Map::new();
    for (key, input) in requests {
        let failed = |error| ClientError::InputRequest {
            method: method.to_owned(),
            key: key.clone(),
            error: Box::new(error),
        };
        let request = serde_json::to_value(input).unwrap_or(Value::Null);
        let asked = request.get("method").and_then(Value::as_str).unwrap_or_default();
        let params = request
            .get("params")
            .map(serde_json::value::to_raw_value)
            .transpose()
            .unwrap_or(None);
        let mut context = ServerRequestContext::new(shared.name.clone(), RequestId::String(key.clone()));
        context.related_request = related.clone();
        context.tag = tag;
        let result = dispatch(shared.handler(), asked, params.as_deref(), context)
            .await
            .map_err(failed)?;
        let value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
        answers.insert(key.clone(), value);
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(text: &str) -> Result<Kind, ClientError> {
        kind("tools/call", &RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn the_result_type_is_the_results_own_never_a_nested_ones() {
        let complete = [
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"content":[],"resultType":"complete"}"#,
            r#"{"content":[]}"#,
            r#"{"x":{"resultType":"input_required"},"resultType":"complete"}"#,
            r#"{"x":{"resultType":"input_required"}}"#,
            r#"{"text":"\"resultType\":\"input_required\""}"#,
            r#"{ "resultType" : "complete" }"#,
        ];
        for text in complete {
            assert!(matches!(kind_of(text), Ok(Kind::Complete)), "{text}");
        }
        let input_required = [
            r#"{"resultType":"input_required","x":{"y":1,"resultType":"complete"}}"#,
            r#"{"inputRequests":{},"resultType":"input_required"}"#,
            r#"{"text":",\"resultType\":\"complete\"}","resultType":"input_required"}"#,
        ];
        for text in input_required {
            assert!(matches!(kind_of(text), Ok(Kind::InputRequired)), "{text}");
        }
        assert!(matches!(
            kind_of(r#"{"resultType":"later"}"#),
            Err(ClientError::UnknownResultType { found, .. }) if found == "later"
        ));
    }
}
