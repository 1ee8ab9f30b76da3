//! A real MCP server with switchable faults, spoken over stdio, for plexus's tests, benchmarks and demo.
//!
//! The binary `plexus-testserver stdio [OPTIONS]` serves one MCP session on its standard input and
//! output. The same server runs in-process through [`run_stdio`] (the `plexus demo-server` command
//! does this), configured by the same clap arguments ([`StdioOptions`]):
//!
//! ```
//! use clap::Parser;
//! use plexus_testserver::{Cli, Command};
//!
//! let cli = Cli::try_parse_from(["plexus-testserver", "stdio", "--tools", "30", "--page-size", "10"]).unwrap();
//! let Command::Stdio(options) = cli.command;
//! assert_eq!(options.server.tools, 30);
//! assert_eq!(options.server.page_size, Some(10));
//! // `plexus_testserver::run_stdio(options)` would now serve on this process's stdin and stdout
//! // until stdin closes, and return the exit code.
//! ```
//!
//! What the server offers (protocol 2025-11-25, also 2025-06-18, 2025-03-26 and 2024-11-05):
//! - tools `echo`, `add`, `large`, `image`, `slow`, `trigger-list-changed`, `update-resource`,
//!   `elicit`, `sample`, `roots`, `log`, `error`, `fail`, and the fault tools `crash`, `hang`,
//!   `garbage`, `oversize`, `drip`, `stderr`; `--tools N` adds generated tools for pagination;
//! - static resources under `test://static/`, the templates `test://items/{id}` and
//!   `test://echo/{text}`, subscriptions, prompts `simple`, `greeting` and `code-review`,
//!   completions and `logging/setLevel`;
//! - requests are handled concurrently: a tool that waits (`slow`, `elicit`, …) runs on its own
//!   task while quick requests are answered inline, so replies may come out of order;
//! - process-level faults and test aids (see [`ServerOptions`] and [`ProcessOptions`]), and an
//!   event log (`--event-log`) through which tests observe notifications, signals and exits.
//!
//! The MCP logic (the session that handles one decoded message and produces outputs) knows nothing
//! of the stdio framing, so other transports can drive it.
//!
//! Dependencies beyond the house set: `bytes` holds the input buffer that
//! [`plexus_jsonrpc::LineCodec`] decodes from; nix's `fs` feature reads the stdio pipes' file
//! status flags so that they can be restored after the reactor made the pipes non-blocking.
#![forbid(unsafe_code)]

mod catalog;
mod cli;
mod events;
mod faults;
mod pipes;
mod server;
mod stdio;
mod tools;

pub use cli::{Cli, Command, ProcessOptions, ServerOptions, StdioOptions, run};
pub use server::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
pub use stdio::run_stdio;
