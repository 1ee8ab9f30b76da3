//! The test server with its OAuth authorization server (in-process, on 127.0.0.1), an
//! [`OAuthProvider`] with a temporary token store, and a caller that sends MCP requests the way
//! the remote transports do: the provider's headers on every request, and on a 401 or 403 the
//! transports' own [`Credentials::rejected`] (one question to the provider, one retry).
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part of the support code.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use plexus_auth::oauth::{OAuthProvider, OAuthSettings, RedirectFollower};
use plexus_auth::store::TokenStore;
use plexus_net::{Credentials, rejection_of};
use plexus_testserver::{Cli, Command, Endpoint, OAuthHandle, OAuthRequest, RemoteServer};
use plexus_transport::{AuthProvider, TransportError};
use serde_json::{Value, json};

/// The hang guard of a whole test.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// Runs a test body under the hang guard.
pub async fn guarded<T>(body: impl Future<Output = T>) -> T {
    tokio::time::timeout(HANG_GUARD, body)
        .await
        .expect("the test finished within its hang guard")
}

/// A protected test server and a token store.
pub struct Fixture {
    pub server: RemoteServer,
    pub oauth: OAuthHandle,
    pub home: tempfile::TempDir,
    pub store: TokenStore,
}

/// Starts `plexus-testserver http --oauth ARGS…` in-process.
pub async fn start(args: &[&str]) -> Fixture {
    let argv = ["plexus-testserver", "http", "--oauth"]
        .into_iter()
        .chain(args.iter().copied());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let Command::Http(options) = Cli::try_parse_from(argv).unwrap().command else {
        panic!("not the http mode");
    };
    let server = RemoteServer::http(listener, options).unwrap();
    let oauth = server.oauth().expect("--oauth gives a handle");
    let home = tempfile::tempdir().unwrap();
    let store = TokenStore::new(home.path().join("credentials.json"));
    Fixture {
        server,
        oauth,
        home,
        store,
    }
}

/// Settings with short limits (hang guards, not timings).
pub fn settings() -> OAuthSettings {
    OAuthSettings {
        login_timeout: Duration::from_secs(30),
        request_timeout: Duration::from_secs(30),
        ..OAuthSettings::default()
    }
}

impl Fixture {
    /// The MCP endpoint's URL.
    pub fn url(&self) -> String {
        self.server.url().to_owned()
    }

    /// A provider that logs in by following the redirects itself.
    pub fn provider(&self, settings: OAuthSettings) -> Arc<OAuthProvider> {
        let user_agent = RedirectFollower::new(Duration::from_secs(30)).unwrap();
        let provider = OAuthProvider::new("docs", &self.url(), settings, self.store.clone())
            .unwrap()
            .with_user_agent(Arc::new(user_agent));
        Arc::new(provider)
    }

    /// A provider without a user agent: it never logs in.
    pub fn headless_provider(&self, settings: OAuthSettings) -> Arc<OAuthProvider> {
        Arc::new(OAuthProvider::new("docs", &self.url(), settings, self.store.clone()).unwrap())
    }

    /// A caller of the MCP endpoint through `provider`.
    pub fn caller(&self, provider: Arc<OAuthProvider>) -> Caller {
        Caller::new(&self.url(), provider)
    }

    /// The requests the server recorded for `endpoint`.
    pub fn requests_to(&self, endpoint: Endpoint) -> Vec<OAuthRequest> {
        self.oauth.requests_to(endpoint)
    }

    /// The paths of the requests for the OAuth endpoints (the MCP endpoint left out), in order.
    pub fn oauth_paths(&self) -> Vec<String> {
        self.oauth
            .requests()
            .into_iter()
            .filter(|request| request.endpoint != Endpoint::Mcp)
            .map(|request| request.path)
            .collect()
    }

    /// The bearer tokens the MCP endpoint received, in order (requests without one left out).
    pub fn bearers(&self) -> Vec<String> {
        self.requests_to(Endpoint::Mcp)
            .into_iter()
            .filter_map(|request| request.bearer)
            .collect()
    }
}

/// Sends MCP requests the way a remote transport does.
pub struct Caller {
    http: reqwest::Client,
    url: String,
    credentials: Credentials,
}

/// An answer of the MCP endpoint.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub session: Option<String>,
    pub message: Value,
}

impl Caller {
    pub fn new(url: &str, provider: Arc<OAuthProvider>) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let provider: Arc<dyn AuthProvider> = provider;
        Caller {
            http,
            url: url.to_owned(),
            credentials: Credentials::new(Vec::new(), Some(provider)).unwrap(),
        }
    }

    /// POSTs one message: headers from the credentials, and after a 401 or 403 what
    /// [`Credentials::rejected`] decides (at most one retry).
    pub async fn post(&self, session: Option<&str>, message: &Value) -> Result<Answer, TransportError> {
        let mut retries = 0;
        loop {
            let headers = self.credentials.headers("POST", &self.url).await?;
            let mut request = self
                .http
                .post(&self.url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(message.to_string());
            for (name, value) in headers.iter() {
                request = request.header(name.as_str(), value.as_str());
            }
            if let Some(session) = session {
                request = request.header("mcp-session-id", session);
            }
            let response = request.send().await.expect("the test server answers");
            let status = response.status().as_u16();
            let response_headers = response.headers().clone();
            let session_id = response
                .headers()
                .get("mcp-session-id")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let text = response.text().await.unwrap();
            if status == 401 || status == 403 {
                let what = format!("POST {}", self.url);
                let rejection = rejection_of(&what, &self.url, status, &response_headers, text.as_bytes());
                self.credentials.rejected(&rejection, retries).await?;
                retries += 1;
                continue;
            }
            return Ok(Answer {
                status,
                session: session_id,
                message: parse_message(&text),
            });
        }
    }

    /// `initialize`; the session id.
    pub async fn initialize(&self) -> Result<String, TransportError> {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plexus-auth-test", "version": "1"}
        }});
        let answer = self.post(None, &message).await?;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(
            answer.message["result"]["serverInfo"]["name"], "plexus-testserver",
            "{answer:?}"
        );
        Ok(answer.session.expect("a session id"))
    }

    /// A session, then `tools/call` of `tool`; the call's result.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<Value, TransportError> {
        let session = self.initialize().await?;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.post(Some(&session), &initialized).await?;
        assert_eq!(answer.status, 202, "{answer:?}");
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        let answer = self.post(Some(&session), &call).await?;
        assert_eq!(answer.status, 200, "{answer:?}");
        Ok(answer.message["result"].clone())
    }
}

/// The JSON-RPC response of a JSON or an SSE body (`Null` for an empty one).
fn parse_message(text: &str) -> Value {
    if let Ok(message) = serde_json::from_str::<Value>(text) {
        return message;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
        .unwrap_or(Value::Null)
}
