//! The `plexus` command: list, inspect and call the tools, resources and prompts of the MCP servers
//! a config describes (or one given on the command line), edit that config (add, remove, approve,
//! import), and log in to the servers that need it.
// One `unsafe` block, in `secrets::take`: removing plexus's secret variables from the process
// environment before any thread starts (see its comment).
#![deny(unsafe_code)]
// The arguments' doc comments are the `--help` text, which names paths as `<home>/…`: not HTML.
#![allow(rustdoc::invalid_html_tags)]

mod arguments;
mod commands;
mod connect;
mod content;
mod describe;
mod edit;
mod form;
mod get;
mod import;
mod interact;
mod lock;
mod login;
mod new_entry;
mod output;
mod progress;
mod search;
mod secrets;
mod serve;
mod skills;
mod sources;
mod suggest;
mod table;
mod terminal;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use plexus::auth::oauth::DEFAULT_LOGIN_TIMEOUT;
use plexus::config::{ImportSource, Scope, ServerKind};

/// The longest `plexus login --timeout` (a day).
const MAX_LOGIN_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// How the command ended (the documented exit codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Outcome {
    /// 0: everything worked.
    Ok = 0,
    /// 1: the tool returned `isError` (for `diff`: a locked server's tools changed).
    ToolError = 1,
    /// 2: usage or config error (including a config file that could not be written).
    Usage = 2,
    /// 3: connection or protocol error.
    Connection = 3,
    /// 4: a server needs authentication.
    NeedsAuth = 4,
    /// 129: ended by SIGHUP (the terminal went away).
    HungUp = 129,
    /// 130: interrupted by SIGINT (Ctrl-C).
    Interrupted = 130,
    /// 143: ended by SIGTERM.
    Terminated = 143,
}

/// plexus: the MCP client stack's command line.
#[derive(Debug, Parser)]
#[command(name = "plexus", version, about = "List, inspect and call the tools of MCP servers.", long_about = None)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) globals: Globals,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The flags every command takes.
#[derive(Debug, Args)]
pub(crate) struct Globals {
    /// A config file with an `mcpServers` object; it wins over every scope (repeatable; later files win).
    #[arg(long = "config", value_name = "FILE", global = true)]
    pub(crate) config: Vec<PathBuf>,
    /// Read servers only from the --config files (managed policy still applies).
    #[arg(long, global = true, requires = "config")]
    pub(crate) strict_config: bool,
    /// Look for the project (`.mcp.json`, local settings) from DIR instead of the working directory.
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) project: Option<PathBuf>,
    /// Print machine-readable JSON (stable; see the README).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// More tracing on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    /// Only results, warnings and errors: no connect lines, progress or notes (for scripts).
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
}

/// A server given on the command line, used instead of the configured ones.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct AdHoc {
    /// Use this stdio server instead of the configured ones: its command line, split as a shell would.
    #[arg(long, value_name = "'COMMAND ARGS...'", conflicts_with = "url")]
    pub(crate) stdio: Option<String>,
    /// Use this remote server instead of the configured ones (Streamable HTTP; WebSocket for ws:// and wss://).
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,
    /// A header sent to the --url server (repeatable).
    #[arg(long = "header", short = 'H', value_name = "'Name: value'", requires = "url")]
    pub(crate) headers: Vec<String>,
    /// The name of the --stdio or --url server (its tools are `mcp__<NAME>__<tool>`).
    #[arg(long = "as", id = "ad_hoc_name", value_name = "NAME", default_value = sources::AD_HOC_NAME)]
    pub(crate) name: String,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Every configured server: scope, source, kind, status, protocol version, server info, tool count, problems.
    Servers {
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Every tool of every server, or of one server; or one tool in full (`tools mcp__s__t`);
    /// or the tools that best match a query (`tools --search QUERY`).
    Tools {
        /// Only this server's tools; or a tool's qualified name: that tool, as `describe` shows it.
        #[arg(value_name = "SERVER | TOOL")]
        server: Option<String>,
        #[command(flatten)]
        search: crate::search::SearchArgs,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// One tool in full: its description and a table of its arguments (type, required, default,
    /// values).
    Describe {
        /// The tool's qualified name (`mcp__<server>__<tool>`).
        name: String,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Call a tool by its qualified name (`mcp__<server>__<tool>`).
    Call {
        /// The tool's qualified name.
        name: String,
        /// The arguments as one JSON object; `-` reads them from stdin; none means `{}`.
        #[arg(value_name = "ARGS_JSON")]
        arguments: Vec<String>,
        /// One argument (repeatable), typed by the tool's schema: `-a id=123` is a string for a
        /// string argument, a number for a number one; arrays and objects as JSON.
        #[arg(long = "arg", short = 'a', value_name = "KEY=VALUE", conflicts_with = "arguments")]
        args: Vec<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Every resource of every server, or of one server, with its `@server:uri` reference.
    Resources {
        /// Only this server's resources.
        server: Option<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Every resource template of every server, or of one server.
    Templates {
        /// Only this server's templates.
        server: Option<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Read a resource: its text is printed, binary content is written to a file whose path is printed.
    Read {
        /// The server, or the resource's `@server:uri` reference (as `plexus resources` shows it).
        #[arg(value_name = "SERVER | @SERVER:URI")]
        server: String,
        /// The resource's URI (none with an `@server:uri` reference).
        uri: Option<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Every prompt of every server, or of one server, by its qualified name.
    Prompts {
        /// Only this server's prompts.
        server: Option<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Get a prompt by its qualified name (`mcp__<server>__<prompt>`), with its arguments.
    Prompt {
        /// The prompt's qualified name.
        name: String,
        /// The prompt's arguments.
        #[arg(value_name = "ARG=VALUE")]
        arguments: Vec<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Every skill of every server (or of one server) that serves skills (the skills
    /// extension): its server, name, files and URI. No skill file is read.
    Skills {
        /// Only this server's skills.
        server: Option<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Load a skill and print its SKILL.md, verified against the skill's entry (size, SHA-256
    /// digest, front matter): one that fails is refused and not printed.
    Skill {
        /// The server that serves it.
        server: String,
        /// The URI of its SKILL.md (as `plexus skills` shows it).
        uri: String,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Ping every server, or one server, and show how long each took to answer.
    Ping {
        /// Only this server.
        server: Option<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Serve the tools, prompts and resources of every configured server as one MCP server
    /// (gateway mode): over stdio, or Streamable HTTP with --http.
    Serve(ServeArgs),
    /// Write the tool-pool lockfile from what every connected server lists now (--scope user,
    /// the default: <home>/mcp.lock.json; project: <project>/.mcp.lock.json); with --update,
    /// re-lock (approve) only the named tools or servers.
    Lock {
        /// Re-lock only these: a tool's qualified name (`mcp__<server>__<tool>`) or a server's
        /// name (all of its tools); without --scope, in every lockfile that locks the server.
        #[arg(long, value_name = "NAME", num_args = 1..)]
        update: Vec<String>,
        /// Which lockfile: user or project.
        #[arg(long, short = 's', value_name = "user|project", value_parser = lock::parse_scope)]
        scope: Option<plexus::tools::lock::LockScope>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// What changed in the locked servers' tools since they were locked, field by field (exit 1
    /// when something did).
    Diff {
        /// Only this server.
        server: Option<String>,
        #[command(flatten)]
        ad_hoc: AdHoc,
    },
    /// Print a shell completion script (e.g. `plexus completions bash > ~/.local/share/bash-completion/completions/plexus`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Show one server's merged entry: scope, source file, status and its expanded config.
    Get {
        /// The server's name.
        name: String,
    },
    /// Add a server: `plexus add NAME URL` or `plexus add NAME -- COMMAND [ARGS...]`.
    Add(AddArgs),
    /// Add a server from its JSON entry (`-` reads it from stdin).
    AddJson {
        /// The server's name.
        name: String,
        /// The entry, a JSON object as in `mcpServers`; `-` reads it from stdin.
        #[arg(value_name = "JSON")]
        entry: String,
        /// Where to write it.
        #[arg(long, short = 's', default_value = "local", value_name = "local|project|user")]
        scope: Scope,
    },
    /// Remove a server from the one scope that defines it, or from --scope.
    Remove {
        /// The server's name.
        name: String,
        /// The scope to remove it from (needed when several define it).
        #[arg(long, short = 's', value_name = "local|project|user")]
        scope: Option<Scope>,
    },
    /// Approve project servers (`.mcp.json`) so that they run; recorded in the local settings.
    Approve {
        /// The servers to approve.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        names: Vec<String>,
        /// Approve every project server that is waiting for approval.
        #[arg(long)]
        all: bool,
    },
    /// Reject project servers (`.mcp.json`) so that they never run; recorded in the local settings.
    Reject {
        /// The servers to reject.
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Import servers from another client's config file.
    Import(ImportArgs),
    /// Log in to a remote server with OAuth: print the authorization URL, open it in a browser
    /// ($BROWSER, else xdg-open), wait for the redirect, store the tokens in
    /// credentials.json in the plexus home.
    Login {
        /// The server.
        name: String,
        /// How long to wait for the browser to come back with the authorization, in seconds (1 to 86400).
        #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_LOGIN_TIMEOUT.as_secs(),
              value_parser = clap::value_parser!(u64).range(1..=MAX_LOGIN_TIMEOUT_SECS))]
        timeout: u64,
    },
    /// Forget a server's OAuth tokens and client registration.
    Logout {
        /// The server.
        name: String,
    },
    /// Run the built-in demo MCP server over stdio.
    DemoServer(plexus_testserver::StdioOptions),
}

/// The options of `plexus serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve Streamable HTTP at http://HOST:PORT/mcp (e.g. localhost:8931 or 127.0.0.1:8931)
    /// instead of stdio.
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) http: Option<crate::serve::ListenAddress>,
    /// A file whose first line is the bearer token HTTP clients must send (needed off
    /// loopback); PLEXUS_GATEWAY_TOKEN gives it too.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) token_file: Option<PathBuf>,
    /// End an HTTP session after this many seconds without a request, an open event
    /// stream or a call running (its client then initializes again).
    #[arg(long, value_name = "SECS", default_value_t = 1800, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) session_idle: u64,
    /// Answer `initialize` and the first lists after at most this many seconds with the
    /// servers that are up by then; the later ones join with a list_changed notification.
    #[arg(long, value_name = "SECS", default_value_t = 2,
          value_parser = clap::value_parser!(u64).range(0..=300))]
    pub(crate) ready_grace: u64,
    /// A server that crashed 3 times within a minute is started again after this many
    /// seconds (twice as long each time it does so again, up to 15 minutes).
    #[arg(long, value_name = "SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) crash_pause: u64,
    /// List three meta-tools instead of every tool: search_tools, describe_tools and
    /// call_tool, which find tools, give their full definitions and call them.
    #[arg(long)]
    pub(crate) deferred: bool,
    /// Do not follow the config files. By default an edit to them takes effect at once: an
    /// added server joins, a removed one is closed, a changed one is restarted alone, and the
    /// clients get list_changed; an edit that does not load is reported and changes nothing.
    #[arg(long)]
    pub(crate) no_watch: bool,
    #[command(flatten)]
    pub(crate) ad_hoc: AdHoc,
}

/// `plexus add`.
#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    /// Where to write it: local (this project, only you), project (`.mcp.json`, shared), user (every project).
    #[arg(long, short = 's', default_value = "local", value_name = "local|project|user")]
    pub(crate) scope: Scope,
    /// The transport; by default `http` for an http(s):// URL, `ws` for a ws(s):// URL, else `stdio`.
    #[arg(long, short = 't', value_name = "stdio|sse|http|ws", value_parser = transport)]
    pub(crate) transport: Option<ServerKind>,
    /// An environment variable of a stdio server (repeatable).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// A header of a remote server (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'Name: value'")]
    pub(crate) headers: Vec<String>,
    /// The server's name.
    pub(crate) name: String,
    /// The server's URL, or `-- COMMAND [ARGS...]`.
    #[arg(value_name = "URL | -- COMMAND [ARGS]")]
    pub(crate) target: Vec<String>,
}

/// `plexus import`.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The client whose config to read.
    #[arg(long, value_name = "claude-desktop|vscode|cursor|claude-code")]
    pub(crate) from: ImportSource,
    /// Its config file; by default the client's usual places are looked at.
    pub(crate) file: Option<PathBuf>,
    /// Where to write the servers.
    #[arg(long, short = 's', default_value = "local", value_name = "local|project|user")]
    pub(crate) scope: Scope,
    /// Replace servers the target file already defines (by default they are kept).
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// Prints `message` as a `plexus: error: ...` line on stderr and says the command failed with a
/// usage or config error.
pub(crate) fn fail(message: impl std::fmt::Display) -> Outcome {
    crate::terminal::say(format_args!("error: {message}"));
    Outcome::Usage
}

/// [`fail`] for an error, printed with its causes.
pub(crate) fn fail_error(error: &dyn std::error::Error) -> Outcome {
    crate::terminal::say_error(error);
    Outcome::Usage
}

fn transport(name: &str) -> Result<ServerKind, String> {
    new_entry::parse_transport(name).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(Outcome::Usage as u8)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Command::DemoServer(args) = cli.command {
        return plexus_testserver::run_stdio(args);
    }
    // First, while this is the only thread.
    secrets::take();
    // Flushed and shut down when dropped, as `main` returns (after Ctrl-C too).
    #[allow(clippy::let_unit_value)] // `()` without the `otlp` feature.
    let _telemetry = init_tracing(cli.globals.verbose);
    // A server's daemon that left its process group becomes ours when the server exits, and is
    // ended with the servers (Linux; elsewhere it outlives us, as before).
    if let Err(e) = plexus::stdio::orphans::adopt_orphans() {
        tracing::debug!("server processes that leave their process group will outlive plexus: {e}");
    }
    if cli.globals.quiet {
        terminal::set_quiet();
    }
    let outcome = commands::run(cli);
    // Output that could not be written (other than to a reader that went away) fails the command.
    let outcome = if terminal::stdout_failed() {
        outcome.max(Outcome::Usage)
    } else {
        outcome
    };
    ExitCode::from(outcome as u8)
}

/// How long the stdio servers' shutdown sequences may still run when the command is done (their
/// own cap is 600 ms).
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a server's orphaned descendant has between `SIGTERM` and `SIGKILL`.
const ORPHAN_GRACE: std::time::Duration = std::time::Duration::from_millis(400);

/// Runs `job` on a multi-threaded runtime. On SIGINT, SIGTERM or SIGHUP the job is abandoned:
/// the pending requests of every live session are cancelled on their servers, every session is
/// closed (stdio servers with their shutdown sequence), and the command exits 130, 143 or 129.
/// Either way, no server is left running: the shutdown sequences started meanwhile (also by
/// transports dropped with the job) are waited for before the process exits.
pub(crate) fn block_on(job: impl Future<Output = Outcome>) -> Outcome {
    run_on(tokio::runtime::Builder::new_multi_thread(), job)
}

/// [`block_on`] with every task on this one thread: for `plexus serve` over stdio, whose one
/// client's requests wait on pipes. Worker threads park and wake through a shared idle list on
/// every wait; one thread does not (the gateway bench, pinned, alternated runs: the gateway added
/// a median 20.4 µs per call, against 21.15 µs on worker threads). What may take long (a
/// result's images and files) is processed on blocking threads, so it holds up no other request.
pub(crate) fn block_on_one_thread(job: impl Future<Output = Outcome>) -> Outcome {
    run_on(tokio::runtime::Builder::new_current_thread(), job)
}

fn run_on(mut builder: tokio::runtime::Builder, job: impl Future<Output = Outcome>) -> Outcome {
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            crate::terminal::say(format_args!("could not start the async runtime: {e}"));
            return Outcome::Connection;
        }
    };
    let outcome = runtime.block_on(async {
        let signal = match connect::Interrupt::listen() {
            Ok(signal) => signal,
            Err(e) => {
                crate::terminal::say(format_args!("cannot watch for Ctrl-C: {e}"));
                return job.await;
            }
        };
        let live = connect::Live::default();
        let mut job = std::pin::pin!(connect::run_job(std::sync::Arc::clone(&live), job));
        tokio::select! {
            outcome = &mut job => outcome,
            outcome = signal.received() => {
                // The job is kept (not polled) until its servers are told: its requests are still
                // pending, so each is cancelled before its session closes.
                connect::interrupt_all(&live).await;
                outcome
            }
        }
    });
    runtime.shutdown_timeout(SHUTDOWN_WAIT);
    if !plexus::stdio::wait_for_shutdowns(SHUTDOWN_WAIT) {
        crate::terminal::say("a server's shutdown did not finish in time; its processes may still run");
    }
    plexus::stdio::orphans::end_orphans(ORPHAN_GRACE);
    outcome
}

/// What keeps the OpenTelemetry export alive (nothing without the `otlp` feature).
#[cfg(feature = "otlp")]
type Telemetry = Option<plexus::telemetry::Otlp>;
/// What keeps the OpenTelemetry export alive (nothing without the `otlp` feature).
#[cfg(not(feature = "otlp"))]
type Telemetry = ();

/// Tracing on stderr: `-v` shows each server's stderr lines and log notifications (at their
/// level, tagged with the server's name), `-vv` also each JSON-RPC message sent and received
/// (method, id, size), `-vvv` their bodies too (secrets redacted); `RUST_LOG` overrides. Colours
/// only when stderr is a terminal and `NO_COLOR` is not set. With the `otlp` feature and an OTLP
/// endpoint in the environment, the MCP spans and histograms are exported too (see
/// `plexus::telemetry`); a bad `OTEL_*` value is reported and the command goes on without.
fn init_tracing(verbose: u8) -> Telemetry {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => EnvFilter::new(spec),
        _ => EnvFilter::new(match verbose {
            0 => "off",
            1 => "info,plexus_stdio::stderr=debug",
            2 => "debug",
            _ => "trace",
        }),
    };
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    #[cfg(not(feature = "otlp"))]
    {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .with_target(false)
            .try_init();
    }
    #[cfg(feature = "otlp")]
    {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        // The headers are secrets the command took out of its environment (see `secrets`).
        let lookup = |name: &str| crate::secrets::get(name).or_else(|| std::env::var(name).ok());
        let otlp = match plexus::telemetry::OtlpSettings::from_lookup("plexus", lookup)
            .and_then(|settings| settings.as_ref().map(plexus::telemetry::Otlp::install).transpose())
        {
            Ok(otlp) => otlp,
            Err(e) => {
                crate::terminal::say(format_args!(
                    "OpenTelemetry is off: {}",
                    plexus::transport::error_chain(&e)
                ));
                None
            }
        };
        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .with_target(false)
            .with_filter(filter);
        let _ = tracing_subscriber::registry()
            .with(fmt)
            .with(otlp.as_ref().and_then(plexus::telemetry::Otlp::layer))
            .try_init();
        otlp
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
