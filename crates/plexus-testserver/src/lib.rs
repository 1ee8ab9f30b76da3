//! A real MCP server with switchable faults over stdio, HTTP, SSE and WebSocket, for plexus's tests, benchmarks and demo.
//!
//! The binary has one subcommand per transport, `plexus-testserver stdio|http|sse|ws [OPTIONS]`,
//! and `plexus-testserver proxy` (an HTTP proxy for the tests of clients behind one; see
//! [`ProxyServer`]).
//! The same servers run in-process: [`run_stdio`] (the `plexus demo-server` command does this),
//! and [`RemoteServer`] for the remote modes, on a listener the caller bound. Both take the clap
//! arguments the binary parses ([`StdioOptions`], [`HttpOptions`], [`SseOptions`], [`WsOptions`]):
//!
//! ```
//! use clap::Parser;
//! use plexus_testserver::{Cli, Command, RemoteServer};
//!
//! let cli = Cli::try_parse_from(["plexus-testserver", "http", "--tools", "30", "--json-response"]).unwrap();
//! let Command::Http(options) = cli.command else { unreachable!() };
//! assert_eq!(options.server.tools, 30);
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let server = RemoteServer::http(listener, options).unwrap();
//! assert_eq!(server.url(), format!("http://{}/mcp", server.local_addr()));
//! // Clients connect to `server.url()` now.
//! server.shutdown().await;
//! # });
//! ```
//!
//! What every mode offers (protocol 2025-11-25, also 2025-06-18, 2025-03-26 and 2024-11-05):
//! - tools `echo`, `add`, `large`, `image`, `slow`, `trigger-list-changed`, `update-resource`,
//!   `elicit`, `sample`, `roots`, `url-elicit` (-32042 rounds), `log`, `error`, `fail`, and the fault tools `crash`, `hang`,
//!   `garbage`, `oversize`, `drip`, `stderr` (`trigger-list-changed` takes an optional `list`,
//!   `tools` by default, `prompts` or `resources`: which list-changed notification it sends); `--tools N` adds generated tools for pagination,
//!   `--tool-named NAME` (repeatable) a tool of any name that returns its arguments (for naming
//!   tests), `--task-required-tool` a tool `task-required` whose `execution.taskSupport` is
//!   `required` but which the server never runs as a task (a call of it gets -32601), `--tasks`
//!   the task-only tool `research` (see "Tasks" below); `--tool-overrides FILE` changes the
//!   tools' definitions from a JSON file read at every `tools/list` (`{"echo": {"description":
//!   "…", "title": null}}`: members replaced, `null` removes one, an unknown name adds a tool),
//!   so a test can change a tool under a running client (with `trigger-list-changed`) or between
//!   two runs;
//! - `--delay METHOD=MS` (repeatable) answers every request of METHOD (not `tools/call`) MS
//!   milliseconds late: a slow `initialize`, `tools/list` or `ping`;
//! - static resources under `test://static/`, the templates `test://items/{id}` and
//!   `test://echo/{text}`, subscriptions, prompts `simple`, `greeting` and `code-review`,
//!   completions and `logging/setLevel`;
//! - requests are handled concurrently: a tool that waits (`slow`, `elicit`, …) runs on its own
//!   task while quick requests are answered inline, so replies may come out of order;
//! - protocol faults ([`ServerOptions`]), process faults and test aids ([`ProcessOptions`]), and an
//!   event log (`--event-log`) through which tests observe what the server saw; a request whose
//!   `params._meta` carries a W3C `traceparent` is logged as
//!   `{"event":"trace-context","id":3,"method":"tools/call","traceparent":"00-…","tracestate":null}`
//!   before its `request` event.
//!
//! The MCP logic (the session that handles one decoded message and produces outputs) knows nothing
//! of framing; each transport drives it.
//!
//! # The remote modes: the contract clients test against
//!
//! `http`, `sse` and `ws` bind 127.0.0.1 only, on `--port N` (default 0: a free port), and print
//! exactly one first line on stdout, flushed: `listening on http://127.0.0.1:PORT/PATH` (`ws://…`
//! for `ws`), PATH being `--path` (default `/mcp`; `/sse` for `sse`). They serve until SIGINT or
//! SIGTERM (exit status 0; `--ignore-signals` keeps them serving). A start-up failure (port taken,
//! event log not writable) exits with status 2, the reason on stderr, before that line. Every
//! request whose `Origin` header names another host than 127.0.0.1, localhost or \[::1\] gets 403.
//! Error bodies are JSON-RPC errors with id `null` where the transport speaks JSON
//! (`{"jsonrpc":"2.0","id":null,"error":{"code":…,"message":…}}`), else `plexus-testserver: …` text.
//!
//! ## Streamable HTTP (`http`, 2025-11-25)
//! - POST one JSON-RPC message to PATH. `Accept` must list both `application/json` and
//!   `text/event-stream` (else 406), `Content-Type` must be `application/json` (else 415), bodies
//!   are capped by `--max-body-bytes` (default 16 MiB; 413), batches and bad JSON get 400.
//! - initialize creates a session: the response carries `Mcp-Session-Id` (32 hex digits). Every
//!   later request needs it (400 without, 404 with JSON-RPC error -32001 for an unknown or ended
//!   session); an `MCP-Protocol-Version` header with an unsupported value gets 400. At most 1024
//!   sessions (503 beyond).
//! - Notifications and responses get 202 with no body. A request gets a `text/event-stream`: a
//!   priming event (`id` and empty data), then the messages related to the request (progress, log
//!   messages, server-to-client requests), then the response, then the stream ends; with
//!   `--json-response`, one `application/json` body instead, the related messages going to the GET
//!   stream. A `notifications/cancelled` ends the request's stream without a response.
//! - Event ids are `<stream>-<n>`: stream 0 is the session's GET stream, POST streams are numbered
//!   1, 2, … in order (initialize's is 1), n counts from 0 (the priming event). Every stream keeps
//!   its last 1024 events (64 MiB at most) for replay.
//! - GET with `Accept: text/event-stream` opens the standalone stream (`--no-get-stream`: 405). Session
//!   notifications (`notifications/tools/list_changed`, `notifications/resources/updated`) go there,
//!   and wait there until a GET reads them; a new GET takes over from the previous one. GET with
//!   `Last-Event-ID: <stream>-<n>` resumes that stream after event n (POST streams included, even
//!   finished ones); an unknown, unsent or no longer stored id gets 400.
//! - DELETE with the session id ends the session: 200, then 404 (`--no-delete`: 405).
//! - `--sse-retry-ms MS`: a request's stream (not initialize's) sends its priming event with
//!   `retry: MS`, then ends; the client resumes by GET with `Last-Event-ID` and gets the rest
//!   (the standalone stream's priming event carries the `retry:` too).
//! - `--http-status-on-initialize CODE`: initialize POSTs get CODE (e.g. 400, 404, 405) and a text
//!   body. `--legacy-sse-at-same-url`: GET on PATH serves the legacy transport (below) and
//!   initialize POSTs get 405 (`Allow: GET`, or CODE): the "fall back to legacy SSE at the same URL"
//!   rule end to end.
//!
//! ## Streamable HTTP in the stateless era (`http`, 2026-07-28)
//! - A POST whose `MCP-Protocol-Version` header is present and names no `initialize`-era version
//!   (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25) is a stateless request (as the Python SDK's
//!   server routes it); anything else takes the session path above. `--era`, `--modern-version`
//!   and `--reject-first-modern-request` (the server's first stateless POST) apply as on stdio.
//! - It needs no session and gets none (an `Mcp-Session-Id` sent is ignored). Its envelope is
//!   checked as on stdio, then its headers against its body, values decoded from
//!   `=?base64?…?=`: a header version not served gets -32022 (`data.supported`,
//!   `data.requested`); one that is not the envelope's, a missing or wrong `Mcp-Method`, a missing
//!   or wrong `Mcp-Name` (`tools/call`, `prompts/get`: `params.name`; `resources/read`:
//!   `params.uri`), and on `tools/call` an `Mcp-Param-{Name}` header missing or wrong for an
//!   `x-mcp-header` argument that is present and not null, or sent for one absent or null or for no
//!   annotation, get -32020 naming the header.
//! - An error answered at once is an `application/json` body with the request's id, status 400
//!   for -32700, -32600, -32602, -32020, -32021 and -32022, 404 for -32601, else 200. A result is
//!   a `text/event-stream` (no ids: `event: message` events of the request's progress and log
//!   notifications, then the response; closing it cancels the request), or with `--json-response`
//!   one `application/json` body. Elicitation, sampling and roots are `input_required` results,
//!   and a retry with `inputResponses` and the `requestState` (on any connection) completes them.
//! - A notification gets 202; GET and DELETE with a stateless header get 405 (`Allow: POST`).
//! - `--era modern`: any other POST gets 400 with -32022 (`requested`: `initialize`'s
//!   `protocolVersion`, else the header's value, else `""`). `--era legacy`: a stateless POST
//!   takes the session path, except `server/discover`, answered per `--probe-answer`:
//!   `method-not-found` 200 with -32601, `invalid-params` 400 with -32602, `empty400` 400 with no
//!   body, `silence` no answer (the POST is held 60 s at most, then the connection closes),
//!   `exit` the connection dropped unanswered (the process lives on).
//! - `--header-tools` adds `headers_echo` (`region`, `priority` and `verbose` annotated
//!   `x-mcp-header`: `Region`, `Priority`, `Verbose`; `query` not), which returns the `mcp-*`
//!   headers of the request that called it as a JSON object (lowercase names, values as sent;
//!   `{}` on stdio), and `bad_header_tool`, listed although its annotation `"My Region"` is invalid.
//! - What a client sent: every POST with a stateless header (in any era), and every GET or
//!   DELETE with one, is logged as
//!   `{"event":"modern-request","http_method":"POST","method":"tools/call","id":3,"headers":{…}}`,
//!   `headers` holding every `mcp-*` header by lowercase name with its value as sent
//!   (`mcp-protocol-version`, `mcp-method`, `mcp-name`, `mcp-param-*`, `mcp-session-id`, …);
//!   `method` and `id` are `null` for a GET or DELETE. Find them with
//!   [`EventLogFile::matching`] and `json!({"event": "modern-request"})`.
//! - A stateless request whose stream ended before its response (its client closed it: the
//!   stateless era's cancellation) is logged as `{"event":"stream-closed","id":3}`.
//!
//! ## `subscriptions/listen` (stateless era: stdio, ws and Streamable HTTP)
//! - In the stateless era change notifications reach a client only through a subscription: a
//!   modern session (stdio, ws) or a stateless POST sends `subscriptions/listen` with
//!   `params.notifications` (a filter: `toolsListChanged`, `promptsListChanged`,
//!   `resourcesListChanged`, `resourceSubscriptions`); its request id is the subscription's id.
//!   The server first sends `notifications/subscriptions/acknowledged`, `params`
//!   `{"_meta":{"io.modelcontextprotocol/subscriptionId":ID},"notifications":GRANTED}`: the flags
//!   asked for as `true` whose kind `--listen-honours` names (`tools`, `prompts`, `resources`,
//!   `updates`; all four by default), and `resourceSubscriptions` (when asked for and `updates`
//!   is honoured) with only the URIs the server has (each once, 256 at most; unknown fields are
//!   never granted). A filter that is not an object, or none, gets -32602; a listen in a legacy
//!   session -32601 (as `resources/subscribe` gets in a modern one).
//! - Every change (`trigger-list-changed`, `update-resource`) then goes to each live
//!   subscription that was granted it, as `notifications/tools/list_changed`,
//!   `notifications/prompts/list_changed`, `notifications/resources/list_changed` or
//!   `notifications/resources/updated` (`uri`), with `params._meta` naming the subscription; the
//!   tool's text says to how many. On stdio (and ws) they come on the connection's output, before
//!   the response of the call that made the change; over HTTP on the listen POST's SSE stream,
//!   which stays open and sends a comment (`: keep-alive`) every 15 s (1024 notifications at
//!   most wait for a stream that is not read; more are dropped). HTTP subscriptions are the
//!   server's: a change made by any POST reaches the listens of every client. A modern session
//!   gets no `list_changed` or `resources/updated` outside a subscription (legacy sessions are
//!   unchanged).
//! - The client ends a subscription with `notifications/cancelled` `{"requestId": ID}` (stdio,
//!   ws) or by closing the stream (HTTP). `--end-listen-after-ms MS` ends each one MS after its
//!   listen with the listen's response `{"resultType":"complete","_meta":{…subscriptionId: ID}}`
//!   (HTTP: the stream's last event; the stream is opened even with `--json-response`);
//!   `--cancel-listen-after-ms MS` instead sends `notifications/cancelled` `{"requestId": ID,
//!   "reason": …}` (stdio, ws) or ends the stream without a response (HTTP).
//! - At most 16 live subscriptions per connection, 256 per HTTP server: one more gets -32603
//!   (over HTTP a 200 JSON body) naming the limit; a listen reusing a live subscription's id on
//!   a connection gets -32600.
//! - Events: `{"event":"listen","id":ID,"asked":FILTER,"honoured":GRANTED}` for each
//!   subscription opened, `{"event":"listen-end","id":ID,"how":HOW}` for each one ended, HOW
//!   being `client` (`notifications/cancelled`), `graceful`, `cancelled` (the server's two
//!   flags) or `closed` (its HTTP stream went away: the client closed it, or the server
//!   stopped). Find them with [`EventLogFile::matching`].
//!
//! ## Tasks (`--tasks`: every mode, both eras)
//! - `--tasks` lists the tool `research` (title `Research`, `execution: {"taskSupport":
//!   "required"}`; arguments `topic` (required, at most 256 characters), `stages` (1..=20,
//!   default 3), `stageMs` (0..=10000, default 100), `ask`, `fail`, `toolError` (default false)),
//!   which runs only as a task, on a tokio task of its own. Each stage sets the status message
//!   `stage i/n: <topic>` and takes `stageMs`. `ask`: after stage 1 the task is `input_required`
//!   on an `elicitation/create` form (message `Which angle on <topic>?`, `requestedSchema`
//!   `{"type":"object","properties":{"angle":{"type":"string"}},"required":["angle"]}`). `fail`:
//!   after its last stage it fails with -32603 `research on <topic> failed at stage <n>`.
//!   `toolError`: it completes with `isError: true` (text `research on <topic> found nothing
//!   (toolError)`). Else it completes with one text, `Report on <topic>: <n> stages` (with
//!   `, angle <angle>` for an accepted answer, `, no angle` for any other), and
//!   `structuredContent` `{"topic", "stages", "angle"}` (`angle` null unless one was chosen).
//!   Status messages: `starting: <topic>`, the stages', `waiting for input: Which angle on
//!   <topic>?`, `answered: angle <angle>` or `answered: no angle`, `done: <n> stages`, `done: a
//!   tool error`, `failed: <error message>`, `cancelled by the client`.
//! - The `initialize` era, at 2025-11-25 only: initialize declares `"tasks": {"list": {},
//!   "cancel": {}, "requests": {"tools": {"call": {}}}}`. A `tools/call` with `"task": {"ttl":
//!   N}` (`ttl` optional) is answered at once with `{"task": {taskId, status, statusMessage,
//!   createdAt, lastUpdatedAt, ttl, pollInterval}}` (times in ISO 8601 UTC, to the millisecond);
//!   without `task`, -32601 `research must be called as a task (execution.taskSupport is
//!   required)` (at another version, saying that tasks need 2025-11-25). `tasks/get` answers the
//!   task; `tasks/result` waits until it ends and answers the call's result with `_meta:
//!   {"io.modelcontextprotocol/related-task": {"taskId": …}}`, or the error it failed with, or
//!   -32603 `task <id> was cancelled: it has no result`. While the task waits for input, a
//!   pending `tasks/result` asks the client: `elicitation/create` with that `_meta`, related to
//!   the `tasks/result` request (over Streamable HTTP, on its stream); the answer feeds the task,
//!   which works again (a client without the elicitation capability, an error, or no answer
//!   within `--client-timeout-ms` mean no angle; a `tasks/result` that ends first leaves the
//!   question to the next one). `tasks/cancel` answers the task, `cancelled` (-32602 for one
//!   that has ended); `tasks/list` answers `{"tasks": […]}`, the session's live tasks, newest
//!   first, in one page. A task is its session's: another gets -32602 `task <id> not found`.
//! - With `_meta.progressToken` on the call, each stage sends `notifications/progress`
//!   (`progressToken`, `progress` i, `total` n, `message` the stage's, `_meta` related-task), and
//!   each change of status sends `notifications/tasks/status` (the task). They go to the session
//!   that created the task, related to no request: over stdio, WebSocket and SSE with its other
//!   output, over Streamable HTTP on the standalone GET stream (where they wait, bounded, until a
//!   GET reads them).
//! - The stateless era: `server/discover` declares `"extensions":
//!   {"io.modelcontextprotocol/tasks": {}}`. A `tools/call` whose envelope declares the
//!   extension is answered at once with `{"resultType": "task", taskId, status, statusMessage,
//!   createdAt, lastUpdatedAt, ttlMs, pollIntervalMs}`; without it, -32021 (Missing required client capability) with `data:
//!   {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}` (HTTP 400).
//!   `tasks/get` answers the task with `"resultType": "complete"` and, by status, `result`,
//!   `error`, or `inputRequests` (`{"angle": {"method": "elicitation/create", "params": …}}`;
//!   asked only when the call's envelope declared elicitation, else no angle). `tasks/update`
//!   (`inputResponses`; keys not pending are ignored) and `tasks/cancel` (a task that has ended
//!   stays as it is) answer `{"resultType": "complete"}`; `tasks/result` and `tasks/list` get
//!   -32601. These tasks are the server's: any stateless request (any POST, any connection)
//!   finds them. Over HTTP their requests' `Mcp-Name` must be the `taskId` (-32020 otherwise).
//! - Unknown ids get -32602 `task <id> not found`. A task lives its TTL from its creation
//!   (300000 ms; an `initialize`-era `ttl` between 1000 and 300000 is honoured, others are
//!   brought within), then its work stops and asking for it gets -32602 `task <id> has expired
//!   (its ttl of N ms has passed)`. A cancelled task's work stops at once. The server holds at
//!   most 1024 tasks, forgetting the oldest that ended or expired to make room (a call finding
//!   none gets -32603). `pollInterval` and `pollIntervalMs` are 100 ms, or `--task-poll-ms MS`
//!   (1..=60000). Task ids are 128 bits from the operating system's random generator, in hex.
//! - Events: `{"event":"task-created","id":ID,"tool":"research"}`,
//!   `{"event":"task-status","id":ID,"status":STATUS}` for each change of status after the
//!   creation (tasks start `working`), and `{"event":"task-cancelled","id":ID}` for each
//!   `tasks/cancel` naming a task id, known or not (with the session's label over HTTP).
//!
//! ## Legacy HTTP+SSE (`sse`, 2024-11-05)
//! - GET PATH opens an event stream (and a session) whose first event is `event: endpoint` with
//!   data `/messages?sessionId=<32 hex>` (relative); `--endpoint-absolute` gives
//!   `http://127.0.0.1:PORT/messages?sessionId=…`, `--endpoint-origin ORIGIN` (a fault) gives
//!   `ORIGIN/messages?sessionId=…`. Events have no ids.
//! - POST `/messages?sessionId=…` with one message: 202, no body (400 without `sessionId`, 404
//!   -32001 for an unknown one). Responses, notifications and server requests arrive in order as
//!   `event: message` events. Closing the stream ends the session. POST to PATH gets 405.
//!
//! ## WebSocket (`ws`)
//! - The upgrade (GET PATH) must offer the subprotocol `mcp` in `Sec-WebSocket-Protocol` (else 400
//!   with a text body), which is echoed back; a request without `Upgrade: websocket` gets 426.
//! - One JSON-RPC message per text frame each way; undecodable text gets an error response with
//!   id `null`; a binary frame closes with 1003; a message over `--max-body-bytes` closes with 1009;
//!   pings are answered; the server closes with 1001 when it stops.
//!
//! ## Fault switches (remote modes)
//! - `--fail-status CODE`: every POST (ws: upgrade) gets CODE and the text body
//!   `plexus-testserver: failing request N with status CODE as asked (--fail-status, --fail-after)`.
//! - `--fail-after N`: the first N POSTs (ws: upgrades) are served, later ones fail with
//!   `--fail-status` (default 500). POSTs are counted server-wide, every message included.
//! - `--reset-after N`: the first N POSTs (ws: text messages) are served; at each later one the
//!   connection is dropped with a TCP reset, unanswered.
//! - `--close-after-request-ms MS` (http): a tools/call is read and run (logged as a `request`
//!   event), then after MS milliseconds its connection closes without an answer (a `fault` event
//!   `close-after-request` with the call's number and id); `--close-from-call N` makes the N-th
//!   tools/call (server-wide) the first one hit.
//! - `--fault-times K`: the four above hit only K requests, then the server behaves again;
//!   `--fault-period P` with it repeats that every P requests (K hit, P - K served, …).
//! - `--reject-large-body BYTES[:STATUS]`: a request whose `Content-Length` is above BYTES gets
//!   STATUS (default 413; a 401 carries `WWW-Authenticate: Bearer realm="plexus-testserver"`) as
//!   soon as its head is in, with `Connection: close`, and its body is never read (so the close
//!   is a TCP reset); logged as a `fault` event `reject-large-body` with the status and length.
//! - `--expire-session-after N` (http, sse): a session answers its first N requests (initialize
//!   included); the next one gets 404 with -32001, the session is forgotten and its open streams
//!   end (a call in flight ends without a response).
//! - `--drop-sse-after N`: http: a request's stream (not initialize's) ends after N events (the
//!   priming event counts) and never carries the response itself; the rest is resumable by GET with
//!   `Last-Event-ID`, unless `--no-resume`, which refuses every `Last-Event-ID` with 400 (the events
//!   are lost). sse: the event stream ends after N events (the endpoint event counts), and the
//!   session with it.
//! - `--slow-headers-ms MS`: every response's headers wait MS milliseconds.
//! - `--oversize-event BYTES` (http): a request's stream (not initialize's) carries, right after
//!   its priming event, an event whose data is a `notifications/message` of exactly BYTES bytes.
//! - `--require-header 'Name: value'` (repeatable): a request without that exact header gets 401
//!   with `WWW-Authenticate: Bearer realm="plexus-testserver"`.
//! - `--no-subprotocol` (ws): the upgrade succeeds without echoing `mcp`.
//!
//! ## Transport switches (remote modes)
//! - `--tls-cert FILE --tls-key FILE`: TLS (the URL is `https://` or `wss://`); ALPN offers `h2`
//!   (http, sse) and `http/1.1`, and HTTP/2 is served when the client chooses it. Each handshake is
//!   a `tls` event with the chosen `alpn` and whether a `client_certificate` was presented.
//! - `--client-ca FILE`: with TLS, a client must present a certificate issued by a CA of FILE.
//! - `--gzip`: response bodies (JSON and event streams, each event flushed) are gzip-compressed
//!   when the request's `Accept-Encoding` allows it; each one is a `compressed` event.
//!
//! ## The proxy (`plexus-testserver proxy [--require-auth USER:PASSWORD]`)
//! Tunnels `CONNECT host:port` and forwards absolute-form requests, to loopback addresses only
//! (anything else gets 403); with `--require-auth`, a request without those Basic credentials
//! in `Proxy-Authorization` gets 407. Each request is a `proxy` event with its `method`,
//! `target` and whether it was `authorized`.
//! - `--crash-after N` and the `crash` tool: the process exits once the response before the crash
//!   has been written (in-process, the server stops instead).
//!
//! ## OAuth 2.1 (`http`, `sse`: `--oauth`)
//!
//! `--oauth` protects the MCP endpoint (and the legacy transport's `/messages`) with bearer tokens
//! from a built-in authorization server, which runs on the same listener (issuer
//! `http://127.0.0.1:PORT` + `--oauth-issuer-path`) or on its own (`--oauth-as-port N`). The
//! binary then prints a second line, `authorization server at ISSUER`. In-process,
//! [`RemoteServer::oauth`] gives an [`OAuthHandle`]; the options are [`OAuthOptions`] (field
//! `oauth` of [`HttpOptions`] and [`SseOptions`]).
//!
//! - The protected resource. A request without a token gets 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="URL"` (plus `scope="…"` with
//!   `--oauth-challenge-scope`; no `resource_metadata` with `--oauth-no-resource-metadata-param`);
//!   an unknown, revoked, expired or foreign token (another authorization server's, or for another
//!   resource) gets 401 `error="invalid_token"`; a token without the scopes every request needs
//!   (`--oauth-required-scope`) or that a tool's calls need (`--oauth-tool-scope TOOL=SCOPES`)
//!   gets 403 `error="insufficient_scope", scope="<the scopes needed>"`. Bodies are
//!   `{"error":…,"error_description":…}`.
//! - Protected resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource<mcp path>`
//!   (`resource`: the MCP URL) and/or `/.well-known/oauth-protected-resource` (`resource`: the
//!   origin) per `--oauth-prm path,root|none`, naming the current authorization server;
//!   `--oauth-prm-resource URL` publishes a wrong `resource`, `--oauth-prm-scopes` adds
//!   `scopes_supported`.
//! - Authorization server metadata (RFC 8414) for issuer path P at
//!   `/.well-known/oauth-authorization-server` + P, and per `--oauth-metadata` the OpenID forms
//!   `/.well-known/openid-configuration` + P and P + `/.well-known/openid-configuration`, or none
//!   (`--oauth-metadata none`, a 2025-03-26 server: `/authorize`, `/token`, `/register` at the
//!   origin). Switches: `--oauth-metadata-issuer` (a wrong `issuer`), `--oauth-pkce-methods` /
//!   `--oauth-omit-pkce-methods`, `--oauth-iss-supported true|false|absent`, `--oauth-cimd`,
//!   `--oauth-auth-methods` (`client_secret_basic`, `client_secret_post`, `none`, and
//!   `private_key_jwt` with ES256), `--oauth-scopes-supported`, `--oauth-no-registration`.
//! - `P/register` (RFC 7591) echoes the metadata with `client_id` and, for `client_secret_basic`
//!   (the default) and `client_secret_post`, a `client_secret` (`private_key_jwt` clients send
//!   their EC P-256 keys in `jwks`); `--oauth-client ID[:SECRET]` and `--oauth-jwt-client
//!   ID=JWKS_FILE` pre-register clients (any loopback redirect URI, every grant type).
//! - `P/authorize` checks `client_id` (registered, or with `--oauth-cimd` a URL whose client ID
//!   metadata document is fetched over http, or provided by the test with
//!   `--oauth-cimd-document` / [`OAuthHandle::provide_client_metadata`], and checked), `redirect_uri` (registered; loopback
//!   URIs match on any port), `response_type=code`, an S256 `code_challenge`, `resource`
//!   (required unless `--oauth-resource-optional`; the MCP URL or the origin) and `scope`, then
//!   redirects at once (302) with `code`, `state` and `iss` (`--oauth-redirect-iss
//!   correct|missing|wrong|trailing-slash`), or with `error`.
//! - `P/token`: `authorization_code` (single-use codes living 60 s, PKCE verifier, `resource`),
//!   `refresh_token` (`--oauth-refresh-rotation rotate|reuse|omit`), `client_credentials`
//!   (confidential clients); client authentication `client_secret_basic`, `client_secret_post`,
//!   `none` or `private_key_jwt` (an ES256 assertion with `iss` = `sub` = the client id, `aud`
//!   the issuer or the token endpoint, `exp`, a `jti` used once), as registered;
//!   `--oauth-expires-in`, `--oauth-omit-expires-in`, `--oauth-refresh-tokens
//!   always|offline-access|never`. Errors are RFC 6749 JSON (`invalid_client` is a 401).
//! - `--oauth-migrate-after N` (or [`OAuthHandle::migrate_authorization_server`]) moves the
//!   resource to a new authorization server on its own listener; the old one's tokens get 401.
//! - Every request to these paths is recorded ([`OAuthHandle::requests`], [`OAuthRequest`]) and
//!   logged as an `oauth` event (secrets redacted). Tests flip state mid-session with
//!   [`OAuthHandle::expire_access_tokens`], [`OAuthHandle::revoke_tokens`] and
//!   [`OAuthHandle::issue_token`]. Everything is bounded: 16 KiB form and registration bodies,
//!   codes single-use for 60 s, 1024 clients and codes, 4096 tokens, records and assertion ids,
//!   64 documents of 64 KiB, client metadata fetched within 5 s.
//!
//! ```
//! use clap::Parser;
//! use plexus_testserver::{Cli, Command, Endpoint, RemoteServer};
//!
//! let argv = ["plexus-testserver", "http", "--oauth", "--oauth-issuer-path", "/t1", "--oauth-as-port", "0"];
//! let Command::Http(options) = Cli::try_parse_from(argv).unwrap().command else { unreachable!() };
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let server = RemoteServer::http(listener, options).unwrap();
//! let oauth = server.oauth().unwrap();
//! assert!(oauth.issuer().ends_with("/t1"));
//! assert_ne!(oauth.issuer(), format!("http://{}/t1", server.local_addr()), "its own listener");
//! // … a client connects to server.url(), gets 401, discovers, registers, logs in …
//! assert!(oauth.requests_to(Endpoint::Register).is_empty());
//! oauth.expire_access_tokens(); // the next request with an access token gets 401 invalid_token
//! server.shutdown().await;
//! # });
//! ```
//!
//! The event log of a remote mode also records `listening` (`url`), `http` for every request
//! (`method`, `path`, `query`, `headers` by lowercase name; the values of `authorization`,
//! `proxy-authorization` and `cookie` read `<redacted>`), `session-start` (`session`,
//! `transport`), `session-end` (`session`, `reason`), `fault`, and the session's label (`session`)
//! on `request`, `notification` and `response` events.
//!
//! Features: `remote` (default) builds the remote modes and the OAuth authorization server;
//! without it only the stdio server is built (what `plexus demo-server` links).
//!
//! Dependencies beyond the house set: `bytes` holds the input buffer that
//! [`plexus_jsonrpc::LineCodec`] decodes from (whose `stdio` feature polls this process's stdin
//! and stdout); nix's `socket` feature sets SO_LINGER for resets; hyper (with hyper-util and http-body-util)
//! serves HTTP/1.1; tokio-tungstenite frames WebSocket messages (futures-util drives its
//! stream and sink); getrandom draws session ids, tokens and (in every mode) task ids; url
//! parses redirect URIs and forms; base64 and aws-lc-rs (the crypto provider rustls already brings) compute PKCE S256 challenges
//! and decode HTTP Basic credentials; hyper's client fetches client ID metadata documents.
#![forbid(unsafe_code)]

mod catalog;
#[cfg(feature = "remote")]
mod certs;
pub mod child_test;
mod cli;
mod era;
mod events;
mod faults;
mod handlers;
mod listen;
mod listing;
mod misbehave;
mod mrtr;
#[cfg(feature = "remote")]
mod oauth;
mod overrides;
mod process;
#[cfg(feature = "remote")]
mod proxy;
#[cfg(feature = "remote")]
mod remote;
mod server;
mod skills;
mod stdio;
mod tasks;
mod tools;

#[cfg(feature = "remote")]
pub use certs::{CertificateError, TestCertificates};
pub use cli::{Cli, Command, ProcessOptions, ServerOptions, StdioOptions, run};
pub use era::{EraSupport, MODERN_PROTOCOL_VERSION, ProbeAnswer};
pub use events::EventLogFile;
pub use listen::ListenKind;
#[cfg(feature = "remote")]
pub use oauth::{
    Advertised, AuthMethod, CimdDocumentFile, DocumentFile, Endpoint, InvalidArgument, IssuedTokens, JwksProblem,
    JwtClientFile, LimitReached, MetadataLocation, OAuthError, OAuthHandle, OAuthOptions, OAuthRequest,
    PreRegisteredClient, PrmLocation, RedirectIss, RefreshIssuance, RefreshRotation, StoreError, TokenInfo, ToolScope,
};
#[cfg(feature = "remote")]
pub use proxy::{ProxyError, ProxyOptions, ProxyServer, run_proxy};
#[cfg(feature = "remote")]
pub use remote::{
    EndpointOptions, HttpOptions, OptionProblem, PathProblem, RejectLargeBody, RemoteError, RemoteOptions,
    RemoteServer, RequiredHeader, SessionOptions, SseOptions, WsOptions, run_http, run_sse, run_ws,
};
pub use server::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
pub use skills::SkillTamper;
pub use stdio::{run_stdio, serve_io};
