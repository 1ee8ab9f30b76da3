//! The settings of one server's OAuth (the config's `oauth` object, mapped by the facade, plus the
//! environment).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::jwt::SigningKey;
use super::{OAuthError, SettingsProblem};
use crate::store::Secret;

/// The `subject_token_type` of an OpenID Connect ID token (RFC 8693 §3).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// How a provider obtains its tokens.
#[derive(Debug, Clone, Default)]
pub enum OAuthGrant {
    /// The authorization code flow with PKCE: a user logs in through the [`UserAgent`](super::UserAgent).
    #[default]
    AuthorizationCode,
    /// Client credentials (RFC 6749 §4.4; the MCP client credentials extension): the client
    /// acts for itself with its id and its secret (`client_secret_basic` or `_post`) or its
    /// private key (`private_key_jwt`, ES256). No user, no user agent.
    ClientCredentials,
    /// A JWT bearer assertion (RFC 7523 §2.1; workload identity federation): a token that the
    /// workload's platform issues, exchanged for an access token. The client id, when
    /// configured, authenticates the client too.
    JwtBearer {
        /// Where the assertion is.
        assertion: AssertionSource,
    },
    /// Enterprise-managed authorization (cross-app access): the user's ID token is exchanged at
    /// the enterprise identity provider (RFC 8693) for an identity assertion authorization grant
    /// (ID-JAG) for the server's authorization server, which the client then presents with the
    /// JWT bearer grant, authenticating with its own client id and secret.
    EnterpriseManaged(Box<IdentityProvider>),
}

impl OAuthGrant {
    /// Whether the grant needs a user at a browser.
    pub fn is_interactive(&self) -> bool {
        matches!(self, OAuthGrant::AuthorizationCode)
    }
}

/// Where an assertion (a JWT) comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum AssertionSource {
    /// The assertion itself.
    Value(Secret),
    /// A file that holds it, read again for every token request (platforms rotate such files
    /// in place, e.g. a Kubernetes projected service account token).
    File(PathBuf),
    /// An environment variable that holds it.
    Env(String),
}

impl fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssertionSource::Value(_) => f.write_str("Value(<redacted>)"),
            AssertionSource::File(path) => f.debug_tuple("File").field(path).finish(),
            AssertionSource::Env(name) => f.debug_tuple("Env").field(name).finish(),
        }
    }
}

/// The enterprise identity provider of [`OAuthGrant::EnterpriseManaged`].
#[derive(Debug, Clone)]
pub struct IdentityProvider {
    /// Its issuer identifier (where its metadata, and so its token endpoint, is found).
    pub issuer: String,
    /// Its token endpoint; when `None`, read from its metadata at the issuer.
    pub token_endpoint: Option<String>,
    /// The client id of this client at the identity provider.
    pub client_id: String,
    /// The client secret at the identity provider, if it has one (`client_secret_basic`).
    pub client_secret: Option<Secret>,
    /// The user's token to exchange (an ID token from the identity provider's login).
    pub subject_token: AssertionSource,
    /// Its type ([`ID_TOKEN_TYPE`] by default).
    pub subject_token_type: String,
}

impl IdentityProvider {
    /// The identity provider `issuer`, where this client is `client_id`, exchanging the ID token
    /// from `subject_token`.
    pub fn new(issuer: impl Into<String>, client_id: impl Into<String>, subject_token: AssertionSource) -> Self {
        IdentityProvider {
            issuer: issuer.into(),
            token_endpoint: None,
            client_id: client_id.into(),
            client_secret: None,
            subject_token,
            subject_token_type: ID_TOKEN_TYPE.to_owned(),
        }
    }
}

/// When tokens are bound to a key with DPoP (RFC 9449).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DpopMode {
    /// When the authorization server supports ES256 proofs
    /// (`dpop_signing_alg_values_supported`) and the server asks for DPoP (a `DPoP` challenge,
    /// or DPoP in its protected resource metadata).
    #[default]
    Auto,
    /// Whenever the authorization server supports ES256 proofs.
    Always,
    /// Never: bearer tokens only.
    Never,
}

/// How long a login waits for the authorization response unless told otherwise (5 minutes).
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The environment variable that fixes the redirect listener's port when the server's settings do
/// not.
pub const CALLBACK_PORT_ENV: &str = "PLEXUS_OAUTH_CALLBACK_PORT";

/// How OAuth is done for one server. The facade fills it from the config entry's `oauth` object
/// (`clientId`, `clientSecret`, `callbackPort`, `authServerMetadataUrl`, `scopes`).
///
/// ```
/// use plexus_auth::oauth::OAuthSettings;
///
/// let settings = OAuthSettings::default().client_id("my-app").scopes(["files:read"]);
/// assert_eq!(settings.scopes, ["files:read"]);
/// assert!(!format!("{:?}", settings.client_secret("s3cret")).contains("s3cret"));
///
/// // A service that acts for itself, authenticating with an ES256 key (`private_key_jwt`).
/// use plexus_auth::oauth::OAuthGrant;
/// use plexus_auth::oauth::jwt::SigningKey;
///
/// let key = SigningKey::generate()?;
/// let service = OAuthSettings::default()
///     .client_id("reports-bot")
///     .private_key(key)
///     .grant(OAuthGrant::ClientCredentials);
/// assert!(!service.grant.is_interactive());
/// assert!(!format!("{service:?}").contains("\"d\""));
/// # Ok::<(), plexus_auth::oauth::jwt::JwtError>(())
/// ```
#[derive(Clone)]
pub struct OAuthSettings {
    /// A pre-registered client id (`oauth.clientId`).
    pub client_id: Option<String>,
    /// The secret of a pre-registered confidential client (`oauth.clientSecret`).
    pub client_secret: Option<Secret>,
    /// A fixed port for the redirect listener (`oauth.callbackPort`); random when `None` and
    /// [`CALLBACK_PORT_ENV`] is not set.
    pub callback_port: Option<u16>,
    /// The authorization server metadata URL, skipping discovery (`oauth.authServerMetadataUrl`).
    pub auth_server_metadata_url: Option<String>,
    /// The scopes to request (`oauth.scopes`); when empty, the server's challenge or metadata
    /// decides.
    pub scopes: Vec<String>,
    /// The URL of this client's Client ID Metadata Document, used as the client id where the
    /// authorization server supports such documents.
    pub client_metadata_url: Option<String>,
    /// The `client_name` sent in dynamic client registration.
    pub client_name: String,
    /// How long a login waits for the authorization response ([`DEFAULT_LOGIN_TIMEOUT`], 5
    /// minutes, by default; `plexus login --timeout`).
    pub login_timeout: Duration,
    /// The limit of each HTTP request to a metadata, registration or token endpoint (default 30 s).
    pub request_timeout: Duration,
    /// How tokens are obtained (default: the authorization code flow).
    pub grant: OAuthGrant,
    /// The private key of the pre-registered client, for `private_key_jwt` (ES256).
    pub private_key: Option<Arc<SigningKey>>,
    /// When tokens are bound to a key with DPoP (default [`DpopMode::Auto`]).
    pub dpop: DpopMode,
    /// Which proxy the requests to the authorization server go through (default: the
    /// process's environment; the facade gives the Hub's).
    pub proxy: plexus_net::http::ProxyChoice,
    /// What those requests trust besides the platform's roots (default: the process's
    /// `NODE_EXTRA_CA_CERTS`; the facade gives the Hub's, and the entry's `ca`).
    pub tls: plexus_net::tls::TlsOptions,
}

impl Default for OAuthSettings {
    fn default() -> Self {
        OAuthSettings {
            client_id: None,
            client_secret: None,
            callback_port: None,
            auth_server_metadata_url: None,
            scopes: Vec::new(),
            client_metadata_url: None,
            client_name: "plexus".to_owned(),
            login_timeout: DEFAULT_LOGIN_TIMEOUT,
            request_timeout: Duration::from_secs(30),
            grant: OAuthGrant::AuthorizationCode,
            private_key: None,
            dpop: DpopMode::Auto,
            proxy: plexus_net::http::ProxyChoice::Environment,
            tls: plexus_net::tls::TlsOptions::default(),
        }
    }
}

impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("callback_port", &self.callback_port)
            .field("auth_server_metadata_url", &self.auth_server_metadata_url)
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("login_timeout", &self.login_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("grant", &self.grant)
            .field("private_key", &self.private_key.as_ref().map(|_| "<private key>"))
            .field("dpop", &self.dpop)
            .field("proxy", &self.proxy)
            .field("tls", &self.tls)
            .finish()
    }
}

impl OAuthSettings {
    /// With a pre-registered client id.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// With the secret of the pre-registered client.
    #[must_use]
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(Secret::new(secret));
        self
    }

    /// With a fixed redirect listener port.
    #[must_use]
    pub fn callback_port(mut self, port: u16) -> Self {
        self.callback_port = Some(port);
        self
    }

    /// With the time a login waits for the authorization response.
    #[must_use]
    pub fn login_timeout(mut self, timeout: Duration) -> Self {
        self.login_timeout = timeout;
        self
    }

    /// With the authorization server metadata URL (no discovery).
    #[must_use]
    pub fn auth_server_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.auth_server_metadata_url = Some(url.into());
        self
    }

    /// With the scopes to request.
    #[must_use]
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// With the URL of this client's Client ID Metadata Document.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// With the grant that obtains tokens.
    #[must_use]
    pub fn grant(mut self, grant: OAuthGrant) -> Self {
        self.grant = grant;
        self
    }

    /// With the private key of the pre-registered client (`private_key_jwt`).
    #[must_use]
    pub fn private_key(mut self, key: SigningKey) -> Self {
        self.private_key = Some(Arc::new(key));
        self
    }

    /// With the DPoP mode.
    #[must_use]
    pub fn dpop(mut self, mode: DpopMode) -> Self {
        self.dpop = mode;
        self
    }

    /// Fills [`callback_port`](Self::callback_port) from [`CALLBACK_PORT_ENV`] when it is not set
    /// (the configured port wins). A value that is not a port is an error naming the variable.
    pub fn with_env(self) -> Result<Self, OAuthError> {
        self.with_callback_port_var(std::env::var(CALLBACK_PORT_ENV).ok().as_deref())
    }

    /// [`with_env`](Self::with_env) with the variable's value given (for callers that look the
    /// environment up their own way).
    pub fn with_callback_port_var(mut self, value: Option<&str>) -> Result<Self, OAuthError> {
        if self.callback_port.is_some() {
            return Ok(self);
        }
        let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(self);
        };
        match value.parse::<u16>() {
            Ok(port) if port > 0 => {
                self.callback_port = Some(port);
                Ok(self)
            }
            _ => Err(OAuthError::Settings {
                field: CALLBACK_PORT_ENV.to_owned(),
                problem: SettingsProblem::NotAPort {
                    value: value.to_owned(),
                },
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_port_wins_over_the_environment() {
        let configured = OAuthSettings::default().callback_port(7000);
        assert_eq!(
            configured.with_callback_port_var(Some("8000")).unwrap().callback_port,
            Some(7000)
        );
        let from_env = OAuthSettings::default().with_callback_port_var(Some(" 8000 ")).unwrap();
        assert_eq!(from_env.callback_port, Some(8000));
        assert_eq!(
            OAuthSettings::default()
                .with_callback_port_var(None)
                .unwrap()
                .callback_port,
            None
        );
        for bad in ["0", "70000", "http"] {
            let err = OAuthSettings::default().with_callback_port_var(Some(bad)).unwrap_err();
            assert_eq!(
                plexus_transport::error_chain(&err),
                format!("OAuth setting PLEXUS_OAUTH_CALLBACK_PORT: {bad:?} is not a port number (1-65535)")
            );
        }
    }
}
