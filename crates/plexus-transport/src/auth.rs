//! The hook through which HTTP-based transports authenticate: an [`AuthProvider`] gives the
//! headers for each request and decides what a 401 or 403 means. Transports contain no auth
//! logic of their own.

use std::collections::BTreeMap;
use std::fmt;

use crate::BoxFuture;
use crate::credentials::Rejection;

/// Headers to put on a request, as `(name, value)` pairs.
pub type AuthHeaders = Vec<(String, String)>;

/// Supplies authentication for HTTP requests (Streamable HTTP, legacy SSE, WebSocket upgrades).
///
/// The transport asks for [`headers_for`](Self::headers_for) (or [`headers`](Self::headers))
/// before every request. On a 401 or 403 it calls [`on_rejection`](Self::on_rejection), whose
/// default is [`on_challenge`](Self::on_challenge) with the parsed `WWW-Authenticate` header; on
/// [`AuthDecision::Retry`] it asks for headers again and retries the request once (twice when
/// the second answer is a DPoP nonce challenge, see
/// [`Credentials::rejected_after`](crate::Credentials::rejected_after)), otherwise it fails the
/// request with [`TransportError::NeedsAuth`](crate::TransportError::NeedsAuth) or
/// [`TransportError::AuthFailed`](crate::TransportError::AuthFailed).
pub trait AuthProvider: Send + Sync + 'static {
    /// The headers for the next request (for example `Authorization: Bearer …`).
    fn headers(&self) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>>;

    /// The headers for the next request, which is `method` (`GET`, `POST`, …) to `url`.
    ///
    /// Providers whose headers depend on the request override it: a DPoP proof (RFC 9449) signs
    /// the method and the URL. The default is [`headers`](Self::headers). Transports that know
    /// the request (all of them) call this one.
    fn headers_for(&self, method: &str, url: &str) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let _ = (method, url);
        self.headers()
    }

    /// What to do about a 401 or 403.
    fn on_challenge(&self, challenge: &AuthChallenge) -> BoxFuture<'_, AuthDecision>;

    /// What to do about a 401 or 403, with the whole [`Rejection`] in view (its `DPoP-Nonce`
    /// included). The default asks [`on_challenge`](Self::on_challenge) with the parsed
    /// challenge; a provider that needs more of the answer overrides it.
    fn on_rejection(&self, rejection: &Rejection) -> BoxFuture<'_, AuthDecision> {
        self.on_challenge(&rejection.challenge())
    }

    /// Whether a login is what fixes this provider's credentials when the server still answers
    /// 401 after they were renewed. True for OAuth (the server then "needs authentication");
    /// false by default: a headers helper, an IDE or an ingress token that the server keeps
    /// rejecting is a failure with the server's reason, which no login would fix.
    fn login_fixes_rejection(&self) -> bool {
        false
    }
}

/// An [`AuthProvider`] with fixed headers: a 401 or 403 is a failure with that status (a
/// rejected static credential is not retried and never falls back to another scheme).
#[derive(Debug, Clone, Default)]
pub struct StaticHeaders(pub AuthHeaders);

impl AuthProvider for StaticHeaders {
    fn headers(&self) -> BoxFuture<'_, Result<AuthHeaders, AuthFailure>> {
        let headers = self.0.clone();
        Box::pin(async move { Ok(headers) })
    }

    fn on_challenge(&self, challenge: &AuthChallenge) -> BoxFuture<'_, AuthDecision> {
        let reason = format!(
            "the server rejected the configured credentials (HTTP {})",
            challenge.status
        );
        Box::pin(async move { AuthDecision::Fail { reason } })
    }
}

/// A provider could not produce headers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// The server needs a login the user has not done (or that expired).
    #[error("needs authentication: {reason}")]
    NeedsAuth {
        /// Why.
        reason: String,
    },
    /// The provider itself failed (a helper command, a token store, a network call).
    #[error("{reason}")]
    Failed {
        /// Why.
        reason: String,
    },
}

/// A 401 or 403 response, as the provider sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// 401 or 403.
    pub status: u16,
    /// The URL that was requested.
    pub url: String,
    /// Every parsed `WWW-Authenticate` challenge, in order.
    pub challenges: Vec<WwwAuthenticate>,
}

impl AuthChallenge {
    /// The first `Bearer` challenge, if any.
    pub fn bearer(&self) -> Option<&WwwAuthenticate> {
        self.challenges.iter().find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
    }
}

/// What the transport does after a challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthDecision {
    /// Ask for headers again and retry the request once.
    Retry,
    /// Give up: the server needs a login.
    NeedsAuth {
        /// Why (shown to the user).
        reason: String,
    },
    /// Give up: authentication failed for a reason a login would not fix.
    Fail {
        /// Why (shown to the user).
        reason: String,
    },
}

/// One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1): a scheme and its
/// parameters (parameter names lower-cased; values unquoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WwwAuthenticate {
    /// The auth scheme, e.g. `Bearer`.
    pub scheme: String,
    /// The parameters, e.g. `realm`, `error`, `scope`, `resource_metadata`.
    pub params: BTreeMap<String, String>,
    /// A token68 credential instead of parameters (rare).
    pub token68: Option<String>,
}

impl WwwAuthenticate {
    /// A parameter by its (case-insensitive) name.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// Parses a `WWW-Authenticate` header value into its challenges. Malformed parts are
    /// skipped, never an error: a server's bad header must not hide the status it came with.
    pub fn parse(header: &str) -> Vec<WwwAuthenticate> {
        let mut parser = Parser { rest: header };
        let mut challenges = Vec::new();
        while let Some(challenge) = parser.challenge() {
            challenges.push(challenge);
        }
        challenges
    }
}

impl fmt::Display for WwwAuthenticate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.scheme)?;
        if let Some(token) = &self.token68 {
            return write!(f, " {token}");
        }
        for (i, (name, value)) in self.params.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(
                f,
                "{sep}{name}=\"{}\"",
                value.replace('\\', "\\\\").replace('"', "\\\"")
            )?;
        }
        Ok(())
    }
}

/// A small hand-written parser: the grammar is tiny and the header comes from the server.
struct Parser<'a> {
    rest: &'a str,
}

fn is_tchar(c: char) -> bool {
    u8::try_from(c).is_ok_and(crate::headers::is_tchar)
}

impl Parser<'_> {
    fn skip_separators(&mut self) {
        self.rest = self
            .rest
            .trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
    }

    fn skip_spaces(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    fn token(&mut self) -> Option<&str> {
        let end = self.rest.find(|c: char| !is_tchar(c)).unwrap_or(self.rest.len());
        if end == 0 {
            return None;
        }
        let (token, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(token)
    }

    fn quoted(&mut self) -> String {
        let mut chars = self.rest.char_indices();
        chars.next(); // the opening quote
        let mut value = String::new();
        let mut escaped = false;
        for (i, c) in chars {
            if escaped {
                value.push(c);
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                self.rest = &self.rest[i + 1..];
                return value;
            } else {
                value.push(c);
            }
        }
        // Unterminated: take the rest.
        self.rest = "";
        value
    }

    fn challenge(&mut self) -> Option<WwwAuthenticate> {
        loop {
            self.skip_separators();
            if self.rest.is_empty() {
                return None;
            }
            match self.token() {
                Some(scheme) => {
                    let scheme = scheme.to_owned();
                    return Some(self.challenge_body(scheme));
                }
                // Not a token: drop one character and look again.
                None => {
                    let mut chars = self.rest.chars();
                    chars.next();
                    self.rest = chars.as_str();
                }
            }
        }
    }

    fn challenge_body(&mut self, scheme: String) -> WwwAuthenticate {
        let mut challenge = WwwAuthenticate {
            scheme,
            params: BTreeMap::new(),
            token68: None,
        };
        self.skip_spaces();
        // token68 (RFC 9110): token characters plus '/', with '=' only as trailing padding, and
        // nothing after it but the end or the next challenge.
        let end = self
            .rest
            .find(|c: char| !(is_tchar(c) || c == '/' || c == '='))
            .unwrap_or(self.rest.len());
        let candidate = &self.rest[..end];
        let after = self.rest[end..].trim_start_matches([' ', '\t']);
        let unpadded = candidate.trim_end_matches('=');
        if !unpadded.is_empty() && !unpadded.contains('=') && (after.is_empty() || after.starts_with(',')) {
            challenge.token68 = Some(candidate.to_owned());
            self.rest = after;
            return challenge;
        }
        loop {
            let checkpoint = self.rest;
            self.skip_separators();
            let before_name = self.rest;
            let Some(name) = self.token() else {
                self.rest = checkpoint;
                return challenge;
            };
            let name = name.to_ascii_lowercase();
            self.skip_spaces();
            if !self.rest.starts_with('=') {
                // The next challenge's scheme.
                self.rest = before_name;
                return challenge;
            }
            self.rest = &self.rest[1..];
            self.skip_spaces();
            let value = if self.rest.starts_with('"') {
                Some(self.quoted())
            } else {
                self.token().map(str::to_owned)
            };
            challenge.params.insert(name, value.unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn bearer_with_quoted_and_bare_parameters() {
        let parsed = WwwAuthenticate::parse(
            r#"Bearer realm="mcp", error="insufficient_scope", scope="read write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].scheme, "Bearer");
        assert_eq!(
            parsed[0].params,
            params(&[
                ("realm", "mcp"),
                ("error", "insufficient_scope"),
                ("scope", "read write"),
                (
                    "resource_metadata",
                    "https://a.example/.well-known/oauth-protected-resource/mcp"
                )
            ])
        );
    }

    #[test]
    fn several_challenges_escapes_and_case() {
        let parsed = WwwAuthenticate::parse(r#"Basic realm="a \"b\"", Bearer Error=invalid_token, DPoP algs="ES256""#);
        assert_eq!(
            parsed.iter().map(|c| c.scheme.as_str()).collect::<Vec<_>>(),
            ["Basic", "Bearer", "DPoP"]
        );
        assert_eq!(parsed[0].param("realm"), Some("a \"b\""));
        assert_eq!(parsed[1].param("error"), Some("invalid_token"));
        assert_eq!(parsed[2].param("ALGS"), Some("ES256"));
    }

    #[test]
    fn bare_scheme_and_token68() {
        assert_eq!(
            WwwAuthenticate::parse("Bearer"),
            vec![WwwAuthenticate {
                scheme: "Bearer".into(),
                params: BTreeMap::new(),
                token68: None
            }]
        );
        let parsed = WwwAuthenticate::parse("Negotiate abc123==");
        assert_eq!(parsed[0].token68.as_deref(), Some("abc123=="));
    }

    #[test]
    fn garbage_never_fails() {
        for text in [
            "",
            ",,,",
            "=\"",
            "Bearer realm=\"unterminated",
            "\u{1F600} Bearer x=1",
            "Bearer =,=,",
        ] {
            let _ = WwwAuthenticate::parse(text);
        }
        assert_eq!(
            WwwAuthenticate::parse("Bearer realm=\"unterminated")[0].param("realm"),
            Some("unterminated")
        );
    }
}
