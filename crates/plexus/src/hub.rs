//! The Hub: what a host embeds — every config scope read and merged (policy and approvals
//! applied), a running pool of the servers that may run, the tool pool, calls by name with the
//! whole call chain and result processing, events, shutdown.
//!
//! One environment: the [`DiscoveryOptions`]' [`Environment`] is where `${VAR}` references,
//! the timeouts (`MCP_TIMEOUT`, `MCP_TOOL_TIMEOUT`, `PLEXUS_REQUEST_TIMEOUT`), the connect
//! windows and batch sizes, `MAX_MCP_OUTPUT_TOKENS`, `PLEXUS_MAX_MESSAGE_SIZE`, the proxy
//! variables (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, for the servers and their
//! authorization servers), `NODE_EXTRA_CA_CERTS` and every auth variable are looked up; nothing
//! below reads the process environment behind the Hub's back, so two Hubs in one process can
//! have different ones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use plexus_client::ClientHandler;
use plexus_config::{
    ConfigSources, DiscoveryOptions, EntryStatus, Environment, MergedConfig, PendingReason, ServerConfig,
};
use plexus_pool::{Admission, Pool, PoolError, PoolEvent, PoolSettings, Readiness, ServerSpec};
use plexus_protocol::Tool;
use plexus_tools::{
    AsSentResult, CallError, CallOptions, CallOutcome, ProcessedResult, ResultError, ResultSettings, ResultStore,
    ServerTools, ToolEntry, ToolFilter, ToolIndex, ToolPool, UrlElicitationHandler, assemble, call_tool_raw,
    decode_result, process, processing_may_block, server_entries,
};
use tokio::sync::broadcast;

use crate::hub_error::HubError;
use crate::hub_messages::ServerMessage;

use crate::in_process::InProcessServer;
use crate::{DefaultConnector, lock};

/// How a [`Hub`] starts.
#[derive(Clone)]
pub struct HubOptions {
    /// Where the config files are, and the one environment.
    pub discovery: DiscoveryOptions,
    /// The host's built-in tools: their names win over MCP tools'.
    pub builtins: Vec<String>,
    /// The longest qualified tool name (64 by default; some model APIs allow 128).
    pub max_name_len: usize,
    /// Answers the servers' requests (roots, sampling, elicitation); its capabilities are
    /// declared to every server. None by default: nothing is declared.
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Sends the user to the URLs of a `-32042` answer to a call (unless the call's options
    /// bring their own handler).
    pub url_elicitation: Option<Arc<dyn UrlElicitationHandler>>,
    /// When set, only these servers are put in the pool (the whole config is still read and
    /// merged): a command that needs one server starts only that one.
    pub only: Option<Vec<String>>,
    /// Servers the host names itself (a command line's `--stdio` or `--url`): the user's own, so
    /// started without approval; one with a configured server's name replaces it.
    pub ad_hoc: Vec<(String, ServerConfig)>,
    /// Connects the servers instead of the [`DefaultConnector`] (in-process servers, a host's
    /// own transport, tests). [`Hub::connector`] is still the default one, with the token
    /// store and logins; [`handler`](Self::handler) is the custom connector's to declare.
    pub connector: Option<Arc<dyn plexus_pool::Connector>>,
    /// Servers that run in the host's process (see [`in_process`](Self::in_process)).
    pub in_process: Vec<(String, Arc<dyn InProcessServer>)>,
}

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("home", &self.discovery.home)
            .field("start_dir", &self.discovery.start_dir)
            .field("builtins", &self.builtins)
            .field("max_name_len", &self.max_name_len)
            .field("handler", &self.handler.is_some())
            .field("url_elicitation", &self.url_elicitation.is_some())
            .field("only", &self.only)
            .field("ad_hoc", &self.ad_hoc.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("connector", &self.connector.is_some())
            .field(
                "in_process",
                &self.in_process.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl HubOptions {
    /// Options for the config that `discovery` finds, no built-ins, 64-character names.
    pub fn new(discovery: DiscoveryOptions) -> HubOptions {
        HubOptions {
            discovery,
            builtins: Vec::new(),
            max_name_len: plexus_tools::DEFAULT_MAX_NAME_LEN,
            handler: None,
            url_elicitation: None,
            only: None,
            ad_hoc: Vec::new(),
            connector: None,
            in_process: Vec::new(),
        }
    }

    /// The process's options: its home, its working directory (or `project_dir`), its
    /// environment.
    pub fn from_process(project_dir: Option<std::path::PathBuf>) -> Result<HubOptions, HubError> {
        Ok(HubOptions::new(
            DiscoveryOptions::from_process(project_dir).map_err(HubError::Discovery)?,
        ))
    }

    /// Adds the host's built-in tool names.
    #[must_use]
    pub fn builtins(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> HubOptions {
        self.builtins = names.into_iter().map(Into::into).collect();
        self
    }

    /// Answers the servers' requests with `handler` (see [`HubOptions::handler`]).
    #[must_use]
    pub fn handler(mut self, handler: Arc<dyn ClientHandler>) -> HubOptions {
        self.handler = Some(handler);
        self
    }

    /// Starts only the servers named in `names` (see [`HubOptions::only`]).
    #[must_use]
    pub fn only(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> HubOptions {
        self.only = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Adds a server of the host's own (see [`HubOptions::ad_hoc`]).
    #[must_use]
    pub fn ad_hoc(mut self, name: impl Into<String>, config: ServerConfig) -> HubOptions {
        self.ad_hoc.push((name.into(), config));
        self
    }

    /// Adds a server that runs in the host's process, as server `name` of the host's own (like
    /// [`ad_hoc`](Self::ad_hoc)): each connection the pool opens calls `server` with its end
    /// of an in-memory pipe (see [`crate::in_process`]).
    #[must_use]
    pub fn in_process(mut self, name: impl Into<String>, server: impl InProcessServer) -> HubOptions {
        let name = name.into();
        let entry = ServerConfig::InProcess(plexus_config::InProcessEntry::default());
        self.ad_hoc.retain(|(other, _)| *other != name);
        self.ad_hoc.push((name.clone(), entry));
        self.in_process.retain(|(other, _)| *other != name);
        self.in_process.push((name, Arc::new(server)));
        self
    }

    /// Connects the servers with `connector` (see [`HubOptions::connector`]).
    #[must_use]
    pub fn connector(mut self, connector: Arc<dyn plexus_pool::Connector>) -> HubOptions {
        self.connector = Some(connector);
        self
    }

    /// Sends the user to URL elicitations with `handler` (see [`HubOptions::url_elicitation`]).
    #[must_use]
    pub fn url_elicitation(mut self, handler: Arc<dyn UrlElicitationHandler>) -> HubOptions {
        self.url_elicitation = Some(handler);
        self
    }
}

/// Runs `work` (file I/O) on a blocking thread; on the caller's, when the runtime cannot spawn
/// one (it is shutting down).
pub(crate) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let work = Arc::new(Mutex::new(Some(work)));
    let run = {
        let work = Arc::clone(&work);
        move || lock(&work).take().map(|work| work())
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Some(done)) => done,
        _ => {
            let work = lock(&work).take().expect("the work did not run");
            work()
        }
    }
}

/// A server's listed tools and the entries built from them.
type KeptEntries = (Arc<[Tool]>, Arc<[Arc<ToolEntry>]>);

/// The config as last read, and each server's tool filter (`enabledTools`, `disabledTools`).
pub(crate) struct Current {
    pub(crate) config: Arc<MergedConfig>,
    /// By server; hashed with foldhash, as every call looks its server up here.
    filters: HashMap<String, ToolFilter, foldhash::fast::RandomState>,
}

/// The filter of a server with none: every tool.
static EVERY_TOOL: std::sync::LazyLock<ToolFilter> = std::sync::LazyLock::new(ToolFilter::default);

impl Current {
    /// What `config` makes of the servers (`only` and the host's `ad_hoc` ones applied), and
    /// the pool's entries.
    fn of(
        config: MergedConfig,
        only: Option<&[String]>,
        ad_hoc: &[(String, ServerConfig)],
    ) -> (Current, Vec<ServerSpec>) {
        let mut specs = server_specs(&config);
        for (name, entry) in ad_hoc {
            specs.retain(|spec| spec.name != *name);
            specs.push(ServerSpec::new(name, entry.clone(), None));
        }
        if let Some(only) = only {
            specs.retain(|spec| only.contains(&spec.name));
        }
        let filters = specs
            .iter()
            .map(|spec| {
                let options = spec.config.options();
                (
                    spec.name.clone(),
                    ToolFilter::new(options.enabled_tools.as_deref(), &options.disabled_tools),
                )
            })
            .collect();
        let current = Current {
            config: Arc::new(config),
            filters,
        };
        (current, specs)
    }

    /// The tool filter of `server`.
    fn filter(&self, server: &str) -> &ToolFilter {
        self.filters.get(server).unwrap_or(&EVERY_TOOL)
    }
}

/// A running set of MCP servers as one tool pool.
pub struct Hub {
    /// The merged config and what it makes of each server (replaced by a reload).
    current: Mutex<Arc<Current>>,
    /// What a reload needs: where the files are, and the host's own choice of servers.
    discovery: DiscoveryOptions,
    only: Option<Vec<String>>,
    ad_hoc: Vec<(String, ServerConfig)>,
    pool: Pool,
    connector: Arc<DefaultConnector>,
    builtins: Vec<String>,
    index: Mutex<ToolIndex>,
    /// The prompts' names, kept as the tools' are.
    prompt_index: Mutex<ToolIndex>,
    /// Each server's entries, built once per list the pool serves (the list's `Arc` tells).
    entries: Mutex<HashMap<String, KeptEntries>>,
    results: ResultSettings,
    store: Arc<ResultStore>,
    url_elicitation: Option<Arc<dyn UrlElicitationHandler>>,
    /// Every server's notifications (see [`server_messages`](Self::server_messages)).
    messages: broadcast::Sender<ServerMessage>,
    /// Each server's search segment (see [`search_tools`](Self::search_tools)).
    search: crate::hub_search::SearchSegments,
    /// The tool-pool lockfiles (see [`crate::hub_lock`]).
    pub(crate) lock: crate::hub_lock::ToolLocks,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("pool", &self.pool)
            .field("builtins", &self.builtins)
            .finish_non_exhaustive()
    }
}

/// The pool's entries for a merged config: every valid server, with its admission (invalid
/// entries are in [`MergedConfig::invalid`] and never reach the pool).
pub fn server_specs(config: &MergedConfig) -> Vec<ServerSpec> {
    config
        .servers
        .iter()
        .map(|server| {
            ServerSpec::new(server.name.to_string(), server.config.clone(), Some(server.scope)).with_admission(
                admission(&server.status, || match (&server.status, &server.pending) {
                    // Why it waits, when it is more than "never approved": approved by name only,
                    // or changed since it was approved (and how).
                    (EntryStatus::PendingApproval, Some(pending)) if *pending != PendingReason::NotApproved => {
                        format!("pending approval: {pending}")
                    }
                    _ => server.status.to_string(),
                }),
            )
        })
        .collect()
}

/// Whether a server of config `status` may start: active servers start, a project server
/// waiting for approval is pending, every other is disabled; `reason` says why in the host's
/// words.
pub fn admission(status: &EntryStatus, reason: impl FnOnce() -> String) -> Admission {
    match status {
        EntryStatus::Active => Admission::Start,
        EntryStatus::PendingApproval => Admission::AwaitingApproval { reason: reason() },
        _ => Admission::Disabled { reason: reason() },
    }
}

impl Hub {
    /// Reads and merges every scope, and starts every server that may run in the background
    /// (see [`wait_ready`](Self::wait_ready)). Sessions of persisted tool output older than 7
    /// days are removed.
    ///
    /// A config file of any scope but the managed one that exists but cannot be loaded stops
    /// the start ([`HubError::Config`], naming the file, and for a parse error its line and
    /// column): going on without it would run other servers than the user wrote. What else
    /// could not be used is in [`startup_report`](Self::startup_report).
    pub async fn start(options: HubOptions) -> Result<Hub, HubError> {
        // Reading the files blocks: off the caller's async thread.
        let discovery = options.discovery.clone();
        let config = blocking(move || ConfigSources::discover(&discovery).load()).await;
        if let Some(file) = crate::StartupReport::of(&config).blocking_file() {
            return Err(HubError::Config {
                path: file.path.clone(),
                source: Arc::clone(&file.error),
            });
        }
        Hub::start_with_config(options, config).await
    }

    /// [`start`](Self::start) with a config the host has read and merged already (from the
    /// same discovery options), e.g. to report its diagnostics first.
    pub async fn start_with_config(options: HubOptions, config: MergedConfig) -> Result<Hub, HubError> {
        let discovery = &options.discovery;
        let env: Environment = discovery.env.clone();
        let mut connector = DefaultConnector::new()
            .with_env(env.clone())
            .with_home(discovery.home.clone());
        if let Some(handler) = options.handler {
            connector = connector.with_handler(handler);
        }
        for (name, server) in options.in_process {
            connector = connector.with_in_process(name, server);
        }
        let connector = Arc::new(connector);
        let lookup = |name: &str| env.get(name);
        let (messages, _) = broadcast::channel(crate::hub_messages::SERVER_MESSAGES_CAPACITY);
        let connecting = options
            .connector
            .unwrap_or_else(|| Arc::clone(&connector) as Arc<dyn plexus_pool::Connector>);
        let following = crate::hub_messages::Following::new(connecting, messages.clone());
        let pool = Pool::new(Arc::new(following), PoolSettings::from_lookup(lookup));
        let (current, specs) = Current::of(config, options.only.as_deref(), &options.ad_hoc);
        let home = discovery.home.clone();
        blocking(move || ResultStore::remove_old_sessions(&home, plexus_tools::store::KEEP_FOR)).await;
        let store = Arc::new(ResultStore::new(&discovery.home, &ResultStore::session_name()));
        let lock = crate::hub_lock::ToolLocks::new(plexus_tools::lock::LockPaths::of(discovery));
        pool.set_servers(specs).await;
        Ok(Hub {
            current: Mutex::new(Arc::new(current)),
            discovery: options.discovery,
            only: options.only,
            ad_hoc: options.ad_hoc,
            pool,
            connector,
            builtins: options.builtins,
            index: Mutex::new(ToolIndex::new(options.max_name_len)),
            prompt_index: Mutex::new(ToolIndex::new(options.max_name_len)),
            entries: Mutex::new(HashMap::new()),
            results: ResultSettings::from_lookup(lookup),
            store,
            url_elicitation: options.url_elicitation,
            messages,
            search: crate::hub_search::SearchSegments::default(),
            lock,
        })
    }

    /// The merged config: its servers (with status and diagnostics), invalid entries, files (as
    /// last read: at start, or by [`reload`](Self::reload)).
    pub fn config(&self) -> Arc<MergedConfig> {
        Arc::clone(&self.current().config)
    }

    /// The config and the tool filters now.
    pub(crate) fn current(&self) -> Arc<Current> {
        Arc::clone(&lock(&self.current))
    }

    /// Replaces the config with `config` and makes the pool's servers those it allows (a server
    /// whose entry and admission did not change keeps its connection; one whose new entry is
    /// invalid keeps its last good entry); what changed.
    pub(crate) async fn apply(&self, mut config: MergedConfig) -> crate::ConfigChange {
        let kept = crate::hub_config::keep_last_good(&mut config, &self.config());
        let (current, specs) = Current::of(config, self.only.as_deref(), &self.ad_hoc);
        let change = crate::hub_config::ConfigChange::between(&self.pool, &specs, kept);
        *lock(&self.current) = Arc::new(current);
        self.pool.set_servers(specs).await;
        change
    }

    /// Where the Hub reads its config files, and its environment.
    pub fn discovery(&self) -> &DiscoveryOptions {
        &self.discovery
    }

    /// The pool: every server's state, its lists, `ensure_connected`, `reconnect`.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Where the call results' files go (`<home>/tool-results/<session>/`): a host saves other
    /// binary content there too (a resource it read, an image it shows).
    pub fn result_store(&self) -> &ResultStore {
        &self.store
    }

    /// The connector (its token store, needs-auth cache, file warnings, `login`).
    pub fn connector(&self) -> &DefaultConnector {
        &self.connector
    }

    /// Waits for the servers (see [`Pool::wait_ready`]).
    pub async fn wait_ready(&self, budget: Duration) -> Result<Readiness, HubError> {
        Ok(self.pool.wait_ready(budget).await?)
    }

    /// Every server's notifications (log messages, resource updates, elicitation completions,
    /// list changes), each with its server, and the start of each new session: one stream for
    /// the whole Hub, followed from the moment a session is connected. A reader that falls more
    /// than [`SERVER_MESSAGES_CAPACITY`](crate::SERVER_MESSAGES_CAPACITY) messages behind
    /// loses the oldest (`Lagged`).
    pub fn server_messages(&self) -> broadcast::Receiver<ServerMessage> {
        self.messages.subscribe()
    }

    /// The pool's events: states, late joins, list changes (rebuild the tool pool on these).
    pub fn subscribe(&self) -> broadcast::Receiver<PoolEvent> {
        self.pool.subscribe()
    }

    /// The tool pool now: the built-ins, then every connected server's tools (from the pool's
    /// caches), filtered, with names that stay the same from one call to the next.
    pub async fn tool_pool(&self) -> ToolPool {
        self.tool_pool_report().await.0
    }

    /// [`tool_pool`](Self::tool_pool), with why the tools of a connected server could not be
    /// listed (such a server's tools are not in the pool).
    pub async fn tool_pool_report(&self) -> (ToolPool, Vec<PoolError>) {
        let mut listed: Vec<(String, Arc<[Tool]>)> = Vec::new();
        let mut failures = Vec::new();
        for (name, state) in self.pool.states() {
            if state.status != plexus_pool::ServerStatus::Connected {
                continue;
            }
            match self.pool.tools(&name).await {
                Ok(tools) => listed.push((name, tools)),
                Err(e) => {
                    tracing::warn!("{e}");
                    failures.push(e);
                }
            }
        }
        let lists = listed.clone();
        let entries: Vec<(String, Arc<[Arc<ToolEntry>]>)> = {
            let mut cache = lock(&self.entries);
            let mut index = lock(&self.index);
            cache.retain(|server, _| listed.iter().any(|(name, _)| name == server));
            listed
                .into_iter()
                .map(|(name, tools)| {
                    let built = match cache.get(&name) {
                        Some((list, built)) if Arc::ptr_eq(list, &tools) => Arc::clone(built),
                        _ => {
                            let built = server_entries(&name, &tools, &mut index);
                            cache.insert(name.clone(), (tools, Arc::clone(&built)));
                            built
                        }
                    };
                    (name, built)
                })
                .collect()
        };
        let current = self.current();
        let servers: Vec<ServerTools<'_>> = entries
            .iter()
            .map(|(name, entries)| ServerTools {
                server: name,
                entries,
                filter: current.filter(name),
            })
            .collect();
        let builtins: Vec<&str> = self.builtins.iter().map(String::as_str).collect();
        let mut pool = assemble(&builtins, &servers);
        self.hold_locked_tools(&mut pool, &lists).await;
        (pool, failures)
    }

    /// The server and the server's own name of the tool `name` of the pool (as named the last
    /// time the tool pool was built).
    pub fn tool_origin(&self, name: &str) -> Option<plexus_tools::ToolOrigin> {
        lock(&self.index).resolve(name).cloned()
    }

    /// The tool names that share their plain form with another's, each kept under a name of
    /// its own (for telling the user).
    pub fn tool_collisions(&self) -> Vec<plexus_tools::naming::Collision> {
        lock(&self.index).collisions()
    }

    /// Calls the tool `name` of the tool pool with `arguments`: the server is connected (or
    /// reconnected) through the pool, an expired session is reopened once, and the result is
    /// processed (images downsampled, binary content and large output saved under
    /// `<home>/tool-results/<session>/`). A result with `isError: true` is a result.
    ///
    /// `arguments` is anything that serializes as a JSON object: a `json!({...})` value, a
    /// `Map`, a struct of the host's own.
    pub async fn call(&self, name: &str, arguments: impl serde::Serialize + Sync) -> Result<ProcessedResult, HubError> {
        self.call_with(name, &arguments, &CallOptions::default()).await
    }

    /// [`call`](Self::call) with progress and timeout options, and borrowed arguments: anything
    /// that serializes as a JSON object, such as a `Map` or the
    /// [`RawValue`](serde_json::value::RawValue) text of an object as a client sent it (a
    /// gateway passes that on without parsing it).
    pub async fn call_with<A: serde::Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: &A,
        options: &CallOptions,
    ) -> Result<ProcessedResult, HubError> {
        let called = self.call_raw(name, arguments, options).await?;
        self.processed(name, called).await
    }

    /// [`call_with`](Self::call_with) for a host that passes results on (as the gateway does):
    /// a result that processing would leave as it is (text within the output limit, see
    /// [`AsSentResult`]) comes as its server wrote it, not decoded, and without the warnings a
    /// processed result may carry (a large result's); any other is processed.
    pub async fn call_as_sent<A: serde::Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: &A,
        options: &CallOptions,
    ) -> Result<CallOutcome, HubError> {
        let called = self.call_raw(name, arguments, options).await?;
        if let Some(as_sent) = AsSentResult::of(&called.raw, called.tools.get(called.at), &self.results) {
            return Ok(CallOutcome::AsSent(as_sent));
        }
        self.processed(name, called).await.map(CallOutcome::Processed)
    }

    /// Calls the tool `name` through the call chain; its result as the server wrote it.
    async fn call_raw<A: serde::Serialize + ?Sized + Sync>(
        &self,
        name: &str,
        arguments: &A,
        options: &CallOptions,
    ) -> Result<RawCall, HubError> {
        let unknown = || HubError::UnknownTool { name: name.to_owned() };
        // A built-in is the host's to run. Otherwise the name resolves through the index; a name
        // it does not know yet (no tool pool built since the server joined) builds the pool once.
        if self.builtins.iter().any(|builtin| builtin == name) {
            return Err(unknown());
        }
        let resolve = || lock(&self.index).resolve_shared(name);
        let origin = match resolve() {
            Some(origin) => origin,
            None => {
                // Boxed, as the rare path: every call's future stays small.
                Box::pin(self.tool_pool()).await;
                resolve().ok_or_else(unknown)?
            }
        };
        let require_lock = {
            let current = self.current();
            if !current.filter(&origin.server).allows(&origin.tool) {
                return Err(unknown());
            }
            current.config.require_tool_lock
        };
        let tools = self
            .pool
            .tools(&origin.server)
            .await
            .map_err(|source| CallError::Unavailable {
                server: origin.server.clone(),
                tool: origin.tool.clone(),
                source,
            })?;
        let at = tools
            .iter()
            .position(|tool| tool.name == origin.tool)
            .ok_or_else(unknown)?;
        let tool = &tools[at];
        if let Some(reason) = self.lock_hold(&origin.server, &tools, &origin.tool, require_lock).await {
            return Err(HubError::ToolHeld {
                name: name.to_owned(),
                reason,
            });
        }
        let with_handler;
        let options = match (&options.url_elicitation, &self.url_elicitation) {
            (None, Some(handler)) => {
                with_handler = CallOptions {
                    url_elicitation: Some(Arc::clone(handler)),
                    ..options.clone()
                };
                &with_handler
            }
            _ => options,
        };
        let raw = call_tool_raw(&self.pool, &origin.server, tool, arguments, options).await?;
        Ok(RawCall { raw, origin, tools, at })
    }

    /// The result of the call of the tool `name`, decoded and processed.
    async fn processed(&self, name: &str, called: RawCall) -> Result<ProcessedResult, HubError> {
        let RawCall { raw, origin, tools, at } = called;
        let tool = &tools[at];
        let result = decode_result(&origin.server, tool, &raw)?;
        drop(raw);
        let processed = if processing_may_block(&result, Some(tool), &self.results) {
            // Images are decoded and resized, files written: not on the runtime's thread (which
            // may be the only one).
            let (store, settings, tools) = (Arc::clone(&self.store), self.results.clone(), Arc::clone(&tools));
            match tokio::task::spawn_blocking(move || process(result, tools.get(at), &store, &settings)).await {
                Ok(processed) => processed,
                Err(joined) if joined.is_panic() => std::panic::resume_unwind(joined.into_panic()),
                Err(_) => Err(ResultError::Stopped),
            }
        } else {
            process(result, Some(tool), &self.store, &self.results)
        };
        processed.map_err(|source| HubError::Result {
            name: name.to_owned(),
            source,
        })
    }

    /// The kept search segments.
    pub(crate) fn search_segments(&self) -> &crate::hub_search::SearchSegments {
        &self.search
    }

    /// The index of the prompts' names.
    pub(crate) fn prompt_names(&self) -> MutexGuard<'_, ToolIndex> {
        lock(&self.prompt_index)
    }

    /// Cancels every call and request in flight on every server, telling each server why
    /// (`reason`): what a host does when its user interrupts it. The servers stay up; dropping
    /// a call's future cancels that call alone.
    pub async fn interrupt(&self, reason: &str) {
        self.pool.cancel_all(reason).await;
    }

    /// Closes every server (each within its transport's bound).
    pub async fn shutdown(&self) {
        self.pool.shutdown().await;
    }
}

/// A call's result as its server wrote it, with the tool it came from.
struct RawCall {
    raw: Box<serde_json::value::RawValue>,
    /// The server and the tool's own name.
    origin: Arc<plexus_tools::ToolOrigin>,
    /// The server's tools, the called one at `at`.
    tools: Arc<[Tool]>,
    at: usize,
}

/// How long dropping a Hub waits for its stdio servers' shutdown sequences: the longest one
/// (the SIGINT, SIGTERM and SIGKILL graces) and a margin.
#[cfg(feature = "stdio")]
const DROP_WAIT: Duration = Duration::from_secs(2);

impl Drop for Hub {
    /// Dropping the Hub (the last handle of it, when it is shared) shuts its servers down: every
    /// connect attempt stops, every connection is closed at once, and the calling thread waits
    /// (at most 2 s, on no runtime) until every stdio server's shutdown sequence has ended, so
    /// that a host whose `main` returns next leaves no child behind. Remote sessions are not
    /// ended gracefully this way: [`shutdown`](Hub::shutdown) first does that, and then
    /// dropping waits for nothing.
    fn drop(&mut self) {
        self.pool.close_now();
        #[cfg(feature = "stdio")]
        {
            let wait = || plexus_stdio::wait_for_shutdowns(DROP_WAIT);
            // A worker of a multi-thread runtime tells the runtime it blocks.
            let worker = tokio::runtime::Handle::try_current()
                .is_ok_and(|runtime| runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
            if worker {
                tokio::task::block_in_place(wait);
            } else {
                wait();
            }
        }
    }
}
