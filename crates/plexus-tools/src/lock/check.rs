//! Which tools the lockfiles in force hold out of the tool pool, and why.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plexus_protocol::Tool;
use serde::Serialize;

use super::{Definition, LockError, LockedServer, NewTools, ToolLock, diff_definitions};
use crate::assembly::{HeldBecause, LeftOut, LeftOutBecause, ToolPool};

/// The project lockfile's name, in the project directory (next to `.mcp.json`).
pub const PROJECT_LOCK_FILE: &str = ".mcp.lock.json";

/// The user lockfile's name, in the plexus home.
pub const USER_LOCK_FILE: &str = "mcp.lock.json";

/// Which lockfile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockScope {
    /// `<project>/.mcp.lock.json`: may be checked in; it can only hold tools out.
    Project,
    /// `<home>/mcp.lock.json`: the user's, for every project, keyed by server name.
    User,
}

impl fmt::Display for LockScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockScope::Project => "project",
            LockScope::User => "user",
        })
    }
}

/// Where the two lockfiles are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockPaths {
    /// `<project>/.mcp.lock.json`.
    pub project: PathBuf,
    /// `<home>/mcp.lock.json`.
    pub user: PathBuf,
}

impl LockPaths {
    /// The lockfiles of the project at `project_dir` and the plexus home `home`.
    pub fn new(project_dir: &Path, home: &Path) -> LockPaths {
        LockPaths {
            project: project_dir.join(PROJECT_LOCK_FILE),
            user: home.join(USER_LOCK_FILE),
        }
    }

    /// The lockfiles of the project and home that `discovery` finds (the project directory as
    /// the config's discovery finds it: where `.mcp.json` is or would be).
    pub fn of(discovery: &plexus_config::DiscoveryOptions) -> LockPaths {
        let paths = plexus_config::ConfigPaths::discover(discovery);
        LockPaths::new(&paths.project_dir, &paths.home)
    }

    /// The file of `scope`.
    pub fn path(&self, scope: LockScope) -> &Path {
        match scope {
            LockScope::Project => &self.project,
            LockScope::User => &self.user,
        }
    }

    /// The mode a new file of `scope` gets: `0644` in the project (it may be shared), `0600` in
    /// the home.
    pub fn new_file_mode(scope: LockScope) -> u32 {
        match scope {
            LockScope::Project => 0o644,
            LockScope::User => 0o600,
        }
    }
}

/// One lockfile as read.
#[derive(Debug, Clone)]
pub struct LoadedLock {
    /// Which one.
    pub scope: LockScope,
    /// Where.
    pub path: PathBuf,
    /// Its contents (`None`: there is no such file), or why it could not be read.
    pub lock: Result<Option<Arc<ToolLock>>, Arc<LockError>>,
}

impl LoadedLock {
    /// Reads the lockfile of `scope` at `path`.
    pub fn load(scope: LockScope, path: &Path) -> LoadedLock {
        LoadedLock {
            scope,
            path: path.to_owned(),
            lock: ToolLock::load(path).map(|lock| lock.map(Arc::new)).map_err(Arc::new),
        }
    }
}

/// The lockfiles in force (the project's first), and whether managed policy requires one for
/// every server (`requireToolLock`).
///
/// A tool is held out of the tool pool when any lockfile that locks its server holds it:
/// changed since it was locked there, or not named there while that file's `newTools` is
/// `"hold"`. So each file can only hold tools out: the project's (which a repository may ship)
/// never admits a tool the user's holds. A lockfile that exists but cannot be read holds every
/// tool (it may have locked any server). A server no lockfile locks is unaffected, unless
/// `require` is set: then all its tools are held.
#[derive(Debug, Clone, Default)]
pub struct LockSet {
    /// The files, the project's first.
    pub files: Vec<LoadedLock>,
    /// Managed policy's `requireToolLock`.
    pub require: bool,
}

/// Why a tool is held, in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum HoldReason {
    /// Its pinned members changed since it was locked in `file`.
    Changed {
        /// The members that changed, in the order of [`HASHED_FIELDS`](super::HASHED_FIELDS).
        fields: Vec<String>,
        /// The lockfile.
        file: PathBuf,
    },
    /// Its server is locked in `file`, which does not name it, and new tools are held.
    New {
        /// The lockfile.
        file: PathBuf,
    },
    /// Managed policy requires a lockfile, and none locks its server.
    Unlocked,
    /// The lockfile `file` exists but cannot be read: every tool is held until it is fixed.
    Unreadable {
        /// The lockfile.
        file: PathBuf,
    },
}

impl HoldReason {
    /// The reason's kind, as the tool pool records it.
    pub fn because(&self) -> HeldBecause {
        match self {
            HoldReason::Changed { .. } => HeldBecause::Changed,
            HoldReason::New { .. } => HeldBecause::New,
            HoldReason::Unlocked => HeldBecause::Unlocked,
            HoldReason::Unreadable { .. } => HeldBecause::LockUnreadable,
        }
    }
}

impl fmt::Display for HoldReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HoldReason::Changed { fields, file } => write!(
                f,
                "changed since it was locked in {} ({})",
                file.display(),
                fields.join(", ")
            ),
            HoldReason::New { file } => write!(
                f,
                "new since its server was locked in {}, whose newTools is \"hold\"",
                file.display()
            ),
            HoldReason::Unlocked => f.write_str(
                "managed policy requires a tool lockfile (requireToolLock), and no lockfile locks its server",
            ),
            HoldReason::Unreadable { file } => write!(
                f,
                "the tool lockfile {} cannot be read, so every tool is held until it is fixed",
                file.display()
            ),
        }
    }
}

/// A held tool: why, and the hash of its definition now (a drift is reported once per hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Why.
    pub reason: HoldReason,
    /// The SHA-256 of its definition now.
    pub sha256: String,
}

impl LockSet {
    /// Reads both lockfiles of `paths`; `require` is managed policy's `requireToolLock`.
    pub fn load(paths: &LockPaths, require: bool) -> LockSet {
        LockSet {
            files: vec![
                LoadedLock::load(LockScope::Project, &paths.project),
                LoadedLock::load(LockScope::User, &paths.user),
            ],
            require,
        }
    }

    /// Whether no tool can be held: no lockfile, none broken, no policy requiring one.
    pub fn is_inactive(&self) -> bool {
        !self.require && self.files.iter().all(|file| matches!(file.lock, Ok(None)))
    }

    /// The lockfiles that could not be read.
    pub fn problems(&self) -> impl Iterator<Item = &Arc<LockError>> {
        self.files.iter().filter_map(|file| file.lock.as_ref().err())
    }

    /// Each lockfile that locks `server`, the project's first, with its file and lock.
    pub fn locks_of<'a>(
        &'a self,
        server: &'a str,
    ) -> impl Iterator<Item = (&'a LoadedLock, &'a ToolLock, &'a LockedServer)> + 'a {
        self.files.iter().filter_map(move |file| {
            let lock = file.lock.as_ref().ok()?.as_deref()?;
            Some((file, lock, lock.servers.get(server)?))
        })
    }

    /// The tools of `server` (listing `tools`) that are held, by their own name.
    pub fn check_server(&self, server: &str, tools: &[Tool]) -> BTreeMap<String, Hold> {
        if self.is_inactive() {
            return BTreeMap::new();
        }
        let locking: Vec<_> = self.locks_of(server).collect();
        let broken = self.problems().next().map(|error| error.path().to_owned());
        if broken.is_none() && locking.is_empty() && !self.require {
            return BTreeMap::new();
        }
        tools
            .iter()
            .filter_map(|tool| {
                let definition = Definition::of(tool);
                let reason = if let Some(file) = &broken {
                    Some(HoldReason::Unreadable { file: file.clone() })
                } else if locking.is_empty() {
                    Some(HoldReason::Unlocked)
                } else {
                    locking
                        .iter()
                        .find_map(|(file, lock, locked)| match locked.tools.get(&tool.name) {
                            Some(before) if before.sha256() != definition.sha256() => Some(HoldReason::Changed {
                                fields: diff_definitions(before, &definition)
                                    .into_iter()
                                    .map(|field| field.field)
                                    .collect(),
                                file: file.path.clone(),
                            }),
                            Some(_) => None,
                            None => (lock.new_tools_of(server) == NewTools::Hold).then(|| HoldReason::New {
                                file: file.path.clone(),
                            }),
                        })
                };
                reason.map(|reason| {
                    let hold = Hold {
                        reason,
                        sha256: definition.sha256().to_owned(),
                    };
                    (tool.name.clone(), hold)
                })
            })
            .collect()
    }
}

/// Moves the entries of `pool` that `held` holds (by server and tool) to its left-out tools,
/// which stay ordered by server and tool name.
pub fn hold_out(pool: &mut ToolPool, held: impl Fn(&str, &str) -> Option<HeldBecause>) {
    let mut moved = false;
    let left_out = &mut pool.left_out;
    pool.entries.retain(|entry| match held(&entry.server, &entry.tool) {
        Some(because) => {
            left_out.push(LeftOut {
                server: entry.server.clone(),
                tool: entry.tool.clone(),
                name: entry.name.clone(),
                because: LeftOutBecause::Held(because),
            });
            moved = true;
            false
        }
        None => true,
    });
    if moved {
        pool.left_out
            .sort_by(|a, b| (a.server.as_str(), a.tool.as_str()).cmp(&(b.server.as_str(), b.tool.as_str())));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::assembly::{ServerTools, ToolFilter, assemble, server_entries};
    use crate::naming::ToolIndex;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    fn loaded(scope: LockScope, lock: Option<ToolLock>) -> LoadedLock {
        LoadedLock {
            scope,
            path: PathBuf::from(format!("/{scope}.json")),
            lock: Ok(lock.map(Arc::new)),
        }
    }

    fn reasons(set: &LockSet, server: &str, tools: &[Tool]) -> Vec<(String, HoldReason)> {
        set.check_server(server, tools)
            .into_iter()
            .map(|(name, hold)| (name, hold.reason))
            .collect()
    }

    #[test]
    fn each_lockfile_can_only_hold_tools_out() {
        let old = [tool(json!({"name": "a", "description": "old", "inputSchema": {}}))];
        let new = [
            tool(json!({"name": "a", "description": "new", "inputSchema": {}})),
            tool(json!({"name": "b", "inputSchema": {}})),
        ];
        let mut user = ToolLock::default();
        user.lock_server("s", &old);
        // The project's lock admits the new definition and new tools; the user's still holds.
        let mut project = ToolLock {
            new_tools: NewTools::Admit,
            ..ToolLock::default()
        };
        project.lock_server("s", &new[..1]);
        let set = LockSet {
            files: vec![
                loaded(LockScope::Project, Some(project)),
                loaded(LockScope::User, Some(user)),
            ],
            require: false,
        };
        assert_eq!(
            reasons(&set, "s", &new),
            [
                (
                    "a".to_owned(),
                    HoldReason::Changed {
                        fields: vec!["description".into()],
                        file: "/user.json".into()
                    }
                ),
                (
                    "b".to_owned(),
                    HoldReason::New {
                        file: "/user.json".into()
                    }
                ),
            ]
        );
        // Another server is unaffected, unless policy requires a lock.
        assert!(reasons(&set, "other", &new).is_empty());
        let required = LockSet { require: true, ..set };
        assert_eq!(
            reasons(&required, "other", &new[1..]),
            [("b".to_owned(), HoldReason::Unlocked)]
        );
        assert!(LockSet::default().is_inactive());
        assert!(!required.is_inactive());
    }

    #[test]
    fn a_broken_lockfile_holds_every_tool() {
        let error = ToolLock::parse(b"{", Path::new("/p/.mcp.lock.json")).unwrap_err();
        let set = LockSet {
            files: vec![
                LoadedLock {
                    scope: LockScope::Project,
                    path: "/p/.mcp.lock.json".into(),
                    lock: Err(Arc::new(error)),
                },
                loaded(LockScope::User, None),
            ],
            require: false,
        };
        let held = reasons(&set, "any", &[tool(json!({"name": "x", "inputSchema": {}}))]);
        assert_eq!(
            held,
            [(
                "x".to_owned(),
                HoldReason::Unreadable {
                    file: "/p/.mcp.lock.json".into()
                }
            )]
        );
        assert_eq!(
            held[0].1.to_string(),
            "the tool lockfile /p/.mcp.lock.json cannot be read, so every tool is held until it is fixed"
        );
    }

    #[test]
    fn held_entries_move_to_the_left_out_in_order() {
        let tools = [
            tool(json!({"name": "a", "inputSchema": {}})),
            tool(json!({"name": "b", "inputSchema": {}})),
            tool(json!({"name": "c", "inputSchema": {}})),
        ];
        let entries = server_entries("s", &tools, &mut ToolIndex::default());
        let filter = ToolFilter::new(None, &["c".to_owned()]);
        let mut pool = assemble(
            &[],
            &[ServerTools {
                server: "s",
                entries: &entries,
                filter: &filter,
            }],
        );
        hold_out(&mut pool, |_, tool| (tool == "a").then_some(HeldBecause::Changed));
        assert_eq!(pool.entries.iter().map(|e| e.tool.as_str()).collect::<Vec<_>>(), ["b"]);
        let left: Vec<(&str, LeftOutBecause)> = pool.left_out.iter().map(|l| (l.tool.as_str(), l.because)).collect();
        assert_eq!(
            left,
            [
                ("a", LeftOutBecause::Held(HeldBecause::Changed)),
                ("c", LeftOutBecause::Filtered)
            ]
        );
    }
}
