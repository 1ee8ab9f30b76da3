//! Where the gateway listens for Streamable HTTP: `HOST:PORT`, the host an IP address or a name
//! (`localhost:8931`), a name resolved to every address it has.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

/// How long resolving a host name may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most addresses a name is served on.
const MAX_ADDRESSES: usize = 8;

use crate::GatewayError;

/// Where to listen, as given (`plexus serve --http HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddress {
    /// An IP address and port (`127.0.0.1:8931`, `[::1]:8931`).
    Socket(SocketAddr),
    /// A host name and port (`localhost:8931`).
    Name {
        /// The name.
        host: String,
        /// The port.
        port: u16,
    },
}

impl FromStr for ListenAddress {
    type Err = GatewayError;

    fn from_str(text: &str) -> Result<Self, GatewayError> {
        if let Ok(address) = text.parse::<SocketAddr>() {
            return Ok(ListenAddress::Socket(address));
        }
        let expected = || GatewayError::NotAnAddress { given: text.to_owned() };
        let (host, port) = text.rsplit_once(':').ok_or_else(expected)?;
        let port: u16 = port.parse().map_err(|_| expected())?;
        // A name's characters (an IPv6 address belongs in brackets, and parsed above).
        let name = !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
        if !name {
            return Err(expected());
        }
        Ok(ListenAddress::Name {
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for ListenAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddress::Socket(address) => address.fmt(f),
            ListenAddress::Name { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

impl ListenAddress {
    /// The host name, when it is one.
    pub fn name(&self) -> Option<&str> {
        match self {
            ListenAddress::Socket(_) => None,
            ListenAddress::Name { host, .. } => Some(host),
        }
    }

    /// The addresses to listen on: the address, or every address of the name (at most
    /// 8, within 10 s); an error names the host and why.
    pub async fn resolve(&self) -> Result<Vec<SocketAddr>, GatewayError> {
        let (host, port) = match self {
            ListenAddress::Socket(address) => return Ok(vec![*address]),
            ListenAddress::Name { host, port } => (host.as_str(), *port),
        };
        let unresolved = |source| GatewayError::Resolve {
            host: host.to_owned(),
            source,
        };
        let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| {
                unresolved(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {} s", RESOLVE_TIMEOUT.as_secs()),
                ))
            })?
            .map_err(unresolved)?;
        let mut addresses: Vec<SocketAddr> = Vec::new();
        for address in found {
            if !addresses.contains(&address) && addresses.len() < MAX_ADDRESSES {
                addresses.push(address);
            }
        }
        if addresses.is_empty() {
            return Err(unresolved(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "it has no address",
            )));
        }
        Ok(addresses)
    }
}

/// The first of `addresses` that is not a loopback address: listening there needs a token.
pub fn off_loopback(addresses: &[SocketAddr]) -> Option<SocketAddr> {
    addresses.iter().copied().find(|address| !address.ip().is_loopback())
}

/// The host of an authority (`host:port`, `[v6]:port`, or a host alone).
pub(crate) fn host_of(authority: &str) -> &str {
    authority.rsplit_once(':').map_or(authority, |(host, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            host
        } else {
            authority
        }
    })
}

/// Whether `authority` (a `Host` header's `HOST[:PORT]`, or an `Origin`'s without its scheme)
/// names the gateway that listens on the loopback addresses `own` under the host name `name`
/// (if `--http` gave one): `localhost` or `name`, in any case; or `127.0.0.1`, `[::1]` or one of
/// `own` (`127.0.0.2` when it listens there). Another host (`evil.example`, which DNS
/// rebinding points at this machine) is not it.
pub(crate) fn names_this_gateway(authority: &str, own: &[IpAddr], name: Option<&str>) -> bool {
    let host = host_of(authority);
    let address = match host.strip_prefix('[').and_then(|host| host.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().map(IpAddr::V6).ok(),
        None => host.parse::<Ipv4Addr>().map(IpAddr::V4).ok(),
    };
    match address {
        Some(address) => address == Ipv4Addr::LOCALHOST || address == Ipv6Addr::LOCALHOST || own.contains(&address),
        None => host.eq_ignore_ascii_case("localhost") || name.is_some_and(|name| host.eq_ignore_ascii_case(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_names_parse() {
        assert_eq!(
            "127.0.0.1:8931".parse::<ListenAddress>().unwrap(),
            ListenAddress::Socket("127.0.0.1:8931".parse().unwrap())
        );
        assert_eq!(
            "[::1]:0".parse::<ListenAddress>().unwrap(),
            ListenAddress::Socket("[::1]:0".parse().unwrap())
        );
        let name: ListenAddress = "localhost:8931".parse().unwrap();
        assert_eq!(
            name,
            ListenAddress::Name {
                host: "localhost".to_owned(),
                port: 8931
            }
        );
        assert_eq!(
            (name.to_string(), name.name()),
            ("localhost:8931".to_owned(), Some("localhost"))
        );
        for bad in [
            "localhost",
            "localhost:",
            ":8931",
            "localhost:99999",
            "::1:80",
            "a b:80",
            "a/b:80",
        ] {
            assert_eq!(
                bad.parse::<ListenAddress>().unwrap_err().to_string(),
                format!("expected HOST:PORT (such as localhost:8931 or 127.0.0.1:8931), not {bad:?}"),
                "{bad}"
            );
        }
    }

    #[test]
    fn only_loopback_addresses_go_without_a_token() {
        let loopback: Vec<SocketAddr> = vec!["127.0.0.1:1".parse().unwrap(), "[::1]:1".parse().unwrap()];
        assert_eq!(off_loopback(&loopback), None);
        let mixed = [loopback[0], "192.0.2.7:1".parse().unwrap()];
        assert_eq!(off_loopback(&mixed), Some(mixed[1]));
    }

    #[test]
    fn a_host_names_the_gateway_by_its_loopback_addresses_or_a_name_in_any_case() {
        let own: Vec<IpAddr> = vec!["127.0.0.2".parse().unwrap(), "::1".parse().unwrap()];
        for host in [
            "127.0.0.2:8931",
            "127.0.0.2",
            "127.0.0.1:8931",
            "[::1]:8931",
            "[0:0:0:0:0:0:0:1]",
            "localhost:8931",
            "LOCALHOST",
            "Gateway.Example:8931",
        ] {
            assert!(names_this_gateway(host, &own, Some("gateway.example")), "{host}");
        }
        for host in [
            "",
            "evil.example:8931",
            "127.0.0.3:8931",
            "127.1:8931",
            "::1",
            "[::2]:8931",
            "localhost.evil.example",
            "localhost:x",
        ] {
            assert!(!names_this_gateway(host, &own, Some("gateway.example")), "{host}");
        }
        assert!(!names_this_gateway("gateway.example", &own, None));
    }

    #[tokio::test]
    async fn an_address_resolves_to_itself() {
        let address: ListenAddress = "127.0.0.1:8931".parse().unwrap();
        assert_eq!(address.resolve().await.unwrap(), ["127.0.0.1:8931".parse().unwrap()]);
    }
}
