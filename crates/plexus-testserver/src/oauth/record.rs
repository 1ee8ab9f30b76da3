//! The record of what the authorization server and the protected resource received: one
//! [`OAuthRequest`] per request, kept in memory (bounded) for in-process tests and written to the
//! event log (secrets redacted) as `oauth` events.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{Value, json};

use super::options::AuthMethod;
use crate::events::EventLog;

/// The most requests the record keeps; older ones are dropped (and counted).
pub(crate) const MAX_RECORDED: usize = 4096;

/// Parameters whose values the event log never shows.
const SECRET_PARAMS: [&str; 6] = [
    "code",
    "code_verifier",
    "client_secret",
    "refresh_token",
    "access_token",
    "client_assertion",
];

/// What a recorded request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A protected resource metadata URL (`/.well-known/oauth-protected-resource…`), served or
    /// not (404).
    ProtectedResourceMetadata,
    /// An authorization server metadata URL (RFC 8414 or OpenID forms), served or not (404).
    AuthorizationServerMetadata,
    /// The authorization endpoint.
    Authorize,
    /// The token endpoint.
    Token,
    /// The registration endpoint (RFC 7591).
    Register,
    /// The authorization server's (empty) JSON Web Key Set, named by its OpenID metadata.
    Jwks,
    /// The protected MCP endpoint (and the legacy transport's `/messages`).
    Mcp,
    /// A document served by `--oauth-document` or [`OAuthHandle::serve_document`](super::OAuthHandle::serve_document).
    Document,
    /// The authorization server fetching a client ID metadata document (an outgoing request;
    /// `path` holds the URL).
    ClientMetadataFetch,
    /// Any other path under `/.well-known/`, or any other path on the authorization server's own
    /// listener (404).
    Other,
}

impl Endpoint {
    /// A short name, as the event log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::ProtectedResourceMetadata => "protected-resource-metadata",
            Endpoint::AuthorizationServerMetadata => "authorization-server-metadata",
            Endpoint::Authorize => "authorize",
            Endpoint::Token => "token",
            Endpoint::Register => "register",
            Endpoint::Jwks => "jwks",
            Endpoint::Mcp => "mcp",
            Endpoint::Document => "document",
            Endpoint::ClientMetadataFetch => "client-metadata-fetch",
            Endpoint::Other => "other",
        }
    }
}

/// One request the authorization server or the protected resource received (or, for
/// [`Endpoint::ClientMetadataFetch`], made), and how it was answered.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthRequest {
    /// What the request was for.
    pub endpoint: Endpoint,
    /// Which authorization server answered it: 0 for the first, 1 for the one after the first
    /// migration, …; `None` for the protected resource's paths.
    pub authority: Option<usize>,
    /// The HTTP method.
    pub method: String,
    /// The path (for a client metadata fetch, the URL).
    pub path: String,
    /// The query parameters (GET) or form parameters (POST), as decoded; secrets included.
    pub params: BTreeMap<String, String>,
    /// The JSON body of a registration request.
    pub body: Option<Value>,
    /// The client: the `client_id` parameter, or the one that authenticated at the token endpoint.
    pub client_id: Option<String>,
    /// How the client authenticated at the token endpoint.
    pub client_auth: Option<AuthMethod>,
    /// The bearer token a request to the MCP endpoint carried.
    pub bearer: Option<String>,
    /// The response status (0 for a client metadata fetch that got no response). For
    /// [`Endpoint::Mcp`], 200 means the token check let the request through (the MCP server's own
    /// answer is not recorded); a `tools/call` then refused for a tool's scopes turns it into 403.
    pub status: u16,
    /// The OAuth error code answered (`invalid_grant`, `invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    /// The `error_description` answered.
    pub error_description: Option<String>,
    /// The `Location` of a redirect (the authorization endpoint's answer).
    pub location: Option<String>,
}

impl OAuthRequest {
    /// A new entry, answered 200 until a handler says otherwise.
    pub(crate) fn new(endpoint: Endpoint, authority: Option<usize>, method: &str, path: &str) -> Self {
        OAuthRequest {
            endpoint,
            authority,
            method: method.to_owned(),
            path: path.to_owned(),
            params: BTreeMap::new(),
            body: None,
            client_id: None,
            client_auth: None,
            bearer: None,
            status: 200,
            error: None,
            error_description: None,
            location: None,
        }
    }

    /// A parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// Whether an authorization server answered this request.
    pub fn at_authorization_server(&self) -> bool {
        self.authority.is_some()
    }

    /// The event log's form: secrets redacted.
    fn to_event(&self) -> Value {
        let params: BTreeMap<&str, &str> = self
            .params
            .iter()
            .map(|(name, value)| {
                let shown = if SECRET_PARAMS.contains(&name.as_str()) {
                    "<redacted>"
                } else {
                    value.as_str()
                };
                (name.as_str(), shown)
            })
            .collect();
        json!({
            "event": "oauth",
            "endpoint": self.endpoint.as_str(),
            "authority": self.authority,
            "method": self.method,
            "path": self.path,
            "params": params,
            "body": self.body,
            "client_id": self.client_id,
            "client_auth": self.client_auth.map(AuthMethod::as_str),
            "bearer": self.bearer.as_ref().map(|_| "<redacted>"),
            "status": self.status,
            "error": self.error,
            "error_description": self.error_description,
            "location": self.location,
        })
    }
}

/// The bounded in-memory record.
#[derive(Debug, Default)]
pub(crate) struct Record {
    /// Entries with their sequence numbers.
    requests: VecDeque<(u64, OAuthRequest)>,
    next: u64,
    dropped: u64,
}

impl Record {
    /// Appends `request` (dropping the oldest beyond [`MAX_RECORDED`]), writes it to `events`,
    /// and returns its sequence number.
    pub(crate) fn push(&mut self, events: &EventLog, request: OAuthRequest) -> u64 {
        if events.enabled() {
            events.record(&request.to_event());
        }
        if self.requests.len() >= MAX_RECORDED {
            self.requests.pop_front();
            self.dropped += 1;
        }
        let seq = self.next;
        self.next += 1;
        self.requests.push_back((seq, request));
        seq
    }

    /// Changes entry `seq` (if still kept) and writes it to `events` again.
    pub(crate) fn update(&mut self, events: &EventLog, seq: u64, change: impl FnOnce(&mut OAuthRequest)) {
        if let Some((_, request)) = self.requests.iter_mut().rev().find(|(at, _)| *at == seq) {
            change(request);
            if events.enabled() {
                events.record(&request.to_event());
            }
        }
    }

    pub(crate) fn requests(&self) -> Vec<OAuthRequest> {
        self.requests.iter().map(|(_, request)| request.clone()).collect()
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    pub(crate) fn clear(&mut self) {
        self.requests.clear();
        self.dropped = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_form_redacts_secrets_and_the_record_is_bounded() {
        let mut request = OAuthRequest::new(Endpoint::Token, Some(0), "POST", "/token");
        request.params.insert("code_verifier".into(), "v".into());
        request.params.insert("grant_type".into(), "authorization_code".into());
        request.bearer = Some("t".into());
        let event = request.to_event();
        assert_eq!(event["params"]["code_verifier"], "<redacted>");
        assert_eq!(event["params"]["grant_type"], "authorization_code");
        assert_eq!(event["bearer"], "<redacted>");
        assert_eq!(event["endpoint"], "token");

        let events = EventLog::disabled();
        let mut record = Record::default();
        let first = record.push(&events, request.clone());
        record.update(&events, first, |entry| entry.status = 403);
        assert_eq!(record.requests()[0].status, 403);
        for _ in 0..MAX_RECORDED {
            record.push(&events, request.clone());
        }
        assert_eq!((record.requests().len(), record.dropped()), (MAX_RECORDED, 1));
        record.update(&events, first, |_| panic!("entry {first} was dropped"));
        record.clear();
        assert!(record.requests().is_empty());
    }
}
