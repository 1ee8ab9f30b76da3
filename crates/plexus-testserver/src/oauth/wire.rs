//! The small pieces of OAuth on the wire: JSON and error responses, form and query parameters,
//! HTTP Basic credentials, PKCE S256, random identifiers, redirect URI matching, scope lists.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use url::Url;

use super::record::OAuthRequest;
use crate::remote::http::{self, Body};

/// The largest form body (token endpoint) or JSON body (registration) read, in bytes.
pub(crate) const MAX_FORM_BYTES: usize = 16 * 1024;
/// The longest query string the authorization endpoint reads, in bytes.
pub(crate) const MAX_QUERY_BYTES: usize = 16 * 1024;
/// The most parameters a query or form may hold.
const MAX_PARAMS: usize = 64;

/// `application/json` with `Cache-Control: no-store` (token responses must not be cached).
pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = http::full(status, Some("application/json"), value.to_string());
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// An OAuth error response (RFC 6749 §5.2): `{"error": CODE, "error_description": …}`, noted
/// in the request's record entry.
pub(crate) fn error(
    entry: &mut OAuthRequest,
    status: StatusCode,
    code: &str,
    description: impl Into<String>,
) -> Response<Body> {
    let description = description.into();
    let response = json_response(status, &json!({"error": code, "error_description": description}));
    entry.error = Some(code.to_owned());
    entry.error_description = Some(description);
    response
}

/// Decodes `application/x-www-form-urlencoded` parameters (a query string or a form body).
/// A parameter given twice is an error (RFC 6749 §3.1), and so are more than 64.
pub(crate) fn parse_params(bytes: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let mut params = BTreeMap::new();
    for (name, value) in url::form_urlencoded::parse(bytes) {
        if params.len() >= MAX_PARAMS {
            return Err(format!("more than {MAX_PARAMS} parameters"));
        }
        if params.insert(name.to_string(), value.into_owned()).is_some() {
            return Err(format!("the parameter {name} is given more than once"));
        }
    }
    Ok(params)
}

/// A random identifier: `PREFIX-` and 32 lowercase hex digits from the OS's random source.
pub(crate) fn random_id(prefix: &str) -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().fold(format!("{prefix}-"), |mut id, byte| {
        use std::fmt::Write as _;
        let _ = write!(id, "{byte:02x}");
        id
    }))
}

/// The PKCE S256 challenge of `verifier`: BASE64URL(SHA256(verifier)), unpadded (RFC 7636 §4.2).
pub(crate) fn s256(verifier: &str) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// Whether `verifier` is a PKCE code verifier: 43 to 128 unreserved characters (RFC 7636 §4.1).
pub(crate) fn is_code_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether `challenge` can be an S256 challenge: 43 base64url characters.
pub(crate) fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// The client id and secret of an `Authorization: Basic` value, each form-urlencoded as RFC 6749
/// §2.3.1 asks; `None` when the scheme is not Basic.
pub(crate) fn basic_credentials(value: &str) -> Option<Result<(String, String), String>> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = match STANDARD.decode(encoded.trim()) {
        Ok(decoded) => decoded,
        Err(e) => return Some(Err(format!("the Basic credentials are not base64: {e}"))),
    };
    let Ok(text) = String::from_utf8(decoded) else {
        return Some(Err("the Basic credentials are not UTF-8".to_owned()));
    };
    let Some((id, secret)) = text.split_once(':') else {
        return Some(Err(
            "the Basic credentials have no ':' between client id and secret".to_owned()
        ));
    };
    let unescape = |part: &str| {
        url::form_urlencoded::parse(format!("x={part}").as_bytes())
            .next()
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default()
    };
    Some(Ok((unescape(id), unescape(secret))))
}

/// The bearer token of an `Authorization` value, if its scheme is Bearer.
pub(crate) fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether `uri` is an `http` URL on a loopback host (127.0.0.1, \[::1\], localhost).
pub(crate) fn is_loopback_http(uri: &str) -> bool {
    Url::parse(uri).is_ok_and(|url| url.scheme() == "http" && is_loopback_host(&url))
}

fn is_loopback_host(url: &Url) -> bool {
    matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"))
}

/// Whether `requested` matches the registered redirect URI `registered`: exactly, or, for a
/// loopback `http` URI, with any port (RFC 8252 §7.3).
pub(crate) fn redirect_uri_matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let (Ok(registered), Ok(requested)) = (Url::parse(registered), Url::parse(requested)) else {
        return false;
    };
    registered.scheme() == "http"
        && requested.scheme() == "http"
        && is_loopback_host(&registered)
        && registered.host_str() == requested.host_str()
        && registered.path() == requested.path()
        && registered.query() == requested.query()
        && requested.fragment().is_none()
}

/// Checks a redirect URI as registration takes it: an absolute URL without a fragment.
pub(crate) fn check_redirect_uri(uri: &str) -> Result<(), String> {
    let url = Url::parse(uri).map_err(|e| format!("redirect URI {uri:?} is not an absolute URL: {e}"))?;
    if url.fragment().is_some() {
        return Err(format!("redirect URI {uri:?} has a fragment"));
    }
    Ok(())
}

/// The scopes of a space-separated list, each once, in order.
pub(crate) fn scope_list(text: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in text.split(' ').filter(|scope| !scope.is_empty()) {
        if !scopes.iter().any(|known| known == scope) {
            scopes.push(scope.to_owned());
        }
    }
    scopes
}

/// A `WWW-Authenticate` parameter value, quoted (RFC 9110 quoted-string).
pub(crate) fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert!(is_code_verifier(verifier));
        assert_eq!(s256(verifier), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert!(is_s256_challenge(&s256(verifier)));
        assert!(!is_code_verifier("short"));
        assert!(!is_code_verifier(&"a".repeat(129)));
        assert!(!is_code_verifier(&format!("{}+", "a".repeat(43))));
    }

    #[test]
    fn params_refuse_duplicates() {
        let params = parse_params(b"a=1&b=x%20y+z").unwrap();
        assert_eq!(params["b"], "x y z");
        assert_eq!(
            parse_params(b"a=1&a=2").unwrap_err(),
            "the parameter a is given more than once"
        );
        let many = (0..65).map(|i| format!("p{i}=1")).collect::<Vec<_>>().join("&");
        assert_eq!(parse_params(many.as_bytes()).unwrap_err(), "more than 64 parameters");
    }

    #[test]
    fn basic_credentials_are_decoded_and_unescaped() {
        let value = format!("Basic {}", STANDARD.encode("my%20id:s%3Ac"));
        assert_eq!(
            basic_credentials(&value).unwrap().unwrap(),
            ("my id".to_owned(), "s:c".to_owned())
        );
        assert!(basic_credentials("Bearer x").is_none());
        assert_eq!(
            basic_credentials("Basic !!").unwrap().unwrap_err(),
            "the Basic credentials are not base64: Invalid symbol 33, offset 0."
        );
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
    }

    #[test]
    fn loopback_redirects_match_on_any_port() {
        assert!(redirect_uri_matches("http://127.0.0.1/cb", "http://127.0.0.1:5555/cb"));
        assert!(redirect_uri_matches("http://localhost:1/cb", "http://localhost:2/cb"));
        assert!(!redirect_uri_matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1:5555/other"
        ));
        assert!(!redirect_uri_matches("http://127.0.0.1/cb", "http://localhost:5555/cb"));
        assert!(!redirect_uri_matches(
            "https://app.example/cb",
            "https://app.example:444/cb"
        ));
        assert!(redirect_uri_matches("myapp:/cb", "myapp:/cb"));
        assert!(is_loopback_http("http://[::1]:9/x"));
        assert!(!is_loopback_http("https://127.0.0.1/x"));
        assert_eq!(
            check_redirect_uri("http://a/#f").unwrap_err(),
            "redirect URI \"http://a/#f\" has a fragment"
        );
    }

    #[test]
    fn scopes_and_quotes() {
        assert_eq!(scope_list(" a b  a c"), ["a", "b", "c"]);
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert!(random_id("at").unwrap().starts_with("at-"));
        assert_eq!(random_id("x").unwrap().len(), 34);
    }
}
