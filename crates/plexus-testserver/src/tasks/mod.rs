//! Tasks (`--tasks`): the tool `research` runs only as a task, in both protocol eras.
//!
//! - The `initialize` era at 2025-11-25 (experimental tasks): the server declares
//!   `tasks: {list, cancel, requests: {tools: {call}}}`; a `tools/call` with `task: {ttl?}` is
//!   answered at once with `{task}`; `tasks/get`, `tasks/result` (waits for the end; a question
//!   the task has goes to the client on the `tasks/result` request), `tasks/cancel` and
//!   `tasks/list` follow. A task belongs to the session that created it.
//! - The stateless era (the `io.modelcontextprotocol/tasks` extension): `server/discover` declares
//!   the extension; a `tools/call` whose envelope declares it is answered `resultType: "task"`;
//!   `tasks/get` carries the result, the error or the input requests, which `tasks/update`
//!   answers; `tasks/cancel` acknowledges. Tasks are the server's: a task created by one stateless
//!   HTTP POST is found by the next.
//!
//! Every task runs on a tokio task of its own (see `research`); the store ([`Tasks`]) holds at most
//! [`MAX_TASKS`] of them, evicting the oldest finished or expired one to make room. A task lives
//! for its TTL ([`DEFAULT_TTL_MS`], or a smaller `ttl` an `initialize`-era client asks for, at
//! least [`MIN_TTL_MS`]), counted from its creation: then its work stops and asking for it gets
//! -32602 "… has expired".
//!
//! Task ids are 128 random bits from the operating system (getrandom), as 32 hex digits: a task id
//! is all a client needs to read, answer or cancel a task, so it must not be guessable.

mod methods;
mod research;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use plexus_jsonrpc::{ErrorCode, ErrorObject};
use plexus_protocol::{
    DetailedTask, InputRequest, InputRequests, RELATED_TASK_META_KEY, ResultType, TASKS_EXTENSION, Task, TaskStatus,
    methods as method_names,
};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::events::EventLog;
use crate::server::{Emitted, Output, Session, lock, notification_line};

pub(crate) use methods::calls_research;
pub(crate) use research::research_tool;

/// The most tasks the server holds, all sessions together.
pub(crate) const MAX_TASKS: usize = 1024;
/// How long a task lives after its creation unless a client asks for less, in milliseconds (5
/// minutes).
pub(crate) const DEFAULT_TTL_MS: u64 = 300_000;
/// The shortest TTL a client may ask for, in milliseconds.
pub(crate) const MIN_TTL_MS: u64 = 1_000;
/// The polling interval the server suggests unless `--task-poll-ms` says otherwise.
pub(crate) const DEFAULT_POLL_MS: u64 = 100;
/// The longest polling interval `--task-poll-ms` accepts (a minute).
pub(crate) const MAX_POLL_MS: u64 = 60_000;
/// "Missing required client capability": the answer to a stateless `tools/call` of `research`
/// whose envelope does not declare the extension. The 2026-07-28 schema numbers it -32021 (the
/// extension's draft text still says -32003, an older number of the same error).
pub(crate) const MISSING_CAPABILITY: ErrorCode = plexus_protocol::errors::MISSING_REQUIRED_CLIENT_CAPABILITY;

/// The key of the one input request a task makes (unique over the task's life: it asks once).
const QUESTION_KEY: &str = "angle";

/// The answer to a task's question: the angle chosen, or none (declined, cancelled, not asked).
type Angle = Option<String>;

/// Who may see a task.
#[derive(Debug)]
enum Owner {
    /// The `initialize`-era session that created it (its status notifications go there too).
    Session(Weak<Session>),
    /// Any client of the stateless era.
    Stateless,
}

/// The tasks a server holds.
#[derive(Debug)]
pub(crate) struct Tasks {
    /// The polling interval suggested to clients, in milliseconds.
    poll_ms: u64,
    events: Arc<EventLog>,
    held: Mutex<HashMap<String, Arc<Record>>>,
    /// How many tasks were created (orders them).
    created: AtomicU64,
}

/// One task.
#[derive(Debug)]
pub(crate) struct Record {
    id: String,
    /// Its number in creation order.
    seq: u64,
    owner: Owner,
    created_at: String,
    deadline: Instant,
    ttl_ms: u64,
    poll_ms: u64,
    events: Arc<EventLog>,
    state: Mutex<State>,
    /// Bumped on every change of `state`, so that waiters look again.
    changes: watch::Sender<()>,
}

/// What changes in a task.
#[derive(Debug)]
struct State {
    status: TaskStatus,
    message: String,
    updated_at: String,
    /// The request's outcome, once completed (a `CallToolResult`) or failed.
    outcome: Option<Result<Value, ErrorObject>>,
    /// The question the task waits on, while `input_required`.
    question: Option<Question>,
}

/// A task's pending question.
#[derive(Debug)]
struct Question {
    /// The `elicitation/create` params.
    params: Value,
    /// Where the answer goes.
    answer: Option<oneshot::Sender<Angle>>,
    /// A `tasks/result` is asking the client right now (`initialize` era).
    asked: bool,
}

/// What a `tasks/result` waiter finds.
enum Look {
    /// The task completed or failed.
    Done(Result<Value, ErrorObject>),
    /// The task was cancelled.
    Cancelled,
    /// The task has a question nobody is asking: the waiter asks it (with these params).
    Ask(Value),
    /// Nothing to do yet.
    Wait,
}

impl Tasks {
    /// An empty store whose tasks suggest polling every `poll_ms` milliseconds.
    pub(crate) fn new(poll_ms: u64, events: Arc<EventLog>) -> Self {
        Tasks {
            poll_ms,
            events,
            held: Mutex::new(HashMap::new()),
            created: AtomicU64::new(0),
        }
    }

    /// A new working task with `message`, living `ttl_ms`, making room by evicting the oldest
    /// finished or expired task when [`MAX_TASKS`] are held.
    fn create(&self, owner: Owner, ttl_ms: u64, message: String) -> Result<Arc<Record>, ErrorObject> {
        let id = new_task_id()?;
        let now = SystemTime::now();
        let record = Arc::new(Record {
            seq: self.created.fetch_add(1, Ordering::Relaxed),
            owner,
            created_at: iso8601(now),
            deadline: Instant::now() + Duration::from_millis(ttl_ms),
            ttl_ms,
            poll_ms: self.poll_ms,
            events: Arc::clone(&self.events),
            state: Mutex::new(State {
                status: TaskStatus::Working,
                message,
                updated_at: iso8601(now),
                outcome: None,
                question: None,
            }),
            changes: watch::Sender::new(()),
            id,
        });
        let mut held = lock(&self.held);
        if held.len() >= MAX_TASKS {
            let evictable = held
                .values()
                .filter(|record| record.is_expired() || record.status().is_terminal())
                .min_by_key(|record| record.seq)
                .map(|record| record.id.clone());
            let Some(evicted) = evictable else {
                return Err(ErrorObject::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("{MAX_TASKS} tasks are held and none has finished: cancel one, or wait until one ends"),
                ));
            };
            held.remove(&evicted);
        }
        held.insert(record.id.clone(), Arc::clone(&record));
        Ok(record)
    }

    /// The task `id` as `session` sees it (`modern`: in the stateless era): -32602 when it is
    /// unknown, another session's, or expired.
    fn find(&self, id: &str, session: &Arc<Session>, modern: bool) -> Result<Arc<Record>, ErrorObject> {
        let record = lock(&self.held)
            .get(id)
            .filter(|record| record.visible_to(session, modern))
            .cloned()
            .ok_or_else(|| not_found(id))?;
        if record.is_expired() {
            return Err(expired(&record));
        }
        Ok(record)
    }

    /// The live tasks `session` sees in the `initialize` era, newest first.
    fn of_session(&self, session: &Arc<Session>) -> Vec<Arc<Record>> {
        let mut records: Vec<Arc<Record>> = lock(&self.held)
            .values()
            .filter(|record| record.visible_to(session, false) && !record.is_expired())
            .cloned()
            .collect();
        records.sort_by_key(|record| std::cmp::Reverse(record.seq));
        records
    }
}

impl Record {
    /// The task's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Whether its TTL has passed.
    fn is_expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Whether `session` (`modern`: in the stateless era) may see it.
    fn visible_to(&self, session: &Arc<Session>, modern: bool) -> bool {
        match &self.owner {
            Owner::Stateless => modern,
            Owner::Session(owner) => !modern && std::ptr::eq(owner.as_ptr(), Arc::as_ptr(session)),
        }
    }

    fn status(&self) -> TaskStatus {
        lock(&self.state).status.clone()
    }

    /// A waiter's view of the changes to come.
    fn changes(&self) -> watch::Receiver<()> {
        self.changes.subscribe()
    }

    /// Moves to `status` with `message` (not from a terminal status): logs
    /// `{"event":"task-status","id":…,"status":…}`, tells the owning session
    /// (`notifications/tasks/status`) and wakes the waiters. False when the task had ended.
    fn transition(&self, state: &mut State, status: TaskStatus, message: String) -> bool {
        if state.status.is_terminal() {
            return false;
        }
        let changed = state.status != status;
        state.status = status;
        state.message = message;
        state.updated_at = iso8601(SystemTime::now());
        if changed {
            self.events
                .record(&json!({"event": "task-status", "id": self.id, "status": state.status}));
            self.tell_owner(state);
        }
        self.changes.send_replace(());
        true
    }

    /// `notifications/tasks/status` to the session that owns the task (`initialize` era): over
    /// stdio with its other output, over Streamable HTTP on its standalone GET stream. Advisory:
    /// dropped when the session's outbox is full or gone.
    fn tell_owner(&self, state: &State) {
        let Owner::Session(owner) = &self.owner else { return };
        let Some(session) = owner.upgrade() else { return };
        let Ok(params) = serde_json::to_value(self.task_of(state)) else {
            return;
        };
        let line = notification_line(method_names::TASKS_STATUS, Some(&params));
        let _ = session.outbox.try_send(Emitted {
            origin: None,
            output: Output::Message(line),
        });
    }

    /// A new status message while the task works; false once it has ended.
    fn note(&self, message: String) -> bool {
        let mut state = lock(&self.state);
        self.transition(&mut state, TaskStatus::Working, message)
    }

    /// Ends the task with the request's `outcome` (unless it ended already).
    fn finish(&self, outcome: Result<Value, ErrorObject>, message: String) {
        let mut state = lock(&self.state);
        let status = if outcome.is_ok() {
            TaskStatus::Completed
        } else {
            TaskStatus::Failed
        };
        if self.transition(&mut state, status, message) {
            state.outcome = Some(outcome);
            state.question = None;
        }
    }

    /// Cancels the task; the status it had already ended with otherwise.
    fn cancel(&self) -> Result<(), TaskStatus> {
        let mut state = lock(&self.state);
        let question = state.question.take();
        if self.transition(&mut state, TaskStatus::Cancelled, "cancelled by the client".to_owned()) {
            Ok(())
        } else {
            state.question = question;
            Err(state.status.clone())
        }
    }

    /// Asks the question whose `elicitation/create` params are `params`: the task is
    /// `input_required` (saying `message`) until it is answered. `None` once the task has ended.
    fn pose(&self, params: Value, message: String) -> Option<oneshot::Receiver<Angle>> {
        let (answer, answered) = oneshot::channel();
        let mut state = lock(&self.state);
        state.question = Some(Question {
            params,
            answer: Some(answer),
            asked: false,
        });
        if self.transition(&mut state, TaskStatus::InputRequired, message) {
            Some(answered)
        } else {
            state.question = None;
            None
        }
    }

    /// Answers the pending question under `key` with `angle`; the task works again. False (and
    /// nothing happens) when no question is pending under that key.
    fn answer(&self, key: &str, angle: Angle) -> bool {
        let mut state = lock(&self.state);
        if key != QUESTION_KEY || state.status != TaskStatus::InputRequired {
            return false;
        }
        let Some(answer) = state.question.take().and_then(|mut question| question.answer.take()) else {
            return false;
        };
        let message = match &angle {
            Some(angle) => format!("answered: angle {angle}"),
            None => "answered: no angle".to_owned(),
        };
        self.transition(&mut state, TaskStatus::Working, message);
        // The work may have ended (expired) meanwhile: nobody to tell then.
        let _ = answer.send(angle);
        true
    }

    /// What a `tasks/result` waiter should do now; `Ask` marks the question as being asked.
    fn look(&self) -> Look {
        let mut state = lock(&self.state);
        match (&state.status, &state.outcome) {
            (TaskStatus::Cancelled, _) => return Look::Cancelled,
            (_, Some(outcome)) => return Look::Done(outcome.clone()),
            _ => {}
        }
        match state.question.as_mut() {
            Some(question) if !question.asked => {
                question.asked = true;
                Look::Ask(question.params.clone())
            }
            _ => Look::Wait,
        }
    }

    /// The question being asked went unanswered (its `tasks/result` ended): the next waiter asks.
    fn unask(&self) {
        let mut state = lock(&self.state);
        if let Some(question) = state.question.as_mut() {
            question.asked = false;
            self.changes.send_replace(());
        }
    }

    /// Waits `duration`; false when the task ends first (the wait is cut short).
    async fn pause(&self, duration: Duration) -> bool {
        let mut changes = self.changes();
        let end = tokio::time::Instant::now() + duration;
        loop {
            if self.status().is_terminal() {
                return false;
            }
            tokio::select! {
                () = tokio::time::sleep_until(end) => return !self.status().is_terminal(),
                _ = changes.changed() => {}
            }
        }
    }

    /// The task as the `initialize` era shows it.
    fn task(&self) -> Task {
        self.task_of(&lock(&self.state))
    }

    fn task_of(&self, state: &State) -> Task {
        Task {
            task_id: self.id.clone(),
            status: state.status.clone(),
            status_message: Some(state.message.clone()),
            created_at: self.created_at.clone(),
            last_updated_at: state.updated_at.clone(),
            ttl: Some(self.ttl_ms),
            poll_interval: Some(self.poll_ms),
            meta: None,
            extra: plexus_protocol::JsonObject::new(),
        }
    }

    /// The task as the stateless era shows it, with what its status holds (result, error, input
    /// requests), marked `result_type`.
    fn detailed(&self, result_type: ResultType) -> Result<DetailedTask, ErrorObject> {
        let state = lock(&self.state);
        let (result, error) = match &state.outcome {
            Some(Ok(Value::Object(result))) => (Some(result.clone()), None),
            Some(Err(error)) => (None, Some(error.clone())),
            _ => (None, None),
        };
        let input_requests = match &state.question {
            Some(question) if state.status == TaskStatus::InputRequired => {
                let request = json!({"method": method_names::ELICITATION_CREATE, "params": question.params});
                let request: InputRequest = serde_json::from_value(request).map_err(|e| {
                    ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("task {}: cannot encode its input request: {e}", self.id),
                    )
                })?;
                Some(InputRequests::from([(QUESTION_KEY.to_owned(), request)]))
            }
            _ => None,
        };
        Ok(DetailedTask {
            result_type: Some(result_type),
            task_id: self.id.clone(),
            status: state.status.clone(),
            status_message: Some(state.message.clone()),
            created_at: self.created_at.clone(),
            last_updated_at: state.updated_at.clone(),
            ttl_ms: Some(self.ttl_ms),
            poll_interval_ms: Some(self.poll_ms),
            result,
            error,
            input_requests,
            meta: None,
            extra: plexus_protocol::JsonObject::new(),
        })
    }
}

/// Adds what `--tasks` declares to `capabilities`: for a session of the `initialize` era at
/// `legacy_version`, the experimental `tasks` capability when that version has tasks
/// (2025-11-25); for the stateless era (`None`), the tasks extension.
pub(crate) fn declare(capabilities: &mut Value, legacy_version: Option<&str>) {
    match legacy_version {
        None => capabilities["extensions"][TASKS_EXTENSION] = json!({}),
        Some(version) if has_tasks(version) => {
            capabilities["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        }
        Some(_) => {}
    }
}

/// Whether the `initialize`-era `version` has (experimental) tasks.
fn has_tasks(version: &str) -> bool {
    version
        .parse::<plexus_protocol::ProtocolVersion>()
        .is_ok_and(plexus_protocol::ProtocolVersion::has_tasks)
}

/// `{"io.modelcontextprotocol/related-task": {"taskId": id}}`.
fn related(id: &str) -> Value {
    json!({RELATED_TASK_META_KEY: {"taskId": id}})
}

/// -32602: no task `id` (that the asker may see).
fn not_found(id: &str) -> ErrorObject {
    // An id the server made is 32 hex digits: a longer one is shown cut, not echoed whole.
    let shown: String = id.chars().take(64).collect();
    let cut = if shown.len() < id.len() { "…" } else { "" };
    ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("task {shown}{cut} not found"))
}

/// -32602: task `record` has expired.
fn expired(record: &Record) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INVALID_PARAMS,
        format!(
            "task {} has expired (its ttl of {} ms has passed)",
            record.id, record.ttl_ms
        ),
    )
}

/// A fresh task id: 128 bits from the operating system's generator, as 32 hex digits.
fn new_task_id() -> Result<String, ErrorObject> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot draw a random task id: {e}")))?;
    Ok(bytes.iter().fold(String::with_capacity(32), |mut id, byte| {
        use std::fmt::Write as _;
        let _ = write!(id, "{byte:02x}");
        id
    }))
}

/// `time` in ISO 8601, UTC, to the millisecond: `2026-07-28T10:00:05.123Z`.
fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (year, month, day) = civil_date(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        since.subsec_millis()
    )
}

/// The Gregorian date of the day `days` after 1970-01-01: years counted from 0000-03-01 in
/// 400-year cycles of 146 097 days, each year starting in March so that February's leap day ends
/// it.
fn civil_date(days: u64) -> (u64, u64, u64) {
    const DAYS_TO_EPOCH: u64 = 719_468; // from 0000-03-01 to 1970-01-01
    let days = days + DAYS_TO_EPOCH;
    let cycle = days / 146_097;
    let day_of_cycle = days % 146_097;
    let year_of_cycle = (day_of_cycle - day_of_cycle / 1460 + day_of_cycle / 36_524 - day_of_cycle / 146_096) / 365;
    let day_of_year = day_of_cycle - (365 * year_of_cycle + year_of_cycle / 4 - year_of_cycle / 100);
    let march_month = (5 * day_of_year + 2) / 153; // 0 = March … 11 = February
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = cycle * 400 + year_of_cycle + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        let at = |seconds: u64, millis: u64| iso8601(UNIX_EPOCH + Duration::from_millis(seconds * 1000 + millis));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(at(951_868_799, 999), "2000-02-29T23:59:59.999Z");
        assert_eq!(at(1_700_000_000, 120), "2023-11-14T22:13:20.120Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
        assert_eq!(at(1_798_761_599, 0), "2026-12-31T23:59:59.000Z");
    }

    #[test]
    fn task_ids_are_128_random_bits_in_hex() {
        let (a, b) = (new_task_id().unwrap(), new_task_id().unwrap());
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn the_capability_goes_where_the_era_wants_it() {
        let mut legacy = json!({"tools": {}});
        declare(&mut legacy, Some("2025-11-25"));
        assert_eq!(
            legacy["tasks"],
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
        let mut older = json!({});
        declare(&mut older, Some("2025-06-18"));
        assert_eq!(older, json!({}));
        let mut modern = json!({"extensions": {"io.modelcontextprotocol/skills": {}}});
        declare(&mut modern, None);
        assert_eq!(
            modern["extensions"],
            json!({"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}})
        );
    }

    #[test]
    fn a_long_unknown_id_is_cut_in_the_error() {
        assert_eq!(not_found("abc").message, "task abc not found");
        let long = "x".repeat(100);
        assert_eq!(not_found(&long).message, format!("task {}… not found", "x".repeat(64)));
    }
}
