//! The timed part of a `Calls` task for the async clients (plexus, rmcp), one code for both:
//! warm-up calls, sequential calls timed one by one (with this process's CPU time), then calls
//! from `in_flight` tasks at once on the runtime this runs on. Each timed phase stops early,
//! after at least [`MIN_CALLS`], once it has run [`PHASE_LIMIT`]: a slow peer's row (rmcp's
//! defaults over HTTP open a connection per request) would otherwise take most of the run.
//!
//! Every call is made from a task spawned on the runtime, the sequential ones too, as a host's
//! agent loop makes them. (A future that `block_on` drives on a thread outside a multi-thread
//! runtime is woken from a worker, where the runtime's I/O driver runs, once per call: a
//! cross-thread wake that every tokio client pays there, measured at about 2 µs for plexus and
//! 3 µs for rmcp per call on this project's machine, not a cost of the client.)

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::BenchError;
use crate::role::{Counts, Figures};
use crate::support::{cpu_per_call, percentile, process_cpu};

/// How long one timed phase may run once it has made [`MIN_CALLS`] (the Node row's script has
/// the same limits).
pub(crate) const PHASE_LIMIT: Duration = Duration::from_secs(3);
/// The calls a timed phase makes in any case.
pub(crate) const MIN_CALLS: usize = 1_000;

/// The warm-up calls, then the sequential ones, each timed: their times and the process's CPU
/// time per call.
async fn sequential<C, F>(counts: Counts, call: C) -> Result<(Vec<Duration>, Option<f64>), BenchError>
where
    C: Fn() -> F,
    F: Future<Output = Result<(), BenchError>>,
{
    for _ in 0..counts.warmup {
        call().await?;
    }
    let mut times = Vec::with_capacity(counts.calls);
    let cpu_before = process_cpu();
    let phase = Instant::now();
    for made in 0..counts.calls {
        if made >= MIN_CALLS && phase.elapsed() >= PHASE_LIMIT {
            break;
        }
        let started = Instant::now();
        call().await?;
        times.push(started.elapsed());
    }
    let cpu = cpu_per_call(cpu_before, times.len());
    Ok((times, cpu))
}

/// Runs `counts`' calls, each one `call()`, and gives the `Calls` figures with `connect_ms`.
pub(crate) async fn drive<C, F>(counts: Counts, connect_ms: f64, call: C) -> Result<Figures, BenchError>
where
    C: Fn() -> F + Clone + Send + 'static,
    F: Future<Output = Result<(), BenchError>> + Send + 'static,
{
    let (mut times, cpu) = tokio::spawn(sequential(counts, call.clone()))
        .await
        .map_err(|e| BenchError::Child {
            row: "this row".to_owned(),
            detail: format!("the sequential caller task ended: {e}"),
        })??;
    times.sort_unstable();
    // The throughput phase: each task takes calls from one counter until `counts.calls` are
    // taken, or the limit has passed once `MIN_CALLS` were.
    let taken = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..counts.in_flight)
        .map(|_| {
            let (call, taken) = (call.clone(), Arc::clone(&taken));
            tokio::spawn(async move {
                loop {
                    let number = taken.fetch_add(1, Ordering::Relaxed);
                    if number >= counts.calls || (number >= MIN_CALLS && started.elapsed() >= PHASE_LIMIT) {
                        return Ok::<(), BenchError>(());
                    }
                    call().await?;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.map_err(|e| BenchError::Child {
            row: "this row".to_owned(),
            detail: format!("a caller task ended: {e}"),
        })??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Every number taken below the stop was a call made; the tasks' last takes were not.
    let made = taken
        .load(Ordering::Relaxed)
        .saturating_sub(counts.in_flight)
        .min(counts.calls);
    let throughput = made as f64 / elapsed;
    Ok(crate::call_figures(
        connect_ms,
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        cpu,
        throughput,
    ))
}
