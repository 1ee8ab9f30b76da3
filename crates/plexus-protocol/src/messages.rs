//! Each MCP method tied to its name, params type and result type, so that a session can send and
//! receive them typed: `session.request::<CallToolRequest>(params)` knows it gets a [`CallToolResult`].

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::methods;
use crate::{
    CallToolRequestParams, CallToolResult, CancelTaskResult, CancelledNotificationParams, CompleteRequestParams,
    CompleteResult, CreateMessageRequestParams, CreateMessageResult, DiscoverResult, ElicitRequestParams, ElicitResult,
    ElicitationCompleteNotificationParams, EmptyResult, GetPromptRequestParams, GetPromptResult, GetTaskResult,
    InitializeRequestParams, InitializeResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListRootsResult, ListTasksResult, ListToolsResult, LoggingMessageNotificationParams,
    NotificationParams, PaginatedRequestParams, ProgressNotificationParams, ReadResourceRequestParams,
    ReadResourceResult, RequestParams, ResourceUpdatedNotificationParams, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult, TaskRequestParams, TaskStatusNotificationParams, UnsubscribeRequestParams,
};

/// An MCP request method: its name, the type of its params and the type of its result.
pub trait McpRequest {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned;
    /// The result.
    type Result: Serialize + DeserializeOwned;
}

/// An MCP notification method: its name and the type of its params.
pub trait McpNotification {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned;
}

macro_rules! requests {
    ($( $(#[$attr:meta])* $name:ident = $method:path, $params:ty => $result:ty; )+) => {
        $(
            $(#[$attr])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name {}

            impl McpRequest for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
                type Result = $result;
            }
        )+
    };
}

macro_rules! notifications {
    ($( $(#[$attr:meta])* $name:ident = $method:path, $params:ty; )+) => {
        $(
            $(#[$attr])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name {}

            impl McpNotification for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
            }
        )+
    };
}

requests! {
    /// `initialize` (client → server).
    InitializeRequest = methods::INITIALIZE, InitializeRequestParams => InitializeResult;
    /// `ping` (either way).
    PingRequest = methods::PING, RequestParams => EmptyResult;
    /// `server/discover` (client → server, stateless era): its params carry only the envelope.
    DiscoverRequest = methods::SERVER_DISCOVER, RequestParams => DiscoverResult;
    /// `subscriptions/listen` (client → server, stateless era). The result comes only when the
    /// server ends the subscription; notifications come first.
    SubscriptionsListenRequest = methods::SUBSCRIPTIONS_LISTEN, SubscriptionsListenRequestParams => SubscriptionsListenResult;
    /// `tools/list` (client → server).
    ListToolsRequest = methods::TOOLS_LIST, PaginatedRequestParams => ListToolsResult;
    /// `tools/call` (client → server). A task-augmented call answers with a `CreateTaskResult`
    /// instead; decode that one yourself. In the stateless era the answer may be `input_required`:
    /// decode it as [`ResultOrInputRequired`](crate::ResultOrInputRequired)`<CallToolResult>`
    /// (the same holds for `prompts/get` and `resources/read`).
    CallToolRequest = methods::TOOLS_CALL, CallToolRequestParams => CallToolResult;
    /// `resources/list` (client → server).
    ListResourcesRequest = methods::RESOURCES_LIST, PaginatedRequestParams => ListResourcesResult;
    /// `resources/templates/list` (client → server).
    ListResourceTemplatesRequest = methods::RESOURCES_TEMPLATES_LIST, PaginatedRequestParams => ListResourceTemplatesResult;
    /// `resources/read` (client → server).
    ReadResourceRequest = methods::RESOURCES_READ, ReadResourceRequestParams => ReadResourceResult;
    /// `resources/subscribe` (client → server).
    SubscribeRequest = methods::RESOURCES_SUBSCRIBE, SubscribeRequestParams => EmptyResult;
    /// `resources/unsubscribe` (client → server).
    UnsubscribeRequest = methods::RESOURCES_UNSUBSCRIBE, UnsubscribeRequestParams => EmptyResult;
    /// `prompts/list` (client → server).
    ListPromptsRequest = methods::PROMPTS_LIST, PaginatedRequestParams => ListPromptsResult;
    /// `prompts/get` (client → server).
    GetPromptRequest = methods::PROMPTS_GET, GetPromptRequestParams => GetPromptResult;
    /// `completion/complete` (client → server).
    CompleteRequest = methods::COMPLETION_COMPLETE, CompleteRequestParams => CompleteResult;
    /// `logging/setLevel` (client → server).
    SetLevelRequest = methods::LOGGING_SET_LEVEL, SetLevelRequestParams => EmptyResult;
    /// `roots/list` (server → client).
    ListRootsRequest = methods::ROOTS_LIST, RequestParams => ListRootsResult;
    /// `sampling/createMessage` (server → client).
    CreateMessageRequest = methods::SAMPLING_CREATE_MESSAGE, CreateMessageRequestParams => CreateMessageResult;
    /// `elicitation/create` (server → client).
    ElicitRequest = methods::ELICITATION_CREATE, ElicitRequestParams => ElicitResult;
    /// `tasks/get` (either way).
    GetTaskRequest = methods::TASKS_GET, TaskRequestParams => GetTaskResult;
    /// `tasks/result` (either way): the result of the original request, whatever its type.
    GetTaskPayloadRequest = methods::TASKS_RESULT, TaskRequestParams => JsonObject;
    /// `tasks/cancel` (either way).
    CancelTaskRequest = methods::TASKS_CANCEL, TaskRequestParams => CancelTaskResult;
    /// `tasks/list` (either way).
    ListTasksRequest = methods::TASKS_LIST, PaginatedRequestParams => ListTasksResult;
}

notifications! {
    /// `notifications/initialized` (client → server).
    InitializedNotification = methods::INITIALIZED, NotificationParams;
    /// `notifications/subscriptions/acknowledged` (server → client, stateless era).
    SubscriptionsAcknowledgedNotification = methods::SUBSCRIPTIONS_ACKNOWLEDGED, SubscriptionsAcknowledgedNotificationParams;
    /// `notifications/tools/list_changed` (server → client).
    ToolListChangedNotification = methods::TOOLS_LIST_CHANGED, NotificationParams;
    /// `notifications/resources/list_changed` (server → client).
    ResourceListChangedNotification = methods::RESOURCES_LIST_CHANGED, NotificationParams;
    /// `notifications/resources/updated` (server → client).
    ResourceUpdatedNotification = methods::RESOURCES_UPDATED, ResourceUpdatedNotificationParams;
    /// `notifications/prompts/list_changed` (server → client).
    PromptListChangedNotification = methods::PROMPTS_LIST_CHANGED, NotificationParams;
    /// `notifications/message` (server → client).
    LoggingMessageNotification = methods::LOGGING_MESSAGE, LoggingMessageNotificationParams;
    /// `notifications/roots/list_changed` (client → server).
    RootsListChangedNotification = methods::ROOTS_LIST_CHANGED, NotificationParams;
    /// `notifications/elicitation/complete` (server → client).
    ElicitationCompleteNotification = methods::ELICITATION_COMPLETE, ElicitationCompleteNotificationParams;
    /// `notifications/progress` (either way).
    ProgressNotification = methods::PROGRESS, ProgressNotificationParams;
    /// `notifications/cancelled` (either way).
    CancelledNotification = methods::CANCELLED, CancelledNotificationParams;
    /// `notifications/tasks/status` (either way).
    TaskStatusNotification = methods::TASKS_STATUS, TaskStatusNotificationParams;
}
