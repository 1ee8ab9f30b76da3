//! `private_key_jwt` client authentication (RFC 7523 §2.2, RFC 7521): an ES256 client assertion,
//! verified against the public keys (JWK, EC P-256) the client registered.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use super::JwksProblem;

/// `client_assertion_type` of a JWT client assertion.
pub(crate) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
const LEEWAY_SECS: u64 = 30;
/// The most keys a client may register.
const MAX_KEYS: usize = 16;

/// An EC P-256 public key of a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PublicKey {
    kid: Option<String>,
    /// The uncompressed point: `04 || x || y`.
    point: Vec<u8>,
}

/// Parses a JWK Set (`{"keys": […]}`) or a single JWK into EC P-256 public keys.
pub(crate) fn parse_jwks(value: &Value) -> Result<Vec<PublicKey>, JwksProblem> {
    let keys = match value.get("keys") {
        Some(Value::Array(keys)) => keys.iter().collect::<Vec<_>>(),
        Some(_) => return Err(JwksProblem::KeysNotArray),
        None => vec![value],
    };
    if keys.is_empty() || keys.len() > MAX_KEYS {
        return Err(JwksProblem::KeyCount {
            count: keys.len(),
            max: MAX_KEYS,
        });
    }
    keys.into_iter().map(parse_jwk).collect()
}

fn parse_jwk(jwk: &Value) -> Result<PublicKey, JwksProblem> {
    let Value::Object(jwk) = jwk else {
        return Err(JwksProblem::NotAnObject);
    };
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    if text("kty") != Some("EC") || text("crv") != Some("P-256") {
        return Err(JwksProblem::Unsupported {
            kty: text("kty").map(str::to_owned),
            crv: text("crv").map(str::to_owned),
        });
    }
    if jwk.contains_key("d") {
        return Err(JwksProblem::PrivateKey);
    }
    let coordinate = |coordinate: &'static str| {
        let bytes = URL_SAFE_NO_PAD
            .decode(text(coordinate).unwrap_or(""))
            .map_err(|source| JwksProblem::NotBase64Url { coordinate, source })?;
        if bytes.len() == 32 {
            Ok(bytes)
        } else {
            Err(JwksProblem::CoordinateLength {
                coordinate,
                len: bytes.len(),
            })
        }
    };
    let mut point = vec![4u8];
    point.extend(coordinate("x")?);
    point.extend(coordinate("y")?);
    Ok(PublicKey {
        kid: text("kid").map(str::to_owned),
        point,
    })
}

/// A decoded, not yet verified, client assertion.
#[derive(Debug)]
pub(crate) struct Assertion {
    kid: Option<String>,
    signing_input: String,
    signature: Vec<u8>,
    claims: Map<String, Value>,
    /// Its `iss`: the client id.
    pub(crate) issuer: String,
}

/// Decodes a compact JWS; only `alg` ES256 is accepted.
pub(crate) fn decode(jwt: &str) -> Result<Assertion, String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return Err("the client assertion is not a compact JWS (three dot-separated parts)".to_owned());
    };
    let json = |part: &str, what: &str| -> Result<Map<String, Value>, String> {
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|e| format!("the client assertion's {what} is not base64url: {e}"))?;
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(object)) => Ok(object),
            _ => Err(format!("the client assertion's {what} is not a JSON object")),
        }
    };
    let header_fields = json(header, "header")?;
    let alg = header_fields.get("alg").and_then(Value::as_str).unwrap_or("(none)");
    if alg != "ES256" {
        return Err(format!(
            "the client assertion's alg is {alg}; this server verifies ES256 only"
        ));
    }
    let claims = json(payload, "payload")?;
    let issuer = claims
        .get("iss")
        .and_then(Value::as_str)
        .ok_or("the client assertion has no iss")?
        .to_owned();
    Ok(Assertion {
        kid: header_fields.get("kid").and_then(Value::as_str).map(str::to_owned),
        signing_input: format!("{header}.{payload}"),
        signature: URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|e| format!("the client assertion's signature is not base64url: {e}"))?,
        claims,
        issuer,
    })
}

impl Assertion {
    /// Verifies the signature with one of `keys` (the one named by `kid`, if any) and the claims:
    /// `sub` = `iss`, `aud` one of `audiences`, `exp` not passed, `nbf` and `iat` not in the
    /// future. Returns its `jti` and `exp`, for the replay check.
    pub(crate) fn verify(&self, keys: &[PublicKey], audiences: &[String]) -> Result<(Option<String>, u64), String> {
        let candidates: Vec<&PublicKey> = keys
            .iter()
            .filter(|key| self.kid.is_none() || key.kid.is_none() || key.kid == self.kid)
            .collect();
        if candidates.is_empty() {
            return Err(format!(
                "no registered key of the client has the kid {:?}",
                self.kid.as_deref().unwrap_or("")
            ));
        }
        let verified = candidates.iter().any(|key| {
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &key.point)
                .verify(self.signing_input.as_bytes(), &self.signature)
                .is_ok()
        });
        if !verified {
            return Err("the client assertion's signature does not verify with the client's keys".to_owned());
        }
        if self.claims.get("sub").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err("the client assertion's sub is not its iss (the client id)".to_owned());
        }
        let aud: Vec<&str> = match self.claims.get("aud") {
            Some(Value::String(aud)) => vec![aud.as_str()],
            Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !aud.iter().any(|aud| audiences.iter().any(|expected| expected == aud)) {
            return Err(format!(
                "the client assertion's aud {aud:?} names neither the issuer nor the token endpoint ({})",
                audiences.join(", ")
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let time = |name: &str| self.claims.get(name).and_then(Value::as_u64);
        let exp = time("exp").ok_or("the client assertion has no exp")?;
        if exp + LEEWAY_SECS <= now {
            return Err("the client assertion expired".to_owned());
        }
        for name in ["nbf", "iat"] {
            if time(name).is_some_and(|at| at > now + LEEWAY_SECS) {
                return Err(format!("the client assertion's {name} is in the future"));
            }
        }
        let jti = self.claims.get("jti").and_then(Value::as_str).map(str::to_owned);
        Ok((jti, exp + LEEWAY_SECS))
    }
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use serde_json::json;

    use super::*;

    fn key_pair() -> (EcdsaKeyPair, Value) {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        let point = pair.public_key().as_ref().to_vec();
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..])});
        (pair, jwk)
    }

    fn sign(pair: &EcdsaKeyPair, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = pair.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }

    fn now() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    #[test]
    fn an_es256_assertion_verifies_and_bad_ones_are_named() {
        let (pair, jwk) = key_pair();
        let keys = parse_jwks(&json!({"keys": [jwk]})).unwrap();
        let audiences = vec!["http://as".to_owned()];
        let claims = json!({"iss": "c", "sub": "c", "aud": "http://as", "exp": now() + 60, "jti": "j1"});
        let header = json!({"alg": "ES256", "kid": "k1"});
        let assertion = decode(&sign(&pair, &header, &claims)).unwrap();
        assert_eq!(assertion.issuer, "c");
        assert_eq!(assertion.verify(&keys, &audiences).unwrap().0.as_deref(), Some("j1"));

        let verify = |header: &Value, claims: &Value| {
            decode(&sign(&pair, header, claims)).and_then(|assertion| assertion.verify(&keys, &audiences).map(|_| ()))
        };
        let mut wrong = claims.clone();
        wrong["aud"] = json!(["http://other"]);
        assert_eq!(
            verify(&header, &wrong).unwrap_err(),
            "the client assertion's aud [\"http://other\"] names neither the issuer nor the token endpoint (http://as)"
        );
        let mut wrong = claims.clone();
        wrong["exp"] = json!(now() - 31);
        assert_eq!(verify(&header, &wrong).unwrap_err(), "the client assertion expired");
        let mut wrong = claims.clone();
        wrong["sub"] = json!("other");
        assert_eq!(
            verify(&header, &wrong).unwrap_err(),
            "the client assertion's sub is not its iss (the client id)"
        );
        assert_eq!(
            verify(&json!({"alg": "RS256"}), &claims).unwrap_err(),
            "the client assertion's alg is RS256; this server verifies ES256 only"
        );
        assert_eq!(
            verify(&json!({"alg": "ES256", "kid": "k2"}), &claims).unwrap_err(),
            "no registered key of the client has the kid \"k2\""
        );
        let (other, _) = key_pair();
        let forged = decode(&sign(&other, &header, &claims)).unwrap();
        assert_eq!(
            forged.verify(&keys, &audiences).unwrap_err(),
            "the client assertion's signature does not verify with the client's keys"
        );
        assert_eq!(
            decode("a.b").unwrap_err(),
            "the client assertion is not a compact JWS (three dot-separated parts)"
        );
    }

    #[test]
    fn only_public_p256_keys_are_accepted() {
        let (_, jwk) = key_pair();
        assert_eq!(parse_jwks(&jwk).unwrap().len(), 1, "a single JWK is a set of one");
        let mut private = jwk.clone();
        private["d"] = json!("AAAA");
        let problem = |jwks: &Value| parse_jwks(jwks).unwrap_err();
        assert!(matches!(problem(&private), JwksProblem::PrivateKey));
        assert_eq!(
            problem(&private).to_string(),
            "the JWK holds a private key (d); register the public key only"
        );
        assert!(matches!(
            problem(&json!({"kty": "RSA"})),
            JwksProblem::Unsupported { kty: Some(kty), crv: None } if kty == "RSA"
        ));
        assert_eq!(
            problem(&json!({"kty": "RSA"})).to_string(),
            "only EC P-256 keys are supported (kty \"RSA\", crv \"(none)\")"
        );
        let mut short = jwk.clone();
        short["x"] = json!("AAAA");
        assert!(matches!(
            problem(&short),
            JwksProblem::CoordinateLength {
                coordinate: "x",
                len: 3
            }
        ));
        assert_eq!(problem(&short).to_string(), "the JWK's x is 3 bytes, not 32");
        let mut garbled = jwk;
        garbled["y"] = json!("!!");
        let error = problem(&garbled);
        assert!(matches!(error, JwksProblem::NotBase64Url { coordinate: "y", .. }));
        assert_eq!(
            plexus_jsonrpc::error_chain(&error),
            "the JWK's y is not base64url: Invalid symbol 33, offset 0."
        );
        assert!(matches!(
            problem(&json!({"keys": []})),
            JwksProblem::KeyCount { count: 0, max: 16 }
        ));
        assert_eq!(
            problem(&json!({"keys": []})).to_string(),
            "the JWK Set must hold 1 to 16 keys"
        );
    }
}
