//! DPoP (RFC 9449): the proof JWTs that bind an access token to a key the client holds, and the
//! nonces servers hand out for them.
//!
//! A proof is signed for one request: `htm` (the method), `htu` (the URL without query and
//! fragment), `iat`, a fresh `jti`, `ath` (the hash of the access token, on requests to a
//! resource) and the server's `nonce` when it gave one. Its header carries the public key
//! (`jwk`) and `typ` `dpop+jwt`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use url::Url;

use super::discovery::Discovery;
use super::jwt::{ALGORITHM, JwtError, KeyProblem, SigningKey, base64url};
use super::pkce::random_token;
use super::{DpopMode, OAuthError, SettingsProblem};
use crate::store::{Secret, StoredTokens, unix_now};

/// The authentication scheme and token type of DPoP-bound tokens.
pub(crate) const SCHEME: &str = "DPoP";
/// The `typ` of a DPoP proof.
pub(crate) const PROOF_TYPE: &str = "dpop+jwt";
/// The `error` of a challenge that asks for a proof with the server's nonce.
pub(crate) const USE_DPOP_NONCE: &str = "use_dpop_nonce";
/// How many origins' nonces are kept (a client talks to a few servers).
const MAX_NONCES: usize = 32;

/// The nonces servers gave (the `DPoP-Nonce` header), by origin: the next proof for that origin
/// carries it.
#[derive(Debug, Default)]
pub(crate) struct Nonces {
    by_origin: Mutex<HashMap<String, String>>,
}

impl Nonces {
    /// The nonce to put in a proof for `url`.
    pub(crate) fn get(&self, url: &str) -> Option<String> {
        let origin = origin(url)?;
        self.lock().get(&origin).cloned()
    }

    /// Keeps the nonce a server at `url` gave.
    pub(crate) fn set(&self, url: &str, nonce: &str) {
        let Some(origin) = origin(url) else { return };
        let mut nonces = self.lock();
        if nonces.len() >= MAX_NONCES && !nonces.contains_key(&origin) {
            nonces.clear();
        }
        nonces.insert(origin, nonce.to_owned());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A panic while holding the lock cannot leave the map inconsistent.
        self.by_origin.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn origin(url: &str) -> Option<String> {
    Url::parse(url).ok().map(|u| u.origin().ascii_serialization())
}

/// A provider's DPoP state: the key its tokens are bound to (parsed once, kept with the tokens
/// as PKCS#8) and the nonces servers gave.
#[derive(Debug, Default)]
pub(crate) struct DpopState {
    key: Mutex<Option<(Secret, Arc<SigningKey>)>>,
    pub(crate) nonces: Nonces,
}

impl DpopState {
    /// The key to bind new tokens to: the one in use, else a new one. Returns it with its
    /// encoding for the store.
    pub(crate) fn key_for_new_tokens(&self) -> Result<(Secret, Arc<SigningKey>), OAuthError> {
        let mut current = self.lock_key();
        if let Some(existing) = current.as_ref() {
            return Ok(existing.clone());
        }
        let key = SigningKey::generate()?;
        let created = (Secret::new(base64url(&key.to_pkcs8()?)), Arc::new(key));
        *current = Some(created.clone());
        Ok(created)
    }

    /// The key stored with tokens (their `dpop_key`).
    pub(crate) fn key_of(&self, encoded: &Secret) -> Result<Arc<SigningKey>, OAuthError> {
        let mut current = self.lock_key();
        if let Some((known, key)) = current.as_ref()
            && known == encoded
        {
            return Ok(Arc::clone(key));
        }
        let der = URL_SAFE_NO_PAD.decode(encoded.expose()).map_err(|_| JwtError::Key {
            problem: KeyProblem::StoredKeyNotBase64,
        })?;
        let key = Arc::new(SigningKey::from_der(&der)?);
        *current = Some((encoded.clone(), Arc::clone(&key)));
        Ok(key)
    }

    /// The headers that present `tokens` on a request of `method` to `url`: `Authorization:
    /// Bearer …`, or for a DPoP-bound token `Authorization: DPoP …` and a `DPoP` proof (with
    /// `ath` and the server's nonce).
    pub(crate) fn authorization(
        &self,
        tokens: &StoredTokens,
        method: &str,
        url: &str,
    ) -> Result<Vec<(String, String)>, OAuthError> {
        let token = tokens.access_token.expose();
        if !tokens.token_type.eq_ignore_ascii_case(SCHEME) {
            return Ok(vec![("Authorization".to_owned(), format!("Bearer {token}"))]);
        }
        let encoded = tokens.dpop_key.as_ref().ok_or(JwtError::Key {
            problem: KeyProblem::NoStoredKey,
        })?;
        let key = self.key_of(encoded)?;
        let nonce = self.nonces.get(url);
        let proof = proof(
            &key,
            ProofRequest {
                method,
                url,
                access_token: Some(token),
                nonce: nonce.as_deref(),
            },
        )?;
        Ok(vec![
            ("Authorization".to_owned(), format!("{SCHEME} {token}")),
            ("DPoP".to_owned(), proof),
        ])
    }

    fn lock_key(&self) -> std::sync::MutexGuard<'_, Option<(Secret, Arc<SigningKey>)>> {
        self.key.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether new tokens for the server of `discovery` are bound with DPoP: the authorization
/// server must accept ES256 proofs, and in [`DpopMode::Auto`] the server must ask for DPoP
/// (`resource_asked`: it challenged with the `DPoP` scheme; or its protected resource metadata
/// names DPoP).
pub(crate) fn wanted(mode: DpopMode, discovery: &Discovery, resource_asked: bool) -> bool {
    let supported = discovery
        .metadata
        .dpop_signing_alg_values_supported
        .iter()
        .any(|alg| alg == ALGORITHM);
    let resource_names_dpop = discovery.resource_metadata.as_ref().is_some_and(|(_, metadata)| {
        metadata.dpop_bound_access_tokens_required
            || metadata
                .dpop_signing_alg_values_supported
                .iter()
                .any(|alg| alg == ALGORITHM)
    });
    supported
        && match mode {
            DpopMode::Never => false,
            DpopMode::Always => true,
            DpopMode::Auto => resource_asked || resource_names_dpop,
        }
}

/// What a proof is for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProofRequest<'a> {
    /// The HTTP method.
    pub(crate) method: &'a str,
    /// The request's URL (its query and fragment are left out of `htu`).
    pub(crate) url: &'a str,
    /// The access token sent with the request (a resource request), for `ath`.
    pub(crate) access_token: Option<&'a str>,
    /// The server's nonce.
    pub(crate) nonce: Option<&'a str>,
}

/// The `htu` of a request to `url`: the URL without query and fragment (RFC 9449 §4.2).
pub(crate) fn htu(url: &str) -> Result<String, OAuthError> {
    let mut parsed = Url::parse(url).map_err(|source| OAuthError::Settings {
        field: "the DPoP proof's URL".to_owned(),
        problem: SettingsProblem::NotAUrl {
            url: plexus_net::redact::redact_url(url),
            source,
        },
    })?;
    parsed.set_query(None);
    parsed.set_fragment(None);
    Ok(parsed.into())
}

/// `ath`: base64url of the SHA-256 of the access token (RFC 9449 §4.2).
pub(crate) fn access_token_hash(access_token: &str) -> String {
    base64url(digest(&SHA256, access_token.as_bytes()).as_ref())
}

/// A proof for `request`, signed with `key`.
pub(crate) fn proof(key: &SigningKey, request: ProofRequest<'_>) -> Result<String, OAuthError> {
    let mut header = Map::new();
    header.insert("typ".to_owned(), Value::String(PROOF_TYPE.to_owned()));
    header.insert("jwk".to_owned(), key.public_jwk());
    let mut claims = Map::new();
    claims.insert("jti".to_owned(), Value::String(random_token()?));
    claims.insert("htm".to_owned(), Value::String(request.method.to_ascii_uppercase()));
    claims.insert("htu".to_owned(), Value::String(htu(request.url)?));
    claims.insert("iat".to_owned(), Value::from(unix_now()));
    if let Some(token) = request.access_token {
        claims.insert("ath".to_owned(), Value::String(access_token_hash(token)));
    }
    if let Some(nonce) = request.nonce {
        claims.insert("nonce".to_owned(), Value::String(nonce.to_owned()));
    }
    key.sign(&header, &claims).map_err(OAuthError::from)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use proptest::prelude::*;

    use super::*;

    /// Verifies a proof with the key in its own header (as a server does) and returns header and
    /// claims.
    fn open(proof: &str) -> (Value, Value) {
        let parts: Vec<&str> = proof.split('.').collect();
        let part = |i: usize| -> Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[i]).unwrap()).unwrap() };
        let header = part(0);
        let jwk = &header["jwk"];
        let coordinate = |name: &str| URL_SAFE_NO_PAD.decode(jwk[name].as_str().unwrap()).unwrap();
        let point = [vec![4u8], coordinate("x"), coordinate("y")].concat();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .expect("the proof verifies with the key of its header");
        (header, part(1))
    }

    #[test]
    fn a_resource_proof_has_every_claim_and_only_the_public_key() {
        let key = SigningKey::generate().unwrap();
        let before = unix_now();
        let proof = proof(
            &key,
            ProofRequest {
                method: "post",
                url: "https://MCP.example.com:443/mcp?session=1#frag",
                access_token: Some("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
                nonce: Some("eyJ7S_zG.eyJH0-Z.HX4w-7v"),
            },
        )
        .unwrap();
        let (header, claims) = open(&proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"], key.public_jwk());
        assert!(header["jwk"].get("d").is_none(), "no private key in the header");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp", "no query, no fragment");
        // RFC 9449 §7.1's example: the ath of that token.
        assert_eq!(claims["ath"], "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo");
        assert_eq!(claims["nonce"], "eyJ7S_zG.eyJH0-Z.HX4w-7v");
        let iat = claims["iat"].as_u64().unwrap();
        assert!(iat >= before && iat <= unix_now());
        assert_eq!(claims["jti"].as_str().unwrap().len(), 43);
        let mut fields: Vec<&String> = claims.as_object().unwrap().keys().collect();
        fields.sort();
        assert_eq!(fields, ["ath", "htm", "htu", "iat", "jti", "nonce"]);
    }

    #[test]
    fn a_token_request_proof_has_no_ath_nor_nonce_unless_given_and_each_jti_is_new() {
        let key = SigningKey::generate().unwrap();
        let request = ProofRequest {
            method: "POST",
            url: "http://127.0.0.1:9/token",
            access_token: None,
            nonce: None,
        };
        let mut jtis = HashSet::new();
        for _ in 0..50 {
            let (_, claims) = open(&proof(&key, request).unwrap());
            assert!(claims.get("ath").is_none() && claims.get("nonce").is_none());
            assert_eq!(claims["htu"], "http://127.0.0.1:9/token");
            assert!(
                jtis.insert(claims["jti"].as_str().unwrap().to_owned()),
                "a repeated jti"
            );
        }
        let err = proof(
            &key,
            ProofRequest {
                url: "not a url",
                ..request
            },
        )
        .unwrap_err();
        assert_eq!(
            plexus_transport::error_chain(&err),
            "OAuth setting the DPoP proof's URL: not a url is not a URL: relative URL without a base"
        );
    }

    #[test]
    fn nonces_are_kept_per_origin_and_bounded() {
        let nonces = Nonces::default();
        nonces.set("https://as.example.com/token", "n1");
        assert_eq!(nonces.get("https://as.example.com/other?x").as_deref(), Some("n1"));
        assert_eq!(nonces.get("https://rs.example.com/mcp"), None);
        nonces.set("https://as.example.com/token", "n2");
        assert_eq!(nonces.get("https://as.example.com:443/").as_deref(), Some("n2"));
        for i in 0..100 {
            nonces.set(&format!("https://h{i}.example.com/"), "n");
        }
        assert!(nonces.lock().len() <= MAX_NONCES);
        nonces.set("not a url", "n");
        assert_eq!(nonces.get("not a url"), None);
    }

    #[test]
    fn bound_tokens_are_presented_with_the_dpop_scheme_and_a_proof_and_others_as_bearer() {
        let state = DpopState::default();
        let bearer = StoredTokens::new(Secret::new("at-1"), None, None, None);
        assert_eq!(
            state.authorization(&bearer, "POST", "http://rs/mcp").unwrap(),
            [("Authorization".to_owned(), "Bearer at-1".to_owned())]
        );

        let (encoded, key) = state.key_for_new_tokens().unwrap();
        let (again, _) = state.key_for_new_tokens().unwrap();
        assert_eq!(encoded, again, "the key in use is reused");
        let mut bound = StoredTokens::new(Secret::new("at-2"), None, None, None);
        bound.token_type = "DPoP".to_owned();
        bound.dpop_key = Some(encoded.clone());
        state.nonces.set("http://rs/other", "rs-nonce");
        let headers = state.authorization(&bound, "get", "http://rs/mcp?q=1").unwrap();
        assert_eq!(headers[0], ("Authorization".to_owned(), "DPoP at-2".to_owned()));
        assert_eq!(headers[1].0, "DPoP");
        let (header, claims) = open(&headers[1].1);
        assert_eq!(header["jwk"], key.public_jwk());
        assert_eq!(claims["htm"], "GET");
        assert_eq!(claims["htu"], "http://rs/mcp");
        assert_eq!(claims["ath"], access_token_hash("at-2"));
        assert_eq!(claims["nonce"], "rs-nonce");

        // A fresh state (another process) reads the key stored with the tokens.
        let restarted = DpopState::default();
        let headers = restarted.authorization(&bound, "POST", "http://rs/mcp").unwrap();
        assert_eq!(open(&headers[1].1).0["jwk"], key.public_jwk());

        bound.dpop_key = None;
        assert_eq!(
            plexus_transport::error_chain(&restarted.authorization(&bound, "POST", "http://rs/mcp").unwrap_err()),
            "the private key is unusable: a DPoP-bound token was stored without its key"
        );
        bound.dpop_key = Some(Secret::new("!!"));
        assert_eq!(
            plexus_transport::error_chain(&restarted.authorization(&bound, "POST", "http://rs/mcp").unwrap_err()),
            "the private key is unusable: the stored DPoP key is not base64url"
        );
    }

    #[test]
    fn dpop_is_wanted_when_the_server_supports_es256_and_the_resource_asks() {
        use crate::oauth::discovery::{AuthServerMetadata, MetadataSource, ResourceMetadata};

        let discovery = |algs: &[&str], resource: Option<ResourceMetadata>| Discovery {
            resource_metadata: resource.map(|m| ("http://rs/.well-known/oauth-protected-resource".to_owned(), m)),
            resource: "http://rs/mcp".to_owned(),
            issuer: "http://as".to_owned(),
            metadata: AuthServerMetadata {
                issuer: "http://as".to_owned(),
                authorization_endpoint: "http://as/authorize".to_owned(),
                token_endpoint: "http://as/token".to_owned(),
                dpop_signing_alg_values_supported: algs.iter().map(|a| (*a).to_owned()).collect(),
                ..AuthServerMetadata::default()
            },
            source: MetadataSource::Fallback,
        };
        let prm = |required: bool| ResourceMetadata {
            resource: "http://rs/mcp".to_owned(),
            authorization_servers: vec!["http://as".to_owned()],
            scopes_supported: Vec::new(),
            dpop_signing_alg_values_supported: Vec::new(),
            dpop_bound_access_tokens_required: required,
        };
        let es256 = discovery(&["RS256", "ES256"], None);
        assert!(wanted(DpopMode::Auto, &es256, true));
        assert!(!wanted(DpopMode::Auto, &es256, false), "the resource did not ask");
        assert!(wanted(DpopMode::Always, &es256, false));
        assert!(!wanted(DpopMode::Never, &es256, true));
        assert!(
            !wanted(DpopMode::Always, &discovery(&["RS256"], None), true),
            "no ES256"
        );
        assert!(wanted(DpopMode::Auto, &discovery(&["ES256"], Some(prm(true))), false));
        assert!(!wanted(DpopMode::Auto, &discovery(&["ES256"], Some(prm(false))), false));
    }

    proptest! {
        #[test]
        fn htu_drops_query_and_fragment_only(
            path in "(/[a-z0-9]{1,6}){0,3}",
            query in proptest::option::of("[a-z0-9=&]{0,10}"),
            fragment in proptest::option::of("[a-z0-9]{0,6}"),
        ) {
            let base = format!("https://h.example{path}");
            let mut url = base.clone();
            if let Some(query) = &query { url.push('?'); url.push_str(query); }
            if let Some(fragment) = &fragment { url.push('#'); url.push_str(fragment); }
            let htu = htu(&url).unwrap();
            prop_assert!(!htu.contains('?') && !htu.contains('#'));
            prop_assert_eq!(htu, Url::parse(&base).unwrap().to_string());
        }
    }
}
