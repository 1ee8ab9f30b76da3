//! `plexus serve`: the Hub served as one MCP server by `plexus-gateway`, over stdio or
//! Streamable HTTP. This is the command's side: its options, the token, saying where it serves.

use std::sync::Arc;
use std::time::Duration;

use plexus_gateway::{Backends, Gateway, GatewayOptions, HttpListeners, TOKEN_VAR};

use crate::Outcome;
use crate::connect::{close, launch};
use crate::sources::{Configured, Server};
pub(crate) use plexus_gateway::ListenAddress;

/// How `plexus serve` serves.
#[derive(Debug, Clone)]
pub(crate) struct ServeOptions {
    /// `--http HOST:PORT`: Streamable HTTP there instead of stdio.
    pub(crate) http: Option<ListenAddress>,
    /// The bearer token clients must send over HTTP (required off loopback).
    pub(crate) token: Option<String>,
    /// How long an HTTP session may sit unused before it ends.
    pub(crate) session_idle: Duration,
    /// `--ready-grace`: how long `initialize` and the first lists wait for the servers still
    /// starting; those that start later join with a `list_changed` notification.
    pub(crate) ready_grace: Duration,
    /// `--crash-pause`: how long a server the pool stopped for crashing too often stays off
    /// before the gateway starts it again (doubled each time, up to 15 minutes).
    pub(crate) crash_pause: Duration,
    /// `--deferred`: the meta-tools instead of every tool (see [`GatewayOptions::deferred`]).
    pub(crate) deferred: bool,
    /// Follow the config files (not `--no-watch`): edits take effect without a restart.
    pub(crate) watch: bool,
}

impl ServeOptions {
    /// The options `args` give (the token read from its file or the environment); the error is
    /// the message to print.
    pub(crate) fn of(args: &crate::ServeArgs) -> Result<ServeOptions, String> {
        Ok(ServeOptions {
            http: args.http.clone(),
            token: token(args.token_file.as_deref())?,
            session_idle: Duration::from_secs(args.session_idle),
            ready_grace: Duration::from_secs(args.ready_grace),
            crash_pause: Duration::from_secs(args.crash_pause),
            deferred: args.deferred,
            watch: !args.no_watch,
        })
    }
}

/// The HTTP clients' bearer token: the first line of `file`, else `PLEXUS_GATEWAY_TOKEN`.
fn token(file: Option<&std::path::Path>) -> Result<Option<String>, String> {
    let token = match file {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("--token-file {}: {e}", file.display()))?;
            text.lines().next().unwrap_or_default().trim().to_owned()
        }
        None => match crate::secrets::get(TOKEN_VAR) {
            Some(token) => token.trim().to_owned(),
            None => return Ok(None),
        },
    };
    if token.is_empty() {
        return Err("the gateway's token is empty".to_owned());
    }
    if token.chars().any(|c| c.is_control() || c == ' ') {
        return Err("the gateway's token holds spaces or control characters".to_owned());
    }
    Ok(Some(token))
}

/// `plexus serve`: over HTTP on worker threads (many clients), over stdio on this thread alone
/// (see [`block_on_one_thread`](crate::block_on_one_thread)).
pub(crate) fn run(configured: Configured, options: ServeOptions) -> Outcome {
    if options.http.is_some() {
        crate::block_on(serve_command(configured, options))
    } else {
        crate::block_on_one_thread(serve_command(configured, options))
    }
}

/// Runs the gateway until its client goes (stdio: end of input) or the process is interrupted.
async fn serve_command(configured: Configured, options: ServeOptions) -> Outcome {
    let servers: Vec<&Server> = configured.servers.iter().collect();
    for server in &servers {
        server.report_diagnostics();
        if server.runnable().is_none() {
            crate::terminal::say(format_args!("{}", server.not_started()));
        }
    }
    // Bound before any server starts: an address that does not resolve, or that nothing can
    // listen on, is a usage error.
    let listeners = match &options.http {
        None => None,
        Some(given) => match listen(given, options.token.is_some()).await {
            Ok(listeners) => Some(listeners),
            Err(message) => {
                crate::terminal::say(message);
                return Outcome::Usage;
            }
        },
    };
    let backends = Backends::new();
    let hub = match launch(
        &configured,
        &servers,
        backends.handler(),
        Some(backends.url_elicitation()),
    )
    .await
    {
        Ok(hub) => Arc::new(hub),
        Err(outcome) => return outcome,
    };
    let mut gateway_options = GatewayOptions::default();
    gateway_options.ready_grace = options.ready_grace;
    gateway_options.crash_pause = options.crash_pause;
    gateway_options.session_idle = options.session_idle;
    gateway_options.token = options.token;
    gateway_options.deferred = options.deferred;
    let gateway = Gateway::new(Arc::clone(&hub), backends, gateway_options);
    // After the gateway: it follows the pool's changes that a reload makes.
    let watching = if options.watch {
        follow_config(&hub, &servers)
    } else {
        None
    };
    // The servers' daemons orphaned while the gateway runs are reaped as they exit.
    let orphans = tokio::spawn(plexus::stdio::orphans::watch_orphans());
    let outcome = match listeners {
        None => match gateway.serve_stdio().await {
            Ok(()) => Outcome::Ok,
            Err(e) => {
                crate::terminal::say_error(&e);
                Outcome::Connection
            }
        },
        Some(listeners) => {
            gateway.serve_http(listeners).await;
            Outcome::Ok
        }
    };
    orphans.abort();
    drop(watching);
    drop(gateway);
    close(&hub).await;
    outcome
}

/// Follows the config files (see [`plexus::ConfigWatcher`]), saying on stderr what each edit
/// changed; `None` when the servers are not the config's (`--stdio`, `--url`, the demo) or the
/// files cannot be followed (said why).
fn follow_config(
    hub: &Arc<plexus::Hub>,
    servers: &[&Server],
) -> Option<(plexus::ConfigWatcher, tokio::task::JoinHandle<()>)> {
    if servers.iter().any(|server| server.scope.is_none()) {
        return None;
    }
    let watcher = match plexus::ConfigWatcher::start(hub) {
        Ok(watcher) => watcher,
        Err(e) => {
            crate::terminal::say(format_args!(
                "{}; config edits need a restart",
                crate::terminal::chain(&e)
            ));
            return None;
        }
    };
    let mut events = watcher.subscribe();
    let saying = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => say_config_event(&event),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    Some((watcher, saying))
}

/// One `plexus: ...` line for what a config edit did.
fn say_config_event(event: &plexus::ConfigEvent) {
    match event {
        plexus::ConfigEvent::Applied(change) => {
            let mut parts = Vec::new();
            for (what, names) in [
                ("added", &change.added),
                ("removed", &change.removed),
                ("restarted", &change.restarted),
            ] {
                if !names.is_empty() {
                    parts.push(format!("{what} {}", names.join(", ")));
                }
            }
            if parts.is_empty() {
                parts.push("no server changed".to_owned());
            }
            crate::terminal::say(format_args!("the config changed: {}", parts.join("; ")));
            for invalid in &change.report.invalid_servers {
                let kept = if change.kept_last_good.contains(&invalid.name) {
                    "; it keeps running on its last good entry"
                } else {
                    ""
                };
                for error in &invalid.errors {
                    crate::terminal::say(format_args!("{error}{kept}"));
                }
            }
        }
        // The error names the file (and where in it).
        plexus::ConfigEvent::Rejected { error, .. } => crate::terminal::say(format_args!(
            "{}; nothing changed, the last good config stays",
            crate::terminal::chain(&**error)
        )),
        _ => {}
    }
}

/// Listens where `--http` says, saying where (and where it could not); off loopback only with
/// a token. The error is the message to print.
async fn listen(given: &ListenAddress, token: bool) -> Result<HttpListeners, String> {
    let addresses = given
        .resolve()
        .await
        .map_err(|e| format!("--http {given}: {}", crate::terminal::chain(&e)))?;
    if let Some(address) = plexus_gateway::off_loopback(&addresses)
        && !token
    {
        let which = match given.name() {
            Some(_) => format!("--http {given} resolves to {address}, which"),
            None => format!("--http {given}"),
        };
        return Err(format!(
            "{which} is not a loopback address: give clients a token to send (--token-file FILE or \
             {TOKEN_VAR})"
        ));
    }
    let listeners = HttpListeners::bind(&addresses, given.name().map(str::to_owned))
        .await
        .map_err(|e| crate::terminal::chain(&e))?;
    for (address, e) in listeners.failures() {
        crate::terminal::say(format_args!(
            "cannot listen on {address}: {}",
            crate::terminal::chain(&e)
        ));
    }
    let urls: Vec<String> = listeners
        .local_addrs()
        .iter()
        .map(|local| format!("http://{local}/mcp"))
        .collect();
    crate::terminal::say(format_args!("the gateway serves {}", urls.join(" and ")));
    Ok(listeners)
}
