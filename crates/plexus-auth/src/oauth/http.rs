//! The HTTP calls of OAuth (metadata, registration, token endpoint): no redirects followed (a
//! credential must not travel to another origin), every request bounded in time and every body in
//! size.

use std::time::Duration;

use plexus_net::challenge::{WwwAuthenticate, parse_dpop_nonce};
use plexus_net::redact::redact_url;
use plexus_net::tls::{Alpn, ClientConfig, client_config};
use plexus_transport::body_excerpt;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;

use super::OAuthError;

/// The largest response body read from an OAuth endpoint.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// An answer: status, the `Location` and `DPoP-Nonce` headers, and the body (bounded).
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    /// A valid `DPoP-Nonce` (RFC 9449 §8), when the answer has one.
    pub(crate) dpop_nonce: Option<String>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as `T`, or an error naming the URL and quoting the body.
    pub(crate) fn json<T: DeserializeOwned>(&self, what: &'static str, url: &str) -> Result<T, OAuthError> {
        serde_json::from_slice(&self.body).map_err(|e| OAuthError::Http {
            what,
            url: redact_url(url),
            reason: format!(
                "the answer is not the expected JSON ({e}): {}",
                body_excerpt(&self.body)
            ),
        })
    }
}

/// The client of the OAuth endpoints.
#[derive(Debug, Clone)]
pub(crate) struct OAuthHttp {
    client: reqwest::Client,
    timeout: Duration,
}

impl OAuthHttp {
    pub(crate) fn new(timeout: Duration) -> Result<Self, OAuthError> {
        let tls = client_config(Alpn::Unspecified)?;
        let client = reqwest::Client::builder()
            // plexus-net's TLS configuration: the platform's roots and NODE_EXTRA_CA_CERTS.
            .use_preconfigured_tls(ClientConfig::clone(&tls))
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .user_agent(concat!("plexus-auth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OAuthError::Settings {
                field: "the HTTP client".to_owned(),
                reason: e.to_string(),
            })?;
        Ok(OAuthHttp { client, timeout })
    }

    /// GET `url` asking for JSON.
    pub(crate) async fn get(&self, what: &'static str, url: &str) -> Result<Reply, OAuthError> {
        let request = self
            .client
            .get(url)
            .header(ACCEPT, HeaderValue::from_static("application/json"));
        self.send(what, url, request).await
    }

    /// POST a JSON body.
    pub(crate) async fn post_json(
        &self,
        what: &'static str,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<Reply, OAuthError> {
        let request = self
            .client
            .post(url)
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .json(body);
        self.send(what, url, request).await
    }

    /// POST a form, with the `headers` given (HTTP Basic client authentication, a DPoP proof).
    pub(crate) async fn post_form(
        &self,
        what: &'static str,
        url: &str,
        form: &[(&'static str, String)],
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Reply, OAuthError> {
        let mut request = self
            .client
            .post(url)
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .form(form);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        self.send(what, url, request).await
    }

    /// The `WWW-Authenticate` challenges of an unauthenticated JSON-RPC `ping` to an MCP
    /// endpoint (empty when it does not answer 401, or cannot be reached).
    pub(crate) async fn probe_challenges(&self, url: &str) -> Vec<WwwAuthenticate> {
        let request = self
            .client
            .post(url)
            .header(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"))
            .json(&serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}));
        let probe = async {
            let response = request.send().await.ok()?;
            (response.status() == reqwest::StatusCode::UNAUTHORIZED).then(|| {
                response
                    .headers()
                    .get_all(reqwest::header::WWW_AUTHENTICATE)
                    .iter()
                    .flat_map(|value| WwwAuthenticate::parse(&String::from_utf8_lossy(value.as_bytes())))
                    .collect::<Vec<_>>()
            })
        };
        tokio::time::timeout(self.timeout, probe)
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    async fn send(&self, what: &'static str, url: &str, request: reqwest::RequestBuilder) -> Result<Reply, OAuthError> {
        let failed = |reason: String| OAuthError::Http {
            what,
            url: redact_url(url),
            reason,
        };
        let exchange = async {
            let mut response = request.send().await.map_err(|e| failed(describe_error(&e)))?;
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let dpop_nonce = response
                .headers()
                .get(plexus_net::challenge::DPOP_NONCE_HEADER)
                .and_then(|v| parse_dpop_nonce(v.as_bytes()));
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| failed(describe_error(&e)))? {
                if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(failed(format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Reply {
                status,
                location,
                dpop_nonce,
                body,
            })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(failed(format!("no answer within {} s", self.timeout.as_secs()))),
        }
    }
}

/// A reqwest error with its causes, without the URL (the caller names it, redacted).
pub(crate) fn describe_error(error: &reqwest::Error) -> String {
    let mut text = if error.is_connect() {
        "cannot connect".to_owned()
    } else if error.is_timeout() {
        "timed out".to_owned()
    } else {
        let text = error.to_string();
        match error.url() {
            Some(url) => text.replace(&format!(" ({url})"), "").replace(url.as_str(), "<url>"),
            None => text,
        }
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
