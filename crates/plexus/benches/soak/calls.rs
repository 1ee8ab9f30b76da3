//! One call of the soak: its fate (drawn from the seed), how it runs through the Hub, and how
//! its outcome is judged and counted.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use plexus::tools::CallOptions;
use plexus::transport::error_chain;
use plexus::{CancelHandle, Hub, HubError};

/// The echo tool of the soak's server, as the Hub names it.
pub(crate) const ECHO_TOOL: &str = "mcp__soak__echo";
/// The test server's `slow` tool, as the Hub names it.
pub(crate) const SLOW_TOOL: &str = "mcp__soak__slow";
/// How long a `slow` call would run if nothing stopped it: the test server's longest (10
/// minutes), longer than any run, so that a call the client did not cancel is still running on
/// the server when [`crate::leftovers`] looks.
pub(crate) const SLOW_MS: u64 = 600_000;

/// Per mille of the echo calls given a timeout of their own, a cancel handle, a dropped future.
const TIMEOUT_PER_MILLE: u32 = 10;
const CANCEL_PER_MILLE: u32 = 10;
const DROP_PER_MILLE: u32 = 10;
/// The range of an echo call's own timeout (µs): around the latency of a call with many in
/// flight, so that some expire and some do not.
const ECHO_TIMEOUT_US: std::ops::RangeInclusive<u64> = 500..=8_000;
/// How many notes (the first lost or mismatched calls) a phase keeps.
const MAX_NOTES: usize = 8;

/// What a phase's calls do.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    /// `echo` with a payload of the call's own, with random timeouts and cancellations.
    Echo,
    /// `slow` (far slower than `timeout`): every call must time out.
    TimedOut { timeout: Duration },
}

/// When a call is cancelled or dropped.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Point {
    /// After the task has yielded this many times (while the request is being written, or
    /// soon after).
    Yields(u32),
    /// After this long (usually while the reply is awaited).
    After(Duration),
}

impl Point {
    fn draw(rng: &mut fastrand::Rng) -> Point {
        if rng.bool() {
            Point::Yields(rng.u32(0..32))
        } else {
            Point::After(Duration::from_micros(rng.u64(100..=5_000)))
        }
    }

    async fn reached(self) {
        match self {
            Point::Yields(times) => {
                for _ in 0..times {
                    tokio::task::yield_now().await;
                }
            }
            Point::After(delay) => tokio::time::sleep(delay).await,
        }
    }
}

/// What happens to one call.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fate {
    /// It runs to its reply.
    Whole,
    /// It has a timeout of its own, which may or may not expire.
    MayTimeOut(Duration),
    /// It has a timeout of its own, which must expire.
    MustTimeOut(Duration),
    /// Its cancel handle is cancelled at this point.
    Cancel(Point),
    /// Its future is dropped at this point.
    Drop(Point),
}

impl Fate {
    /// The fate of call `call` of phase `phase`: a function of the seed alone, so that a run
    /// can be repeated (`--seed`).
    pub(crate) fn draw(seed: u64, phase: u64, call: u64, work: Work) -> Fate {
        let mut rng = fastrand::Rng::with_seed(seed ^ phase.rotate_left(48) ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        match work {
            Work::TimedOut { timeout } => Fate::MustTimeOut(timeout),
            Work::Echo => {
                let draw = rng.u32(0..1000);
                if draw < TIMEOUT_PER_MILLE {
                    Fate::MayTimeOut(Duration::from_micros(rng.u64(ECHO_TIMEOUT_US)))
                } else if draw < TIMEOUT_PER_MILLE + CANCEL_PER_MILLE {
                    Fate::Cancel(Point::draw(&mut rng))
                } else if draw < TIMEOUT_PER_MILLE + CANCEL_PER_MILLE + DROP_PER_MILLE {
                    Fate::Drop(Point::draw(&mut rng))
                } else {
                    Fate::Whole
                }
            }
        }
    }
}

/// How a call ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Its own reply: the echo of its payload.
    Replied,
    /// Cancelled (through its handle, or its future dropped) before its reply.
    Cancelled,
    /// Its own timeout expired.
    TimedOut,
    /// Neither its own reply nor the error its fate expects (what happened instead).
    Lost(String),
    /// A reply that is not its own.
    Mismatched(String),
}

#[derive(serde::Serialize)]
struct EchoArguments<'a> {
    text: &'a str,
}

/// The arguments of a `slow` call that runs [`SLOW_MS`].
#[derive(serde::Serialize)]
pub(crate) struct SlowArguments {
    ms: u64,
    steps: u32,
}

/// The arguments of every `slow` call of the soak.
pub(crate) const SLOW: SlowArguments = SlowArguments { ms: SLOW_MS, steps: 0 };

/// Runs call `call` of phase `phase` through the Hub as its fate says, and judges how it ended.
pub(crate) async fn run(hub: &Hub, phase: u64, call: u64, work: Work, fate: Fate) -> Outcome {
    let payload = format!("soak-{phase}-{call}");
    let cancel = CancelHandle::new();
    let mut options = CallOptions::default();
    match fate {
        Fate::MayTimeOut(timeout) | Fate::MustTimeOut(timeout) => options.timeout = Some(timeout),
        Fate::Cancel(_) => options.cancel = Some(cancel.clone()),
        Fate::Whole | Fate::Drop(_) => {}
    }
    let result = match work {
        Work::Echo => {
            let arguments = EchoArguments { text: &payload };
            let call = hub.call_with(ECHO_TOOL, &arguments, &options);
            match run_to_fate(call, fate, &cancel).await {
                Some(result) => result,
                None => return Outcome::Cancelled,
            }
        }
        Work::TimedOut { .. } => {
            let call = hub.call_with(SLOW_TOOL, &SLOW, &options);
            match run_to_fate(call, fate, &cancel).await {
                Some(result) => result,
                None => return Outcome::Cancelled,
            }
        }
    };
    judge(result, &payload, fate)
}

/// Awaits `call`, cancelling it through `cancel` or dropping it at its fate's point; `None` when
/// it was dropped before it ended.
async fn run_to_fate<T>(call: impl Future<Output = T>, fate: Fate, cancel: &CancelHandle) -> Option<T> {
    let mut call = std::pin::pin!(call);
    match fate {
        Fate::Cancel(point) => Some(tokio::select! {
            biased;
            done = &mut call => done,
            () = point.reached() => {
                cancel.cancel("the soak cancels this call");
                call.await
            }
        }),
        Fate::Drop(point) => tokio::select! {
            biased;
            done = &mut call => Some(done),
            () = point.reached() => None,
        },
        Fate::Whole | Fate::MayTimeOut(_) | Fate::MustTimeOut(_) => Some(call.await),
    }
}

/// How a call whose fate is `fate` and whose payload is `payload` ended with `result`.
fn judge(result: Result<plexus::tools::ProcessedResult, HubError>, payload: &str, fate: Fate) -> Outcome {
    match result {
        Ok(processed) => {
            let text = processed.content.first().and_then(|block| block.as_text());
            let own = !processed.is_error && processed.content.len() == 1 && text == Some(payload);
            if own && !matches!(fate, Fate::MustTimeOut(_)) {
                Outcome::Replied
            } else {
                Outcome::Mismatched(format!(
                    "a call that sent {payload:?} ({fate:?}) got {:?} (isError {})",
                    text.unwrap_or("<no text>"),
                    processed.is_error
                ))
            }
        }
        Err(error) => match fate {
            Fate::MayTimeOut(_) | Fate::MustTimeOut(_) if error.is_timeout() => Outcome::TimedOut,
            Fate::Cancel(_) if error.is_cancelled() => Outcome::Cancelled,
            _ => Outcome::Lost(format!(
                "a call that sent {payload:?} ({fate:?}) failed: {}",
                error_chain(&error)
            )),
        },
    }
}

/// The counts of a phase's outcomes, and the first few lost and mismatched calls.
#[derive(Default)]
pub(crate) struct Tally {
    replied: AtomicU64,
    cancelled: AtomicU64,
    timed_out: AtomicU64,
    lost: AtomicU64,
    mismatched: AtomicU64,
    notes: Mutex<Vec<String>>,
}

impl Tally {
    /// Counts `outcome`.
    pub(crate) fn add(&self, outcome: Outcome) {
        let (counter, note) = match outcome {
            Outcome::Replied => (&self.replied, None),
            Outcome::Cancelled => (&self.cancelled, None),
            Outcome::TimedOut => (&self.timed_out, None),
            Outcome::Lost(note) => (&self.lost, Some(note)),
            Outcome::Mismatched(note) => (&self.mismatched, Some(note)),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if let Some(note) = note {
            let mut notes = self.notes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if notes.len() < MAX_NOTES {
                notes.push(note);
            }
        }
    }

    /// The counts so far, and the notes.
    pub(crate) fn counts(&self) -> Counts {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Counts {
            replied: get(&self.replied),
            cancelled: get(&self.cancelled),
            timed_out: get(&self.timed_out),
            lost: get(&self.lost),
            mismatched: get(&self.mismatched),
            notes: self
                .notes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}

/// A phase's outcomes (see [`Outcome`]), and its first lost or mismatched calls.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) replied: u64,
    pub(crate) cancelled: u64,
    pub(crate) timed_out: u64,
    pub(crate) lost: u64,
    pub(crate) mismatched: u64,
    pub(crate) notes: Vec<String>,
}

impl Counts {
    /// Every call counted.
    pub(crate) fn total(&self) -> u64 {
        self.replied + self.cancelled + self.timed_out + self.lost + self.mismatched
    }
}
