//! Requests with the configured headers and the auth provider's, through plexus-net's HTTP
//! client: redirects followed within the origin, one retry after a challenge the provider
//! resolves, and the errors of failed requests.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use plexus_net::http::{
    Body, HttpClient, HttpError, HttpSettings, RedirectError, Request, Response, Target, follow_redirects,
};
use plexus_net::{Credentials, rejection_of};
use plexus_transport::{TransportError, body_excerpt};
use url::Url;

use crate::config::{MAX_ERROR_BODY, MAX_REDIRECTS, SseConfig};

/// The `User-Agent` of every request.
const USER_AGENT: &str = concat!("plexus-sse/", env!("CARGO_PKG_VERSION"));

/// The HTTP client and the headers of every request.
pub(crate) struct Requester {
    client: HttpClient,
    credentials: Credentials,
}

/// Why a request failed: the transport error, or no response (the connection could not be
/// opened, or failed; a connect reports it in its own words), or a redirect that cannot be
/// followed.
pub(crate) enum Failure {
    Transport(TransportError),
    Exchange(HttpError),
    Redirect(RedirectError),
}

impl From<TransportError> for Failure {
    fn from(error: TransportError) -> Self {
        Failure::Transport(error)
    }
}

impl Failure {
    /// The error of request `what` to the server `target` (as errors name it).
    pub(crate) fn into_error(self, target: &str, what: &str) -> TransportError {
        match self {
            Failure::Transport(error) => error,
            Failure::Exchange(error) => RedirectError::Http(error).into_transport_error(what, target),
            Failure::Redirect(error) => error.into_transport_error(what, target),
        }
    }
}

impl Requester {
    /// Checks the configured headers and sets up the client; a connect error says what is wrong.
    pub(crate) fn new(config: &SseConfig) -> Result<Self, TransportError> {
        let fail = |e| plexus_net::connect_error(&config.endpoint.url, e);
        let credentials =
            Credentials::new(config.endpoint.headers.clone(), config.endpoint.auth.clone()).map_err(fail)?;
        let settings = HttpSettings::new(USER_AGENT)
            .connect_timeout(config.endpoint.connect_timeout)
            .proxy(config.endpoint.proxy.clone())
            .tls(config.endpoint.tls.clone());
        let client = HttpClient::new(settings).map_err(|e| plexus_net::connect_error(&config.endpoint.url, e))?;
        Ok(Requester { client, credentials })
    }

    /// The target of requests to `url`.
    pub(crate) fn target(&self, url: &Url) -> Result<Target, HttpError> {
        self.client.target(url)
    }

    /// Sends `method` to `target` with the credentials' headers (the auth provider's for the
    /// method and URL) and `extra`, following redirects within the origin. On a 401 or 403 the
    /// credentials decide (see [`Credentials::rejected`]); on a retry, the request goes again with
    /// fresh headers. `what` names the request in errors ("GET http://…"). Gives the response and
    /// the URL it came from.
    pub(crate) async fn send(
        &self,
        what: &str,
        target: &Target,
        method: &Method,
        extra: &[(HeaderName, HeaderValue)],
        body: Option<Bytes>,
    ) -> Result<(Url, Response), Failure> {
        let mut retries = 0;
        loop {
            let pairs = self.credentials.headers(method.as_str(), target.url().as_str()).await?;
            let mut headers: HeaderMap = plexus_net::headers::to_http(&pairs, &[]).collect();
            for (name, value) in extra {
                headers.insert(name, value.clone());
            }
            let build = || Request {
                method: method.clone(),
                headers: headers.clone(),
                body: body.clone(),
            };
            let response = self.client.send(target, build()).await.map_err(Failure::Exchange)?;
            let (redirected, response) = follow_redirects(&self.client, target, response, MAX_REDIRECTS, build)
                .await
                .map_err(|e| match e {
                    RedirectError::Http(e) => Failure::Exchange(e),
                    other => Failure::Redirect(other),
                })?;
            let url = redirected.map_or_else(|| target.url().clone(), |t| t.url().clone());
            let status = response.status.as_u16();
            if status != 401 && status != 403 {
                return Ok((url, response));
            }
            let Response { headers, mut body, .. } = response;
            let body = read_body_prefix(&mut body, MAX_ERROR_BODY).await;
            let rejection = rejection_of(what, url.as_str(), status, &headers, &body);
            self.credentials.rejected(&rejection, retries).await?;
            retries += 1;
        }
    }
}

/// The error for a response with a status this transport cannot act on: at most
/// [`MAX_ERROR_BODY`] bytes of its body are read (within `deadline`), an excerpt is kept.
pub(crate) async fn http_error(what: String, mut response: Response, deadline: Duration) -> TransportError {
    let status = response.status.as_u16();
    let body = tokio::time::timeout(deadline, read_body_prefix(&mut response.body, MAX_ERROR_BODY))
        .await
        .unwrap_or_default();
    TransportError::Http {
        status,
        what,
        body: body_excerpt(&body),
    }
}

/// Reads the start of a body, at most `limit` bytes; a failing body ends the reading.
pub(crate) async fn read_body_prefix(body: &mut Body, limit: usize) -> Vec<u8> {
    let mut read = Vec::new();
    while read.len() < limit {
        match body.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - read.len());
                read.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    read
}
