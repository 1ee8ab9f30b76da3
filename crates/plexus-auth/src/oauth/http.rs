//! The HTTP calls of OAuth (metadata, registration, token endpoint), through plexus-net's HTTP
//! client (its proxies, TLS roots and compression): no redirects followed (a credential must not
//! travel to another origin), every request bounded in time and every body in size.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use plexus_net::challenge::{WwwAuthenticate, parse_dpop_nonce};
use plexus_net::http::{HttpClient, HttpSettings, ProxyChoice, Request};
use plexus_net::redact::redact_url;
use plexus_net::tls::{TlsOptions, check_files};
use plexus_transport::body_excerpt;
use serde::de::DeserializeOwned;

use super::{HttpProblem, OAuthError, SettingsProblem};

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
        parse_json(&self.body, what, url)
    }
}

/// `body` (what came from `url`, fetched as `what`) as `T`, or an error naming the URL and
/// quoting the body.
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8], what: &'static str, url: &str) -> Result<T, OAuthError> {
    serde_json::from_slice(body).map_err(|source| OAuthError::Http {
        what,
        url: redact_url(url),
        problem: Box::new(HttpProblem::NotJson {
            excerpt: body_excerpt(body),
            source,
        }),
    })
}

/// The client of the OAuth endpoints.
#[derive(Debug, Clone)]
pub(crate) struct OAuthHttp {
    client: HttpClient,
    timeout: Duration,
}

/// `application/json`.
const JSON: HeaderValue = HeaderValue::from_static("application/json");

impl OAuthHttp {
    /// A client whose requests are bounded by `timeout`, go through `proxy` and trust `tls`.
    pub(crate) fn new(timeout: Duration, proxy: &ProxyChoice, tls: &TlsOptions) -> Result<Self, OAuthError> {
        // An unusable NODE_EXTRA_CA_CERTS or CA file is reported as itself, before any request;
        // the system's roots are loaded by the first request that needs them (a server without
        // OAuth, over plain HTTP, never does).
        check_files(tls)?;
        let mut settings =
            HttpSettings::new(concat!("plexus-auth/", env!("CARGO_PKG_VERSION"))).connect_timeout(timeout);
        settings.proxy = proxy.clone();
        settings.tls = tls.clone();
        let client = HttpClient::new(settings).map_err(|e| OAuthError::Settings {
            field: "the HTTP client".to_owned(),
            problem: SettingsProblem::HttpClient(e),
        })?;
        Ok(OAuthHttp { client, timeout })
    }

    /// GET `url` asking for JSON.
    pub(crate) async fn get(&self, what: &'static str, url: &str) -> Result<Reply, OAuthError> {
        self.send(what, url, Method::GET, HeaderMap::new(), None).await
    }

    /// POST a JSON body.
    pub(crate) async fn post_json(
        &self,
        what: &'static str,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<Reply, OAuthError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, JSON);
        let body = Bytes::from(serde_json::to_vec(body).unwrap_or_default());
        self.send(what, url, Method::POST, headers, Some(body)).await
    }

    /// POST a form, with the `headers` given (HTTP Basic client authentication, a DPoP proof).
    pub(crate) async fn post_form(
        &self,
        what: &'static str,
        url: &str,
        form: &[(&'static str, String)],
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Reply, OAuthError> {
        let mut map = HeaderMap::new();
        map.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        for (name, value) in headers {
            map.insert(name, value);
        }
        let encoded = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(name, value)| (*name, value.as_str())))
            .finish();
        self.send(what, url, Method::POST, map, Some(Bytes::from(encoded)))
            .await
    }

    /// The `WWW-Authenticate` challenges of an unauthenticated JSON-RPC `ping` to an MCP
    /// endpoint (empty when it does not answer 401, or cannot be reached).
    pub(crate) async fn probe_challenges(&self, url: &str) -> Vec<WwwAuthenticate> {
        let probe = async {
            let url = url::Url::parse(url).ok()?;
            let target = self.client.target(&url).ok()?;
            let mut headers = HeaderMap::new();
            headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
            headers.insert(CONTENT_TYPE, JSON);
            let request = Request {
                method: Method::POST,
                headers,
                body: Some(Bytes::from_static(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)),
            };
            let response = self.client.send(&target, request).await.ok()?;
            (response.status.as_u16() == 401).then(|| {
                response
                    .headers
                    .get_all(WWW_AUTHENTICATE)
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

    /// Sends a request asking for JSON and reads the answer whole (at most
    /// [`MAX_RESPONSE_BYTES`]), within the timeout; no redirect is followed.
    async fn send(
        &self,
        what: &'static str,
        url: &str,
        method: Method,
        mut headers: HeaderMap,
        body: Option<Bytes>,
    ) -> Result<Reply, OAuthError> {
        let failed = |problem: HttpProblem| OAuthError::Http {
            what,
            url: redact_url(url),
            problem: Box::new(problem),
        };
        let exchange = async {
            let parsed = url::Url::parse(url).map_err(|e| failed(HttpProblem::NotAUrl(e)))?;
            let target = self
                .client
                .target(&parsed)
                .map_err(|e| failed(HttpProblem::Request(Box::new(e))))?;
            headers.insert(ACCEPT, JSON);
            let request = Request { method, headers, body };
            let mut response = self
                .client
                .send(&target, request)
                .await
                .map_err(|e| failed(HttpProblem::Request(Box::new(e))))?;
            let status = response.status.as_u16();
            let location = response.header_str(LOCATION).map(str::to_owned);
            let dpop_nonce = response
                .headers
                .get(plexus_net::challenge::DPOP_NONCE_HEADER)
                .and_then(|v| parse_dpop_nonce(v.as_bytes()));
            let body = match response.body.read_capped(MAX_RESPONSE_BYTES).await {
                Ok(body) => body.to_vec(),
                Err(plexus_net::http::BodyError::TooLarge { .. }) => {
                    return Err(failed(HttpProblem::TooLarge {
                        max: MAX_RESPONSE_BYTES,
                    }));
                }
                Err(e) => return Err(failed(HttpProblem::Read(e))),
            };
            Ok(Reply {
                status,
                location,
                dpop_nonce,
                body,
            })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(failed(HttpProblem::Timeout { after: self.timeout })),
        }
    }
}
