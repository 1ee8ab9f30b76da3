//! What every remote MCP transport (legacy SSE, Streamable HTTP, WebSocket) and OAuth share: the HTTP client and its settings, credentials and challenge handling, header checks, redaction, the bounded SSE decoder and the TLS configuration.
//!
//! The transports keep only what is theirs (how they frame messages on the wire); everything
//! about talking to a remote server that they have in common is here, written once:
//! - [`http`]: the HTTP client (hyper's client connections, pooled per origin; HTTP/2 by ALPN)
//!   and the settings every remote request shares: proxies, TLS roots and client certificates,
//!   compression, the connect timeout, TCP keepalive, the same-origin redirect rule; and the
//!   connection a WebSocket upgrade runs over.
//! - [`Credentials`]: the configured headers with the [`AuthProvider`]'s on top, and the one path
//!   a 401 or 403 takes ([`rejection_of`] → [`Credentials::rejected`]: ask the provider, retry,
//!   or fail with the error that says why); [`StaticHeaders`], the provider of fixed headers.
//! - [`challenge`]: `WWW-Authenticate` parsing and the DPoP nonce of an answer.
//! - [`endpoint`]: the same-origin rule, and the legacy SSE `endpoint` event resolved under it.
//! - [`headers`]: header checks and merging; [`redact`]: URLs and headers as logs and errors show
//!   them; [`connect_error`] and [`require_scheme`]: errors that name the server's URL so.
//! - [`sse`]: the bounded `text/event-stream` decoder (our own: `eventsource-stream` has no size
//!   cap).
//! - [`tls`]: the one rustls client configuration (with the entry's CA and client certificate).
//! - [`RemoteEndpoint`]: what every remote transport's configuration has (name, URL, headers,
//!   auth, TLS, proxy, connect timeout, message size cap), with its setters written once
//!   ([`RemoteConfig`]); [`setters!`] writes the setters of a configuration's other fields.
//!
//! Dependencies: `hyper` (client connections, HTTP/1.1 and HTTP/2, the `CONNECT` upgrade) with
//! `hyper-util` (tokio adapters, the proxy matcher that reads the environment as curl does) and
//! `http-body-util`; `http` for header maps; `tokio` and `tokio-rustls` for sockets and TLS, with
//! `rustls` and `rustls-platform-verifier` (no OpenSSL; the platform's roots); `socket2` for TCP
//! keepalive; `atomic-waker` for the lock-free waker of connections their caller drives;
//! `async-compression` to decode gzip, br and deflate bodies; `tokio-util` (a
//! cancellation token, the body reader of the decoders), `bytes`, `futures-core`, `url`,
//! `tracing`, and `thiserror` for the error types.
//!
//! [`AuthProvider`]: plexus_transport::AuthProvider
#![forbid(unsafe_code)]

pub mod challenge;
mod credentials;
pub mod endpoint;
pub mod headers;
pub mod http;
pub mod redact;
mod remote;
mod setters;
pub mod sse;
mod target;
pub mod tls;
#[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
mod tls_roots;

pub use credentials::{Credentials, StaticHeaders, rejection_of};
pub use remote::{DEFAULT_CONNECT_TIMEOUT, RemoteConfig, RemoteEndpoint};
pub use target::{ConnectProblem, connect_error, peer_of, require_scheme};
