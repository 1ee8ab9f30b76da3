//! `plexus login` and `plexus logout`: an OAuth login to one configured server, and forgetting
//! its tokens, with the connector's token store and needs-auth cache.

use std::sync::Arc;

use plexus_auth::OAuthError;
use plexus_auth::oauth::{LoggedIn, UserAgent};
use plexus_config::{ServerConfig, ServerKind};

use crate::DefaultConnector;
use crate::entry_auth::{self, AuthPlan};

/// Why a login or logout could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The entry does not authenticate with OAuth.
    #[error("server \"{server}\": {kind} servers {why}, not with an OAuth login")]
    NotOAuth {
        /// The server's name.
        server: String,
        /// The entry's kind.
        kind: ServerKind,
        /// How it authenticates instead.
        why: &'static str,
    },
    /// There is no plexus home to keep the tokens in.
    #[error("server \"{server}\": there is no plexus home to keep its tokens in (set PLEXUS_HOME or HOME)")]
    NoHome {
        /// The server's name.
        server: String,
    },
    /// The OAuth flow (or the token store) failed.
    #[error("server \"{server}\"")]
    OAuth {
        /// The server's name.
        server: String,
        /// What failed.
        #[source]
        source: OAuthError,
    },
}

impl DefaultConnector {
    /// Logs in to server `name` (an `http` or `sse` entry without a static `Authorization`
    /// header or a `headersHelper`, or a `claudeai-proxy` entry): discovers its authorization
    /// server, registers if needed, hands the authorization URL to `user_agent`, waits for the
    /// redirect on a loopback listener (at most the connector's
    /// [`login_timeout`](DefaultConnector::login_timeout)) and stores the tokens in
    /// `<home>/credentials.json`. A
    /// success clears the server from the needs-auth cache, so that the next connect uses the
    /// tokens at once.
    pub async fn login(
        &self,
        name: &str,
        config: &ServerConfig,
        user_agent: Arc<dyn UserAgent>,
    ) -> Result<LoggedIn, LoginError> {
        let provider = self.login_provider(name, config)?.with_user_agent(user_agent);
        let logged_in = provider.login().await.map_err(|source| LoginError::OAuth {
            server: name.to_owned(),
            source,
        })?;
        if let Some(cache) = self.needs_auth_cache() {
            let (cache, server) = (cache.clone(), name.to_owned());
            match tokio::task::spawn_blocking(move || cache.clear_server(&server)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!("server \"{name}\": {e}"),
                Err(e) => tracing::warn!("server \"{name}\": clearing the needs-auth cache failed: {e}"),
            }
        }
        Ok(logged_in)
    }

    /// Forgets server `name`'s OAuth tokens and client registrations; true when the store had
    /// some.
    pub async fn logout(&self, name: &str, config: &ServerConfig) -> Result<bool, LoginError> {
        self.login_provider(name, config)?
            .logout()
            .await
            .map_err(|source| LoginError::OAuth {
                server: name.to_owned(),
                source,
            })
    }

    /// The OAuth provider of an entry that logs in with OAuth.
    fn login_provider(&self, name: &str, config: &ServerConfig) -> Result<plexus_auth::OAuthProvider, LoginError> {
        let not_oauth = |why| LoginError::NotOAuth {
            server: name.to_owned(),
            kind: config.kind(),
            why,
        };
        let (url, settings) = match entry_auth::plan(config, None) {
            Ok(AuthPlan::OAuth { url, settings }) => (url, settings),
            Ok(AuthPlan::StaticAuthorization) => {
                return Err(not_oauth("with a static `Authorization` header authenticate"));
            }
            Ok(AuthPlan::HeadersHelper { .. }) => return Err(not_oauth("with a `headersHelper` authenticate")),
            Ok(AuthPlan::IdeLockfile { .. } | AuthPlan::IdeToken { .. }) => {
                return Err(not_oauth("authenticate with the IDE's token"));
            }
            Ok(AuthPlan::SessionIngress { .. }) => {
                return Err(not_oauth("authenticate with the session ingress token"));
            }
            Ok(AuthPlan::Anonymous) => return Err(not_oauth("need no authentication")),
            Err(why) => return Err(not_oauth(why)),
        };
        match self.oauth_provider(name, &url, settings.as_deref()) {
            Some(Ok(provider)) => Ok(provider),
            Some(Err(source)) => Err(LoginError::OAuth {
                server: name.to_owned(),
                source,
            }),
            None => Err(LoginError::NoHome {
                server: name.to_owned(),
            }),
        }
    }
}
