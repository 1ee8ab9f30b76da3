//! Requests with the configured headers and the auth provider's, one retry after a challenge the
//! provider resolves, and the errors of failed requests.

use std::error::Error as StdError;
use std::io;
use std::time::Duration;

use plexus_net::redact::redact_url;
use plexus_net::tls::{Alpn, ClientConfig, server_config};
use plexus_net::{Credentials, rejection_of};
use plexus_transport::{TransportError, body_excerpt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{RequestBuilder, Response, StatusCode, Url};

use crate::config::{MAX_ERROR_BODY, MAX_REDIRECTS, SseConfig, TCP_KEEPALIVE};
use plexus_net::endpoint::{origin, same_origin};

/// The `User-Agent` of every request.
const USER_AGENT: &str = concat!("plexus-sse/", env!("CARGO_PKG_VERSION"));

/// The HTTP client and the headers of every request.
pub(crate) struct Requester {
    pub(crate) client: reqwest::Client,
    credentials: Credentials,
}

impl Requester {
    /// Checks the configured headers and builds the client. The error says what is wrong.
    pub(crate) fn new(config: &SseConfig) -> Result<Self, String> {
        let credentials = Credentials::new(config.headers.clone(), config.auth.clone()).map_err(|e| e.to_string())?;
        let tls = server_config(Alpn::Unspecified, &plexus_net::tls::TlsOptions { ca: config.ca.clone(), client_identity: None }).map_err(|e| e.to_string())?;
        let client = reqwest::Client::builder()
            // plexus-net's TLS configuration: the platform's roots, NODE_EXTRA_CA_CERTS, the entry's `ca`.
            .use_preconfigured_tls(ClientConfig::clone(&tls))
            .user_agent(USER_AGENT)
            .connect_timeout(config.connect_timeout)
            .tcp_keepalive(TCP_KEEPALIVE)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| format!("could not set up the HTTP client: {}", error_chain(&e)))?;
        Ok(Requester { client, credentials })
    }

    /// Sends the request that `build` makes from the headers (the auth provider's for `method`
    /// and `url`). On a 401 or 403 the credentials
    /// decide (see [`Credentials::rejected`]); on a retry, the request is built again with fresh
    /// headers and sent once more. `what` names the request in errors ("GET http://…");
    /// `on_error` maps a request that got no response.
    pub(crate) async fn send(
        &self,
        what: &str,
        (method, url): (&str, &Url),
        build: impl Fn(HeaderMap) -> RequestBuilder,
        on_error: impl Fn(reqwest::Error) -> TransportError,
    ) -> Result<Response, TransportError> {
        let mut retries = 0;
        loop {
            let headers = header_map(&self.credentials.headers(method, url.as_str()).await?);
            let response = build(headers).send().await.map_err(&on_error)?;
            let status = response.status();
            if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
                return Ok(response);
            }
            let (status, headers) = (status.as_u16(), response.headers().clone());
            let body = read_body_prefix(response, MAX_ERROR_BODY).await;
            let rejection = rejection_of(what, url.as_str(), status, &headers, &body);
            self.credentials.rejected(&rejection, retries).await?;
            retries += 1;
        }
    }
}

/// Checked header pairs (see [`Credentials`]) as a header map. The checks are those of the
/// `http` crate, so every pair converts.
fn header_map(pairs: &[(String, String)]) -> HeaderMap {
    let convert =
        |(name, value): &(String, String)| Some((HeaderName::try_from(name).ok()?, HeaderValue::try_from(value).ok()?));
    pairs.iter().filter_map(convert).collect()
}

/// Follows redirects within the origin only (the configured headers and credentials must not
/// reach another origin); a redirect elsewhere is returned as the response.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let leaves_origin = attempt
            .previous()
            .last()
            .is_some_and(|from| !same_origin(from, attempt.url()));
        if leaves_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// The error for a redirect to another origin that was not followed.
pub(crate) fn redirect_refused(target: &str, url: &Url, response: &Response) -> TransportError {
    let location = response
        .headers()
        .get(LOCATION)
        .and_then(|l| l.to_str().ok())
        .and_then(|l| url.join(l).ok());
    let reason = match location {
        Some(location) => format!(
            "the server redirected {} to {}, on another origin; the redirect is not followed, so that the \
             configured headers and credentials are not sent to {}",
            redact_url(url.as_str()),
            redact_url(location.as_str()),
            origin(&location)
        ),
        None => format!(
            "the server answered HTTP {} without a usable Location header",
            response.status().as_u16()
        ),
    };
    TransportError::Connect {
        target: target.to_owned(),
        reason,
    }
}

/// The error for a response with a status this transport cannot act on: at most
/// [`MAX_ERROR_BODY`] bytes of its body are read, an excerpt is kept.
pub(crate) async fn http_error(what: String, response: Response, deadline: Duration) -> TransportError {
    let status = response.status().as_u16();
    let body = tokio::time::timeout(deadline, read_body_prefix(response, MAX_ERROR_BODY))
        .await
        .unwrap_or_default();
    TransportError::Http {
        status,
        what,
        body: body_excerpt(&body),
    }
}

/// Reads the start of a body, at most `limit` bytes; a failing body ends the reading.
pub(crate) async fn read_body_prefix(mut response: Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - body.len());
                body.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    body
}

/// A request that got no response, as an I/O error of `context`: the kind of the underlying
/// I/O error when there is one (a refused or reset connection), `TimedOut` for a timeout.
pub(crate) fn io_failure(context: String, error: &reqwest::Error, timeout: Duration) -> TransportError {
    let kind = if error.is_timeout() {
        io::ErrorKind::TimedOut
    } else {
        io_kind(error).unwrap_or(io::ErrorKind::Other)
    };
    let text = if error.is_timeout() {
        format!("no complete answer within {timeout:?}")
    } else {
        error_chain(error)
    };
    TransportError::from_io(context, io::Error::new(kind, text))
}

/// The kind of the first I/O error in an error's chain.
pub(crate) fn io_kind(error: &(dyn StdError + 'static)) -> Option<io::ErrorKind> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return Some(io.kind());
        }
        source = e.source();
    }
    None
}

/// An error and its causes, joined by `: ` (reqwest's own message is terse), without URLs.
pub(crate) fn error_chain(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source: Option<&(dyn StdError + 'static)> = Some(error);
    let mut first = true;
    while let Some(e) = source {
        let part = if first {
            // reqwest's message names the URL, query included; the caller names it redacted.
            let mut stripped = String::new();
            if error.is_timeout() {
                stripped.push_str("timed out");
            } else if error.is_connect() {
                stripped.push_str("could not connect");
            } else if error.is_body() || error.is_decode() {
                stripped.push_str("reading the body failed");
            } else {
                stripped.push_str("the request failed");
            }
            stripped
        } else {
            e.to_string()
        };
        first = false;
        // hyper's generic wrapper ("client error (Connect)") says nothing the first part does not.
        let generic = part.starts_with("client error (");
        if !generic && !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        source = e.source();
    }
    text
}
