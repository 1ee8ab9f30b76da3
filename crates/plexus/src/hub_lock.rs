//! The tool-pool lockfiles in the Hub: tools whose definition changed since they were locked
//! (or new tools of a locked server, or every tool of an unlocked server under managed policy's
//! `requireToolLock`) are held out of the tool pool, so out of `plexus serve` too, and cannot be
//! called; the host hears of each drift once ([`Hub::tool_lock_events`]); locking and
//! re-locking ([`Hub::lock_tools`], [`Hub::relock`]) approve what the servers list now.
//!
//! The files are `<project>/.mcp.lock.json` and `<home>/mcp.lock.json` (see
//! [`plexus_tools::lock`]). They are read when the tool pool is first built and again whenever
//! one of them changes on disk (its size, time or inode: an atomic write always changes the
//! inode), so a `plexus lock --update` in another terminal takes effect at the running Hub's
//! next tool pool.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use plexus_protocol::Tool;
use plexus_tools::ToolPool;
use plexus_tools::lock::{Hold, HoldReason, LoadedLock, LockPaths, LockScope, LockSet, ToolLock, hold_out};
use tokio::sync::broadcast;

use crate::hub::{Hub, blocking};
use crate::{HubError, lock};

/// How many lock events a reader of [`Hub::tool_lock_events`] may fall behind before it loses
/// the oldest.
pub const TOOL_LOCK_EVENTS_CAPACITY: usize = 256;

/// A tool that a lockfile holds out of the tool pool, told once per drift: once when it is
/// first held, again only when it changes again (another hash) or is held for another reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLockEvent {
    /// Its server.
    pub server: String,
    /// Its own name.
    pub tool: String,
    /// Its qualified name in the tool pool.
    pub name: String,
    /// Why it is held: for a changed tool, the members that changed.
    pub reason: HoldReason,
}

/// A tool held out of the tool pool now, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldTool {
    /// Its server.
    pub server: String,
    /// Its own name.
    pub tool: String,
    /// Why.
    pub reason: HoldReason,
}

/// What [`Hub::lock_tools`] or [`Hub::relock`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockWritten {
    /// Each file written, with the servers locked in it and, for each, the tools whose lock
    /// changed (locked anew, re-locked or unlocked: what this approved).
    pub files: Vec<WrittenFile>,
    /// Servers of the config that could not be locked because they are not connected, each with
    /// its state (`failed`, `pending`, …) and why.
    pub not_connected: Vec<(String, String)>,
}

/// One lockfile written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Which.
    pub scope: LockScope,
    /// Where.
    pub path: PathBuf,
    /// The servers locked, each with the tools whose lock changed.
    pub servers: Vec<(String, Vec<String>)>,
    /// Servers the file locked before that are not connected now: kept as they were.
    pub kept: Vec<String>,
}

/// A file's identity on disk: `None` when it does not exist.
type Stamp = Option<(u64, u64, std::time::SystemTime, u64)>;

/// The Hub's lockfiles and what they hold.
pub(crate) struct ToolLocks {
    paths: LockPaths,
    state: Mutex<State>,
    events: broadcast::Sender<ToolLockEvent>,
}

#[derive(Default)]
struct State {
    /// The files as last read, and their stamps then.
    set: Option<(Arc<LockSet>, [Stamp; 2])>,
    /// Bumped whenever the files or the policy change: the verdicts of older ones are stale.
    generation: u64,
    /// Each server's held tools, for the list they were computed from.
    verdicts: HashMap<String, Verdicts>,
    /// What was told, per server and tool: the hold's kind and the tool's hash.
    told: HashMap<(String, String), (plexus_tools::HeldBecause, String)>,
}

struct Verdicts {
    list: Arc<[Tool]>,
    generation: u64,
    holds: Arc<BTreeMap<String, Hold>>,
}

fn stamp(path: &std::path::Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::symlink_metadata(path).ok()?;
    Some((
        metadata.len(),
        metadata.ino(),
        metadata.modified().unwrap_or(std::time::UNIX_EPOCH),
        metadata.dev(),
    ))
}

impl ToolLocks {
    /// The lockfiles of the project at `project_dir` and the home `home`.
    pub(crate) fn new(paths: LockPaths) -> ToolLocks {
        let (events, _) = broadcast::channel(TOOL_LOCK_EVENTS_CAPACITY);
        ToolLocks {
            paths,
            state: Mutex::new(State::default()),
            events,
        }
    }

    /// The files as they are on disk now (read again when they changed), with `require`.
    async fn refresh(&self, require: bool) -> (Arc<LockSet>, u64) {
        let stamps = [stamp(&self.paths.project), stamp(&self.paths.user)];
        {
            let mut state = lock(&self.state);
            if let Some((set, read)) = &state.set
                && *read == stamps
            {
                if set.require == require {
                    return (Arc::clone(set), state.generation);
                }
                let set = Arc::new(LockSet {
                    files: set.files.clone(),
                    require,
                });
                state.set = Some((Arc::clone(&set), stamps));
                state.generation += 1;
                return (set, state.generation);
            }
        }
        let paths = self.paths.clone();
        let set = blocking(move || LockSet::load(&paths, require)).await;
        for problem in set.problems() {
            tracing::warn!(
                "{}; every tool is held out of the tool pool until it is fixed",
                plexus_tools::text::escape_line(&plexus_transport::error_chain(&**problem))
            );
        }
        let set = Arc::new(set);
        let mut state = lock(&self.state);
        state.set = Some((Arc::clone(&set), stamps));
        state.generation += 1;
        (set, state.generation)
    }

    /// The files as last read (read now if never), without looking at the disk again.
    async fn current(&self, require: bool) -> (Arc<LockSet>, u64) {
        {
            let state = lock(&self.state);
            if let Some((set, _)) = &state.set
                && set.require == require
            {
                return (Arc::clone(set), state.generation);
            }
        }
        self.refresh(require).await
    }

    /// The held tools of `server`, listing `list`, under `set` (computed once per list and
    /// generation).
    fn holds(&self, set: &LockSet, generation: u64, server: &str, list: &Arc<[Tool]>) -> Arc<BTreeMap<String, Hold>> {
        if let Some(verdicts) = lock(&self.state).verdicts.get(server)
            && verdicts.generation == generation
            && Arc::ptr_eq(&verdicts.list, list)
        {
            return Arc::clone(&verdicts.holds);
        }
        let holds = Arc::new(set.check_server(server, list));
        lock(&self.state).verdicts.insert(
            server.to_owned(),
            Verdicts {
                list: Arc::clone(list),
                generation,
                holds: Arc::clone(&holds),
            },
        );
        holds
    }
}

impl Hub {
    /// Holds out of `pool` the tools that the lockfiles hold, among the servers' `lists`, and
    /// tells the host of each new drift (an event and a warning).
    pub(crate) async fn hold_locked_tools(&self, pool: &mut ToolPool, lists: &[(String, Arc<[Tool]>)]) {
        let require = self.current().config.require_tool_lock;
        let (set, generation) = self.lock.refresh(require).await;
        let mut held: HashMap<&str, Arc<BTreeMap<String, Hold>>> = HashMap::new();
        for (server, list) in lists {
            held.insert(server, self.lock.holds(&set, generation, server, list));
        }
        lock(&self.lock.state)
            .verdicts
            .retain(|server, _| held.contains_key(server.as_str()));
        hold_out(pool, |server, tool| {
            held.get(server)
                .and_then(|holds| holds.get(tool))
                .map(|hold| hold.reason.because())
        });
        let mut state = lock(&self.lock.state);
        state.told.retain(|(server, tool), _| match held.get(server.as_str()) {
            Some(holds) => holds.contains_key(tool),
            None => true,
        });
        for left in &pool.left_out {
            let Some(hold) = held.get(left.server.as_str()).and_then(|holds| holds.get(&left.tool)) else {
                continue;
            };
            let told = (hold.reason.because(), hold.sha256.clone());
            if state.told.get(&(left.server.clone(), left.tool.clone())) == Some(&told) {
                continue;
            }
            state.told.insert((left.server.clone(), left.tool.clone()), told);
            tracing::warn!(
                "tool {} of server {:?} is held out of the tool pool: {}",
                plexus_tools::text::escape_line(&left.name),
                plexus_tools::text::escape_line(&left.server),
                plexus_tools::text::escape_line(&hold.reason.to_string())
            );
            let _ = self.lock.events.send(ToolLockEvent {
                server: left.server.clone(),
                tool: left.tool.clone(),
                name: left.name.clone(),
                reason: hold.reason.clone(),
            });
        }
    }

    /// Why the tool `tool` of `server` (which lists `list` now) is held, if it is, under the
    /// config's `require` (`requireToolLock`): a held tool cannot be called.
    pub(crate) async fn lock_hold(
        &self,
        server: &str,
        list: &Arc<[Tool]>,
        tool: &str,
        require: bool,
    ) -> Option<HoldReason> {
        let (set, generation) = self.lock.current(require).await;
        if set.is_inactive() {
            return None;
        }
        self.lock
            .holds(&set, generation, server, list)
            .get(tool)
            .map(|hold| hold.reason.clone())
    }

    /// Each tool held out of the tool pool, as of the last time it was built ([`tool_pool`]
    /// builds it), by server and tool name.
    ///
    /// [`tool_pool`]: Hub::tool_pool
    pub fn held_tools(&self) -> Vec<HeldTool> {
        let state = lock(&self.lock.state);
        let mut held: Vec<HeldTool> = state
            .verdicts
            .iter()
            .flat_map(|(server, verdicts)| {
                verdicts.holds.iter().map(|(tool, hold)| HeldTool {
                    server: server.clone(),
                    tool: tool.clone(),
                    reason: hold.reason.clone(),
                })
            })
            .collect();
        held.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        held
    }

    /// The tools held by a lockfile, each told once per drift (see [`ToolLockEvent`]), as the
    /// tool pool is built (a host builds it on the pool's list-change events). A reader that
    /// falls more than [`TOOL_LOCK_EVENTS_CAPACITY`] events behind loses the oldest.
    pub fn tool_lock_events(&self) -> broadcast::Receiver<ToolLockEvent> {
        self.lock.events.subscribe()
    }

    /// Where the lockfiles are.
    pub fn tool_lock_paths(&self) -> &LockPaths {
        &self.lock.paths
    }

    /// The lockfiles as they are on disk now, with managed policy's `requireToolLock`.
    pub async fn tool_locks(&self) -> Arc<LockSet> {
        let require = self.current().config.require_tool_lock;
        self.lock.refresh(require).await.0
    }

    /// Locks what every connected server lists now in the lockfile of `scope`: each such
    /// server's lock is replaced (its own `newTools` kept), so this approves every change. Locks
    /// of servers that are not connected are kept as they were; the servers of the config that
    /// could not be locked are in [`LockWritten::not_connected`]. A lockfile that exists but
    /// cannot be read is not overwritten.
    pub async fn lock_tools(&self, scope: LockScope) -> Result<LockWritten, HubError> {
        let (lists, not_connected) = self.server_lists().await;
        let path = self.lock.paths.path(scope).to_owned();
        let mut file = self.read_for_writing(scope).await?;
        let mut servers = Vec::new();
        for (server, list) in &lists {
            let before = file.servers.get(server).cloned().unwrap_or_default();
            file.lock_server(server, list);
            servers.push((server.clone(), changed_tools(&before, &file.servers[server])));
        }
        let kept = file
            .servers
            .keys()
            .filter(|server| !lists.iter().any(|(name, _)| name == *server))
            .cloned()
            .collect();
        self.write_lock(scope, file).await?;
        Ok(LockWritten {
            files: vec![WrittenFile {
                scope,
                path,
                servers,
                kept,
            }],
            not_connected,
        })
    }

    /// Re-locks (approves) what the named tools and servers list now: each name is a tool's
    /// qualified name (`mcp__server__tool`) or a server's name (all of its tools: added ones
    /// locked, removed ones unlocked). The lockfile is `scope`'s, or when `None` every lockfile
    /// that locks the server (the user's when none does). Fails, writing nothing, when a name
    /// is neither, or its server is not connected.
    pub async fn relock(&self, names: &[String], scope: Option<LockScope>) -> Result<LockWritten, HubError> {
        let (lists, _) = self.server_lists().await;
        // The qualified names are those of the tool pool.
        let _ = self.tool_pool().await;
        let mut wanted: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
        for name in names {
            let (server, tool) = match self.tool_origin(name) {
                Some(origin) => (origin.server, Some(origin.tool)),
                None => (name.clone(), None),
            };
            if !lists.iter().any(|(listed, _)| *listed == server) {
                let why = match self.pool().state(&server) {
                    Some(state) => format!("server {server:?} is {}, not connected", state.status.as_str()),
                    None => "it is neither a connected server nor the qualified name of one of its tools".to_owned(),
                };
                return Err(HubError::NotLockable {
                    name: name.clone(),
                    why,
                });
            }
            match (wanted.entry(server).or_insert_with(|| Some(Vec::new())), tool) {
                (Some(tools), Some(tool)) => tools.push(tool),
                (whole, None) => *whole = None,
                (None, Some(_)) => {}
            }
        }
        let set = self.tool_locks().await;
        let chosen = scope.is_some();
        let scopes: Vec<LockScope> = match scope {
            Some(scope) => vec![scope],
            None => {
                let mut scopes: Vec<LockScope> = set
                    .files
                    .iter()
                    .filter(|file| wanted.keys().any(|server| locks(file, server)))
                    .map(|file| file.scope)
                    .collect();
                if wanted.keys().any(|server| set.locks_of(server).next().is_none())
                    && !scopes.contains(&LockScope::User)
                {
                    scopes.push(LockScope::User);
                }
                scopes
            }
        };
        let mut written = LockWritten {
            files: Vec::new(),
            not_connected: Vec::new(),
        };
        for scope in scopes {
            let mut file = self.read_for_writing(scope).await?;
            let mut servers = Vec::new();
            for (server, tools) in &wanted {
                // Without a chosen scope, a file re-locks only the servers it locks (the user's
                // also those no file locks).
                let takes = chosen
                    || file.servers.contains_key(server)
                    || (scope == LockScope::User && set.locks_of(server).next().is_none());
                if !takes {
                    continue;
                }
                let list = &lists.iter().find(|(name, _)| name == server).expect("checked above").1;
                let before = file.servers.get(server).cloned().unwrap_or_default();
                match tools {
                    None => file.lock_server(server, list),
                    Some(tools) => {
                        for tool in tools {
                            match list.iter().find(|listed| listed.name == *tool) {
                                Some(listed) => file.lock_tool(server, listed),
                                None => {
                                    file.unlock_tool(server, tool);
                                }
                            }
                        }
                    }
                }
                servers.push((server.clone(), changed_tools(&before, &file.servers[server])));
            }
            if servers.is_empty() {
                continue;
            }
            self.write_lock(scope, file).await?;
            written.files.push(WrittenFile {
                scope,
                path: self.lock.paths.path(scope).to_owned(),
                servers,
                kept: Vec::new(),
            });
        }
        Ok(written)
    }

    /// Every connected server's list of tools now, and the servers that are not connected (with
    /// their state and why).
    async fn server_lists(&self) -> (Vec<(String, Arc<[Tool]>)>, Vec<(String, String)>) {
        let mut lists = Vec::new();
        let mut not_connected = Vec::new();
        for (name, state) in self.pool().states() {
            let why = |state: &plexus_pool::ServerState| {
                let detail = state
                    .reason
                    .clone()
                    .or_else(|| state.error.as_ref().map(ToString::to_string));
                match detail {
                    Some(detail) => format!("{}: {detail}", state.status.as_str()),
                    None => state.status.as_str().to_owned(),
                }
            };
            if state.status != plexus_pool::ServerStatus::Connected {
                not_connected.push((name, why(&state)));
                continue;
            }
            match self.pool().tools(&name).await {
                Ok(list) => lists.push((name, list)),
                Err(e) => not_connected.push((name, format!("its tools could not be listed: {e}"))),
            }
        }
        (lists, not_connected)
    }

    /// The lockfile of `scope` to change: empty when there is none; an error when it exists but
    /// cannot be read (it is never overwritten then).
    async fn read_for_writing(&self, scope: LockScope) -> Result<ToolLock, HubError> {
        let path = self.lock.paths.path(scope).to_owned();
        let loaded = blocking(move || LoadedLock::load(scope, &path)).await;
        match loaded.lock {
            Ok(lock) => Ok(lock.map(|lock| (*lock).clone()).unwrap_or_default()),
            Err(error) => Err(HubError::ToolLock(error)),
        }
    }

    async fn write_lock(&self, scope: LockScope, file: ToolLock) -> Result<(), HubError> {
        let path = self.lock.paths.path(scope).to_owned();
        blocking(move || file.write(&path, LockPaths::new_file_mode(scope)))
            .await
            .map_err(|error| HubError::ToolLock(Arc::new(error)))?;
        // Read again at the next tool pool.
        lock(&self.lock.state).set = None;
        Ok(())
    }
}

/// Whether `file` locks `server`.
fn locks(file: &LoadedLock, server: &str) -> bool {
    matches!(&file.lock, Ok(Some(lock)) if lock.servers.contains_key(server))
}

/// The tools whose lock differs between `before` and `after`.
fn changed_tools(before: &plexus_tools::lock::LockedServer, after: &plexus_tools::lock::LockedServer) -> Vec<String> {
    let mut names: Vec<&String> = before.tools.keys().chain(after.tools.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|tool| before.tools.get(*tool) != after.tools.get(*tool))
        .cloned()
        .collect()
}

impl std::fmt::Debug for ToolLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolLocks")
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}
