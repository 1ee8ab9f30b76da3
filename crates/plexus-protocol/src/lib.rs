//! MCP schema types for both protocol eras, method names, protocol versions and version negotiation.
//!
//! ```
//! use plexus_protocol::{
//!     ClientCapabilities, ContentBlock, Implementation, InitializeRequestParams, InitializeResult,
//!     ListToolsResult, ProtocolVersion, methods,
//! };
//!
//! // The client offers the latest version...
//! let params = InitializeRequestParams::new(
//!     ProtocolVersion::LATEST,
//!     ClientCapabilities::default(),
//!     Implementation::new("plexus", "0.1.0"),
//! );
//! let mut line = Vec::new();
//! plexus_jsonrpc::encode_request(&mut line, &1.into(), methods::INITIALIZE, Some(&params)).unwrap();
//! assert!(line.starts_with(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25""#));
//!
//! // ...and an older server answers with the version it speaks.
//! let result: InitializeResult = serde_json::from_str(
//!     r#"{"protocolVersion":"2025-03-26","capabilities":{"tools":{"listChanged":true}},
//!         "serverInfo":{"name":"weather","version":"2.1.0"}}"#,
//! )
//! .unwrap();
//! let version = ProtocolVersion::negotiate(&result.protocol_version).unwrap();
//! assert_eq!(version, ProtocolVersion::V2025_03_26);
//! assert!(version.has_tool_annotations() && !version.has_structured_content());
//!
//! // Unknown fields and content types survive decoding.
//! let page: ListToolsResult = serde_json::from_str(
//!     r#"{"tools":[{"name":"forecast","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"x-cost":3}]}"#,
//! )
//! .unwrap();
//! assert!(page.tools[0].annotations.as_ref().unwrap().is_read_only());
//! assert_eq!(page.tools[0].extra["x-cost"], 3);
//! let block: ContentBlock = serde_json::from_str(r#"{"type":"hologram","frames":2}"#).unwrap();
//! assert_eq!(block.tag(), "hologram");
//! ```
//!
//! The types follow the MCP schema (2026-07-28 and the revisions before it) field for field, camelCase
//! on the wire. Every object keeps the fields this crate does not know in `extra` and its `_meta` in
//! `meta`, so a message decoded and encoded again is the message that arrived; tagged unions
//! ([`ContentBlock`], [`SamplingContentBlock`], [`ElicitRequestParams`], ...) keep blocks of a kind
//! they do not know as `Unknown`, so a newer server never makes decoding fail. Tagged unions are
//! decoded by reading their tag, never by trying one type after another.
//!
//! [`version`] holds the protocol revisions, their [`Era`], what each one has, and the negotiation
//! rules; [`methods`] the method names; [`messages`] ties each method to its params and result types.
//!
//! The stateless era (2026-07-28) adds: the per-request `_meta` envelope ([`envelope`],
//! [`RequestEnvelope`]); `server/discover` ([`DiscoverResult`]); multi-round-trip requests
//! ([`ResultType`], [`InputRequiredResult`], [`InputRequest`], [`InputResponse`],
//! [`ResultOrInputRequired`], and `inputResponses`/`requestState` on the params of `tools/call`,
//! `prompts/get` and `resources/read`); `subscriptions/listen` ([`SubscriptionFilter`] and its
//! params and result); caching hints (`ttlMs`, [`CacheScope`]) on the list results, `resources/read`
//! and `server/discover`; and its error codes with their data ([`errors`]). The new fields are
//! optional and not written when absent, so an initialize-era message encodes exactly as before.
//!
//! Dependencies: `plexus-jsonrpc` for [`RequestId`](plexus_jsonrpc::RequestId) (in
//! `notifications/cancelled`); `indexmap` so that a form-mode elicitation's fields keep the order
//! the server listed them in (a person is asked them in that order); `base64` for the
//! `=?base64?…?=` values of the 2026-07-28 revision's HTTP headers ([`http_headers`]). The tests validate what the client sends against each revision's
//! published JSON Schema with `jsonschema` (a dev-dependency, default features off so that it never
//! fetches anything over the network).
#![forbid(unsafe_code)]

#[macro_use]
mod macros;

mod caching;
mod capabilities;
mod common;
mod completion;
mod content;
mod discover;
mod elicitation;
pub mod envelope;
pub mod errors;
pub mod http_headers;
mod initialize;
mod logging;
pub mod messages;
pub mod methods;
mod mrtr;
mod notifications;
mod number;
mod prompts;
mod resources;
mod roots;
mod sampling;
pub mod skills;
mod subscriptions;
mod tagged;
mod tasks;
mod tools;
pub mod version;

pub use caching::{CacheScope, effective_ttl_ms};

pub use capabilities::{
    ClientCapabilities, ClientTaskRequests, ClientTasksCapability, ElicitationCapability, ElicitationTaskRequests,
    PromptsCapability, ResourcesCapability, RootsCapability, SamplingCapability, SamplingTaskRequests,
    ServerCapabilities, ServerTaskRequests, ServerTasksCapability, ToolTaskRequests, ToolsCapability,
};
pub use common::{
    Annotations, EmptyResult, Icon, IconTheme, Implementation, NotificationParams, PaginatedRequestParams,
    ProgressToken, RequestMeta, RequestParams, Role,
};
pub use completion::{
    CompleteRequestParams, CompleteResult, Completion, CompletionArgument, CompletionContext, CompletionReference,
    PromptReference, ResourceTemplateReference,
};
pub use content::{
    AudioContent, ContentBlock, EmbeddedResource, ImageContent, MediaContent, SamplingContentBlock, TextContent,
    ToolResultContent, ToolUseContent,
};
pub use discover::{DiscoverRequestParams, DiscoverResult};
pub use elicitation::{
    AnswerError, BooleanSchema, ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, ElicitValue, ElicitationCompleteNotificationParams, LegacyTitledEnumSchema, NumberSchema, NumberType,
    PrimitiveSchemaDefinition, RequestedSchema, StringFormat, StringSchema, TitledEnumItems, TitledEnumOption,
    TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledEnumItems, UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema, UrlElicitationRequiredErrorData,
};
pub use envelope::{EnvelopeError, RequestEnvelope};
pub use errors::{ErrorDataError, MissingCapabilityData, UnsupportedVersionData};
pub use initialize::{InitializeRequestParams, InitializeResult};
pub use logging::{LoggingLevel, LoggingMessageNotificationParams, ParseLoggingLevelError, SetLevelRequestParams};
pub use mrtr::{
    ElicitInputRequest, InputRequest, InputRequests, InputRequiredResult, InputResponse, InputResponseParams,
    InputResponses, ResultOrInputRequired, ResultType, ResultTypeError, RootsInputRequest, SamplingInputRequest,
};
pub use notifications::{CancelledNotificationParams, ProgressNotificationParams};
pub use prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage};
pub use resources::{
    BlobResourceContents, ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceContents, ResourceRequestParams, ResourceTemplate,
    ResourceUpdatedNotificationParams, SubscribeRequestParams, TextResourceContents, UnsubscribeRequestParams,
};
pub use roots::{ListRootsResult, Root};
pub use sampling::{
    CreateMessageRequestParams, CreateMessageResult, IncludeContext, ModelHint, ModelPreferences, SamplingContent,
    SamplingMessage, StopReason, ToolChoice, ToolChoiceMode,
};
pub use subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
pub use tasks::{
    CancelTaskResult, CreateTaskResult, DetailedTask, GetTaskResult, ListTasksResult, RELATED_TASK_META_KEY,
    TASKS_EXTENSION, Task, TaskMetadata, TaskRequestParams, TaskStatus, TaskStatusNotificationParams,
    UpdateTaskRequestParams,
};
pub use tools::{
    CallToolRequestParams, CallToolResult, ListToolsResult, TaskSupport, Tool, ToolAnnotations, ToolExecution,
};
pub use version::{Era, NegotiationError, ParseVersionError, ProtocolVersion};

/// A JSON object: the type of `_meta`, of `extra` (unknown fields), of schemas and of tool arguments.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;
