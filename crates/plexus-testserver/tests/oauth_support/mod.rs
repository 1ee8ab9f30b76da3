//! An OAuth client written out by hand (reqwest, no redirects followed) that drives the test
//! server's authorization server and protected MCP endpoint in-process, so that every status,
//! header and field is seen as the server sent it.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part of the support code.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use plexus_testserver::{OAuthHandle, RemoteServer};
use serde_json::{Value, json};

/// A hang guard for every request.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The redirect URI the tests register (loopback: any port matches).
pub const REDIRECT_URI: &str = "http://127.0.0.1/callback";

/// A PKCE verifier (RFC 7636 appendix B) and its S256 challenge.
pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
pub const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// A protected test server and a client for it.
pub struct Fixture {
    pub server: RemoteServer,
    pub oauth: OAuthHandle,
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT` of the MCP endpoint.
    pub origin: String,
}

/// An HTTP answer: status, headers, body (JSON when it parses, else a string).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The query parameters of the `Location` header.
    pub fn location_params(&self) -> BTreeMap<String, String> {
        let location = self.header("location").expect("a Location header");
        url::Url::parse(location)
            .unwrap()
            .query_pairs()
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect()
    }
}

/// Starts `plexus-testserver MODE --oauth ARGS…` in-process.
pub async fn start_mode(mode: &str, args: &[&str]) -> Fixture {
    let argv: Vec<&str> = ["--oauth"].into_iter().chain(args.iter().copied()).collect();
    assert!(matches!(mode, "http" | "sse"), "not an OAuth mode: {mode}");
    let server = RemoteServer::from_args(mode, &argv).await.unwrap();
    let oauth = server.oauth().expect("--oauth gives a handle");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(HANG_GUARD)
        .build()
        .unwrap();
    let origin = format!("http://{}", server.local_addr());
    Fixture {
        server,
        oauth,
        http,
        origin,
    }
}

/// Starts `plexus-testserver http --oauth ARGS…` in-process.
pub async fn start(args: &[&str]) -> Fixture {
    start_mode("http", args).await
}

async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Answer { status, headers, body }
}

/// Basic credentials, form-urlencoded as RFC 6749 §2.3.1 asks.
pub fn basic(id: &str, secret: &str) -> String {
    let encode = |part: &str| url::form_urlencoded::byte_serialize(part.as_bytes()).collect::<String>();
    format!(
        "Basic {}",
        STANDARD.encode(format!("{}:{}", encode(id), encode(secret)))
    )
}

/// The S256 challenge of a verifier.
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes()).as_ref())
}

impl Fixture {
    /// The MCP endpoint's URL.
    pub fn mcp_url(&self) -> String {
        self.server.url().to_owned()
    }

    pub async fn get(&self, url: &str) -> Answer {
        answer(self.http.get(url).send().await.unwrap()).await
    }

    /// GET a path of the MCP endpoint's listener.
    pub async fn get_path(&self, path: &str) -> Answer {
        self.get(&format!("{}{path}", self.origin)).await
    }

    /// POST a registration request to `<issuer>/register`.
    pub async fn register(&self, metadata: &Value) -> Answer {
        let url = format!("{}/register", self.oauth.issuer());
        let request = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(metadata.to_string());
        answer(request.send().await.unwrap()).await
    }

    /// Registers a public client (`none`) for the code and refresh grants; returns its id.
    pub async fn register_public(&self) -> String {
        let answer = self
            .register(&json!({
                "client_name": "test",
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
            }))
            .await;
        assert_eq!(answer.status, 201, "{answer:?}");
        answer.body["client_id"].as_str().unwrap().to_owned()
    }

    /// GET `<issuer>/authorize` with these query parameters.
    pub async fn authorize(&self, params: &[(&str, &str)]) -> Answer {
        let mut url = url::Url::parse(&format!("{}/authorize", self.oauth.issuer())).unwrap();
        url.query_pairs_mut().extend_pairs(params);
        answer(self.http.get(url).send().await.unwrap()).await
    }

    /// An authorization code for `client_id` (with extra parameters such as `scope`).
    pub async fn code(&self, client_id: &str, extra: &[(&str, &str)]) -> String {
        let resource = self.mcp_url();
        let mut params = authorize_params(client_id, &resource);
        params.extend_from_slice(extra);
        let answer = self.authorize(&params).await;
        assert_eq!(answer.status, 302, "{answer:?}");
        let redirect = answer.location_params();
        redirect
            .get("code")
            .unwrap_or_else(|| panic!("no code: {redirect:?}"))
            .clone()
    }

    /// POST `<issuer>/token` with this form and, optionally, an `Authorization` header.
    pub async fn token(&self, form: &[(&str, &str)], authorization: Option<&str>) -> Answer {
        let url = format!("{}/token", self.oauth.issuer());
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut request = self
            .http
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        answer(request.send().await.unwrap()).await
    }

    /// Exchanges `code` of public client `client_id` for tokens.
    pub async fn exchange(&self, client_id: &str, code: &str) -> Answer {
        let resource = self.mcp_url();
        self.token(
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("code_verifier", VERIFIER),
                ("client_id", client_id),
                ("redirect_uri", "http://127.0.0.1:4242/callback"),
                ("resource", &resource),
            ],
            None,
        )
        .await
    }

    /// Registers a public client and logs it in with `scope`; returns (client id, token answer).
    pub async fn login(&self, scope: &str) -> (String, Value) {
        let client_id = self.register_public().await;
        let code = self.code(&client_id, &[("scope", scope)]).await;
        let answer = self.exchange(&client_id, &code).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        (client_id, answer.body)
    }

    /// POST one JSON-RPC message to the MCP endpoint with an optional bearer token and session.
    pub async fn mcp(&self, token: Option<&str>, session: Option<&str>, message: &Value) -> Answer {
        let mut request = self
            .http
            .post(self.mcp_url())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(message.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        answer(request.send().await.unwrap()).await
    }

    /// Initializes a session with `token`; returns the answer (its session id in the headers).
    pub async fn initialize(&self, token: Option<&str>) -> Answer {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "oauth-test", "version": "1"}
        }});
        self.mcp(token, None, &message).await
    }

    /// Initializes a session with `token` and calls `tool`; returns the call's answer.
    pub async fn call_tool(&self, token: &str, tool: &str, arguments: Value) -> Answer {
        let initialized = self.initialize(Some(token)).await;
        assert_eq!(initialized.status, 200, "{initialized:?}");
        let session = initialized.header("mcp-session-id").unwrap().to_owned();
        let message = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        self.mcp(Some(token), Some(&session), &message).await
    }
}

/// The parameters of a valid authorization request of `client_id` for `resource`.
pub fn authorize_params<'a>(client_id: &'a str, resource: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", "http://127.0.0.1:4242/callback"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("state", "st-1"),
        ("resource", resource),
    ]
}

/// The JSON-RPC response in an SSE body.
pub fn sse_response(body: &Value) -> Value {
    let text = body.as_str().expect("an event stream");
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
        .unwrap_or_else(|| panic!("no response in {text:?}"))
}
