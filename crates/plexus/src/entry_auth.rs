//! How each entry authenticates: the one place that maps an entry to its
//! [`AuthProvider`](plexus_transport::AuthProvider).
//!
//! [`plan`] decides from the entry alone, before anything is read or contacted;
//! [`DefaultConnector::provider`] then builds the provider (reading an IDE lockfile or the session
//! ingress token, per connect).

use std::sync::Arc;

use plexus_config::{HttpEntry, Scope, ServerConfig};
use plexus_net::StaticHeaders;

use crate::DefaultConnector;
use crate::connect::{Auth, ConnectError};

/// Why `claudeai-proxy` entries are refused without the `auth` feature.
pub(crate) const CLAUDEAI_PROXY_UNSUPPORTED: &str = "need the `auth` feature of plexus (their bearer token is OAuth's)";

/// Why entries with an `oauth` setting are refused without the `auth` feature.
#[cfg(not(feature = "auth"))]
const OAUTH_UNSUPPORTED: &str = "with an `oauth` setting need the `auth` feature of plexus";

/// How one entry authenticates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AuthPlan {
    /// No credentials: a 401 means the server needs a login (for `http` and `sse` the needs-auth
    /// cache remembers it).
    Anonymous,
    /// A static `Authorization` header: the server's rejection is a failure with that reason,
    /// never a login.
    StaticAuthorization,
    /// The entry's `headersHelper`, run for this connect and once more after a rejection.
    #[cfg(feature = "auth")]
    HeadersHelper {
        /// The command.
        command: String,
        /// The server's URL, for the helper's environment.
        url: String,
    },
    /// The token of the IDE lockfile for this port (`sse-ide`, `ws-ide` without `authToken`).
    #[cfg(feature = "auth")]
    IdeLockfile {
        /// The IDE server's port: the lockfile's name.
        port: u16,
    },
    /// The entry's own `authToken` (`ws-ide`).
    #[cfg(feature = "auth")]
    IdeToken {
        /// The token.
        token: String,
    },
    /// The session ingress token from the environment, when one is configured (`ws` entries
    /// of every scope but the project's), and only to a server it may go to (over TLS or to
    /// loopback).
    #[cfg(feature = "auth")]
    SessionIngress {
        /// The server's URL.
        url: String,
    },
    /// OAuth 2.1 with the tokens of the plexus home's store (`http` and `sse` without credentials
    /// of their own, `claudeai-proxy`): stored tokens are sent and refreshed; a 401 they cannot
    /// satisfy means the server needs `plexus login`. Without a home there is no store, and the
    /// entry connects without credentials.
    #[cfg(feature = "auth")]
    OAuth {
        /// The server's URL (the protected resource).
        url: String,
        /// The entry's `oauth` settings, if any.
        settings: Option<Box<plexus_config::OAuthConfig>>,
    },
}

impl AuthPlan {
    /// Whether connects of this entry consult and update the needs-auth cache: only `http` and
    /// `sse` entries without credentials of their own, where a 401 means "log in". An entry with
    /// a helper or a static `Authorization` header is never blocked by the cache: their 401 is
    /// not something a login fixes.
    #[cfg(feature = "auth")]
    pub(crate) fn uses_needs_auth_cache(&self, config: &ServerConfig) -> bool {
        match self {
            AuthPlan::OAuth { .. } => true,
            AuthPlan::Anonymous => matches!(config, ServerConfig::Http(_) | ServerConfig::Sse(_)),
            _ => false,
        }
    }
}

/// The plan for `config` from `scope` (`None`: the host's own entry), or why this build refuses
/// the entry (the end of a sentence that starts with the kind). A project's entry (a repository's
/// `.mcp.json`) never gets plexus's own secrets: its `ws` servers get no session ingress token.
pub(crate) fn plan(config: &ServerConfig, scope: Option<Scope>) -> Result<AuthPlan, &'static str> {
    match config {
        ServerConfig::Stdio(_) | ServerConfig::InProcess(_) => Ok(AuthPlan::Anonymous),
        ServerConfig::Http(http) | ServerConfig::Sse(http) => remote_plan(http),
        ServerConfig::Ws(ws) => match &ws.headers_helper {
            Some(command) => helper_plan(command, ws.url.as_str()),
            #[cfg(feature = "auth")]
            None if scope != Some(Scope::Project) => Ok(AuthPlan::SessionIngress {
                url: ws.url.as_str().to_owned(),
            }),
            None => {
                let _ = scope;
                Ok(AuthPlan::Anonymous)
            }
        },
        #[cfg(feature = "auth")]
        ServerConfig::SseIde(ide) => Ok(AuthPlan::IdeLockfile {
            port: ide.url.port_or_known_default().unwrap_or_default(),
        }),
        #[cfg(feature = "auth")]
        ServerConfig::WsIde(ide) => Ok(match &ide.auth_token {
            Some(token) => AuthPlan::IdeToken { token: token.clone() },
            None => AuthPlan::IdeLockfile {
                port: ide.url.port_or_known_default().unwrap_or_default(),
            },
        }),
        #[cfg(not(feature = "auth"))]
        ServerConfig::SseIde(_) | ServerConfig::WsIde(_) => Err("need the `auth` feature of plexus"),
        #[cfg(feature = "auth")]
        ServerConfig::ClaudeAiProxy(proxy) => Ok(AuthPlan::OAuth {
            url: proxy.url.as_str().to_owned(),
            settings: None,
        }),
        #[cfg(not(feature = "auth"))]
        ServerConfig::ClaudeAiProxy(_) => Err(CLAUDEAI_PROXY_UNSUPPORTED),
    }
}

/// `http` and `sse`: `headersHelper`, then a static `Authorization` header (neither ever falls
/// back to OAuth: their rejection is the answer), else OAuth (with the entry's `oauth` settings,
/// if any).
fn remote_plan(http: &HttpEntry) -> Result<AuthPlan, &'static str> {
    if let Some(command) = &http.headers_helper {
        return helper_plan(command, http.url.as_str());
    }
    if http
        .headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"))
    {
        return Ok(AuthPlan::StaticAuthorization);
    }
    #[cfg(feature = "auth")]
    return Ok(AuthPlan::OAuth {
        url: http.url.as_str().to_owned(),
        settings: http.oauth.clone().map(Box::new),
    });
    #[cfg(not(feature = "auth"))]
    match http.oauth {
        Some(_) => Err(OAUTH_UNSUPPORTED),
        None => Ok(AuthPlan::Anonymous),
    }
}

#[cfg(feature = "auth")]
#[allow(clippy::unnecessary_wraps)] // the same signature as without the feature.
fn helper_plan(command: &str, url: &str) -> Result<AuthPlan, &'static str> {
    Ok(AuthPlan::HeadersHelper {
        command: command.to_owned(),
        url: url.to_owned(),
    })
}

#[cfg(not(feature = "auth"))]
fn helper_plan(_: &str, _: &str) -> Result<AuthPlan, &'static str> {
    Err("with a `headersHelper` need the `auth` feature of plexus")
}

impl DefaultConnector {
    /// Builds the provider that `plan` names for server `name`, reading what it needs now.
    #[cfg_attr(not(feature = "auth"), allow(clippy::unused_async))]
    pub(crate) async fn provider(&self, name: &str, plan: &AuthPlan) -> Result<Auth, ConnectError> {
        let provider: Auth = match plan {
            AuthPlan::Anonymous => None,
            // No headers of its own: its 401 or 403 answer is the failure.
            AuthPlan::StaticAuthorization => Some(Arc::new(StaticHeaders(Vec::new()))),
            #[cfg(feature = "auth")]
            AuthPlan::HeadersHelper { command, url } => Some(Arc::new(
                plexus_auth::HeadersHelper::new(name, url, command)
                    .with_timeout(self.helper_timeout())
                    .without_env(crate::SECRET_VARIABLES),
            )),
            #[cfg(feature = "auth")]
            AuthPlan::IdeLockfile { port } => {
                let dir = self
                    .ide_lock_dir()
                    .ok_or_else(|| unavailable(name, plexus_auth::IdeError::NoLockDir))?;
                let token = plexus_auth::IdeToken::from_lockfile(&dir, *port)
                    .await
                    .map_err(|e| unavailable(name, e))?;
                Some(Arc::new(token))
            }
            #[cfg(feature = "auth")]
            AuthPlan::IdeToken { token } => Some(Arc::new(plexus_auth::IdeToken::from_config(token.clone()))),
            #[cfg(feature = "auth")]
            AuthPlan::SessionIngress { url } => {
                let env = self.env();
                let lookup = |variable: &str| env.get(variable);
                match plexus_auth::IngressToken::from_env(&lookup).await {
                    Ok(Some(_)) if !plexus_auth::ingress::may_receive_token(url) => {
                        tracing::warn!(
                            server = name,
                            "the session ingress token is not sent to {}: it goes only over wss:// or to a loopback \
                             address",
                            plexus_net::redact::redact_url(url)
                        );
                        None
                    }
                    Ok(token) => token.map(|token| Arc::new(token) as _),
                    Err(e) => return Err(unavailable(name, e)),
                }
            }
            #[cfg(feature = "auth")]
            AuthPlan::OAuth { url, settings } => match self.oauth_provider(name, url, settings.as_deref()) {
                Some(provider) => Some(Arc::new(provider.map_err(|e| unavailable(name, e))?)),
                None => None,
            },
        };
        #[cfg(not(feature = "auth"))]
        let _ = (self, name);
        Ok(provider)
    }
}

#[cfg(all(test, feature = "auth"))]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn entry(value: &Value) -> ServerConfig {
        ServerConfig::from_json(value).map(|(config, _)| config).unwrap()
    }

    fn plan_of(value: &Value) -> Result<AuthPlan, &'static str> {
        plan(&entry(value), Some(Scope::User))
    }

    fn oauth(url: &str, settings: Option<plexus_config::OAuthConfig>) -> AuthPlan {
        AuthPlan::OAuth {
            url: url.to_owned(),
            settings: settings.map(Box::new),
        }
    }

    #[test]
    fn every_kind_gets_its_plan() {
        assert_eq!(plan_of(&json!({"command": "x"})), Ok(AuthPlan::Anonymous));
        assert_eq!(
            plan_of(&json!({"type": "http", "url": "http://h/mcp"})),
            Ok(oauth("http://h/mcp", None))
        );
        assert_eq!(
            plan_of(&json!({"type": "sse", "url": "http://h/sse", "headers": {"AUTHORIZATION": "Bearer t"}})),
            Ok(AuthPlan::StaticAuthorization)
        );
        assert_eq!(
            plan_of(&json!({"type": "http", "url": "http://h/mcp", "headers": {"X-Key": "k"}})),
            Ok(oauth("http://h/mcp", None))
        );
        // The helper goes over a static Authorization header.
        assert_eq!(
            plan_of(
                &json!({"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer t"}, "headersHelper": "h"})
            ),
            Ok(AuthPlan::HeadersHelper {
                command: "h".into(),
                url: "http://h/mcp".into()
            })
        );
        assert_eq!(
            plan_of(&json!({"type": "ws", "url": "ws://h/mcp", "headersHelper": "h"})),
            Ok(AuthPlan::HeadersHelper {
                command: "h".into(),
                url: "ws://h/mcp".into()
            })
        );
        assert_eq!(
            plan_of(&json!({"type": "ws", "url": "ws://h/mcp"})),
            Ok(AuthPlan::SessionIngress {
                url: "ws://h/mcp".into()
            })
        );
        // A repository's entry never gets the session ingress token.
        let project_ws = entry(&json!({"type": "ws", "url": "wss://h/mcp"}));
        assert_eq!(plan(&project_ws, Some(Scope::Project)), Ok(AuthPlan::Anonymous));
        assert!(matches!(plan(&project_ws, None), Ok(AuthPlan::SessionIngress { .. })));
        assert_eq!(
            plan_of(&json!({"type": "sse-ide", "url": "http://127.0.0.1:4567/sse", "ideName": "code"})),
            Ok(AuthPlan::IdeLockfile { port: 4567 })
        );
        assert_eq!(
            plan_of(&json!({"type": "ws-ide", "url": "ws://127.0.0.1/", "ideName": "code"})),
            Ok(AuthPlan::IdeLockfile { port: 80 })
        );
        assert_eq!(
            plan_of(&json!({"type": "ws-ide", "url": "ws://127.0.0.1:1/", "ideName": "code", "authToken": "t"})),
            Ok(AuthPlan::IdeToken { token: "t".into() })
        );
        let with_oauth = entry(&json!({"type": "http", "url": "http://h/mcp", "oauth": {"clientId": "c"}}));
        let ServerConfig::Http(http) = &with_oauth else {
            unreachable!()
        };
        assert_eq!(plan(&with_oauth, None), Ok(oauth("http://h/mcp", http.oauth.clone())));
        assert_eq!(http.oauth.as_ref().and_then(|o| o.client_id.as_deref()), Some("c"));
        assert_eq!(
            plan_of(&json!({"type": "claudeai-proxy", "url": "https://h/mcp", "id": "c1"})),
            Ok(oauth("https://h/mcp", None))
        );
    }

    #[test]
    fn only_http_sse_and_proxy_entries_without_credentials_use_the_needs_auth_cache() {
        let uses = |value: Value| {
            let config = entry(&value);
            plan(&config, None).unwrap().uses_needs_auth_cache(&config)
        };
        assert!(uses(json!({"type": "http", "url": "http://h/mcp"})));
        assert!(uses(
            json!({"type": "sse", "url": "http://h/sse", "headers": {"X-Key": "k"}})
        ));
        assert!(uses(
            json!({"type": "claudeai-proxy", "url": "https://h/mcp", "id": "c1"})
        ));
        assert!(!uses(
            json!({"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer t"}})
        ));
        assert!(!uses(
            json!({"type": "http", "url": "http://h/mcp", "headersHelper": "h"})
        ));
        assert!(!uses(json!({"type": "ws", "url": "ws://h/mcp"})));
        assert!(!uses(json!({"command": "x"})));
    }
}

/// The [`ConnectError::Credentials`] of server `server`: the credentials failed with `cause`.
#[cfg(feature = "auth")]
fn unavailable(server: &str, cause: impl std::error::Error + Send + Sync + 'static) -> ConnectError {
    ConnectError::Credentials {
        server: server.to_owned(),
        source: Arc::new(cause),
    }
}
