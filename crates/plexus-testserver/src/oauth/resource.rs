//! The protected resource: its metadata (RFC 9728), the bearer token check on the MCP endpoint
//! with its 401 and 403 challenges (RFC 6750), and the per-tool scope check.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use plexus_jsonrpc::Message;
use serde::Deserialize;
use serde_json::json;

use super::options::PrmLocation;
use super::record::{Endpoint, OAuthRequest};
use super::{OAuth, method_not_allowed, wire};
use crate::remote::App;
use crate::remote::http::Body;
use crate::server::lock;

/// The protected resource metadata's well-known path (the root form; the path form appends the
/// MCP endpoint's path).
pub(crate) const PRM_ROOT: &str = "/.well-known/oauth-protected-resource";

/// What the token of a request to the MCP endpoint grants: a request extension that the MCP
/// handlers hand to [`OAuth::message_refusal`].
#[derive(Debug, Clone)]
pub(crate) struct Authorized {
    scopes: Vec<String>,
    /// The request's record entry.
    seq: u64,
}

/// A token check's refusal.
struct Refused {
    status: StatusCode,
    /// The RFC 6750 error code (none when no token was sent).
    error: Option<&'static str>,
    description: String,
    /// The challenge's `scope`.
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ToolCall {
    name: String,
}

impl OAuth {
    /// The URL 401 challenges name as `resource_metadata`: the path form, unless only the root
    /// form is served.
    pub(crate) fn resource_metadata_url(&self) -> String {
        if self.options.has_prm(PrmLocation::Path) || !self.options.has_prm(PrmLocation::Root) {
            format!("{}{PRM_ROOT}{}", self.origin, self.mcp_path)
        } else {
            format!("{}{PRM_ROOT}", self.origin)
        }
    }

    /// Answers a request under [`PRM_ROOT`].
    pub(super) fn protected_resource_metadata(&self, request: &Request<Incoming>) -> Response<Body> {
        let path = request.uri().path();
        let mut entry = OAuthRequest::new(
            Endpoint::ProtectedResourceMetadata,
            None,
            request.method().as_str(),
            path,
        );
        let location = if path == PRM_ROOT {
            Some(PrmLocation::Root)
        } else if path.strip_prefix(PRM_ROOT) == Some(self.mcp_path.as_str()) {
            Some(PrmLocation::Path)
        } else {
            None
        };
        let response = match location {
            _ if !matches!(*request.method(), Method::GET | Method::HEAD) => method_not_allowed(&mut entry, "GET"),
            Some(location) if self.options.has_prm(location) => {
                let resource = self.options.prm_resource.clone().unwrap_or_else(|| match location {
                    PrmLocation::Root => self.origin.clone(),
                    _ => self.resource.clone(),
                });
                let mut document = json!({
                    "resource": resource,
                    "authorization_servers": [self.current().issuer],
                    "bearer_methods_supported": ["header"],
                    "resource_name": "plexus-testserver",
                });
                if !self.options.prm_scopes.is_empty() {
                    document["scopes_supported"] = json!(self.options.prm_scopes);
                }
                wire::json_response(StatusCode::OK, &document)
            }
            _ => wire::error(
                &mut entry,
                StatusCode::NOT_FOUND,
                "not_found",
                "no protected resource metadata here (--oauth-prm)",
            ),
        };
        entry.status = response.status().as_u16();
        self.push_record(entry);
        response
    }

    /// Checks the bearer token of a request to the MCP endpoint: passes the request on with its
    /// grant as an extension, or answers 401 / 403 with a challenge.
    pub(super) async fn check_token(
        &self,
        app: &Arc<App>,
        mut request: Request<Incoming>,
    ) -> Result<Request<Incoming>, Response<Body>> {
        let mut entry = OAuthRequest::new(Endpoint::Mcp, None, request.method().as_str(), request.uri().path());
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(wire::bearer_token)
            .map(str::to_owned);
        entry.bearer.clone_from(&token);
        match self.verify(token.as_deref()) {
            Ok(scopes) => {
                let seq = self.push_record(entry);
                request.extensions_mut().insert(Authorized { scopes, seq });
                let passed = self.passed.fetch_add(1, Ordering::Relaxed) + 1;
                if self.options.migrate_after == Some(passed) {
                    if let Err(e) = self.migrate(app).await {
                        eprintln!(
                            "plexus-testserver: cannot move the authorization server (--oauth-migrate-after): {e}"
                        );
                    }
                }
                Ok(request)
            }
            Err(refused) => {
                let response = self.challenge(&mut entry, refused);
                self.push_record(entry);
                Err(response)
            }
        }
    }

    /// The scopes `token` grants, or why it does not let the request through.
    fn verify(&self, token: Option<&str>) -> Result<Vec<String>, Refused> {
        let current = self.current();
        let Some(token) = token else {
            return Err(Refused {
                status: StatusCode::UNAUTHORIZED,
                error: None,
                description: format!(
                    "this MCP endpoint needs a bearer token from the authorization server {}",
                    current.issuer
                ),
                scope: self.options.challenge_scope.clone(),
            });
        };
        let invalid = |description: String| Refused {
            status: StatusCode::UNAUTHORIZED,
            error: Some("invalid_token"),
            description,
            scope: self.options.challenge_scope.clone(),
        };
        let Some(access) = current.with_store(|store| store.access(token).cloned()) else {
            let other = lock(&self.authorities)
                .iter()
                .find(|authority| authority.with_store(|store| store.access(token).is_some()))
                .map(|authority| authority.issuer.clone());
            return Err(invalid(match other {
                Some(issuer) => format!(
                    "the access token was issued by {issuer}, not by the authorization server this resource trusts now ({})",
                    current.issuer
                ),
                None => "the access token is unknown or revoked".to_owned(),
            }));
        };
        if access.expires_at <= Instant::now() {
            return Err(invalid("the access token expired".to_owned()));
        }
        if let Some(resource) = access
            .grant
            .resource
            .as_deref()
            .filter(|resource| !self.accepts_resource(resource))
        {
            return Err(invalid(format!(
                "the access token is for the resource {resource}, not {}",
                self.resource
            )));
        }
        let missing: Vec<&String> = self
            .options
            .required_scopes
            .iter()
            .filter(|scope| !access.grant.scopes.contains(scope))
            .collect();
        if !missing.is_empty() {
            return Err(Refused {
                status: StatusCode::FORBIDDEN,
                error: Some("insufficient_scope"),
                description: format!("the access token lacks the scopes {missing:?} that every request needs"),
                scope: Some(self.options.required_scopes.join(" ")),
            });
        }
        Ok(access.grant.scopes)
    }

    /// The response to a message that the token's grant does not allow: a `tools/call` of a tool
    /// that needs scopes the token lacks (403 `insufficient_scope`, the scope being every scope
    /// the call needs).
    pub(crate) fn message_refusal(&self, authorized: &Authorized, message: &Message) -> Option<Response<Body>> {
        let Message::Request(request) = message else {
            return None;
        };
        if request.method != "tools/call" {
            return None;
        }
        let call: ToolCall = serde_json::from_str(request.params.as_deref()?.get()).ok()?;
        let needed: Vec<&String> = self
            .options
            .tool_scopes
            .iter()
            .filter(|tool| tool.tool == call.name)
            .flat_map(|tool| &tool.scopes)
            .collect();
        let missing: Vec<&String> = needed
            .iter()
            .copied()
            .filter(|scope| !authorized.scopes.contains(scope))
            .collect();
        if missing.is_empty() {
            return None;
        }
        let mut scope: Vec<&str> = self.options.required_scopes.iter().map(String::as_str).collect();
        for needed in &needed {
            if !scope.contains(&needed.as_str()) {
                scope.push(needed);
            }
        }
        let refused = Refused {
            status: StatusCode::FORBIDDEN,
            error: Some("insufficient_scope"),
            description: format!("the tool {:?} needs the scopes {missing:?}", call.name),
            scope: Some(scope.join(" ")),
        };
        let mut entry = OAuthRequest::new(Endpoint::Mcp, None, "POST", "");
        let response = self.challenge(&mut entry, refused);
        lock(&self.record).update(&self.events, authorized.seq, |recorded| {
            recorded.status = entry.status;
            recorded.error = entry.error;
            recorded.error_description = entry.error_description;
            recorded.params.insert("tool".to_owned(), call.name);
        });
        Some(response)
    }

    /// A 401 or 403 with its `WWW-Authenticate: Bearer …` challenge, noted in `entry`.
    fn challenge(&self, entry: &mut OAuthRequest, refused: Refused) -> Response<Body> {
        let mut params = Vec::new();
        if let Some(error) = refused.error {
            params.push(format!("error={}", wire::quoted(error)));
            params.push(format!("error_description={}", wire::quoted(&refused.description)));
        }
        if let Some(scope) = &refused.scope {
            params.push(format!("scope={}", wire::quoted(scope)));
        }
        if !self.options.no_resource_metadata_param {
            params.push(format!(
                "resource_metadata={}",
                wire::quoted(&self.resource_metadata_url())
            ));
        }
        let challenge = if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        };
        let mut response = wire::json_response(
            refused.status,
            &json!({"error": refused.error.unwrap_or("unauthorized"), "error_description": refused.description}),
        );
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        entry.status = refused.status.as_u16();
        entry.error = refused.error.map(str::to_owned);
        entry.error_description = Some(refused.description);
        response
    }
}
