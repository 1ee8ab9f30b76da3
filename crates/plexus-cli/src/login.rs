//! `plexus login NAME [--timeout SECONDS]` and `plexus logout NAME`: the OAuth login of one remote
//! server (the authorization URL printed and opened in a browser, the redirect caught on a
//! loopback listener, waited for at most `--timeout`, 300 s by default), and forgetting its
//! tokens.

use std::sync::Arc;
use std::time::Duration;

use plexus::auth::FileWarnings;
use plexus::auth::oauth::{AuthorizationPrompt, UserAgent, UserAgentError};
use plexus::transport::BoxFuture;
use plexus::{DefaultConnector, LoginError};

use crate::connect::report_file_warnings;
use crate::sources::Configured;
use crate::terminal::outln;
use crate::{Outcome, block_on, fail};

/// How long a browser command may take to start before it is left to itself.
const BROWSER_START_LIMIT: Duration = Duration::from_secs(10);

/// `plexus login NAME [--timeout SECONDS]`: waits at most `timeout` for the browser to come back.
pub(crate) fn login_command(configured: &Configured, name: &str, timeout: Duration) -> Outcome {
    let Some(config) = runnable(configured, name) else {
        return Outcome::Usage;
    };
    block_on(async move {
        let connector = DefaultConnector::from_env()
            .with_env(crate::secrets::environment())
            .with_login_timeout(timeout);
        let browser = Browser {
            warnings: connector.file_warnings().clone(),
        };
        let result = connector.login(name, &config, Arc::new(browser)).await;
        report_file_warnings(connector.file_warnings());
        match result {
            Ok(logged_in) => {
                let scope = logged_in
                    .scope
                    .map(|scope| format!(", scope \"{scope}\""))
                    .unwrap_or_default();
                crate::terminal::print_block(&format!(
                    "logged in to server \"{name}\" (authorization server {}{scope})",
                    logged_in.issuer
                ));
                Outcome::Ok
            }
            Err(e) => login_failed(&e),
        }
    })
}

/// `plexus logout NAME`.
pub(crate) fn logout_command(configured: &Configured, name: &str) -> Outcome {
    let Some(config) = runnable(configured, name) else {
        return Outcome::Usage;
    };
    block_on(async move {
        let connector = DefaultConnector::from_env().with_env(crate::secrets::environment());
        let store = connector
            .token_store()
            .map(|store| store.path().display().to_string())
            .unwrap_or_default();
        let result = connector.logout(name, &config).await;
        report_file_warnings(connector.file_warnings());
        match result {
            Ok(true) => {
                outln!("removed the tokens of server \"{name}\" from {store}");
                Outcome::Ok
            }
            Ok(false) => {
                outln!("server \"{name}\" had no stored tokens in {store}");
                Outcome::Ok
            }
            Err(e) => login_failed(&e),
        }
    })
}

/// The entry of `name` when it may run (a pending, rejected, disabled or invalid entry is not
/// contacted, not even for a login); else reports why not.
fn runnable(configured: &Configured, name: &str) -> Option<plexus::config::ServerConfig> {
    let Some(server) = configured.server(name) else {
        fail(configured.unknown_server(name));
        return None;
    };
    server.report_diagnostics();
    if let Some(config) = server.runnable() {
        return Some(config.clone());
    }
    fail(server.not_started());
    None
}

fn login_failed(error: &LoginError) -> Outcome {
    crate::terminal::say_error(error);
    match error {
        LoginError::NotOAuth { .. } | LoginError::NoHome { .. } => Outcome::Usage,
        _ => Outcome::Connection,
    }
}

/// The terminal's user agent: prints the authorization URL (always) and opens it in a browser
/// when one can be started: `$BROWSER` (a `:`-separated list of commands, the first that starts
/// wins), else `xdg-open` (`open` on macOS). What the token store reported while the login got
/// ready (a corrupt or too open credentials file) is printed first, not after the wait.
struct Browser {
    warnings: FileWarnings,
}

impl UserAgent for Browser {
    fn open<'a>(&'a self, prompt: &'a AuthorizationPrompt) -> BoxFuture<'a, Result<(), UserAgentError>> {
        Box::pin(async move {
            report_file_warnings(&self.warnings);
            crate::terminal::say(format_args!(
                "to log in to server \"{}\", open this URL in a browser:\n\n    {}\n\nplexus: waiting for the \
                 browser to come back to {}",
                prompt.server, prompt.url, prompt.redirect_uri
            ));
            if let Err(reason) = open_browser(&prompt.url) {
                crate::terminal::say(format_args!(
                    "could not open a browser ({reason}); open the URL above yourself"
                ));
            }
            Ok(())
        })
    }
}

/// The browser commands to try, in order.
fn browser_commands() -> Vec<String> {
    match std::env::var("BROWSER") {
        Ok(list) if !list.trim().is_empty() => list
            .split(':')
            .map(str::trim)
            .filter(|command| !command.is_empty())
            .map(str::to_owned)
            .collect(),
        _ if cfg!(target_os = "macos") => vec!["open".to_owned()],
        _ => vec!["xdg-open".to_owned()],
    }
}

/// Starts the first browser command that starts, with the URL as its argument; its output is
/// discarded and it is reaped in the background (at most [`BROWSER_START_LIMIT`] is waited for).
pub(crate) fn open_browser(url: &str) -> Result<(), String> {
    let mut failures = Vec::new();
    for command in browser_commands() {
        let spawned = tokio::process::Command::new(&command)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match spawned {
            Ok(mut child) => {
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(BROWSER_START_LIMIT, child.wait()).await;
                });
                return Ok(());
            }
            Err(e) => failures.push(format!("{command}: {e}")),
        }
    }
    Err(failures.join("; "))
}
