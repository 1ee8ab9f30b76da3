//! What each cell must come to, and the checks that hold for every cell.

use std::time::Duration;

use crate::cells::{CALL_BOUND, Cell, Fault, Transport, Via};
use crate::workload::{CallOutcome, Observed};

/// The longest a Hub's shutdown (and the gateway's end after SIGTERM) may take.
const TEARDOWN_BOUND: Duration = Duration::from_secs(5);

/// What the cell must come to: the kinds the trigger may come to, the next call's, the
/// server's states afterwards (a set where the transport's own timing decides between equally
/// specified outcomes, such as whether a reconnect has failed yet), and whether the trigger's
/// outcome must come at once.
#[derive(Debug, Clone, Copy)]
pub struct Expected {
    pub trigger: &'static [&'static str],
    pub after: &'static [&'static str],
    pub state: &'static [&'static str],
    pub at_once: bool,
}

/// How soon an outcome that comes "at once" comes: no timeout is waited for (a request stream's
/// first resumption waits its 1 s backoff before it finds the server gone).
pub const AT_ONCE: Duration = Duration::from_secs(3);

const OK: &[&str] = &["ok"];
const CONNECTED: &[&str] = &["connected"];
/// Through the gateway, a backend's failure reaches the client as a tool result with
/// `isError`, naming the server; the gateway itself stays connected.
const TOOL_ERROR: &[&str] = &["tool-error"];

/// Through the gateway, once a backend is down its tools leave the gateway's list (which says so
/// with `list_changed`): the next call finds the tool gone, or still meets the backend's error,
/// whichever comes first.
const GONE_OR_ERROR: &[&str] = &["unknown-tool", "tool-error"];

const fn expect(
    trigger: &'static [&'static str],
    after: &'static [&'static str],
    state: &'static [&'static str],
    at_once: bool,
) -> Expected {
    Expected {
        trigger,
        after,
        state,
        at_once,
    }
}

/// The specified outcome of `cell`.
pub fn expected(cell: Cell) -> Expected {
    use Fault::{
        CloseAfterRequest, ConnectionReset, CrashMidCall, ExitAtStart, Hang, NestedSchema, Oversize, ServerError,
        SlowHeaders, SseDropLost, SseDropResumed, Unauthorized, WsCloseNoHandshake,
    };
    use Transport::{Stateless, Stdio, Ws};
    let gateway = cell.via == Via::Gateway;
    let survived = expect(OK, OK, CONNECTED, false);
    // A call the fault fails; the next one works again.
    let failed_once = |hub: &'static [&'static str]| {
        if gateway {
            expect(TOOL_ERROR, OK, CONNECTED, true)
        } else {
            expect(hub, OK, CONNECTED, true)
        }
    };
    match (cell.fault, cell.transport) {
        (CrashMidCall, Stdio) if gateway => expect(TOOL_ERROR, OK, CONNECTED, true),
        (CrashMidCall | Unauthorized, _) if gateway => expect(TOOL_ERROR, GONE_OR_ERROR, CONNECTED, true),
        // A stdio server is started again for the next call.
        (CrashMidCall, Stdio) => expect(&["closed"], OK, CONNECTED, true),
        (CrashMidCall, Ws) => expect(&["closed"], &["unavailable"], &["failed"], true),
        // The server is gone: the next call is refused, or finds the server failed.
        (CrashMidCall, _) => expect(
            &["io-error"],
            &["io-error", "unavailable"],
            &["connected", "failed"],
            true,
        ),
        (ExitAtStart, _) if gateway => expect(&["unknown-tool"], &["unknown-tool"], CONNECTED, true),
        (ExitAtStart, _) => expect(&["unknown-tool"], &["unknown-tool"], &["failed"], true),
        (Hang | SlowHeaders, _) => expect(&["timeout"], OK, CONNECTED, false),
        // A WebSocket message over the limit ends the socket (close 1009); the next call reconnects.
        (Oversize, Ws) => failed_once(&["closed"]),
        (ServerError, _) => failed_once(&["http 503"]),
        // The stateless revision resumes no stream.
        (ConnectionReset | CloseAfterRequest | WsCloseNoHandshake, _) | (SseDropResumed | SseDropLost, Stateless) => {
            failed_once(&["io-error"])
        }
        // Without resumption every later call's stream is lost too.
        (SseDropLost, _) if gateway => expect(TOOL_ERROR, TOOL_ERROR, CONNECTED, true),
        (SseDropLost, _) => expect(&["io-error"], &["io-error"], CONNECTED, true),
        (Unauthorized, _) => expect(&["needs-auth"], &["needs-auth"], &["needs-auth"], true),
        // The tool whose schema is too deep to decode is left out; the others are listed.
        (NestedSchema, _) => expect(&["unknown-tool"], OK, CONNECTED, true),
        _ => survived,
    }
}

/// Everything wrong with what `cell` observed.
pub fn check(cell: Cell, observed: &Observed) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(warm_up) = &observed.warm_up {
        if warm_up.kind != "ok" {
            problems.push(format!(
                "the call before the fault failed: {} ({})",
                warm_up.kind, warm_up.detail
            ));
        }
    }
    for (what, outcome) in [("trigger", &observed.trigger), ("after", &observed.after)] {
        bounded(what, outcome, &mut problems);
    }
    let expected = expected(cell);
    for (what, want, got) in [
        ("the call meeting the fault", expected.trigger, &observed.trigger),
        ("the call after it", expected.after, &observed.after),
    ] {
        if !want.contains(&got.kind.as_str()) {
            problems.push(format!(
                "{what} came to {} ({}), not {}",
                got.kind,
                got.detail,
                want.join(" or ")
            ));
        }
    }
    if expected.at_once && observed.trigger.took > AT_ONCE {
        problems.push(format!(
            "the call meeting the fault took {:?}, not at once",
            observed.trigger.took
        ));
    }
    if !expected.state.contains(&observed.state.as_str()) {
        problems.push(format!(
            "the server is {}, not {}",
            observed.state,
            expected.state.join(" or ")
        ));
    }
    if observed.healthy_ok == 0 || !observed.healthy_failed.is_empty() {
        problems.push(format!(
            "the healthy server answered {} calls and failed {:?}",
            observed.healthy_ok, observed.healthy_failed
        ));
    }
    if cell.fault.logs_fault() && observed.faults_logged.is_empty() {
        problems.push("the server logged no fault: the cell did not test what it says".to_owned());
    }
    if !observed.run_twice.is_empty() {
        problems.push(format!("tool calls ran twice: {:?}", observed.run_twice));
    }
    let rss_bound = cell.fault.rss_bound();
    if observed.rss_growth > rss_bound {
        problems.push(format!(
            "the resident set grew by {} MiB, more than {} MiB",
            observed.rss_growth >> 20,
            rss_bound >> 20
        ));
    }
    if observed.tasks_left > 0 {
        problems.push(format!("{} runtime tasks were left", observed.tasks_left));
    }
    if observed.teardown > TEARDOWN_BOUND {
        problems.push(format!(
            "the teardown took {:?}, more than {TEARDOWN_BOUND:?}",
            observed.teardown
        ));
    }
    problems
}

fn bounded(what: &str, outcome: &CallOutcome, problems: &mut Vec<String>) {
    if outcome.kind == "HUNG" || outcome.took > CALL_BOUND {
        problems.push(format!("the {what} call took {:?}: {}", outcome.took, outcome.detail));
    }
}
