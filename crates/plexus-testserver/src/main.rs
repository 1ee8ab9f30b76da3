//! The `plexus-testserver` binary: parses the command line and runs the server.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    plexus_testserver::run(plexus_testserver::Cli::parse())
}
