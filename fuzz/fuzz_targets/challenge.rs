//! Fuzzes what plexus reads out of a 401 or 403 answer: the `WWW-Authenticate` challenges
//! (RFC 9110 §11.6.1) and the `DPoP-Nonce` (RFC 9449 §8), both straight from the server.
//!
//! Checked: parsing never fails or panics; every scheme is a non-empty token and every parameter
//! name is lower-case; a nonce, when one is accepted, is 1 to 1024 visible ASCII characters
//! without `"` or `\`; and the parsed challenges' own rendering parses back to the same schemes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_net::challenge::{WwwAuthenticate, parse_dpop_nonce};

fuzz_target!(|data: &[u8]| {
    if let Some(nonce) = parse_dpop_nonce(data) {
        assert!((1..=1024).contains(&nonce.len()));
        assert!(nonce.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\'));
    }
    let header = String::from_utf8_lossy(data);
    let challenges = WwwAuthenticate::parse(&header);
    for challenge in &challenges {
        assert!(!challenge.scheme.is_empty());
        assert!(challenge.params.keys().all(|name| !name.chars().any(char::is_uppercase)));
    }
    let rendered: Vec<String> = challenges.iter().map(ToString::to_string).collect();
    let again = WwwAuthenticate::parse(&rendered.join(", "));
    let schemes = |list: &[WwwAuthenticate]| list.iter().map(|c| c.scheme.clone()).collect::<Vec<_>>();
    assert_eq!(schemes(&again), schemes(&challenges), "{header:?} rendered as {rendered:?}");
});
