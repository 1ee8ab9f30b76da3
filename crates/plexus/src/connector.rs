//! The default connector: what authentication needs from its surroundings (the plexus home, the
//! IDE lock directory, the environment), and the connect that uses them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use plexus_client::{Client, ClientError, ClientOptions};
use plexus_config::{DiscoveryOptions, Environment, Scope, ServerConfig, ServerKind};
use plexus_transport::{MAX_MESSAGE_SIZE_VAR, TransportError};

use crate::connect::{ConnectError, Connected, Limits, connect_entry, with_era};
use crate::entry_auth;
use crate::in_process::InProcessServer;
use plexus_client::{EraChoice, EraSource};

/// Connects configured servers: maps every kind to its transport and its auth, and keeps the
/// needs-auth cache of its plexus home.
///
/// | kind (`type`) | transport | auth |
/// |---|---|---|
/// | `stdio` (no `type`) | a child process's stdin and stdout | none |
/// | `sse` | legacy HTTP+SSE | static headers, `headersHelper`, or OAuth |
/// | `http` (`streamable-http`) | Streamable HTTP; legacy HTTP+SSE when the server answers `initialize` with 400, 404 or 405 | static headers, `headersHelper`, or OAuth |
/// | `sse-ide` | legacy HTTP+SSE | the IDE lockfile's token |
/// | `ws-ide` | WebSocket | the IDE token in `X-Claude-Code-Ide-Authorization` |
/// | `ws` | WebSocket (subprotocol `mcp`) | the session ingress token as a bearer |
/// | `claudeai-proxy` | Streamable HTTP | an OAuth bearer, one refresh-and-retry on 401 |
/// | `in-process` (the host's own, never from a file) | an in-memory pipe ([`crate::in_process`]) | none |
///
/// What it holds is what authentication needs from outside the entry:
/// - the **plexus home**: with one, `http` and `sse` entries without credentials of their own
///   (and `claudeai-proxy` entries) authenticate with OAuth 2.1, their tokens in
///   `<home>/credentials.json` (see [`plexus_auth::oauth`]; [`login`](Self::login) gets them), and
///   use the needs-auth cache `<home>/mcp-needs-auth-cache.json` (see
///   [`plexus_auth::needs_auth`]): a connect that fails with "needs authentication" records the
///   server (its name and URL), a successful one clears it, and while the entry is fresh (15
///   minutes) a connect fails at once with [`ConnectError::NeedsAuth`], without contacting the
///   server. The entry is keyed by the server's name and URL, so editing other fields of the
///   entry does not lift it early (a login clears it). Entries with a `headersHelper` or a static
///   `Authorization` header never use the cache: their rejection is a failure that a login would
///   not fix. Without a home there is no cache.
/// - the **IDE lock directory** (`sse-ide`, `ws-ide`): given, else `$PLEXUS_IDE_LOCK_DIR`, else
///   `$HOME/.claude/ide`, looked up in the connector's environment at connect time.
/// - the **environment**: the session ingress token of `ws` entries (`PLEXUS_SESSION_INGRESS_TOKEN`
///   or the file named by `PLEXUS_SESSION_INGRESS_TOKEN_FILE`, read at every connect) and the
///   lock directory's variables.
/// - the **headers helper's timeout** (10 s by default) and the **login timeout** (how long
///   [`login`](Self::login) waits for the browser to come back; 5 minutes by default).
///
/// The token store and the needs-auth cache report the files they had to repair (a corrupt file
/// set aside, a file readable by other users made 0600) into one collection,
/// [`file_warnings`](Self::file_warnings), for the host to show its user.
///
/// How each kind authenticates: `http`/`sse` send their static `headers`, with the
/// `headersHelper`'s output on top when there is one (run at every connect, and once more after
/// a 401 or 403); a rejected static `Authorization` header is a failure, not "needs auth".
/// `ws` sends its `headers` and the session ingress token (`Authorization: Bearer`) when the
/// environment configures one, or its `headersHelper`'s output instead. `sse-ide` sends the IDE
/// lockfile's token, and `ws-ide` its entry's `authToken` or else the lockfile's, both in
/// `X-Claude-Code-Ide-Authorization`. `claudeai-proxy` is Streamable HTTP with the OAuth bearer
/// of the store: refreshed once on a 401, then "needs auth". A connect never starts a login
/// (that is [`login`](Self::login)'s job): a server whose 401 the stored tokens cannot satisfy
/// fails with "needs authentication".
///
/// ```no_run
/// # async fn demo(config: plexus::config::ServerConfig) -> Result<(), plexus::ConnectError> {
/// let connector = plexus::DefaultConnector::from_env();
/// match connector.connect("docs", &config, plexus::ClientOptions::from_env("docs")).await {
///     Ok(client) => drop(client.close().await),
///     Err(e) if e.needs_auth() => eprintln!("docs needs a login: {e}"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DefaultConnector {
    home: Option<PathBuf>,
    /// The home's era verdicts (see [`crate::era_verdicts`]).
    era_verdicts: Option<crate::EraVerdicts>,
    env: Environment,
    handler: Option<Arc<dyn plexus_client::ClientHandler>>,
    /// The host's in-process servers, by entry name.
    in_process: Arc<std::collections::HashMap<String, Arc<dyn InProcessServer>>>,
    #[cfg(feature = "auth")]
    ide_lock_dir: Option<PathBuf>,
    #[cfg(feature = "auth")]
    helper_timeout: Duration,
    #[cfg(feature = "auth")]
    login_timeout: Duration,
    #[cfg(feature = "auth")]
    needs_auth: Option<plexus_auth::NeedsAuthCache>,
    #[cfg(feature = "auth")]
    file_warnings: plexus_auth::FileWarnings,
}

impl fmt::Debug for DefaultConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("DefaultConnector");
        debug
            .field("home", &self.home)
            .field("handler", &self.handler.is_some());
        #[cfg(feature = "auth")]
        debug
            .field("ide_lock_dir", &self.ide_lock_dir)
            .field("helper_timeout", &self.helper_timeout)
            .field("login_timeout", &self.login_timeout);
        debug.finish_non_exhaustive()
    }
}

impl Default for DefaultConnector {
    fn default() -> Self {
        DefaultConnector::new()
    }
}

impl DefaultConnector {
    /// A connector with no plexus home (so no needs-auth cache) that reads the process
    /// environment at connect time.
    pub fn new() -> DefaultConnector {
        DefaultConnector {
            home: None,
            era_verdicts: None,
            env: Environment::process(),
            handler: None,
            in_process: Arc::default(),
            #[cfg(feature = "auth")]
            ide_lock_dir: None,
            #[cfg(feature = "auth")]
            helper_timeout: plexus_auth::DEFAULT_HELPER_TIMEOUT,
            #[cfg(feature = "auth")]
            login_timeout: plexus_auth::oauth::DEFAULT_LOGIN_TIMEOUT,
            #[cfg(feature = "auth")]
            needs_auth: None,
            #[cfg(feature = "auth")]
            file_warnings: plexus_auth::FileWarnings::new(),
        }
    }

    /// The process's connector: [`new`](Self::new) with the plexus home that config discovery
    /// uses (`$PLEXUS_HOME`, else `$HOME/.plexus`; none when neither is set).
    pub fn from_env() -> DefaultConnector {
        let connector = DefaultConnector::new();
        match DiscoveryOptions::from_process(None) {
            Ok(options) => connector.with_home(options.home),
            Err(_) => connector,
        }
    }

    /// Uses the plexus home `home` (its needs-auth cache and its era verdicts).
    #[must_use]
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> DefaultConnector {
        let home = home.into();
        self.era_verdicts = Some(crate::EraVerdicts::new(&home));
        #[cfg(feature = "auth")]
        {
            self.needs_auth = Some(plexus_auth::NeedsAuthCache::new(&home).with_warnings(self.file_warnings.clone()));
        }
        self.home = Some(home);
        self
    }

    /// Looks environment variables up in `env` instead of the process environment.
    #[must_use]
    pub fn with_env(mut self, env: Environment) -> DefaultConnector {
        self.env = env;
        self
    }

    /// Answers the servers' requests (roots, sampling, elicitation) with `handler`, whose
    /// capabilities every session the pool opens declares; by default none is declared.
    #[must_use]
    pub fn with_handler(mut self, handler: Arc<dyn plexus_client::ClientHandler>) -> DefaultConnector {
        self.handler = Some(handler);
        self
    }

    /// Connects the [`in-process`](plexus_config::ServerKind::InProcess) entry named `name`
    /// to `server` (see [`crate::in_process`]).
    #[must_use]
    pub fn with_in_process(mut self, name: impl Into<String>, server: Arc<dyn InProcessServer>) -> DefaultConnector {
        Arc::make_mut(&mut self.in_process).insert(name.into(), server);
        self
    }

    /// The handler of the servers' requests, if one was given.
    pub fn handler(&self) -> Option<&Arc<dyn plexus_client::ClientHandler>> {
        self.handler.as_ref()
    }

    /// Reads IDE lockfiles from `dir` instead of the default lock directory.
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn with_ide_lock_dir(mut self, dir: impl Into<PathBuf>) -> DefaultConnector {
        self.ide_lock_dir = Some(dir.into());
        self
    }

    /// Gives headers helpers `timeout` to finish instead of 10 s.
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn with_helper_timeout(mut self, timeout: Duration) -> DefaultConnector {
        self.helper_timeout = timeout;
        self
    }

    /// Gives [`login`](Self::login) `timeout` to receive the authorization response instead of
    /// 5 minutes ([`DEFAULT_LOGIN_TIMEOUT`](plexus_auth::oauth::DEFAULT_LOGIN_TIMEOUT)); it
    /// becomes every OAuth provider's [`login_timeout`](plexus_auth::OAuthSettings::login_timeout).
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn with_login_timeout(mut self, timeout: Duration) -> DefaultConnector {
        self.login_timeout = timeout;
        self
    }

    /// Uses `cache` as the needs-auth cache (for example one with its own clock), whatever the
    /// home; its warnings go to [`file_warnings`](Self::file_warnings).
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn with_needs_auth_cache(mut self, cache: plexus_auth::NeedsAuthCache) -> DefaultConnector {
        self.needs_auth = Some(cache.with_warnings(self.file_warnings.clone()));
        self
    }

    /// The plexus home, if there is one.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The home's era verdicts (none without a home): a server whose entry lets plexus probe its
    /// era (`"protocolVersion": "auto"`) is probed once, and later starts of the same entry use
    /// the verdict ([`EraChoice::Remembered`](plexus_client::EraChoice::Remembered)).
    pub fn era_verdicts(&self) -> Option<&crate::EraVerdicts> {
        self.era_verdicts.as_ref()
    }

    /// The needs-auth cache, if there is one.
    #[cfg(feature = "auth")]
    pub fn needs_auth_cache(&self) -> Option<&plexus_auth::NeedsAuthCache> {
        self.needs_auth.as_ref()
    }

    /// The environment variables are looked up in.
    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// The IDE lock directory: the one given, else `$PLEXUS_IDE_LOCK_DIR`, else
    /// `$HOME/.claude/ide`, from the connector's environment; `None` when none of them is set.
    #[cfg(feature = "auth")]
    pub fn ide_lock_dir(&self) -> Option<PathBuf> {
        self.ide_lock_dir
            .clone()
            .or_else(|| plexus_auth::default_ide_lock_dir(&|name| self.env.get(name)))
    }

    /// How long headers helpers may run.
    #[cfg(feature = "auth")]
    pub fn helper_timeout(&self) -> Duration {
        self.helper_timeout
    }

    /// The largest message accepted from a server, from `PLEXUS_MAX_MESSAGE_SIZE` (bytes) in the
    /// connector's environment; `None` (the transports' 16 MiB) when unset or not a positive
    /// number (then with a warning).
    pub fn max_message_size(&self) -> Option<usize> {
        let value = self.env.get(MAX_MESSAGE_SIZE_VAR)?;
        match value.trim().parse::<usize>() {
            Ok(bytes) if bytes > 0 => Some(bytes),
            _ => {
                tracing::warn!("ignoring {MAX_MESSAGE_SIZE_VAR}={value:?}: expected a positive number of bytes");
                None
            }
        }
    }

    /// How long a login waits for the authorization response.
    #[cfg(feature = "auth")]
    pub fn login_timeout(&self) -> Duration {
        self.login_timeout
    }

    /// What the token store and the needs-auth cache of this connector (and its clones) had to
    /// repair: a corrupt file set aside, a file readable by other users made 0600. Each is kept
    /// once; [`take`](plexus_auth::FileWarnings::take) them to show them (the CLI prints each as
    /// a `plexus: …` line on stderr).
    #[cfg(feature = "auth")]
    pub fn file_warnings(&self) -> &plexus_auth::FileWarnings {
        &self.file_warnings
    }

    /// The OAuth token store, `<home>/credentials.json` (see [`plexus_auth::store`]); none
    /// without a home.
    #[cfg(feature = "auth")]
    pub fn token_store(&self) -> Option<plexus_auth::TokenStore> {
        self.home.as_ref().map(|home| {
            plexus_auth::TokenStore::new(home.join(CREDENTIALS_FILE)).with_warnings(self.file_warnings.clone())
        })
    }

    /// The OAuth provider of server `name` at `url` with the entry's `oauth` settings and the
    /// connector's login timeout; none without a home (no store to keep tokens in).
    #[cfg(feature = "auth")]
    pub(crate) fn oauth_provider(
        &self,
        name: &str,
        url: &str,
        settings: Option<&plexus_config::OAuthConfig>,
    ) -> Option<Result<plexus_auth::OAuthProvider, plexus_auth::OAuthError>> {
        let store = self.token_store()?;
        Some(oauth_settings(settings, &self.env).and_then(|settings| {
            let settings = settings.login_timeout(self.login_timeout);
            plexus_auth::OAuthProvider::new(name, url, settings, store)
        }))
    }

    /// Connects to the server `name` configured as `config`: starts its transport with its auth
    /// and runs the MCP handshake. The entry's `timeout` (ms), when set, replaces
    /// `options.initialize_timeout`, which also bounds establishing a remote transport.
    pub async fn connect(
        &self,
        name: &str,
        config: &ServerConfig,
        options: ClientOptions,
    ) -> Result<Client, ConnectError> {
        self.connect_detailed(name, config, options)
            .await
            .map(|connected| connected.client)
    }

    /// Like [`connect`](Self::connect), and says whether a fallback transport was used (see
    /// [`connect_detailed`](crate::connect_detailed)). The entry is taken as the host's own (see
    /// [`connect_in_scope`](Self::connect_in_scope)).
    pub async fn connect_detailed(
        &self,
        name: &str,
        config: &ServerConfig,
        options: ClientOptions,
    ) -> Result<Connected, ConnectError> {
        self.connect_in_scope(name, config, None, options).await
    }

    /// Opens a pipe to the in-process server `name`, starts it on the server's end, and runs
    /// the handshake within the connect timeout.
    async fn connect_in_process(&self, name: &str, options: ClientOptions) -> Result<Connected, ConnectError> {
        let Some(server) = self.in_process.get(name) else {
            return Err(ConnectError::Unsupported {
                server: name.to_owned(),
                kind: ServerKind::InProcess,
                why: crate::in_process::NOT_REGISTERED,
            });
        };
        let limit = self
            .max_message_size()
            .unwrap_or(crate::in_process::DEFAULT_MAX_MESSAGE_SIZE);
        let (transport, end) = crate::in_process::pipe(name, limit);
        let serving = tokio::spawn(server.serve(end));
        let transport = transport.end_with(serving.abort_handle());
        match Client::connect(Box::new(transport), options).await {
            Ok(client) => Ok(Connected { client, fallback: None }),
            Err(source) => Err(ConnectError::Client {
                server: name.to_owned(),
                source,
            }),
        }
    }

    /// Like [`connect_detailed`](Self::connect_detailed) for an entry of the config `scope` it was
    /// read from (`None`: the host's own entry). An entry of the [`Project`](Scope::Project)
    /// scope (a repository's `.mcp.json`) never gets plexus's own secrets: no session ingress
    /// token. Every stdio server's environment lacks plexus's secret variables
    /// ([`SECRET_VARIABLES`]) unless its entry's `env` names them.
    pub async fn connect_in_scope(
        &self,
        name: &str,
        config: &ServerConfig,
        scope: Option<Scope>,
        options: ClientOptions,
    ) -> Result<Connected, ConnectError> {
        // Boxed: a connect is rare, and its future large.
        Box::pin(self.connect_scoped(name, config, scope, options)).await
    }

    /// [`connect_in_scope`](Self::connect_in_scope)'s work.
    async fn connect_scoped(
        &self,
        name: &str,
        config: &ServerConfig,
        scope: Option<Scope>,
        mut options: ClientOptions,
    ) -> Result<Connected, ConnectError> {
        if config.options().disabled {
            return Err(ConnectError::Disabled {
                server: name.to_owned(),
            });
        }
        if let Some(timeout) = config.options().timeout {
            options.initialize_timeout = timeout;
        }
        if let ServerConfig::InProcess(_) = config {
            let budget = options.initialize_timeout;
            return Box::pin(within_budget(
                name,
                config,
                budget,
                self.connect_in_process(name, options),
            ))
            .await;
        }
        let plan = entry_auth::plan(config, scope).map_err(|why| ConnectError::Unsupported {
            server: name.to_owned(),
            kind: config.kind(),
            why,
        })?;
        #[cfg(feature = "auth")]
        let cache = self
            .needs_auth
            .as_ref()
            .filter(|_| plan.uses_needs_auth_cache(config))
            .zip(config.url().map(plexus_config::Url::as_str));
        #[cfg(feature = "auth")]
        if let Some((cache, url)) = cache {
            needs_auth::check(cache, name, url).await?;
        }
        let provider = self.provider(name, &plan).await?;
        let limits = Limits {
            max_message_size: self.max_message_size(),
        };
        // One budget for the whole connect: every transport tried (an `http` entry may fall back to
        // legacy SSE) and the handshake. Each stage has the budget too and says what it waited for;
        // the grace lets that more precise error win. Boxed: a connect is rare, its future large.
        let budget = options.initialize_timeout;
        let network = crate::connect::NetworkEnv::of(&self.env);
        let mut options = with_era(name, config, options)?;
        let probing = Box::pin(self.remember_era(name, config, &mut options)).await;
        let connect = Box::pin(connect_entry(name, config, options, provider, limits, &network));
        let result = within_budget(name, config, budget, connect).await;
        if probing && let Ok(connected) = &result {
            Box::pin(self.note_era(name, config, connected)).await;
        }
        #[cfg(feature = "auth")]
        if let Some((cache, url)) = cache {
            needs_auth::note(cache, name, url, &result).await;
        }
        result
    }
}

impl DefaultConnector {
    /// Turns a probe into a remembered verdict when the home has one for this entry; true when
    /// the era is probed or remembered (so a new verdict is worth recording).
    async fn remember_era(&self, name: &str, config: &ServerConfig, options: &mut ClientOptions) -> bool {
        let EraChoice::Probe { probe_timeout } = options.era else {
            return false;
        };
        let Some(verdicts) = self.era_verdicts.clone() else {
            return true;
        };
        let (owned_name, owned_config) = (name.to_owned(), config.clone());
        let remembered = tokio::task::spawn_blocking(move || verdicts.get(&owned_name, &owned_config))
            .await
            .ok()
            .flatten();
        if let Some(version) = remembered {
            options.era = EraChoice::Remembered { version, probe_timeout };
        }
        true
    }

    /// Records the verdict of a probe (a first one, or one that corrected a remembered verdict);
    /// a session over the legacy SSE fallback records none (that transport has one era).
    async fn note_era(&self, name: &str, config: &ServerConfig, connected: &Connected) {
        let details = connected.client.server();
        if details.era_source != EraSource::Probe || connected.fallback.is_some() {
            return;
        }
        let Some(verdicts) = self.era_verdicts.clone() else {
            return;
        };
        let (owned_name, owned_config, version) = (name.to_owned(), config.clone(), details.protocol_version);
        let recorded = tokio::task::spawn_blocking(move || verdicts.record(&owned_name, &owned_config, version)).await;
        match recorded {
            Ok(Ok(())) => tracing::debug!(server = name, "remembered its era: {version}"),
            Ok(Err(e)) => tracing::warn!(server = name, "{}", plexus_transport::error_chain(&e)),
            Err(e) => tracing::warn!(server = name, "recording its era failed: {e}"),
        }
    }
}

/// Runs `connect` within `budget` (and [`CONNECT_GRACE`]); past it, an error that says which
/// timeout that was.
async fn within_budget(
    name: &str,
    config: &ServerConfig,
    budget: Duration,
    connect: impl Future<Output = Result<Connected, ConnectError>>,
) -> Result<Connected, ConnectError> {
    match tokio::time::timeout(budget + CONNECT_GRACE, connect).await {
        Ok(result) => result,
        Err(_) => Err(ConnectError::Client {
            server: name.to_owned(),
            source: ClientError::Transport(TransportError::connect(
                config.url().map_or_else(
                    || config.kind().to_string(),
                    |url| plexus_net::redact::redact_url(url.as_str()),
                ),
                crate::connect::ConnectorReason::TimedOut { budget },
            )),
        }),
    }
}

/// How much longer than its timeout a whole connect may take (when it tries two transports).
const CONNECT_GRACE: Duration = Duration::from_millis(500);

/// plexus's own secret environment variables (the session ingress token and its file, the
/// gateway's token, the OTLP exporter's headers, which carry its collector's credentials): a
/// stdio server does not inherit them unless its entry's `env` names them, and a
/// `headersHelper` command never does.
pub const SECRET_VARIABLES: [&str; 6] = [
    "PLEXUS_SESSION_INGRESS_TOKEN",
    "PLEXUS_SESSION_INGRESS_TOKEN_FILE",
    "PLEXUS_GATEWAY_TOKEN",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
];

/// The token store's file name in the plexus home.
#[cfg(feature = "auth")]
pub const CREDENTIALS_FILE: &str = "credentials.json";

/// An entry's `oauth` object as the OAuth client's settings, with `PLEXUS_OAUTH_CALLBACK_PORT`
/// (from the connector's environment) filling a callback port the entry leaves unset.
#[cfg(feature = "auth")]
use plexus_auth::OAuthError;
#[cfg(feature = "auth")]
use plexus_auth::oauth::jwt::SigningKey;
#[cfg(feature = "auth")]
use plexus_auth::oauth::{AssertionSource, CALLBACK_PORT_ENV, OAuthGrant, SettingsProblem};
#[cfg(feature = "auth")]
use plexus_config::OAuthGrantType;

#[cfg(feature = "auth")]
fn oauth_settings(
    config: Option<&plexus_config::OAuthConfig>,
    env: &Environment,
) -> Result<plexus_auth::OAuthSettings, plexus_auth::OAuthError> {
    let mut settings = plexus_auth::OAuthSettings::default();
    if let Some(config) = config {
        if let Some(id) = &config.client_id {
            settings = settings.client_id(id);
        }
        if let Some(secret) = &config.client_secret {
            settings = settings.client_secret(secret);
        }
        if let Some(port) = config.callback_port {
            settings = settings.callback_port(port);
        }
        if let Some(url) = &config.auth_server_metadata_url {
            settings = settings.auth_server_metadata_url(url.as_str());
        }
        if let Some(url) = &config.client_metadata_url {
            settings = settings.client_metadata_url(url.as_str());
        }
        settings = settings.scopes(config.scopes.iter().cloned());
        settings = match (config.grant_type, &config.assertion_file) {
            (OAuthGrantType::AuthorizationCode, _) => settings,
            (OAuthGrantType::ClientCredentials, _) => settings.grant(OAuthGrant::ClientCredentials),
            (OAuthGrantType::JwtBearer, Some(file)) => settings.grant(OAuthGrant::JwtBearer {
                assertion: AssertionSource::File(file.clone()),
            }),
            // The config refuses a jwt_bearer grant without its file.
            (OAuthGrantType::JwtBearer, None) => {
                return Err(setting_error("oauth.assertionFile", SettingsProblem::NoAssertionFile));
            }
        };
        if let Some(path) = &config.private_key_file {
            settings = settings.private_key(read_private_key(path)?);
        }
    }
    // The authorization server is reached as the connector's environment says.
    let network = crate::connect::NetworkEnv::of(env);
    settings.proxy = plexus_net::http::ProxyChoice::Variables(network.proxy);
    settings.tls.environment = network.tls;
    settings.with_callback_port_var(env.get(CALLBACK_PORT_ENV).as_deref())
}

/// The largest private key file read (a PEM P-256 key is a few hundred bytes).
#[cfg(feature = "auth")]
const MAX_PRIVATE_KEY_FILE: u64 = 64 * 1024;

/// Reads the ES256 private key of `oauth.privateKeyFile`.
#[cfg(feature = "auth")]
fn read_private_key(path: &Path) -> Result<SigningKey, OAuthError> {
    let field = "oauth.privateKeyFile";
    let unreadable = |source| {
        setting_error(
            field,
            SettingsProblem::Unreadable {
                path: path.to_owned(),
                source,
            },
        )
    };
    let size = std::fs::metadata(path).map_err(unreadable)?.len();
    if size > MAX_PRIVATE_KEY_FILE {
        return Err(setting_error(
            field,
            SettingsProblem::KeyTooLarge {
                path: path.to_owned(),
                size,
                max: MAX_PRIVATE_KEY_FILE,
            },
        ));
    }
    let pem = std::fs::read_to_string(path).map_err(unreadable)?;
    SigningKey::from_pem(&pem).map_err(|source| {
        setting_error(
            field,
            SettingsProblem::Key {
                path: path.to_owned(),
                source,
            },
        )
    })
}

#[cfg(feature = "auth")]
fn setting_error(field: &str, problem: SettingsProblem) -> OAuthError {
    OAuthError::Settings {
        field: field.to_owned(),
        problem,
    }
}

/// The needs-auth cache around a connect. Its file I/O runs on the blocking pool; a cache that
/// cannot be written is logged and otherwise ignored (the connect's own outcome stands).
#[cfg(feature = "auth")]
mod needs_auth {
    use plexus_auth::NeedsAuthCache;

    use crate::connect::{ConnectError, Connected};

    /// Fails with [`ConnectError::NeedsAuth`] when the cache holds a fresh entry for the server.
    pub(super) async fn check(cache: &NeedsAuthCache, name: &str, url: &str) -> Result<(), ConnectError> {
        let (job_cache, server, job_url) = (cache.clone(), name.to_owned(), url.to_owned());
        let found = tokio::task::spawn_blocking(move || job_cache.check(&server, &job_url))
            .await
            .ok()
            .flatten();
        match found {
            Some(entry) => Err(ConnectError::NeedsAuth {
                server: name.to_owned(),
                retry_in: cache.expires_in(&entry),
                reason: entry.reason,
            }),
            None => Ok(()),
        }
    }

    /// Records a "needs authentication" failure; clears the entry after a success.
    pub(super) async fn note(cache: &NeedsAuthCache, name: &str, url: &str, result: &Result<Connected, ConnectError>) {
        let reason = match result {
            Ok(_) => None,
            Err(error) => match error.transport_needs_auth_reason() {
                Some(reason) => Some(reason),
                None => return,
            },
        };
        let (cache, server, url) = (cache.clone(), name.to_owned(), url.to_owned());
        let written = tokio::task::spawn_blocking(move || match reason {
            Some(reason) => cache.record(&server, &url, Some(&reason)),
            None => cache.clear(&server, &url).map(drop),
        })
        .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("server \"{name}\": {}", plexus_transport::error_chain(&e)),
            Err(e) => tracing::warn!("server \"{name}\": updating the needs-auth cache failed: {e}"),
        }
    }
}

#[cfg(all(test, feature = "auth"))]
mod tests {
    #[test]
    fn the_secret_variables_are_the_ones_plexus_auth_reads_the_gateways_and_the_otlp_headers() {
        assert_eq!(
            super::SECRET_VARIABLES,
            [
                plexus_auth::INGRESS_TOKEN_VAR,
                plexus_auth::INGRESS_TOKEN_FILE_VAR,
                "PLEXUS_GATEWAY_TOKEN",
                "OTEL_EXPORTER_OTLP_HEADERS",
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
            ]
        );
    }
}
