//! Which protocol era a session speaks: the `initialize` handshake, or the stateless 2026-07-28
//! revision (every request carries its `_meta` envelope), chosen per server by probing with
//! `server/discover` as the revision's backward-compatibility rules say:
//!
//! - a `DiscoverResult` offering a stateless version we speak: the stateless era;
//! - -32022 (unsupported protocol version) whose `data.supported` names one we speak: the probe
//!   is sent again at that version (once; never a fall back to `initialize`);
//! - any other error, or no answer within the probe timeout: the `initialize` handshake, on the
//!   same connection (the fallback keys on no single error code); a handshake then refused with
//!   -32022 means that the probe's answer was only late (a server of both eras that was still
//!   starting read the probe first and now serves the stateless era): the probe is asked again,
//!   waiting as long as a handshake;
//! - the connection closing (a stdio server that exits on the probe): [`ClientError::ProbeClosed`],
//!   so that whoever owns the transport starts the server again for the `initialize` era;
//! - over Streamable HTTP, an error status whose body is a JSON-RPC error is that error (as
//!   above), and one with an empty or other body means the `initialize` era; -32020 (header
//!   mismatch) and -32021 (a client capability the server needs) fail the connect; 401 and 403
//!   stay on the auth path, and a connection that fails fails the connect (none of these says
//!   anything of the era).
//!
//! The probe's request carries the envelope and, over HTTP, the revision's headers, with the
//! version it tries in both.

use std::sync::Arc;
use std::time::Duration;

use plexus_protocol::envelope::RequestEnvelope;
use plexus_protocol::errors::{
    HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION, UnsupportedVersionData,
};
use plexus_protocol::{DiscoverResult, Implementation, ProtocolVersion, methods};
use plexus_transport::TransportError;

use crate::ClientError;
use crate::client::{ClientOptions, ServerDetails, decode_result, initialize};
use crate::request::{RequestOptions, request_on};
use crate::session::Shared;
use crate::wire::StatelessWire;

/// How long a probe waits for an answer before the server is taken for one of the `initialize`
/// era that drops what it does not know: about a second, as the revision suggests (a silent
/// server costs no more than this, once; the verdict can be remembered).
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Which era a session speaks, or how it is chosen ([`ClientOptions::era`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraChoice {
    /// The `initialize` handshake, offering [`ClientOptions::protocol_version`] (no probe).
    Initialize,
    /// The stateless revision at this version, with no fall back: a server that does not speak
    /// it fails the connect.
    Stateless(ProtocolVersion),
    /// The `initialize` handshake because a probe of this server already decided on it (a
    /// stdio server that exited on the probe, started again); reported as the probe's verdict.
    InitializeAfterProbe,
    /// Probe with `server/discover` and speak what the server answers (see the module docs),
    /// waiting at most `probe_timeout` for the probe's answer. The default, as the revision's
    /// backward-compatibility rules ask of a client: [`EraChoice::PROBE`].
    Probe {
        /// How long the probe waits.
        probe_timeout: Duration,
    },
    /// What an earlier probe of this server settled on (the host remembered it, as the Hub does
    /// in its plexus home), tried first: a server of the `initialize` era gets the handshake at
    /// once (no probe), a stateless one its `server/discover` at that version (which a stateless
    /// session sends anyway). A server that contradicts it (upgraded or downgraded since) is
    /// probed on the spot, with no failure: the session then says [`EraSource::Probe`], and the
    /// host remembers the new verdict.
    Remembered {
        /// The version the earlier probe settled on (of either era).
        version: ProtocolVersion,
        /// How long a probe waits, when one is needed.
        probe_timeout: Duration,
    },
}

impl Default for EraChoice {
    fn default() -> Self {
        EraChoice::PROBE
    }
}

impl EraChoice {
    /// A probe with [`DEFAULT_PROBE_TIMEOUT`].
    pub const PROBE: EraChoice = EraChoice::Probe {
        probe_timeout: DEFAULT_PROBE_TIMEOUT,
    };
}

/// How the session's era was chosen ([`ServerDetails::era_source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EraSource {
    /// The configuration named it (no probe was sent).
    Pinned,
    /// A `server/discover` probe decided.
    Probe,
    /// A verdict remembered from an earlier probe decided, and the server agreed.
    Cache,
}

impl EraSource {
    /// `"pinned"`, `"probe"` or `"cache"` (as `plexus servers --json` shows it).
    pub const fn as_str(self) -> &'static str {
        match self {
            EraSource::Pinned => "pinned",
            EraSource::Probe => "probe",
            EraSource::Cache => "cache",
        }
    }
}

/// Starts the session as `choice` says.
pub(crate) async fn start(shared: &Arc<Shared>, options: &ClientOptions) -> Result<ServerDetails, ClientError> {
    match options.era {
        EraChoice::Initialize => initialize(shared, options, EraSource::Pinned).await,
        EraChoice::InitializeAfterProbe => initialize(shared, options, EraSource::Probe).await,
        EraChoice::Stateless(version) => pinned(shared, options, version).await,
        EraChoice::Probe { probe_timeout } => {
            probe(shared, options, probe_timeout, ProtocolVersion::LATEST_STATELESS).await
        }
        EraChoice::Remembered { version, probe_timeout } if version.is_stateless() => {
            let mut details = probe(shared, options, probe_timeout, version).await?;
            if details.protocol_version.is_stateless() {
                details.era_source = EraSource::Cache;
            }
            Ok(details)
        }
        EraChoice::Remembered { probe_timeout, .. } => match initialize(shared, options, EraSource::Cache).await {
            Err(error) if refuses_handshake(&error) => {
                tracing::debug!(
                    server = %shared.name,
                    "the server refused the handshake that an earlier probe settled on ({error}): probing again"
                );
                probe(shared, options, probe_timeout, ProtocolVersion::LATEST_STATELESS).await
            }
            other => other,
        },
    }
}

/// Whether `error` of an `initialize` is a server's refusal of the handshake (a server of the
/// stateless revision only): a JSON-RPC error, or over HTTP an error status that is not about
/// authentication.
fn refuses_handshake(error: &ClientError) -> bool {
    matches!(
        error,
        ClientError::Rpc { .. }
            | ClientError::Transport(TransportError::Http {
                status: 400 | 404 | 405,
                ..
            })
    )
}

/// The stateless era at `version`, with no fall back; a server that answers -32022 naming a
/// stateless version we share is asked once more at that version.
async fn pinned(
    shared: &Arc<Shared>,
    options: &ClientOptions,
    version: ProtocolVersion,
) -> Result<ServerDetails, ClientError> {
    let timeout = options.initialize_timeout;
    let (discovered, version) = match discover(shared, options, version, timeout).await {
        Err(ClientError::Rpc { method, error }) if error.code == UNSUPPORTED_PROTOCOL_VERSION => {
            let Some(mutual) = mutual_version(&error) else {
                return Err(ClientError::Rpc { method, error });
            };
            (discover(shared, options, mutual, timeout).await?, mutual)
        }
        other => (other?, version),
    };
    Ok(stateless_details(
        discovered,
        shared,
        options,
        version,
        EraSource::Pinned,
    ))
}

/// The stateless version we share with a server that answered -32022, from its `data.supported`.
fn mutual_version(error: &plexus_jsonrpc::ErrorObject) -> Option<ProtocolVersion> {
    UnsupportedVersionData::from_error(error).ok()?.choose_version().ok()
}

/// The probe (see the module docs), first at `version`.
async fn probe(
    shared: &Arc<Shared>,
    options: &ClientOptions,
    timeout: Duration,
    mut version: ProtocolVersion,
) -> Result<ServerDetails, ClientError> {
    let mut retried = false;
    loop {
        match discover(shared, options, version, timeout).await {
            Ok(discovered) => match discovered.choose_version() {
                Ok(chosen) => return Ok(stateless_details(discovered, shared, options, chosen, EraSource::Probe)),
                // A discover that offers no stateless version we speak (a server of both eras
                // whose stateless side is newer or older than ours): the handshake.
                Err(_) => break,
            },
            Err(ClientError::Rpc { error, .. }) if error.code == UNSUPPORTED_PROTOCOL_VERSION && !retried => {
                match mutual_version(&error) {
                    Some(mutual) => {
                        retried = true;
                        version = mutual;
                    }
                    // No stateless version in common: the server may still speak the handshake.
                    None => break,
                }
            }
            // A modern server's answer that it cannot take the request as it is (its headers, a
            // capability it needs): never a reason to speak the handshake to it.
            Err(ClientError::Rpc { error, .. })
                if matches!(error.code, HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY) =>
            {
                return Err(ClientError::Rpc {
                    method: methods::SERVER_DISCOVER.to_owned(),
                    error,
                });
            }
            // An HTTP error status without a JSON-RPC error (an empty or other body): what a
            // server of the initialize era answers a request outside a session.
            Err(ClientError::Transport(TransportError::Http { status, .. })) => {
                tracing::debug!(server = %shared.name, "the server/discover probe got HTTP {status}: the initialize era");
                break;
            }
            // A stream transport that closed: a server that exits on what it does not know.
            Err(ClientError::Transport(source)) if source.is_terminal() && !shared.sender.carries_headers() => {
                return Err(ClientError::ProbeClosed { source });
            }
            // Over HTTP a failed connection, or a refused login, says nothing of the era.
            Err(error @ ClientError::Transport(_)) if shared.sender.carries_headers() => return Err(error),
            Err(ClientError::SessionClosed) => return Err(ClientError::SessionClosed),
            // Any other answer, or none in time: a server of the initialize era.
            Err(other) => {
                tracing::debug!(server = %shared.name, "the server/discover probe got {other}: the initialize era");
                break;
            }
        }
    }
    match initialize(shared, options, EraSource::Probe).await {
        // The probe's answer was late (a server still starting when the probe timed out): a
        // server of both eras read it first and now serves the stateless era on this
        // connection, so it refuses the handshake with -32022. Asked once more, it says so.
        Err(ClientError::Rpc { method, error }) if error.code == UNSUPPORTED_PROTOCOL_VERSION => {
            tracing::debug!(
                server = %shared.name,
                "the server refused initialize with -32022 after the probe: asking server/discover again"
            );
            let version = mutual_version(&error).unwrap_or(ProtocolVersion::LATEST_STATELESS);
            match discover(shared, options, version, options.initialize_timeout).await {
                Ok(discovered) => match discovered.choose_version() {
                    Ok(chosen) => Ok(stateless_details(discovered, shared, options, chosen, EraSource::Probe)),
                    Err(_) => Err(ClientError::Rpc { method, error }),
                },
                Err(_) => Err(ClientError::Rpc { method, error }),
            }
        }
        other => other,
    }
}

/// Sends `server/discover` at `version`, waiting at most `timeout` (and never cancelling it: a
/// server of the initialize era must not see a cancellation before `initialize`).
async fn discover(
    shared: &Arc<Shared>,
    options: &ClientOptions,
    version: ProtocolVersion,
    timeout: Duration,
) -> Result<DiscoverResult, ClientError> {
    let wire = wire_of(shared, options, version)?;
    let raw = request_on::<()>(
        shared,
        Some(&wire),
        methods::SERVER_DISCOVER,
        None,
        &RequestOptions::with_timeout(timeout),
        timeout,
        false,
    )
    .await?;
    decode_result(methods::SERVER_DISCOVER, &raw)
}

/// What every message of a stateless session at `version` carries.
fn wire_of(shared: &Shared, options: &ClientOptions, version: ProtocolVersion) -> Result<StatelessWire, ClientError> {
    let mut capabilities = options.handler.capabilities();
    // Every call follows a task the server makes of it (see `crate::tasks`).
    let extensions = capabilities
        .extra
        .entry("extensions")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    if let Some(extensions) = extensions.as_object_mut() {
        extensions
            .entry(plexus_protocol::TASKS_EXTENSION)
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    }
    let envelope = RequestEnvelope::new(version, capabilities).with_client_info(options.client_info.clone());
    StatelessWire::new(&envelope, version, shared.sender.carries_headers()).map_err(|e| ClientError::InvalidParams {
        method: methods::SERVER_DISCOVER.to_owned(),
        source: crate::error::ParamsProblem::Envelope(Arc::new(e)),
    })
}

/// The session's details from `discovered`, speaking `version`: from now on every request
/// carries the envelope of that version.
fn stateless_details(
    discovered: DiscoverResult,
    shared: &Arc<Shared>,
    options: &ClientOptions,
    version: ProtocolVersion,
    source: EraSource,
) -> ServerDetails {
    match wire_of(shared, options, version) {
        Ok(wire) => shared.set_stateless(wire),
        Err(e) => tracing::warn!(server = %shared.name, "the request envelope cannot be written: {e}"),
    }
    let server_info = discovered
        .server_info()
        .ok()
        .flatten()
        .unwrap_or_else(|| Implementation::new(shared.name.clone(), String::new()));
    ServerDetails {
        protocol_version: version,
        server_info,
        capabilities: discovered.capabilities,
        instructions: discovered.instructions,
        era_source: source,
    }
}
