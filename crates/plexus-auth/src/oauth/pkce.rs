//! PKCE (RFC 7636, method S256) and the random `state` of an authorization request.

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{OAuthError, SettingsProblem};
use crate::store::Secret;

/// A code verifier and its S256 challenge.
#[derive(Debug, Clone)]
pub(crate) struct Pkce {
    /// 43 characters of base64url (32 random bytes), sent with the token request.
    pub(crate) verifier: Secret,
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn generate() -> Result<Self, OAuthError> {
        let verifier = random_token()?;
        let challenge = s256(&verifier);
        Ok(Pkce {
            verifier: Secret::new(verifier),
            challenge,
        })
    }
}

/// The S256 challenge of a verifier.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()).as_ref())
}

/// 32 random bytes as base64url (43 characters): a code verifier or a `state`.
pub(crate) fn random_token() -> Result<String, OAuthError> {
    let mut bytes = [0u8; 32];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| OAuthError::Settings {
        field: "the random number generator".to_owned(),
        problem: SettingsProblem::NoRandomBytes,
    })?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_example() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_long_enough_and_distinct() {
        let (a, b) = (Pkce::generate().unwrap(), Pkce::generate().unwrap());
        assert_eq!(a.verifier.expose().len(), 43);
        assert!(
            a.verifier
                .expose()
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.challenge, s256(a.verifier.expose()));
    }
}
