//! The built-in OAuth 2.1 authorization server and the protection of the MCP endpoint
//! (`--oauth`), so that every rule of a client's authorization can be tested without a browser.
//!
//! The pieces: the protected resource ([`resource`]: protected resource metadata, 401 and 403
//! challenges, token and scope checks), one or more authorization servers ([`authority`]: metadata,
//! [`authorize`], [`token`], [`register`] with client ID metadata documents ([`cimd`])), each with a
//! bounded [`store`], and a [`record`] of every request they received. Tests reach it through
//! [`OAuthHandle`].

mod authority;
mod authorize;
mod cimd;
mod documents;
mod error;
mod jwt;
mod options;
mod record;
mod register;
mod resource;
mod store;
mod token;
mod wire;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use self::error::{InvalidArgument, JwksProblem, LimitReached, OAuthError, StoreError};
pub use self::options::{
    Advertised, AuthMethod, CimdDocumentFile, DocumentFile, JwtClientFile, MetadataLocation, OAuthOptions,
    PreRegisteredClient, PrmLocation, RedirectIss, RefreshIssuance, RefreshRotation, ToolScope,
};
pub use self::record::{Endpoint, OAuthRequest};
pub(crate) use self::resource::Authorized;

use self::authority::{AsPath, Authority};
use self::jwt::PublicKey;
use self::record::Record;
use self::store::Grant;
use crate::events::EventLog;
use crate::remote::http::{self, Body};
use crate::remote::{App, Listener, OptionProblem, RemoteError};
use crate::server::lock;

/// The most authorization servers one protected resource goes through (the first and its
/// migrations).
const MAX_AUTHORITIES: usize = 16;

/// The OAuth side of a remote server: the protected resource and its authorization servers.
pub(crate) struct OAuth {
    options: OAuthOptions,
    /// The MCP endpoint's URL: the protected resource's identifier.
    resource: String,
    /// `http://127.0.0.1:PORT` of the MCP endpoint's listener.
    origin: String,
    /// The MCP endpoint's path.
    mcp_path: String,
    /// The `private_key_jwt` clients of `--oauth-jwt-client`, known to every authorization server.
    jwt_clients: Vec<(String, Vec<PublicKey>)>,
    authorities: Mutex<Vec<Arc<Authority>>>,
    /// The authorization server the protected resource names and trusts now.
    current: AtomicUsize,
    record: Mutex<Record>,
    documents: Mutex<BTreeMap<String, Bytes>>,
    /// Client ID metadata documents the test provided, by client id URL, used instead of fetching.
    client_documents: Mutex<BTreeMap<String, Bytes>>,
    /// Requests the token check let through (`--oauth-migrate-after`).
    passed: AtomicU64,
    events: Arc<EventLog>,
    /// The accept loops of the authorization servers with listeners of their own.
    accept_loops: Mutex<Vec<JoinHandle<()>>>,
}

/// What [`OAuth::route`] did with a request.
pub(crate) enum Routed {
    /// It answered.
    Answered(Response<Body>),
    /// The request is for the MCP server (with its token's grant as an extension, if protected).
    Pass(Request<Incoming>),
}

impl OAuth {
    /// The OAuth side of a server listening at `addr` whose MCP endpoint is `mcp_path`, and the
    /// first authorization server's own listener (`--oauth-as-port`), if any.
    pub(crate) fn new(
        options: &OAuthOptions,
        addr: SocketAddr,
        mcp_path: &str,
        events: Arc<EventLog>,
    ) -> Result<(Arc<OAuth>, Option<TcpListener>), RemoteError> {
        let origin = format!("http://{addr}");
        let mut documents = BTreeMap::new();
        for document in &options.documents {
            let body = documents::load(&document.file, &origin, "oauth-document", documents.len())?;
            documents.insert(document.path.clone(), body);
        }
        let mut client_documents = BTreeMap::new();
        for document in &options.cimd_documents {
            let body = documents::load(&document.file, &origin, "oauth-cimd-document", client_documents.len())?;
            client_documents.insert(document.url.clone(), body);
        }
        let mut jwt_clients = Vec::new();
        for client in &options.jwt_clients {
            let invalid = |problem: OptionProblem| RemoteError::InvalidOption {
                option: "oauth-jwt-client",
                problem,
            };
            let (_, value) = documents::read_json(&client.file, None).map_err(invalid)?;
            let keys = jwt::parse_jwks(&value).map_err(|problem| {
                invalid(OptionProblem::Keys {
                    path: client.file.clone(),
                    problem,
                })
            })?;
            jwt_clients.push((client.id.clone(), keys));
        }
        let (first_origin, listener) = match options.as_port {
            Some(port) => {
                let listener = bind_std(port).map_err(|source| RemoteError::Listen { port, source })?;
                let addr = listener.local_addr().map_err(RemoteError::Address)?;
                (format!("http://{addr}"), Some(listener))
            }
            None => (origin.clone(), None),
        };
        let authority =
            Authority::new(0, &first_origin, listener.is_some(), options, &jwt_clients).map_err(|limit| {
                RemoteError::InvalidOption {
                    option: "oauth-client",
                    problem: limit.into(),
                }
            })?;
        let oauth = Arc::new(OAuth {
            options: options.clone(),
            resource: format!("{origin}{mcp_path}"),
            origin,
            mcp_path: mcp_path.to_owned(),
            jwt_clients,
            authorities: Mutex::new(vec![Arc::new(authority)]),
            current: AtomicUsize::new(0),
            record: Mutex::new(Record::default()),
            documents: Mutex::new(documents),
            client_documents: Mutex::new(client_documents),
            passed: AtomicU64::new(0),
            events,
            accept_loops: Mutex::new(Vec::new()),
        });
        Ok((oauth, listener))
    }

    /// Keeps the accept loop of an authorization server's own listener, to await it on shutdown.
    pub(crate) fn keep_accept_loop(&self, accept_loop: JoinHandle<()>) {
        lock(&self.accept_loops).push(accept_loop);
    }

    /// The accept loops of the authorization servers' own listeners.
    pub(crate) fn take_accept_loops(&self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut *lock(&self.accept_loops))
    }

    fn authority(&self, index: usize) -> Option<Arc<Authority>> {
        lock(&self.authorities).get(index).cloned()
    }

    /// The authorization server the protected resource names now.
    fn current(&self) -> Arc<Authority> {
        let index = self.current.load(Ordering::Acquire);
        self.authority(index).expect("the current authorization server exists")
    }

    /// Whether `resource` names this protected resource (RFC 8707): its MCP URL or its origin.
    fn accepts_resource(&self, resource: &str) -> bool {
        resource == self.resource || resource == self.origin || resource.strip_suffix('/') == Some(&self.origin)
    }

    /// The lifetime of a new access token.
    fn token_lifetime(&self) -> Duration {
        Duration::from_secs(self.options.expires_in)
    }

    fn push_record(&self, entry: OAuthRequest) -> u64 {
        lock(&self.record).push(&self.events, entry)
    }

    /// Answers the OAuth paths, checks the token of requests to the MCP endpoint (`protected`),
    /// and passes on the rest.
    pub(crate) async fn route(
        &self,
        app: &Arc<App>,
        listener: Listener,
        request: Request<Incoming>,
        protected: bool,
    ) -> Routed {
        if let Listener::Authority(index) = listener {
            let Some(authority) = self.authority(index) else {
                return Routed::Answered(http::text(StatusCode::NOT_FOUND, "no such authorization server"));
            };
            return Routed::Answered(match self.serve_authority(&authority, request).await {
                Ok(response) => response,
                Err(request) => self.not_found(Some(index), &request),
            });
        }
        let path = request.uri().path();
        let document = lock(&self.documents).get(path).cloned();
        if let Some(document) = document {
            let mut entry = OAuthRequest::new(Endpoint::Document, None, request.method().as_str(), path);
            let response = http::full(StatusCode::OK, Some(http::JSON), document);
            entry.status = 200;
            self.push_record(entry);
            return Routed::Answered(response);
        }
        if path == resource::PRM_ROOT || path.starts_with(&format!("{}/", resource::PRM_ROOT)) {
            return Routed::Answered(self.protected_resource_metadata(&request));
        }
        let mounted = self.authority(0).filter(|authority| !authority.own_listener);
        let request = match mounted {
            Some(authority) => match self.serve_authority(&authority, request).await {
                Ok(response) => return Routed::Answered(response),
                Err(request) => request,
            },
            None => request,
        };
        if request.uri().path().starts_with("/.well-known/") {
            return Routed::Answered(self.not_found(None, &request));
        }
        if !protected {
            return Routed::Pass(request);
        }
        match self.check_token(app, request).await {
            Ok(request) => Routed::Pass(request),
            Err(response) => Routed::Answered(response),
        }
    }

    /// Answers a request for one of `authority`'s paths, or gives the request back.
    async fn serve_authority(
        &self,
        authority: &Authority,
        request: Request<Incoming>,
    ) -> Result<Response<Body>, Request<Incoming>> {
        let Some(at) = authority.classify(request.uri().path(), &self.options) else {
            return Err(request);
        };
        let mut entry = OAuthRequest::new(
            at.endpoint(),
            Some(authority.index),
            request.method().as_str(),
            request.uri().path(),
        );
        let response = match at {
            AsPath::Metadata { served, openid } => {
                if !matches!(*request.method(), Method::GET | Method::HEAD) {
                    method_not_allowed(&mut entry, "GET")
                } else if served {
                    wire::json_response(StatusCode::OK, &authority.metadata(&self.options, openid))
                } else {
                    wire::error(
                        &mut entry,
                        StatusCode::NOT_FOUND,
                        "not_found",
                        "no authorization server metadata here (--oauth-metadata)",
                    )
                }
            }
            AsPath::Jwks => wire::json_response(StatusCode::OK, &json!({"keys": []})),
            AsPath::Authorize => authorize::handle(self, authority, request, &mut entry).await,
            AsPath::Token => token::handle(self, authority, request, &mut entry).await,
            AsPath::Register if self.options.no_registration => wire::error(
                &mut entry,
                StatusCode::NOT_FOUND,
                "not_found",
                "this authorization server has no dynamic client registration (--oauth-no-registration)",
            ),
            AsPath::Register => register::handle(self, authority, request, &mut entry).await,
        };
        entry.status = response.status().as_u16();
        entry.location = http::header_text(response.headers(), &hyper::header::LOCATION);
        self.push_record(entry);
        Ok(response)
    }

    /// A recorded 404.
    fn not_found(&self, authority: Option<usize>, request: &Request<Incoming>) -> Response<Body> {
        let path = request.uri().path();
        let mut entry = OAuthRequest::new(Endpoint::Other, authority, request.method().as_str(), path);
        let response = wire::error(
            &mut entry,
            StatusCode::NOT_FOUND,
            "not_found",
            format!("nothing is served at {path}"),
        );
        entry.status = 404;
        self.push_record(entry);
        response
    }

    /// Moves to a new authorization server on a listener of its own; returns its issuer.
    pub(crate) async fn migrate(&self, app: &Arc<App>) -> Result<String, OAuthError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(OAuthError::Listen)?;
        let addr = listener.local_addr().map_err(OAuthError::Listen)?;
        let authority = {
            let mut authorities = lock(&self.authorities);
            if authorities.len() >= MAX_AUTHORITIES {
                return Err(LimitReached::Migrations {
                    max: MAX_AUTHORITIES - 1,
                }
                .into());
            }
            let origin = format!("http://{addr}");
            let authority = Authority::new(authorities.len(), &origin, true, &self.options, &self.jwt_clients)?;
            let authority = Arc::new(authority);
            authorities.push(Arc::clone(&authority));
            authority
        };
        self.current.store(authority.index, Ordering::Release);
        self.events
            .record(&json!({"event": "oauth-migrate", "issuer": authority.issuer, "authority": authority.index}));
        self.keep_accept_loop(crate::remote::spawn_authority_listener(app, listener, authority.index));
        Ok(authority.issuer.clone())
    }
}

/// A 405 for an OAuth endpoint, recorded.
fn method_not_allowed(entry: &mut OAuthRequest, allow: &'static str) -> Response<Body> {
    let response = wire::error(
        entry,
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request",
        format!("this endpoint takes {allow}"),
    );
    http::with_header(
        response,
        hyper::header::ALLOW,
        hyper::header::HeaderValue::from_static(allow),
    )
}

/// Binds 127.0.0.1:`port` for tokio (from a synchronous caller within a runtime).
fn bind_std(port: u16) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

/// The tokens [`OAuthHandle::issue_token`] issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedTokens {
    /// The access token (for this resource).
    pub access_token: String,
    /// The refresh token.
    pub refresh_token: String,
    /// The access token's lifetime, in seconds.
    pub expires_in: u64,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The authorization server that issued them.
    pub authority: usize,
}

/// A token that [`OAuthHandle::tokens`] lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// The token.
    pub token: String,
    /// Whether it is a refresh token (else an access token).
    pub refresh: bool,
    /// The authorization server that issued it.
    pub authority: usize,
    /// The client it was issued to.
    pub client_id: String,
    /// The scopes it grants.
    pub scopes: Vec<String>,
    /// The RFC 8707 resource it is for.
    pub resource: Option<String>,
    /// Whether an access token has expired.
    pub expired: bool,
}

/// A handle on the OAuth side of a running [`RemoteServer`](crate::RemoteServer), from
/// [`RemoteServer::oauth`](crate::RemoteServer::oauth): the record of requests, the tokens, and
/// the switches a test flips while a client is connected.
///
/// ```
/// use plexus_testserver::{Endpoint, HttpOptions, OAuthOptions, RemoteServer};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let options = HttpOptions { oauth: OAuthOptions { issuer_path: Some("/t1".into()), ..OAuthOptions::enabled() }, ..HttpOptions::default() };
/// let server = RemoteServer::http(listener, options).unwrap();
/// let oauth = server.oauth().unwrap();
/// assert_eq!(oauth.issuer(), format!("http://{}/t1", server.local_addr()));
/// assert_eq!(oauth.resource_metadata_url(), format!("http://{}/.well-known/oauth-protected-resource/mcp", server.local_addr()));
/// // … a client logs in and calls tools …
/// assert!(!oauth.authorization_server_contacted());
/// assert!(oauth.requests_to(Endpoint::Token).is_empty());
/// server.shutdown().await;
/// # });
/// ```
#[derive(Clone)]
pub struct OAuthHandle {
    oauth: Arc<OAuth>,
    app: Weak<App>,
}

impl std::fmt::Debug for OAuthHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHandle")
            .field("resource", &self.oauth.resource)
            .field("issuer", &self.issuer())
            .finish_non_exhaustive()
    }
}

impl OAuthHandle {
    pub(crate) fn new(oauth: Arc<OAuth>, app: Weak<App>) -> Self {
        OAuthHandle { oauth, app }
    }

    /// The protected resource: the MCP endpoint's URL, which clients send as `resource`.
    pub fn resource(&self) -> &str {
        &self.oauth.resource
    }

    /// The URL the 401 challenge names as `resource_metadata`.
    pub fn resource_metadata_url(&self) -> String {
        self.oauth.resource_metadata_url()
    }

    /// The issuer of the authorization server the protected resource names now.
    pub fn issuer(&self) -> String {
        self.oauth.current().issuer.clone()
    }

    /// The issuers of every authorization server so far, the first one first.
    pub fn issuers(&self) -> Vec<String> {
        lock(&self.oauth.authorities)
            .iter()
            .map(|authority| authority.issuer.clone())
            .collect()
    }

    /// Every request received so far (the oldest dropped beyond 4096), in order.
    pub fn requests(&self) -> Vec<OAuthRequest> {
        lock(&self.oauth.record).requests()
    }

    /// The requests received for `endpoint`, in order.
    pub fn requests_to(&self, endpoint: Endpoint) -> Vec<OAuthRequest> {
        let mut requests = self.requests();
        requests.retain(|request| request.endpoint == endpoint);
        requests
    }

    /// The paths requested, in order: a compact view of what a client did, e.g.
    /// `["/mcp", "/.well-known/oauth-protected-resource/mcp", …]`.
    pub fn paths(&self) -> Vec<String> {
        self.requests().into_iter().map(|request| request.path).collect()
    }

    /// How many recorded requests were dropped to keep the record bounded.
    pub fn dropped_requests(&self) -> u64 {
        lock(&self.oauth.record).dropped()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.oauth.record).clear();
    }

    /// Whether any authorization server received any request (metadata included).
    pub fn authorization_server_contacted(&self) -> bool {
        self.requests().iter().any(OAuthRequest::at_authorization_server)
    }

    /// Makes every access token of every authorization server expired (refresh tokens keep
    /// working), as if time had passed; returns how many access tokens there were.
    pub fn expire_access_tokens(&self) -> usize {
        let authorities = lock(&self.oauth.authorities).clone();
        authorities
            .iter()
            .map(|authority| authority.with_store(store::Store::expire_access))
            .sum()
    }

    /// Revokes every access and refresh token of every authorization server; returns how many
    /// there were. A client then needs to log in again.
    pub fn revoke_tokens(&self) -> usize {
        let authorities = lock(&self.oauth.authorities).clone();
        authorities
            .iter()
            .map(|authority| authority.with_store(store::Store::revoke_all))
            .sum()
    }

    /// Issues an access token and a refresh token for `client_id` (not checked: to refresh, the
    /// client must be known to the authorization server) with `scopes`, for this resource, from
    /// the current authorization server, as a finished login would.
    pub fn issue_token(&self, client_id: &str, scopes: &[&str]) -> Result<IssuedTokens, OAuthError> {
        let authority = self.oauth.current();
        let grant = Grant {
            client_id: client_id.to_owned(),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
            resource: Some(self.oauth.resource.clone()),
        };
        let issued = authority.with_store(|store| store.issue(&grant, self.oauth.token_lifetime(), true))?;
        Ok(IssuedTokens {
            access_token: issued.access_token,
            refresh_token: issued.refresh_token.unwrap_or_default(),
            expires_in: self.oauth.options.expires_in,
            scopes: grant.scopes,
            authority: authority.index,
        })
    }

    /// Every access and refresh token the authorization servers hold (unordered).
    pub fn tokens(&self) -> Vec<TokenInfo> {
        let authorities = lock(&self.oauth.authorities).clone();
        let mut tokens = Vec::new();
        for authority in authorities {
            for (token, grant, refresh, expired) in authority.with_store(|store| store.tokens()) {
                tokens.push(TokenInfo {
                    token,
                    refresh,
                    authority: authority.index,
                    client_id: grant.client_id,
                    scopes: grant.scopes,
                    resource: grant.resource,
                    expired,
                });
            }
        }
        tokens
    }

    /// Pre-registers a `private_key_jwt` client at the current authorization server, with the
    /// public keys `jwks` (a JWK or a JWK Set of EC P-256 keys); like `--oauth-jwt-client`, it may
    /// use every grant type and any loopback redirect URI.
    pub fn register_jwt_client(&self, client_id: &str, jwks: &Value) -> Result<(), OAuthError> {
        let keys = jwt::parse_jwks(jwks).map_err(InvalidArgument::from)?;
        let client = authority::pre_registered(client_id, None, vec![AuthMethod::PrivateKeyJwt], keys);
        self.oauth.current().with_store(|store| store.put_client(client))?;
        Ok(())
    }

    /// Serves `document` as JSON at `path` on the MCP endpoint's listener (e.g. a client ID
    /// metadata document, whose URL is then its client id); returns its URL.
    pub fn serve_document(&self, path: &str, document: &Value) -> Result<String, OAuthError> {
        let path = crate::remote::parse_path(path).map_err(InvalidArgument::from)?;
        documents::put(&self.oauth.documents, path.clone(), document)?;
        Ok(format!("{}{path}", self.oauth.origin))
    }

    /// Makes `document` the client ID metadata document of client id `url` (with
    /// `--oauth-cimd`): the authorization server uses it instead of fetching `url`, so that
    /// `https://` client ids (which this server cannot fetch) work too. Its use is recorded as an
    /// [`Endpoint::ClientMetadataFetch`] whose parameter `source` is `provided`.
    pub fn provide_client_metadata(&self, url: &str, document: &Value) -> Result<(), OAuthError> {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(InvalidArgument::NotHttpUrl { url: url.to_owned() }.into());
        }
        documents::put(&self.oauth.client_documents, url.to_owned(), document)?;
        Ok(())
    }

    /// Moves the protected resource to a new authorization server, on a listener of its own with
    /// clients of its own: the protected resource metadata names it from now on, and tokens of
    /// the previous ones get 401 `invalid_token`. Returns the new issuer.
    pub async fn migrate_authorization_server(&self) -> Result<String, OAuthError> {
        let app = self.app.upgrade().ok_or(OAuthError::Stopped)?;
        self.oauth.migrate(&app).await
    }
}
