//! Tasks (since 2025-11-25): long-running requests the receiver answers with a task to poll.

use serde::{Deserialize, Serialize};

use crate::{JsonObject, RequestMeta};

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
