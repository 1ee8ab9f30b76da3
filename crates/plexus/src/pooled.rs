//! The default connector as the pool's [`Connector`](plexus_pool::Connector): a connect error
//! classified for the pool's decisions.

use std::sync::Arc;

use plexus_client::{ClientError, ClientOptions};
use plexus_pool::{ConnectFailure, Connection, ServerSpec};
use plexus_transport::TransportError;

use crate::{ConnectError, DefaultConnector};

#[async_trait::async_trait]
impl plexus_pool::Connector for DefaultConnector {
    async fn connect(&self, server: &ServerSpec, options: ClientOptions) -> Result<Connection, ConnectFailure> {
        match self
            .connect_in_scope(&server.name, &server.config, server.scope, options)
            .await
        {
            Ok(connected) => Ok(Connection {
                client: connected.client,
                note: connected.fallback,
            }),
            Err(error) => Err(classify(error)),
        }
    }

    /// The session options from the connector's environment (not the process's, unless the
    /// connector was made with it).
    fn client_options(&self, server: &ServerSpec) -> ClientOptions {
        let options = ClientOptions::from_lookup(&server.name, |name| self.env().get(name));
        match self.handler() {
            Some(handler) => options.handler(Arc::clone(handler)),
            None => options,
        }
    }
}

/// How the pool should take a failed connect: a login needed (with the needs-auth cache's
/// remaining time), a disabled entry, a failure that trying again may fix (the transport or
/// the handshake), or one it cannot (a kind this build lacks, credentials that cannot be had).
pub fn classify(error: ConnectError) -> ConnectFailure {
    if let ConnectError::Disabled { .. } = &error {
        return ConnectFailure::Disabled { reason: error.reason() };
    }
    if error.needs_auth() {
        let retry_in = match &error {
            ConnectError::NeedsAuth { retry_in, .. } => Some(*retry_in),
            _ => None,
        };
        return ConnectFailure::NeedsAuth {
            error: Arc::new(error),
            retry_in,
        };
    }
    let (stderr_tail, transient) = match &error {
        ConnectError::Client {
            source: ClientError::Transport(TransportError::Closed { stderr_tail, .. }),
            ..
        } => (stderr_tail.clone(), true),
        ConnectError::Client { .. } => (None, true),
        _ => (None, false),
    };
    ConnectFailure::Failed {
        error: Arc::new(error),
        stderr_tail,
        transient,
    }
}
