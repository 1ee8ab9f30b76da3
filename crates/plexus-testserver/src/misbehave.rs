//! The `misbehave` tool (`--misbehave-tool`): protocol faults a client must survive without
//! losing the call that caused them, committed `count` times before the call is answered: a
//! storm of `list_changed`, a flood of progress, responses to requests never made, server
//! requests that reuse one id, notifications of the wrong shape.

use plexus_jsonrpc::ErrorObject;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::listen::Change;
use crate::server::{Output, Session, notification_line};

/// The most messages one call sends.
pub(crate) const MAX_COUNT: u64 = 100_000;

/// The deepest `--nested-schema-depth` (a deeper value would be built, written and dropped by
/// recursion in the server itself).
pub(crate) const MAX_NESTED_DEPTH: usize = 2_000;

/// What a `misbehave` call does.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Act {
    /// `notifications/tools/list_changed`, `count` times (to the session in the `initialize`
    /// era, to the subscriptions that listen for it in the stateless one).
    ListChanged,
    /// `notifications/progress` for this call's token (or a token nobody asked for, when the
    /// call has none), `count` times.
    Progress,
    /// Responses with ids the client never used.
    UnknownId,
    /// `ping` requests from the server, all with the id `"misbehave-duplicate"`.
    DuplicateRequest,
    /// `notifications/progress` whose params are a string, and `notifications/message` whose
    /// level is a number.
    BadNotification,
}

/// The arguments of `misbehave`.
#[derive(Debug, Deserialize)]
pub(crate) struct MisbehaveArgs {
    act: Act,
    #[serde(default = "default_count")]
    count: u64,
}

fn default_count() -> u64 {
    100
}

impl Session {
    /// Commits `args.act` `args.count` times into `out` and says what it did.
    pub(crate) fn misbehave(
        &self,
        args: &MisbehaveArgs,
        progress_token: Option<&Value>,
        out: &mut Vec<Output>,
    ) -> Result<String, ErrorObject> {
        let count = crate::tools::at_most("misbehave", "count", args.count, MAX_COUNT)?;
        let mut sent = 0_u64;
        for n in 0..count {
            match args.act {
                Act::ListChanged if self.is_modern() => {
                    sent += self.notify_change(Change::ToolsListChanged, out) as u64;
                }
                Act::ListChanged => {
                    out.push(Output::SessionNotification(notification_line(
                        Change::ToolsListChanged.method(),
                        None,
                    )));
                    sent += 1;
                }
                Act::Progress => {
                    let token = progress_token
                        .cloned()
                        .unwrap_or_else(|| json!("misbehave-no-such-token"));
                    let params = json!({"progressToken": token, "progress": n + 1, "total": count});
                    out.push(Output::Message(notification_line(
                        "notifications/progress",
                        Some(&params),
                    )));
                    sent += 1;
                }
                Act::UnknownId => {
                    let line = json!({"jsonrpc": "2.0", "id": format!("misbehave-never-asked-{n}"), "result": {}});
                    out.push(Output::Raw(line_of(&line)));
                    sent += 1;
                }
                Act::DuplicateRequest => {
                    let line = json!({"jsonrpc": "2.0", "id": "misbehave-duplicate", "method": "ping"});
                    out.push(Output::Raw(line_of(&line)));
                    sent += 1;
                }
                Act::BadNotification => {
                    let line = if n % 2 == 0 {
                        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": "not an object"})
                    } else {
                        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": 42, "data": []}})
                    };
                    out.push(Output::Raw(line_of(&line)));
                    sent += 1;
                }
            }
        }
        Ok(format!("misbehaved: {:?} sent {sent} messages", args.act))
    }
}

/// `value` as one line.
fn line_of(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}
