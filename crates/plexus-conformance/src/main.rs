//! `plexus-conformance-client [--] <server-url>`: the client command of the MCP conformance suite.
//! The suite appends the scenario server's URL as the last argument and names the scenario in
//! `MCP_CONFORMANCE_SCENARIO`; exit 0 means the client did its part, 1 that it failed (the reason is
//! on stderr), 2 a usage error. `RUST_LOG` turns on tracing to stderr.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use plexus::transport::error_chain;
use plexus_conformance::{CONTEXT_ENV, Limits, PROTOCOL_VERSION_ENV, SCENARIO_ENV, Scenario, parse_context, run};

const USAGE: &str = "usage: plexus-conformance-client [--] <server-url>\n\
    (run by the MCP conformance suite, which sets MCP_CONFORMANCE_SCENARIO and may set MCP_CONFORMANCE_CONTEXT)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let Some(url) = args.last().filter(|arg| *arg != "--") else {
        eprintln!("plexus-conformance-client: the server URL is missing\n{USAGE}");
        return ExitCode::from(2);
    };
    let scenario = match std::env::var(SCENARIO_ENV) {
        Ok(scenario) if !scenario.trim().is_empty() => scenario,
        _ => {
            eprintln!("plexus-conformance-client: {SCENARIO_ENV} is not set\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .init();
    }
    let context = match parse_context(&scenario, std::env::var(CONTEXT_ENV).ok().as_deref()) {
        Ok(context) => context,
        Err(e) => {
            eprintln!("plexus-conformance-client: scenario {scenario}: {}", error_chain(&e));
            return ExitCode::FAILURE;
        }
    };
    let scenario = Scenario {
        name: scenario,
        context,
        protocol_version: std::env::var(PROTOCOL_VERSION_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty()),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("plexus-conformance-client: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(url, &scenario, Limits::default())) {
        Ok(transcript) => {
            for line in transcript {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "plexus-conformance-client: scenario {}: {}",
                scenario.name,
                error_chain(&e)
            );
            ExitCode::FAILURE
        }
    }
}
