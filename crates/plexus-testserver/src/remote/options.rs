//! The options of the remote modes (`http`, `sse`, `ws`): where the server listens, the MCP
//! options it shares with stdio, and the HTTP-level faults.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use clap::builder::TypedValueParser;
use clap::{Args, value_parser};
use plexus_jsonrpc::DEFAULT_MAX_MESSAGE_SIZE;

use super::PathProblem;
use crate::{OAuthOptions, ProcessOptions, ServerOptions};

/// The longest `--slow-headers-ms` and `--sse-retry-ms`, in milliseconds (10 minutes).
pub(crate) const MAX_DELAY_MS: u64 = 600_000;

/// The default endpoint path of `http` and `ws`.
pub(crate) const DEFAULT_MCP_PATH: &str = "/mcp";
/// The default SSE stream path of `sse`.
pub(crate) const DEFAULT_SSE_PATH: &str = "/sse";
/// Where the legacy transport's client POSTs its messages (`/messages?sessionId=…`).
pub(crate) const MESSAGES_PATH: &str = "/messages";
/// The longest endpoint path, in bytes.
const MAX_PATH_BYTES: usize = 1024;

/// Options every remote mode shares: where it listens, what it requires of requests, and the
/// HTTP-level faults.
#[derive(Debug, Clone, Args)]
pub struct RemoteOptions {
    /// The TCP port on 127.0.0.1 (the server never binds another address); 0 picks a free one.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// The endpoint's path [default: /mcp; for sse, /sse, the path of the SSE stream].
    #[arg(long, value_name = "PATH", value_parser = parse_path)]
    pub path: Option<String>,
    /// The largest request body (one POSTed message) or WebSocket message accepted, in bytes; a
    /// larger body is answered with 413, a larger WebSocket message closes the socket (1009).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MESSAGE_SIZE, value_parser = value_parser!(u64).range(1..=1 << 30).map(|n| n as usize))]
    pub max_body_bytes: usize,
    /// Require this header, with exactly this value, on every request: without it the server
    /// answers 401 with `WWW-Authenticate: Bearer realm="plexus-testserver"`. Repeatable.
    #[arg(long = "require-header", value_name = "'NAME: VALUE'")]
    pub require_headers: Vec<RequiredHeader>,
    /// Fault: wait MS milliseconds before sending the headers of every response.
    #[arg(long, value_name = "MS", value_parser = value_parser!(u64).range(1..=MAX_DELAY_MS))]
    pub slow_headers_ms: Option<u64>,
    /// Fault: answer POSTs (ws: upgrade requests) with this status and a short text body; alone,
    /// every one; with --fail-after, those after the first N.
    #[arg(long, value_name = "CODE", value_parser = value_parser!(u16).range(400..=599))]
    pub fail_status: Option<u16>,
    /// Fault: serve the first N POSTs (ws: upgrade requests), then fail the later ones with
    /// --fail-status (default 500).
    #[arg(long, value_name = "N")]
    pub fail_after: Option<u64>,
    /// Fault: serve the first N POSTs (ws: text messages), then drop the TCP connection with a
    /// reset at each later one, without answering.
    #[arg(long, value_name = "N")]
    pub reset_after: Option<u64>,
    /// With --fail-status, --fail-after, --reset-after or (http) --close-after-request-ms: only the
    /// first K requests that the fault would hit are hit; later ones are served again.
    #[arg(long, value_name = "K", value_parser = value_parser!(u64).range(1..))]
    pub fault_times: Option<u64>,
    /// With --fault-times K: the pattern repeats every P requests (K hit, P - K served, …), so
    /// that failures and successes alternate.
    #[arg(long, value_name = "P", requires = "fault_times", value_parser = value_parser!(u64).range(1..))]
    pub fault_period: Option<u64>,
    /// With --fail-status, --fail-after, --reset-after, --slow-headers-ms and (http)
    /// --drop-sse-after and --expire-session-after: the faults apply (and count requests) only
    /// once the server has answered N tools/call in all, so that a session is up and a call has
    /// worked before they hit.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..))]
    pub faults_after_calls: Option<u64>,
    /// Fault: answer a request whose Content-Length is above BYTES with STATUS (default 413; a 401
    /// carries a Bearer challenge) as soon as its head is in, without reading its body, and close
    /// the connection (an unread body makes the close a TCP reset).
    #[arg(long, value_name = "BYTES[:STATUS]")]
    pub reject_large_body: Option<RejectLargeBody>,
    /// Serve TLS with this PEM certificate chain (and --tls-key): the URL becomes `https://`
    /// (`wss://`). ALPN offers `h2` (not in ws mode) and `http/1.1`; HTTP/2 is served when the
    /// client chooses it. Each handshake is logged as a `tls` event.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// With --tls-cert: require a client certificate issued by a CA of this PEM file (mutual
    /// TLS); a client without one fails the handshake.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
    /// Compress response bodies (JSON and event streams, each event flushed as it goes) with gzip
    /// when the request's Accept-Encoding allows it; logged as a `compressed` event.
    #[arg(long)]
    pub gzip: bool,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            port: 0,
            path: None,
            max_body_bytes: DEFAULT_MAX_MESSAGE_SIZE,
            require_headers: Vec::new(),
            slow_headers_ms: None,
            fail_status: None,
            fail_after: None,
            reset_after: None,
            fault_times: None,
            fault_period: None,
            faults_after_calls: None,
            reject_large_body: None,
            tls_cert: None,
            tls_key: None,
            client_ca: None,
            gzip: false,
        }
    }
}

/// Session faults of the modes that have sessions (`http`, `sse`).
#[derive(Debug, Clone, Default, Args)]
pub struct SessionOptions {
    /// Fault: a session answers its first N requests, then forgets itself: the next request and
    /// everything after it with that session id get 404 with a JSON-RPC error -32001; the
    /// session's open streams end. With --faults-after-calls, only the requests after the
    /// server's first answered calls count (N may then be 0); with --fault-times K, at most K
    /// sessions expire (http).
    #[arg(long, value_name = "N")]
    pub expire_session_after: Option<u64>,
    /// Fault: http: the SSE stream of a POSTed request (not initialize) ends after N events, and
    /// before the response; the rest is resumable by GET with Last-Event-ID unless --no-resume.
    /// sse: the SSE stream ends after N events (the endpoint event counts) and the session with it.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..))]
    pub drop_sse_after: Option<u64>,
}

/// The legacy transport's `endpoint` event (`sse`, and `http --legacy-sse-at-same-url`).
#[derive(Debug, Clone, Default, Args)]
pub struct EndpointOptions {
    /// Fault: the endpoint event names this origin instead of a relative URL, e.g.
    /// `http://evil.example:1` gives `http://evil.example:1/messages?sessionId=…`.
    #[arg(long, value_name = "ORIGIN", value_parser = parse_origin, conflicts_with = "endpoint_absolute")]
    pub endpoint_origin: Option<String>,
    /// The endpoint event carries an absolute URL on this server
    /// (`http://127.0.0.1:PORT/messages?sessionId=…`) instead of a relative one.
    #[arg(long)]
    pub endpoint_absolute: bool,
}

/// Options of `plexus-testserver http` (Streamable HTTP).
#[derive(Debug, Clone, Default, Args)]
#[allow(clippy::struct_excessive_bools)] // one flag per command-line switch.
pub struct HttpOptions {
    /// What the MCP sessions offer and which protocol faults they inject.
    #[command(flatten)]
    pub server: ServerOptions,
    /// Process-level faults and test aids.
    #[command(flatten)]
    pub process: ProcessOptions,
    /// Where the server listens, and the HTTP-level faults.
    #[command(flatten)]
    pub remote: RemoteOptions,
    /// Session faults.
    #[command(flatten)]
    pub sessions: SessionOptions,
    /// The endpoint event of `--legacy-sse-at-same-url`.
    #[command(flatten)]
    pub endpoint: EndpointOptions,
    /// Bearer-token protection of the endpoint and the built-in authorization server.
    #[command(flatten)]
    pub oauth: OAuthOptions,
    /// Answer each POSTed request with one `application/json` body instead of an SSE stream;
    /// messages related to it then go to the GET stream.
    #[arg(long)]
    pub json_response: bool,
    /// Answer GET without Last-Event-ID with 405: no standalone server-to-client stream.
    #[arg(long)]
    pub no_get_stream: bool,
    /// Answer DELETE with 405: clients cannot end their sessions.
    #[arg(long)]
    pub no_delete: bool,
    /// Refuse GET with Last-Event-ID (400): events a client missed are lost.
    #[arg(long)]
    pub no_resume: bool,
    /// The SSE stream of a POSTed request (not initialize) sends its priming event with
    /// `retry: MS` and then ends; the client gets the rest by GET with Last-Event-ID.
    #[arg(long, value_name = "MS", value_parser = value_parser!(u64).range(0..=MAX_DELAY_MS), conflicts_with = "json_response")]
    pub sse_retry_ms: Option<u64>,
    /// Fault: the SSE stream of a POSTed request (not initialize) carries, right after its priming
    /// event, an event whose data is a `notifications/message` of exactly BYTES bytes.
    #[arg(long, value_name = "BYTES", value_parser = value_parser!(u64).range(crate::faults::MIN_OVERSIZE_BYTES as u64..=crate::faults::MAX_FAULT_BYTES as u64).map(|n| n as usize), conflicts_with = "json_response")]
    pub oversize_event: Option<usize>,
    /// Fault: read a tools/call POST, run the call, wait MS milliseconds, then close the connection
    /// without answering: the call ran, its result is lost. With --close-from-call N, from the N-th
    /// tools/call on; with --fault-times K, only K calls are hit.
    #[arg(long, value_name = "MS", value_parser = value_parser!(u64).range(0..=MAX_DELAY_MS))]
    pub close_after_request_ms: Option<u64>,
    /// With --close-after-request-ms: the first tools/call (1-based, counted over all sessions) it
    /// hits [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..), requires = "close_after_request_ms")]
    pub close_from_call: Option<u64>,
    /// Answer every initialize POST (and every POST of the stateless era, which such a server
    /// does not know) with this status (e.g. 400, 404, 405) and a short body, so that a client
    /// falls back to the legacy transport.
    #[arg(long, value_name = "CODE", value_parser = value_parser!(u16).range(400..=599))]
    pub http_status_on_initialize: Option<u16>,
    /// Serve the legacy HTTP+SSE transport at the endpoint too: GET opens its SSE stream (whose
    /// endpoint event names /messages?sessionId=…) and initialize POSTs (and those of the
    /// stateless era) get 405 (or --http-status-on-initialize), as an old server would.
    #[arg(long)]
    pub legacy_sse_at_same_url: bool,
}

/// Options of `plexus-testserver sse` (the legacy HTTP+SSE transport of 2024-11-05).
#[derive(Debug, Clone, Default, Args)]
pub struct SseOptions {
    /// What the MCP sessions offer and which protocol faults they inject.
    #[command(flatten)]
    pub server: ServerOptions,
    /// Process-level faults and test aids.
    #[command(flatten)]
    pub process: ProcessOptions,
    /// Where the server listens, and the HTTP-level faults.
    #[command(flatten)]
    pub remote: RemoteOptions,
    /// Session faults.
    #[command(flatten)]
    pub sessions: SessionOptions,
    /// The endpoint event.
    #[command(flatten)]
    pub endpoint: EndpointOptions,
    /// Bearer-token protection of the endpoints and the built-in authorization server.
    #[command(flatten)]
    pub oauth: OAuthOptions,
}

/// Options of `plexus-testserver ws` (WebSocket, subprotocol `mcp`).
#[derive(Debug, Clone, Default, Args)]
pub struct WsOptions {
    /// What the MCP sessions offer and which protocol faults they inject.
    #[command(flatten)]
    pub server: ServerOptions,
    /// Process-level faults and test aids.
    #[command(flatten)]
    pub process: ProcessOptions,
    /// Where the server listens, and the HTTP-level faults.
    #[command(flatten)]
    pub remote: RemoteOptions,
    /// Fault: accept the upgrade without echoing the subprotocol `mcp`.
    #[arg(long)]
    pub no_subprotocol: bool,
}

/// A header that every request must carry (`--require-header 'Name: value'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredHeader {
    /// The header name, lowercase.
    pub name: String,
    /// The exact value.
    pub value: String,
}

impl FromStr for RequiredHeader {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| format!("{text:?} is not of the form 'Name: value'"))?;
        let name = hyper::header::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("{:?} is not a valid header name", name.trim()))?;
        let value = value.trim();
        hyper::header::HeaderValue::from_str(value).map_err(|_| format!("{value:?} is not a valid header value"))?;
        Ok(RequiredHeader {
            name: name.as_str().to_owned(),
            value: value.to_owned(),
        })
    }
}

impl fmt::Display for RequiredHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.value)
    }
}

/// `--reject-large-body BYTES[:STATUS]`: the largest body let through, and the status that
/// refuses a larger one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejectLargeBody {
    /// The largest `Content-Length` let through.
    pub bytes: u64,
    /// The status a larger one gets (400–599; default 413).
    pub status: u16,
}

impl FromStr for RejectLargeBody {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (bytes, status) = match text.split_once(':') {
            Some((bytes, status)) => (bytes, Some(status)),
            None => (text, None),
        };
        let bytes = bytes
            .trim()
            .parse()
            .map_err(|_| format!("{bytes:?} is not a number of bytes"))?;
        let status = match status {
            None => 413,
            Some(status) => match status.trim().parse() {
                Ok(code @ 400..=599) => code,
                _ => return Err(format!("{status:?} is not an error status (400 to 599)")),
            },
        };
        Ok(RejectLargeBody { bytes, status })
    }
}

/// Checks an endpoint path: absolute, at most 1024 bytes, no query, fragment, space or control
/// character.
pub(crate) fn parse_path(path: &str) -> Result<String, PathProblem> {
    if !path.starts_with('/') {
        return Err(PathProblem::NotAbsolute { path: path.to_owned() });
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathProblem::TooLong {
            len: path.len(),
            max: MAX_PATH_BYTES,
        });
    }
    if let Some(character) = path
        .chars()
        .find(|c| matches!(c, '?' | '#') || c.is_whitespace() || c.is_control())
    {
        return Err(PathProblem::Character {
            path: path.to_owned(),
            character,
        });
    }
    Ok(path.to_owned())
}

/// Checks an origin for `--endpoint-origin`: `http://` or `https://`, then a host, no path; a
/// trailing `/` is dropped.
pub(crate) fn parse_origin(origin: &str) -> Result<String, String> {
    let origin = origin.strip_suffix('/').unwrap_or(origin);
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .ok_or_else(|| format!("{origin:?} does not start with http:// or https://"))?;
    if rest.is_empty() || rest.contains(['/', '?', '#']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{origin:?} is not an origin (scheme://host[:port], no path)"));
    }
    Ok(origin.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_headers_parse_and_name_what_is_wrong() {
        let header: RequiredHeader = "Authorization: Bearer abc ".parse().unwrap();
        assert_eq!(
            header,
            RequiredHeader {
                name: "authorization".into(),
                value: "Bearer abc".into()
            }
        );
        assert_eq!(header.to_string(), "authorization: Bearer abc");
        assert_eq!(
            "X-Empty:".parse::<RequiredHeader>().unwrap().value,
            "",
            "an empty value is a value"
        );
        assert_eq!(
            "no colon".parse::<RequiredHeader>().unwrap_err(),
            "\"no colon\" is not of the form 'Name: value'"
        );
        assert_eq!(
            "bad name: x".parse::<RequiredHeader>().unwrap_err(),
            "\"bad name\" is not a valid header name"
        );
    }

    #[test]
    fn reject_large_body_takes_bytes_and_an_optional_status() {
        assert_eq!(
            "1000".parse::<RejectLargeBody>().unwrap(),
            RejectLargeBody {
                bytes: 1000,
                status: 413
            }
        );
        assert_eq!(
            "10:401".parse::<RejectLargeBody>().unwrap(),
            RejectLargeBody { bytes: 10, status: 401 }
        );
        assert_eq!(
            "x:401".parse::<RejectLargeBody>().unwrap_err(),
            "\"x\" is not a number of bytes"
        );
        assert_eq!(
            "10:200".parse::<RejectLargeBody>().unwrap_err(),
            "\"200\" is not an error status (400 to 599)"
        );
    }

    #[test]
    fn paths_and_origins_are_checked() {
        assert_eq!(parse_path("/a/b").unwrap(), "/a/b");
        assert_eq!(
            parse_path("mcp").unwrap_err(),
            PathProblem::NotAbsolute { path: "mcp".into() }
        );
        assert_eq!(
            parse_path("mcp").unwrap_err().to_string(),
            "\"mcp\" does not start with '/'"
        );
        assert_eq!(
            parse_path("/a?b").unwrap_err().to_string(),
            "\"/a?b\" contains '?', which a path cannot hold here"
        );
        assert_eq!(
            parse_path(&format!("/{}", "a".repeat(1024))).unwrap_err(),
            PathProblem::TooLong { len: 1025, max: 1024 }
        );
        assert_eq!(parse_origin("http://evil.example:1/").unwrap(), "http://evil.example:1");
        assert_eq!(
            parse_origin("ftp://x").unwrap_err(),
            "\"ftp://x\" does not start with http:// or https://"
        );
        assert_eq!(
            parse_origin("http://x/messages").unwrap_err(),
            "\"http://x/messages\" is not an origin (scheme://host[:port], no path)"
        );
    }
}
