//! Compact JWS (RFC 7515) and JWT (RFC 7519) signed with ES256 (ECDSA P-256 with SHA-256, RFC
//! 7518 §3.4): the client assertions of `private_key_jwt` (RFC 7523 §2.2) and DPoP proofs (RFC
//! 9449). plexus only signs JWTs; it never needs to verify one.
//!
//! ```
//! use plexus_auth::oauth::jwt::SigningKey;
//! use serde_json::json;
//!
//! let key = SigningKey::generate()?;
//! let header = json!({"typ": "JWT"});
//! let claims = json!({"iss": "my-client", "sub": "my-client"});
//! let jws = key.sign(header.as_object().unwrap(), claims.as_object().unwrap())?;
//! assert_eq!(jws.split('.').count(), 3);
//! assert_eq!(key.public_jwk()["crv"], "P-256");
//! # Ok::<(), plexus_auth::oauth::jwt::JwtError>(())
//! ```

use std::fmt;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Map, Value, json};

/// The JWS algorithm of every JWT plexus signs.
pub const ALGORITHM: &str = "ES256";

/// Why a key could not be read or a JWT not signed. Messages never contain key material.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum JwtError {
    /// The key is not an unencrypted EC P-256 private key in PEM or DER.
    #[error("the private key is unusable")]
    Key {
        /// Why.
        #[source]
        problem: KeyProblem,
    },
    /// The crypto library failed to create a key or a signature.
    #[error("ES256 {what} failed")]
    Crypto {
        /// What was being done (`key generation`, `signing`).
        what: &'static str,
    },
}

/// Why a private key is unusable ([`JwtError::Key`]). Never contains key material.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyProblem {
    /// The text has no `-----BEGIN …-----` line.
    #[error("no PEM block (-----BEGIN …-----) found")]
    NoPemBlock,
    /// The `-----BEGIN` line does not end with `-----`.
    #[error("the PEM BEGIN line is not closed")]
    UnclosedBegin,
    /// The block has no `-----END …-----` line.
    #[error("the PEM block {label:?} has no -----END {label}----- line")]
    NoEnd {
        /// The block's label.
        label: String,
    },
    /// The block is an encrypted private key.
    #[error("the PEM private key is encrypted; give an unencrypted one")]
    Encrypted,
    /// The block has PEM headers (`Proc-Type`, …), which only an encrypted key has.
    #[error("the PEM private key has headers (it is encrypted); give an unencrypted one")]
    PemHeaders,
    /// The block is not a private key.
    #[error("the PEM block is a {label:?}, not a PRIVATE KEY")]
    NotPrivate {
        /// The block's label.
        label: String,
    },
    /// The block's body is not base64.
    #[error("the PEM body is not base64")]
    NotBase64(#[source] base64::DecodeError),
    /// The DER is not an EC P-256 private key; the crypto library's word for why is said in
    /// this problem's own parentheses, so it is not its source.
    #[error("not an EC P-256 private key in PKCS#8 or SEC 1 DER ({0})")]
    NotP256(aws_lc_rs::error::KeyRejected),
    /// A DPoP-bound token was stored without the key it is bound to.
    #[error("a DPoP-bound token was stored without its key")]
    NoStoredKey,
    /// The stored DPoP key is not base64url.
    #[error("the stored DPoP key is not base64url")]
    StoredKeyNotBase64,
}

/// An ES256 private key (EC P-256). Its `Debug` shows the public key's coordinates only.
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &ALGORITHM)
            .field("jwk", &self.public_jwk())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new random key.
    pub fn generate() -> Result<Self, JwtError> {
        EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
            .map(|pair| SigningKey { pair })
            .map_err(|_| JwtError::Crypto { what: "key generation" })
    }

    /// Reads a PEM private key: `PRIVATE KEY` (PKCS#8) or `EC PRIVATE KEY` (SEC 1), unencrypted,
    /// on the P-256 curve. Text around the PEM block is ignored.
    pub fn from_pem(pem: &str) -> Result<Self, JwtError> {
        let der = pem_body(pem)?;
        Self::from_der(&der)
    }

    /// Reads a DER private key: PKCS#8 `PrivateKeyInfo` or SEC 1 `ECPrivateKey`, on P-256.
    pub fn from_der(der: &[u8]) -> Result<Self, JwtError> {
        EcdsaKeyPair::from_private_key_der(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map(|pair| SigningKey { pair })
            .map_err(|e| JwtError::Key {
                problem: KeyProblem::NotP256(e),
            })
    }

    /// The private key as PKCS#8 v1 DER (how the key a DPoP token is bound to is kept).
    pub fn to_pkcs8(&self) -> Result<Vec<u8>, JwtError> {
        self.pair
            .to_pkcs8v1()
            .map(|document| document.as_ref().to_vec())
            .map_err(|_| JwtError::Crypto { what: "key export" })
    }

    /// The private key as a PEM `PRIVATE KEY` block (PKCS#8), which [`from_pem`](Self::from_pem)
    /// reads back.
    pub fn to_pem(&self) -> Result<String, JwtError> {
        let body = STANDARD.encode(self.to_pkcs8()?);
        let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
        for line in body.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        Ok(pem)
    }

    /// The public key as a JWK (RFC 7517 §4, RFC 7518 §6.2): `kty`, `crv`, `x`, `y`; never the
    /// private part `d`.
    pub fn public_jwk(&self) -> Value {
        // The uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
        let point = self.pair.public_key().as_ref();
        json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        })
    }

    /// The public key as an uncompressed point (`04 || x || y`).
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// Signs `claims` as a compact JWS: the header is `header` with `alg` set to ES256, each part
    /// is base64url without padding, and the signature is the 64-byte `r || s` (RFC 7518 §3.4).
    pub fn sign(&self, header: &Map<String, Value>, claims: &Map<String, Value>) -> Result<String, JwtError> {
        let mut header = header.clone();
        header.insert("alg".to_owned(), Value::String(ALGORITHM.to_owned()));
        let signing_input = format!(
            "{}.{}",
            base64url(Value::Object(header).to_string().as_bytes()),
            base64url(Value::Object(claims.clone()).to_string().as_bytes())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| JwtError::Crypto { what: "signing" })?;
        Ok(format!("{signing_input}.{}", base64url(signature.as_ref())))
    }
}

/// base64url without padding (RFC 7515 §2).
pub(crate) fn base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The DER inside the first PEM block of `pem`, which must be an unencrypted private key.
fn pem_body(pem: &str) -> Result<Vec<u8>, JwtError> {
    let bad = |problem| JwtError::Key { problem };
    let begin = pem.find("-----BEGIN ").ok_or_else(|| bad(KeyProblem::NoPemBlock))?;
    let rest = &pem[begin + "-----BEGIN ".len()..];
    let label_end = rest.find("-----").ok_or_else(|| bad(KeyProblem::UnclosedBegin))?;
    let label = &rest[..label_end];
    let body = &rest[label_end + "-----".len()..];
    let end_marker = format!("-----END {label}-----");
    let body_end = body.find(&end_marker).ok_or_else(|| {
        bad(KeyProblem::NoEnd {
            label: label.to_owned(),
        })
    })?;
    match label {
        "PRIVATE KEY" | "EC PRIVATE KEY" => {}
        "ENCRYPTED PRIVATE KEY" => return Err(bad(KeyProblem::Encrypted)),
        other => {
            return Err(bad(KeyProblem::NotPrivate {
                label: other.to_owned(),
            }));
        }
    }
    let text: String = body[..body_end].chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if text.contains(':') {
        return Err(bad(KeyProblem::PemHeaders));
    }
    STANDARD.decode(text).map_err(|e| bad(KeyProblem::NotBase64(e)))
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use proptest::prelude::*;

    use super::*;

    fn decode_part(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    fn object(value: &Value) -> &Map<String, Value> {
        value.as_object().unwrap()
    }

    /// Splits and checks a compact JWS signed by `key`: header, claims.
    fn verify(key: &SigningKey, jws: &str) -> (Value, Value) {
        let parts: Vec<&str> = jws.split('.').collect();
        assert_eq!(parts.len(), 3, "{jws}");
        for part in &parts {
            assert!(
                part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                "base64url without padding: {part}"
            );
        }
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        assert_eq!(signature.len(), 64, "r || s, 32 bytes each");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies with the public key");
        (decode_part(parts[0]), decode_part(parts[1]))
    }

    #[test]
    fn a_signed_jwt_verifies_and_carries_its_header_and_claims() {
        let key = SigningKey::generate().unwrap();
        let jws = key
            .sign(
                object(&json!({"typ": "dpop+jwt", "alg": "none"})),
                object(&json!({"iss": "c", "n": 1})),
            )
            .unwrap();
        let (header, claims) = verify(&key, &jws);
        assert_eq!(
            header,
            json!({"typ": "dpop+jwt", "alg": "ES256"}),
            "alg is always ES256"
        );
        assert_eq!(claims, json!({"iss": "c", "n": 1}));
        let other = SigningKey::generate().unwrap();
        let parts: Vec<&str> = jws.split('.').collect();
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        assert!(
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, other.public_key())
                .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
                .is_err(),
            "another key's signature does not verify"
        );
    }

    #[test]
    fn the_public_jwk_has_the_coordinates_and_no_private_part() {
        let key = SigningKey::generate().unwrap();
        let jwk = key.public_jwk();
        let mut fields: Vec<&String> = object(&jwk).keys().collect();
        fields.sort();
        assert_eq!(fields, ["crv", "kty", "x", "y"]);
        let x = URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap();
        let y = URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap();
        assert_eq!([&[4u8][..], &x, &y].concat(), key.public_key());
        assert!(!format!("{key:?}").contains("\"d\""));
    }

    #[test]
    fn pem_and_der_keys_are_read_and_round_trip() {
        let key = SigningKey::generate().unwrap();
        let der = key.to_pkcs8().unwrap();
        let pem = key.to_pem().unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n") && pem.ends_with("\n-----END PRIVATE KEY-----\n"));
        assert!(pem.lines().all(|line| line.len() <= 64));
        let read = SigningKey::from_pem(&format!("comment before\n{pem}")).unwrap();
        assert_eq!(read.public_key(), key.public_key());
        assert_eq!(SigningKey::from_der(&der).unwrap().public_key(), key.public_key());
    }

    #[test]
    fn unusable_keys_are_refused_with_the_reason() {
        let reason = |pem: &str| plexus_transport::error_chain(&SigningKey::from_pem(pem).unwrap_err());
        assert_eq!(
            reason("nothing here"),
            "the private key is unusable: no PEM block (-----BEGIN …-----) found"
        );
        assert_eq!(
            reason("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"),
            "the private key is unusable: the PEM block is a \"PUBLIC KEY\", not a PRIVATE KEY"
        );
        assert_eq!(
            reason("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----"),
            "the private key is unusable: the PEM private key is encrypted; give an unencrypted one"
        );
        assert_eq!(
            reason("-----BEGIN PRIVATE KEY-----\nAAAA"),
            "the private key is unusable: the PEM block \"PRIVATE KEY\" has no -----END PRIVATE KEY----- line"
        );
        assert!(
            reason("-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----")
                .starts_with("the private key is unusable: the PEM body is not base64: ")
        );
        assert!(
            reason("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
                .starts_with("the private key is unusable: not an EC P-256 private key in PKCS#8 or SEC 1 DER")
        );
    }

    proptest! {
        #[test]
        fn any_claims_round_trip_through_a_verified_jws(
            claims in proptest::collection::btree_map("[a-z]{1,8}", "\\PC{0,24}", 0..6),
        ) {
            let key = SigningKey::generate().unwrap();
            let claims: Map<String, Value> = claims.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            let jws = key.sign(&Map::new(), &claims).unwrap();
            let (header, decoded) = verify(&key, &jws);
            prop_assert_eq!(header, json!({"alg": "ES256"}));
            prop_assert_eq!(decoded, Value::Object(claims));
        }
    }
}
