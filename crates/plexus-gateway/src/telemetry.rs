//! The gateway's side of OpenTelemetry (feature `otel`): each request it serves gets a server
//! span in the MCP semantic conventions, whose parent is the trace context the client put in the
//! request's `params._meta` (the backend requests the gateway sends for it are its children),
//! and the `mcp.server.*` duration histograms. A client's session (an HTTP session of the
//! `initialize` era, or a stdio connection) records its duration when it ends.

use std::sync::OnceLock;

use plexus::client::telemetry::{Connection, Operation, SessionClock};
use plexus::jsonrpc::Request;
use plexus::protocol::{Era, ProtocolVersion};

use crate::era::Route;
use crate::session::Session;

/// What a client's session keeps for telemetry.
#[derive(Debug)]
pub(crate) struct SessionTelemetry {
    /// `pipe` (stdio) or `tcp` (HTTP).
    transport: OnceLock<&'static str>,
    /// The HTTP session's id (the `initialize` era's).
    id: OnceLock<String>,
    /// The version answered to `initialize`.
    version: OnceLock<&'static str>,
    clock: SessionClock,
}

impl SessionTelemetry {
    pub(crate) fn new() -> SessionTelemetry {
        SessionTelemetry {
            transport: OnceLock::new(),
            id: OnceLock::new(),
            version: OnceLock::new(),
            clock: SessionClock::server(),
        }
    }

    /// The session is carried over stdio.
    pub(crate) fn over_pipe(&self) {
        let _ = self.transport.set("pipe");
    }

    /// The session is carried over HTTP, with the session id `id` when it has one.
    pub(crate) fn over_http(&self, id: Option<&str>) {
        let _ = self.transport.set("tcp");
        if let Some(id) = id {
            let _ = self.id.set(id.to_owned());
        }
    }

    /// `initialize` was answered with `version`.
    pub(crate) fn set_version(&self, version: &'static str) {
        let _ = self.version.set(version);
    }

    /// What a request of the session goes over, answered as `route` says.
    fn connection(&self, route: &Result<Route, plexus::jsonrpc::ErrorObject>) -> Connection {
        let stateless = matches!(route, Ok(Route::Stateless(_)));
        let transport = self.transport.get().copied();
        Connection {
            protocol_version: if stateless {
                Some(ProtocolVersion::LATEST_STATELESS.as_str())
            } else {
                self.version.get().copied()
            },
            session_id: if stateless { None } else { self.id.get().cloned() },
            network_transport: transport,
            network_protocol: (transport == Some("tcp")).then_some("http"),
            server: None,
        }
    }

    /// The session ended: its duration is recorded, once, for a session of the `initialize` era.
    pub(crate) fn ended(&self, era: Option<Era>) {
        if era == Some(Era::Initialize) {
            self.clock.end(|| self.connection(&Ok(Route::Initialize)), None);
        }
    }
}

/// The operation of `request`, served in `session` as `route` says (`None` when nothing wants it).
pub(crate) fn serve(
    session: &Session,
    request: &Request,
    route: &Result<Route, plexus::jsonrpc::ErrorObject>,
) -> Option<Operation> {
    Operation::server(
        &request.method,
        &request.id,
        || request.params.as_deref().map(plexus::jsonrpc::RawValue::get),
        || session.telemetry.connection(route),
    )
}
