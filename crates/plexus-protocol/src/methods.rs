//! The name of every MCP request and notification method, of both eras (revisions 2024-11-05 to
//! 2026-07-28). The stateless era (2026-07-28) dropped `initialize`, `ping`, `logging/setLevel`,
//! `resources/(un)subscribe`, the `tasks/*` methods and the client's notifications but
//! `notifications/cancelled`; it added [`SERVER_DISCOVER`], [`SUBSCRIPTIONS_LISTEN`] and
//! [`SUBSCRIPTIONS_ACKNOWLEDGED`], and `roots/list`, `sampling/createMessage` and
//! `elicitation/create` come as input requests inside results instead of as requests.

/// `initialize` (client → server): the handshake.
pub const INITIALIZE: &str = "initialize";
/// `notifications/initialized` (client → server): the handshake is done.
pub const INITIALIZED: &str = "notifications/initialized";
/// `ping` (either way): liveness check.
pub const PING: &str = "ping";

/// `server/discover` (client → server, since 2026-07-28): the server's versions and capabilities,
/// without a handshake.
pub const SERVER_DISCOVER: &str = "server/discover";
/// `subscriptions/listen` (client → server, since 2026-07-28): a long-lived request for change
/// notifications.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `notifications/subscriptions/acknowledged` (server → client, since 2026-07-28): the first message
/// of a subscription.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// `tools/list` (client → server).
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call` (client → server).
pub const TOOLS_CALL: &str = "tools/call";
/// `notifications/tools/list_changed` (server → client).
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

/// `resources/list` (client → server).
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list` (client → server).
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read` (client → server).
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (client → server).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (client → server).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `notifications/resources/list_changed` (server → client).
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/resources/updated` (server → client): a subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";

/// `prompts/list` (client → server).
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get` (client → server).
pub const PROMPTS_GET: &str = "prompts/get";
/// `notifications/prompts/list_changed` (server → client).
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";

/// `completion/complete` (client → server).
pub const COMPLETION_COMPLETE: &str = "completion/complete";

/// `logging/setLevel` (client → server).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `notifications/message` (server → client): a log message.
pub const LOGGING_MESSAGE: &str = "notifications/message";

/// `roots/list` (server → client).
pub const ROOTS_LIST: &str = "roots/list";
/// `notifications/roots/list_changed` (client → server).
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// `sampling/createMessage` (server → client).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";

/// `elicitation/create` (server → client, since 2025-06-18).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `notifications/elicitation/complete` (server → client, since 2025-11-25): a URL-mode elicitation
/// finished.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// `notifications/progress` (either way).
pub const PROGRESS: &str = "notifications/progress";
/// `notifications/cancelled` (either way).
pub const CANCELLED: &str = "notifications/cancelled";

/// `tasks/get` (either way, since 2025-11-25).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result` (either way, since 2025-11-25).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/cancel` (either way, since 2025-11-25).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/list` (either way, since 2025-11-25).
pub const TASKS_LIST: &str = "tasks/list";
/// `notifications/tasks/status` (either way, since 2025-11-25).
pub const TASKS_STATUS: &str = "notifications/tasks/status";
/// `tasks/update` (client → server; the tasks extension, `io.modelcontextprotocol/tasks`, of the
/// stateless era): the answers to a task's `inputRequests`.
pub const TASKS_UPDATE: &str = "tasks/update";
/// `notifications/tasks` (server → client; the tasks extension): a task's whole state.
pub const TASKS_NOTIFICATION: &str = "notifications/tasks";

/// `skills/list` (client → server; the skills extension, `io.modelcontextprotocol/skills`). The
/// extension's methods are not in [`REQUESTS`], which lists the base schema's.
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get` (client → server; the skills extension).
pub const SKILLS_GET: &str = "skills/get";
/// `resources/directory/read` (client → server; the skills extension, when the server declares
/// `directoryRead`).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

/// Every request method above.
pub const REQUESTS: &[&str] = &[
    INITIALIZE,
    PING,
    SERVER_DISCOVER,
    SUBSCRIPTIONS_LISTEN,
    TOOLS_LIST,
    TOOLS_CALL,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    PROMPTS_LIST,
    PROMPTS_GET,
    COMPLETION_COMPLETE,
    LOGGING_SET_LEVEL,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    ELICITATION_CREATE,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_CANCEL,
    TASKS_LIST,
];

/// Every notification method above.
pub const NOTIFICATIONS: &[&str] = &[
    INITIALIZED,
    SUBSCRIPTIONS_ACKNOWLEDGED,
    TOOLS_LIST_CHANGED,
    RESOURCES_LIST_CHANGED,
    RESOURCES_UPDATED,
    PROMPTS_LIST_CHANGED,
    LOGGING_MESSAGE,
    ROOTS_LIST_CHANGED,
    ELICITATION_COMPLETE,
    PROGRESS,
    CANCELLED,
    TASKS_STATUS,
];
