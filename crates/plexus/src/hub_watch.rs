//! A Hub that follows its config files: every scope's file is watched (through the operating
//! system's file events on its directory), and a change reloads the config at once
//! ([`Hub::reload`]): an added server joins, a removed one is closed, a changed entry is
//! restarted alone, the others and their calls in flight are not disturbed. An edit that does not
//! load is reported and the last good config stays.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use plexus_config::{ConfigError, ConfigPaths, MAX_FILE_SIZE};
use tokio::sync::{broadcast, mpsc};

use crate::hub::{Hub, blocking};
use crate::{ConfigChange, HubError};

/// How long the watcher waits after a file event for the next one before it reads the files:
/// editors and `plexus add` write a file in several steps (a temporary file, a rename).
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(150);

/// How many [`ConfigEvent`]s a subscriber may fall behind before it loses the oldest.
pub const CONFIG_EVENTS_CAPACITY: usize = 64;

/// What following the config files did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConfigEvent {
    /// A file changed and the config was read again: what changed (possibly nothing, when the
    /// edit changed no server), and the new config's report.
    Applied(ConfigChange),
    /// A file changed and no longer loads: nothing changed, the last good config stays.
    Rejected {
        /// The file.
        path: PathBuf,
        /// Why (for a parse error, its line and column).
        error: Arc<ConfigError>,
    },
}

/// Why the config files cannot be followed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// A `--config` file is a pipe or another special file: it can be read once, not followed.
    #[error("cannot follow the config file {}: it is not a regular file (a pipe can be read only once)", path.display())]
    NotARegularFile {
        /// The file.
        path: PathBuf,
    },
    /// The operating system's file events are not available, or a directory cannot be watched.
    #[error("cannot watch {} for config changes", path.display())]
    Watch {
        /// The directory.
        path: PathBuf,
        /// What the watcher said.
        #[source]
        source: notify::Error,
    },
}

/// Follows a Hub's config files until dropped (or until the Hub is gone): see the module docs.
/// The Hub is held weakly, so the watcher never keeps it alive.
#[derive(Debug)]
pub struct ConfigWatcher {
    events: broadcast::Sender<ConfigEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ConfigWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ConfigWatcher {
    /// Starts following the config files of `hub` (the files its discovery options name:
    /// managed, user, project, local and the explicit ones), reading them again
    /// [`DEFAULT_SETTLE`] after the last change. Needs a tokio runtime.
    pub fn start(hub: &Arc<Hub>) -> Result<ConfigWatcher, WatchError> {
        ConfigWatcher::with_settle(hub, DEFAULT_SETTLE)
    }

    /// [`start`](Self::start), waiting `settle` after the last change.
    pub fn with_settle(hub: &Arc<Hub>, settle: Duration) -> Result<ConfigWatcher, WatchError> {
        let paths = ConfigPaths::discover(hub.discovery());
        for path in &paths.explicit_files {
            let special = std::fs::metadata(path).is_ok_and(|metadata| !metadata.is_file());
            if special {
                return Err(WatchError::NotARegularFile { path: path.clone() });
            }
        }
        let files = watched_files(&paths);
        // One pending signal is enough: the files are read whole after the burst settles.
        let (signal, signals) = mpsc::channel::<()>(1);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Reads (ours included) are no change.
            if event.is_ok_and(|event| !event.kind.is_access()) {
                let _ = signal.try_send(());
            }
        })
        .map_err(|source| WatchError::Watch {
            path: PathBuf::new(),
            source,
        })?;
        let mut dirs = Directories {
            watcher,
            watched: Vec::new(),
        };
        dirs.update(&files)?;
        let (events, _) = broadcast::channel(CONFIG_EVENTS_CAPACITY);
        // What the files hold now: a change is measured from here.
        let last = snapshot(&files);
        let follower = Follower {
            hub: Arc::downgrade(hub),
            last,
            files,
            dirs,
            settle,
            events: events.clone(),
        };
        let task = tokio::spawn(follower.run(signals));
        Ok(ConfigWatcher { events, task })
    }

    /// What following the files does from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ConfigEvent> {
        self.events.subscribe()
    }
}

/// Every config file that may exist, whether it does now or not.
fn watched_files(paths: &ConfigPaths) -> Vec<PathBuf> {
    let mut files = vec![
        paths.user_file.clone(),
        paths.project_file.clone(),
        paths.local_file.clone(),
    ];
    files.extend(paths.managed_file.clone());
    files.extend(paths.explicit_files.iter().cloned());
    files
}

/// The directories watched: for each file, the nearest existing directory on its way (a file
/// whose directory does not exist yet, like a project's first local settings, is seen when the
/// directory appears, then its own directory is watched).
struct Directories {
    watcher: notify::RecommendedWatcher,
    watched: Vec<PathBuf>,
}

impl Directories {
    fn update(&mut self, files: &[PathBuf]) -> Result<(), WatchError> {
        let mut wanted: Vec<PathBuf> = files.iter().filter_map(|file| nearest_dir(file)).collect();
        wanted.sort();
        wanted.dedup();
        for dir in &self.watched {
            if !wanted.contains(dir) {
                // Gone, or replaced by a deeper one; the watcher may already have dropped it.
                let _ = self.watcher.unwatch(dir);
            }
        }
        let mut watched = Vec::with_capacity(wanted.len());
        for dir in wanted {
            if !self.watched.contains(&dir) {
                self.watcher
                    .watch(&dir, RecursiveMode::NonRecursive)
                    .map_err(|source| WatchError::Watch {
                        path: dir.clone(),
                        source,
                    })?;
            }
            watched.push(dir);
        }
        self.watched = watched;
        Ok(())
    }
}

/// The nearest existing directory that holds `file` or one of its missing parents.
fn nearest_dir(file: &Path) -> Option<PathBuf> {
    file.ancestors().skip(1).find(|dir| dir.is_dir()).map(Path::to_owned)
}

/// What each file holds now (`None`: missing or unreadable), to tell a real change from an
/// event about another file of the same directory (the credentials, a tool result).
type Snapshot = Vec<Option<Vec<u8>>>;

fn snapshot(files: &[PathBuf]) -> Snapshot {
    use std::io::Read;
    files
        .iter()
        .map(|file| {
            let opened = std::fs::File::open(file).ok()?;
            if !opened.metadata().ok()?.is_file() {
                return None;
            }
            let mut bytes = Vec::new();
            // One byte over the limit is enough to tell (the load reports the size).
            opened.take(MAX_FILE_SIZE + 1).read_to_end(&mut bytes).ok()?;
            Some(bytes)
        })
        .collect()
}

/// The watcher's task.
struct Follower {
    hub: Weak<Hub>,
    files: Vec<PathBuf>,
    last: Snapshot,
    dirs: Directories,
    settle: Duration,
    events: broadcast::Sender<ConfigEvent>,
}

impl Follower {
    async fn run(mut self, mut signals: mpsc::Receiver<()>) {
        while signals.recv().await.is_some() {
            // Until the burst of events settles.
            while tokio::time::timeout(self.settle, signals.recv())
                .await
                .is_ok_and(|got| got.is_some())
            {}
            let files = self.files.clone();
            let now = blocking(move || snapshot(&files)).await;
            if let Err(e) = self.dirs.update(&self.files) {
                tracing::warn!("{}", plexus_jsonrpc::error_chain(&e));
            }
            if now == self.last {
                continue;
            }
            self.last = now;
            let Some(hub) = self.hub.upgrade() else { return };
            let event = match hub.reload().await {
                Ok(change) => {
                    if !change.is_empty() {
                        tracing::info!(
                            added = ?change.added,
                            removed = ?change.removed,
                            restarted = ?change.restarted,
                            "the config changed"
                        );
                    }
                    ConfigEvent::Applied(change)
                }
                Err(HubError::Config { path, source }) => {
                    // The error names the file.
                    tracing::warn!("{}; the last good config stays", plexus_jsonrpc::error_chain(&*source));
                    ConfigEvent::Rejected { path, error: source }
                }
                Err(other) => {
                    tracing::warn!(
                        "reading the config again failed: {}",
                        plexus_jsonrpc::error_chain(&other)
                    );
                    continue;
                }
            };
            drop(hub);
            let _ = self.events.send(event);
        }
    }
}
