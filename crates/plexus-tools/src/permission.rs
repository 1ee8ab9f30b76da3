//! Permission rules for MCP tools. Every MCP tool's default decision is "ask" (passthrough):
//! annotations never skip a check. A host's rules name tools:
//! - `mcp__*` matches every MCP tool;
//! - `mcp__srv` and `mcp__srv__*` match every tool of server `srv`;
//! - `mcp__srv__tool` matches exactly that tool (its qualified name).
//!
//! Rules are matched against a tool's origin and name, never by splitting a name: a server
//! named `a__b` is matched by `mcp__a__b`, not by a rule for server `a`.

use crate::ToolEntry;
use crate::naming::{PREFIX, SEPARATOR, normalize_name};

/// What a host decides for a tool when no rule of its own applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Ask the user (the default of every MCP tool).
    Ask,
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
}

/// The default decision for an MCP tool: [`Decision::Ask`], whatever its annotations say.
pub fn default_decision(_tool: &ToolEntry) -> Decision {
    Decision::Ask
}

/// Whether `rule` matches `tool`.
pub fn rule_matches(rule: &str, tool: &ToolEntry) -> bool {
    let Some(rest) = rule.strip_prefix(PREFIX) else {
        return false;
    };
    if rest == "*" {
        return true;
    }
    let server = normalize_name(&tool.server);
    let of_server = |pattern: &str| pattern == server || pattern == tool.server;
    if let Some(pattern) = rest.strip_suffix(&format!("{SEPARATOR}*")) {
        return of_server(pattern);
    }
    of_server(rest) || rule == tool.name
}

#[cfg(test)]
mod tests {
    use super::*;
    use plexus_protocol::Tool;

    fn entry(server: &str, tool: &str) -> ToolEntry {
        let tool: Tool = serde_json::from_value(serde_json::json!({"name": tool, "inputSchema": {}})).unwrap();
        ToolEntry::new(server, &tool)
    }

    #[test]
    fn rules_match_every_tool_a_server_or_one_tool() {
        let t = entry("github", "create_issue");
        for rule in ["mcp__*", "mcp__github", "mcp__github__*", "mcp__github__create_issue"] {
            assert!(rule_matches(rule, &t), "{rule}");
        }
        for rule in [
            "mcp__git",
            "mcp__github__create",
            "mcp__gitlab__*",
            "github",
            "mcp__github__create_issue2",
        ] {
            assert!(!rule_matches(rule, &t), "{rule}");
        }
        // A server whose name holds the separator is not matched by a rule for its first part.
        let odd = entry("a__b", "c");
        assert!(!rule_matches("mcp__a", &odd));
        assert!(rule_matches("mcp__a__b", &odd));
        assert_eq!(default_decision(&t), Decision::Ask);
    }
}
