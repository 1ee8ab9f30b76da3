//! Which protocol era a session speaks: the `initialize` handshake, or the stateless 2026-07-28
//! revision (every request carries its `_meta` envelope), chosen per server by probing with
//! `server/discover` as the revision's backward-compatibility rules say:
//!
//! - a `DiscoverResult` offering a stateless version we speak: the stateless era;
//! - -32022 (unsupported protocol version) whose `data.supported` names one we speak: the probe
//!   is sent again at that version (once; never a fall back to `initialize`);
//! - any other error, or no answer within the probe timeout: the `initialize` handshake, on the
//!   same connection (the fallback keys on no single error code);
//! - the connection closing (a stdio server that exits on the probe): [`ClientError::ProbeClosed`],
//!   so that whoever owns the transport starts the server again for the `initialize` era.

use std::sync::Arc;
use std::time::Duration;

use plexus_protocol::envelope::RequestEnvelope;
use plexus_protocol::errors::{UNSUPPORTED_PROTOCOL_VERSION, UnsupportedVersionData};
use plexus_protocol::{DiscoverResult, Implementation, ProtocolVersion, methods};

use crate::ClientError;
use crate::client::{ClientOptions, ServerDetails, decode_result, initialize};
use crate::request::{RequestOptions, request};
use crate::session::Shared;

/// How long a probe waits for an answer before the server is taken for one of the `initialize`
/// era that drops what it does not know: about a second, as the revision suggests (a silent
/// server costs no more than this, once; the verdict can be remembered).
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Which era a session speaks, or how it is chosen ([`ClientOptions::era`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EraChoice {
    /// The `initialize` handshake, offering [`ClientOptions::protocol_version`] (no probe).
    #[default]
    Initialize,
    /// The stateless revision at this version, with no fall back: a server that does not speak
    /// it fails the connect.
    Stateless(ProtocolVersion),
    /// The `initialize` handshake because a probe of this server already decided on it (a
    /// stdio server that exited on the probe, started again); reported as the probe's verdict.
    InitializeAfterProbe,
    /// Probe with `server/discover` and speak what the server answers (see the module docs),
    /// waiting at most `probe_timeout` for the probe's answer.
    Probe {
        /// How long the probe waits.
        probe_timeout: Duration,
    },
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
}

impl EraSource {
    /// `"pinned"` or `"probe"` (as `plexus servers --json` shows it).
    pub const fn as_str(self) -> &'static str {
        match self {
            EraSource::Pinned => "pinned",
            EraSource::Probe => "probe",
        }
    }
}

/// Starts the session as `choice` says.
pub(crate) async fn start(shared: &Arc<Shared>, options: &ClientOptions) -> Result<ServerDetails, ClientError> {
    match options.era {
        EraChoice::Initialize => initialize(shared, options, EraSource::Pinned).await,
        EraChoice::InitializeAfterProbe => initialize(shared, options, EraSource::Probe).await,
        EraChoice::Stateless(version) => discover(shared, options, version, options.initialize_timeout)
            .await
            .map(|discovered| stateless_details(discovered, shared, options, version, EraSource::Pinned)),
        EraChoice::Probe { probe_timeout } => probe(shared, options, probe_timeout).await,
    }
}

async fn probe(shared: &Arc<Shared>, options: &ClientOptions, timeout: Duration) -> Result<ServerDetails, ClientError> {
    let mut version = ProtocolVersion::LATEST_STATELESS;
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
                match UnsupportedVersionData::from_error(&error).map(|data| data.choose_version()) {
                    Ok(Ok(mutual)) => {
                        retried = true;
                        version = mutual;
                    }
                    // No stateless version in common: the server may still speak the handshake.
                    _ => break,
                }
            }
            Err(ClientError::Transport(source)) if source.is_terminal() => {
                return Err(ClientError::ProbeClosed { source });
            }
            Err(ClientError::SessionClosed) => return Err(ClientError::SessionClosed),
            // Any other answer, or none in time: a server of the initialize era.
            Err(other) => {
                tracing::debug!(server = %shared.name, "the server/discover probe got {other}: the initialize era");
                break;
            }
        }
    }
    initialize(shared, options, EraSource::Probe).await
}

/// Sends `server/discover` at `version`, waiting at most `timeout` (and never cancelling it: a
/// server of the initialize era must not see a cancellation before `initialize`).
async fn discover(
    shared: &Arc<Shared>,
    options: &ClientOptions,
    version: ProtocolVersion,
    timeout: Duration,
) -> Result<DiscoverResult, ClientError> {
    let envelope = envelope_of(options, version);
    let params = envelope
        .envelop(&serde_json::json!({}))
        .map_err(|e| ClientError::InvalidParams {
            method: methods::SERVER_DISCOVER.to_owned(),
            source: crate::error::ParamsProblem::Envelope(Arc::new(e)),
        })?;
    let raw = request(
        shared,
        methods::SERVER_DISCOVER,
        Some(&params),
        &RequestOptions::with_timeout(timeout),
        timeout,
        false,
    )
    .await?;
    decode_result(methods::SERVER_DISCOVER, &raw)
}

/// The envelope every request of a stateless session at `version` carries.
fn envelope_of(options: &ClientOptions, version: ProtocolVersion) -> RequestEnvelope {
    RequestEnvelope::new(version, options.handler.capabilities()).with_client_info(options.client_info.clone())
}

/// The `_meta` entries of `envelope` as JSON text (`"key":value,…`, without braces), spliced
/// into every request's params.
fn envelope_fragment(envelope: &RequestEnvelope) -> Option<Box<str>> {
    let mut meta = serde_json::Map::new();
    envelope.write_to_meta(&mut meta).ok()?;
    let text = serde_json::to_string(&meta).ok()?;
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    (!inner.is_empty()).then(|| inner.into())
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
    if let Some(fragment) = envelope_fragment(&envelope_of(options, version)) {
        shared.set_envelope(fragment);
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
