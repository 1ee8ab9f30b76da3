//! [`OAuthProvider`]: the OAuth 2.1 [`AuthProvider`] of one server.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use plexus_net::challenge::{AuthChallenge, WwwAuthenticate, dpop_nonce, is_dpop_nonce_challenge};
use plexus_net::redact::redact_url;
use plexus_transport::{
    AuthCause, AuthDecision, AuthFailure, AuthHeaders, AuthProvider, BoxFuture, Rejection, error_chain,
};
use tokio::sync::Mutex;
use url::Url;

use super::discovery::{Discovery, discover};
use super::dpop::{self, DpopState};
use super::grant::DpopBinding;
use super::http::OAuthHttp;
use super::jwt::SigningKey;
use super::login::{LoginRequest, login};
use super::machine::{MachineRequest, obtain};
use super::registration::credentials;
use super::resource::resource_matches;
use super::scopes::{OFFLINE_ACCESS, ScopeSources, parse, select, union};
use super::{OAuthError, OAuthSettings, SettingsProblem, UserAgent};
use crate::store::{
    ClientSource, Secret, StoredClient, StoredCredential, StoredTokens, TokenStore, TokenStoreError, unix_now,
};

mod refresh;

/// Access tokens are refreshed this many seconds before they expire.
pub const REFRESH_MARGIN: u64 = 30;
/// The most authorizations a provider starts for the same set of scopes (a server that keeps
/// answering `insufficient_scope` is not asked forever).
pub const MAX_AUTHORIZATION_ATTEMPTS: u32 = 3;

/// The OAuth 2.1 [`AuthProvider`] of one `http` or `sse` server.
///
/// * [`headers`](AuthProvider::headers): the stored access token of this server (bound
///   to the server's URL and to the issuer that granted it), refreshed first when it expires
///   within [`REFRESH_MARGIN`] seconds (a grant without a user obtains a new one); no header
///   when there is none (the server's 401 starts discovery). A DPoP-bound token goes as
///   `Authorization: DPoP …` with a `DPoP` proof for the request's method and URL.
/// * [`on_rejection`](AuthProvider::on_rejection) with 401: discovery (see the [module
///   docs](super)); tokens of another issuer are never used, so a server that moved to another
///   authorization server gets a new registration and login there. A token that was refused is
///   refreshed once ([`AuthDecision::Retry`]); after that, or without a refresh token, a login
///   runs when the provider has a [`UserAgent`], else the answer is
///   [`AuthDecision::NeedsAuth`].
/// * With 403 and `error="insufficient_scope"`: a login for the union of the scopes held and
///   challenged (step-up), at most [`MAX_AUTHORIZATION_ATTEMPTS`] times per scope set.
/// * Other 403s, and discovery that refuses the server (resource or issuer mismatch), are
///   [`AuthDecision::Fail`].
/// * Every rejection's `DPoP-Nonce` is kept for the next proofs, and a DPoP nonce challenge to
///   a bound token is answered with [`AuthDecision::Retry`] before anything else.
/// * With a grant that needs no user ([`OAuthGrant`](super::OAuthGrant)), a 401 gets a token
///   request instead of a login, and needs no user agent.
///
/// One login or refresh runs at a time; concurrent requests wait for it. Tokens are saved in the
/// [`TokenStore`] after every change; a store that cannot be read or written is logged and the
/// tokens are kept in memory, but one that is a symbolic link (or whose lock file is) fails every
/// request with [`TokenStoreError::Symlink`]. A refresh holds the store's lock across processes
/// and uses tokens that another process refreshed meanwhile; a refresh token that the
/// authorization server rejects is removed from the store and never sent again: without a user
/// agent the server then needs a login, for the reason [`OAuthError::RefreshRejected`].
pub struct OAuthProvider {
    server: String,
    server_url: Url,
    settings: OAuthSettings,
    store: TokenStore,
    user_agent: Option<Arc<dyn UserAgent>>,
    http: OAuthHttp,
    dpop: DpopState,
    state: Mutex<State>,
}

impl fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("server", &self.server)
            .field("url", &redact_url(self.server_url.as_str()))
            .field("settings", &self.settings)
            .field("store", &self.store)
            .field("user_agent", &self.user_agent.as_ref().map(|_| "<user agent>"))
            .finish_non_exhaustive()
    }
}

/// What the provider knows between requests.
#[derive(Default)]
struct State {
    /// Whether the store was read.
    loaded: bool,
    /// The issuer whose credential is in use, and that credential.
    current: Option<(String, StoredCredential)>,
    /// The access token after whose 401 a refresh was already tried.
    refreshed_after_401: Option<Secret>,
    /// Authorizations started, by requested scope set (sorted).
    attempts: HashMap<Vec<String>, u32>,
    /// Whether the server challenged with the `DPoP` scheme.
    resource_asked_dpop: bool,
    /// The last discovery (a grant without a user renews its tokens with it before they expire).
    discovery: Option<Discovery>,
    /// Why the last refresh token was rejected, until new tokens come: what a provider without
    /// a user agent answers instead of trying anything again.
    refresh_rejected: Option<(String, Arc<OAuthError>)>,
}

/// The first `Bearer` or `DPoP` challenge: the OAuth one.
fn oauth_challenge(challenge: &AuthChallenge) -> Option<&WwwAuthenticate> {
    challenge
        .challenges
        .iter()
        .find(|c| c.scheme.eq_ignore_ascii_case("bearer") || c.scheme.eq_ignore_ascii_case(dpop::SCHEME))
}

/// A completed explicit login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedIn {
    /// The authorization server's issuer.
    pub issuer: String,
    /// The scopes granted, when the server said.
    pub scope: Option<String>,
}

/// An OAuth error of one server's provider, as a transport reports it: the cause of the
/// `TransportError::NeedsAuth` or `TransportError::AuthFailed` a request fails with.
#[derive(Debug, thiserror::Error)]
#[error("server {server:?}")]
pub struct ServerOAuthError {
    /// The server, as the user names it.
    pub server: String,
    /// What failed.
    #[source]
    pub source: OAuthError,
}

impl OAuthProvider {
    /// `error` as the cause a transport reports, naming this provider's server.
    fn cause(&self, error: OAuthError) -> AuthCause {
        Arc::new(ServerOAuthError {
            server: self.server.clone(),
            source: error,
        })
    }

    /// The provider of the server `server` at `url`, keeping tokens in `store`. Without
    /// [`with_user_agent`](Self::with_user_agent) it never starts a login.
    pub fn new(server: &str, url: &str, settings: OAuthSettings, store: TokenStore) -> Result<Self, OAuthError> {
        let server_url = Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
            .ok_or_else(|| OAuthError::Settings {
                field: format!("the URL of server {server:?}"),
                problem: SettingsProblem::NotHttpUrl { url: redact_url(url) },
            })?;
        let http = OAuthHttp::new(settings.request_timeout, &settings.proxy, &settings.tls)?;
        Ok(OAuthProvider {
            server: server.to_owned(),
            server_url,
            settings,
            store,
            user_agent: None,
            http,
            dpop: DpopState::default(),
            state: Mutex::new(State::default()),
        })
    }

    /// With a user agent: a 401 that refreshing cannot fix starts a login.
    #[must_use]
    pub fn with_user_agent(mut self, user_agent: Arc<dyn UserAgent>) -> Self {
        self.user_agent = Some(user_agent);
        self
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Logs in now (`plexus login NAME`): an unauthenticated request to the server for its
    /// challenge (its `resource_metadata` and `scope`), discovery, then a login with the
    /// configured scopes (else the challenge's, else the resource's). Needs a user agent.
    pub async fn login(&self) -> Result<LoggedIn, OAuthError> {
        let mut state = self.state.lock().await;
        self.ensure_loaded(&mut state).await?;
        let challenges = self.http.probe_challenges(self.server_url.as_str()).await;
        let challenge = AuthChallenge {
            status: 401,
            url: self.server_url.to_string(),
            challenges,
        };
        Self::note_dpop_challenge(&mut state, &challenge);
        let bearer = oauth_challenge(&challenge);
        let discovery = self.discover(bearer.and_then(|b| b.param("resource_metadata"))).await?;
        let scopes = self.scopes_for(&discovery, bearer.and_then(|b| b.param("scope")), &[]);
        state.attempts.clear();
        self.authorize(&mut state, &discovery, scopes, true).await?;
        let scope = state
            .current
            .as_ref()
            .and_then(|(_, c)| c.tokens.as_ref())
            .and_then(|t| t.scope.clone());
        Ok(LoggedIn {
            issuer: discovery.issuer,
            scope,
        })
    }

    /// Forgets this server's tokens and registrations (`plexus logout NAME`), in the store and in
    /// memory; true when the store had some.
    pub async fn logout(&self) -> Result<bool, OAuthError> {
        let mut state = self.state.lock().await;
        *state = State {
            loaded: true,
            ..State::default()
        };
        Ok(self.store.remove_server(&self.server).await?)
    }

    /// The headers of a request of `method` to `url` (see [`DpopState::authorization`]),
    /// renewing the token first when it is about to expire: with its refresh token, or for a
    /// grant without a user, with that grant.
    async fn current_headers(&self, method: &str, url: &str) -> Result<AuthHeaders, AuthFailure> {
        let mut state = self.state.lock().await;
        self.ensure_loaded(&mut state)
            .await
            .map_err(|e| AuthFailure::Failed { cause: self.cause(e) })?;
        let Some(tokens) = state.current.as_ref().and_then(|(_, c)| c.tokens.clone()) else {
            return Ok(Vec::new());
        };
        if tokens.expires_within(REFRESH_MARGIN) {
            let renewed = if tokens.refresh_token.is_some() {
                self.refresh(&mut state).await
            } else if !self.settings.grant.is_interactive()
                && let Some(discovery) = state
                    .discovery
                    .clone()
                    .filter(|d| state.current.as_ref().is_some_and(|(issuer, _)| *issuer == d.issuer))
            {
                let scopes = Self::requested_scopes(&state);
                self.obtain_tokens(&mut state, &discovery, scopes).await
            } else {
                Ok(())
            };
            match renewed {
                Ok(()) => {}
                // Nothing else to try without a user: say so now, without a request that can only
                // be refused.
                Err(e @ OAuthError::RefreshRejected { .. }) if self.cannot_log_in() => {
                    return Err(AuthFailure::NeedsAuth { cause: self.cause(e) });
                }
                Err(e) => {
                    tracing::warn!(server = %self.server, error = %error_chain(&e), "renewing the OAuth access token failed");
                }
            }
        }
        let Some(tokens) = state
            .current
            .as_ref()
            .and_then(|(_, c)| c.tokens.clone())
            .filter(|t| !t.expires_within(0))
        else {
            return Ok(Vec::new());
        };
        match self.dpop.authorization(&tokens, method, url) {
            Ok(headers) => Ok(headers),
            Err(e @ OAuthError::Jwt(_)) => {
                // A bound token whose key is gone is of no use: the server's 401 starts over.
                tracing::warn!(server = %self.server, error = %error_chain(&e), "dropping a DPoP-bound token");
                self.drop_tokens(&mut state).await;
                Ok(Vec::new())
            }
            Err(e) => Err(AuthFailure::Failed { cause: self.cause(e) }),
        }
    }

    /// Whether the current tokens are DPoP-bound.
    async fn holds_bound_token(&self) -> bool {
        let state = self.state.lock().await;
        state
            .current
            .as_ref()
            .and_then(|(_, c)| c.tokens.as_ref())
            .is_some_and(|t| t.token_type.eq_ignore_ascii_case(dpop::SCHEME))
    }

    /// Remembers that the server asked for DPoP.
    fn note_dpop_challenge(state: &mut State, challenge: &AuthChallenge) {
        if challenge
            .challenges
            .iter()
            .any(|c| c.scheme.eq_ignore_ascii_case(dpop::SCHEME))
        {
            state.resource_asked_dpop = true;
        }
    }

    /// What to do about a 401 or 403.
    async fn decide(&self, challenge: &AuthChallenge) -> AuthDecision {
        let mut state = self.state.lock().await;
        if let Err(e) = self.ensure_loaded(&mut state).await {
            return AuthDecision::Fail { cause: self.cause(e) };
        }
        Self::note_dpop_challenge(&mut state, challenge);
        let bearer = oauth_challenge(challenge);
        let error = bearer.and_then(|b| b.param("error"));
        let outcome = match challenge.status {
            401 => self.on_unauthorized(&mut state, challenge).await,
            403 if error == Some("insufficient_scope") => self.on_insufficient_scope(&mut state, challenge).await,
            status => {
                let refused = OAuthError::Forbidden {
                    status,
                    code: error.map(str::to_owned),
                };
                return AuthDecision::Fail {
                    cause: self.cause(refused),
                };
            }
        };
        match outcome {
            Ok(()) => AuthDecision::Retry,
            Err(e) => {
                let login_fixes = matches!(
                    e,
                    OAuthError::LoginRequired { .. }
                        | OAuthError::RefreshRejected { .. }
                        | OAuthError::LoginTimedOut { .. }
                        | OAuthError::AuthorizationDenied { .. }
                        | OAuthError::UserAgent(_)
                );
                let cause = self.cause(e);
                if login_fixes {
                    AuthDecision::NeedsAuth { cause }
                } else {
                    AuthDecision::Fail { cause }
                }
            }
        }
    }

    /// A 401: refresh once, else log in.
    async fn on_unauthorized(&self, state: &mut State, challenge: &AuthChallenge) -> Result<(), OAuthError> {
        let bearer = oauth_challenge(challenge);
        let discovery = self.discover(bearer.and_then(|b| b.param("resource_metadata"))).await?;
        self.use_issuer(state, &discovery).await;
        let rejected = state
            .current
            .as_ref()
            .and_then(|(_, c)| c.tokens.as_ref())
            .map(|t| (t.access_token.clone(), t.refresh_token.is_some()));
        if let Some((access_token, refreshable)) = rejected {
            if refreshable && state.refreshed_after_401.as_ref() != Some(&access_token) {
                state.refreshed_after_401 = Some(access_token);
                match self.refresh(state).await {
                    Ok(()) => return Ok(()),
                    // Rejected: the store no longer has the tokens, and without a user agent
                    // there is nothing else to try.
                    Err(e @ OAuthError::RefreshRejected { .. }) if self.cannot_log_in() => return Err(e),
                    Err(e) => {
                        tracing::info!(server = %self.server, error = %error_chain(&e), "refresh after a 401 failed; logging in again");
                    }
                }
            }
            self.drop_tokens(state).await;
        }
        let held = Self::requested_scopes(state);
        let scopes = self.scopes_for(&discovery, bearer.and_then(|b| b.param("scope")), &held);
        // A grant without a user is not limited per scope set on a 401: each request is retried
        // once at most, and tokens that expire must be renewable for as long as the session runs.
        let counted = self.settings.grant.is_interactive();
        self.authorize(state, &discovery, scopes, counted).await
    }

    /// A 403 `insufficient_scope`: log in for the union of the scopes held and challenged.
    async fn on_insufficient_scope(&self, state: &mut State, challenge: &AuthChallenge) -> Result<(), OAuthError> {
        let bearer = oauth_challenge(challenge);
        let challenged = parse(bearer.and_then(|b| b.param("scope")).unwrap_or_default());
        let discovery = self.discover(bearer.and_then(|b| b.param("resource_metadata"))).await?;
        self.use_issuer(state, &discovery).await;
        let mut held = Self::requested_scopes(state);
        if let Some(granted) = state
            .current
            .as_ref()
            .and_then(|(_, c)| c.tokens.as_ref())
            .and_then(|t| t.scope.as_deref())
        {
            held = union(&held, &parse(granted));
        }
        let mut scopes = union(&held, &challenged);
        if scopes.is_empty() {
            scopes = self.scopes_for(&discovery, None, &[]);
        }
        if self.settings.grant.is_interactive()
            && discovery.metadata.scopes_supported.iter().any(|s| s == OFFLINE_ACCESS)
        {
            scopes = union(&scopes, &[OFFLINE_ACCESS.to_owned()]);
        }
        self.authorize(state, &discovery, scopes, true).await
    }

    /// Runs a login for `scopes` (bounded per scope set when `counted`), or for a grant without
    /// a user a token request, and stores the outcome.
    async fn authorize(
        &self,
        state: &mut State,
        discovery: &Discovery,
        scopes: Vec<String>,
        counted: bool,
    ) -> Result<(), OAuthError> {
        let user_agent = if self.settings.grant.is_interactive() {
            match self.user_agent.as_ref() {
                Some(user_agent) => Some(user_agent),
                None => return Err(self.login_needed(state, &discovery.issuer)),
            }
        } else {
            None
        };
        if counted {
            let mut key = scopes.clone();
            key.sort();
            let attempts = state.attempts.entry(key).or_default();
            if *attempts >= MAX_AUTHORIZATION_ATTEMPTS {
                return Err(OAuthError::TooManyAttempts {
                    scopes: if scopes.is_empty() {
                        "none".to_owned()
                    } else {
                        scopes.join(" ")
                    },
                    attempts: *attempts,
                });
            }
            *attempts += 1;
        }
        let Some(user_agent) = user_agent else {
            return self.obtain_tokens(state, discovery, scopes).await;
        };
        let existing = self.stored_client(state, &discovery.issuer).await;
        let binding = self.binding_for(state, discovery)?;
        let outcome = login(
            &self.http,
            &self.settings,
            user_agent.as_ref(),
            LoginRequest {
                server: &self.server,
                discovery,
                scopes: &scopes,
                existing_client: existing.as_ref(),
                dpop: binding.as_ref().map(|(_, key)| self.binding(key)),
            },
        )
        .await?;
        let tokens = Self::bound(outcome.tokens, binding);
        self.keep(state, discovery, Some(outcome.client), tokens, scopes).await;
        Ok(())
    }

    /// Whether a login is what the server needs and this provider cannot run one (a grant with a
    /// user, no user agent).
    fn cannot_log_in(&self) -> bool {
        self.settings.grant.is_interactive() && self.user_agent.is_none()
    }

    /// The error of a login this provider cannot run: the rejection of the last refresh token
    /// when that is why, else that a login at `issuer` is needed.
    fn login_needed(&self, state: &State, issuer: &str) -> OAuthError {
        match &state.refresh_rejected {
            Some((rejected_by, source)) if rejected_by == issuer => self.refresh_rejected(issuer, source.clone()),
            _ => OAuthError::LoginRequired {
                issuer: issuer.to_owned(),
                server: self.server.clone(),
            },
        }
    }

    /// Obtains tokens with the grant that needs no user, and stores them.
    async fn obtain_tokens(
        &self,
        state: &mut State,
        discovery: &Discovery,
        scopes: Vec<String>,
    ) -> Result<(), OAuthError> {
        let scopes: Vec<String> = scopes.into_iter().filter(|s| s != OFFLINE_ACCESS).collect();
        let binding = self.binding_for(state, discovery)?;
        let (client, response) = obtain(
            &self.http,
            &self.settings,
            MachineRequest {
                discovery,
                scopes: &scopes,
                dpop: binding.as_ref().map(|(_, key)| self.binding(key)),
            },
        )
        .await?;
        let tokens = Self::bound(response.into_tokens(None), binding);
        self.keep(state, discovery, client, tokens, scopes).await;
        Ok(())
    }

    /// The key to bind new tokens to, when they are to be bound (see [`dpop::wanted`]).
    fn binding_for(
        &self,
        state: &State,
        discovery: &Discovery,
    ) -> Result<Option<(Secret, Arc<SigningKey>)>, OAuthError> {
        if dpop::wanted(self.settings.dpop, discovery, state.resource_asked_dpop) {
            self.dpop.key_for_new_tokens().map(Some)
        } else {
            Ok(None)
        }
    }

    fn binding<'a>(&'a self, key: &'a SigningKey) -> DpopBinding<'a> {
        DpopBinding {
            key,
            nonces: &self.dpop.nonces,
        }
    }

    /// `tokens` with the key they are bound to, when the server bound them (a `DPoP` token type).
    fn bound(mut tokens: StoredTokens, binding: Option<(Secret, Arc<SigningKey>)>) -> StoredTokens {
        if tokens.token_type.eq_ignore_ascii_case(dpop::SCHEME) {
            tokens.dpop_key = binding.map(|(encoded, _)| encoded);
        }
        tokens
    }

    /// Makes new tokens (and the client that got them) the current credential, and saves it.
    async fn keep(
        &self,
        state: &mut State,
        discovery: &Discovery,
        client: Option<StoredClient>,
        tokens: StoredTokens,
        scopes: Vec<String>,
    ) {
        let mut credential =
            StoredCredential::new(&discovery.resource, &discovery.metadata.token_endpoint).with_tokens(tokens);
        credential.client = client;
        credential.requested_scopes = scopes;
        credential.updated_at = unix_now();
        state.current = Some((discovery.issuer.clone(), credential));
        state.discovery = Some(discovery.clone());
        state.refreshed_after_401 = None;
        state.refresh_rejected = None;
        self.save(state).await;
    }

    /// The client credentials of a stored credential (a pre-registered client when none is
    /// stored).
    fn client_credentials(&self, credential: &StoredCredential) -> super::grant::ClientCredentials {
        let fallback = StoredClient {
            source: ClientSource::PreRegistered,
            client_id: self.settings.client_id.clone().unwrap_or_default(),
            client_secret: None,
            auth_method: String::new(),
            redirect_uri: None,
        };
        credentials(credential.client.as_ref().unwrap_or(&fallback), &self.settings)
    }

    async fn discover(&self, challenge_metadata: Option<&str>) -> Result<Discovery, OAuthError> {
        discover(
            &self.http,
            &self.server_url,
            challenge_metadata,
            self.settings.auth_server_metadata_url.as_deref(),
        )
        .await
    }

    /// The scopes of a login: configured, challenged, the resource's, with `offline_access` when
    /// the authorization server lists it; after the scopes requested before from this issuer.
    fn scopes_for(&self, discovery: &Discovery, challenge: Option<&str>, held: &[String]) -> Vec<String> {
        let resource_supported = discovery
            .resource_metadata
            .as_ref()
            .map(|(_, m)| m.scopes_supported.as_slice())
            .unwrap_or_default();
        let selected = select(&ScopeSources {
            configured: &self.settings.scopes,
            challenge,
            resource_supported,
            server_supported: &discovery.metadata.scopes_supported,
        });
        union(held, &selected)
    }

    fn requested_scopes(state: &State) -> Vec<String> {
        state
            .current
            .as_ref()
            .map(|(_, c)| c.requested_scopes.clone())
            .unwrap_or_default()
    }

    /// Reads the store once: the most recent credential of this server that is for its URL. A
    /// store (or lock file) that is a symbolic link, or whose lock is held too long, is an error
    /// (and is read again next time); any other failure is logged and the provider goes on
    /// without stored tokens.
    async fn ensure_loaded(&self, state: &mut State) -> Result<(), OAuthError> {
        if state.loaded {
            return Ok(());
        }
        match self.store.server(&self.server).await {
            Ok(entries) => {
                state.current = entries
                    .into_iter()
                    .filter(|(_, c)| c.tokens.is_some() && resource_matches(&c.resource, &self.server_url))
                    .max_by_key(|(_, c)| c.updated_at);
            }
            Err(e @ (TokenStoreError::Symlink { .. } | TokenStoreError::LockTimeout { .. })) => return Err(e.into()),
            Err(e) => {
                tracing::warn!(server = %self.server, error = %error_chain(&e), "the OAuth token store could not be read");
            }
        }
        state.loaded = true;
        Ok(())
    }

    /// Makes `discovery`'s issuer the current one: a credential of another issuer is never used
    /// with it.
    async fn use_issuer(&self, state: &mut State, discovery: &Discovery) {
        if state
            .current
            .as_ref()
            .is_some_and(|(issuer, _)| *issuer == discovery.issuer)
        {
            return;
        }
        if let Some((previous, _)) = &state.current {
            tracing::info!(server = %self.server, from = %previous, to = %discovery.issuer, "the server's authorization server changed");
        }
        state.current = match self.store.get(&self.server, &discovery.issuer).await {
            Ok(Some(credential)) if resource_matches(&credential.resource, &self.server_url) => {
                Some((discovery.issuer.clone(), credential))
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(server = %self.server, error = %error_chain(&e), "the OAuth token store could not be read");
                None
            }
        };
        state.refreshed_after_401 = None;
    }

    /// The client registered at `issuer` earlier, if any.
    async fn stored_client(&self, state: &State, issuer: &str) -> Option<StoredClient> {
        if let Some((current, credential)) = &state.current
            && current == issuer
        {
            return credential.client.clone();
        }
        self.store
            .get(&self.server, issuer)
            .await
            .ok()
            .flatten()
            .and_then(|c| c.client)
    }

    /// Forgets the current tokens (keeping the client registration), in memory and in the store;
    /// in the store only while it still holds these tokens (another process may have stored new
    /// ones meanwhile, which stay).
    async fn drop_tokens(&self, state: &mut State) {
        let Some((issuer, credential)) = &mut state.current else {
            return;
        };
        let Some(dropped) = credential.tokens.take() else {
            return;
        };
        let (issuer, credential) = (issuer.clone(), credential.clone());
        let locked = match self.lock_store().await {
            Ok(Some(locked)) => locked,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(server = %self.server, error = %error_chain(&e), "the OAuth tokens could not be removed from the store");
                return;
            }
        };
        let outcome = match locked.get(&self.server, &issuer).await {
            Ok(Some(stored))
                if stored
                    .tokens
                    .as_ref()
                    .is_some_and(|t| t.access_token == dropped.access_token) =>
            {
                locked.put(&self.server, &issuer, credential).await
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = outcome {
            tracing::warn!(server = %self.server, error = %error_chain(&e), "the OAuth tokens could not be removed from the store");
        }
    }

    /// Writes the current credential to the store (a failure is logged: the tokens stay in
    /// memory).
    async fn save(&self, state: &State) {
        let Some((issuer, credential)) = &state.current else {
            return;
        };
        if let Err(e) = self.store.put(&self.server, issuer, credential.clone()).await {
            tracing::warn!(server = %self.server, error = %error_chain(&e), "the OAuth tokens could not be saved");
        }
    }
}

impl AuthProvider for OAuthProvider {
    fn headers(&self, method: &str, url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        // A server that has asked for no credential (most of them) gets none on every request:
        // answered here, without the copies and the large future of the general path (what
        // that path answers too once the store is read and holds no token for this server).
        if let Ok(state) = self.state.try_lock()
            && state.loaded
            && state
                .current
                .as_ref()
                .is_none_or(|(_, credential)| credential.tokens.is_none())
        {
            return Box::pin(std::future::ready(Ok(Vec::new())));
        }
        let (method, url) = (method.to_owned(), url.to_owned());
        Box::pin(async move { self.current_headers(&method, &url).await })
    }

    /// A 401 that survives a refresh is what `plexus login` fixes.
    fn login_fixes_rejection(&self) -> bool {
        true
    }

    /// Keeps the answer's DPoP nonce for the next proofs; a DPoP nonce challenge to a request
    /// with a bound token is answered by retrying (with that nonce); anything else is decided
    /// from the challenges (refresh, log in, widen the scope, or fail).
    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        if let Some(nonce) = dpop_nonce(rejection) {
            self.dpop.nonces.set(&rejection.url, &nonce);
        }
        let nonce_challenge = is_dpop_nonce_challenge(rejection);
        let challenge = AuthChallenge::of(rejection);
        Box::pin(async move {
            if nonce_challenge && self.holds_bound_token().await {
                return AuthDecision::Retry;
            }
            self.decide(&challenge).await
        })
    }
}
