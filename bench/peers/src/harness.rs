//! The harness: pins itself (or not), starts the one Streamable HTTP server of the pass, and runs
//! every row's workload in a child process of its own (itself again with `--role`, or Node),
//! rounds interleaved across the rows; gathers the figures as [`Sample`]s.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::BenchError;
use crate::args::Args;
use crate::role::{Counts, Era, Figures, Programs, Role, Row, Runtime, Task, Transport};
use crate::support::http_server::HttpServer;

/// The longest one child may run (a row that hangs is ended and reported).
const CHILD_LIMIT: Duration = Duration::from_secs(300);

/// How much of a run: the counts of each workload.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Plan {
    /// Rounds per pass (medians are taken over them).
    pub(crate) rounds: usize,
    /// Calls before the timed ones.
    pub(crate) warmup: usize,
    /// Sequential calls, and calls in the throughput phase.
    pub(crate) calls: usize,
    /// Calls in flight in the throughput phase.
    pub(crate) in_flight: usize,
    /// Idle stdio connections.
    pub(crate) idle_connections: usize,
    /// Timed-out requests (plexus).
    pub(crate) timed_out_calls: usize,
    /// Their timeout.
    pub(crate) timed_out_ms: u64,
    /// Timed-out requests in flight.
    pub(crate) timed_out_in_flight: usize,
    /// Servers started through the pool.
    pub(crate) pool_servers: usize,
    /// Calls in flight through the gateway.
    pub(crate) gateway_in_flight: usize,
}

impl Plan {
    /// The full run, or the CI smoke (`quick`).
    pub(crate) fn new(rounds: usize, quick: bool) -> Plan {
        if quick {
            Plan {
                rounds: 1,
                warmup: 50,
                calls: 640,
                in_flight: 64,
                idle_connections: 10,
                timed_out_calls: 1_000,
                timed_out_ms: 20,
                timed_out_in_flight: 64,
                pool_servers: 10,
                gateway_in_flight: 32,
            }
        } else {
            Plan {
                rounds,
                warmup: 1_000,
                calls: 20_000,
                in_flight: 64,
                idle_connections: 100,
                timed_out_calls: 100_000,
                timed_out_ms: 20,
                timed_out_in_flight: 256,
                pool_servers: 50,
                gateway_in_flight: 32,
            }
        }
    }
}

/// One figure of one row in one round.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Sample {
    /// `pinned to CPU N` or `unpinned`.
    pub(crate) pass: String,
    /// The round (from 0).
    pub(crate) round: usize,
    /// The figure's name (see [`crate::role::Task`]).
    pub(crate) figure: String,
    /// `stdio`, `HTTP`, or empty where the workload has one wire only.
    pub(crate) transport: String,
    /// The row's label.
    pub(crate) row: String,
    /// The value.
    pub(crate) value: f64,
}

/// The client rows of the calls workloads, in table order.
pub(crate) fn call_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for era in [Era::Initialize, Era::Stateless] {
        rows.push(Row::Floor { era });
    }
    for runtime in [Runtime::MultiThread, Runtime::CurrentThread] {
        for era in [Era::Initialize, Era::Stateless] {
            rows.push(Row::Plexus { era, runtime });
        }
    }
    rows.extend([Row::Rmcp { tuned: false }, Row::Rmcp { tuned: true }, Row::TsSdk]);
    rows
}

/// The gateway rows' labels.
pub(crate) const DIRECT: &str = "plexus (direct)";
/// See [`DIRECT`].
pub(crate) const THROUGH_GATEWAY: &str = "plexus via plexus serve";

/// Runs the whole bench: each pass (pinned, then unpinned), each round, each row.
pub(crate) fn run(args: &Args, plan: Plan) -> Result<Vec<Sample>, BenchError> {
    let mut samples = Vec::new();
    let mut passes: Vec<Option<usize>> = vec![Some(args.cpu)];
    if !args.quick {
        passes.push(None);
    }
    for cpu in passes {
        let pass = crate::pin(cpu)?;
        eprintln!("== {pass}");
        // Started after pinning: the server runs on the CPU the clients do.
        let server = HttpServer::start(&args.testserver, &["--json-response"]);
        let programs = Programs {
            testserver: args.testserver.clone(),
            url: Some(server.url.clone()),
            plexus: args.plexus.clone(),
        };
        let mut runner = Runner {
            args,
            plan,
            programs,
            pass,
            samples: &mut samples,
        };
        for round in 0..plan.rounds {
            runner.round(round)?;
        }
        drop(server);
    }
    Ok(samples)
}

struct Runner<'a> {
    args: &'a Args,
    plan: Plan,
    programs: Programs,
    pass: String,
    samples: &'a mut Vec<Sample>,
}

impl Runner<'_> {
    fn round(&mut self, round: usize) -> Result<(), BenchError> {
        let plan = self.plan;
        for transport in [Transport::Stdio, Transport::Http] {
            for row in call_rows() {
                let counts = Counts {
                    warmup: plan.warmup,
                    calls: plan.calls,
                    in_flight: plan.in_flight,
                };
                let figures = if row == Row::TsSdk {
                    let Some(node) = &self.args.node else { continue };
                    run_child(node.command(&self.programs, transport, counts), &row.label())?
                } else {
                    self.role(Task::Calls { row, transport, counts }, &row.label())?
                };
                self.record(round, transport.label(), &row.label(), figures);
            }
        }
        for row in [
            Row::Floor { era: Era::Initialize },
            Row::Plexus {
                era: Era::Initialize,
                runtime: Runtime::MultiThread,
            },
            Row::Rmcp { tuned: false },
        ] {
            let task = Task::Idle {
                row,
                connections: plan.idle_connections,
            };
            let figures = self.role(task, &format!("{} idle", row.label()))?;
            self.record(round, "stdio", &row.label(), figures);
        }
        if self.programs.plexus.is_some() {
            for (through_gateway, label) in [(false, DIRECT), (true, THROUGH_GATEWAY)] {
                let task = Task::Gateway {
                    through_gateway,
                    counts: Counts {
                        warmup: plan.warmup,
                        calls: plan.calls,
                        in_flight: plan.gateway_in_flight,
                    },
                };
                let figures = self.role(task, label)?;
                let figures = figures.into_iter().map(|(k, v)| (format!("gateway_{k}"), v)).collect();
                self.record(round, "stdio", label, figures);
            }
        }
        let figures = self.role(
            Task::Pool {
                servers: plan.pool_servers,
            },
            "plexus pool",
        )?;
        self.record(round, "stdio", "plexus", figures);
        // Memory over many timed-out requests: once per pass (a memory figure, not a timing).
        if round == 0 {
            let task = Task::TimedOut {
                calls: plan.timed_out_calls,
                in_flight: plan.timed_out_in_flight,
                timeout_ms: plan.timed_out_ms,
            };
            let figures = self.role(task, "plexus timed-out requests")?;
            if let (Some(before), Some(after)) = (figures.get("rss_before_kib"), figures.get("rss_after_kib")) {
                let mut figures = figures.clone();
                figures.insert("timed_out_rss_ratio".to_owned(), after / before);
                self.record(round, "stdio", "plexus", figures);
            }
        }
        Ok(())
    }

    /// Runs `task` in a child process (this program with `--role`).
    fn role(&self, task: Task, label: &str) -> Result<Figures, BenchError> {
        let role = Role {
            task,
            programs: self.programs.clone(),
        };
        let exe = std::env::current_exe().map_err(|source| BenchError::Io {
            what: "finding this program's path".to_owned(),
            source,
        })?;
        let mut command = Command::new(exe);
        command
            .arg("--role")
            .arg(serde_json::to_string(&role).unwrap_or_default());
        run_child(command, label)
    }

    fn record(&mut self, round: usize, transport: &str, row: &str, figures: Figures) {
        eprintln!("  {} {transport} {row}: {}", self.pass, describe(&figures));
        for (figure, value) in figures {
            self.samples.push(Sample {
                pass: self.pass.clone(),
                round,
                figure,
                transport: transport.to_owned(),
                row: row.to_owned(),
                value,
            });
        }
    }
}

fn describe(figures: &Figures) -> String {
    figures
        .iter()
        .map(|(k, v)| format!("{k}={v:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a row's child for at most [`CHILD_LIMIT`] and parses the JSON line it prints last.
pub(crate) fn run_child(mut command: Command, label: &str) -> Result<Figures, BenchError> {
    let failed = |detail: String| BenchError::Child {
        row: label.to_owned(),
        detail,
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("could not start {}: {e}", command.get_program().display())))?;
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + CHILD_LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "did not finish within {} s; it was killed",
                    CHILD_LIMIT.as_secs()
                )));
            }
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(failed(format!("waiting for it: {e}"))),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(failed(format!("{status}: {}", tail.join("\n"))));
    }
    let line = stdout
        .lines()
        .rev()
        .find(|line| line.starts_with('{'))
        .unwrap_or_default();
    parse_figures(line).map_err(failed)
}

/// A child's figures line: a JSON object of numbers (a `null` figure, one the system did not
/// give, is left out).
pub(crate) fn parse_figures(line: &str) -> Result<Figures, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("its figures line is not JSON ({e}): {line:?}"))?;
    let object = value
        .as_object()
        .ok_or_else(|| format!("its figures line is not a JSON object: {line:?}"))?;
    let mut figures = Figures::new();
    for (name, value) in object {
        match value {
            serde_json::Value::Null => {}
            serde_json::Value::Number(number) => {
                let value = number
                    .as_f64()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| format!("figure {name} is not a finite number: {number}"))?;
                figures.insert(name.clone(), value);
            }
            other => return Err(format!("figure {name} is not a number: {other}")),
        }
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figures_line_is_an_object_of_numbers_and_nulls_are_left_out() {
        let figures = parse_figures(r#"{"p50_us":12.5,"calls_per_s":40000,"peak_rss_kib":null}"#).unwrap();
        assert_eq!(
            figures,
            Figures::from([("p50_us".to_owned(), 12.5), ("calls_per_s".to_owned(), 40000.0)])
        );
    }

    #[test]
    fn a_bad_figures_line_is_named() {
        assert_eq!(
            parse_figures("").unwrap_err(),
            "its figures line is not JSON (EOF while parsing a value at line 1 column 0): \"\""
        );
        assert_eq!(
            parse_figures("[1]").unwrap_err(),
            "its figures line is not a JSON object: \"[1]\""
        );
        assert_eq!(
            parse_figures(r#"{"p50_us":"fast"}"#).unwrap_err(),
            "figure p50_us is not a number: \"fast\""
        );
    }

    /// A child that fails is reported with its row, its status and the end of its stderr; one
    /// that prints no figures likewise.
    #[test]
    fn a_failing_child_is_reported_with_its_stderr() {
        let mut failing = Command::new("sh");
        failing.args(["-c", "echo starting; echo 'no server here' >&2; exit 3"]);
        assert_eq!(
            run_child(failing, "rmcp").unwrap_err().to_string(),
            "row rmcp: exit status: 3: no server here"
        );
        let mut silent = Command::new("sh");
        silent.args(["-c", "echo done"]);
        assert!(
            run_child(silent, "floor")
                .unwrap_err()
                .to_string()
                .starts_with("row floor: its figures line is not JSON")
        );
        let mut fine = Command::new("sh");
        fine.args(["-c", r#"echo noise; echo '{"connect_ms":3}'"#]);
        assert_eq!(
            run_child(fine, "floor").unwrap(),
            Figures::from([("connect_ms".to_owned(), 3.0)])
        );
    }

    #[test]
    fn the_rows_come_in_table_order_with_distinct_labels() {
        let labels: Vec<String> = call_rows().into_iter().map(Row::label).collect();
        assert_eq!(
            labels,
            [
                "floor",
                "floor (stateless)",
                "plexus",
                "plexus (stateless)",
                "plexus ct",
                "plexus ct (stateless)",
                "rmcp",
                "rmcp tuned",
                "ts-sdk"
            ]
        );
    }

    /// The role a child gets survives the trip through its argument.
    #[test]
    fn a_role_round_trips_through_json() {
        let role = Role {
            task: Task::Calls {
                row: Row::Plexus {
                    era: Era::Stateless,
                    runtime: Runtime::CurrentThread,
                },
                transport: Transport::Http,
                counts: Counts {
                    warmup: 1,
                    calls: 2,
                    in_flight: 3,
                },
            },
            programs: Programs {
                testserver: "/t".to_owned(),
                url: Some("http://127.0.0.1:1/mcp".to_owned()),
                plexus: None,
            },
        };
        let text = serde_json::to_string(&role).unwrap();
        let back: Role = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
    }
}
