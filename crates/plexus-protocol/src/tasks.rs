//! Tasks: long-running requests the receiver answers with a task to poll. Two generations: the
//! experimental tasks of 2025-11-25 (a request asks for a task with its `task` field; `tasks/get`
//! polls, `tasks/result` waits for the result) and the tasks extension of the stateless era
//! (`io.modelcontextprotocol/tasks`: the server decides, answering `resultType: "task"`;
//! `tasks/get` carries the result, the error or the input the task waits for, which
//! `tasks/update` answers).

use plexus_jsonrpc::ErrorObject;
use serde::{Deserialize, Serialize};

use crate::{InputRequests, JsonObject, RequestMeta, ResultType};

/// Asks for task-augmented execution of a request (the request's `task` field).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// How long to keep the task after it is created, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// The state of a task.
    pub enum TaskStatus {
        /// Running.
        Working = "working",
        /// Waiting for input from the requester.
        InputRequired = "input_required",
        /// Finished with a result.
        Completed = "completed",
        /// Finished with an error.
        Failed = "failed",
        /// Cancelled.
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// Whether the task has finished (completed, failed or cancelled).
    pub fn is_terminal(&self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// A task: the body of `tasks/get` and `tasks/cancel` results and of `notifications/tasks/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    pub task_id: String,
    /// Its state.
    pub status: TaskStatus,
    /// A human-readable note on the state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long it is kept after creation, in milliseconds; `None` (JSON `null`) for unlimited.
    pub ttl: Option<u64>,
    /// The suggested polling interval, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The result of `tasks/get`.
pub type GetTaskResult = Task;
/// The result of `tasks/cancel`.
pub type CancelTaskResult = Task;
/// The params of `notifications/tasks/status`.
pub type TaskStatusNotificationParams = Task;

/// The answer to a task-augmented request: the task that was created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The task.
    pub task: Task,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRequestParams {
    /// The task's id.
    pub task_id: String,
    /// Request metadata (progress token and other keys).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

paginated_result!(
    /// The result of `tasks/list`: one page of tasks.
    ListTasksResult,
    /// The tasks on this page.
    tasks: Task
);

/// The identifier of the tasks extension of the stateless era (2026-07-28), the key of its entry
/// in `capabilities.extensions` (the server's, and the client's in each request's envelope).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key that ties a message to a task (`{"taskId": …}`): a server's progress, status
/// and requests on behalf of a task carry it.
pub const RELATED_TASK_META_KEY: &str = "io.modelcontextprotocol/related-task";

/// A task of the tasks extension (2026-07-28): its state and, by its status, what it holds. The
/// body of a `resultType: "task"` answer to `tools/call` (the seed state), of `tasks/get`
/// results and of `notifications/tasks`.
///
/// ```
/// use plexus_protocol::{DetailedTask, TaskStatus};
///
/// let task: DetailedTask = serde_json::from_str(
///     r#"{"resultType":"complete","taskId":"t-1","status":"completed","createdAt":"2026-07-28T10:00:00Z",
///         "lastUpdatedAt":"2026-07-28T10:00:05Z","ttlMs":null,"pollIntervalMs":500,
///         "result":{"content":[{"type":"text","text":"done"}]}}"#,
/// )
/// .unwrap();
/// assert_eq!(task.status, TaskStatus::Completed);
/// assert_eq!(task.ttl_ms, None);
/// assert!(task.result.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// `"task"` on a `CreateTaskResult`, `"complete"` on a `tasks/get` result; absent in a
    /// notification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The task's id (the `Mcp-Name` of its requests over HTTP).
    pub task_id: String,
    /// Its state.
    pub status: TaskStatus,
    /// A human-readable note on the state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long it is kept after creation, in milliseconds; `None` (JSON `null`) for unlimited.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// The suggested polling interval, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// `completed`: the result of the original request (a `CallToolResult` for `tools/call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// `failed`: the JSON-RPC error the request ended with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// `input_required`: what the server needs, by keys unique over the task's life; answered
    /// with `tasks/update`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Metadata, kept verbatim.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The params of the tasks extension's `tasks/update`: answers to a task's input requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task's id.
    pub task_id: String,
    /// The answers, under the keys of the input requests they answer.
    pub input_responses: JsonObject,
    /// Fields this crate does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}
