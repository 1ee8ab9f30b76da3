//! The life of every MCP connection: memoized single-flight connects within sliding connect
//! windows, server states and events, LRU list caches with invalidation, the
//! three-terminal-errors rule, reconnection and shutdown.
//!
//! A host gives a [`Pool`] its servers ([`ServerSpec`]s, read from config) and a [`Connector`]
//! that connects one (the `plexus` facade's default connector maps every server kind to its
//! transport and auth; the pool never touches a transport). The pool then:
//!
//! - starts every server that may run in the background, at most 3 local (stdio) and 20 remote
//!   at once, each window sliding: a slow server holds back no other
//!   ([`PoolSettings::local_connects`], `MCP_SERVER_CONNECTION_BATCH_SIZE`;
//!   [`PoolSettings::remote_connects`], `MCP_REMOTE_SERVER_CONNECTION_BATCH_SIZE`);
//! - keeps one connection per server, keyed by its cache key (name + canonical entry): any
//!   number of concurrent [`ensure_connected`](Pool::ensure_connected) calls share one connect,
//!   and a changed entry gets a new connection while the old one is closed;
//! - tells every state change ([`ServerStatus`]: pending, connecting, connected, failed,
//!   needs-auth, disabled) and list change as a [`PoolEvent`]; a host waits for readiness with a
//!   budget ([`Pool::wait_ready`]), a server that connects later joins with
//!   [`PoolEvent::Joined`], and an entry with `"required": true` fails the wait when it cannot
//!   connect;
//! - caches tools, resources, resource templates and prompts per server (an LRU of 20 servers
//!   each), following every page; a `list_changed` notification or a lost connection
//!   invalidates, a fetch that began before an invalidation never writes its result, and a
//!   failed refresh serves the last good list;
//! - takes a connection as lost when the peer goes away, the session expires, a liveness ping
//!   fails ([`PoolSettings::ping_interval`], off by default) or 3 terminal I/O failures in a row
//!   (ECONNRESET, ETIMEDOUT, EPIPE, …) hit a remote transport; every cache of the server goes
//!   with it. A remote server is then reconnected: at once, then with backoff (1 s doubling,
//!   jitter; 5 attempts in all,
//!   then `failed` until asked again); a stdio server is restarted on demand only, and not at
//!   all once it died 3 times within a minute, until [`Pool::reconnect`]; a server that needs a
//!   login is not tried again within its needs-auth time;
//! - closes everything at once on [`Pool::shutdown`].
//!
//! Dependencies: `async-trait` for the object-safe [`Connector`] trait, `dashmap` for the
//! connection map, `lru` for the list caches, `foldhash` as the hasher of both (every tool
//! call looks a server up in each), `getrandom` for the backoff's jitter.
#![forbid(unsafe_code)]

mod cache;
mod connect;
mod connector;
mod error;
mod lists;
mod pool;
mod restart;
mod settings;
mod slot;
mod state;
mod sync;
pub mod text;

pub use connector::{Admission, ConnectFailure, Connection, Connector, ServerSpec, SharedError};
pub use error::{ConnectionLost, LossKind, PoolError};
pub use pool::{Pool, Readiness};
pub use restart::{RestartPolicy, Supervisor};
pub use settings::{LIST_CACHE_VAR, LOCAL_BATCH_VAR, PING_INTERVAL_VAR, PoolSettings, REMOTE_BATCH_VAR};
pub use state::{ListKind, PoolEvent, ServerState, ServerStatus};
