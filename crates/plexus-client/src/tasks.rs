//! Tool calls the server runs as tasks, followed to their result so that a caller gets a
//! `CallToolResult` as from any call (what the tasks extension calls driving the polling flow
//! internally). Both generations:
//!
//! - The tasks extension of the stateless era (`io.modelcontextprotocol/tasks`): every request's
//!   envelope declares it, and the server decides per call. A `tools/call` answered
//!   `resultType: "task"` is polled with `tasks/get` until the task holds its result or its error;
//!   the input requests of an `input_required` task are answered by the session's
//!   [`ClientHandler`](crate::ClientHandler), each key once, with `tasks/update` (at most
//!   [`MAX_INPUT_ROUNDS`](crate::MAX_INPUT_ROUNDS) times, as for a request's rounds).
//! - The experimental tasks of 2025-11-25 (the `initialize` era): a tool that must run as a task is
//!   called with a `task` field ([`Client::call_tool_as_task_ref`](crate::Client::call_tool_as_task_ref)),
//!   polled with `tasks/get` until it is terminal or waits for input, and its result fetched with
//!   `tasks/result`, on whose answer the server asks its questions as ordinary server requests.
//!   The call's progress token stays valid for the task's life: the server's progress reaches
//!   the caller's callback until the task ends.
//!
//! Each change of the task's status or message reaches the caller's progress callback (the last
//! progress and total the server reported, with the task's message) and restarts the call's timeout, up to its cap
//! ([`RequestOptions::max_total_timeout`], else [`TASK_WAIT_CAP_FACTOR`] times the timeout).
//! A task the caller stops waiting for (timeout, [`CancelHandle`](crate::CancelHandle), a dropped
//! future) is cancelled on the server with `tasks/cancel`, once.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use plexus_jsonrpc::RawValue;
use plexus_protocol::{
    CreateTaskResult, DetailedTask, ProgressNotificationParams, ProgressToken, Task, TaskRequestParams, TaskStatus,
    UpdateTaskRequestParams, methods,
};
use serde::Serialize;
use tokio::time::Instant;

use crate::client::decode_result;
use crate::progress::ProgressState;
use crate::request::{Call, RequestOptions, send_call};
use crate::session::{Shared, lock};
use crate::{CancelHandle, ClientError};

/// How often a task is polled when the server suggests no interval.
pub const DEFAULT_TASK_POLL: Duration = Duration::from_secs(1);
/// The shortest polling interval a server may ask for (a smaller one is raised to it).
pub const MIN_TASK_POLL: Duration = Duration::from_millis(25);
/// The longest polling interval a server may ask for (a larger one is lowered to it).
pub const MAX_TASK_POLL: Duration = Duration::from_secs(30);
/// Without a [`RequestOptions::max_total_timeout`], a task is waited for at most this many times
/// the call's timeout, however often it changes.
pub const TASK_WAIT_CAP_FACTOR: u32 = 10;
/// How long the `tasks/cancel` of a task given up on may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// Calls tool `name` as an experimental task (2025-11-25) and follows the task to its result.
pub(crate) async fn call_experimental<A: Serialize + ?Sized + Sync>(
    shared: &Arc<Shared>,
    name: &str,
    arguments: Option<&A>,
    options: &RequestOptions,
    request_timeout: Duration,
) -> Result<Box<RawValue>, ClientError> {
    /// `CallToolRequestParams` with borrowed fields and the `task` field asking for a task.
    #[derive(Serialize)]
    struct Params<'a, A: ?Sized> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<&'a A>,
        task: serde_json::Map<String, serde_json::Value>,
    }
    let timeout = options.timeout.unwrap_or(request_timeout);
    let id = shared.next_id();
    let progress = (options.on_progress.is_some() || options.reset_timeout_on_progress)
        .then(|| Arc::new(ProgressState::new(options.on_progress.clone())));
    // The call's token outlives its request: registered before the call goes out, so that no
    // report between the answer and the first poll is lost.
    let registration = progress
        .as_ref()
        .map(|state| shared.register_task_progress(id, Arc::clone(state)));
    let mut create = options.clone();
    create.timeout = Some(timeout);
    let call = Call {
        id: Some(id),
        wire: None,
        method: methods::TOOLS_CALL,
        options: &create,
        default_timeout: timeout,
        cancellable: true,
    };
    let params = Params {
        name,
        arguments,
        task: serde_json::Map::new(),
    };
    let raw = send_call(shared, &call, Some(&params)).await?;
    let created: CreateTaskResult = decode_result(methods::TOOLS_CALL, &raw)?;
    let mut follower = Follower::new(
        shared,
        &created.task.task_id,
        options,
        timeout,
        request_timeout,
        id,
        progress,
    );
    let _registration = registration;
    follower.observe(&created.task.status, created.task.status_message.as_deref());
    let mut task = created.task;
    while !(task.status.is_terminal() || task.status == TaskStatus::InputRequired) {
        follower.pause(poll_interval(task.poll_interval)).await?;
        task = follower.poll::<Task>().await?;
        follower.observe(&task.status, task.status_message.as_deref());
    }
    // `tasks/result` waits for the end; the server asks for what it needs while it waits.
    let result = follower.fetch_result().await;
    // The server answered (the result, or the error the task ended with): the task is over.
    // Else (a timeout, a cancellation, a lost connection) the follower cancels it.
    match &result {
        Ok(_) | Err(ClientError::Rpc { .. }) => follower.done(),
        Err(ClientError::Cancelled { .. } | ClientError::Timeout { .. }) => follower.give_up().await,
        Err(_) => {}
    }
    result
}

/// Follows the extension's task whose seed state is `seed` (a `tools/call` answer of
/// `resultType: "task"`) to the call's result.
pub(crate) async fn follow_extension(
    shared: &Arc<Shared>,
    seed: &RawValue,
    options: &RequestOptions,
    timeout: Duration,
    request_timeout: Duration,
) -> Result<Box<RawValue>, ClientError> {
    let mut task: DetailedTask = decode_result(methods::TOOLS_CALL, seed)?;
    let mut follower = Follower::new(shared, &task.task_id, options, timeout, request_timeout, -1, None);
    let mut answered = HashSet::new();
    // A server that keeps asking new questions is answered at most this many times.
    let mut updates = 0;
    loop {
        follower.observe(&task.status, task.status_message.as_deref());
        match task.status {
            TaskStatus::Completed => {
                follower.done();
                let result = task.result.ok_or_else(|| ClientError::Task {
                    task_id: task.task_id.clone(),
                    problem: "the completed task holds no result".to_owned(),
                })?;
                return serde_json::value::to_raw_value(&result).map_err(|e| ClientError::InvalidResult {
                    method: methods::TASKS_GET.to_owned(),
                    source: Arc::new(e),
                });
            }
            TaskStatus::Failed => {
                follower.done();
                return Err(match task.error {
                    Some(error) => ClientError::Rpc {
                        method: methods::TOOLS_CALL.to_owned(),
                        error,
                    },
                    None => ClientError::Task {
                        task_id: task.task_id.clone(),
                        problem: failed_without_error(task.status_message.as_deref()),
                    },
                });
            }
            TaskStatus::Cancelled => {
                follower.done();
                return Err(ClientError::Task {
                    task_id: task.task_id.clone(),
                    problem: cancelled_by_server(task.status_message.as_deref()),
                });
            }
            TaskStatus::InputRequired => {
                if let Some(requests) = &task.input_requests {
                    let fresh: plexus_protocol::InputRequests = requests
                        .iter()
                        .filter(|(key, _)| !answered.contains(*key))
                        .map(|(key, request)| (key.clone(), request.clone()))
                        .collect();
                    if !fresh.is_empty() {
                        if updates == crate::MAX_INPUT_ROUNDS {
                            return Err(ClientError::InputRounds {
                                method: methods::TOOLS_CALL.to_owned(),
                                limit: crate::MAX_INPUT_ROUNDS,
                            });
                        }
                        updates += 1;
                        let answers =
                            crate::rounds::answer(shared, methods::TOOLS_CALL, &fresh, None, options.tag).await?;
                        answered.extend(fresh.into_keys());
                        follower.update(answers).await?;
                        // The answers were taken: look again without waiting a whole interval.
                        task = follower.poll::<DetailedTask>().await?;
                        continue;
                    }
                }
            }
            _ => {}
        }
        follower.pause(poll_interval(task.poll_interval_ms)).await?;
        task = follower.poll::<DetailedTask>().await?;
    }
}

/// The server's suggested interval, within [`MIN_TASK_POLL`] and [`MAX_TASK_POLL`].
fn poll_interval(suggested_ms: Option<u64>) -> Duration {
    suggested_ms
        .map_or(DEFAULT_TASK_POLL, Duration::from_millis)
        .clamp(MIN_TASK_POLL, MAX_TASK_POLL)
}

fn failed_without_error(message: Option<&str>) -> String {
    match message {
        Some(message) => format!("the task failed without an error: {message}"),
        None => "the task failed without an error".to_owned(),
    }
}

fn cancelled_by_server(message: Option<&str>) -> String {
    match message {
        Some(message) => format!("the server cancelled the task: {message}"),
        None => "the server cancelled the task".to_owned(),
    }
}

/// One task being followed: its deadline, what the caller was last told, and the cancellation
/// owed to the server when the caller stops waiting before the task ends.
struct Follower<'a> {
    shared: &'a Arc<Shared>,
    task_id: String,
    options: &'a RequestOptions,
    /// The call's timeout: how long the task may go without a change.
    idle: Duration,
    /// The timeout of each polling request.
    request_timeout: Duration,
    deadline: Instant,
    cap: Instant,
    last: Option<(TaskStatus, Option<String>)>,
    /// The token the call's progress carries (its request id; -1 when it carries none).
    token: i64,
    progress: Option<Arc<ProgressState>>,
    /// Cancelled by [`Client::cancel_all`](crate::Client::cancel_all), which has cancelled the
    /// task on the server.
    stop: CancelHandle,
    done: bool,
}

impl<'a> Follower<'a> {
    fn new(
        shared: &'a Arc<Shared>,
        task_id: &str,
        options: &'a RequestOptions,
        idle: Duration,
        request_timeout: Duration,
        token: i64,
        progress: Option<Arc<ProgressState>>,
    ) -> Follower<'a> {
        let stop = CancelHandle::new();
        lock(&shared.followed_tasks).insert(task_id.to_owned(), stop.clone());
        let now = Instant::now();
        let cap = options
            .max_total_timeout
            .unwrap_or(idle.saturating_mul(TASK_WAIT_CAP_FACTOR))
            .max(idle);
        Follower {
            shared,
            task_id: task_id.to_owned(),
            options,
            idle,
            request_timeout,
            deadline: now + idle,
            cap: now + cap,
            last: None,
            token,
            progress,
            stop,
            done: false,
        }
    }

    /// Takes in the task's `status` and `message`: a change restarts the timeout and reaches
    /// the caller's progress callback.
    fn observe(&mut self, status: &TaskStatus, message: Option<&str>) {
        let now = (status.clone(), message.map(str::to_owned));
        if self.last.as_ref() == Some(&now) {
            return;
        }
        let first = self.last.is_none();
        self.last = Some(now);
        self.deadline = (Instant::now() + self.idle).min(self.cap);
        if first && message.is_none() {
            return;
        }
        if let Some(callback) = &self.options.on_progress {
            let (progress, total) = self
                .progress
                .as_ref()
                .and_then(|p| p.last_progress())
                .unwrap_or((0.0, None));
            let token = if self.token >= 0 {
                ProgressToken::Number(self.token)
            } else {
                ProgressToken::String(self.task_id.clone())
            };
            let mut report = ProgressNotificationParams::new(token, progress, total);
            report.message = Some(match message {
                Some(message) => format!("task {}: {message}", status.as_str()),
                None => format!("task {}", status.as_str()),
            });
            callback(report);
        }
    }

    /// The latest time to wait until: the deadline, pushed by the server's own progress.
    fn effective_deadline(&self) -> Instant {
        let pushed = self
            .progress
            .as_ref()
            .and_then(|p| p.last())
            .map(|at| Instant::from_std(at) + self.idle);
        pushed
            .map_or(self.deadline, |pushed| pushed.max(self.deadline))
            .min(self.cap)
    }

    /// Waits `interval` before the next poll: a timeout or the caller's cancellation first ends
    /// the wait with an error (the task is cancelled on the server).
    async fn pause(&mut self, interval: Duration) -> Result<(), ClientError> {
        let deadline = self.effective_deadline();
        let wake = (Instant::now() + interval).min(deadline);
        let cancelled = async {
            match &self.options.cancel {
                Some(handle) => tokio::select! {
                    reason = handle.cancelled() => reason,
                    reason = self.stop.cancelled() => reason,
                },
                None => self.stop.cancelled().await,
            }
        };
        let stopped = tokio::select! {
            reason = cancelled => ClientError::Cancelled { reason: reason.to_string() },
            () = tokio::time::sleep_until(wake) => {
                if wake >= deadline && Instant::now() >= self.effective_deadline() {
                    self.timed_out()
                } else {
                    return Ok(());
                }
            }
        };
        self.give_up().await;
        Err(stopped)
    }

    /// The caller stops waiting: the task is cancelled on the server before the caller hears of
    /// it, so that a host that exits next (Ctrl-C) leaves no task running there (unless
    /// [`Client::cancel_all`](crate::Client::cancel_all) cancelled it already).
    async fn give_up(&mut self) {
        self.done = true;
        if self.unfollow() {
            cancel_on_server(self.shared, self.params()).await;
        }
    }

    /// Takes the task off the session's followed tasks; whether it was still there (nobody has
    /// cancelled it on the server yet).
    fn unfollow(&self) -> bool {
        lock(&self.shared.followed_tasks).remove(&self.task_id).is_some()
    }

    fn timed_out(&self) -> ClientError {
        ClientError::Timeout {
            method: format!("{} (task {})", methods::TOOLS_CALL, self.task_id),
            after: self.idle,
            unidentified: None,
        }
    }

    fn params(&self) -> TaskRequestParams {
        TaskRequestParams {
            task_id: self.task_id.clone(),
            ..TaskRequestParams::default()
        }
    }

    fn request_options(&self, timeout: Duration) -> RequestOptions {
        RequestOptions {
            timeout: Some(timeout),
            tag: self.options.tag,
            cancel: self.options.cancel.clone(),
            ..RequestOptions::default()
        }
    }

    /// `tasks/get`.
    async fn poll<R: serde::de::DeserializeOwned>(&self) -> Result<R, ClientError> {
        let options = self.request_options(self.request_timeout);
        let raw = crate::request::request(
            self.shared,
            methods::TASKS_GET,
            Some(&self.params()),
            &options,
            self.request_timeout,
            true,
        )
        .await?;
        decode_result(methods::TASKS_GET, &raw)
    }

    /// `tasks/update` with `answers`.
    async fn update(&self, answers: serde_json::Map<String, serde_json::Value>) -> Result<(), ClientError> {
        let params = UpdateTaskRequestParams {
            task_id: self.task_id.clone(),
            input_responses: answers,
            ..UpdateTaskRequestParams::default()
        };
        let options = self.request_options(self.request_timeout);
        crate::request::request(
            self.shared,
            methods::TASKS_UPDATE,
            Some(&params),
            &options,
            self.request_timeout,
            true,
        )
        .await
        .map(drop)
    }

    /// `tasks/result`, which the server answers when the task has ended: the call's result, or
    /// the error it failed with. It may wait until the cap.
    async fn fetch_result(&self) -> Result<Box<RawValue>, ClientError> {
        let remaining = self
            .cap
            .saturating_duration_since(Instant::now())
            .max(self.request_timeout);
        let mut options = self.request_options(remaining);
        if self.options.reset_timeout_on_progress {
            options.reset_timeout_on_progress = true;
            options.max_total_timeout = Some(remaining);
        }
        let fetched = crate::request::request(
            self.shared,
            methods::TASKS_RESULT,
            Some(&self.params()),
            &options,
            remaining,
            true,
        )
        .await;
        match fetched {
            Err(ClientError::Rpc { error, .. }) => Err(ClientError::Rpc {
                method: methods::TOOLS_CALL.to_owned(),
                error,
            }),
            other => other,
        }
    }

    /// The task ended (or the server ended it): nothing is owed to the server.
    fn done(&mut self) {
        self.done = true;
    }
}

impl Drop for Follower<'_> {
    fn drop(&mut self) {
        let followed = self.unfollow();
        if self.done || !followed {
            return;
        }
        // The caller stopped waiting (a timeout, a cancellation, an error, a dropped future)
        // while the task may still run: the server is asked to stop it.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = Arc::clone(self.shared);
        let params = self.params();
        runtime.spawn(async move { cancel_on_server(&shared, params).await });
    }
}

/// Cancels every task the session's calls are waiting for: their callers fail at once with
/// [`ClientError::Cancelled`] and `reason`, as the pending requests' do (see
/// [`Client::cancel_all`](crate::Client::cancel_all)), then the server is told, each within
/// `limit`; how many there were.
pub(crate) async fn cancel_followed(shared: &Arc<Shared>, reason: &str, limit: Duration) -> usize {
    let tasks: Vec<(String, CancelHandle)> = lock(&shared.followed_tasks).drain().collect();
    for (_, stop) in &tasks {
        stop.cancel(reason);
    }
    for (task_id, _) in &tasks {
        let params = TaskRequestParams {
            task_id: task_id.clone(),
            ..TaskRequestParams::default()
        };
        send_cancel(shared, params, limit).await;
    }
    tasks.len()
}

/// `tasks/cancel` of the task `params` names (its failure is only logged: the task then ends by
/// its TTL).
async fn cancel_on_server(shared: &Arc<Shared>, params: TaskRequestParams) {
    send_cancel(shared, params, CANCEL_TIMEOUT).await;
}

async fn send_cancel(shared: &Arc<Shared>, params: TaskRequestParams, limit: Duration) {
    let options = RequestOptions::with_timeout(limit);
    let cancelled = crate::request::request(shared, methods::TASKS_CANCEL, Some(&params), &options, limit, false).await;
    if let Err(error) = cancelled {
        tracing::debug!(server = %shared.name, task = %params.task_id, "tasks/cancel failed: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_interval_is_honoured_within_bounds() {
        assert_eq!(poll_interval(None), DEFAULT_TASK_POLL);
        assert_eq!(poll_interval(Some(0)), MIN_TASK_POLL);
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(u64::MAX)), MAX_TASK_POLL);
    }
}
