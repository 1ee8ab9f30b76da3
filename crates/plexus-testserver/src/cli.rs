//! The command line: subcommands and the options of each mode.

use crate::era::{EraSupport, MODERN_PROTOCOL_VERSION, ProbeAnswer};
use crate::listen::ListenKind;
use crate::skills::SkillTamper;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE;

#[cfg(feature = "remote")]
use crate::remote::{HttpOptions, SseOptions, WsOptions};

/// The default time the server waits for the client's answer to one of its own requests
/// (`elicitation/create`, `sampling/createMessage`, `roots/list`): 5 minutes, since a person may
/// be answering an elicitation in the demo.
pub(crate) const DEFAULT_CLIENT_TIMEOUT_MS: u64 = 300_000;

/// The most generated tools `--tools` accepts.
pub(crate) const MAX_GENERATED_TOOLS: usize = 100_000;

/// The `plexus-testserver` command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "plexus-testserver",
    version,
    about = "A real MCP server with switchable faults, for tests, benchmarks and demos."
)]
pub struct Cli {
    /// The transport to serve on.
    #[command(subcommand)]
    pub command: Command,
}

/// The transports the server speaks.
#[derive(Debug, Clone, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process.
pub enum Command {
    /// Serve one MCP session on standard input and output (newline-delimited JSON-RPC).
    Stdio(StdioOptions),
    /// Serve MCP over Streamable HTTP (2025-11-25 sessions, and stateless 2026-07-28 requests
    /// told apart by their `MCP-Protocol-Version` header) on 127.0.0.1; prints
    /// `listening on http://127.0.0.1:PORT/PATH` first.
    #[cfg(feature = "remote")]
    Http(HttpOptions),
    /// Serve MCP over the legacy HTTP+SSE transport (2024-11-05) on 127.0.0.1; prints
    /// `listening on http://127.0.0.1:PORT/PATH` (the SSE stream's URL) first.
    #[cfg(feature = "remote")]
    Sse(SseOptions),
    /// Serve MCP over WebSocket (subprotocol `mcp`) on 127.0.0.1; prints
    /// `listening on ws://127.0.0.1:PORT/PATH` first.
    #[cfg(feature = "remote")]
    Ws(WsOptions),
    /// An HTTP proxy on 127.0.0.1 (CONNECT tunnels and absolute-form forwarding, to loopback
    /// addresses only), for the tests of clients behind one; prints
    /// `listening on http://127.0.0.1:PORT` first.
    #[cfg(feature = "remote")]
    Proxy(crate::proxy::ProxyOptions),
}

/// Runs the mode that `cli` selects and returns the process's exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Stdio(options) => crate::run_stdio(options),
        #[cfg(feature = "remote")]
        Command::Http(options) => crate::remote::run_http(options),
        #[cfg(feature = "remote")]
        Command::Sse(options) => crate::remote::run_sse(options),
        #[cfg(feature = "remote")]
        Command::Ws(options) => crate::remote::run_ws(options),
        #[cfg(feature = "remote")]
        Command::Proxy(options) => crate::proxy::run_proxy(&options),
    }
}

/// Options of the stdio mode (`plexus-testserver stdio`).
#[derive(Debug, Clone, Args)]
pub struct StdioOptions {
    /// What the MCP session offers and which protocol faults it injects.
    #[command(flatten)]
    pub server: ServerOptions,
    /// Process-level faults and test aids.
    #[command(flatten)]
    pub process: ProcessOptions,
    /// The largest input line (one JSON-RPC message) accepted, in bytes; a longer line is answered
    /// with an error and skipped.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MESSAGE_SIZE, value_parser = clap::value_parser!(u64).range(1..=1 << 30).map(|n| n as usize))]
    pub max_line_bytes: usize,
    /// Keep running after stdin closes (logged as `stdin-closed`) until a signal ends the server:
    /// with `--ignore-signals`, a server only SIGKILL stops.
    #[arg(long)]
    pub ignore_stdin_close: bool,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            server: ServerOptions::default(),
            process: ProcessOptions::default(),
            max_line_bytes: DEFAULT_MAX_MESSAGE_SIZE,
            ignore_stdin_close: false,
        }
    }
}

/// What the MCP session offers, and the protocol-level faults it injects. Independent of the
/// transport.
#[derive(Debug, Clone, Args)]
#[allow(clippy::struct_excessive_bools)] // one flag per command-line switch.
pub struct ServerOptions {
    /// Add N generated tools `tool-0001`, `tool-0002`, … (for pagination tests).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=MAX_GENERATED_TOOLS as u64).map(|n| n as usize))]
    pub tools: usize,
    /// Paginate tools/list, resources/list, resources/templates/list and prompts/list with pages
    /// of N entries and opaque cursors.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000).map(|n| n as usize))]
    pub page_size: Option<usize>,
    /// Fault: tools/list always returns the same `nextCursor`, so a client that follows cursors
    /// blindly never stops.
    #[arg(long)]
    pub repeat_cursor: bool,
    /// Answer initialize with exactly this protocol version, whatever the client asked for.
    #[arg(long, value_name = "VERSION")]
    pub protocol_version: Option<String>,
    /// Send a `notifications/message` before the initialize result.
    #[arg(long)]
    pub notify_before_init: bool,
    /// Fault: write a line that is not JSON before every response.
    #[arg(long)]
    pub garbage_line: bool,
    /// Fault: exit with status 1 right after answering the N-th tools/call.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub crash_after: Option<u64>,
    /// How long to wait for the client's answer to a server-to-client request, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_CLIENT_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub client_timeout_ms: u64,
    /// Fault: terminal escape sequences (OSC title, clear screen, BEL, CSI) in the server's info,
    /// and a tool `hostile` whose title, description, result, error and stderr carry them.
    #[arg(long)]
    pub hostile_text: bool,
    /// Answer every request of METHOD MS milliseconds late (`initialize=500` makes a slow server
    /// to connect, `tools/list=300` a slow listing); repeatable. Not for `tools/call` (its tools
    /// have their own delays).
    #[arg(long = "delay", value_name = "METHOD=MS", value_parser = parse_delay)]
    pub delays: Vec<(String, u64)>,
    /// Add a tool named NAME (any text: dots, spaces, `__`) that returns its arguments as JSON;
    /// repeatable (for tests of tool naming).
    #[arg(long = "tool-named", value_name = "NAME")]
    pub named_tools: Vec<String>,
    /// Add a tool `task-required` whose `execution` is `{"taskSupport": "required"}` (for tests
    /// of how a client shows and passes on such a tool). The server never runs it as a task
    /// (`--tasks` runs `research`), so a call of it is answered with -32601, as the spec says
    /// for a call made without a task.
    #[arg(long)]
    pub task_required_tool: bool,
    /// Which protocol eras to speak: `dual` (a connection's first request decides: the envelope
    /// of the stateless revision makes it modern), `legacy` (the `initialize` era only) or
    /// `modern` (the stateless revision only).
    #[arg(long, value_enum, default_value_t = EraSupport::Dual)]
    pub era: EraSupport,
    /// How a legacy-only server (`--era legacy`) answers a `server/discover` probe (over HTTP, one
    /// with a 2026-07-28 `MCP-Protocol-Version` header): `method-not-found` (-32601; HTTP 200),
    /// `invalid-params` (-32602; HTTP 400), `empty400` (HTTP 400 with no body; on stdio the same
    /// as `method-not-found`), `silence` (no answer; HTTP holds the POST 60 s at most), `exit`
    /// (stdio: exit with status 1; HTTP: drop the connection unanswered).
    #[arg(long, value_enum, default_value_t = ProbeAnswer::MethodNotFound)]
    pub probe_answer: ProbeAnswer,
    /// The stateless revision served: a request asking for another is answered with -32022.
    #[arg(long, value_name = "VERSION", default_value = MODERN_PROTOCOL_VERSION)]
    pub modern_version: String,
    /// Fault: answer the first modern request with -32022 although it asks for the version
    /// served (a client must retry with a version from the error's list, as the conformance
    /// suite's request-metadata scenario checks).
    #[arg(long)]
    pub reject_first_modern_request: bool,
    /// Add the tools `headers_echo` (parameters `region`, `priority` and `verbose` annotated
    /// `x-mcp-header`; it returns the `mcp-*` headers of the HTTP request that called it as a
    /// JSON object, `{}` on stdio) and `bad_header_tool` (an invalid annotation, `"My Region"`,
    /// which the server lists all the same), for tests of the 2026-07-28 HTTP headers.
    #[arg(long)]
    pub header_tools: bool,
    /// Serve skills (the `io.modelcontextprotocol/skills` extension, with `directoryRead`):
    /// `skills/list`, `skills/get`, `resources/directory/read`, and the skills' files through
    /// `resources/read` (`skill://pdf-processing/…`, `skill://acme/billing/refunds/…`).
    #[arg(long)]
    pub skills: bool,
    /// Serve `skill://pdf-processing/SKILL.md` other than its entry says: with another body
    /// (`digest`), with bytes added (`size`), or with another description whose digest and size
    /// the entry carries (`frontmatter`).
    #[arg(long, value_enum, value_name = "HOW", requires = "skills")]
    pub tamper_skill: Option<SkillTamper>,
    /// Run tasks: a tool `research` (`execution.taskSupport` `required`) that runs only as a
    /// task. Declared as the `tasks` capability to a session of the `initialize` era at
    /// 2025-11-25 (`tools/call` with `task`, then `tasks/get`, `tasks/result`, `tasks/cancel`,
    /// `tasks/list`) and as the `io.modelcontextprotocol/tasks` extension in the stateless era
    /// (`resultType: "task"`, then `tasks/get`, `tasks/update`, `tasks/cancel`).
    #[arg(long)]
    pub tasks: bool,
    /// The polling interval tasks suggest (`pollInterval`, `pollIntervalMs`), in milliseconds
    /// (with `--tasks`).
    #[arg(long, value_name = "MS", default_value_t = crate::tasks::DEFAULT_POLL_MS, value_parser = clap::value_parser!(u64).range(1..=crate::tasks::MAX_POLL_MS))]
    pub task_poll_ms: u64,
    /// Which notifications a `subscriptions/listen` (stateless era) is granted, of those it asks
    /// for: `tools` (`toolsListChanged`), `prompts` (`promptsListChanged`), `resources`
    /// (`resourcesListChanged`), `updates` (`resourceSubscriptions`); the acknowledgement leaves
    /// the others out.
    #[arg(long, value_enum, value_name = "KINDS", value_delimiter = ',', default_values_t = ListenKind::ALL)]
    pub listen_honours: Vec<ListenKind>,
    /// End every subscription gracefully MS milliseconds after its listen: the listen is
    /// answered `{"resultType":"complete","_meta":{subscriptionId}}` (over HTTP, the stream's last
    /// event).
    #[arg(long, value_name = "MS", conflicts_with = "cancel_listen_after_ms", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub end_listen_after_ms: Option<u64>,
    /// Cancel every subscription MS milliseconds after its listen: on a connection (stdio, ws)
    /// with `notifications/cancelled` for the listen's id, over HTTP by ending its stream without
    /// a response.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub cancel_listen_after_ms: Option<u64>,
    /// Add the tool `misbehave`, whose calls send a storm of `list_changed`, a flood of
    /// progress, responses to requests never made, server requests that reuse one id, or
    /// notifications of the wrong shape (`act`, `count` times) before they are answered.
    #[arg(long)]
    pub misbehave_tool: bool,
    /// A JSON file read at every tools/list that changes the tools' definitions: an object mapping
    /// a tool's name to members that replace its own (`null` removes one), e.g. `{"echo":
    /// {"description": "…"}}`; a name that is no tool of the server adds a tool that returns its
    /// arguments. Edit it, then call `trigger-list-changed` (or start again), to change a tool
    /// under a client. A file that cannot be read fails tools/list, naming it.
    #[arg(long, value_name = "FILE")]
    pub tool_overrides: Option<PathBuf>,
    /// Add the tool `nested`, whose input schema nests DEPTH objects (at most 2000).
    #[arg(long, value_name = "DEPTH", value_parser = clap::value_parser!(u64).range(1..=crate::misbehave::MAX_NESTED_DEPTH as u64).map(|n| n as usize))]
    pub nested_schema_depth: Option<usize>,
}

/// `METHOD=MS`.
fn parse_delay(text: &str) -> Result<(String, u64), String> {
    let (method, ms) = text
        .split_once('=')
        .ok_or_else(|| format!("expected METHOD=MS, found {text:?}"))?;
    if method.is_empty() || method == "tools/call" {
        return Err(format!("cannot delay {method:?}: name a method other than tools/call"));
    }
    let ms: u64 = ms
        .parse()
        .map_err(|_| format!("{ms:?} is not a number of milliseconds"))?;
    if ms > 3_600_000 {
        return Err(format!("{ms} ms is more than an hour"));
    }
    Ok((method.to_owned(), ms))
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            tools: 0,
            page_size: None,
            repeat_cursor: false,
            protocol_version: None,
            notify_before_init: false,
            garbage_line: false,
            crash_after: None,
            client_timeout_ms: DEFAULT_CLIENT_TIMEOUT_MS,
            hostile_text: false,
            delays: Vec::new(),
            named_tools: Vec::new(),
            task_required_tool: false,
            era: EraSupport::Dual,
            probe_answer: ProbeAnswer::MethodNotFound,
            modern_version: MODERN_PROTOCOL_VERSION.to_owned(),
            reject_first_modern_request: false,
            header_tools: false,
            skills: false,
            tamper_skill: None,
            tasks: false,
            task_poll_ms: crate::tasks::DEFAULT_POLL_MS,
            listen_honours: ListenKind::ALL.to_vec(),
            end_listen_after_ms: None,
            cancel_listen_after_ms: None,
            misbehave_tool: false,
            tool_overrides: None,
            nested_schema_depth: None,
        }
    }
}

/// Process-level faults and test aids, common to every transport.
#[derive(Debug, Clone, Default, Args)]
pub struct ProcessOptions {
    /// Append one JSON line per observed event to PATH: `start`, `request`, `notification` (every
    /// client notification, with its params), `response`, `signal`, `stdin-closed`, `exit`; the
    /// remote modes add `listening`, `http` (every HTTP request), `session-start`, `session-end`
    /// and `fault`, and http adds `modern-request` for every request with a 2026-07-28
    /// `MCP-Protocol-Version` header (`http_method`, JSON-RPC `method` and `id`, and `headers`:
    /// its `mcp-*` headers by lowercase name, values as sent) and `stream-closed` (`id`: a
    /// stateless request whose stream ended before its response, its work stopped); every mode
    /// adds `listen` (`id`,
    /// `asked`, `honoured`) and `listen-end` (`id`, `how`: `client`, `graceful`, `cancelled`,
    /// `closed`) for the subscriptions of the stateless era, and `task-created` (`id`, `tool`),
    /// `task-status` (`id`, `status`: each change of a task's status) and `task-cancelled`
    /// (`id`: a `tasks/cancel` that names a task) with `--tasks`.
    #[arg(long, value_name = "PATH")]
    pub event_log: Option<PathBuf>,
    /// Ignore SIGINT and SIGTERM (they are still logged); by default either makes the server log
    /// it and exit with status 0.
    #[arg(long)]
    pub ignore_signals: bool,
    /// Spawn a long-lived grandchild (1 hour at most) that stays in this process group and ignores
    /// SIGINT and SIGTERM, and write its PID to PIDFILE.
    #[arg(long, value_name = "PIDFILE")]
    pub spawn_grandchild: Option<PathBuf>,
    /// Like --spawn-grandchild, but the grandchild leaves this process group (as a daemon that
    /// calls setsid() does), so a signal to the server's group misses it.
    #[arg(long, value_name = "PIDFILE")]
    pub spawn_escapee: Option<PathBuf>,
    /// Write this many bytes of lines to stderr at start, concurrently with serving.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(0..=crate::faults::MAX_FAULT_BYTES as u64).map(|n| n as usize))]
    pub flood_stderr: Option<usize>,
    /// Write a line to stderr and exit with CODE before serving.
    #[arg(long, value_name = "CODE")]
    pub exit_at_start: Option<u8>,
}

#[cfg(all(test, feature = "remote"))]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_an_empty_command_line() {
        let cli = Cli::try_parse_from(["plexus-testserver", "stdio"]).unwrap();
        let Command::Stdio(parsed) = cli.command else {
            panic!("not stdio")
        };
        let default = StdioOptions::default();
        assert_eq!(format!("{parsed:?}"), format!("{default:?}"));
    }

    #[test]
    fn every_flag_parses() {
        let cli = Cli::try_parse_from([
            "plexus-testserver",
            "stdio",
            "--tools=3",
            "--page-size=2",
            "--repeat-cursor",
            "--protocol-version=2024-11-05",
            "--notify-before-init",
            "--garbage-line",
            "--crash-after=4",
            "--client-timeout-ms=50",
            "--hostile-text",
            "--delay=initialize=20",
            "--delay=tools/list=5",
            "--tool-named=a.b",
            "--task-required-tool",
            "--tasks",
            "--task-poll-ms=250",
            "--event-log=/tmp/e",
            "--ignore-signals",
            "--spawn-grandchild=/tmp/p",
            "--flood-stderr=100",
            "--exit-at-start=9",
            "--max-line-bytes=1000",
        ])
        .unwrap();
        let Command::Stdio(o) = cli.command else {
            panic!("not stdio")
        };
        assert_eq!(
            (
                o.server.tools,
                o.server.page_size,
                o.server.crash_after,
                o.server.client_timeout_ms
            ),
            (3, Some(2), Some(4), 50)
        );
        assert!(
            o.server.repeat_cursor && o.server.notify_before_init && o.server.garbage_line && o.process.ignore_signals
        );
        assert_eq!(o.server.protocol_version.as_deref(), Some("2024-11-05"));
        assert_eq!(
            o.server.delays,
            [("initialize".to_owned(), 20), ("tools/list".to_owned(), 5)]
        );
        assert!(Cli::try_parse_from(["plexus-testserver", "stdio", "--delay=tools/call=5"]).is_err());
        assert_eq!(o.server.named_tools, ["a.b"]);
        assert!(o.server.task_required_tool && o.server.tasks);
        assert_eq!(o.server.task_poll_ms, 250);
        assert_eq!(
            (o.process.flood_stderr, o.process.exit_at_start, o.max_line_bytes),
            (Some(100), Some(9), 1000)
        );
    }

    #[test]
    fn remote_defaults_match_empty_command_lines() {
        let parse = |mode| Cli::try_parse_from(["plexus-testserver", mode]).unwrap().command;
        let (Command::Http(http), Command::Sse(sse), Command::Ws(ws)) = (parse("http"), parse("sse"), parse("ws"))
        else {
            panic!("wrong modes")
        };
        assert_eq!(format!("{http:?}"), format!("{:?}", HttpOptions::default()));
        assert_eq!(format!("{sse:?}"), format!("{:?}", SseOptions::default()));
        assert_eq!(format!("{ws:?}"), format!("{:?}", WsOptions::default()));
    }

    #[test]
    fn every_remote_flag_parses() {
        let cli = Cli::try_parse_from([
            "plexus-testserver",
            "http",
            "--port=8080",
            "--path=/x",
            "--max-body-bytes=10",
            "--require-header=Authorization: Bearer t",
            "--require-header=X-A: b",
            "--slow-headers-ms=5",
            "--fail-status=503",
            "--fail-after=2",
            "--reset-after=3",
            "--fault-times=1",
            "--fault-period=4",
            "--reject-large-body=1000:401",
            "--close-after-request-ms=100",
            "--close-from-call=2",
            "--expire-session-after=4",
            "--drop-sse-after=5",
            "--endpoint-origin=http://evil.example:1",
            "--no-get-stream",
            "--no-delete",
            "--no-resume",
            "--sse-retry-ms=100",
            "--oversize-event=1000",
            "--http-status-on-initialize=404",
            "--legacy-sse-at-same-url",
            "--tools=2",
            "--event-log=/tmp/e",
        ])
        .unwrap();
        let Command::Http(o) = cli.command else {
            panic!("not http")
        };
        let r = &o.remote;
        assert_eq!(
            (r.port, r.path.as_deref(), r.max_body_bytes, r.slow_headers_ms),
            (8080, Some("/x"), 10, Some(5))
        );
        assert_eq!(
            (
                r.fail_status,
                r.fail_after,
                r.reset_after,
                r.fault_times,
                r.fault_period
            ),
            (Some(503), Some(2), Some(3), Some(1), Some(4))
        );
        assert_eq!(
            r.reject_large_body,
            Some(crate::RejectLargeBody {
                bytes: 1000,
                status: 401
            })
        );
        assert_eq!((o.close_after_request_ms, o.close_from_call), (Some(100), Some(2)));
        assert_eq!(r.require_headers.len(), 2);
        assert_eq!(r.require_headers[0].to_string(), "authorization: Bearer t");
        assert_eq!(
            (o.sessions.expire_session_after, o.sessions.drop_sse_after),
            (Some(4), Some(5))
        );
        assert_eq!(o.endpoint.endpoint_origin.as_deref(), Some("http://evil.example:1"));
        assert!(o.no_get_stream && o.no_delete && o.no_resume && o.legacy_sse_at_same_url && !o.json_response);
        assert_eq!(
            (o.sse_retry_ms, o.oversize_event, o.http_status_on_initialize),
            (Some(100), Some(1000), Some(404))
        );
        assert_eq!(o.server.tools, 2);
        let err = Cli::try_parse_from(["plexus-testserver", "http", "--close-from-call=2"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::MissingRequiredArgument, "{err}");
        let cli = Cli::try_parse_from(["plexus-testserver", "ws", "--no-subprotocol", "--reset-after=1"]).unwrap();
        let Command::Ws(o) = cli.command else { panic!("not ws") };
        assert!(o.no_subprotocol);
        assert_eq!(o.remote.reset_after, Some(1));
    }

    #[test]
    fn conflicting_remote_flags_are_refused() {
        for args in [
            ["http", "--json-response", "--sse-retry-ms=1"],
            ["http", "--json-response", "--oversize-event=1000"],
            ["sse", "--endpoint-absolute", "--endpoint-origin=http://a"],
        ] {
            let err = Cli::try_parse_from(std::iter::once("plexus-testserver").chain(args)).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict, "{args:?}: {err}");
        }
        for (args, flag) in [
            (["http", "--fail-status=200"], "--fail-status"),
            (["http", "--oversize-event=10"], "--oversize-event"),
            (["sse", "--require-header=nocolon"], "--require-header"),
            (["ws", "--path=relative"], "--path"),
            (["http", "--reject-large-body=1:302"], "--reject-large-body"),
        ] {
            let err = Cli::try_parse_from(std::iter::once("plexus-testserver").chain(args)).unwrap_err();
            assert!(err.to_string().contains(flag), "{args:?}: {err}");
        }
    }

    #[test]
    fn out_of_range_values_are_refused() {
        for args in [
            ["--page-size", "0"],
            ["--tools", "100001"],
            ["--exit-at-start", "256"],
            ["--crash-after", "0"],
            ["--task-poll-ms", "0"],
        ] {
            let err = Cli::try_parse_from(["plexus-testserver", "stdio", args[0], args[1]]).unwrap_err();
            assert!(err.to_string().contains(args[0]), "{args:?}: {err}");
        }
    }
}
