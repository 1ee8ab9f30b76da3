//! The `plexus` command: list, inspect and call the tools of the MCP servers a config describes.
#![forbid(unsafe_code)]

mod commands;
mod connect;
mod output;
mod sources;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// How the command ended (the documented exit codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Outcome {
    /// 0: everything worked.
    Ok = 0,
    /// 1: the tool returned `isError`.
    ToolError = 1,
    /// 2: usage or config error.
    Usage = 2,
    /// 3: connection or protocol error.
    Connection = 3,
    // 4 (a server needs authentication) arrives with remote servers and their auth.
}

/// plexus: the MCP client stack's command line.
#[derive(Debug, Parser)]
#[command(name = "plexus", version, about = "List, inspect and call the tools of MCP servers.", long_about = None)]
pub(crate) struct Cli {
    /// A config file with an `mcpServers` object (repeatable; later files win for a server defined twice).
    #[arg(long = "config", value_name = "FILE", global = true)]
    pub(crate) config: Vec<PathBuf>,
    /// Print machine-readable JSON (stable; see the README).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// More tracing on stderr (-v info, -vv debug, -vvv trace); `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Every configured server: kind, status, protocol version, server info, tool count, error.
    Servers,
    /// Every tool of every server, or of one server.
    Tools {
        /// Only this server's tools.
        server: Option<String>,
    },
    /// Call a tool by its qualified name (`mcp__<server>__<tool>`).
    Call {
        /// The tool's qualified name.
        name: String,
        /// The arguments as a JSON object; `-` reads them from stdin; none means `{}`.
        arguments: Option<String>,
    },
    /// Run the built-in demo MCP server over stdio.
    DemoServer(plexus_testserver::StdioOptions),
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
    init_tracing(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("plexus: could not start the async runtime: {e}");
            return ExitCode::from(Outcome::Connection as u8);
        }
    };
    let outcome = runtime.block_on(commands::run(cli));
    // Server shutdowns started by dropped sessions finish on their own threads; give the runtime
    // a bounded moment for the tasks that are still closing transports.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    ExitCode::from(outcome as u8)
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => EnvFilter::new(spec),
        _ => EnvFilter::new(match verbose {
            0 => "off",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
