//! Progress on stderr while the servers connect: on a terminal, one live line per server (a
//! spinner, then ✔ / ✘ / needs-auth with the time it took) and a summary, or one spinner for
//! them all; elsewhere one line. And a call's progress reports: a bar on a terminal, lines
//! elsewhere.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use plexus::client::ProgressCallback;
use plexus::pool::{Pool, PoolEvent, ServerState, ServerStatus};
use plexus::protocol::ProgressNotificationParams;
use tokio::sync::broadcast;

/// How the servers' progress is shown on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// One line per server, then a summary (`plexus servers`).
    Lines,
    /// One spinner for them all, gone when they are done.
    Spinner,
}

/// The progress display, running until [`finish`](Self::finish).
pub(crate) struct Progress {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: std::sync::Arc<tokio::sync::Notify>,
}

impl Progress {
    /// Shows the progress of `servers` (the ones starting) of `pool`, from `events` (subscribed
    /// before they started).
    pub(crate) fn start(
        pool: &Pool,
        servers: Vec<String>,
        events: broadcast::Receiver<PoolEvent>,
        view: View,
    ) -> Progress {
        let stop = std::sync::Arc::new(tokio::sync::Notify::new());
        if servers.is_empty() || crate::terminal::quiet() {
            return Progress { task: None, stop };
        }
        let noun = if servers.len() == 1 { "server" } else { "servers" };
        if !std::io::stderr().is_terminal() {
            eprintln!("connecting {} {noun}…", servers.len());
            return Progress { task: None, stop };
        }
        let (pool, signal) = (pool.clone(), std::sync::Arc::clone(&stop));
        let task = tokio::spawn(async move {
            match view {
                View::Lines => lines(&pool, &servers, events, &signal).await,
                View::Spinner => spinner(&servers, events, &signal).await,
            }
        });
        Progress { task: Some(task), stop }
    }

    /// Stops the display once the pool has settled (the last lines drawn).
    pub(crate) async fn finish(mut self) {
        self.stop.notify_one();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// An interrupted command stops its display too.
impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏", " "];
const TICK: Duration = Duration::from_millis(80);

fn spinner_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .tick_strings(FRAMES)
}

/// One line per server.
async fn lines(
    pool: &Pool,
    servers: &[String],
    mut events: broadcast::Receiver<PoolEvent>,
    stop: &tokio::sync::Notify,
) {
    let started = Instant::now();
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let width = servers.iter().map(|name| name.chars().count()).max().unwrap_or(0);
    let style = spinner_style("{spinner} {prefix} {msg}");
    let bars: HashMap<&str, ProgressBar> = servers
        .iter()
        .map(|name| {
            let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
            bar.set_prefix(format!("{name:width$}"));
            bar.set_message("waiting");
            bar.enable_steady_tick(TICK);
            (name.as_str(), bar)
        })
        .collect();
    let mut took: HashMap<String, Duration> = HashMap::new();
    loop {
        tokio::select! {
            () = stop.notified() => break,
            event = events.recv() => match event {
                Ok(PoolEvent::StateChanged { server, state }) => {
                    if let Some(bar) = bars.get(server.as_str()) {
                        took.insert(server.clone(), started.elapsed());
                        show(bar, &state, took[&server]);
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    // The pool's final word on each, whatever events were missed.
    let mut counts: Vec<(ServerStatus, usize)> = Vec::new();
    for name in servers {
        let Some(state) = pool.state(name) else { continue };
        let elapsed = took.get(name).copied().unwrap_or_else(|| started.elapsed());
        show(&bars[name.as_str()], &state, elapsed);
        match counts.iter_mut().find(|(status, _)| *status == state.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((state.status, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(status, n)| format!("{n} {status}")).collect();
    let noun = if servers.len() == 1 { "server" } else { "servers" };
    let summary = format!(
        "{} {noun}: {} in {}",
        servers.len(),
        parts.join(", "),
        millis(started.elapsed())
    );
    // Below the finished lines, which stay.
    drop(bars);
    drop(multi);
    eprintln!("{summary}");
}

/// Draws one server's line: spinning while it connects, its outcome once it is done.
fn show(bar: &ProgressBar, state: &ServerState, elapsed: Duration) {
    // The mark takes the spinner's place.
    let done = |mark: &str, text: String| {
        bar.set_style(spinner_style("{msg}"));
        bar.finish_with_message(format!("{mark} {} {text}", bar.prefix()));
    };
    match state.status {
        ServerStatus::Pending => bar.set_message("waiting"),
        ServerStatus::Connecting => bar.set_message("connecting"),
        ServerStatus::Connected => {
            let took = state.connect_time.unwrap_or(elapsed);
            done("✔", format!("connected in {}", millis(took)));
        }
        ServerStatus::Failed => done("✘", format!("failed after {}", millis(elapsed))),
        ServerStatus::NeedsAuth => done("!", "needs-auth: plexus login".to_owned()),
        ServerStatus::Disabled => done("-", "disabled".to_owned()),
    }
}

/// One spinner for all.
async fn spinner(servers: &[String], mut events: broadcast::Receiver<PoolEvent>, stop: &tokio::sync::Notify) {
    let total = servers.len();
    let noun = if total == 1 { "server" } else { "servers" };
    let bar =
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(spinner_style("{spinner} {msg}"));
    bar.enable_steady_tick(TICK);
    let mut settled: HashMap<String, bool> = HashMap::new();
    loop {
        let done = settled.values().filter(|settled| **settled).count();
        bar.set_message(format!("connecting {total} {noun} ({done} done)"));
        tokio::select! {
            () = stop.notified() => break,
            event = events.recv() => match event {
                Ok(PoolEvent::StateChanged { server, state }) => {
                    settled.insert(server, !state.status.is_settling());
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    bar.finish_and_clear();
}

/// `312 ms`, `1.2 s`.
fn millis(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// The bar of the call in progress, hidden while a question is asked on the terminal.
static CALL_BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// The least time between two progress lines when stderr is not a terminal.
const LINE_INTERVAL: Duration = Duration::from_millis(250);

/// A call's progress display; the bar goes when this is dropped.
pub(crate) struct CallProgress {
    bar: Option<ProgressBar>,
}

impl Drop for CallProgress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            CALL_BAR
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
        }
    }
}

/// Shows the progress reports of a call to `tool`: a bar (or a spinner while the total is
/// unknown) on a terminal, else a line per report (at most 4 a second). The message of each
/// report is the server's, escaped.
pub(crate) fn call_progress(tool: &str) -> (ProgressCallback, CallProgress) {
    if crate::terminal::quiet() {
        let callback: ProgressCallback = Arc::new(|_: ProgressNotificationParams| {});
        return (callback, CallProgress { bar: None });
    }
    if !std::io::stderr().is_terminal() {
        let tool = crate::terminal::line(tool).into_owned();
        let last: Mutex<Option<Instant>> = Mutex::new(None);
        let callback: ProgressCallback = Arc::new(move |report: ProgressNotificationParams| {
            let mut last = last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < LINE_INTERVAL) {
                return;
            }
            *last = Some(Instant::now());
            eprintln!("plexus: {tool}: {}", describe(&report));
        });
        return (callback, CallProgress { bar: None });
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
        .with_style(spinner_style("{spinner} {prefix} {msg}"))
        .with_prefix(crate::terminal::line(tool).into_owned());
    bar.enable_steady_tick(TICK);
    *CALL_BAR.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(bar.clone());
    let drawn = bar.clone();
    let callback: ProgressCallback = Arc::new(move |report: ProgressNotificationParams| {
        if let Some(total) = report.total.filter(|total| total.is_finite() && *total > 0.0) {
            if drawn.length().is_none() {
                drawn.set_style(
                    ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
            }
            // Finite and positive: the cast is exact up to 2^53 and saturates beyond.
            #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
            drawn.set_length(total.round() as u64);
        }
        if report.progress.is_finite() && report.progress >= 0.0 {
            // Finite and not negative: as above.
            #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
            drawn.set_position(report.progress.round() as u64);
        }
        drawn.set_message(
            report
                .message
                .as_deref()
                .map(|m| crate::terminal::line(m).into_owned())
                .unwrap_or_default(),
        );
    });
    (callback, CallProgress { bar: Some(bar) })
}

/// `3/5: step 3 of 5`; a message alone when there is no amount to tell (no total and no
/// progress yet, as in the reports of a task's status).
fn describe(report: &ProgressNotificationParams) -> String {
    let amount = match report.total {
        Some(total) => format!("{}/{}", report.progress, total),
        None if report.progress == 0.0 && report.message.is_some() => String::new(),
        None => report.progress.to_string(),
    };
    match &report.message {
        Some(message) if amount.is_empty() => crate::terminal::line(message).into_owned(),
        Some(message) => format!("{amount}: {}", crate::terminal::line(message)),
        None => amount,
    }
}

/// The call's bar hidden until the guard is dropped (a question is being asked).
pub(crate) struct Paused(Option<ProgressBar>);

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

/// Hides the call's bar, if one is drawn, while the guard lives.
pub(crate) fn pause_call_bar() -> Paused {
    let bar = CALL_BAR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if let Some(bar) = &bar {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    Paused(bar)
}
