//! The command line.

use std::path::PathBuf;

use crate::BenchError;
use crate::node_row::NodeRow;

/// The usage text.
pub(crate) const USAGE: &str = "usage: plexus-peer-bench --testserver PATH [--plexus PATH] [--node PATH --ts-sdk DIR] \
[--script FILE] [--rounds N] [--quick] [--cpu N] [--json FILE]
  --testserver PATH  plexus-testserver, release (or PLEXUS_TESTSERVER_BIN)
  --plexus PATH      the plexus CLI, release: the gateway rows (left out without it)
  --node PATH        Node 22 and --ts-sdk DIR, the installed @modelcontextprotocol/sdk: the ts-sdk row
  --script FILE      the ts-sdk row's script (default: node/client.mjs beside this crate)
  --rounds N         rounds per pass, medians taken over them (default 3)
  --quick            a smoke run: 1 round, few calls, pinned pass only
  --cpu N            the CPU of the pinned pass (default 0)
  --json FILE        also write the raw figures there
Run through `cargo xtask bench --peers`, which builds and passes all of these.";

/// What the harness was asked.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    /// The test server binary.
    pub(crate) testserver: String,
    /// The plexus CLI binary.
    pub(crate) plexus: Option<String>,
    /// The ts-sdk row.
    pub(crate) node: Option<NodeRow>,
    /// Rounds per pass.
    pub(crate) rounds: usize,
    /// The smoke run.
    pub(crate) quick: bool,
    /// The pinned pass's CPU.
    pub(crate) cpu: usize,
    /// Where to write the raw figures.
    pub(crate) json: Option<PathBuf>,
}

/// The invocation: the harness, or a child in a role (`--role JSON`, see [`crate::role::Role`]).
#[derive(Debug)]
pub(crate) enum Invocation {
    /// `--help`.
    Help,
    /// The harness.
    Harness(Args),
    /// A child.
    Role(String),
}

/// Parses the arguments (without the program name).
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Invocation, BenchError> {
    let mut args = args.into_iter();
    let usage = |message: String| BenchError::Usage(message);
    let mut testserver = std::env::var("PLEXUS_TESTSERVER_BIN").ok();
    let (mut plexus, mut node, mut sdk, mut json) = (None, None, None, None);
    let mut script = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/node/client.mjs"));
    let (mut rounds, mut quick, mut cpu) = (3usize, false, 0usize);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| usage(format!("{name} needs a value")));
        match arg.as_str() {
            "--help" | "-h" => return Ok(Invocation::Help),
            "--role" => return Ok(Invocation::Role(value("--role")?)),
            "--testserver" => testserver = Some(value("--testserver")?),
            "--plexus" => plexus = Some(value("--plexus")?),
            "--node" => node = Some(PathBuf::from(value("--node")?)),
            "--ts-sdk" => sdk = Some(PathBuf::from(value("--ts-sdk")?)),
            "--script" => script = PathBuf::from(value("--script")?),
            "--json" => json = Some(PathBuf::from(value("--json")?)),
            "--quick" => quick = true,
            "--rounds" => rounds = number("--rounds", &value("--rounds")?, 1)?,
            "--cpu" => cpu = number("--cpu", &value("--cpu")?, 0)?,
            other => return Err(usage(format!("unknown argument {other:?}"))),
        }
    }
    let testserver =
        testserver.ok_or_else(|| usage("--testserver PATH (or PLEXUS_TESTSERVER_BIN) is needed".to_owned()))?;
    let node = match (node, sdk) {
        (Some(node), Some(sdk)) => Some(NodeRow { node, sdk, script }),
        (None, None) => None,
        _ => return Err(usage("--node and --ts-sdk go together".to_owned())),
    };
    Ok(Invocation::Harness(Args {
        testserver,
        plexus,
        node,
        rounds,
        quick,
        cpu,
        json,
    }))
}

fn number(name: &str, text: &str, min: usize) -> Result<usize, BenchError> {
    match text.parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(BenchError::Usage(format!(
            "{name} takes a whole number ≥ {min}, not {text:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_list(args: &[&str]) -> Result<Invocation, BenchError> {
        parse(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn the_harness_takes_its_programs_and_counts() {
        let Invocation::Harness(args) = parse_list(&[
            "--testserver",
            "/t",
            "--plexus",
            "/p",
            "--node",
            "/n",
            "--ts-sdk",
            "/s",
            "--rounds",
            "5",
            "--cpu",
            "1",
            "--json",
            "/j",
        ])
        .unwrap() else {
            panic!("not the harness");
        };
        assert_eq!(args.testserver, "/t");
        assert_eq!(args.plexus.as_deref(), Some("/p"));
        let node = args.node.unwrap();
        assert_eq!((node.node.to_str(), node.sdk.to_str()), (Some("/n"), Some("/s")));
        assert!(node.script.ends_with("node/client.mjs"));
        assert_eq!((args.rounds, args.cpu, args.quick), (5, 1, false));
        assert_eq!(args.json.as_deref(), Some(std::path::Path::new("/j")));
        assert!(matches!(parse_list(&["--role", "{}"]).unwrap(), Invocation::Role(text) if text == "{}"));
    }

    #[test]
    fn bad_arguments_are_named() {
        let message = |args: &[&str]| match parse_list(args) {
            Err(BenchError::Usage(message)) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message(&["--testserver", "/t", "--rounds", "0"]),
            "--rounds takes a whole number ≥ 1, not \"0\""
        );
        assert_eq!(
            message(&["--testserver", "/t", "--node", "/n"]),
            "--node and --ts-sdk go together"
        );
        assert_eq!(
            message(&["--testserver", "/t", "--fast"]),
            "unknown argument \"--fast\""
        );
        assert_eq!(message(&["--testserver"]), "--testserver needs a value");
    }
}
