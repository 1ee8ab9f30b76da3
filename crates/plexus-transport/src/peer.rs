//! Where a transport's peer is, as telemetry names it: what a session reports in OpenTelemetry's
//! `network.*` and `server.*` attributes.

/// How a transport reaches its peer ([`Transport::peer`](crate::Transport::peer)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Peer {
    /// Not known, or not over a network or a pipe (a server in the host's own process).
    #[default]
    Unknown,
    /// A child process's pipes (stdio): `network.transport` `pipe`.
    Pipe,
    /// A host and port over TCP (`network.transport` `tcp`): the URL's, as configured (never a
    /// proxy's), with the application protocol spoken over it.
    Tcp {
        /// The application protocol: `http` (Streamable HTTP, legacy SSE) or `websocket`.
        protocol: &'static str,
        /// The host name or IP address, as the URL names it (IPv6 without brackets).
        host: String,
        /// The port, the scheme's default when the URL names none.
        port: u16,
    },
}

impl Peer {
    /// A TCP peer speaking `protocol` at `host`:`port` (brackets around an IPv6 address are
    /// removed).
    pub fn tcp(protocol: &'static str, host: &str, port: u16) -> Peer {
        let host = host
            .strip_prefix('[')
            .and_then(|host| host.strip_suffix(']'))
            .unwrap_or(host);
        Peer::Tcp {
            protocol,
            host: host.to_owned(),
            port,
        }
    }

    /// OpenTelemetry's `network.transport` for it: `pipe`, `tcp`, or `None` when unknown.
    pub fn network_transport(&self) -> Option<&'static str> {
        match self {
            Peer::Unknown => None,
            Peer::Pipe => Some("pipe"),
            Peer::Tcp { .. } => Some("tcp"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Peer;

    #[test]
    fn tcp_peers_lose_the_brackets_of_an_ipv6_host() {
        assert_eq!(
            Peer::tcp("http", "[::1]", 8080),
            Peer::Tcp {
                protocol: "http",
                host: "::1".to_owned(),
                port: 8080
            }
        );
        assert_eq!(
            Peer::tcp("websocket", "example.com", 443).network_transport(),
            Some("tcp")
        );
        assert_eq!(Peer::Pipe.network_transport(), Some("pipe"));
        assert_eq!(Peer::Unknown.network_transport(), None);
    }
}
