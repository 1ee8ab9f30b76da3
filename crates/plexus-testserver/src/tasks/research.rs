//! The tool `research`: its listing, its arguments, and the work of one task, stage by stage.

use std::sync::{Arc, Weak};
use std::time::Duration;

use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue};
use plexus_protocol::methods as method_names;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Angle, Record, related};
use crate::server::{Output, Session, notification_line};
use crate::tools::{arguments, at_most};

/// The tool's name.
pub(crate) const RESEARCH: &str = "research";
/// The most stages of one task.
const MAX_STAGES: u32 = 20;
/// The longest stage, in milliseconds.
const MAX_STAGE_MS: u64 = 10_000;
/// The longest topic, in characters.
const MAX_TOPIC_CHARS: usize = 256;

/// The listing of `research`: it must be called as a task.
pub(crate) fn research_tool() -> Value {
    json!({
        "name": RESEARCH,
        "title": "Research",
        "description": "Researches a topic in stages, as a task only (execution.taskSupport is required): each stage \
                        says where it is; `ask` makes it ask for an angle after stage 1, `fail` makes it fail at its \
                        last stage, `toolError` makes it end with a tool error.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "description": "What to research", "maxLength": MAX_TOPIC_CHARS},
                "stages": {"type": "integer", "description": "How many stages", "minimum": 1, "maximum": MAX_STAGES, "default": 3},
                "stageMs": {"type": "integer", "description": "How long each stage takes, in milliseconds", "minimum": 0, "maximum": MAX_STAGE_MS, "default": 100},
                "ask": {"type": "boolean", "description": "Ask the client for an angle after stage 1", "default": false},
                "fail": {"type": "boolean", "description": "Fail with a JSON-RPC error at the last stage", "default": false},
                "toolError": {"type": "boolean", "description": "End with a tool error (isError: true)", "default": false},
            },
            "required": ["topic"],
        },
        "annotations": {"title": "Research", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        "execution": {"taskSupport": "required"},
    })
}

/// The arguments of `research`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResearchArgs {
    topic: String,
    #[serde(default = "default_stages")]
    stages: u32,
    #[serde(default = "default_stage_ms")]
    stage_ms: u64,
    #[serde(default)]
    ask: bool,
    #[serde(default)]
    fail: bool,
    #[serde(default)]
    tool_error: bool,
}

fn default_stages() -> u32 {
    3
}

fn default_stage_ms() -> u64 {
    100
}

/// Where an `initialize`-era task reports its progress: the session that created it, with the
/// call's progress token.
pub(super) struct Progress {
    pub(super) session: Weak<Session>,
    pub(super) token: Value,
}

/// One research task's plan.
pub(super) struct Research {
    topic: String,
    stages: u32,
    stage: Duration,
    ask: bool,
    fail: bool,
    tool_error: bool,
}

impl Research {
    /// The plan of a call with `args`, checked against the schema's bounds.
    pub(super) fn parse(args: Option<&RawValue>) -> Result<Research, ErrorObject> {
        let ResearchArgs {
            topic,
            stages,
            stage_ms,
            ask,
            fail,
            tool_error,
        } = arguments(RESEARCH, args)?;
        at_most(
            RESEARCH,
            "topic's length in characters",
            topic.chars().count(),
            MAX_TOPIC_CHARS,
        )?;
        if stages == 0 {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                "invalid arguments for tool research: stages must be at least 1",
            ));
        }
        Ok(Research {
            stages: at_most(RESEARCH, "stages", stages, MAX_STAGES)?,
            stage: Duration::from_millis(at_most(RESEARCH, "stageMs", stage_ms, MAX_STAGE_MS)?),
            topic,
            ask,
            fail,
            tool_error,
        })
    }

    /// The task's status message before its first stage.
    pub(super) fn starting(&self) -> String {
        format!("starting: {}", self.topic)
    }

    /// Runs the task to its end: each stage notes itself (and reports progress), then waits;
    /// after stage 1 the task asks its question (`ask`; a client that cannot be asked, `can_ask`
    /// false, means no angle); the last stage fails the task (`fail`). The work stops when the
    /// task is cancelled, and when its TTL passes.
    pub(super) async fn run(self, record: Arc<Record>, progress: Option<Progress>, can_ask: bool) {
        let deadline = tokio::time::Instant::from_std(record.deadline);
        let work = self.work(&record, progress.as_ref(), can_ask);
        // Expired: the task is gone (asking for it says so); its work just stops.
        if let Ok(Some((outcome, message))) = tokio::time::timeout_at(deadline, work).await {
            record.finish(outcome, message);
        }
    }

    /// The stages; `None` when the task was cancelled meanwhile.
    async fn work(
        &self,
        record: &Record,
        progress: Option<&Progress>,
        can_ask: bool,
    ) -> Option<(Result<Value, ErrorObject>, String)> {
        let (topic, stages) = (&self.topic, self.stages);
        let mut angle: Option<Angle> = None;
        for stage in 1..=stages {
            let message = format!("stage {stage}/{stages}: {topic}");
            if !record.note(message.clone()) {
                return None;
            }
            if let Some(progress) = progress {
                progress.report(record.id(), stage, stages, &message).await;
            }
            if !record.pause(self.stage).await {
                return None;
            }
            if stage == 1 && self.ask {
                angle = Some(if can_ask { self.question(record).await? } else { None });
            }
        }
        if self.fail {
            let error = ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("research on {topic} failed at stage {stages}"),
            );
            let message = format!("failed: {}", error.message);
            return Some((Err(error), message));
        }
        if self.tool_error {
            let result = json!({"content": [{"type": "text", "text": format!("research on {topic} found nothing (toolError)")}], "isError": true});
            return Some((Ok(result), "done: a tool error".to_owned()));
        }
        let asked = match &angle {
            Some(Some(angle)) => format!(", angle {angle}"),
            Some(None) => ", no angle".to_owned(),
            None => String::new(),
        };
        let text = format!("Report on {topic}: {stages} stages{asked}");
        let result = json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"topic": topic, "stages": stages, "angle": angle.flatten()},
        });
        Some((Ok(result), format!("done: {stages} stages")))
    }

    /// Asks which angle to take and waits for the answer; `None` when the task ended first.
    async fn question(&self, record: &Record) -> Option<Angle> {
        let message = format!("Which angle on {}?", self.topic);
        let params = json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {"angle": {"type": "string"}},
                "required": ["angle"],
            },
        });
        let mut answered = record.pose(params, format!("waiting for input: {message}"))?;
        let mut changes = record.changes();
        loop {
            tokio::select! {
                answer = &mut answered => return match answer {
                    Ok(angle) => Some(angle),
                    // The question went away unanswered: the task was cancelled.
                    Err(_) if record.status().is_terminal() => None,
                    Err(_) => Some(None),
                },
                _ = changes.changed() => {
                    if record.status().is_terminal() {
                        return None;
                    }
                }
            }
        }
    }
}

impl Progress {
    /// `notifications/progress` for `stage` of `stages`, tied to task `id`.
    async fn report(&self, id: &str, stage: u32, stages: u32, message: &str) {
        let Some(session) = self.session.upgrade() else { return };
        let params = json!({
            "progressToken": self.token,
            "progress": stage,
            "total": stages,
            "message": message,
            "_meta": related(id),
        });
        session
            .emit(Output::Message(notification_line(
                method_names::PROGRESS,
                Some(&params),
            )))
            .await;
    }
}

/// The angle an `elicitation/create` result chose: an accepted form's `angle`, else none.
pub(super) fn angle_of(result: &Value) -> Angle {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    result
        .get("content")
        .and_then(|content| content.get("angle"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_bounded() {
        let parse = |args: Value| Research::parse(Some(&serde_json::value::to_raw_value(&args).unwrap()));
        let plan = parse(json!({"topic": "tides"})).ok().unwrap();
        assert_eq!(
            (plan.stages, plan.stage, plan.ask, plan.fail, plan.tool_error),
            (3, Duration::from_millis(100), false, false, false)
        );
        for (args, message) in [
            (
                json!({"topic": "t", "stages": 21}),
                "invalid arguments for tool research: stages is 21, more than the limit 20",
            ),
            (
                json!({"topic": "t", "stages": 0}),
                "invalid arguments for tool research: stages must be at least 1",
            ),
            (
                json!({"topic": "t", "stageMs": 10_001}),
                "invalid arguments for tool research: stageMs is 10001, more than the limit 10000",
            ),
            (
                json!({"topic": "é".repeat(257)}),
                "invalid arguments for tool research: topic's length in characters is 257, more than the limit 256",
            ),
        ] {
            assert_eq!(parse(args).err().unwrap().message, message);
        }
        assert!(
            parse(json!({}))
                .err()
                .unwrap()
                .message
                .contains("missing field `topic`")
        );
    }

    #[test]
    fn only_an_accepted_angle_counts() {
        assert_eq!(
            angle_of(&json!({"action": "accept", "content": {"angle": "history"}})),
            Some("history".to_owned())
        );
        assert_eq!(angle_of(&json!({"action": "decline"})), None);
        assert_eq!(angle_of(&json!({"action": "accept", "content": {"angle": 3}})), None);
        assert_eq!(angle_of(&json!("accept")), None);
    }
}
