//! One HTTP exchange with the MCP endpoint: the headers (configured, auth, session, version),
//! the per-request deadline, same-origin redirects, the one auth retry, and the statuses that
//! end the session.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use plexus_transport::redact::redact_url;
use plexus_transport::{ErrorClass, Rejection, TransportError};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION, WWW_AUTHENTICATE};
use reqwest::{Method, StatusCode};
use tokio::time::Instant;

use crate::config::MAX_REDIRECTS;
use crate::errors::{error_body, request_failed};
use crate::inner::Inner;

/// `Mcp-Session-Id`.
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

const ACCEPT_POST: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const ACCEPT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Checked header pairs (see [`Credentials`](plexus_transport::Credentials)) as a header map.
/// The checks are those of the `http` crate, so every pair converts.
fn header_map(pairs: &[(String, String)]) -> HeaderMap {
    let convert =
        |(name, value): &(String, String)| Some((HeaderName::try_from(name).ok()?, HeaderValue::try_from(value).ok()?));
    pairs.iter().filter_map(convert).collect()
}

/// What to send.
#[derive(Debug, Clone)]
pub(crate) struct RequestSpec {
    pub(crate) method: Method,
    /// The JSON body of a POST.
    pub(crate) body: Option<Bytes>,
    /// An `initialize` POST goes without session id and protocol version: it starts a session.
    pub(crate) initialize: bool,
    /// Resumes an event stream after this event.
    pub(crate) last_event_id: Option<String>,
}

impl RequestSpec {
    pub(crate) fn post(body: Bytes, initialize: bool) -> Self {
        RequestSpec {
            method: Method::POST,
            body: Some(body),
            initialize,
            last_event_id: None,
        }
    }

    pub(crate) fn get(last_event_id: Option<String>) -> Self {
        RequestSpec {
            method: Method::GET,
            body: None,
            initialize: false,
            last_event_id,
        }
    }

    pub(crate) fn delete() -> Self {
        RequestSpec {
            method: Method::DELETE,
            body: None,
            initialize: false,
            last_event_id: None,
        }
    }

    /// "POST http://…/mcp", for errors.
    pub(crate) fn what(&self, inner: &Inner) -> String {
        format!("{} {}", self.method, inner.description)
    }
}

impl Inner {
    /// Sends `spec` and returns a 2xx response, or the error the response means. The response
    /// headers must arrive before `deadline` (the per-request timeout).
    ///
    /// Every request (redirects and the auth retry included) counts toward the terminal failure
    /// limit when it fails with a dead connection, and resets it when any response arrives. A
    /// 404 to a request that carried a session id ends the session: the transport closes with
    /// [`TransportError::SessionExpired`].
    pub(crate) async fn execute(
        self: &Arc<Self>,
        spec: &RequestSpec,
        deadline: Instant,
    ) -> Result<reqwest::Response, TransportError> {
        let mut retried_auth = false;
        loop {
            let (session, version) = if spec.initialize {
                (None, None)
            } else {
                (self.session_id(), self.protocol_version())
            };
            let headers = self
                .request_headers(spec, session.as_ref().map(|s| &s.1), version.map(|v| v.1), deadline)
                .await?;
            let response = match tokio::time::timeout_at(deadline, self.follow_redirects(spec, headers)).await {
                Ok(result) => result?,
                Err(_) => {
                    let timed_out = io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "no response within {:?} (the per-request timeout)",
                            self.request_timeout
                        ),
                    );
                    let error = TransportError::from_io(spec.what(self), timed_out);
                    self.count_failure(&error);
                    return Err(error);
                }
            };
            self.reset_failures();
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            if status == StatusCode::NOT_FOUND
                && let Some((session_id, _)) = session
            {
                let error = TransportError::SessionExpired { session_id };
                self.close_with(error.clone());
                return Err(error);
            }
            if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                self.challenge(spec, response, retried_auth, deadline).await?;
                retried_auth = true;
                continue;
            }
            return Err(TransportError::Http {
                status: status.as_u16(),
                what: spec.what(self),
                body: error_body(response, deadline).await,
            });
        }
    }

    /// Handles a 401 or 403 (see [`Credentials::rejected`](plexus_transport::Credentials::rejected)):
    /// `Ok` means "fetch headers again and retry" (allowed once). The provider must answer before
    /// `deadline`.
    async fn challenge(
        &self,
        spec: &RequestSpec,
        response: reqwest::Response,
        retried: bool,
        deadline: Instant,
    ) -> Result<(), TransportError> {
        let challenges = response.headers().get_all(WWW_AUTHENTICATE);
        let status = response.status().as_u16();
        let rejection = Rejection::new(
            spec.what(self),
            self.url.as_str(),
            status,
            challenges.iter().map(HeaderValue::as_bytes),
        );
        let rejection = rejection.with_body(error_body(response, deadline).await);
        let decided = tokio::time::timeout_at(deadline, self.credentials.rejected(&rejection, retried)).await;
        decided.unwrap_or_else(|_| {
            Err(TransportError::AuthFailed {
                reason: format!(
                    "the auth provider did not answer the HTTP {status} challenge within {:?} (the per-request timeout)",
                    self.request_timeout
                ),
            })
        })
    }

    /// The headers of one request: the configured ones, then the auth provider's (which replace
    /// configured headers of the same name), then the protocol's own (which nothing replaces).
    async fn request_headers(
        &self,
        spec: &RequestSpec,
        session: Option<&HeaderValue>,
        version: Option<HeaderValue>,
        deadline: Instant,
    ) -> Result<HeaderMap, TransportError> {
        let Ok(pairs) = tokio::time::timeout_at(deadline, self.credentials.headers()).await else {
            return Err(TransportError::AuthFailed {
                reason: format!(
                    "the auth provider gave no headers within {:?} (the per-request timeout)",
                    self.request_timeout
                ),
            });
        };
        let mut headers = header_map(&pairs?);
        if spec.body.is_some() {
            headers.insert(ACCEPT, ACCEPT_POST);
            headers.insert(CONTENT_TYPE, JSON);
        } else {
            headers.insert(ACCEPT, ACCEPT_STREAM);
        }
        if let Some(session) = session {
            headers.insert(MCP_SESSION_ID, session.clone());
        }
        if let Some(version) = version {
            headers.insert(MCP_PROTOCOL_VERSION, version);
        }
        if let Some(id) = &spec.last_event_id
            && let Ok(value) = HeaderValue::from_str(id)
        {
            headers.insert(LAST_EVENT_ID, value);
        }
        Ok(headers)
    }

    /// Sends the request, following redirects within the endpoint's origin (same method, body
    /// and headers); a redirect to another origin is refused, so that credentials and custom
    /// headers never reach another server.
    async fn follow_redirects(
        &self,
        spec: &RequestSpec,
        headers: HeaderMap,
    ) -> Result<reqwest::Response, TransportError> {
        let mut url = self.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let mut request = self
                .client
                .request(spec.method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(body) = &spec.body {
                request = request.body(body.clone());
            }
            let response = match request.send().await {
                Ok(response) => response,
                Err(e) => {
                    let error = request_failed(&spec.what(self), &e, self.connect_timeout);
                    if error.class() == ErrorClass::TerminalIo {
                        self.count_failure(&error);
                    }
                    return Err(error);
                }
            };
            let status = response.status();
            let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok());
            let (true, Some(location)) = (status.is_redirection(), location) else {
                return Ok(response);
            };
            let next = url.join(location).map_err(|e| TransportError::Protocol {
                reason: format!(
                    "{} was redirected to {location:?}, which is not a URL: {e}",
                    spec.what(self)
                ),
            })?;
            if next.origin() != url.origin() {
                return Err(TransportError::Connect {
                    target: self.description.clone(),
                    reason: format!(
                        "{} was redirected (HTTP {}) to {}, another origin; redirects are followed only within \
                         the same origin, so that credentials and custom headers never reach another server \
                         (configure the new URL if it is right)",
                        spec.what(self),
                        status.as_u16(),
                        redact_url(next.as_str())
                    ),
                });
            }
            tracing::debug!(server = %self.name, "{} redirected (HTTP {}) to {}", spec.what(self), status.as_u16(), redact_url(next.as_str()));
            url = next;
        }
        Err(TransportError::Protocol {
            reason: format!("{} was redirected more than {MAX_REDIRECTS} times", spec.what(self)),
        })
    }
}

#[cfg(test)]
mod tests {
    use plexus_transport::headers::check_header;
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// `header_map` drops nothing: the checks of `plexus_transport::headers` accept exactly
        /// the names and values the `http` crate does.
        #[test]
        fn the_header_checks_agree_with_the_http_crate(
            name in prop_oneof!["[ -~é\t\n]{0,80}", "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,70}"],
            value in prop_oneof!["[\\x00-\\x7fé]{0,20}", "[ -~\t]{0,20}"],
        ) {
            let accepted = HeaderName::try_from(&name).is_ok() && HeaderValue::try_from(&value).is_ok();
            prop_assert_eq!(check_header(&name, &value).is_ok(), accepted);
            prop_assert_eq!(header_map(&[(name, value)]).len(), usize::from(accepted));
        }
    }
}
