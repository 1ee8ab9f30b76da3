//! One HTTP exchange with the MCP endpoint: the headers (configured, auth, session, version),
//! the per-request deadline, same-origin redirects, the one auth retry, and the statuses that
//! end the session.

use std::borrow::Cow;
use std::io;
use std::pin::pin;
use std::sync::Arc;

use plexus_net::redact::redact_url;
use plexus_transport::{Rejection, TransportError};
use url::{Position, Url};

use crate::config::MAX_REDIRECTS;
use crate::deadline::Deadline;
use crate::errors::{error_body, wire_failed};
use crate::inner::Inner;
use crate::wire::{Body, Head, Request, WriteHeaders};

/// Header names the transport writes itself; configured and provided headers of these names are
/// not sent. The protocol's own (`Accept`, `Content-Type`, `Mcp-Session-Id`,
/// `MCP-Protocol-Version`, `Last-Event-ID`) and HTTP/1.1's framing and connection headers.
const OWN_HEADERS: [&str; 11] = [
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
];

/// The `User-Agent` sent unless one is configured.
const USER_AGENT: &str = concat!("plexus-http/", env!("CARGO_PKG_VERSION"));

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
}

/// What to send.
#[derive(Debug)]
pub(crate) struct RequestSpec {
    pub(crate) method: Method,
    /// The JSON body of a POST.
    pub(crate) body: Option<Vec<u8>>,
    /// An `initialize` POST goes without session id and protocol version: it starts a session.
    pub(crate) initialize: bool,
    /// Resumes an event stream after this event.
    pub(crate) last_event_id: Option<String>,
}

impl RequestSpec {
    pub(crate) fn post(body: Vec<u8>, initialize: bool) -> Self {
        RequestSpec {
            method: Method::Post,
            body: Some(body),
            initialize,
            last_event_id: None,
        }
    }

    pub(crate) fn get(last_event_id: Option<String>) -> Self {
        RequestSpec {
            method: Method::Get,
            body: None,
            initialize: false,
            last_event_id,
        }
    }

    pub(crate) fn delete() -> Self {
        RequestSpec {
            method: Method::Delete,
            body: None,
            initialize: false,
            last_event_id: None,
        }
    }

    /// "POST http://…/mcp", for errors.
    pub(crate) fn what(&self, inner: &Inner) -> String {
        format!("{} {}", self.method.as_str(), inner.description)
    }
}

/// A 2xx (or, inside this module, any) response: its head, and its body still on the wire.
#[derive(Debug)]
pub(crate) struct HttpResponse {
    pub(crate) head: Head,
    pub(crate) body: Body,
}

/// The header lines of one request, written into the connection's buffer: the configured ones,
/// or the auth provider's merged over them (which replace configured headers of the same name),
/// then the protocol's own (which nothing replaces). An `initialize` carries neither the session
/// id nor the protocol version.
pub(crate) struct RequestHeaders<'a> {
    inner: &'a Inner,
    spec: &'a RequestSpec,
    provided: Option<&'a [(String, String)]>,
}

impl WriteHeaders for RequestHeaders<'_> {
    fn write_headers(&self, out: &mut Vec<u8>) {
        match self.provided {
            None => out.extend_from_slice(&self.inner.configured_headers),
            Some(pairs) => push_base_headers(out, &self.inner.url, pairs),
        }
        if self.spec.body.is_some() {
            push_header(out, "Accept", b"application/json, text/event-stream");
            push_header(out, "Content-Type", b"application/json");
        } else {
            push_header(out, "Accept", b"text/event-stream");
        }
        if !self.spec.initialize {
            self.inner.push_session_headers(out);
        }
        if let Some(id) = &self.spec.last_event_id
            && plexus_net::headers::check_header("Last-Event-ID", id).is_ok()
        {
            push_header(out, "Last-Event-ID", id.as_bytes());
        }
    }
}

/// Appends one header line.
pub(crate) fn push_header(block: &mut Vec<u8>, name: &str, value: &[u8]) {
    block.extend_from_slice(name.as_bytes());
    block.extend_from_slice(b": ");
    block.extend_from_slice(value);
    block.extend_from_slice(b"\r\n");
}

/// The header lines every request starts with: `Host` and `User-Agent` (unless the pairs have
/// them), then the pairs in order, without the names the transport writes itself. The pairs
/// were checked by [`Credentials`](plexus_net::Credentials): every one can be sent.
pub(crate) fn base_headers(url: &Url, pairs: &[(String, String)]) -> Vec<u8> {
    let mut block = Vec::with_capacity(128);
    push_base_headers(&mut block, url, pairs);
    block
}

/// Appends what [`base_headers`] returns.
fn push_base_headers(block: &mut Vec<u8>, url: &Url, pairs: &[(String, String)]) {
    let has = |name: &str| pairs.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("host") {
        // `host_str` keeps an IPv6 address's brackets; `port` is absent when it is the default.
        let host = url.host_str().unwrap_or_default();
        match url.port() {
            Some(port) => push_header(block, "Host", format!("{host}:{port}").as_bytes()),
            None => push_header(block, "Host", host.as_bytes()),
        }
    }
    if !has("user-agent") {
        push_header(block, "User-Agent", USER_AGENT.as_bytes());
    }
    for (name, value) in pairs {
        if !OWN_HEADERS.iter().any(|own| name.eq_ignore_ascii_case(own)) {
            push_header(block, name, value.as_bytes());
        }
    }
}

impl Inner {
    /// Sends `spec` and returns a 2xx response, or the error the response means. The response
    /// headers must arrive before `deadline` (the per-request timeout).
    ///
    /// A to a request that carried a session id ends the session: the transport closes with
    /// [`TransportError::SessionExpired`].
    pub(crate) async fn execute(
        self: &Arc<Self>,
        spec: &RequestSpec,
        deadline: &mut Deadline,
    ) -> Result<HttpResponse, TransportError> {
        // Retries after a 401 or 403 so far (the credentials decide how many are allowed).
        let mut auth_retries = 0;
        loop {
            let provided = self.provided_headers(spec, deadline).await?;
            let headers = RequestHeaders {
                inner: self,
                spec,
                provided: provided.as_deref(),
            };
            let carried_session = !spec.initialize && self.has_session();
            let response = match deadline.run(pin!(self.follow_redirects(spec, &headers))).await {
                Some(result) => result?,
                None => {
                    let timed_out = io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no response within {}", deadline.limit()),
                    );
                    return Err(TransportError::from_io(spec.what(self), timed_out));
                }
            };
            let status = response.head.status();
            if (200..300).contains(&status) {
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
        response: HttpResponse,
        retries: u32,
        deadline: &mut Deadline,
    ) -> Result<(), TransportError> {
        let HttpResponse { head, body } = response;
        let status = head.status();
        let mut rejection = Rejection::new(spec.what(self), self.url.as_str(), status).with_headers(head.pairs());
        rejection.body = error_body(body, deadline).await;
        let decided = deadline.run(pin!(self.credentials.rejected(&rejection, retries))).await;
        decided.unwrap_or_else(|| {
            Err(TransportError::AuthFailed {
                reason: format!(
                    "the auth provider did not answer the HTTP {status} challenge within {}",
                    deadline.limit()
                ),
            })
        })
    }

    /// The headers of the auth provider merged over the configured ones (`None` without a
    /// provider: the configured ones were written once, up front).
    async fn provided_headers(
        &self,
        spec: &RequestSpec,
        deadline: &mut Deadline,
    ) -> Result<Option<Vec<(String, String)>>, TransportError> {
        // The request's method and URL, for headers that sign it (DPoP proofs).
        let headers = self.credentials.headers(spec.method.as_str(), self.url.as_str());
        let Some(pairs) = deadline.run(pin!(headers)).await else {
            return Err(TransportError::AuthFailed {
                reason: format!("the auth provider gave no headers within {}", deadline.limit()),
            });
        };
        Ok(match pairs? {
            Cow::Borrowed(_) => None,
            Cow::Owned(pairs) => Some(pairs),
        })
    }

    /// Sends the request, following redirects within the endpoint's origin (same method, body
    /// and headers); a redirect to another origin is refused, so that credentials and custom
    /// headers never reach another server.
    async fn follow_redirects(
        self: &Arc<Self>,
        spec: &RequestSpec,
        headers: &RequestHeaders<'_>,
    ) -> Result<HttpResponse, TransportError> {
        let mut url = Cow::Borrowed(&self.url);
        for _ in 0..=MAX_REDIRECTS {
            let request = Request {
                method: spec.method.as_str(),
                target: &url[Position::BeforePath..Position::AfterQuery],
                headers: headers as &dyn WriteHeaders,
                body: spec.body.as_deref(),
            };
            let (connection, head) = match self.pool.round_trip(&request).await {
                Ok(exchanged) => exchanged,
                Err(e) => return Err(wire_failed(&spec.what(self), e)),
            };
            let body = Body::new(Arc::clone(&self.pool), connection, &head);
            let status = head.status();
            let location = head.get_str("location");
            let (true, Some(location)) = ((300..400).contains(&status), location) else {
                return Ok(HttpResponse { head, body });
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
                        "{} was redirected (HTTP {status}) to {}, another origin; redirects are followed only within \
                         the same origin, so that credentials and custom headers never reach another server \
                         (configure the new URL if it is right)",
                        spec.what(self),
                        redact_url(next.as_str())
                    ),
                });
            }
            tracing::debug!(server = %self.name, "{} redirected (HTTP {status}) to {}", spec.what(self), redact_url(next.as_str()));
            // The redirect's body is not read: dropping it closes its connection unless it had
            // already ended.
            drop(body);
            url = Cow::Owned(next);
        }
        Err(TransportError::Protocol {
            reason: format!("{} was redirected more than {MAX_REDIRECTS} times", spec.what(self)),
        })
    }
}

#[cfg(test)]
mod tests {
    use plexus_net::headers::check_header;
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Whatever pairs pass the checks of `plexus_net::headers` are written as header
        /// lines that an HTTP parser reads back as the same pairs (values without the optional
        /// whitespace around them), and nothing else gets in: no line break, no extra header.
        #[test]
        fn checked_pairs_are_written_as_they_are(
            pairs in proptest::collection::vec(
                (prop_oneof!["[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}", "[ -~é\t]{0,10}"], "[ -~é\t]{0,30}"),
                0..6,
            ),
        ) {
            let pairs: Vec<(String, String)> = pairs
                .into_iter()
                .filter(|(name, value)| check_header(name, value).is_ok())
                .filter(|(name, _)| !["host", "user-agent"].iter().any(|n| name.eq_ignore_ascii_case(n)))
                .collect();
            let url = Url::parse("http://127.0.0.1:9/mcp").unwrap();
            let mut head = b"GET /mcp HTTP/1.1\r\n".to_vec();
            head.extend_from_slice(&base_headers(&url, &pairs));
            head.extend_from_slice(b"\r\n");
            let mut slots = [httparse::EMPTY_HEADER; 16];
            let mut request = httparse::Request::new(&mut slots);
            prop_assert!(matches!(request.parse(&head), Ok(httparse::Status::Complete(n)) if n == head.len()));
            let parsed: Vec<(String, String)> = request.headers[2..]
                .iter()
                .map(|h| (h.name.to_owned(), String::from_utf8_lossy(h.value).into_owned()))
                .collect();
            let expected: Vec<(String, String)> = pairs
                .iter()
                .filter(|(name, _)| !OWN_HEADERS.iter().any(|own| name.eq_ignore_ascii_case(own)))
                .map(|(name, value)| (name.clone(), value.trim_matches([' ', '\t']).to_owned()))
                .collect();
            prop_assert_eq!(parsed, expected);
        }
    }

    fn lines(block: &[u8]) -> Vec<String> {
        String::from_utf8(block.to_vec())
            .unwrap()
            .split_terminator("\r\n")
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn base_headers_keep_order_and_duplicates_and_skip_the_transports_own() {
        let pairs: Vec<(String, String)> = [
            ("X-Extra", "one"),
            ("Accept", "text/html"),
            ("x-extra", "two"),
            ("Content-Length", "9"),
            ("Authorization", "Bearer t"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        let url = Url::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            lines(&base_headers(&url, &pairs)),
            [
                "Host: 127.0.0.1:8080",
                &format!("User-Agent: {USER_AGENT}"),
                "X-Extra: one",
                "x-extra: two",
                "Authorization: Bearer t"
            ]
        );
        let own = vec![
            ("host".to_owned(), "virtual.example".to_owned()),
            ("User-Agent".to_owned(), "me".to_owned()),
        ];
        let url = Url::parse("https://[::1]/mcp").unwrap();
        assert_eq!(
            lines(&base_headers(&url, &own)),
            ["host: virtual.example", "User-Agent: me"]
        );
        assert_eq!(lines(&base_headers(&url, &[]))[0], "Host: [::1]");
    }
}
