//! The MCP duration histograms, recorded only once a host handed plexus a meter
//! ([`install_metrics`]): until then no attribute is built and nothing is recorded.

use std::sync::{Arc, RwLock};

use opentelemetry::metrics::{Histogram, Meter};

/// `mcp.client.operation.duration`: a request, from sending it to its response.
pub const CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// `mcp.client.session.duration`: a session, from its start to its close.
pub const CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";
/// `mcp.server.operation.duration`: a request served, from receiving it to its response.
pub const SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// `mcp.server.session.duration`: a client's session with a server.
pub const SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";

/// The bucket boundaries (seconds) the conventions give every MCP duration histogram.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The four histograms, in seconds.
pub(crate) struct Instruments {
    pub(crate) client_operation: Histogram<f64>,
    pub(crate) client_session: Histogram<f64>,
    pub(crate) server_operation: Histogram<f64>,
    pub(crate) server_session: Histogram<f64>,
}

/// The instruments in use, once installed.
static INSTRUMENTS: RwLock<Option<Arc<Instruments>>> = RwLock::new(None);

/// Records the MCP duration histograms with `meter` from now on (a host calls it once, with
/// its meter provider's meter; the facade's OTLP installer does): `mcp.client.operation.duration`,
/// `mcp.client.session.duration`, `mcp.server.operation.duration` and
/// `mcp.server.session.duration`, in seconds, with the conventions' bucket boundaries. Calling
/// it again replaces the meter.
pub fn install_metrics(meter: &Meter) {
    let histogram = |name: &'static str, description: &'static str| {
        meter
            .f64_histogram(name)
            .with_unit("s")
            .with_description(description)
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build()
    };
    let instruments = Instruments {
        client_operation: histogram(
            CLIENT_OPERATION_DURATION,
            "The duration of an MCP request as observed on the client, from sending it until its response.",
        ),
        client_session: histogram(
            CLIENT_SESSION_DURATION,
            "The duration of an MCP session as observed on the client.",
        ),
        server_operation: histogram(
            SERVER_OPERATION_DURATION,
            "The duration of an MCP request as observed on the server, from receiving it until its response.",
        ),
        server_session: histogram(
            SERVER_SESSION_DURATION,
            "The duration of an MCP session as observed on the server.",
        ),
    };
    *INSTRUMENTS.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(instruments));
}

/// Stops recording the histograms (a host shutting its meter provider down).
pub fn remove_metrics() {
    *INSTRUMENTS.write().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// The instruments, when installed.
pub(crate) fn instruments() -> Option<Arc<Instruments>> {
    INSTRUMENTS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}
