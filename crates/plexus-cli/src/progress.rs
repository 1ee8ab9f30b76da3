//! Progress on stderr while the servers connect: on a terminal, one live line per server (a
//! spinner, then ✔ / ✘ / needs-auth with the time it took) and a summary, or one spinner for
//! them all; elsewhere one line.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use plexus::pool::{Pool, PoolEvent, ServerState, ServerStatus};
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
        if servers.is_empty() {
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
