//! What a session does with a `tools/call` of `research` and with the `tasks/*` methods, in each
//! era.

use std::borrow::Cow;
use std::sync::Arc;

use plexus_jsonrpc::{ErrorCode, ErrorObject, RawValue, RequestId};
use plexus_protocol::{
    CreateTaskResult, ResultType, TASKS_EXTENSION, TaskMetadata, TaskRequestParams, UpdateTaskRequestParams,
    methods as method_names,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::research::{Progress, RESEARCH, Research, angle_of};
use super::{
    DEFAULT_TTL_MS, Look, MIN_TTL_MS, MISSING_CAPABILITY, Owner, QUESTION_KEY, Record, expired, has_tasks, related,
};
use crate::server::{Output, Session, empty, lock, parse_params, raw};

type Outcome = Result<Box<RawValue>, ErrorObject>;

/// The params of a `tools/call` of `research`.
#[derive(Deserialize)]
struct ResearchCall<'a> {
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    /// The `initialize` era's request for a task.
    #[serde(default)]
    task: Option<TaskMetadata>,
    #[serde(default, rename = "_meta")]
    meta: Option<CallMeta>,
}

#[derive(Deserialize)]
struct CallMeta {
    #[serde(default, rename = "progressToken")]
    progress_token: Option<Value>,
    /// The stateless era's envelope: the capabilities the client declares with this request.
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Option<Map<String, Value>>,
}

/// Whether the `tools/call` params `params` call `research` (read only with `--tasks`).
pub(crate) fn calls_research(params: &str) -> bool {
    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
    }
    serde_json::from_str::<Named<'_>>(params).is_ok_and(|named| named.name == RESEARCH)
}

impl Session {
    /// Whether this session negotiated the `initialize` era's tasks (2025-11-25).
    fn has_legacy_tasks(&self) -> bool {
        !self.is_modern() && lock(&self.state).protocol_version.as_deref().is_some_and(has_tasks)
    }

    /// A `tools/call` of `research` (`modern`: in the stateless era): answered at once with the
    /// task it creates, or refused when it was not called as a task.
    pub(crate) fn call_research(self: &Arc<Self>, id: RequestId, params: &str, modern: bool, out: &mut Vec<Output>) {
        let outcome = self.start_research(params, modern);
        self.respond_to_tool_call(id, outcome, out);
    }

    fn start_research(self: &Arc<Self>, params: &str, modern: bool) -> Outcome {
        let Some(tasks) = self.server.tasks.as_ref() else {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "unknown tool: research"));
        };
        let call: ResearchCall<'_> = parse_params("tools/call", params)?;
        let meta = call.meta.unwrap_or(CallMeta {
            progress_token: None,
            client_capabilities: None,
        });
        let (owner, ttl_ms, progress_token, can_ask) = if modern {
            let declared = meta.client_capabilities.unwrap_or_default();
            let extension = declared
                .get("extensions")
                .and_then(|extensions| extensions.get(TASKS_EXTENSION))
                .is_some_and(Value::is_object);
            if !extension {
                return Err(missing_extension());
            }
            (
                Owner::Stateless,
                DEFAULT_TTL_MS,
                None,
                declared.contains_key("elicitation"),
            )
        } else {
            let Some(task) = call.task.filter(|_| self.has_legacy_tasks()) else {
                return Err(self.not_as_task());
            };
            let ttl = task.ttl.unwrap_or(DEFAULT_TTL_MS).clamp(MIN_TTL_MS, DEFAULT_TTL_MS);
            // Whether the client can be asked is known when a `tasks/result` asks it.
            (Owner::Session(Arc::downgrade(self)), ttl, meta.progress_token, true)
        };
        crate::tools::check_progress_token(progress_token.as_ref())?;
        let research = Research::parse(call.arguments)?;
        let record = tasks.create(owner, ttl_ms, research.starting())?;
        self.record(json!({"event": "task-created", "id": record.id(), "tool": RESEARCH}));
        let created = if modern {
            raw(&record.detailed(ResultType::Task)?)
        } else {
            raw(&CreateTaskResult {
                task: record.task(),
                meta: None,
                extra: plexus_protocol::JsonObject::new(),
            })
        };
        let progress = progress_token.map(|token| Progress {
            session: Arc::downgrade(self),
            token,
        });
        tokio::spawn(research.run(record, progress, can_ask));
        created
    }

    /// -32601 for `research` called without a task in the `initialize` era, as 2025-11-25 has a
    /// server answer a call of a task-only tool made without a task.
    fn not_as_task(&self) -> ErrorObject {
        let message = "research must be called as a task (execution.taskSupport is required)";
        let version = lock(&self.state).protocol_version.clone();
        let message = match version.filter(|version| !has_tasks(version)) {
            Some(version) => {
                format!("{message}, and tasks need protocol version 2025-11-25 (this session speaks {version})")
            }
            None => message.to_owned(),
        };
        ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, message)
    }

    /// A `tasks/*` request (`modern`: in the stateless era). The stateless era has `tasks/get`,
    /// `tasks/update` and `tasks/cancel`; the `initialize` era at 2025-11-25 has `tasks/get`,
    /// `tasks/result`, `tasks/cancel` and `tasks/list`; anything else is -32601.
    pub(crate) fn task_request(
        self: &Arc<Self>,
        id: RequestId,
        method: &str,
        params: &str,
        modern: bool,
        out: &mut Vec<Output>,
    ) {
        let legacy = !modern && self.has_legacy_tasks();
        let outcome = match method {
            method_names::TASKS_GET if modern || legacy => self.get_task(params, modern),
            method_names::TASKS_CANCEL if modern || legacy => self.cancel_task(params, modern),
            method_names::TASKS_UPDATE if modern => self.update_task(params),
            method_names::TASKS_LIST if legacy => self.list_tasks(params),
            method_names::TASKS_RESULT if legacy => return self.task_result(id, params, out),
            other => {
                let why = if modern {
                    "the tasks extension has tasks/get, tasks/update and tasks/cancel".to_owned()
                } else if legacy {
                    "the tasks of 2025-11-25 have tasks/get, tasks/result, tasks/cancel and tasks/list".to_owned()
                } else {
                    let version = lock(&self.state).protocol_version.clone();
                    let version = version.as_deref().unwrap_or("no version: it is not initialized");
                    format!("tasks need protocol version 2025-11-25; this session speaks {version}")
                };
                Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("method not found: {other} ({why})"),
                ))
            }
        };
        self.respond(id, outcome, out);
    }

    /// The task the params of `method` name, as this session sees it.
    fn named_task(self: &Arc<Self>, method: &str, params: &str, modern: bool) -> Result<Arc<Record>, ErrorObject> {
        let TaskRequestParams { task_id, .. } = parse_params(method, params)?;
        let tasks = self
            .server
            .tasks
            .as_ref()
            .expect("tasks/* reach here only with --tasks");
        tasks.find(&task_id, self, modern)
    }

    fn get_task(self: &Arc<Self>, params: &str, modern: bool) -> Outcome {
        let record = self.named_task(method_names::TASKS_GET, params, modern)?;
        if modern {
            raw(&record.detailed(ResultType::Complete)?)
        } else {
            raw(&record.task())
        }
    }

    /// `tasks/cancel`: logged as `{"event":"task-cancelled","id":…}` when it names a task; the
    /// task ends `cancelled`. The `initialize` era answers with the task (-32602 for one that had
    /// ended); the stateless era acknowledges (a task that had ended stays as it was).
    fn cancel_task(self: &Arc<Self>, params: &str, modern: bool) -> Outcome {
        if let Ok(TaskRequestParams { task_id, .. }) = serde_json::from_str(params) {
            self.record(json!({"event": "task-cancelled", "id": task_id}));
        }
        let record = self.named_task(method_names::TASKS_CANCEL, params, modern)?;
        match record.cancel() {
            Ok(()) | Err(_) if modern => empty(),
            Ok(()) => raw(&record.task()),
            Err(status) => Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "task {} has already ended ({}): a finished task cannot be cancelled",
                    record.id(),
                    json!(status).as_str().unwrap_or("?")
                ),
            )),
        }
    }

    /// `tasks/update` (stateless era): answers to the task's input requests; keys not pending
    /// are ignored.
    fn update_task(self: &Arc<Self>, params: &str) -> Outcome {
        let record = self.named_task(method_names::TASKS_UPDATE, params, true)?;
        let UpdateTaskRequestParams { input_responses, .. } = parse_params(method_names::TASKS_UPDATE, params)?;
        for (key, response) in &input_responses {
            record.answer(key, angle_of(response));
        }
        empty()
    }

    /// `tasks/list` (`initialize` era): this session's live tasks, newest first, in one page.
    fn list_tasks(self: &Arc<Self>, params: &str) -> Outcome {
        #[derive(Deserialize)]
        struct Cursor {
            #[serde(default)]
            cursor: Option<String>,
        }
        let Cursor { cursor } = parse_params(method_names::TASKS_LIST, params)?;
        if let Some(cursor) = cursor {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("invalid params for tasks/list: unknown cursor {cursor:?} (the list has one page)"),
            ));
        }
        let tasks = self
            .server
            .tasks
            .as_ref()
            .expect("tasks/* reach here only with --tasks");
        let listed: Vec<_> = tasks.of_session(self).iter().map(|record| record.task()).collect();
        raw(&json!({"tasks": listed}))
    }

    /// `tasks/result` (`initialize` era): waits on a task of its own until the task ends, asking
    /// the client the task's question meanwhile (related to this request: over Streamable HTTP
    /// on its stream).
    fn task_result(self: &Arc<Self>, id: RequestId, params: &str, out: &mut Vec<Output>) {
        let record = match self.named_task(method_names::TASKS_RESULT, params, false) {
            Ok(record) => record,
            Err(error) => return self.respond(id, Err(error), out),
        };
        let session = Arc::clone(self);
        self.spawn_request(id, async move { session.result_of(&record).await }, out);
    }

    /// The outcome of task `record` once it ends: its result with `_meta` naming the task, the
    /// error it failed with, or -32603 for a cancelled one; -32602 when it expires first (a
    /// question being asked included).
    async fn result_of(&self, record: &Record) -> Outcome {
        let deadline = tokio::time::Instant::from_std(record.deadline);
        let mut changes = record.changes();
        loop {
            match record.look() {
                Look::Done(Ok(mut result)) => {
                    if let Some(fields) = result.as_object_mut() {
                        fields.insert("_meta".to_owned(), related(record.id()));
                    }
                    return raw(&result);
                }
                Look::Done(Err(error)) => return Err(error),
                Look::Cancelled => {
                    return Err(ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("task {} was cancelled: it has no result", record.id()),
                    ));
                }
                Look::Ask(params) => {
                    if tokio::time::timeout_at(deadline, self.ask_for(record, params))
                        .await
                        .is_err()
                    {
                        return Err(expired(record));
                    }
                }
                Look::Wait => {
                    tokio::select! {
                        _ = changes.changed() => {}
                        () = tokio::time::sleep_until(deadline) => return Err(expired(record)),
                    }
                }
            }
        }
    }

    /// Asks the client task `record`'s question (`elicitation/create` with `params`, `_meta`
    /// naming the task) and gives the task the answer: a client that cannot or will not answer
    /// (no elicitation capability, an error, no answer in time) means no angle. When this request
    /// ends before the answer, the question waits for the next `tasks/result`.
    async fn ask_for(&self, record: &Record, mut params: Value) {
        struct Unasked<'a>(Option<&'a Record>);
        impl Drop for Unasked<'_> {
            fn drop(&mut self) {
                if let Some(record) = self.0 {
                    record.unask();
                }
            }
        }
        let mut unasked = Unasked(Some(record));
        params["_meta"] = related(record.id());
        let angle = match self.ask_client(method_names::ELICITATION_CREATE, &params).await {
            Ok(result) => serde_json::from_str(result.get())
                .ok()
                .and_then(|result| angle_of(&result)),
            Err(_) => None,
        };
        unasked.0 = None;
        // No effect when the task was cancelled meanwhile.
        record.answer(QUESTION_KEY, angle);
    }
}

/// -32021 with the capability a stateless `research` call needs.
fn missing_extension() -> ErrorObject {
    let mut error = ErrorObject::new(
        MISSING_CAPABILITY,
        format!(
            "Missing required client capability: research runs only as a task; declare the {TASKS_EXTENSION} extension in the request's clientCapabilities"
        ),
    );
    error.data =
        serde_json::value::to_raw_value(&json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})).ok();
    error
}
