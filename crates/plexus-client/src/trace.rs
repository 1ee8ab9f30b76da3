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

/// The words of a member name: split at `_`, `-`, `.`, spaces and lower-to-upper case changes,
/// lowercased (`connectionString` → `connection`, `string`; `X-Api-Key` → `x`, `api`, `key`).
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let boundary = matches!(c, '_' | '-' | '.' | ' ') || (c.is_uppercase() && previous_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Words that make a member a secret wherever they stand in its name.
const SECRET_WORDS: [&str; 22] = [
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "pass",
    "secret",
    "secrets",
    "token",
    "tokens",
    "apikey",
    "key",
    "keys",
    "auth",
    "authorization",
    "bearer",
    "jwt",
    "otp",
    "pin",
    "dsn",
    "cookie",
    "credential",
    "credentials",
];

/// Run-together names that hold a secret (compared without case, `_` and `-`).
const SECRET_PHRASES: [&str; 6] = [
    "password",
    "apikey",
    "privatekey",
    "accesskey",
    "connectionstring",
    "clientsecret",
];

/// Words that make a number a count, not a secret (`maxTokens`, `tokenCount`).
const COUNT_WORDS: [&str; 7] = ["max", "min", "count", "limit", "total", "used", "remaining"];

/// Whether a member called `name` holds a secret: one of its words is a secret word, or its
/// letters run together hold a secret phrase (`connectionString`, `x-api-key`, `db_pwd`).
fn is_secret(name: &str) -> bool {
    let words = words(name);
    let folded: String = words.concat();
    words.iter().any(|word| SECRET_WORDS.contains(&word.as_str()))
        || SECRET_PHRASES.iter().any(|phrase| folded.contains(phrase))
}

/// Whether a member called `name` counts something (its number is no secret).
fn is_count(name: &str) -> bool {
    words(name).iter().any(|word| COUNT_WORDS.contains(&word.as_str()))
}

/// The header and environment variable names whose values are shown; every other value of a
/// `headers` or `env` object is redacted, whatever its name.
const SHOWN_SETTINGS: [&str; 12] = [
    "accept",
    "content-type",
    "content-length",
    "user-agent",
    "mcp-protocol-version",
    "last-event-id",
    "path",
    "home",
    "lang",
    "term",
    "tz",
    "node_env",
];

/// Whether the member `name` of a `headers` or `env` object is shown.
fn is_shown_setting(name: &str) -> bool {
    SHOWN_SETTINGS.iter().any(|shown| shown.eq_ignore_ascii_case(name))
}

/// Redacts the secrets in `value`: the scalar values of members that [`is_secret`] (a number
/// only when the name is no count), and in an object called `headers` or `env`, every value
/// but those of [`SHOWN_SETTINGS`].
fn redact_value(value: &mut Value) -> bool {
    let mut changed = false;
    match value {
        Value::Object(members) => {
            for (name, member) in members.iter_mut() {
                let scalar_secret = match member {
                    Value::String(_) => is_secret(name),
                    Value::Number(_) => is_secret(name) && !is_count(name),
                    _ => false,
                };
                if scalar_secret {
                    *member = Value::String(REDACTED.to_owned());
                    changed = true;
                } else if let (true, Value::Object(settings)) = (
                    name.eq_ignore_ascii_case("headers") || name.eq_ignore_ascii_case("env"),
                    &mut *member,
                ) {
                    for (setting, setting_value) in settings.iter_mut() {
                        if !is_shown_setting(setting) && !setting_value.is_null() {
                            *setting_value = Value::String(REDACTED.to_owned());
                            changed = true;
                        }
                    }
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
/// (see [`redact_value`]; a count such as `maxTokens` is no secret).
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
    }

    #[test]
    fn secret_looking_names_of_every_style_are_redacted() {
        for name in [
            "pwd",
            "pass",
            "bearer",
            "auth",
            "jwt",
            "otp",
            "pin",
            "dsn",
            "connectionString",
            "key",
            "x-api-key",
            "db_password",
            "DB_PWD",
            "clientSecret",
            "privateKey",
            "sessionToken",
            "AUTH_HEADER",
            "accessKeyId",
            "refresh-token",
            "Cookie",
            "pin_code",
        ] {
            let body = format!(r#"{{"{name}":"s3cr3t"}}"#);
            assert_eq!(redacted(&body), format!(r#"{{"{name}":"<redacted>"}}"#), "{name}");
        }
        // A number is a secret too (a PIN), unless its name counts something.
        assert_eq!(
            redacted(r#"{"pin":1234,"maxTokens":5,"tokenCount":9}"#),
            r#"{"pin":"<redacted>","maxTokens":5,"tokenCount":9}"#
        );
        // Ordinary names stay.
        let plain = r#"{"query":"q","path":"/a","mapping":"m","passage":"p","keyboard":"k","author":"a"}"#;
        assert!(matches!(redacted(plain), Cow::Borrowed(_)), "{}", redacted(plain));
    }

    #[test]
    fn headers_and_env_show_only_a_few_harmless_values() {
        let body = r#"{"headers":{"Content-Type":"application/json","X-Custom":"v"},"env":{"PATH":"/bin","DATABASE_URL":"postgres://u:p@h/d"}}"#;
        assert_eq!(
            redacted(body),
            r#"{"headers":{"Content-Type":"application/json","X-Custom":"<redacted>"},"env":{"PATH":"/bin","DATABASE_URL":"<redacted>"}}"#
        );
        assert!(matches!(redacted("not json"), Cow::Borrowed("not json")));
    }
}
