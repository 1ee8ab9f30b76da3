//! One HTTP exchange with the MCP endpoint: the headers (configured, auth, session, version),
//! the per-request deadline, same-origin redirects, the one auth retry, and the statuses that
//! end the session.

use std::borrow::Cow;
use std::io;
use std::pin::pin;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue};
use plexus_net::http::{RedirectError, Request, Response, follow_redirects};
use plexus_transport::{MessageHeader, TransportError};

use crate::config::MAX_REDIRECTS;
use crate::deadline::{Deadline, ProviderTimeout};
use crate::errors::error_body;
use crate::inner::Inner;

/// Header names the transport writes itself; configured and provided headers of these names are
/// not sent. The protocol's own (`Accept`, `Content-Type`, `Mcp-Session-Id`,
/// `MCP-Protocol-Version`, `Last-Event-ID`), HTTP/1.1's framing and connection headers, and
/// `Accept-Encoding` (the HTTP client asks only for what it decodes).
const OWN_HEADERS: [&str; 12] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "upgrade",
    "accept-encoding",
];

/// `Mcp-Session-Id`.
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The `User-Agent` sent unless one is configured.
pub(crate) const USER_AGENT: &str = concat!("plexus-http/", env!("CARGO_PKG_VERSION"));

/// The method of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Delete,
}

impl Method {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }

    fn as_http(self) -> http::Method {
        match self {
            Method::Get => http::Method::GET,
            Method::Post => http::Method::POST,
            Method::Delete => http::Method::DELETE,
        }
    }
}

/// What to send.
#[derive(Debug)]
pub(crate) struct RequestSpec {
    pub(crate) method: Method,
    /// The JSON body of a POST.
    pub(crate) body: Option<Bytes>,
    /// An `initialize` POST goes without session id and protocol version: it starts a session.
    pub(crate) initialize: bool,
    /// Resumes an event stream after this event.
    pub(crate) last_event_id: Option<String>,
    /// The message's own headers (the 2026-07-28 revision's `MCP-Protocol-Version`, `Mcp-Method`,
    /// `Mcp-Name`, `Mcp-Param-*`), which replace any of the same name.
    pub(crate) message_headers: Vec<(HeaderName, HeaderValue)>,
    /// A message of the stateless revision (it has a protocol version of its own): it carries
    /// no session header, and an error status with a JSON-RPC error body is its answer.
    pub(crate) stateless: bool,
}

/// The header `name` of a message: the stateless revision's own names (on every request of that
/// era) without parsing them again, any other parsed.
fn header_name(name: &str) -> Result<HeaderName, http::header::InvalidHeaderName> {
    const KNOWN: [HeaderName; 3] = [
        MCP_PROTOCOL_VERSION,
        HeaderName::from_static("mcp-method"),
        HeaderName::from_static("mcp-name"),
    ];
    match KNOWN.iter().find(|known| known.as_str().eq_ignore_ascii_case(name)) {
        Some(known) => Ok(known.clone()),
        None => HeaderName::from_bytes(name.as_bytes()),
    }
}

/// A message's header value: a constant one (a protocol version, a method) is not copied.
fn header_value(value: Cow<'static, str>) -> Result<HeaderValue, http::header::InvalidHeaderValue> {
    match value {
        Cow::Borrowed(constant) => HeaderValue::from_maybe_shared(Bytes::from_static(constant.as_bytes())),
        Cow::Owned(value) => HeaderValue::try_from(value),
    }
}

impl RequestSpec {
    pub(crate) fn post(body: Vec<u8>, initialize: bool) -> Self {
        RequestSpec {
            method: Method::Post,
            body: Some(Bytes::from(body)),
            initialize,
            last_event_id: None,
            message_headers: Vec::new(),
            stateless: false,
        }
    }

    /// The POST of a message with headers of its own (see [`RequestSpec::message_headers`]),
    /// `stateless` when they include a protocol version.
    pub(crate) fn post_with_headers(body: Vec<u8>, headers: Vec<MessageHeader>, stateless: bool) -> Self {
        let message_headers = headers
            .into_iter()
            .filter_map(|(name, value)| {
                match (header_name(&name), header_value(value)) {
                    (Ok(name), Ok(value)) => Some((name, value)),
                    // The session encodes every value it sets; a header that still cannot be sent is
                    // left out, and the server says what it misses.
                    _ => {
                        tracing::warn!("the message header {name:?} cannot be sent as it is; it is left out");
                        None
                    }
                }
            })
            .collect();
        RequestSpec {
            message_headers,
            stateless,
            ..RequestSpec::post(body, false)
        }
    }

    pub(crate) fn get(last_event_id: Option<String>) -> Self {
        RequestSpec {
            method: Method::Get,
            body: None,
            initialize: false,
            last_event_id,
            message_headers: Vec::new(),
            stateless: false,
        }
    }

    pub(crate) fn delete() -> Self {
        RequestSpec {
            method: Method::Delete,
            body: None,
            initialize: false,
            last_event_id: None,
            message_headers: Vec::new(),
            stateless: false,
        }
    }

    /// "POST http://…/mcp", for errors.
    pub(crate) fn what(&self, inner: &Inner) -> String {
        format!("{} {}", self.method.as_str(), inner.description)
    }
}

/// Headers a request may get beyond its template: the session's two, the message's own (the
/// stateless revision's `Mcp-Method` and `Mcp-Name`, or a `Last-Event-ID`), and the HTTP
/// client's `Host`, `User-Agent` and `Accept-Encoding`.
const ADDED_HEADERS: usize = 8;

/// The headers a request starts with: the configured (or provided) ones and the protocol's
/// `Accept` and `Content-Type`, for a POST and for a GET.
#[derive(Debug)]
pub(crate) struct RequestTemplates {
    post: HeaderMap,
    get: HeaderMap,
}

impl RequestTemplates {
    pub(crate) fn new(base: &[(HeaderName, HeaderValue)]) -> Self {
        let make = |accept: &'static str, content_type: Option<&'static str>| {
            let mut headers = HeaderMap::with_capacity(base.len() + 6);
            for (name, value) in base {
                headers.append(name, value.clone());
            }
            headers.insert(ACCEPT, HeaderValue::from_static(accept));
            if let Some(content_type) = content_type {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            }
            headers
        };
        RequestTemplates {
            post: make("application/json, text/event-stream", Some("application/json")),
            get: make("text/event-stream", None),
        }
    }

    fn for_spec(&self, spec: &RequestSpec) -> &HeaderMap {
        if spec.body.is_some() { &self.post } else { &self.get }
    }
}

/// Checked header pairs as the transport sends them: without the names it writes itself.
pub(crate) fn header_pairs(pairs: &[(String, String)]) -> Vec<(HeaderName, HeaderValue)> {
    plexus_net::headers::to_http(pairs, &OWN_HEADERS).collect()
}

impl Inner {
    /// The headers of one request: the configured ones, or the auth provider's merged over them
    /// (which replace configured headers of the same name), then the protocol's own (which
    /// nothing replaces). An `initialize` carries neither the session id nor the protocol
    /// version, and a message of the stateless revision carries its own headers instead.
    /// (`Host`, `User-Agent` and `Accept-Encoding` are the HTTP client's.)
    fn request_headers(&self, spec: &RequestSpec, provided: Option<&RequestTemplates>) -> HeaderMap {
        let template = provided.unwrap_or(&self.headers).for_spec(spec);
        // Built with room for what is added to it here and by the HTTP client (a clone of the
        // template would have none, and grow twice per request).
        let mut headers = HeaderMap::with_capacity(template.len() + ADDED_HEADERS);
        for (name, value) in template {
            headers.append(name.clone(), value.clone());
        }
        if !spec.initialize && !spec.stateless {
            self.add_session_headers(&mut headers);
        }
        for (name, value) in &spec.message_headers {
            headers.insert(name, value.clone());
        }
        if let Some(id) = &spec.last_event_id
            && plexus_net::headers::check_header("Last-Event-ID", id).is_ok()
            && let Ok(value) = HeaderValue::try_from(id.as_str())
        {
            headers.insert(LAST_EVENT_ID, value);
        }
        headers
    }

    /// Sends `spec` and returns a 2xx response (or, for a message of the stateless revision, a
    /// 4xx but 401 and 403, whose body may be its JSON-RPC answer), or the error the response
    /// means. The response
    /// headers must arrive before `deadline` (the per-request timeout).
    ///
    /// A 404 to a request that carried a session id ends the session: the transport closes with
    /// [`TransportError::SessionExpired`].
    pub(crate) async fn execute(
        self: &Arc<Self>,
        spec: &RequestSpec,
        deadline: &mut Deadline,
    ) -> Result<Response, TransportError> {
        // Retries after a 401 or 403 so far (the credentials decide how many are allowed).
        let mut auth_retries = 0;
        loop {
            let provided = self.provided_headers(spec, deadline).await?;
            let carried_session = !spec.initialize && self.has_session();
            let response = match deadline.run(pin!(self.follow_redirects(spec, provided.as_ref()))).await {
                Some(result) => result?,
                None => {
                    let timed_out = io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no response within {}", deadline.limit()),
                    );
                    return Err(TransportError::from_io(spec.what(self), timed_out));
                }
            };
            let status = response.status.as_u16();
            if (200..300).contains(&status) {
                return Ok(response);
            }
            if spec.stateless && (400..500).contains(&status) && !matches!(status, 401 | 403) {
                // The stateless revision answers an error with its status and a JSON-RPC error
                // body, which the caller reads as the request's answer.
                return Ok(response);
            }
            if status == 404 && carried_session {
                let session_id = self.session_id().unwrap_or_default();
                let error = TransportError::SessionExpired { session_id };
                self.close_with(error.clone());
                return Err(error);
            }
            if matches!(status, 401 | 403) {
                // Boxed, as every rare path of a request is: the common path stays small to move.
                Box::pin(self.challenge(spec, response, auth_retries, deadline)).await?;
                auth_retries += 1;
                continue;
            }
            let what = match (status, &spec.body) {
                (413, Some(body)) => format!(
                    "{} (a {}-byte request, which it refused as too large)",
                    spec.what(self),
                    body.len()
                ),
                _ => spec.what(self),
            };
            return Err(TransportError::Http {
                status,
                what,
                body: Box::pin(error_body(response.body, deadline)).await,
            });
        }
    }

    /// Handles a 401 or 403 (see
    /// [`Credentials::rejected`](plexus_net::Credentials::rejected)): `Ok` means
    /// "fetch headers again and retry" (once, or twice for a DPoP nonce challenge). The provider
    /// must answer before `deadline`.
    async fn challenge(
        &self,
        spec: &RequestSpec,
        response: Response,
        retries: u32,
        deadline: &mut Deadline,
    ) -> Result<(), TransportError> {
        let Response {
            status, headers, body, ..
        } = response;
        let status = status.as_u16();
        let body = error_body(body, deadline).await;
        let rejection =
            plexus_net::rejection_of(&spec.what(self), self.url.as_str(), status, &headers, body.as_bytes());
        let decided = deadline.run(pin!(self.credentials.rejected(&rejection, retries))).await;
        decided.unwrap_or_else(|| {
            Err(TransportError::AuthFailed {
                cause: Arc::new(ProviderTimeout::Decision {
                    status,
                    limit: deadline.limit(),
                }),
            })
        })
    }

    /// The headers of the auth provider merged over the configured ones (`None` without a
    /// provider: the configured ones were written once, up front).
    async fn provided_headers(
        &self,
        spec: &RequestSpec,
        deadline: &mut Deadline,
    ) -> Result<Option<RequestTemplates>, TransportError> {
        // The request's method and URL, for headers that sign it (DPoP proofs).
        let headers = self.credentials.headers(spec.method.as_str(), self.url.as_str());
        let Some(pairs) = deadline.run(pin!(headers)).await else {
            return Err(TransportError::AuthFailed {
                cause: Arc::new(ProviderTimeout::Headers(deadline.limit())),
            });
        };
        Ok(match pairs? {
            Cow::Borrowed(_) => None,
            Cow::Owned(pairs) => Some(RequestTemplates::new(&header_pairs(&pairs))),
        })
    }

    /// Sends the request, following redirects within the endpoint's origin (same method, body
    /// and headers); a redirect to another origin is refused, so that credentials and custom
    /// headers never reach another server.
    async fn follow_redirects(
        self: &Arc<Self>,
        spec: &RequestSpec,
        provided: Option<&RequestTemplates>,
    ) -> Result<Response, TransportError> {
        let build = || Request {
            method: spec.method.as_http(),
            headers: self.request_headers(spec, provided),
            body: spec.body.clone(),
        };
        let failed = |e: RedirectError| e.into_transport_error(&spec.what(self), &self.description);
        let response = self
            .client
            .send(&self.target, build())
            .await
            .map_err(|e| failed(RedirectError::Http(e)))?;
        if !response.is_redirect() {
            return Ok(response);
        }
        // Rare: boxed, so that every request's future stays small.
        let followed = Box::pin(follow_redirects(
            &self.client,
            &self.target,
            response,
            MAX_REDIRECTS,
            build,
        ))
        .await;
        followed.map(|(_, response)| response).map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_headers_keep_order_and_duplicates_and_skip_the_transports_own() {
        let pairs: Vec<(String, String)> = [
            ("X-Extra", "one"),
            ("Accept", "text/html"),
            ("x-extra", "two"),
            ("Content-Length", "9"),
            ("Accept-Encoding", "zstd"),
            ("Authorization", "Bearer t"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        let converted: Vec<(String, String)> = header_pairs(&pairs)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            converted,
            [
                ("x-extra".to_owned(), "one".to_owned()),
                ("x-extra".to_owned(), "two".to_owned()),
                ("authorization".to_owned(), "Bearer t".to_owned())
            ]
        );
    }
}
