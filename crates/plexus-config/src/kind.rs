//! The seven kinds of server a config entry can describe, and the in-process kind a host
//! registers itself.

use std::fmt;

/// Which kind of server an entry describes, chosen by its `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServerKind {
    /// A local child process speaking over stdin/stdout (`"stdio"`, or no `type`).
    Stdio,
    /// A remote server on the legacy HTTP+SSE transport of protocol 2024-11-05 (`"sse"`).
    Sse,
    /// A remote server on the Streamable HTTP transport (`"http"`, alias `"streamable-http"`).
    Http,
    /// A remote server over WebSocket (`"ws"`).
    Ws,
    /// An IDE extension's server on legacy HTTP+SSE (`"sse-ide"`).
    SseIde,
    /// An IDE extension's server over WebSocket (`"ws-ide"`).
    WsIde,
    /// A server reached through the claude.ai connector proxy (`"claudeai-proxy"`).
    ClaudeAiProxy,
    /// A server that runs in the host's own process, over an in-memory pipe (`"in-process"`).
    /// Only a host registers one (the facade's `HubOptions::in_process`): no config file can
    /// name this kind, so nothing a repository ships can start one.
    InProcess,
}

impl ServerKind {
    /// Every kind a config file can name, in the order of the design table
    /// ([`InProcess`](Self::InProcess) is not one).
    pub const ALL: [ServerKind; 7] = [
        ServerKind::Stdio,
        ServerKind::Sse,
        ServerKind::Http,
        ServerKind::Ws,
        ServerKind::SseIde,
        ServerKind::WsIde,
        ServerKind::ClaudeAiProxy,
    ];

    /// The `type` string written in config files for this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Stdio => "stdio",
            ServerKind::Sse => "sse",
            ServerKind::Http => "http",
            ServerKind::Ws => "ws",
            ServerKind::SseIde => "sse-ide",
            ServerKind::WsIde => "ws-ide",
            ServerKind::ClaudeAiProxy => "claudeai-proxy",
            ServerKind::InProcess => "in-process",
        }
    }

    /// The kind a config file's `type` string names, accepting the alias `"streamable-http"`
    /// (never [`InProcess`](Self::InProcess)).
    pub fn from_config_type(type_name: &str) -> Option<ServerKind> {
        if type_name == "streamable-http" {
            return Some(ServerKind::Http);
        }
        ServerKind::ALL.into_iter().find(|kind| kind.as_str() == type_name)
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_config_string() {
        for kind in ServerKind::ALL {
            assert_eq!(ServerKind::from_config_type(&kind.to_string()), Some(kind));
        }
        assert_eq!(ServerKind::from_config_type("streamable-http"), Some(ServerKind::Http));
        assert_eq!(ServerKind::from_config_type("HTTP"), None);
        assert_eq!(ServerKind::ClaudeAiProxy.to_string(), "claudeai-proxy");
        // A file cannot name the host's own kind.
        assert_eq!(ServerKind::from_config_type("in-process"), None);
    }
}
