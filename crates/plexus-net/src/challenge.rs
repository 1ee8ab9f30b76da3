//! Challenge handling: the `WWW-Authenticate` header parsed into its challenges (RFC 9110
//! §11.6.1), and the `DPoP-Nonce` of an answer (RFC 9449 §8, §9). Both come from the server, so
//! neither parse ever fails: malformed parts are skipped.

use std::collections::BTreeMap;
use std::fmt;

use plexus_transport::Rejection;

/// The `DPoP-Nonce` response header (RFC 9449 §8, §9), lower-case as HTTP/2 and the `http`
/// crate spell header names.
pub const DPOP_NONCE_HEADER: &str = "dpop-nonce";

/// The longest `DPoP-Nonce` value accepted.
const MAX_DPOP_NONCE_LEN: usize = 1024;

/// A `DPoP-Nonce` header value as a nonce: `1*NQCHAR` (RFC 9449 §8.1: 1 to 1024 visible ASCII
/// characters other than `"` and `\`), else `None`.
pub fn parse_dpop_nonce(value: &[u8]) -> Option<String> {
    let valid = !value.is_empty()
        && value.len() <= MAX_DPOP_NONCE_LEN
        && value.iter().all(|&b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E));
    valid.then(|| String::from_utf8_lossy(value).into_owned())
}

/// The `DPoP-Nonce` of a rejection, when it had a valid one.
pub fn dpop_nonce(rejection: &Rejection) -> Option<String> {
    rejection
        .header(DPOP_NONCE_HEADER)
        .and_then(|value| parse_dpop_nonce(value.as_bytes()))
}

/// A 401 or 403 answer as a provider reads it: its status, the URL requested and every
/// `WWW-Authenticate` challenge, parsed.
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
    /// The challenges of `rejection`.
    pub fn of(rejection: &Rejection) -> Self {
        AuthChallenge {
            status: rejection.status,
            url: rejection.url.clone(),
            challenges: rejection
                .www_authenticate
                .iter()
                .flat_map(|value| WwwAuthenticate::parse(value))
                .collect(),
        }
    }

    /// The first `Bearer` challenge, if any.
    pub fn bearer(&self) -> Option<&WwwAuthenticate> {
        self.challenges.iter().find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
    }
}

/// Whether the server asks for a DPoP proof with a new nonce: a 401 with a valid `DPoP-Nonce`
/// header and a challenge whose `error` is `use_dpop_nonce` (RFC 9449 §9).
pub fn is_dpop_nonce_challenge(rejection: &Rejection) -> bool {
    rejection.status == 401
        && dpop_nonce(rejection).is_some()
        && AuthChallenge::of(rejection)
            .challenges
            .iter()
            .any(|c| c.param("error") == Some("use_dpop_nonce"))
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
