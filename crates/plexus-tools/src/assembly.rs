//! The host's tool pool: its built-in tools as given, then every MCP tool by server and name,
//! each server's `enabledTools` / `disabledTools` applied, built-in names winning.
//!
//! Two steps, so that a list change costs only its own server: [`server_entries`] turns one
//! server's listed tools into shared entries (named through the index) once per list; then
//! [`assemble`] puts every server's entries together, which is cheap enough to do on every
//! change of any server.

use std::collections::HashSet;
use std::sync::Arc;

use plexus_protocol::Tool;
use wildmatch::WildMatch;

use crate::ToolEntry;
use crate::naming::ToolIndex;

/// A server's `enabledTools` and `disabledTools` (glob patterns: `*` any run, `?` one
/// character), matched against the tools' own names.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    enabled: Option<Vec<WildMatch>>,
    disabled: Vec<WildMatch>,
}

impl ToolFilter {
    /// The filter of `enabled` (`None`: every tool) and `disabled` patterns.
    pub fn new(enabled: Option<&[String]>, disabled: &[String]) -> ToolFilter {
        ToolFilter {
            enabled: enabled.map(|patterns| patterns.iter().map(|p| WildMatch::new(p)).collect()),
            disabled: disabled.iter().map(|p| WildMatch::new(p)).collect(),
        }
    }

    /// Whether the pool gets the tool named `tool`: not disabled, and enabled when there is a
    /// list of enabled tools.
    pub fn allows(&self, tool: &str) -> bool {
        !self.disabled.iter().any(|p| p.matches(tool))
            && self
                .enabled
                .as_ref()
                .is_none_or(|enabled| enabled.iter().any(|p| p.matches(tool)))
    }
}

/// One server's entries, for [`assemble`].
#[derive(Debug, Clone, Copy)]
pub struct ServerTools<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// Its entries, from [`server_entries`].
    pub entries: &'a [Arc<ToolEntry>],
    /// Its entry's filter.
    pub filter: &'a ToolFilter,
}

/// The entries of `server`'s listed `tools`, ordered by tool name, named through `index` (so
/// that names stay the same across lists and assemblies).
pub fn server_entries(server: &str, tools: &[Tool], index: &mut ToolIndex) -> Arc<[Arc<ToolEntry>]> {
    let mut sorted: Vec<&Tool> = tools.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted
        .into_iter()
        .map(|tool| {
            let name = index.insert(server, &tool.name).to_owned();
            Arc::new(ToolEntry::named(name, server, tool))
        })
        .collect()
}

/// Why a tool is not in the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOutBecause {
    /// The server's `enabledTools` / `disabledTools` leave it out.
    Filtered,
    /// A built-in tool of the host has its name.
    BuiltinName,
    /// A tool-pool lockfile holds it (see [`crate::lock`]).
    Held(HeldBecause),
}

/// Why a lockfile holds a tool out of the pool (the whole reason, with the fields that changed,
/// is a [`HoldReason`](crate::lock::HoldReason)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldBecause {
    /// Its definition changed since it was locked.
    Changed,
    /// Its server is locked, the tool is new, and new tools are held.
    New,
    /// Managed policy requires a lockfile, and no lockfile locks its server.
    Unlocked,
    /// A lockfile exists but cannot be read.
    LockUnreadable,
}

/// A tool the pool does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Its server.
    pub server: String,
    /// Its own name.
    pub tool: String,
    /// The name it would have had.
    pub name: String,
    /// Why.
    pub because: LeftOutBecause,
}

/// The assembled pool.
#[derive(Debug, Clone, Default)]
pub struct ToolPool {
    /// The host's built-in tools, as given.
    pub builtins: Vec<String>,
    /// The MCP tools, by server name and then tool name.
    pub entries: Vec<Arc<ToolEntry>>,
    /// What was left out, in the same order.
    pub left_out: Vec<LeftOut>,
}

impl ToolPool {
    /// Every name of the pool in its order: the built-ins, then the MCP tools.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.builtins
            .iter()
            .map(String::as_str)
            .chain(self.entries.iter().map(|entry| entry.name.as_str()))
    }
}

/// The pool of the host's `builtins` and the entries of `servers`. The order is deterministic
/// whatever order the servers come in.
pub fn assemble(builtins: &[&str], servers: &[ServerTools<'_>]) -> ToolPool {
    let taken: HashSet<&str> = builtins.iter().copied().collect();
    let mut servers: Vec<&ServerTools<'_>> = servers.iter().collect();
    servers.sort_by_key(|server| server.server);
    let mut pool = ToolPool {
        builtins: builtins.iter().map(|name| (*name).to_owned()).collect(),
        entries: Vec::with_capacity(servers.iter().map(|server| server.entries.len()).sum()),
        left_out: Vec::new(),
    };
    for server in servers {
        for entry in server.entries {
            let because = if !server.filter.allows(&entry.tool) {
                Some(LeftOutBecause::Filtered)
            } else if taken.contains(entry.name.as_str()) {
                Some(LeftOutBecause::BuiltinName)
            } else {
                None
            };
            match because {
                Some(because) => pool.left_out.push(LeftOut {
                    server: entry.server.clone(),
                    tool: entry.tool.clone(),
                    name: entry.name.clone(),
                    because,
                }),
                None => pool.entries.push(Arc::clone(entry)),
            }
        }
    }
    pool
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|name| serde_json::from_value(json!({"name": name, "inputSchema": {}})).unwrap())
            .collect()
    }

    #[test]
    fn builtins_come_first_and_win_and_the_rest_is_ordered_by_server_and_name() {
        let mut index = ToolIndex::default();
        let a = server_entries("srv", &tools(&["zeta", "alpha", "shadow"]), &mut index);
        let b = server_entries("aaa", &tools(&["x"]), &mut index);
        let all = ToolFilter::default();
        let servers = [
            ServerTools {
                server: "srv",
                entries: &a,
                filter: &all,
            },
            ServerTools {
                server: "aaa",
                entries: &b,
                filter: &all,
            },
        ];
        let pool = assemble(&["Read", "mcp__srv__shadow"], &servers);
        let names: Vec<&str> = pool.names().collect();
        assert_eq!(
            names,
            [
                "Read",
                "mcp__srv__shadow",
                "mcp__aaa__x",
                "mcp__srv__alpha",
                "mcp__srv__zeta"
            ]
        );
        assert_eq!(pool.left_out.len(), 1);
        assert_eq!(pool.left_out[0].because, LeftOutBecause::BuiltinName);
        // The same servers in another order: the same pool.
        let reversed = [servers[1], servers[0]];
        let again = assemble(&["Read", "mcp__srv__shadow"], &reversed);
        assert_eq!(again.names().collect::<Vec<_>>(), names);
    }

    #[test]
    fn filters_keep_the_enabled_and_drop_the_disabled() {
        let listed = server_entries(
            "fs",
            &tools(&["read_file", "read_dir", "write_file", "delete"]),
            &mut ToolIndex::default(),
        );
        let filter = ToolFilter::new(Some(&["read_*".into(), "write_?ile".into()]), &["read_dir".into()]);
        let servers = [ServerTools {
            server: "fs",
            entries: &listed,
            filter: &filter,
        }];
        let pool = assemble(&[], &servers);
        let kept: Vec<&str> = pool.entries.iter().map(|e| e.tool.as_str()).collect();
        assert_eq!(kept, ["read_file", "write_file"]);
        let dropped: Vec<&str> = pool.left_out.iter().map(|l| l.tool.as_str()).collect();
        assert_eq!(dropped, ["delete", "read_dir"]);
        assert!(pool.left_out.iter().all(|l| l.because == LeftOutBecause::Filtered));
    }
}
