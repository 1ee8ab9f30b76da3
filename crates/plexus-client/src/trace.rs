//! What the session tells `tracing` about the messages it exchanges: at `debug`, one line per
//! message (direction, kind, method, id, size); at `trace`, the body too, with the values of
//! members that hold secrets (tokens, passwords, keys) replaced. The server's own log
//! notifications go out at their own level.

use std::borrow::Cow;

use plexus_jsonrpc::{Message, RawValue};
use plexus_protocol::{LoggingLevel, LoggingMessageNotificationParams};
use plexus_transport::{OutboundKind, OutboundMessage};
use serde_json::Value;

/// What a secret's value is shown as.
const REDACTED: &str = "<redacted>";

/// Whether a member called `name` holds a secret (compared without case, `_` and `-`).
fn is_secret(name: &str) -> bool {
    let folded: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "privatekey",
    ]
    .iter()
    .any(|word| folded.contains(word))
}

fn redact_value(value: &mut Value) -> bool {
    let mut changed = false;
    match value {
        Value::Object(members) => {
            for (name, member) in members.iter_mut() {
                if is_secret(name) && member.is_string() {
                    *member = Value::String(REDACTED.to_owned());
                    changed = true;
                } else {
                    changed |= redact_value(member);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                changed |= redact_value(item);
            }
        }
        _ => {}
    }
    changed
}

/// `json` with the values of members that hold secrets replaced by `<redacted>`, at any depth
/// (string values: a count such as `maxTokens` is no secret).
pub(crate) fn redacted(json: &str) -> Cow<'_, str> {
    let Ok(mut value) = serde_json::from_str::<Value>(json) else {
        return Cow::Borrowed(json);
    };
    if redact_value(&mut value) {
        Cow::Owned(value.to_string())
    } else {
        Cow::Borrowed(json)
    }
}

/// Notes one message sent to server `server`.
pub(crate) fn sent(server: &str, message: &OutboundMessage) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let what = match message.kind() {
        OutboundKind::Request { id, method } => format!("request {method} id={id}"),
        OutboundKind::Notification { method } => format!("notification {method}"),
        OutboundKind::Response { id } => format!(
            "response id={}",
            id.as_ref().map_or_else(|| "null".to_owned(), ToString::to_string)
        ),
    };
    let json = message.json();
    if tracing::enabled!(tracing::Level::TRACE) {
        let text = String::from_utf8_lossy(json);
        tracing::trace!(server, "→ {what} ({} bytes): {}", json.len(), redacted(text.trim_end()));
    } else {
        tracing::debug!(server, "→ {what} ({} bytes)", json.len());
    }
}

/// Notes one message received from server `server`.
pub(crate) fn received(server: &str, message: &Message) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let (what, body): (String, Option<&RawValue>) = match message {
        Message::Request(request) => (
            format!("request {} id={}", request.method, request.id),
            request.params.as_deref(),
        ),
        Message::Notification(notification) => (
            format!("notification {}", notification.method),
            notification.params.as_deref(),
        ),
        Message::Response(response) => {
            let id = response
                .id
                .as_ref()
                .map_or_else(|| "null".to_owned(), ToString::to_string);
            match &response.outcome {
                Ok(result) => (format!("result id={id}"), Some(&**result)),
                Err(error) => (format!("error id={id} (code {})", error.code), None),
            }
        }
    };
    let size = body.map_or(0, |body| body.get().len());
    match body {
        Some(body) if tracing::enabled!(tracing::Level::TRACE) => {
            tracing::trace!(server, "← {what} ({size} bytes): {}", redacted(body.get()));
        }
        _ => tracing::debug!(server, "← {what} ({size} bytes)"),
    }
}

/// Shows a server's `notifications/message` at its level: `debug`; `info` and `notice`; `warning`;
/// and `error` for the worse ones. A string is shown as it is, any other value as JSON.
pub(crate) fn server_log(server: &str, params: &LoggingMessageNotificationParams) {
    let text = match &params.data {
        Value::String(text) => Cow::Borrowed(text.as_str()),
        other => Cow::Owned(other.to_string()),
    };
    let logger = params.logger.as_deref().unwrap_or_default();
    match params.level {
        LoggingLevel::Debug => tracing::debug!(server, logger, "{text}"),
        LoggingLevel::Info | LoggingLevel::Notice => tracing::info!(server, logger, "{text}"),
        LoggingLevel::Warning => tracing::warn!(server, logger, "{text}"),
        _ => tracing::error!(server, logger, level = ?params.level, "{text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_at_any_depth_and_the_rest_is_kept() {
        let body = r#"{"arguments":{"query":"q","api_key":"k1","nested":[{"Password":"p"}],"accessToken":"t","maxTokens":5},"ok":null}"#;
        assert_eq!(
            redacted(body),
            r#"{"arguments":{"query":"q","api_key":"<redacted>","nested":[{"Password":"<redacted>"}],"accessToken":"<redacted>","maxTokens":5},"ok":null}"#
        );
        assert!(matches!(redacted(r#"{"a":1}"#), Cow::Borrowed(_)));
        assert!(matches!(redacted("not json"), Cow::Borrowed("not json")));
    }
}
